//! (c) A valid artifact, mutated with its structure in mind, loaded and run.
//!
//! Input: a little-endian `u32` length `n`, then `n` bytes of a `.ppk` file (the seeds
//! are built packs: `fuzz/seed.sh`), then the bytes that drive everything else. The
//! artifact's sections are mutated (`packc_fuzz::mutate::artifact`: flip, cut, splice,
//! drop, duplicate) and re-wrapped with a good checksum; whatever loads is run by the
//! fuzzed host of `packc_fuzz::host` (arbitrary JSON answers, events, tool calls, errors,
//! turns, clock readings, snapshots and restores), within a bounded number of resumes.
#![no_main]

use std::sync::Arc;

use arbitrary::Unstructured;
use ir_spec::container::DEFAULT_MAX_ARTIFACT_BYTES;
use ir_spec::Artifact;
use libfuzzer_sys::fuzz_target;
use packc_fuzz::{host, mutate, packs};

fuzz_target!(|data: &[u8]| {
    let Some((len, rest)) = data.split_first_chunk::<4>() else {
        return;
    };
    let n = (u32::from_le_bytes(*len) as usize).min(rest.len());
    let (ppk, rest) = rest.split_at(n);
    let mut u = Unstructured::new(rest);
    let Ok(bytes) = mutate::artifact(&mut u, ppk) else {
        return;
    };
    let Ok(artifact) = Artifact::decode(&bytes, DEFAULT_MAX_ARTIFACT_BYTES) else {
        return;
    };
    let program = packc_vm::Program::new(artifact.module)
        .unwrap_or_else(|e| panic!("a loaded module is not a program: {e}"));
    let _ = host::drive(&mut u, &Arc::new(program), packs::pool());
});
