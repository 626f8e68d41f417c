//! The rules FORMAT.md states for refusing a file, pinned on both readers: hand-made files
//! (with valid checksums unless the checksum is the point) go to `Artifact::decode` and to
//! `ppk_dump.py`, and both must accept the same ones and name the same error (§1 "Reading,
//! in order") for the others.
//!
//! - §2.1 `json-array?`: `Validation.allowed` and `Compare::In.list` hold an array or are
//!   malformed;
//! - §2.1 values and documents: `json` fields refuse `1e400` and lone surrogates and read
//!   big integers and `-0` as binary64; `json-text` fields check syntax and depth only;
//! - §1 the reading order: a cut file is `truncated` (before the checksum), a damaged one
//!   `corrupted`, and the checksummed defects in file order;
//! - §1 the names of the container errors (compiler version, trailing bytes, missing
//!   `MODL`, a file shorter than the magic, ...).

use ir_spec::container::{crc32, Container, Tag};
use ir_spec::*;
use serde_json::{json, Value};

use super::{check_agrees, dump, every_variant, python_available};

/// What a reader makes of a file: accepted, or refused with the error named.
type Verdict = Result<(), String>;

fn rust_verdict(bytes: &[u8]) -> Verdict {
    super::decode(bytes)
        .map(drop)
        .map_err(|e| e.name().to_owned())
}

