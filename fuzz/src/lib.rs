//! What the packc fuzz targets share.
//!
//! The targets (`fuzz_targets/`) are thin: each turns libFuzzer's bytes into one call of
//! the library under test and asserts the bar of the fuzzing issue — any input is either
//! rejected with an error or runs correctly; nothing panics, hangs, overflows its stack or
//! uses unbounded memory. The pieces they share live here:
//!
//! - [`json`]: arbitrary JSON values, biased towards the words a module uses (its
//!   string table: step ids, member names, event names), so that bindings like
//!   `${steps.x.output.field}` find what they look for;
//! - [`packs`]: the packs of `examples/` and the scripted answers of `examples/cases/`,
//!   compiled and parsed once;
//! - [`host`]: a host that answers a run with arbitrary answers, caller turns, events and
//!   clock readings, snapshots and restores it at arbitrary points, and checks what the
//!   VM documents about protocol misuse — all within a bounded number of resumes;
//! - [`mutate`]: structure-aware mutations of a `.ppk` file (flip, cut, splice the `MODL`
//!   section), re-wrapped so that the checksum holds and the mutation reaches the decoder.

pub mod host;
pub mod json;
pub mod mutate;
pub mod packs;
