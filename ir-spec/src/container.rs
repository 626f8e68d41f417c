//! The `.ppk` container: a small fixed header, tagged sections, and a CRC-32 trailer.
//!
//! `FORMAT.md` beside this crate is the normative description; this module is its
//! reference implementation. All integers are little-endian.
//!
//! ```text
//! offset  size  field
//! 0       8     magic: 89 50 50 4B 0D 0A 1A 0A  ("\x89PPK\r\n\x1a\n")
//! 8       2     format major version (u16)
//! 10      2     format minor version (u16)
//! 12      32    SHA-256 of the pack source bytes (provenance)
//! 44      1     length N of the compiler version string
//! 45      N     compiler version, UTF-8 (e.g. "packc 0.1.0")
//! 45+N    4     section count S (u32)
//! ...           S sections, each: tag (4 ASCII bytes), length L (u32), L payload bytes
//! end-4   4     CRC-32 (IEEE 802.3, as zlib's crc32) of every byte before it
//! ```
//!
//! A section tag is four ASCII letters. As in PNG, a tag whose first letter is lowercase
//! marks an *optional* section a reader may skip when it does not know it; an unknown tag
//! starting with an uppercase letter is an error. Tags are unique within a file.

use thiserror::Error;

/// The eight bytes every `.ppk` file starts with. The high first byte catches 7-bit
/// transports, `\r\n` and `\x1a` catch text-mode newline and EOF mangling (PNG's trick).
pub const MAGIC: [u8; 8] = *b"\x89PPK\r\n\x1a\n";

/// The format major version this crate writes and reads. A file with another major
/// version is rejected.
pub const FORMAT_MAJOR: u16 = 1;

/// The format minor version this crate writes. Minor versions only add optional sections,
/// so a reader accepts any minor version of its major.
pub const FORMAT_MINOR: u16 = 2;

/// The largest artifact [`Container::decode`] accepts by default (64 MiB).
pub const DEFAULT_MAX_ARTIFACT_BYTES: usize = 64 << 20;

/// Magic and both version numbers: what a reader of any format version can read.
const VERSION_END: usize = 8 + 2 + 2;
const FIXED_HEADER: usize = VERSION_END + 32 + 1;
const TRAILER: usize = 4;

/// A four-letter section tag.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Tag(pub [u8; 4]);

impl Tag {
    /// Whether a reader that does not know this section may skip it (first letter lowercase).
    pub fn is_optional(self) -> bool {
        self.0[0].is_ascii_lowercase()
    }
}

impl std::fmt::Display for Tag {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&String::from_utf8_lossy(&self.0))
    }
}

/// Why a byte string is not a loadable `.ppk` container.
///
/// Each variant has a stable name ([`ContainerError::name`]), the one FORMAT.md §1
/// "Reading, in order" gives it; `ir-spec/tools/ppk_dump.py` reports the same names.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ContainerError {
    /// `not_ppk`: the file's first bytes (up to 8) are not [`MAGIC`].
    #[error("not a .ppk file (bad magic)")]
    BadMagic,
    /// `truncated`: the file ends before the layout its header declares does, checked
    /// before the checksum (a cut file is *truncated*, not *corrupted*).
    #[error("truncated .ppk file: {len} bytes, but its {what} needs {need}")]
    Truncated {
        /// The part that does not fit: `magic`, `format version`, `header`, `compiler
        /// version`, `section count`, `section header` or `section payload`.
        what: &'static str,
        /// The least file length (trailer included) that part needs.
        need: usize,
        /// The file's length.
        len: usize,
    },
    /// `unsupported_version`: another major format version.
    #[error("format {found}.x is not supported by this reader ({supported}.x); rebuild the artifact with a matching packc")]
    Version {
        /// The file's major version.
        found: u16,
        /// The major version this reader supports.
        supported: u16,
    },
    /// `corrupted`: the CRC-32 trailer does not match the bytes.
    #[error(
        "corrupted .ppk file: checksum {found:08x} does not match the contents ({expected:08x})"
    )]
    Checksum {
        /// CRC-32 computed over the file.
        expected: u32,
        /// CRC-32 stored in the trailer.
        found: u32,
    },
    /// `trailing_bytes`: bytes left between the last section and the trailer.
    #[error("malformed .ppk file: {0} unexpected bytes after the last section")]
    TrailingBytes(usize),
    /// `bad_section_tag`: a tag that is not four ASCII letters.
    #[error("malformed .ppk file: section tag {0:?} is not four ASCII letters")]
    BadTag([u8; 4]),
    /// `duplicate_section`: the same tag twice.
    #[error("malformed .ppk file: section {0} appears twice")]
    DuplicateSection(Tag),
    /// `unknown_required_section`: a required section this reader does not know.
    #[error("section {0} is required but unknown to this reader; a newer packc wrote this file")]
    UnknownRequiredSection(Tag),
    /// `missing_section`: a section the reader needs is absent.
    #[error("malformed .ppk file: section {0} is missing")]
    MissingSection(Tag),
    /// `bad_compiler_version`: the compiler version string is not UTF-8.
    #[error("malformed .ppk file: the compiler version is not UTF-8")]
    BadCompilerVersion,
    /// `too_large`: the file is larger than the configured limit.
    #[error("artifact of {size} bytes exceeds the limit of {limit} bytes (`max_artifact_bytes`)")]
    TooLarge {
        /// The file's size.
        size: usize,
        /// The limit.
        limit: usize,
    },
}

