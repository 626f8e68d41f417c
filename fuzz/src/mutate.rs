//! Structure-aware mutations of `.ppk` files and run snapshots.
//!
//! libFuzzer's byte mutations alone rarely get past a checksum. These work on the
//! structure instead: the container's sections are taken apart, the `MODL` payload (the
//! postcard module) gets flipped bits, cut tails, deleted, duplicated or moved ranges,
//! varints and ranges spliced in from another example's module; sections are dropped,
//! duplicated, swapped or added; then the file is written again with a correct CRC-32,
//! so that the damage reaches the postcard decoder and `Module::validate`.

use std::sync::OnceLock;

use arbitrary::{Result, Unstructured};
use ir_spec::artifact::MODL;
use ir_spec::container::{crc32, Container, Tag};

/// The most payload mutations applied to one input.
const MAX_OPS: usize = 4;

/// Makes the last four bytes the CRC-32 of the bytes before them (a `.ppk` trailer).
pub fn fix_crc_trailer(bytes: &mut [u8]) {
    if let Some(end) = bytes.len().checked_sub(4) {
        let crc = crc32(&bytes[..end]);
        bytes[end..].copy_from_slice(&crc.to_le_bytes());
    }
}

/// Makes the last eight bytes the FNV-1a 64 of the bytes before them (a snapshot's
/// trailer, `packc_vm::snapshot`).
pub fn fix_fnv_trailer(bytes: &mut [u8]) {
    if let Some(end) = bytes.len().checked_sub(8) {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for &b in &bytes[..end] {
            h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
        bytes[end..].copy_from_slice(&h.to_le_bytes());
    }
}

/// The `MODL` payloads of the example packs: material to splice in.
fn donors() -> &'static [Vec<u8>] {
    static DONORS: OnceLock<Vec<Vec<u8>>> = OnceLock::new();
    DONORS.get_or_init(|| {
        crate::packs::examples()
            .iter()
            .map(|p| {
                let bytes = ir_spec::Artifact {
                    source_hash: [0; 32],
                    compiler: String::new(),
                    module: p.program.module().clone(),
                }
                .encode();
                let c = Container::decode(&bytes, usize::MAX).expect("an encoded artifact decodes");
                c.require(MODL).expect("MODL is there").to_vec()
            })
            .collect()
    })
}

/// Applies 1 to [`MAX_OPS`] mutations to `bytes[head..len - tail]`, keeping the head and
/// the tail (a header and a trailer) as they are.
pub fn damage(
    u: &mut Unstructured<'_>,
    bytes: &mut Vec<u8>,
    head: usize,
    tail: usize,
) -> Result<()> {
    if bytes.len() < head + tail {
        return Ok(());
    }
    let end = bytes.len() - tail;
    let mut body = bytes[head..end].to_vec();
    let n = u.int_in_range(1..=MAX_OPS)?;
    for _ in 0..n {
        payload_op(u, &mut body)?;
    }
    let trailer = bytes[end..].to_vec();
    bytes.truncate(head);
    bytes.extend_from_slice(&body);
    bytes.extend_from_slice(&trailer);
    Ok(())
}

/// A position in `0..=len`.
fn pos(u: &mut Unstructured<'_>, len: usize) -> Result<usize> {
    u.int_in_range(0..=len)
}

