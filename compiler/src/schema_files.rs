//! Reading the JSON Schema files a step's `output_schema` names (`compositions.md` 2.25).
//!
//! One reader serves the check (which warns `unresolved_schema` when a file cannot be
//! used) and lowering (which embeds what it reads), so the two always agree. Files are
//! read with the pack loader (JSON or YAML) under tighter limits than a pack: an embedded
//! schema is stored as JSON text in the artifact and parsed again when the artifact is
//! loaded, by a parser that stops at 128 levels, so deeper schemas are refused here,
//! where the author can be told.

use serde_json::Value;

use crate::load::{json_fast, load_bytes, Limits};
use crate::paths::{Folders, OpenError};

/// The deepest nesting accepted in a schema file (the artifact reader parses embedded
/// JSON with a limit of 128 levels).
pub const MAX_SCHEMA_DEPTH: usize = 100;

/// The largest schema file accepted (1 MiB).
pub const MAX_SCHEMA_BYTES: usize = 1 << 20;

/// Read and parse the schema file `name`, resolved inside `folders` ([`crate::paths`]);
/// the error says why it cannot be used, and whether the name leads outside.
///
/// Two kinds of file are never taken as a schema, since a schema is embedded in the
/// artifact and sent to the model server: a hidden file or one in a hidden folder (a
/// name starting with `.`: `.env`, `.npmrc`, `.git/config` hold credentials, not
/// schemas), and a file whose content is not an object or a boolean (a JSON Schema is
/// one of those; `KEY=value` lines read as one YAML string). Neither error quotes the
/// file.
pub fn read(folders: &Folders, name: &str) -> Result<Value, OpenError> {
    let hidden = std::path::Path::new(name).components().any(|c| {
        matches!(c, std::path::Component::Normal(part) if part.to_string_lossy().starts_with('.'))
    });
    if hidden {
        return Err(OpenError::Unusable(
            "a hidden file (a name starting with `.`) is not read as a schema".into(),
        ));
    }
    let (file, _) = crate::paths::open(folders, name)?;
    let unusable = OpenError::Unusable;
    let bytes = crate::paths::read_bounded(file, MAX_SCHEMA_BYTES as u64)
        .map_err(|e| unusable(e.to_string()))?;
    let limits = Limits {
        max_source_bytes: MAX_SCHEMA_BYTES,
        max_depth: MAX_SCHEMA_DEPTH,
        max_nodes: 100_000,
        ..Limits::default()
    };
    // Most schema files are JSON: parse them without building spans, which nothing here
    // reads. Anything the fast parser refuses goes to the loader, whose error names it.
    let value = match json_fast::parse_source(&bytes, &limits) {
        Some((_, value)) => value,
        None => load_bytes(&bytes, &limits)
            .map(crate::load::Loaded::into_value)
            .map_err(|d| unusable(d.message))?,
    };
    let held = match &value {
        Value::Object(_) | Value::Bool(_) => return Ok(value),
        Value::Null => "null",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
    };
    Err(unusable(format!(
        "not a JSON Schema: a schema is an object or a boolean, and the file holds {held}"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_name(folders: &Folders, name: &str) -> Result<Value, OpenError> {
        read(folders, name)
    }

    #[test]
    fn reads_json_and_refuses_what_the_artifact_reader_could_not() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let folders = Folders {
            base: dir.to_path_buf(),
            allow: Vec::new(),
        };
        let read =
            |path: &std::path::Path| read(&folders, path.file_name().unwrap().to_str().unwrap());
        let ok = dir.join("ok.json");
        std::fs::write(&ok, r#"{"type": "object"}"#).unwrap();
        assert_eq!(read(&ok).unwrap(), serde_json::json!({"type": "object"}));
        let deep = dir.join("deep.json");
        let text = format!(
            "{}{}",
            r#"{"a":"#.repeat(MAX_SCHEMA_DEPTH + 1),
            "}".repeat(MAX_SCHEMA_DEPTH + 1)
        );
        std::fs::write(&deep, text).unwrap();
        assert!(read(&deep).is_err());
        let at_limit = dir.join("limit.json");
        let text = format!(
            "{}1{}",
            r#"{"a":"#.repeat(MAX_SCHEMA_DEPTH),
            "}".repeat(MAX_SCHEMA_DEPTH)
        );
        std::fs::write(&at_limit, text).unwrap();
        assert!(read(&at_limit).is_ok());
        let broken = dir.join("broken.json");
        std::fs::write(&broken, "{").unwrap();
        assert!(read(&broken).is_err());
        assert_eq!(
            read(&dir.join("missing.json")).unwrap_err(),
            OpenError::Unusable("not found".into())
        );
        // Not a schema: a hidden file, whatever it holds, and content that is neither an
        // object nor a boolean; the errors do not quote the file.
        std::fs::create_dir(dir.join(".git")).unwrap();
        for (name, text) in [
            (".env", r#"{"type": "object"}"#),
            (".git/config", r#"{"type": "object"}"#),
            ("env.yaml", "OPENAI_API_KEY=sk-SECRET"),
            ("list.json", "[1]"),
            ("null.json", "null"),
        ] {
            std::fs::write(dir.join(name), text).unwrap();
            let e = read_name(&folders, name).unwrap_err();
            assert!(!e.to_string().contains("SECRET"), "{e}");
            assert!(
                matches!(&e, OpenError::Unusable(m) if m.contains("hidden file") || m.contains("not a JSON Schema")),
                "{name}: {e}"
            );
        }
        std::fs::write(dir.join("true.json"), "true").unwrap();
        assert_eq!(read_name(&folders, "true.json").unwrap(), Value::Bool(true));
        let big = dir.join("big.json");
        std::fs::write(&big, " ".repeat(MAX_SCHEMA_BYTES + 1)).unwrap();
        assert_eq!(
            read(&big).unwrap_err(),
            OpenError::Unusable(format!("larger than {MAX_SCHEMA_BYTES} bytes"))
        );
    }
}
