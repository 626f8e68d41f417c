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

/// The first position of `pat` in `text` at or after `from`; `None` when there is none
/// or `from` is not a `char` boundary.
pub(crate) fn find_from(text: &str, from: usize, pat: &str) -> Option<usize> {
    text.get(from..)?.find(pat).map(|off| from + off)
}
