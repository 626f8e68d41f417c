//! Commands the CLI prints for a person to copy into a POSIX shell (`continue with
//! `packc resume 'run 1.snap' --turn JSON``): each word quoted only when it needs it.

use std::borrow::Cow;
use std::path::Path;

/// `word` as one shell word: as it is when every character is one a shell leaves alone
/// (ASCII letters and digits, `@%+=:,./-_`), else in single quotes, a `'` inside written
/// `'"'"'`. The empty word is `''`.
pub fn quote(word: &str) -> Cow<'_, str> {
    let plain = |c: char| c.is_ascii_alphanumeric() || "@%+=:,./-_".contains(c);
    if !word.is_empty() && word.chars().all(plain) {
        return Cow::Borrowed(word);
    }
    Cow::Owned(format!("'{}'", word.replace('\'', r#"'"'"'"#)))
}

/// The path `path` as one shell word ([`quote`]), lossily decoded.
pub fn path(path: &Path) -> String {
    quote(&path.to_string_lossy()).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_quoted_only_when_a_shell_would_split_or_expand_them() {
        assert_eq!(quote("run.snap"), "run.snap");
        assert_eq!(quote("/tmp/a-b_c/x@1,2:3+4=5%"), "/tmp/a-b_c/x@1,2:3+4=5%");
        assert_eq!(quote("run 1.snap"), "'run 1.snap'");
        assert_eq!(quote(""), "''");
        assert_eq!(quote("it's"), r#"'it'"'"'s'"#);
        assert_eq!(quote("$HOME"), "'$HOME'");
        assert_eq!(quote("a;b"), "'a;b'");
        assert_eq!(quote("~/x"), "'~/x'");
        assert_eq!(quote("*.case.yaml"), "'*.case.yaml'");
        assert_eq!(quote("café"), "'café'");
    }
}
