//! Link the `packc` executable so that it starts fast: statically where the toolchain
//! can, else as a position-dependent executable, else with packed relative relocations
//! (`DT_RELR`) where the toolchain and the C library support them.
//!
//! On a virtual machine, what a small `packc check` costs is mostly the process itself:
//! mapping the C library, libm and libgcc_s, binding about 200 symbols, and the page
//! faults of all that. Linked statically (and position-dependent), `packc check` of a
//! 1 KB pack took 0.89 ms against 1.63 ms dynamically linked (medians of 150 runs; a
//! Rust "hello world" takes 0.66 ms static and 1.1–1.3 ms dynamic on the same machine).
//!
//! The static link uses the C library's own static archives (`libc.a` and the rest;
//! glibc's `libgcc_eh.a` stands in for `libgcc_s`). Rust passes the standard libraries
//! as `-Bdynamic -lc …` even then, so they are found through a folder of links to the
//! archives only (`$OUT_DIR/static-libs`), searched before the system's. Since glibc 2.34
//! a static program resolves host names through `/etc/hosts` and DNS without loading
//! anything; other name services listed in `/etc/nsswitch.conf` (mDNS, systemd-resolved's
//! `resolve`) are loaded from the system only if they come from the same glibc as the one
//! `packc` was built with, which holds for a build on the machine that runs it.
//! `PACKC_DYNAMIC=1` links dynamically.
//!
//! Linked dynamically, `packc` is position-dependent. As a position-independent
//! executable (Rust's default) it carries about 33,000 relative relocations (vtables,
//! string tables); the dynamic loader applies them at every start, and every page of data
//! they point from is written, so the kernel copies it: about 140 page faults, which cost
//! more than the rest of `packc check` on a small pack (`packc --version` took 2.6 ms of
//! CPU against 1.2 ms without them). A position-dependent executable has none of them:
//! its data is mapped from the file as it is read. The price is that the executable
//! itself loads at a fixed address (the libraries, stack and heap are still placed at
//! random). Set `PACKC_PIE=1` to build a position-independent, dynamically linked one; it
//! is then linked with `DT_RELR` when possible, which makes the relocations cheap to
//! apply but still writes their pages.
//!
//! Every choice is used only when building for the machine that builds (no cross target),
//! and only if a probe program linked the same way also runs (and, for the static link,
//! came out with no program interpreter): `-no-pie` needs a GCC or Clang driver, the
//! static link glibc's static archives, `DT_RELR` binutils 2.38+ to link and glibc 2.36+
//! to load. `PACKC_NO_RELR=1` turns `DT_RELR` off (for an executable that must load on an
//! older glibc than the build machine's). The link chosen is given to the crate as
//! `PACKC_LINK` (`static`, `no-pie`, `relr` or `default`), which a test checks.

#[path = "elf.rs"]
mod elf;

use std::path::PathBuf;
use std::process::{Command, Stdio};

const NO_PIE: &str = "-no-pie";
const RELR: &str = "-Wl,-z,pack-relative-relocs";

/// The libraries Rust's standard library links on Linux with glibc, as `-l` names.
const STD_LIBS: [&str; 7] = ["gcc_s", "util", "rt", "pthread", "m", "dl", "c"];

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    for var in ["PACKC_PIE", "PACKC_NO_RELR", "PACKC_DYNAMIC", "CC"] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    let link = choose();
    println!("cargo:rustc-env=PACKC_LINK={link}");
}

/// Chooses the link, prints its flags for the `packc` binary, and names it.
fn choose() -> &'static str {
    if !native_linux_gnu() {
        return "default";
    }
    let pie = std::env::var_os("PACKC_PIE").is_some();
    if !pie && std::env::var_os("PACKC_DYNAMIC").is_none() {
        if let Some(dir) = static_libs() {
            let search = format!("-L{}", dir.display());
            let link = [NO_PIE, "-static", search.as_str()];
            // The probe names the libraries as Rust does: after `-Bdynamic`.
            let libs: Vec<String> = STD_LIBS.iter().map(|l| format!("-l{l}")).collect();
            let probe: Vec<&str> = link
                .into_iter()
                .chain(["-Wl,-Bdynamic"])
                .chain(libs.iter().map(String::as_str))
                .collect();
            if links_and_runs("static", &probe, true) {
                for flag in link {
                    println!("cargo:rustc-link-arg-bins={flag}");
                }
                return "static";
            }
        }
    }
    if !pie && links_and_runs("no_pie", &[NO_PIE], false) {
        println!("cargo:rustc-link-arg-bins={NO_PIE}");
        return "no-pie";
    }
    if std::env::var_os("PACKC_NO_RELR").is_none()
        && links_and_runs("relr", &["-fPIE", "-pie", RELR], false)
    {
        println!("cargo:rustc-link-arg-bins={RELR}");
        return "relr";
    }
    "default"
}

/// A folder with a link to the static archive of each of [`STD_LIBS`] (`libgcc_s.a` to
/// `libgcc_eh.a`) and nothing else, so that the linker finds the archives first even
/// where Rust asks for shared libraries; `None` when an archive is missing.
#[cfg(unix)]
fn static_libs() -> Option<PathBuf> {
    let dir = PathBuf::from(std::env::var_os("OUT_DIR")?).join("static-libs");
    std::fs::create_dir_all(&dir).ok()?;
    for lib in STD_LIBS {
        let archive = if lib == "gcc_s" { "gcc_eh" } else { lib };
        let found = compiler_file(&format!("lib{archive}.a"))?;
        let link = dir.join(format!("lib{lib}.a"));
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(&found, &link).ok()?;
    }
    Some(dir)
}

/// No static link where the build machine is not a Unix (a Linux target is built on
/// one only when cross-compiling, which [`choose`] leaves alone anyway).
#[cfg(not(unix))]
fn static_libs() -> Option<PathBuf> {
    None
}

/// Where the C compiler finds `name` (`cc -print-file-name`), if it does.
#[cfg(unix)]
fn compiler_file(name: &str) -> Option<PathBuf> {
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let out = Command::new(cc)
        .arg(format!("-print-file-name={name}"))
        .stderr(Stdio::null())
        .output()
        .ok()?;
    let path = PathBuf::from(String::from_utf8(out.stdout).ok()?.trim());
    // Not found, the compiler prints the name back.
    (path.is_absolute() && path.is_file()).then_some(path)
}

/// Whether the build is for the building machine, a Linux with glibc.
fn native_linux_gnu() -> bool {
    let (Ok(target), Ok(host)) = (std::env::var("TARGET"), std::env::var("HOST")) else {
        return false;
    };
    target == host && target.ends_with("-linux-gnu")
}

/// Whether a C program with a table of pointers, linked with `flags`, links and runs
/// (and, when `statically`, is a position-dependent executable with no program
/// interpreter).
fn links_and_runs(name: &str, flags: &[&str], statically: bool) -> bool {
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
    // The source first: flags that name libraries must come after what uses them.
    let linked = Command::new(cc)
        .arg("-o")
        .arg(&binary)
        .arg(&source)
        .args(flags)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    linked
        && Command::new(&binary).status().is_ok_and(|s| s.success())
        && (!statically
            || std::fs::read(&binary)
                .ok()
                .and_then(|elf| elf::kind(&elf))
                .is_some_and(|kind| kind == (elf::ET_EXEC, false)))
}
