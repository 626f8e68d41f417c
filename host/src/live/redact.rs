//! Keeping secrets out of what the live host says: the API key, the credentials of a URL,
//! the header values of HTTP tool bindings and the `env:` values of command bindings are
//! replaced by `[redacted]` in every answer before the VM sees it, so they reach neither
//! an error message, a trace, a `--record` file, nor a model (a tool's error text is
//! forwarded to the model in an agent loop).
//!
//! A server can echo a key back in a 401 message, a 500 page or a model answer; a tool
//! can print an environment variable in its stderr. Matching is on the exact text of
//! each secret; values shorter than [`MIN_SECRET_LEN`] bytes are left alone, since
//! blanking every `1` or `on` would garble messages without hiding anything.

use packc_vm::{Answer, ToolRequest};
use serde_json::Value;

/// What a secret is replaced by.
pub const REDACTED: &str = "[redacted]";

/// Secrets shorter than this many bytes are not redacted.
pub const MIN_SECRET_LEN: usize = 4;

/// The secrets of a live host, and the replacing.
#[derive(Clone, Debug, Default)]
pub struct Redactor {
    /// Longest first, so a secret containing another is replaced whole.
    secrets: Vec<String>,
}

impl Redactor {
    /// A redactor for `secrets`; those shorter than [`MIN_SECRET_LEN`] are dropped. A
    /// header-like value (`Bearer TOKEN`, `Basic XYZ`) also has its last word redacted
    /// on its own, since a server may echo the token alone.
    pub fn new(secrets: impl IntoIterator<Item = String>) -> Redactor {
        let mut all: Vec<String> = Vec::new();
        for s in secrets {
            if let Some((_, last)) = s.trim().rsplit_once(char::is_whitespace) {
                all.push(last.to_owned());
            }
            all.push(s);
        }
        all.retain(|s| s.len() >= MIN_SECRET_LEN);
        all.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        all.dedup();
        Redactor { secrets: all }
    }

    /// Whether there is nothing to redact.
    pub fn is_empty(&self) -> bool {
        self.secrets.is_empty()
    }

    /// `text` with every secret replaced by [`REDACTED`].
    pub fn text(&self, text: &str) -> String {
        let mut out = text.to_owned();
        self.in_place(&mut out);
        out
    }

    fn in_place(&self, text: &mut String) {
        for s in &self.secrets {
            if text.contains(s.as_str()) {
                *text = text.replace(s.as_str(), REDACTED);
            }
        }
    }

    /// Redacts every string and object key of `v`.
    pub fn value(&self, v: &mut Value) {
        if self.is_empty() {
            return;
        }
        match v {
            Value::String(s) => self.in_place(s),
            Value::Array(items) => items.iter_mut().for_each(|i| self.value(i)),
            Value::Object(map) => {
                let leaks = map
                    .keys()
                    .any(|k| self.secrets.iter().any(|s| k.contains(s.as_str())));
                if leaks {
                    let old = std::mem::take(map);
                    for (k, v) in old {
                        map.insert(self.text(&k), v);
                    }
                }
                map.values_mut().for_each(|i| self.value(i));
            }
            _ => {}
        }
    }

    /// Redacts an answer: its output and event, its tool requests, or its error message.
    pub fn answer(&self, a: &mut Answer) {
        if self.is_empty() {
            return;
        }
        match a {
            Answer::Output { output, event } => {
                self.value(output);
                if let Some(e) = event {
                    self.in_place(e);
                }
            }
            Answer::ToolCalls(reqs) => {
                for ToolRequest { name, args } in reqs {
                    self.in_place(name);
                    self.value(args);
                }
            }
            Answer::Error(e) => self.in_place(e),
        }
    }
}

/// Whether `c` can be part of a secret's text: anything but whitespace and the
/// punctuation that separates words in JSON, HTML and headers.
fn in_word(c: char) -> bool {
    !c.is_whitespace()
        && !matches!(
            c,
            '"' | '\'' | '<' | '>' | '(' | ')' | '{' | '}' | '[' | ']' | ',' | ';'
        )
}

/// The first `n` characters of `text`, for a message, with `…` when it is longer. A cut
/// never splits a word: the word it would split is left out whole. Redaction matches
/// each secret's whole text, so a secret cut in two would go out nearly whole; cut this
/// way, a secret is either kept whole (and redacted later) or not shown at all.
pub fn head(text: &str, n: usize) -> String {
    let Some((at, c)) = text.char_indices().nth(n) else {
        return text.to_owned();
    };
    let mut end = at;
    if in_word(c) {
        end = text[..at]
            .char_indices()
            .rev()
            .find(|&(_, c)| !in_word(c))
            .map_or(0, |(i, c)| i + c.len_utf8());
    }
    format!("{}…", &text[..end])
}