impl ContainerError {
    /// The error's stable name, as FORMAT.md §1 "Reading, in order" lists it.
    pub fn name(&self) -> &'static str {
        match self {
            ContainerError::TooLarge { .. } => "too_large",
            ContainerError::BadMagic => "not_ppk",
            ContainerError::Truncated { .. } => "truncated",
            ContainerError::Version { .. } => "unsupported_version",
            ContainerError::Checksum { .. } => "corrupted",
            ContainerError::BadCompilerVersion => "bad_compiler_version",
            ContainerError::BadTag(_) => "bad_section_tag",
            ContainerError::DuplicateSection(_) => "duplicate_section",
            ContainerError::TrailingBytes(_) => "trailing_bytes",
            ContainerError::UnknownRequiredSection(_) => "unknown_required_section",
            ContainerError::MissingSection(_) => "missing_section",
        }
    }
}

/// A decoded container: header fields and section payloads, borrowed from the file bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Container<'a> {
    /// The format minor version of the file.
    pub minor: u16,
    /// SHA-256 of the pack source the artifact was built from.
    pub source_hash: [u8; 32],
    /// The compiler that wrote the file, e.g. `packc 0.1.0`.
    pub compiler: &'a str,
    /// Sections in file order.
    pub sections: Vec<(Tag, &'a [u8])>,
}

impl<'a> Container<'a> {
    /// Encode header, sections (in the order given) and trailer.
    ///
    /// The compiler version is truncated to 255 bytes (on a character boundary).
    pub fn encode(source_hash: [u8; 32], compiler: &str, sections: &[(Tag, &[u8])]) -> Vec<u8> {
        let mut compiler_len = compiler.len().min(255);
        while !compiler.is_char_boundary(compiler_len) {
            compiler_len -= 1;
        }
        let body: usize = sections.iter().map(|(_, p)| 8 + p.len()).sum();
        let mut out = Vec::with_capacity(FIXED_HEADER + compiler_len + 4 + body + TRAILER);
        out.extend_from_slice(&MAGIC);
        out.extend_from_slice(&FORMAT_MAJOR.to_le_bytes());
        out.extend_from_slice(&FORMAT_MINOR.to_le_bytes());
        out.extend_from_slice(&source_hash);
        out.push(compiler_len as u8);
        out.extend_from_slice(&compiler.as_bytes()[..compiler_len]);
        out.extend_from_slice(&(sections.len() as u32).to_le_bytes());
        for (tag, payload) in sections {
            out.extend_from_slice(&tag.0);
            out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
            out.extend_from_slice(payload);
        }
        let crc = crc32(&out);
        out.extend_from_slice(&crc.to_le_bytes());
        out
    }

