//! (b) Arbitrary bytes → `.ppk` load + verify.
//!
//! The bytes are decoded as they are (so the magic, version and checksum checks are
//! fuzzed), then once more with their last four bytes replaced by the CRC-32 of the rest
//! (so that mutations of a seed artifact reach the section reader, the postcard decoder
//! and `Module::validate`). Whatever decodes must re-encode to an artifact that decodes
//! and encodes to the same bytes, and must be a program: `Artifact::decode` is the door (STYLE.md item 5).
#![no_main]

use ir_spec::container::DEFAULT_MAX_ARTIFACT_BYTES;
use ir_spec::Artifact;
use libfuzzer_sys::fuzz_target;

fn load(bytes: &[u8]) {
    let artifact = match Artifact::decode(bytes, DEFAULT_MAX_ARTIFACT_BYTES) {
        Ok(a) => a,
        Err(e) => {
            let _ = e.to_string();
            return;
        }
    };
    // Compared as bytes: a file may hold a NaN (`f64` fields are IEEE binary64), which
    // is not equal to itself.
    let bytes = artifact.encode();
    let again = Artifact::decode(&bytes, DEFAULT_MAX_ARTIFACT_BYTES)
        .unwrap_or_else(|e| panic!("a loaded artifact re-encodes to one that does not load: {e}"));
    assert!(
        again.encode() == bytes,
        "a loaded artifact re-encodes to another"
    );
    packc_vm::Program::new(artifact.module)
        .unwrap_or_else(|e| panic!("a loaded module is not a program: {e}"));
}

fuzz_target!(|data: &[u8]| {
    load(data);
    if data.len() >= 4 {
        let mut fixed = data.to_vec();
        packc_fuzz::mutate::fix_crc_trailer(&mut fixed);
        if fixed != data {
            load(&fixed);
        }
    }
});
