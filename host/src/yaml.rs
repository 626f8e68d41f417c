//! A small YAML writer for JSON values: block style, keys in their order, strings plain
//! when that is unambiguous and JSON-quoted otherwise (a JSON string is a valid YAML
//! double-quoted scalar), so what it writes reads back as the same value.

use serde_json::Value;

/// `v` as block-style YAML text, ending in a newline.
pub fn to_yaml(v: &Value) -> String {
    let mut out = String::new();
    match v {
        Value::Object(m) if !m.is_empty() => block(v, 0, &mut out),
        Value::Array(a) if !a.is_empty() => block(v, 0, &mut out),
        _ => {
            scalar(v, &mut out);
            out.push('\n');
        }
    }
    out
}

fn block(v: &Value, indent: usize, out: &mut String) {
    let pad = " ".repeat(indent);
    match v {
        Value::Object(m) => {
            for (k, v) in m {
                out.push_str(&pad);
                string(k, out);
                out.push(':');
                child(v, indent + 2, out);
            }
        }
        Value::Array(a) => {
            for v in a {
                out.push_str(&pad);
                out.push('-');
                match v {
                    // A mapping inside a list starts on the dash's line.
                    Value::Object(m) if !m.is_empty() => {
                        let mut inner = String::new();
                        block(v, indent + 2, &mut inner);
                        out.push(' ');
                        out.push_str(&inner[indent + 2..]);
                    }
                    _ => child(v, indent + 2, out),
                }
            }
        }
        _ => unreachable!("block() takes collections"),
    }
}

fn child(v: &Value, indent: usize, out: &mut String) {
    match v {
        Value::Object(m) if !m.is_empty() => {
            out.push('\n');
            block(v, indent, out);
        }
        Value::Array(a) if !a.is_empty() => {
            out.push('\n');
            block(v, indent, out);
        }
        _ => {
            out.push(' ');
            scalar(v, out);
            out.push('\n');
        }
    }
}

fn scalar(v: &Value, out: &mut String) {
    match v {
        Value::String(s) => string(s, out),
        Value::Object(_) => out.push_str("{}"),
        Value::Array(_) => out.push_str("[]"),
        other => out.push_str(&other.to_string()),
    }
}

fn string(s: &str, out: &mut String) {
    if is_plain(s) {
        out.push_str(s);
    } else {
        out.push_str(&Value::String(s.to_owned()).to_string());
    }
}

/// Whether `s` can be written unquoted and still read back as this string.
fn is_plain(s: &str) -> bool {
    let Some(first) = s.chars().next() else {
        return false;
    };
    if !(first.is_ascii_alphabetic() || first == '_' || first == '/' || first == '.') {
        return false;
    }
    if s.ends_with(' ') || s.contains(": ") || s.contains(" #") {
        return false;
    }
    let lower = s.to_ascii_lowercase();
    if matches!(
        lower.as_str(),
        "true" | "false" | "null" | "yes" | "no" | "on" | "off" | "y" | "n" | ".inf" | ".nan"
    ) {
        return false;
    }
    s.chars().all(|c| {
        c.is_ascii_alphanumeric()
            || matches!(c, '_' | '-' | '.' | '/' | ' ' | ',' | '(' | ')' | '\'')
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn round_trips() {
        let v = json!({
            "about": "a live run",
            "run": {"input": {"text": "Hi: there\nsecond line", "n": [1, 2.5, null, true]},
                    "host": {"prompts": {"p": [{"output": {"x": "yes"}, "event": "Go"}, {"error": "x #1"}]}}},
            "expect": {"trace": ["step a", "branch b -> -"], "empty": {}, "none": [], "s": ""},
            "odd key: 1": "-3", "123": "007",
        });
        let text = to_yaml(&v);
        let back = packc_compiler::load::load_str(&text, &Default::default())
            .unwrap()
            .into_value();
        assert_eq!(back, v, "{text}");
        assert!(text.contains("about: a live run\n"), "{text}");
        assert!(text.contains("- output:\n"), "{text}");
    }
}
