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
pub const FORMAT_MINOR: u16 = 1;

/// The largest artifact [`Container::decode`] accepts by default (64 MiB).
pub const DEFAULT_MAX_ARTIFACT_BYTES: usize = 64 << 20;

const FIXED_HEADER: usize = 8 + 2 + 2 + 32 + 1;
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
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ContainerError {
    /// The file does not start with [`MAGIC`].
    #[error("not a .ppk file (bad magic)")]
    BadMagic,
    /// The file ends before a field it announces.
    #[error("truncated .ppk file: {what} needs bytes {start}..{end}, but the file has {len}")]
    Truncated {
        /// The field being read.
        what: &'static str,
        /// Its first byte.
        start: usize,
        /// One past its last byte.
        end: usize,
        /// The file's length.
        len: usize,
    },
    /// Another major format version.
    #[error("format {found}.x is not supported by this reader ({supported}.x); rebuild the artifact with a matching packc")]
    Version {
        /// The file's major version.
        found: u16,
        /// The major version this reader supports.
        supported: u16,
    },
    /// The CRC-32 trailer does not match the bytes.
    #[error(
        "corrupted .ppk file: checksum {found:08x} does not match the contents ({expected:08x})"
    )]
    Checksum {
        /// CRC-32 computed over the file.
        expected: u32,
        /// CRC-32 stored in the trailer.
        found: u32,
    },
    /// Bytes left between the last section and the trailer.
    #[error("malformed .ppk file: {0} unexpected bytes after the last section")]
    TrailingBytes(usize),
    /// A tag that is not four ASCII letters.
    #[error("malformed .ppk file: section tag {0:?} is not four ASCII letters")]
    BadTag([u8; 4]),
    /// The same tag twice.
    #[error("malformed .ppk file: section {0} appears twice")]
    DuplicateSection(Tag),
    /// A required section this reader does not know.
    #[error("section {0} is required but unknown to this reader; a newer packc wrote this file")]
    UnknownRequiredSection(Tag),
    /// A section the reader needs is absent.
    #[error("malformed .ppk file: section {0} is missing")]
    MissingSection(Tag),
    /// The compiler version string is not UTF-8.
    #[error("malformed .ppk file: the compiler version is not UTF-8")]
    BadCompilerVersion,
    /// The file is larger than the configured limit.
    #[error("artifact of {size} bytes exceeds the limit of {limit} bytes (`max_artifact_bytes`)")]
    TooLarge {
        /// The file's size.
        size: usize,
        /// The limit.
        limit: usize,
    },
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

    /// Decode and check a container: size limit, magic, major version, checksum, then
    /// every section bound and tag. Never panics, whatever the bytes.
    pub fn decode(bytes: &'a [u8], max_bytes: usize) -> Result<Container<'a>, ContainerError> {
        if bytes.len() > max_bytes {
            return Err(ContainerError::TooLarge {
                size: bytes.len(),
                limit: max_bytes,
            });
        }
        let mut r = Reader { bytes, pos: 0 };
        if r.take(MAGIC.len(), "magic").ok() != Some(&MAGIC[..]) {
            return Err(ContainerError::BadMagic);
        }
        let major = r.u16("format version")?;
        let minor = r.u16("format version")?;
        if major != FORMAT_MAJOR {
            return Err(ContainerError::Version {
                found: major,
                supported: FORMAT_MAJOR,
            });
        }
        if bytes.len() < FIXED_HEADER + 4 + TRAILER {
            return Err(ContainerError::Truncated {
                what: "header",
                start: 0,
                end: FIXED_HEADER + 4 + TRAILER,
                len: bytes.len(),
            });
        }
        let (content, trailer) = bytes.split_at(bytes.len() - TRAILER);
        let found = u32::from_le_bytes([trailer[0], trailer[1], trailer[2], trailer[3]]);
        let expected = crc32(content);
        if found != expected {
            return Err(ContainerError::Checksum { expected, found });
        }
        let mut r = Reader {
            bytes: content,
            pos: r.pos,
        };
        let mut source_hash = [0; 32];
        source_hash.copy_from_slice(r.take(32, "source hash")?);
        let n = r.take(1, "compiler version")?[0] as usize;
        let compiler = std::str::from_utf8(r.take(n, "compiler version")?)
            .map_err(|_| ContainerError::BadCompilerVersion)?;
        let count = r.u32("section count")? as usize;
        // Each section takes at least 8 bytes: bound the allocation by what the file can hold.
        let mut sections: Vec<(Tag, &[u8])> = Vec::with_capacity(count.min(content.len() / 8));
        for _ in 0..count {
            let raw = r.take(4, "section tag")?;
            let tag = Tag([raw[0], raw[1], raw[2], raw[3]]);
            if !tag.0.iter().all(u8::is_ascii_alphabetic) {
                return Err(ContainerError::BadTag(tag.0));
            }
            if sections.iter().any(|(t, _)| *t == tag) {
                return Err(ContainerError::DuplicateSection(tag));
            }
            let len = r.u32("section length")? as usize;
            let payload = r.take(len, "section payload")?;
            sections.push((tag, payload));
        }
        if r.pos != content.len() {
            return Err(ContainerError::TrailingBytes(content.len() - r.pos));
        }
        Ok(Container {
            minor,
            source_hash,
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
                start: self.pos,
                end: self.pos.saturating_add(n),
                len: self.bytes.len(),
            })?;
        let out = &self.bytes[self.pos..end];
        self.pos = end;
        Ok(out)
    }

    fn u16(&mut self, what: &'static str) -> Result<u16, ContainerError> {
        let b = self.take(2, what)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }

    fn u32(&mut self, what: &'static str) -> Result<u32, ContainerError> {
        let b = self.take(4, what)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
}

/// CRC-32 (IEEE 802.3 polynomial 0xEDB88320, reflected, init and final xor 0xFFFFFFFF),
/// the checksum of zlib, gzip and PNG.
pub fn crc32(bytes: &[u8]) -> u32 {
    const TABLE: [u32; 256] = {
        let mut table = [0u32; 256];
        let mut i = 0;
        while i < 256 {
            let mut c = i as u32;
            let mut k = 0;
            while k < 8 {
                c = if c & 1 != 0 {
                    0xEDB8_8320 ^ (c >> 1)
                } else {
                    c >> 1
                };
                k += 1;
            }
            table[i] = c;
            i += 1;
        }
        table
    };
    let mut crc = !0u32;
    for &b in bytes {
        crc = TABLE[((crc ^ u32::from(b)) & 0xFF) as usize] ^ (crc >> 8);
    }
    !crc
}

#[cfg(test)]
mod tests {
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
        assert_eq!(&bytes[8..12], &[1, 0, 1, 0]);
        assert_eq!(bytes[44], 1);
        assert_eq!(bytes[45], b'x');
        assert_eq!(&bytes[46..50], &[0, 0, 0, 0]);
        assert_eq!(bytes.len(), 54);
    }

    #[test]
    fn every_cut_and_flip_is_rejected() {
        let bytes = sample();
        for len in 0..bytes.len() {
            assert!(
                Container::decode(&bytes[..len], usize::MAX).is_err(),
                "cut at {len}"
            );
        }
        for i in 0..bytes.len() {
            for bit in 0..8 {
                let mut b = bytes.clone();
                b[i] ^= 1 << bit;
                assert!(Container::decode(&b, usize::MAX).is_err(), "flip {i}:{bit}");
            }
        }
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
