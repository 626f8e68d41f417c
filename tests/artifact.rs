//! `.ppk` artifacts of the example packs: encode → decode → encode is the identity,
//! builds are reproducible, and damaged files are refused with an error, never a panic.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use ir_spec::container::{crc32, DEFAULT_MAX_ARTIFACT_BYTES};
use ir_spec::{Artifact, ArtifactError};
use packc_compiler::{
    artifact, build_artifact, build_file_bytes, check_file_bytes, check_file_bytes_and, Options,
};
use packc_vm::driver::{drive, Host, ScriptItem};
use packc_vm::{Answer, CallView, Program, Run, RunOptions};
use proptest::prelude::*;

fn example_paths() -> Vec<PathBuf> {
    let files = packc_suite::example_packs();
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples");
    assert!(!files.is_empty(), "no examples in {}", dir.display());
    files
}

/// Build one example as `packc build` does: schemas are read beside the pack.
fn build(path: &Path) -> Artifact {
    let source = std::fs::read(path).unwrap();
    let options = Options {
        base_dir: path.parent().map(Path::to_path_buf),
        ..Options::default()
    };
    let (checked, artifact) = build_artifact(&source, &options).unwrap();
    artifact.unwrap_or_else(|| panic!("{}: {:#?}", path.display(), checked.diagnostics))
}

fn build_example(name: &str) -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("examples")
        .join(name);
    build(&path).encode()
}

fn decode(bytes: &[u8]) -> Result<Artifact, ArtifactError> {
    Artifact::decode(bytes, DEFAULT_MAX_ARTIFACT_BYTES)
}

/// What `packc check` and `packc build` run, with the pack parsed once, agree with
/// checking it (`check_file_bytes`) and then reading it again: `build_file_bytes` gives
/// the same diagnostics and the artifact of `artifact`, and `check_file_bytes_and` reads
/// what reading the loaded pack again reads, for every example as YAML and as JSON. A
/// `*.json` file that is not strict JSON gets a located `parse_error`, no artifact and no
/// reading.
#[test]
fn checking_and_building_a_file_read_it_once_and_agree() {
    let dir = tempfile::tempdir().unwrap();
    let files = example_files(dir.path());
    let keys = |doc: &packc_compiler::doc::Node<'_>| -> Vec<String> {
        let prompts = doc.get("prompts").and_then(|p| p.as_object());
        prompts
            .into_iter()
            .flatten()
            .map(|(k, _)| k.as_str().to_owned())
            .collect()
    };
    for (path, source) in &files {
        let options = options_for(path);
        let expected = check_file_bytes(path, source, &options);
        let (checked, built) = build_file_bytes(path, source, &options).unwrap();
        assert_eq!(
            checked.diagnostics,
            expected.diagnostics,
            "{}",
            path.display()
        );
        let artifact =
            (!expected.has_errors()).then(|| artifact(&expected, source, &options).unwrap());
        assert_eq!(built, artifact, "{}", path.display());
        let (checked, read) = check_file_bytes_and(path, source, &options, |doc, _| keys(doc));
        assert_eq!(
            checked.diagnostics,
            expected.diagnostics,
            "{}",
            path.display()
        );
        let again = expected
            .loaded
            .as_ref()
            .map(|l| keys(&l.doc(&packc_compiler::doc::Arena::new())));
        assert_eq!(read, again, "{}", path.display());
    }
    let (loose, text) = files.last().unwrap();
    let (checked, built) = build_file_bytes(loose, text, &Options::default()).unwrap();
    assert!(built.is_none());
    let kinds: Vec<&str> = checked
        .diagnostics
        .iter()
        .map(|d| d.kind.as_str())
        .collect();
    assert_eq!(kinds, ["parse_error"]);
    let (_, read) = check_file_bytes_and(loose, text, &Options::default(), |doc, _| keys(doc));
    assert_eq!(read, None);
}

