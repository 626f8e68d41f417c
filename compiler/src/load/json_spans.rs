//! The span index of a JSON text, read straight from its bytes.
//!
//! [`doc::parse`](crate::doc::parse) parses a JSON pack without spans; when a diagnostic
//! needs locating, this builds the same [`SpanIndex`] the YAML loader would, in one
//! linear scan of the text and without building a value again. The spans are the
//! loader's, byte for byte: a string's span includes its quotes, a key's span is the
//! quoted key, a collection's span runs from its `{` or `[` through its `}` or `]` and the
//! spaces and tabs after it on the same line, a
//! number or literal is its token. Node ids are given in document order, as the loader
//! gives them.
//!
//! The text must be one JSON document that [`doc::parse`](crate::doc::parse) (or
//! [`json_fast::parse`](super::json_fast::parse), which accepts the same texts) accepted,
//! so nesting is bounded by its limit; anything else gives `None`.

use std::borrow::Cow;
use std::ops::Range;

use super::span_index::{array_index, unescape, Kind, NodeSpan, Slot, SpanIndex};

/// The span index of the JSON document `text` (a leading byte-order mark and blanks
/// are skipped; offsets stay offsets into `text`). `None` when `text` is not one JSON
/// document.
pub fn index(text: &str) -> Option<SpanIndex> {
    let mut scan = Scan {
        text,
        bytes: text.as_bytes(),
        at: if text.starts_with('\u{feff}') { 3 } else { 0 },
        index: SpanIndex::default(),
    };
    scan.value(Slot::Detached, None)?;
    scan.blanks();
    (scan.at == scan.bytes.len()).then_some(scan.index)
}

/// The node `pointer` names in the JSON document `text`, or if there is none its deepest
/// existing ancestor: its spans, and whether it is the node named. Only the path to it
/// is read: the members before it are passed over, nothing is recorded. `None` when
/// `pointer` is not a JSON pointer or `text` is not JSON.
pub(super) fn find(text: &str, pointer: &str) -> Option<(NodeSpan, bool)> {
    let mut scan = Scan {
        text,
        bytes: text.as_bytes(),
        at: if text.starts_with('\u{feff}') { 3 } else { 0 },
        index: SpanIndex::default(),
    };
    let tokens = match pointer {
        "" => None,
        _ => Some(pointer.strip_prefix('/')?.split('/')),
    };
    scan.blanks();
    let (mut start, mut key) = (scan.at, None);
    let mut exact = true;
    for token in tokens.into_iter().flatten() {
        match scan.child(token) {
            Some(child_key) => {
                scan.blanks();
                (start, key) = (scan.at, child_key);
            }
            None => {
                exact = false;
                break;
            }
        }
    }
    scan.at = start;
    let value = scan.skip()?;
    Some((NodeSpan { key, value }, exact))
}

struct Scan<'t> {
    text: &'t str,
    bytes: &'t [u8],
    at: usize,
    index: SpanIndex,
}