    /// Decode and check a container, in the order of FORMAT.md §1 "Reading, in order":
    /// size limit, magic, major version, the declared layout against the file's length,
    /// checksum, then compiler version, tags and what follows the last section. Never
    /// panics, whatever the bytes.
    pub fn decode(bytes: &'a [u8], max_bytes: usize) -> Result<Container<'a>, ContainerError> {
        let len = bytes.len();
        if len > max_bytes {
            return Err(ContainerError::TooLarge {
                size: len,
                limit: max_bytes,
            });
        }
        let head = &bytes[..len.min(MAGIC.len())];
        if head != &MAGIC[..head.len()] {
            return Err(ContainerError::BadMagic);
        }
        let truncated = |what, need| ContainerError::Truncated { what, need, len };
        if len < MAGIC.len() {
            return Err(truncated("magic", MAGIC.len()));
        }
        if len < VERSION_END {
            return Err(truncated("format version", VERSION_END));
        }
        let major = u16::from_le_bytes([bytes[8], bytes[9]]);
        let minor = u16::from_le_bytes([bytes[10], bytes[11]]);
        if major != FORMAT_MAJOR {
            return Err(ContainerError::Version {
                found: major,
                supported: FORMAT_MAJOR,
            });
        }
        if len < FIXED_HEADER + 4 + TRAILER {
            return Err(truncated("header", FIXED_HEADER + 4 + TRAILER));
        }
        // The layout is walked by its lengths alone before the checksum is compared, so
        // that a cut file says how long its header says it is; nothing read here is
        // trusted until the checksum matches.
        let (content, trailer) = bytes.split_at(len - TRAILER);
        let mut r = Reader {
            bytes: content,
            pos: VERSION_END,
        };
        let source_hash = r.take(32, "header")?;
        let n = r.take(1, "header")?[0] as usize;
        let compiler = r.take(n, "compiler version")?;
        let count = r.u32("section count")? as usize;
        // Each section takes at least 8 bytes: bound the allocation by what the file can hold.
        let mut sections: Vec<(Tag, &[u8])> = Vec::with_capacity(count.min(content.len() / 8));
        for _ in 0..count {
            let raw = r.take(4, "section header")?;
            let tag = Tag([raw[0], raw[1], raw[2], raw[3]]);
            let size = r.u32("section header")? as usize;
            sections.push((tag, r.take(size, "section payload")?));
        }

        let found = u32::from_le_bytes([trailer[0], trailer[1], trailer[2], trailer[3]]);
        let expected = crc32(content);
        if found != expected {
            return Err(ContainerError::Checksum { expected, found });
        }
        let compiler =
            std::str::from_utf8(compiler).map_err(|_| ContainerError::BadCompilerVersion)?;
        let mut seen = std::collections::HashSet::with_capacity(sections.len());
        for (tag, _) in &sections {
            if !tag.0.iter().all(u8::is_ascii_alphabetic) {
                return Err(ContainerError::BadTag(tag.0));
            }
            if !seen.insert(*tag) {
                return Err(ContainerError::DuplicateSection(*tag));
            }
        }
        if r.pos != content.len() {
            return Err(ContainerError::TrailingBytes(content.len() - r.pos));
        }
        let mut hash = [0; 32];
        hash.copy_from_slice(source_hash);
        Ok(Container {
            minor,
            source_hash: hash,
            compiler,
            sections,
        })
    }

    /// The payload of a section, if present.
    pub fn section(&self, tag: Tag) -> Option<&'a [u8]> {
        self.sections
            .iter()
            .find(|(t, _)| *t == tag)
            .map(|(_, p)| *p)
    }

    /// The payload of a section the reader needs.
    pub fn require(&self, tag: Tag) -> Result<&'a [u8], ContainerError> {
        self.section(tag).ok_or(ContainerError::MissingSection(tag))
    }

    /// Fail on a required section whose tag is not in `known`.
    pub fn check_known(&self, known: &[Tag]) -> Result<(), ContainerError> {
        match self
            .sections
            .iter()
            .find(|(t, _)| !t.is_optional() && !known.contains(t))
        {
            Some((t, _)) => Err(ContainerError::UnknownRequiredSection(*t)),
            None => Ok(()),
        }
    }
}

/// Reads the file's content (all but the trailer); what does not fit is *truncated*.
struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], ContainerError> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&e| e <= self.bytes.len())
            .ok_or(ContainerError::Truncated {
                what,
                need: self.pos.saturating_add(n).saturating_add(TRAILER),
                len: self.bytes.len() + TRAILER,
            })?;
        let out = &self.bytes[self.pos..end];
        self.pos = end;
        Ok(out)
    }

    fn u32(&mut self, what: &'static str) -> Result<u32, ContainerError> {
        let b = self.take(4, what)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
}

