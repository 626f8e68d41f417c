//! (a) Source text → `packc check` / `packc build`.
//!
//! Any bytes are a pack source: they are checked, the diagnostics rendered both ways the
//! CLI prints them, and a pack without errors is lowered, wrapped, encoded, loaded back
//! and made a program. A clean pack that does not lower, an artifact that does not load
//! back as itself, or a loaded module that is not a program is a bug.
#![no_main]

use ir_spec::container::DEFAULT_MAX_ARTIFACT_BYTES;
use ir_spec::Artifact;
use libfuzzer_sys::fuzz_target;
use packc_compiler::render::{self, RenderSource};
use packc_compiler::{check_bytes, Options};

fuzz_target!(|data: &[u8]| {
    let options = Options::default();
    let checked = check_bytes(data, &options);

    // What `packc check` prints, human and `--format json`.
    let text = String::from_utf8_lossy(data);
    let src = RenderSource::of_checked("fuzz.pack.yaml", &text, &checked);
    let mut out = Vec::new();
    render::human(&src, &checked.diagnostics, false, &mut out).expect("writing to a Vec");
    for d in &checked.diagnostics {
        let _ = render::json(&src, d);
    }

    if checked.has_errors() {
        assert!(
            packc_compiler::lower(&checked, &options).is_err(),
            "a pack with errors lowered"
        );
        return;
    }
    assert!(
        checked.loaded.is_some(),
        "a pack without errors has no document"
    );
    // What `packc build` does.
    let artifact = packc_compiler::artifact(&checked, data, &options)
        .unwrap_or_else(|e| panic!("a pack that checked clean does not lower: {e:?}"));
    let bytes = artifact.encode();
    let back = Artifact::decode(&bytes, DEFAULT_MAX_ARTIFACT_BYTES)
        .unwrap_or_else(|e| panic!("a built artifact does not load: {e}"));
    assert!(back == artifact, "a built artifact loads as another");
    packc_vm::Program::new(back.module)
        .unwrap_or_else(|e| panic!("a built module is not a program: {e}"));
});