impl Scan<'_> {
    fn blanks(&mut self) {
        while matches!(self.bytes.get(self.at), Some(b' ' | b'\t' | b'\r' | b'\n')) {
            self.at += 1;
        }
    }

    fn eat(&mut self, byte: u8) -> bool {
        self.blanks();
        let found = self.bytes.get(self.at) == Some(&byte);
        if found {
            self.at += 1;
        }
        found
    }

    /// One value at `slot`; `key` is its key's span when it is a mapping member.
    fn value(&mut self, slot: Slot<'_>, key: Option<Range<usize>>) -> Option<()> {
        self.blanks();
        let start = self.at;
        match *self.bytes.get(start)? {
            open @ (b'{' | b'[') => {
                let map = open == b'{';
                let kind = if map {
                    Kind::Map(Vec::new())
                } else {
                    Kind::Seq(Vec::new())
                };
                let span = NodeSpan {
                    key,
                    value: start..start + 1,
                };
                let id = self.index.add(slot, span, kind)?;
                self.at += 1;
                let close = if map { b'}' } else { b']' };
                if !self.eat(close) {
                    loop {
                        if map {
                            self.blanks();
                            let key = self.string()?;
                            let text = unquote(&self.text[key.clone()])?;
                            if !self.eat(b':') {
                                return None;
                            }
                            self.value(Slot::Member(id, &text), Some(key))?;
                        } else {
                            self.value(Slot::Item(id), None)?;
                        }
                        if self.eat(close) {
                            break;
                        }
                        if !self.eat(b',') {
                            return None;
                        }
                    }
                }
                self.index.set_end(id, self.collection_end());
            }
            _ => {
                let value = self.leaf()?;
                self.index.add(slot, NodeSpan { key, value }, Kind::Leaf)?;
            }
        }
        Some(())
    }

    /// The span of the string, number or literal starting here.
    fn leaf(&mut self) -> Option<Range<usize>> {
        let start = self.at;
        if self.bytes.get(start) == Some(&b'"') {
            return self.string();
        }
        let len = self.bytes[start..]
            .iter()
            .position(|b| matches!(b, b' ' | b'\t' | b'\r' | b'\n' | b',' | b']' | b'}'))
            .unwrap_or(self.bytes.len() - start);
        if len == 0 {
            return None;
        }
        self.at = start + len;
        Some(start..self.at)
    }

    /// Where a collection's span ends: its closing bracket (just passed) and the spaces
    /// and tabs after it on the same line, as the loader reports it.
    fn collection_end(&self) -> usize {
        let mut end = self.at;
        while matches!(self.bytes.get(end), Some(b' ' | b'\t')) {
            end += 1;
        }
        end
    }

    /// Pass over the value starting here (after blanks) without recording it; its span.
    fn skip(&mut self) -> Option<Range<usize>> {
        self.blanks();
        let start = self.at;
        if !matches!(self.bytes.get(start), Some(b'{' | b'[')) {
            return self.leaf();
        }
        let mut depth = 0usize;
        loop {
            match *self.bytes.get(self.at)? {
                b'"' => {
                    self.string()?;
                    continue;
                }
                b'{' | b'[' => depth += 1,
                b'}' | b']' => {
                    depth -= 1;
                    if depth == 0 {
                        self.at += 1;
                        return Some(start..self.collection_end());
                    }
                }
                _ => {}
            }
            self.at += 1;
        }
    }

    /// Move to the child named by one (escaped) pointer token of the collection starting
    /// here; its key span (for a member) when there is one.
    fn child(&mut self, token: &str) -> Option<Option<Range<usize>>> {
        self.blanks();
        match *self.bytes.get(self.at)? {
            b'{' => {
                let name = unescape(token)?;
                self.at += 1;
                if self.eat(b'}') {
                    return None;
                }
                loop {
                    self.blanks();
                    let key = self.string()?;
                    if !self.eat(b':') {
                        return None;
                    }
                    if unquote(&self.text[key.clone()])? == name {
                        return Some(Some(key));
                    }
                    self.skip()?;
                    if !self.eat(b',') {
                        return None;
                    }
                }
            }
            b'[' => {
                let index = array_index(token)?;
                self.at += 1;
                if self.eat(b']') {
                    return None;
                }
                for _ in 0..index {
                    self.skip()?;
                    if !self.eat(b',') {
                        return None;
                    }
                }
                Some(None)
            }
            _ => None,
        }
    }

    /// The span of the string starting here, quotes included.
    fn string(&mut self) -> Option<Range<usize>> {
        let start = self.at;
        if self.bytes.get(start) != Some(&b'"') {
            return None;
        }
        let mut i = start + 1;
        loop {
            match *self.bytes.get(i)? {
                b'"' => break,
                b'\\' => i += 2,
                _ => i += 1,
            }
        }
        self.at = i + 1;
        Some(start..self.at)
    }
}

