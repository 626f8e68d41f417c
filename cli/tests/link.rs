//! The `packc` executable is linked as `cli/build.rs` chose (it tells the crate through
//! `PACKC_LINK`), and what a static link could break still works: resolving a host name
//! and talking to a model server.

use packc_host::mock::{MockServer, Reply};

mod common;
use common::{assert_code, live, repo, stderr};

#[path = "../elf.rs"]
mod elf;
use elf::{ET_DYN, ET_EXEC};

#[test]
fn the_binary_is_linked_as_the_build_script_chose() {
    let elf = std::fs::read(env!("CARGO_BIN_EXE_packc")).unwrap();
    if !elf.starts_with(b"\x7fELF") {
        return; // not an ELF system: the build script chose nothing
    }
    let (kind, interpreter) = elf::kind(&elf).expect("a 64-bit little-endian ELF file");
    match env!("PACKC_LINK") {
        "static" => assert_eq!((kind, interpreter), (ET_EXEC, false)),
        "no-pie" => assert_eq!((kind, interpreter), (ET_EXEC, true)),
        "relr" => assert_eq!((kind, interpreter), (ET_DYN, true)),
        "default" => {}
        other => panic!("unknown PACKC_LINK `{other}`"),
    }
    // Where glibc's static archives exist, the default build is static.
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    if std::env::var_os("PACKC_DYNAMIC").is_none()
        && std::env::var_os("PACKC_PIE").is_none()
        && std::path::Path::new("/usr/lib/x86_64-linux-gnu/libc.a").is_file()
        && cfg!(target_arch = "x86_64")
    {
        assert_eq!(env!("PACKC_LINK"), "static");
    }
}

/// A base URL by host name: resolved through `/etc/hosts` by the C library, which a
/// static link takes from its archive.
#[test]
fn a_live_run_reaches_a_server_by_host_name() {
    let server = MockServer::start(|_, _| Reply::text(r#"{"type": "manual", "confidence": 0.9}"#));
    let url = format!("http://localhost:{}/v1", server.port());
    let out = live(&url)
        .arg(repo().join("examples/rfc0010-ex1.pack.yaml"))
        .args(["--quiet", "--input", r#"{"text": "x"}"#])
        .output()
        .unwrap();
    assert_code(&out, 0);
    let output: serde_json::Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", stderr(&out)));
    assert_eq!(output["type"], "manual", "{output}");
}