/// One mutation of a payload.
fn payload_op(u: &mut Unstructured<'_>, p: &mut Vec<u8>) -> Result<()> {
    let len = p.len();
    match u.choose_index(9)? {
        0 if len > 0 => {
            let i = pos(u, len - 1)?;
            p[i] ^= 1 << u.int_in_range(0..=7u8)?;
        }
        1 if len > 0 => {
            let i = pos(u, len - 1)?;
            let any = u.arbitrary()?;
            p[i] = *u.choose(&[0x00, 0x01, 0x02, 0x7f, 0x80, 0xff, any])?;
        }
        2 => p.truncate(pos(u, len)?),
        3 => {
            let at = pos(u, len)?;
            let n = u.int_in_range(0..=(len - at).min(64))?;
            p.drain(at..at + n);
        }
        4 => {
            // Duplicate a range elsewhere.
            let at = pos(u, len)?;
            let n = u.int_in_range(0..=(len - at).min(256))?;
            let chunk = p[at..at + n].to_vec();
            let to = pos(u, len)?;
            p.splice(to..to, chunk);
        }
        5 => {
            // A postcard varint: a length, an index, a discriminant.
            let at = pos(u, len)?;
            let v: u64 = match u.choose_index(3)? {
                0 => u.int_in_range(0..=16)?,
                1 => u.int_in_range(0..=u64::from(u32::MAX))?,
                _ => u.arbitrary()?,
            };
            let replace = u.int_in_range(0..=(len - at).min(10))?;
            p.splice(at..at + replace, varint(v));
        }
        6 => {
            // Splice in a range of another example's module.
            let donors = donors();
            let d = u.choose(donors)?;
            let from = pos(u, d.len())?;
            let n = u.int_in_range(0..=(d.len() - from).min(512))?;
            let at = pos(u, len)?;
            let replace = u.int_in_range(0..=(len - at).min(512))?;
            p.splice(at..at + replace, d[from..from + n].iter().copied());
        }
        7 => {
            let at = pos(u, len)?;
            let n = u.int_in_range(0..=8usize)?;
            let bytes = u.bytes(n.min(u.len()))?.to_vec();
            p.splice(at..at, bytes);
        }
        _ => {}
    }
    Ok(())
}

/// The postcard varint of `v`.
fn varint(mut v: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(10);
    loop {
        let byte = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(byte);
            return out;
        }
        out.push(byte | 0x80);
    }
}

/// Mutates a `.ppk` file with its structure in mind. When `ppk` (with its CRC fixed) is
/// a readable container, its sections are mutated and the file is written again with a
/// good checksum; otherwise, or when `u` says so, the bytes are returned as they are.
pub fn artifact(u: &mut Unstructured<'_>, ppk: &[u8]) -> Result<Vec<u8>> {
    let mut fixed = ppk.to_vec();
    fix_crc_trailer(&mut fixed);
    let Ok(container) = Container::decode(&fixed, usize::MAX) else {
        return Ok(ppk.to_vec());
    };
    if u.ratio(1u8, 16u8)? {
        return Ok(ppk.to_vec());
    }
    let mut sections: Vec<(Tag, Vec<u8>)> = container
        .sections
        .iter()
        .map(|(t, p)| (*t, p.to_vec()))
        .collect();
    if !sections.is_empty() && u.ratio(1u8, 8u8)? {
        let n = sections.len();
        match u.choose_index(4)? {
            0 => {
                sections.remove(u.choose_index(n)?);
            }
            1 => {
                let s = sections[u.choose_index(n)?].clone();
                sections.push(s);
            }
            2 => sections.swap(u.choose_index(n)?, u.choose_index(n)?),
            _ => {
                let tag = Tag(u.arbitrary()?);
                let n = u.int_in_range(0..=16usize)?.min(u.len());
                let payload = u.bytes(n)?.to_vec();
                sections.push((tag, payload));
            }
        }
    }
    // Most mutations go to the module itself.
    let ops = u.int_in_range(0..=MAX_OPS)?;
    if let Some((_, modl)) = sections.iter_mut().find(|(t, _)| *t == MODL) {
        if u.ratio(1u8, 32u8)? {
            *modl = u.choose(donors())?.clone();
        }
        for _ in 0..ops {
            payload_op(u, modl)?;
        }
    }
    let refs: Vec<(Tag, &[u8])> = sections.iter().map(|(t, p)| (*t, p.as_slice())).collect();
    Ok(Container::encode(
        container.source_hash,
        container.compiler,
        &refs,
    ))
}