/// A quoted JSON string's text, escapes undone.
fn unquote(quoted: &str) -> Option<Cow<'_, str>> {
    let inner = quoted.strip_prefix('"')?.strip_suffix('"')?;
    if inner.contains('\\') {
        serde_json::from_str::<String>(quoted).ok().map(Cow::Owned)
    } else {
        Some(Cow::Borrowed(inner))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::{json_fast, load_str, Limits};

    /// The index this module builds is the YAML loader's, node for node.
    fn same_as_loader(text: &str) {
        let limits = Limits::default();
        assert!(
            json_fast::parse(text, &limits).is_some(),
            "not JSON: {text}"
        );
        let ours = index(text).expect("indexed");
        let loaded = load_str(text, &limits).expect("loaded");
        let loader = &loaded.spans;
        assert_eq!(format!("{ours:?}"), format!("{loader:?}"), "{text}");
        // The lazy index answers every lookup as the loader's does, for the pointers of
        // every node and for pointers that run past one.
        // A fresh lazy index scans for each lookup; a used one has indexed every node.
        let used = SpanIndex::of_json(text);
        let mut pointers = Vec::new();
        pointers_of(loaded.value(), String::new(), &mut pointers);
        // Each lookup reads the text: check an even spread of at most 40 nodes.
        let step = pointers.len().div_ceil(40).max(1);
        for node in pointers.into_iter().step_by(step) {
            for pointer in [
                node.clone(),
                format!("{node}/0"),
                format!("{node}/1"),
                format!("{node}/missing"),
                format!("{node}/a~2"),
            ] {
                for lazy in [&SpanIndex::of_json(text), &used] {
                    let at = format!("{pointer} in {text}");
                    assert_eq!(lazy.get(&pointer), loader.get(&pointer), "{at}");
                    assert_eq!(lazy.locate(&pointer), loader.locate(&pointer), "{at}");
                    let key_or_value = lazy.key_or_value(&pointer);
                    assert_eq!(key_or_value, loader.key_or_value(&pointer), "{at}");
                }
            }
        }
        assert_eq!(used.len(), loader.len());
        assert_eq!(used.locate("no-slash"), loader.locate("no-slash"));
        let fresh = SpanIndex::of_json(text);
        assert_eq!(fresh.locate("no-slash"), loader.locate("no-slash"));
    }

    fn pointers_of(value: &serde_json::Value, at: String, out: &mut Vec<String>) {
        match value {
            serde_json::Value::Object(map) => {
                for (k, v) in map {
                    let token = k.replace('~', "~0").replace('/', "~1");
                    pointers_of(v, format!("{at}/{token}"), out);
                }
            }
            serde_json::Value::Array(items) => {
                for (i, v) in items.iter().enumerate() {
                    pointers_of(v, format!("{at}/{i}"), out);
                }
            }
            _ => {}
        }
        out.push(at);
    }

    #[test]
    fn spans_match_the_loader() {
        for text in [
            r#"{}"#,
            r#"{"a": 1}"#,
            "\u{feff} {\"a\" : [ 1 , -2.5e3, true, false, null, \"x\" ], \"b\": {}}\n",
            "{\"a\": [[1]\t ,2], \"b\": {\"c\": {} } }  \r\n",
            r#"{"k\"ey": "v\\al\u00e9", "a/b~c": {"d": [[], [{}], "é"]}}"#,
            "{\n  \"prompts\": {\n    \"p\": {\"system_template\": \"line\\nnext\"}\n  }\n}\n",
        ] {
            same_as_loader(text);
        }
    }

    #[test]
    fn spans_match_the_loader_for_every_json_pack_at_hand() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let mut seen = 0;
        for dir in [
            "examples",
            "tests",
            "../shared/conformance",
            "../shared/corpus",
        ] {
            let mut stack = vec![root.join(dir)];
            while let Some(dir) = stack.pop() {
                let Ok(entries) = std::fs::read_dir(&dir) else {
                    continue;
                };
                for entry in entries.flatten() {
                    let path = entry.path();
                    if path.is_dir() {
                        stack.push(path);
                    } else if path.extension().is_some_and(|e| e == "json") {
                        let Ok(text) = std::fs::read_to_string(&path) else {
                            continue;
                        };
                        let limits = Limits::default();
                        if json_fast::parse(&text, &limits).is_some()
                            && load_str(&text, &limits).is_ok()
                        {
                            same_as_loader(&text);
                            seen += 1;
                        }
                    }
                }
            }
        }
        assert!(seen > 0, "no JSON files found under {}", root.display());
    }

    #[test]
    fn refuses_what_is_not_one_document() {
        assert!(index(r#"{"a": 1} {}"#).is_none());
        assert!(index(r#"{"a": 1"#).is_none());
        assert!(index(r#"{"a" 1}"#).is_none());
        assert!(index(r#"{"a": }"#).is_none());
        assert!(index(r#"{"a": "unterminated}"#).is_none());
    }

    /// A JSON text of `value` with `blanks` sprinkled between tokens.
    fn write(
        value: &serde_json::Value,
        blanks: &mut impl Iterator<Item = &'static str>,
        out: &mut String,
    ) {
        fn pad(blanks: &mut impl Iterator<Item = &'static str>, out: &mut String) {
            out.push_str(blanks.next().unwrap_or(""));
        }
        match value {
            serde_json::Value::Object(map) => {
                out.push('{');
                for (i, (k, v)) in map.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    pad(blanks, out);
                    out.push_str(&serde_json::to_string(k).unwrap());
                    pad(blanks, out);
                    out.push(':');
                    pad(blanks, out);
                    write(v, blanks, out);
                    pad(blanks, out);
                }
                out.push('}');
            }
            serde_json::Value::Array(items) => {
                out.push('[');
                for (i, v) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    pad(blanks, out);
                    write(v, blanks, out);
                    pad(blanks, out);
                }
                out.push(']');
            }
            other => out.push_str(&other.to_string()),
        }
    }

    fn json() -> impl proptest::strategy::Strategy<Value = serde_json::Value> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            Just(serde_json::Value::Null),
            any::<bool>().prop_map(serde_json::Value::from),
            any::<i32>().prop_map(serde_json::Value::from),
            "[a-z\\\"é/~ \n]{0,6}".prop_map(serde_json::Value::from),
        ];
        leaf.prop_recursive(4, 40, 5, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..5).prop_map(serde_json::Value::from),
                proptest::collection::btree_map("[a-z\\\"é/~ ]{0,5}", inner, 0..5)
                    .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest::proptest! {
        #[test]
        fn spans_match_the_loader_for_any_document(
            members in proptest::collection::btree_map("[a-z]{1,4}", json(), 0..5),
            blanks in proptest::collection::vec(proptest::sample::select(vec!["", " ", "  ", "\t", "\n", " \r\n  ", "\n\t"]), 0..200),
        ) {
            let value = serde_json::Value::Object(members.into_iter().collect());
            let mut text = String::new();
            let mut blanks = blanks.into_iter().cycle();
            write(&value, &mut blanks, &mut text);
            // Some JSON texts are not YAML (a tab starting a line, where YAML sees
            // indentation): the loader refuses those, and this index still locates them.
            proptest::prop_assume!(load_str(&text, &Limits::default()).is_ok());
            same_as_loader(&text);
        }
    }
}