/// CRC-32 (IEEE 802.3 polynomial 0xEDB88320, reflected, init and final xor 0xFFFFFFFF),
/// the checksum of zlib, gzip and PNG.
///
/// Computed by `crc32fast`: on x86-64 with `pclmulqdq` it folds the bytes with carry-less
/// multiplication (wider kernels from 256 bytes and 2 KiB where the CPU has AVX2 or
/// AVX-512), on AArch64 it uses the `crc32` instructions, and elsewhere it reads 16 bytes
/// a step from tables.
pub fn crc32(bytes: &[u8]) -> u32 {
    crc32fast::hash(bytes)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    const MODL: Tag = Tag(*b"MODL");
    const NOTE: Tag = Tag(*b"note");

    fn sample() -> Vec<u8> {
        Container::encode(
            [7; 32],
            "packc 0.1.0",
            &[(MODL, b"module bytes"), (NOTE, b"")],
        )
    }

    #[test]
    fn crc32_matches_zlib() {
        assert_eq!(crc32(b""), 0);
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
    }

    /// The CRC-32 of FORMAT.md, one byte at a time, as its definition reads.
    fn crc32_by_definition(bytes: &[u8]) -> u32 {
        let mut crc = !0u32;
        for &b in bytes {
            crc ^= u32::from(b);
            for _ in 0..8 {
                crc = if crc & 1 != 0 {
                    0xEDB8_8320 ^ (crc >> 1)
                } else {
                    crc >> 1
                };
            }
        }
        !crc
    }

    /// Bytes that are not all alike: a simple linear congruential sequence.
    fn noise(n: usize) -> Vec<u8> {
        let mut x = 0x2545_F491u32;
        (0..n)
            .map(|_| {
                x = x.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                (x >> 24) as u8
            })
            .collect()
    }

    /// The fast checksum is the defined one at every length up to 300 and around each size
    /// where `crc32fast` changes kernel (16, 64, 128, 256 bytes, 2 and 4 KiB), at the first
    /// few start offsets.
    #[test]
    fn crc32_is_the_defined_checksum_at_every_kernel_size() {
        let bytes = noise(4_200);
        let edges = [
            1_023, 1_024, 1_025, 2_047, 2_048, 2_049, 4_095, 4_096, 4_097,
        ];
        for len in (0..=300).chain(edges) {
            for skip in 0..4 {
                let slice = &bytes[skip..skip + len];
                assert_eq!(crc32(slice), crc32_by_definition(slice), "length {len}");
            }
        }
    }

    proptest::proptest! {
        /// The fast checksum is the defined one on arbitrary bytes, of lengths below 5,000
        /// and at start offsets below 16.
        #[test]
        fn crc32_is_the_defined_checksum(
            bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..5_000),
            skip in 0usize..16,
        ) {
            let tail = &bytes[skip.min(bytes.len())..];
            proptest::prop_assert_eq!(crc32(tail), crc32_by_definition(tail));
        }
    }

    #[test]
    fn round_trip() {
        let bytes = sample();
        let c = Container::decode(&bytes, DEFAULT_MAX_ARTIFACT_BYTES).unwrap();
        assert_eq!(c.compiler, "packc 0.1.0");
        assert_eq!(c.source_hash, [7; 32]);
        assert_eq!(c.require(MODL).unwrap(), b"module bytes");
        assert_eq!(c.section(NOTE), Some(&b""[..]));
        assert!(c.check_known(&[MODL]).is_ok());
        assert_eq!(
            c.check_known(&[]),
            Err(ContainerError::UnknownRequiredSection(MODL))
        );
        let again = Container::encode(c.source_hash, c.compiler, &c.sections);
        assert_eq!(again, bytes);
    }

    #[test]
    fn header_layout_is_pinned() {
        let bytes = Container::encode([0; 32], "x", &[]);
        assert_eq!(&bytes[..8], b"\x89PPK\r\n\x1a\n");
        assert_eq!(&bytes[8..12], &[1, 0, 2, 0]);
        assert_eq!(bytes[44], 1);
        assert_eq!(bytes[45], b'x');
        assert_eq!(&bytes[46..50], &[0, 0, 0, 0]);
        assert_eq!(bytes.len(), 54);
    }

    /// Asserts that `refused` holds for every proper prefix of `bytes` and every copy of
    /// it with one bit flipped.
    pub(crate) fn assert_every_cut_and_flip_fails(bytes: &[u8], refused: impl Fn(&[u8]) -> bool) {
        for len in 0..bytes.len() {
            assert!(refused(&bytes[..len]), "cut at {len}");
        }
        for i in 0..bytes.len() {
            for bit in 0..8 {
                let mut b = bytes.to_vec();
                b[i] ^= 1 << bit;
                assert!(refused(&b), "flip {i}:{bit}");
            }
        }
    }

    #[test]
    fn every_cut_and_flip_is_rejected() {
        assert_every_cut_and_flip_fails(&sample(), |b| Container::decode(b, usize::MAX).is_err());
    }

    #[test]
    fn cut_files_are_truncated_before_the_checksum_is_read() {
        let bytes = sample();
        let len = bytes.len();
        let truncated = |what, need, len| Err(ContainerError::Truncated { what, need, len });
        // Every cut, whatever the checksum says, names what does not fit.
        // The sample ends with MODL's 12 payload bytes, then `note`'s 8-byte head and no payload.
        for (cut, what, need) in [
            (0, "magic", 8),
            (5, "magic", 8),
            (10, "format version", 12),
            (12, "header", 53),
            (52, "header", 53),
            (len - 1, "section header", len),
            (len - 10, "section payload", len - 8),
        ] {
            assert_eq!(
                Container::decode(&bytes[..cut], usize::MAX),
                truncated(what, need, cut),
                "cut at {cut}"
            );
        }
        let message = Container::decode(&bytes[..len - 1], usize::MAX)
            .unwrap_err()
            .to_string();
        assert_eq!(
            message,
            format!(
                "truncated .ppk file: {} bytes, but its section header needs {len}",
                len - 1
            )
        );
        // A file that is not a prefix of the magic is not a .ppk file, however short.
        assert_eq!(
            Container::decode(b"PK", usize::MAX),
            Err(ContainerError::BadMagic)
        );
    }

    #[test]
    fn checksummed_defects_are_named_in_file_order() {
        let fix_crc = |mut b: Vec<u8>| {
            let n = b.len();
            let crc = crc32(&b[..n - 4]);
            b[n - 4..].copy_from_slice(&crc.to_le_bytes());
            b
        };
        let mut bad_utf8 = sample();
        bad_utf8[45] = 0xff;
        assert_eq!(
            Container::decode(&fix_crc(bad_utf8.clone()), usize::MAX),
            Err(ContainerError::BadCompilerVersion)
        );
        // The same file with a bad checksum is corrupted: the checksum comes first.
        assert!(matches!(
            Container::decode(&bad_utf8, usize::MAX),
            Err(ContainerError::Checksum { .. })
        ));
        let mut trailing = Container::encode([0; 32], "x", &[(MODL, b"m")]);
        trailing.splice(trailing.len() - 4..trailing.len() - 4, [0, 0]);
        assert_eq!(
            Container::decode(&fix_crc(trailing), usize::MAX),
            Err(ContainerError::TrailingBytes(2))
        );
    }

    #[test]
    fn many_sections_are_checked_in_linear_time() {
        // 26 × 52 × 52 distinct optional tags, each an empty section: a quadratic
        // duplicate check would compare 2.5·10^9 pairs.
        let letters = (b'a'..=b'z').chain(b'A'..=b'Z');
        let tags: Vec<Tag> = letters
            .clone()
            .take(26)
            .flat_map(|a| {
                let letters = letters.clone();
                letters
                    .clone()
                    .flat_map(move |b| letters.clone().map(move |c| Tag([a, b, c, b'x'])))
            })
            .collect();
        let sections: Vec<(Tag, &[u8])> = tags.iter().map(|t| (*t, &b""[..])).collect();
        let bytes = Container::encode([0; 32], "x", &sections);
        let started = std::time::Instant::now();
        let c = Container::decode(&bytes, usize::MAX).unwrap();
        assert_eq!(c.sections.len(), tags.len());
        assert!(started.elapsed().as_secs() < 5, "{:?}", started.elapsed());
    }

    #[test]
    fn newer_major_and_foreign_files() {
        let mut bytes = sample();
        bytes[8] = 2;
        assert_eq!(
            Container::decode(&bytes, usize::MAX),
            Err(ContainerError::Version {
                found: 2,
                supported: 1
            })
        );
        assert_eq!(
            Container::decode(b"PK\x03\x04zip", usize::MAX),
            Err(ContainerError::BadMagic)
        );
        assert!(matches!(
            Container::decode(&sample(), 10),
            Err(ContainerError::TooLarge { limit: 10, .. })
        ));
    }

    #[test]
    fn bad_sections() {
        let dup = Container::encode([0; 32], "", &[(MODL, b"a"), (MODL, b"b")]);
        assert_eq!(
            Container::decode(&dup, usize::MAX),
            Err(ContainerError::DuplicateSection(MODL))
        );
        let bad = Container::encode([0; 32], "", &[(Tag(*b"M0DL"), b"a")]);
        assert_eq!(
            Container::decode(&bad, usize::MAX),
            Err(ContainerError::BadTag(*b"M0DL"))
        );
        // A section count larger than the file can hold is a truncation, not an allocation.
        let mut huge = Container::encode([0; 32], "", &[]);
        let n = huge.len();
        huge[n - 8..n - 4].copy_from_slice(&u32::MAX.to_le_bytes());
        let crc = crc32(&huge[..n - 4]);
        huge[n - 4..].copy_from_slice(&crc.to_le_bytes());
        assert!(matches!(
            Container::decode(&huge, usize::MAX),
            Err(ContainerError::Truncated { .. })
        ));
    }
}
