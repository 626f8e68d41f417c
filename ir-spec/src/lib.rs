//! The packc intermediate representation and the `.ppk` artifact format.
//!
//! This crate is shared by the compiler (which writes artifacts) and the VM (which
//! loads and verifies them). See `FORMAT.md` beside this crate for the byte layout.
#![forbid(unsafe_code)]
