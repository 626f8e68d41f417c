//! Reading what kind of executable an ELF file is, for `build.rs` (whose static-link
//! probe must come out with no program interpreter) and `tests/link.rs` (which holds the
//! built `packc` to the link `build.rs` chose). Both include this file as a module.

// Each includer uses only part of it.
#![allow(dead_code)]

/// ELF file type of a position-dependent executable (`e_type`).
pub const ET_EXEC: u16 = 2;
/// ELF file type of a shared object, which a position-independent executable is.
pub const ET_DYN: u16 = 3;

/// The `e_type` of the 64-bit little-endian ELF file `elf`, and whether it names a program
/// interpreter (a `PT_INTERP` program header): whether it is dynamically linked. `None`
/// for anything else, or a file cut short.
pub fn kind(elf: &[u8]) -> Option<(u16, bool)> {
    const PT_INTERP: u32 = 3;
    let u16_at = |i: usize| Some(u16::from_le_bytes(elf.get(i..i + 2)?.try_into().ok()?));
    let u32_at = |i: usize| Some(u32::from_le_bytes(elf.get(i..i + 4)?.try_into().ok()?));
    let u64_at = |i: usize| Some(u64::from_le_bytes(elf.get(i..i + 8)?.try_into().ok()?));
    if elf.get(..6)? != b"\x7fELF\x02\x01" {
        return None;
    }
    let phoff = usize::try_from(u64_at(0x20)?).ok()?;
    let (size, count) = (usize::from(u16_at(0x36)?), usize::from(u16_at(0x38)?));
    let mut interpreter = false;
    for k in 0..count {
        interpreter |= u32_at(phoff + k * size)? == PT_INTERP;
    }
    Some((u16_at(0x10)?, interpreter))
}
