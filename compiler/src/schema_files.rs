//! Reading the JSON Schema files a step's `output_schema` names (`compositions.md` 2.25).
//!
//! One reader serves the check (which warns `unresolved_schema` when a file cannot be
//! used) and lowering (which embeds what it reads), so the two always agree. Files are
//! read with the pack loader (JSON or YAML) under tighter limits than a pack: an embedded
//! schema is stored as JSON text in the artifact and parsed again when the artifact is
//! loaded, by a parser that stops at 128 levels, so deeper schemas are refused here,
//! where the author can be told.

use std::path::Path;

use serde_json::Value;

use crate::load::{load_bytes, Limits};

/// The deepest nesting accepted in a schema file (the artifact reader parses embedded
/// JSON with a limit of 128 levels).
pub const MAX_SCHEMA_DEPTH: usize = 100;

/// The largest schema file accepted (1 MiB).
pub const MAX_SCHEMA_BYTES: usize = 1 << 20;

/// Read and parse a schema file; the error says why it cannot be used.
pub fn read(path: &Path) -> Result<Value, String> {
    let meta = std::fs::metadata(path).map_err(|_| "not found".to_string())?;
    if !meta.is_file() {
        return Err("not a file".into());
    }
    if meta.len() > MAX_SCHEMA_BYTES as u64 {
        return Err(format!("larger than {MAX_SCHEMA_BYTES} bytes"));
    }
    let bytes = std::fs::read(path).map_err(|e| e.to_string())?;
    let limits = Limits {
        max_source_bytes: MAX_SCHEMA_BYTES,
        max_depth: MAX_SCHEMA_DEPTH,
        max_nodes: 100_000,
        ..Limits::default()
    };
    load_bytes(&bytes, &limits)
        .map(|loaded| loaded.value)
        .map_err(|d| d.message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_json_and_refuses_what_the_artifact_reader_could_not() {
        let dir = std::env::temp_dir().join(format!("packc-schema-files-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let ok = dir.join("ok.json");
        std::fs::write(&ok, r#"{"type": "object"}"#).unwrap();
        assert_eq!(read(&ok).unwrap(), serde_json::json!({"type": "object"}));
        let deep = dir.join("deep.json");
        let text = format!(
            "{}{}",
            "[".repeat(MAX_SCHEMA_DEPTH + 1),
            "]".repeat(MAX_SCHEMA_DEPTH + 1)
        );
        std::fs::write(&deep, text).unwrap();
        assert!(read(&deep).is_err());
        let at_limit = dir.join("limit.json");
        let text = format!(
            "{}{}",
            "[".repeat(MAX_SCHEMA_DEPTH),
            "]".repeat(MAX_SCHEMA_DEPTH)
        );
        std::fs::write(&at_limit, text).unwrap();
        assert!(read(&at_limit).is_ok());
        let broken = dir.join("broken.json");
        std::fs::write(&broken, "{").unwrap();
        assert!(read(&broken).is_err());
        assert_eq!(read(&dir.join("missing.json")).unwrap_err(), "not found");
    }
}
