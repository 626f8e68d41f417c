//! (d) Arbitrary host answers fed to the packs of `examples/`.
//!
//! The first choice picks an example pack (compiled once); the rest of the bytes drive
//! the fuzzed host of `packc_fuzz::host`: the target (workflow, agent member or
//! composition), run options, then answers (scripted ones from `examples/cases/`,
//! arbitrary JSON outputs with or without events, tool calls naming offered or unknown
//! tools, errors), caller turns, events and `Finish`, clock readings, snapshots,
//! restores (also of damaged snapshots) and deliberate protocol misuse.
#![no_main]

use arbitrary::Unstructured;
use libfuzzer_sys::fuzz_target;
use packc_fuzz::{host, packs};

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let examples = packs::examples();
    let Ok(i) = u.choose_index(examples.len()) else {
        return;
    };
    let _ = host::drive(&mut u, &examples[i].program, packs::pool());
});
