//! Byte-level helpers shared by the lexers. Every token they recognize is ASCII, so a
//! position they return after a token is always a `char` boundary.

/// Each byte's class: [`START`] for `[A-Za-z_]`, [`CONTINUE`] for `[A-Za-z0-9_]`. One
/// load per byte, where the ranges would take three comparisons.
static CLASS: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        if c.is_ascii_alphabetic() || c == b'_' {
            table[b] = START | CONTINUE;
        } else if c.is_ascii_digit() {
            table[b] = CONTINUE;
        }
        b += 1;
    }
    table
};
const START: u8 = 1;
const CONTINUE: u8 = 2;

/// `[A-Za-z_]`
#[inline]
pub(crate) fn is_ident_start(b: u8) -> bool {
    CLASS[usize::from(b)] & START != 0
}

/// `[A-Za-z0-9_]`
#[inline]
pub(crate) fn is_ident_continue(b: u8) -> bool {
    CLASS[usize::from(b)] & CONTINUE != 0
}

/// The end of the identifier `[A-Za-z_][A-Za-z0-9_]*` that starts at `at`, or `None`
/// when no identifier starts there (including when `at` is past the end).
pub(crate) fn ident_end(bytes: &[u8], at: usize) -> Option<usize> {
    if !bytes.get(at).copied().is_some_and(is_ident_start) {
        return None;
    }
    let len = bytes[at + 1..]
        .iter()
        .take_while(|&&b| is_ident_continue(b))
        .count();
    Some(at + 1 + len)
}

/// Whether `s` is exactly one identifier.
pub(crate) fn is_ident(s: &str) -> bool {
    ident_end(s.as_bytes(), 0) == Some(s.len())
}

/// The first position of the ASCII token `pat` (`${`, `{{`, `}`) in `text` at or after
/// `from`; `None` when there is none or `from` is not a `char` boundary.
///
/// `str::find` with a string pattern sets up a Two-Way searcher on every call, which
/// costs more than the search itself on the short strings a pack is made of: here
/// [`find_byte`] finds the token's first byte and the rest is compared in place.
pub(crate) fn find_from(text: &str, from: usize, pat: &str) -> Option<usize> {
    let hay = text.get(from..)?.as_bytes();
    let (&first, rest) = pat.as_bytes().split_first()?;
    let mut at = 0;
    while let Some(i) = find_byte(first, &hay[at..]) {
        let start = at + i;
        if hay[start + 1..].starts_with(rest) {
            return Some(from + start);
        }
        at = start + 1;
    }
    None
}

/// The first position of `byte` in `hay`.
///
/// On x86-64 this is `memchr`'s SSE2 search, which every x86-64 processor has, rather
/// than `memchr::memchr`, whose first call asks the processor whether it has AVX2. That
/// question is seven `cpuid` instructions, and in a virtual machine each one traps to the
/// hypervisor (about 8 µs apiece on the machine `benches/README.md` describes), far more
/// than `packc check` of a small pack spends lexing. Below 32 bytes, which most of a
/// pack's strings are, the AVX2 kernel runs this SSE2 one anyway. Elsewhere `memchr`
/// chooses its kernel when it is compiled, without asking.
#[inline]
pub(crate) fn find_byte(byte: u8, hay: &[u8]) -> Option<usize> {
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    if let Some(finder) = memchr::arch::x86_64::sse2::memchr::One::new(byte) {
        return finder.find(hay);
    }
    memchr::memchr(byte, hay)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_classes_are_the_ascii_ranges() {
        for b in 0..=255u8 {
            let start = b.is_ascii_alphabetic() || b == b'_';
            assert_eq!(is_ident_start(b), start, "{b}");
            assert_eq!(is_ident_continue(b), start || b.is_ascii_digit(), "{b}");
        }
    }

    #[test]
    fn tokens_are_found_as_str_find_finds_them() {
        let texts = [
            "",
            "$",
            "${",
            "a ${b} ${c}",
            "$$${x}",
            "{{{a}}",
            "é${é}}",
            "}{",
            "x{",
        ];
        for text in texts {
            for pat in ["${", "{{", "}"] {
                for from in 0..=text.len() + 1 {
                    let want = text.get(from..).and_then(|t| t.find(pat)).map(|o| from + o);
                    assert_eq!(find_from(text, from, pat), want, "{text:?} {pat} {from}");
                }
            }
        }
    }

    /// The search changes step at 16, 32 and 64 bytes on x86-64: a byte is found at every
    /// position of texts on both sides of those sizes (with the same byte again at the
    /// end), and a token after a run of its first byte (`$$$${`).
    #[test]
    fn a_byte_is_found_at_every_position_of_long_texts() {
        for len in [15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129, 200] {
            for at in 0..len {
                let mut bytes = vec![b'a'; len];
                bytes[at] = b'}';
                if at + 1 < len {
                    bytes[len - 1] = b'}';
                }
                assert_eq!(find_byte(b'}', &bytes), Some(at), "len {len}, at {at}");
                assert_eq!(find_byte(b'$', &bytes), None, "len {len}");
                let text = String::from_utf8(bytes).unwrap();
                for from in [0, at / 2, at, at + 1] {
                    let want = text.get(from..).and_then(|t| t.find('}')).map(|o| from + o);
                    assert_eq!(find_from(&text, from, "}"), want, "len {len}, at {at}");
                }
                let mut text = "$".repeat(at);
                text.push_str("${");
                text.push_str(&"x".repeat(len));
                assert_eq!(find_from(&text, 0, "${"), Some(at), "len {len}, at {at}");
            }
        }
    }
}