/// `ppk_dump.py`'s verdict: exit 0, or exit 1 with `FILE: NAME: why` on stderr.
fn python_verdict(what: &str, bytes: &[u8]) -> Verdict {
    let out = dump(what, bytes, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    match out.status.code() {
        Some(0) => Ok(()),
        Some(1) => {
            let (_file, rest) = stderr
                .split_once(".ppk: ")
                .unwrap_or_else(|| panic!("{what}: no file name in {stderr:?}"));
            let (name, _why) = rest
                .split_once(": ")
                .unwrap_or_else(|| panic!("{what}: no error name in {stderr:?}"));
            Err(name.to_owned())
        }
        other => panic!("{what}: ppk_dump.py exited {other:?}: {stderr}"),
    }
}

/// Both readers give `expected` for `bytes`.
/// [`agree`] on the sample with `text` written into `field` at its marker.
fn agree_field(
    marked: &Marked,
    (field, marker): (&str, &str),
    text: &str,
    expected: Result<(), &str>,
    python: bool,
) {
    let what = format!("{field} = {text}");
    agree(&what, &marked.with(marker, text), expected, python);
}

fn agree(what: &str, bytes: &[u8], expected: Result<(), &str>, python: bool) {
    let expected = expected.map_err(str::to_owned);
    assert_eq!(rust_verdict(bytes), expected, "{what}: Artifact::decode");
    if python {
        assert_eq!(python_verdict(what, bytes), expected, "{what}: ppk_dump.py");
    }
}

/// Recompute the CRC-32 trailer.
fn fix_crc(mut bytes: Vec<u8>) -> Vec<u8> {
    let n = bytes.len();
    let crc = crc32(&bytes[..n - 4]);
    bytes[n - 4..].copy_from_slice(&crc.to_le_bytes());
    bytes
}

/// The JSON fields of the every-variant module, each holding a marker string whose JSON
/// text occurs once in the payload, so that a test can put any text in its place.
struct Marked {
    artifact: Artifact,
    modl: Vec<u8>,
    /// The `spec` section's payload, written after `MODL` as `Artifact::encode` does.
    spec: Vec<u8>,
}

const VALUE_FIELDS: [(&str, &str); 5] = [
    ("Bind::Const", "@const@"),
    ("Compare::Equals.value", "@equals@"),
    ("Variable.default", "@default@"),
    ("Validation.allowed", "@allowed@"),
    ("Compare::In.list", "@list@"),
];

const TEXT_FIELDS: [(&str, &str); 3] = [
    ("Tool.parameters", "@tool@"),
    ("Prompt.parameters", "@prompt@"),
    ("OutputSchema.schema", "@schema@"),
];

impl Marked {
    fn new() -> Marked {
        let mut a = every_variant();
        let m = &mut a.module;
        let text = |marker: &str| JsonText::from_value(&json!(marker));
        m.tools[0].parameters = text("@tool@");
        m.prompts[0].parameters = text("@prompt@");
        let var = &mut m.prompts[0].variables[0];
        var.default = Some(json!("@default@"));
        var.validation.allowed = Some(vec![json!("@allowed@")]);
        let steps = &mut m.compositions[0].steps;
        match &mut steps[0].kind {
            StepKind::Prompt {
                input,
                output_schema,
                ..
            } => {
                *input = Bind::Const(json!("@const@"));
                output_schema.as_mut().unwrap().schema = Some(text("@schema@"));
            }
            other => panic!("step 0 is {other:?}"),
        }
        let compare = |test| Pred::Compare {
            path: Ref {
                root: Root::Input,
                path: ir_spec::Path::default(),
            },
            test,
        };
        match &mut steps[4].kind {
            StepKind::Branch { predicate, .. } => {
                *predicate = Pred::All(vec![
                    compare(Compare::Equals {
                        value: json!("@equals@"),
                        negate: false,
                    }),
                    compare(Compare::In {
                        list: Some(vec![json!("@list@")]),
                        negate: false,
                    }),
                ]);
            }
            other => panic!("step 4 is {other:?}"),
        }
        let modl = postcard::to_allocvec(&a.module).unwrap();
        let spec = postcard::to_allocvec(&a.module.spec).unwrap();
        Marked {
            artifact: a,
            modl,
            spec,
        }
    }

    /// The artifact with the JSON text of the field marked `marker` replaced by `text`.
    fn with(&self, marker: &str, text: &str) -> Vec<u8> {
        let old_text = if matches!(marker, "@allowed@" | "@list@") {
            format!("[\"{marker}\"]")
        } else {
            format!("\"{marker}\"")
        };
        // A `str`: its length as a varint (one byte for the marker's), then the text.
        let mut old = vec![old_text.len() as u8];
        old.extend_from_slice(old_text.as_bytes());
        let at: Vec<usize> = (0..self.modl.len())
            .filter(|&i| self.modl[i..].starts_with(&old))
            .collect();
        assert_eq!(at.len(), 1, "{marker} occurs once in the payload");
        let mut modl = self.modl[..at[0]].to_vec();
        modl.extend(postcard::to_allocvec(&text).unwrap());
        modl.extend_from_slice(&self.modl[at[0] + old.len()..]);
        Container::encode(
            self.artifact.source_hash,
            &self.artifact.compiler,
            &[
                (Tag(*b"MODL"), &modl),
                (ir_spec::artifact::SPEC, &self.spec),
            ],
        )
    }
}

/// §2.1: `allowed` and `list` are `json-array?`: an array, or malformed.
#[test]
fn allowed_and_in_lists_must_be_arrays() {
    let python = python_available();
    let marked = Marked::new();
    for (field, marker) in [VALUE_FIELDS[3], VALUE_FIELDS[4]] {
        for (text, expected) in [
            ("[]", Ok(())),
            (r#"[1,"a",{"k":[null]}]"#, Ok(())),
            ("5", Err("malformed_module")),
            (r#"{"x":1}"#, Err("malformed_module")),
            (r#""[1]""#, Err("malformed_module")),
            ("null", Err("malformed_module")),
        ] {
            agree_field(&marked, (field, marker), text, expected, python);
        }
    }
}

/// §2.1: JSON values refuse what the IR's JSON model cannot hold; JSON documents keep any
/// RFC 8259 text.
#[test]
fn json_values_are_strict_and_json_documents_are_kept_as_text() {
    let python = python_available();
    let marked = Marked::new();
    let cases = [
        ("1e400", "malformed_module"),
        ("-1e400", "malformed_module"),
        (r#""\ud800""#, "malformed_module"),
        (r#""a\udc00""#, "malformed_module"),
        (r#""\ud800\u0041""#, "malformed_module"),
        (r#"{"\ud800":1}"#, "malformed_module"),
    ];
    for (field, marker) in VALUE_FIELDS {
        let array = matches!(marker, "@allowed@" | "@list@");
        for (text, name) in cases {
            let text = if array {
                format!("[{text}]")
            } else {
                text.to_owned()
            };
            agree_field(&marked, (field, marker), &text, Err(name), python);
        }
    }
    for (field, marker) in TEXT_FIELDS {
        for (text, expected) in [
            ("1e400", Ok(())),
            (r#"{"a":"\ud800","\udc00":-1e400}"#, Ok(())),
            ("18446744073709551616", Ok(())),
            ("{", Err("malformed_module")),
            ("NaN", Err("malformed_module")),
            ("01", Err("malformed_module")),
            ("1 2", Err("malformed_module")),
        ] {
            agree_field(&marked, (field, marker), text, expected, python);
        }
    }
    // Both kinds nest at most 127 levels.
    let nested = |levels: usize| format!("{}{}", "[".repeat(levels), "]".repeat(levels));
    for (field, marker) in [VALUE_FIELDS[0], VALUE_FIELDS[3], TEXT_FIELDS[0]] {
        agree(field, &marked.with(marker, &nested(127)), Ok(()), python);
        agree(
            field,
            &marked.with(marker, &nested(128)),
            Err("malformed_module"),
            python,
        );
    }
    // Whitespace RFC 8259 allows is accepted in both kinds; a valid surrogate pair too.
    agree(
        "Bind::Const with spaces",
        &marked.with("@const@", " [ 1 , \"\\ud83d\\ude00\" ] "),
        Ok(()),
        python,
    );
    let spaced = marked.with("@tool@", "\t{ }\n");
    agree("Tool.parameters with spaces", &spaced, Ok(()), python);
    if python {
        // A document is kept as written, less the whitespace around it: `{ }`.
        check_agrees("Tool.parameters with spaces", &spaced);
    }
}

/// §2.1: how a JSON value's numbers are read: integers that fit i64 / u64 stay integers,
/// others (and `-0`) are the nearest binary64. Compared on the values both readers give.
#[test]
fn json_value_numbers_read_as_the_format_says() {
    let python = python_available();
    let marked = Marked::new();
    for (text, expected) in [
        ("18446744073709551615", json!(u64::MAX)),
        ("18446744073709551616", json!(18446744073709551616.0_f64)),
        ("-9223372036854775808", json!(i64::MIN)),
        ("-9223372036854775809", json!(-9223372036854775809.0_f64)),
        ("-0", json!(-0.0_f64)),
        ("1e2", json!(100.0_f64)),
        ("1.7976931348623157e308", json!(f64::MAX)),
        ("1e-400", json!(0.0_f64)),
    ] {
        let bytes = marked.with("@const@", text);
        let a = super::decode(&bytes).unwrap_or_else(|e| panic!("{text}: {e}"));
        let rust = match &a.module.compositions[0].steps[0].kind {
            StepKind::Prompt {
                input: Bind::Const(v),
                ..
            } => v.clone(),
            other => panic!("{other:?}"),
        };
        assert_eq!(rust, expected, "{text}: Artifact::decode");
        assert_eq!(rust.is_f64(), expected.is_f64(), "{text}: Artifact::decode");
        if text == "-0" {
            assert!(
                rust.as_f64().unwrap().is_sign_negative(),
                "-0 keeps its sign"
            );
        }
        if !python {
            continue;
        }
        let out = dump(text, &bytes, &["--full"]);
        assert!(
            out.status.success(),
            "{text}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let full: Value = serde_json::from_slice(&out.stdout).unwrap();
        let py = &full["compositions"][0]["steps"][0]["kind"]["Prompt"]["input"]["Const"];
        assert_eq!(py, &expected, "{text}: ppk_dump.py");
        assert_eq!(py.is_f64(), expected.is_f64(), "{text}: ppk_dump.py");
    }
}

/// §1: the reading order — declared lengths before the checksum, then the
/// checksummed defects in file order.
#[test]
fn the_reading_order_is_the_documented_one() {
    let python = python_available();
    let marked = Marked::new();
    let bytes = marked.artifact.encode();
    let len = bytes.len();
    let mut v2 = bytes.clone();
    v2[8] = 2;
    let mut flipped = bytes.clone();
    flipped[len / 2] ^= 0x10;
    // The last section's length, just after its tag, said one byte longer (the checksum
    // made valid).
    let mut longer = bytes.clone();
    let last = Container::decode(&bytes, usize::MAX)
        .unwrap()
        .sections
        .last()
        .unwrap()
        .0;
    let at = bytes.windows(4).rposition(|w| w == last.0).unwrap() + 4;
    let last_len = u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap());
    longer[at..at + 4].copy_from_slice(&(last_len + 1).to_le_bytes());
    let cases: Vec<(&str, Vec<u8>, Result<(), &str>)> = vec![
        ("empty", vec![], Err("truncated")),
        ("5 bytes of magic", bytes[..5].to_vec(), Err("truncated")),
        ("magic only", bytes[..8].to_vec(), Err("truncated")),
        ("10 bytes", bytes[..10].to_vec(), Err("truncated")),
        ("12 bytes", bytes[..12].to_vec(), Err("truncated")),
        ("52 bytes", bytes[..52].to_vec(), Err("truncated")),
        (
            "52 bytes, checksummed",
            fix_crc(bytes[..52].to_vec()),
            Err("truncated"),
        ),
        ("cut by 1", bytes[..len - 1].to_vec(), Err("truncated")),
        ("cut by 9", bytes[..len - 9].to_vec(), Err("truncated")),
        (
            "cut by 9, checksummed",
            fix_crc(bytes[..len - 9].to_vec()),
            Err("truncated"),
        ),
        (
            "last section one byte longer",
            fix_crc(longer),
            Err("truncated"),
        ),
        ("major 2", v2.clone(), Err("unsupported_version")),
        (
            "major 2, 12 bytes",
            v2[..12].to_vec(),
            Err("unsupported_version"),
        ),
        ("a flipped bit", flipped, Err("corrupted")),
        ("zip", b"PK\x03\x04 a zip file".to_vec(), Err("not_ppk")),
        ("shorter than the magic", b"PK".to_vec(), Err("not_ppk")),
        ("whole", bytes.clone(), Ok(())),
    ];
    for (what, bytes, expected) in cases {
        agree(what, &bytes, expected, python);
    }
}

/// §1: each container error has its name, and with two defects the first in file
/// order is the one named.
#[test]
fn every_container_error_has_its_name() {
    let python = python_available();
    let a = Marked::new().artifact;
    let modl = postcard::to_allocvec(&a.module).unwrap();
    let encode = |compiler: &str, sections: &[(&[u8; 4], &[u8])]| {
        let sections: Vec<(Tag, &[u8])> = sections.iter().map(|(t, p)| (Tag(**t), *p)).collect();
        Container::encode(a.source_hash, compiler, &sections)
    };
    let with_trailing = |bytes: Vec<u8>| {
        let mut b = bytes;
        let n = b.len();
        b.splice(n - 4..n - 4, [0, 0, 0]);
        fix_crc(b)
    };
    let bad_utf8 = |bytes: Vec<u8>| {
        let mut b = bytes;
        b[45] = 0xff;
        fix_crc(b)
    };
    let ok = encode("packc x", &[(b"MODL", &modl)]);
    let mut garbage = modl.clone();
    garbage.truncate(modl.len() / 2);
    let mut invalid = a.clone();
    invalid.module.events = vec![StrId(9999)];
    let cases: Vec<(&str, Vec<u8>, Result<(), &str>)> = vec![
        (
            "compiler version not UTF-8",
            bad_utf8(ok.clone()),
            Err("bad_compiler_version"),
        ),
        (
            "bytes after the last section",
            with_trailing(ok.clone()),
            Err("trailing_bytes"),
        ),
        (
            "no MODL",
            encode("x", &[(b"note", b"hi")]),
            Err("missing_section"),
        ),
        ("no sections", encode("x", &[]), Err("missing_section")),
        (
            "tag M0DL",
            encode("x", &[(b"M0DL", &modl)]),
            Err("bad_section_tag"),
        ),
        (
            "MODL twice",
            encode("x", &[(b"MODL", &modl), (b"MODL", &modl)]),
            Err("duplicate_section"),
        ),
        (
            "CODE",
            encode("x", &[(b"MODL", &modl), (b"CODE", b"")]),
            Err("unknown_required_section"),
        ),
        (
            "note",
            encode("x", &[(b"MODL", &modl), (b"note", b"hi")]),
            Ok(()),
        ),
        (
            "MODL cut",
            encode("x", &[(b"MODL", &garbage)]),
            Err("malformed_module"),
        ),
        (
            "index out of range",
            invalid.encode(),
            Err("invalid_module"),
        ),
        // Two defects: the first of §1's list is named.
        (
            "bad compiler version and tag",
            bad_utf8(encode("x", &[(b"M0DL", b"")])),
            Err("bad_compiler_version"),
        ),
        (
            "bad tag, then a duplicate",
            encode("x", &[(b"M0DL", b""), (b"note", b""), (b"note", b"")]),
            Err("bad_section_tag"),
        ),
        (
            "duplicate and trailing",
            with_trailing(encode("x", &[(b"note", b""), (b"note", b"")])),
            Err("duplicate_section"),
        ),
        (
            "trailing and unknown",
            with_trailing(encode("x", &[(b"CODE", b"")])),
            Err("trailing_bytes"),
        ),
        (
            "unknown and no MODL",
            encode("x", &[(b"CODE", b"")]),
            Err("unknown_required_section"),
        ),
        (
            "no MODL and a bad module",
            encode("x", &[(b"note", b"\xff")]),
            Err("missing_section"),
        ),
    ];
    for (what, bytes, expected) in cases {
        agree(what, &bytes, expected, python);
    }
}