/// The last `n` characters of `text`, with `…` in front when it is longer; like [`head`],
/// the word a cut would split is left out whole.
pub fn tail(text: &str, n: usize) -> String {
    let count = text.chars().count();
    if count <= n {
        return text.to_owned();
    }
    let (at, _) = text
        .char_indices()
        .nth(count - n)
        .unwrap_or((text.len(), ' '));
    let before = text[..at].chars().next_back();
    let mut start = at;
    if before.is_some_and(in_word) {
        start = text[at..]
            .char_indices()
            .find(|&(_, c)| !in_word(c))
            .map_or(text.len(), |(i, _)| at + i);
    }
    format!("…{}", &text[start..])
}

/// The credentials of a URL, when it has some (`http://user:pw@host/...`): the whole
/// `user:pw`, the password on its own, and the base64 form the client sends them in as
/// basic authentication.
pub fn url_credentials(url: &str) -> Vec<String> {
    let Some((_, rest)) = url.split_once("://") else {
        return Vec::new();
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let Some((userinfo, _)) = authority.rsplit_once('@') else {
        return Vec::new();
    };
    let mut out = vec![userinfo.to_owned(), base64(userinfo.as_bytes())];
    if let Some((_, password)) = userinfo.split_once(':') {
        out.push(password.to_owned());
    }
    out
}

/// Standard base64 with padding.
fn base64(bytes: &[u8]) -> String {
    const ABC: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, &b)| n | u32::from(b) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ABC[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// `url` as it may be shown: credentials in it are replaced by [`REDACTED`].
pub fn shown_url(url: &str) -> String {
    match url.split_once("://") {
        Some((scheme, rest)) => {
            let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
            match rest[..end].rsplit_once('@') {
                Some((_, host)) => format!("{scheme}://{REDACTED}@{host}{}", &rest[end..]),
                None => url.to_owned(),
            }
        }
        None => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn secrets_are_replaced_everywhere_longest_first() {
        let r = Redactor::new(["sk-secret".to_owned(), "sk-secret-longer".to_owned()]);
        assert_eq!(
            r.text("key sk-secret-longer and sk-secret"),
            "key [redacted] and [redacted]"
        );
        let mut v = json!({"a": ["x sk-secret y"], "sk-secret": 1});
        r.value(&mut v);
        assert_eq!(v, json!({"a": ["x [redacted] y"], "[redacted]": 1}));
        let mut a = Answer::Error("401: bad key sk-secret".into());
        r.answer(&mut a);
        assert_eq!(a, Answer::Error("401: bad key [redacted]".into()));
    }

    #[test]
    fn short_values_stay_and_bearer_tokens_go_alone_too() {
        let r = Redactor::new(["on".to_owned(), "Bearer tok-123456".to_owned()]);
        assert_eq!(r.text("on: tok-123456"), "on: [redacted]");
        assert_eq!(r.text("Bearer tok-123456"), "[redacted]");
    }

    #[test]
    fn a_cut_leaves_out_the_word_it_would_split() {
        let secret = "sk-proj-SECRET0123456789abcdef";
        let text = format!("Header was: Bearer {secret} and more");
        for n in 0..text.chars().count() + 2 {
            let h = head(&text, n);
            let t = tail(&text, n);
            for shown in [&h, &t] {
                // Either the whole secret, or none of its middle.
                assert!(
                    shown.contains(secret) || !shown.contains("SECRET"),
                    "{n}: {shown}"
                );
            }
            assert!(h.chars().count() <= n + 1, "{n}: {h}");
            assert!(t.chars().count() <= n + 1, "{n}: {t}");
        }
        assert_eq!(head("short", 10), "short");
        assert_eq!(head("a {\"k\": 1}", 5), "a {\"k…");
        assert_eq!(tail("exit: error at x", 7), "… at x");
        assert_eq!(tail("short", 10), "short");
    }

    #[test]
    fn url_credentials_are_found_and_hidden() {
        let url = "http://user:PW-1234@example.com:8080/v1?q=a@b";
        assert_eq!(
            url_credentials(url),
            ["user:PW-1234", "dXNlcjpQVy0xMjM0", "PW-1234"].map(str::to_owned)
        );
        assert_eq!(
            shown_url(url),
            "http://[redacted]@example.com:8080/v1?q=a@b"
        );
        assert!(url_credentials("http://127.0.0.1:8080/v1").is_empty());
        assert_eq!(shown_url("http://h/v1"), "http://h/v1");
        assert_eq!(
            ["", "f", "fo", "foo", "foob"].map(|s| base64(s.as_bytes())),
            ["", "Zg==", "Zm8=", "Zm9v", "Zm9vYg=="]
        );
    }
}