/// Every example as its YAML file and as a JSON file written beside the others in `dir`,
/// then a `*.json` file that is not strict JSON (a trailing comma), last.
fn example_files(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut files: Vec<(PathBuf, Vec<u8>)> = Vec::new();
    for path in example_paths() {
        let source = std::fs::read(&path).unwrap();
        let value = serde_yaml_ng_or_json(&source);
        let json = dir.join(path.file_name().unwrap()).with_extension("json");
        let text = serde_json::to_vec_pretty(&value).unwrap();
        std::fs::write(&json, &text).unwrap();
        files.push((path, source));
        files.push((json, text));
    }
    let loose = dir.join("loose.json");
    let text = br#"{"id": "p", "name": "P", "version": "1.0.0", "prompts": {},}"#.to_vec();
    std::fs::write(&loose, &text).unwrap();
    files.push((loose, text));
    assert!(files.len() >= 9, "{} files", files.len());
    files
}

/// The options `packc` uses for the pack file at `path`: its folder is where the files
/// it names are read from.
fn options_for(path: &Path) -> Options {
    Options {
        base_dir: path.parent().map(Path::to_path_buf),
        ..Options::default()
    }
}

/// A YAML or JSON pack file as a JSON value (the examples are YAML).
fn serde_yaml_ng_or_json(source: &[u8]) -> serde_json::Value {
    packc_compiler::load::load_bytes(source, &packc_compiler::load::Limits::default())
        .unwrap()
        .into_value()
}

