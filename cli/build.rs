//! Link the `packc` executable with packed relative relocations (`DT_RELR`) where the
//! toolchain and the C library support them.
//!
//! `packc` is a position-independent executable with about 33,000 relative relocations
//! (vtables, string tables). The dynamic loader applies them one by one at every start,
//! which was a third of the CPU time of `packc check` on a small pack. Packed, they take
//! a few kilobytes and a tight loop. The executable stays position-independent.
//!
//! The flag is used only when building for the machine that builds (no cross target),
//! and only if a probe program linked with it also runs: binutils 2.38+ is needed to
//! link it and glibc 2.36+ to load it. Set `PACKC_NO_RELR=1` to link without it (e.g.
//! for an executable that must load on an older glibc than the build machine's).

use std::path::PathBuf;
use std::process::{Command, Stdio};

const FLAG: &str = "-Wl,-z,pack-relative-relocs";

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=PACKC_NO_RELR");
    println!("cargo:rerun-if-env-changed=CC");
    if std::env::var_os("PACKC_NO_RELR").is_some() || !supported() {
        return;
    }
    println!("cargo:rustc-link-arg-bins={FLAG}");
}

/// Whether a C program linked with [`FLAG`] links and runs here.
fn supported() -> bool {
    let (Ok(target), Ok(host)) = (std::env::var("TARGET"), std::env::var("HOST")) else {
        return false;
    };
    if target != host || !target.ends_with("-linux-gnu") {
        return false;
    }
    let Some(out) = std::env::var_os("OUT_DIR").map(PathBuf::from) else {
        return false;
    };
    let source = out.join("relr_probe.c");
    let binary = out.join("relr_probe");
    let probe = "static const char *names[] = {\"a\", \"b\"};\n\
                 int main(void) { return names[1][0] == 'b' ? 0 : 1; }\n";
    if std::fs::write(&source, probe).is_err() {
        return false;
    }
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let linked = Command::new(cc)
        .args(["-fPIE", "-pie", FLAG, "-o"])
        .arg(&binary)
        .arg(&source)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    linked && Command::new(&binary).status().is_ok_and(|s| s.success())
}
