//! Link the `packc` executable so that it starts fast: as a position-dependent
//! executable where the toolchain can build one, else with packed relative relocations
//! (`DT_RELR`) where the toolchain and the C library support them.
//!
//! As a position-independent executable (Rust's default), `packc` carries about 33,000
//! relative relocations (vtables, string tables). The dynamic loader applies them at
//! every start, and every page of data they point from is written, so the kernel copies
//! it: about 140 page faults, which cost more than the rest of `packc check` on a small
//! pack does (`packc --version` took 2.6 ms of CPU against 1.2 ms without them, on a
//! virtual machine where a fault is dear). A position-dependent executable has none of
//! them: its data is mapped from the file as it is read. The price is that the
//! executable itself loads at a fixed address (the libraries, stack and heap are still
//! placed at random). Set `PACKC_PIE=1` to build a position-independent one; it is then
//! linked with `DT_RELR` when possible, which makes the relocations cheap to apply but
//! still writes their pages.
//!
//! Both flags are used only when building for the machine that builds (no cross
//! target), and only if a probe program linked with them also runs: `-no-pie` needs a
//! GCC or Clang driver, `DT_RELR` binutils 2.38+ to link and glibc 2.36+ to load.
//! `PACKC_NO_RELR=1` turns `DT_RELR` off (for an executable that must load on an older
//! glibc than the build machine's).

use std::path::PathBuf;
use std::process::{Command, Stdio};

const NO_PIE: &str = "-no-pie";
const RELR: &str = "-Wl,-z,pack-relative-relocs";

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    for var in ["PACKC_PIE", "PACKC_NO_RELR", "CC"] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    if !native_linux_gnu() {
        return;
    }
    if std::env::var_os("PACKC_PIE").is_none() && links_and_runs("no_pie", &[NO_PIE]) {
        println!("cargo:rustc-link-arg-bins={NO_PIE}");
    } else if std::env::var_os("PACKC_NO_RELR").is_none()
        && links_and_runs("relr", &["-fPIE", "-pie", RELR])
    {
        println!("cargo:rustc-link-arg-bins={RELR}");
    }
}

/// Whether the build is for the building machine, a Linux with glibc.
fn native_linux_gnu() -> bool {
    let (Ok(target), Ok(host)) = (std::env::var("TARGET"), std::env::var("HOST")) else {
        return false;
    };
    target == host && target.ends_with("-linux-gnu")
}

/// Whether a C program with a table of pointers, linked with `flags`, links and runs.
fn links_and_runs(name: &str, flags: &[&str]) -> bool {
    let Some(out) = std::env::var_os("OUT_DIR").map(PathBuf::from) else {
        return false;
    };
    let source = out.join(format!("{name}_probe.c"));
    let binary = out.join(format!("{name}_probe"));
    let probe = "static const char *names[] = {\"a\", \"b\"};\n\
                 int main(void) { return names[1][0] == 'b' ? 0 : 1; }\n";
    if std::fs::write(&source, probe).is_err() {
        return false;
    }
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let linked = Command::new(cc)
        .args(flags)
        .arg("-o")
        .arg(&binary)
        .arg(&source)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    linked && Command::new(&binary).status().is_ok_and(|s| s.success())
}