#[test]
fn every_example_round_trips() {
    for path in example_paths() {
        let artifact = build(&path);
        let bytes = artifact.encode();
        let back = decode(&bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!(back, artifact, "{}", path.display());
        assert_eq!(back.encode(), bytes, "{}", path.display());
    }
}

/// Every pack of `../shared/corpus` that checks clean: its artifact round-trips, and its
/// source hash is the SHA-256 the corpus manifest lists. Skipped without `../shared`.
#[test]
fn corpus_artifacts_round_trip_and_hash_their_source() {
    if packc_suite::shared_dir().is_none() {
        return;
    }
    let mut built = 0;
    for packc_suite::CorpusPack { file, path, entry } in packc_suite::corpus() {
        let source = std::fs::read(&path).unwrap();
        let options = Options {
            base_dir: path.parent().map(Path::to_path_buf),
            ..Options::default()
        };
        let Ok((_, Some(artifact))) = build_artifact(&source, &options) else {
            continue;
        };
        let bytes = artifact.encode();
        let back = decode(&bytes).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert_eq!(back.encode(), bytes, "{file}");
        if let Some(sha) = entry["sha256"].as_str() {
            let hex: String = artifact
                .source_hash
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect();
            assert_eq!(hex, sha, "{file}");
        }
        built += 1;
    }
    assert!(built > 0, "no corpus pack built");
}

#[test]
fn artifacts_record_their_provenance() {
    for path in example_paths() {
        let artifact = build(&path);
        let source = std::fs::read(&path).unwrap();
        assert_eq!(artifact.source_hash, packc_compiler::source_hash(&source));
        assert_eq!(artifact.compiler, packc_compiler::COMPILER_VERSION);
    }
    // SHA-256 itself (FIPS 180-2, appendix B.1).
    let abc = packc_compiler::source_hash(b"abc");
    let hex: String = abc.iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(
        hex,
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
}

#[test]
fn building_twice_gives_identical_bytes() {
    for path in example_paths() {
        assert_eq!(
            build(&path).encode(),
            build(&path).encode(),
            "{}",
            path.display()
        );
    }
}

#[test]
fn every_flip_and_cut_of_a_small_artifact_is_rejected() {
    let bytes = build_example("guide-add-composition.pack.yaml");
    assert!(decode(&bytes).is_ok());
    for len in 0..bytes.len() {
        assert!(decode(&bytes[..len]).is_err(), "cut at {len}");
    }
    for i in 0..bytes.len() {
        for bit in 0..8 {
            let mut b = bytes.clone();
            b[i] ^= 1 << bit;
            assert!(decode(&b).is_err(), "flip of bit {bit} at {i}");
        }
    }
}

/// `(i, bit)` pairs covering a file of `len` bytes: every 7th byte, each bit, and the
/// header and trailer bytes entirely.
fn sample_positions(len: usize) -> impl Iterator<Item = (usize, u8)> {
    (0..len)
        .filter(move |i| i % 7 == 0 || *i < 64 || *i + 8 >= len)
        .flat_map(|i| (0..8).map(move |bit| (i, bit)))
}

#[test]
fn sampled_flips_and_cuts_of_a_big_artifact_are_rejected() {
    let bytes = build_example("rfc0010-ex3.pack.yaml");
    assert!(bytes.len() > 2000, "{}", bytes.len());
    for len in (0..bytes.len()).step_by(3) {
        assert!(decode(&bytes[..len]).is_err(), "cut at {len}");
    }
    for (i, bit) in sample_positions(bytes.len()) {
        let mut b = bytes.clone();
        b[i] ^= 1 << bit;
        assert!(decode(&b).is_err(), "flip of bit {bit} at {i}");
    }
}

/// Overwrite bytes of the `MODL` payload and repair the checksum: the CRC no longer
/// protects the decoder, which must still answer with a module or an error.
fn mutate_with_valid_crc(bytes: &[u8], edits: &[(usize, u8)]) -> Vec<u8> {
    let mut b = bytes.to_vec();
    let n = b.len();
    // The header before MODL's payload: 45 + compiler + 4 (count) + 8 (tag and length).
    let start = 45 + usize::from(b[44]) + 4 + 8;
    for &(at, byte) in edits {
        let i = start + at % (n - 4 - start);
        b[i] = byte;
    }
    let crc = crc32(&b[..n - 4]);
    b[n - 4..].copy_from_slice(&crc.to_le_bytes());
    b
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn flips_anywhere_are_rejected(at in any::<usize>(), bit in 0u8..8) {
        let bytes = build_example("rfc0010-ex2.pack.yaml");
        let mut b = bytes.clone();
        let i = at % b.len();
        b[i] ^= 1 << bit;
        prop_assert!(decode(&b).is_err());
    }

    #[test]
    fn payload_edits_behind_a_valid_crc_never_panic(
        edits in prop::collection::vec((any::<usize>(), any::<u8>()), 1..6),
    ) {
        let bytes = build_example("rfc0010-ex3.pack.yaml");
        let b = mutate_with_valid_crc(&bytes, &edits);
        // Decoding may succeed (a letter of a name changed). The module is then valid and
        // round-trips, though not necessarily to these bytes: embedded JSON text need not
        // be in the canonical form the encoder writes (`"\/"` reads as `"/"`).
        if let Ok(artifact) = decode(&b) {
            prop_assert!(artifact.module.validate().is_ok());
            // Compared as bytes: a mutated `f64` may be NaN, which is not equal to itself.
            let canonical = artifact.encode();
            let again = decode(&canonical);
            prop_assert!(again.is_ok(), "{:?}", again);
            prop_assert_eq!(again.unwrap().encode(), canonical);
        }
    }

    /// What the door lets in, the VM runs: a module decoded from an edited artifact runs
    /// every target to an outcome, never a panic.
    #[test]
    fn decoded_modules_run_without_panicking(
        example in 0usize..6,
        edits in prop::collection::vec((any::<usize>(), any::<u8>()), 1..4),
    ) {
        let paths = example_paths();
        let bytes = build(&paths[example % paths.len()]).encode();
        if let Ok(artifact) = decode(&mutate_with_valid_crc(&bytes, &edits)) {
            run_every_target(artifact.module);
        }
    }
}

/// Fails every host call, so each run ends at its first one.
struct Failing;

impl Host for Failing {
    fn call(&mut self, _: &CallView<'_>) -> Answer {
        Answer::Error("unavailable".into())
    }
    fn clock(&mut self) -> u64 {
        0
    }
}

fn run_every_target(module: ir_spec::Module) {
    let Ok(program) = Program::new(module) else {
        return; // a module the VM refuses is fine: no panic
    };
    let program = Arc::new(program);
    let module = program.module();
    for target in packc_suite::every_target(module) {
        let Ok(mut run) = Run::new(program.clone(), target, RunOptions::default()) else {
            continue;
        };
        let script = [ScriptItem::Turn(serde_json::json!({"text": "hello"}))];
        let _ = drive(&mut run, &mut Failing, &script);
    }
}
