//! Byte-level helpers shared by the lexers. Every token they recognize is ASCII, so a
//! position they return after a token is always a `char` boundary.

/// `[A-Za-z_]`
pub(crate) fn is_ident_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_'
}

/// `[A-Za-z0-9_]`
pub(crate) fn is_ident_continue(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
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
/// `memchr` finds the token's first byte and the rest is compared in place.
pub(crate) fn find_from(text: &str, from: usize, pat: &str) -> Option<usize> {
    let hay = text.get(from..)?.as_bytes();
    let (&first, rest) = pat.as_bytes().split_first()?;
    let mut at = 0;
    while let Some(i) = memchr::memchr(first, &hay[at..]) {
        let start = at + i;
        if hay[start + 1..].starts_with(rest) {
            return Some(from + start);
        }
        at = start + 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
