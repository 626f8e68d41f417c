//! The packc front end.
//!
//! The pipeline, one stage per module, data flowing one way:
//!
//! 1. [`load`]: source text (YAML 1.2 or JSON) → a JSON value plus a [`load::SpanIndex`]
//!    from JSON pointer to byte span. Malformed input is a `parse_error`; an oversized
//!    one, or one past the other [`load::Limits`] (string length, steps, states,
//!    compositions…), a `limit_exceeded` naming the limit, and nothing else is checked.
//! 2. [`schema`]: the `$schema` claim picks the pack's spec level (1.5, 1.5.1, 1.8 or
//!    1.9; `Options::spec_level` overrides it), and the value is checked against that
//!    level's schema (the official v1.4.0 schema extended with the v1.5 additions, or the
//!    official v1.5.1, v1.8.1, v1.9.0 schemas).
//! 3. [`doc`]: the value as the checks and lowering read it, a document whose strings
//!    borrow from the text and whose objects are member lists.
//! 4. [`check`]: the semantic rules of `shared/semantics/compositions.md` §2 and
//!    `workflow.md` §16, reported as located [`diag::Diagnostic`]s.
//! 5. [`render`]: diagnostics printed like rustc's (ariadne) or as JSON lines.
//! 6. [`lower`](mod@lower): a pack that checked without errors → one flat [`ir_spec::Module`], the
//!    input of the VM (`packc_vm`).
//! 7. [`artifact`] / [`build_artifact`]: the module with its provenance (the source's
//!    SHA-256, the compiler version) as an [`ir_spec::Artifact`], whose
//!    [`encode`](ir_spec::Artifact::encode) is the `.ppk` file.
//!
//! Every stage blames nodes by JSON pointer; only [`render`] turns pointers into
//! `file:line:col`.
#![forbid(unsafe_code)]

pub mod check;
pub mod diag;
pub mod doc;
pub mod load;
pub mod lower;
mod members;
pub mod paths;
pub mod render;
pub mod schema;
pub mod schema_files;
pub mod syntax;
pub mod validators;
pub mod vocab;

pub use check::{suggest, CheckOptions};
pub use diag::{DiagKind, Diagnostic, Label, Severity, Site};
pub use load::{Limits, Loaded, SpanIndex};
pub use lower::{LowerError, LowerOptions};
pub use render::RenderSource;

use std::path::PathBuf;

/// Options for checking one pack source.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Limits on the source: size, nesting depth, alias expansion, string length, and the
    /// counts of compositions, steps, states, prompts, tools and agents.
    pub limits: load::Limits,
    /// The folder of the pack file, for `output_schema` lookups; `None` for a pack that is
    /// not a file, whose schema names are then not looked up at all: no schema is
    /// embedded and no `unresolved_schema` is reported, as for a pack given inline in a
    /// case file (conformance README). Files a pack names are read from this folder and
    /// below only ([`paths`]); a name that leads elsewhere is the error `unsafe_path`.
    pub base_dir: Option<PathBuf>,
    /// Further folders the files a pack names may be read from, allowed deliberately by
    /// the embedder (`packc --allow-path DIR`); absolute names may point into them.
    pub allow_paths: Vec<PathBuf>,
    /// The spec level to read the pack at, overriding its `$schema` claim
    /// (`packc check --spec-level`); `None` reads the claim.
    pub spec_level: Option<ir_spec::SpecLevel>,
}

/// The result of checking one pack: the loaded document (when it parsed) and every
/// diagnostic, sorted by position in the source.
#[derive(Debug)]
pub struct Checked {
    /// The document and its span index, if the source parsed.
    pub loaded: Option<load::Loaded>,
    /// Errors, warnings and notes, in source order.
    pub diagnostics: Vec<Diagnostic>,
}

impl Checked {
    /// Whether any diagnostic is an error.
    pub fn has_errors(&self) -> bool {
        self.diagnostics.iter().any(Diagnostic::is_error)
    }

    /// The spec level the pack was read at: `over` (the `--spec-level` override) when
    /// given, else its `$schema` claim's; level 1.5 when it did not parse.
    pub fn level(&self, over: Option<ir_spec::SpecLevel>) -> ir_spec::SpecLevel {
        match &self.loaded {
            Some(l) => doc::with_arena(|arena| schema::level_of(&l.doc(arena), over)),
            None => over.unwrap_or_default(),
        }
    }
}

/// Load and check a pack from its bytes: parse, schema, semantic checks.
///
/// A JSON source is parsed without spans ([`load::json_fast`]) and gets a lazy span index
/// ([`load::SpanIndex::of_json`]) that finds a node's place only when something asks for
/// it, so a clean JSON pack never pays for spans.
pub fn check_bytes(bytes: &[u8], options: &Options) -> Checked {
    check_and(None, bytes, options, |_, _| ()).0
}

/// [`check_bytes`] for the file at `path` (only its name is read): a file named `*.json`
/// is strict JSON (RFC 8259), so what other runtimes' JSON loaders refuse (a trailing
/// comma, an unquoted key, a `# comment`) is a located `parse_error` here too; any other
/// name is read as YAML 1.2, of which JSON is a subset.
pub fn check_file_bytes(path: &std::path::Path, bytes: &[u8], options: &Options) -> Checked {
    check_and(Some(path), bytes, options, |_, _| ()).0
}

/// [`check_file_bytes`], and `read` run on the document the pack was checked on (with the
/// diagnostics found), so that what a caller reads from a pack beside its diagnostics (its
/// host validators, say) is read without parsing the text again. `read` gives `None` when
/// the pack did not load.
pub fn check_file_bytes_and<R>(
    path: &std::path::Path,
    bytes: &[u8],
    options: &Options,
    read: impl FnOnce(&doc::Node<'_>, &[Diagnostic]) -> R,
) -> (Checked, Option<R>) {
    check_and(Some(path), bytes, options, read)
}

/// [`check_file_bytes`], and the pack lowered into the IR when the check found no error
/// ([`lower`](fn@lower), from the document checked: a JSON pack is parsed once).
pub fn module_file_bytes(
    path: &std::path::Path,
    source: &[u8],
    options: &Options,
) -> Result<(Checked, Option<ir_spec::Module>), lower::LowerError> {
    module_and(Some(path), source, options)
}

/// [`build_artifact`] for the file at `path`, read as [`check_file_bytes`] reads it (a
/// file named `*.json` is strict JSON). A JSON pack is parsed once: checked and lowered
/// from the same document, where checking with [`check_file_bytes`] and then calling
/// [`artifact`] parses its text a second time.
pub fn build_file_bytes(
    path: &std::path::Path,
    source: &[u8],
    options: &Options,
) -> Result<(Checked, Option<ir_spec::Artifact>), lower::LowerError> {
    build_and(Some(path), source, options)
}

/// Checks `bytes` (read as the file at `path` is, when there is one) and runs `read` on
/// the document checked: a JSON text on the fast path, else the pack the loader loaded.
fn check_and<R>(
    path: Option<&std::path::Path>,
    bytes: &[u8],
    options: &Options,
    read: impl FnOnce(&doc::Node<'_>, &[Diagnostic]) -> R,
) -> (Checked, Option<R>) {
    let mut read = Some(read);
    if bytes.len() <= options.limits.max_source_bytes {
        let fast = check_json_fast_then(bytes, options, |doc, diagnostics| {
            read.take().map(|f| f(doc, diagnostics))
        });
        if let Some(done) = fast {
            return done;
        }
        // What the fast path parses is strict JSON already: the strict check, a second
        // parse of the whole text, is only needed to locate why it did not.
        if path.is_some_and(is_json_file) {
            if let Some(checked) = strict_json_refusal(bytes) {
                return (checked, None);
            }
        }
    }
    match (load::load_bytes(bytes, &options.limits), read) {
        (Err(d), _) => (
            Checked {
                loaded: None,
                diagnostics: vec![d],
            },
            None,
        ),
        (Ok(loaded), Some(read)) => {
            let (checked, found) = check_loaded_then(loaded, options, read);
            (checked, Some(found))
        }
        (Ok(loaded), None) => (check_loaded(loaded, options), None),
    }
}

/// [`check_and`], then the document lowered when the check found no error.
fn module_and(
    path: Option<&std::path::Path>,
    source: &[u8],
    options: &Options,
) -> Result<(Checked, Option<ir_spec::Module>), lower::LowerError> {
    let (checked, module) = check_and(path, source, options, |doc, diagnostics| {
        let clean = !diagnostics.iter().any(Diagnostic::is_error);
        clean.then(|| lower_doc(doc, options))
    });
    Ok((checked, module.flatten().transpose()?))
}

/// [`module_and`], the module wrapped as an artifact of `source`.
fn build_and(
    path: Option<&std::path::Path>,
    source: &[u8],
    options: &Options,
) -> Result<(Checked, Option<ir_spec::Artifact>), lower::LowerError> {
    let (checked, module) = module_and(path, source, options)?;
    Ok((checked, module.map(|m| wrap(source, m))))
}

/// Whether `path` names a strict JSON file (`*.json`).
fn is_json_file(path: &std::path::Path) -> bool {
    path.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("json"))
}

/// The located `parse_error` of a `*.json` file that is not strict JSON; `None` when it
/// is.
fn strict_json_refusal(bytes: &[u8]) -> Option<Checked> {
    let text = std::str::from_utf8(bytes).ok()?;
    let d = load::strict_json::check(text).err()?;
    Some(Checked {
        loaded: None,
        diagnostics: vec![d],
    })
}

/// A JSON text checked on the fast path, then `then` on the same parsed document and the
/// diagnostics found, so that a build reads the text once. `None` when the text is not
/// for the fast path.
fn check_json_fast_then<R>(
    bytes: &[u8],
    options: &Options,
    then: impl FnOnce(&doc::Node<'_>, &[Diagnostic]) -> R,
) -> Option<(Checked, R)> {
    let text = std::str::from_utf8(bytes).ok()?;
    if !load::json_fast::looks_like_json(text) {
        return None;
    }
    let (mut diagnostics, after) = doc::with_arena(|arena| {
        let doc = doc::parse(text, arena, &options.limits)?;
        // The parser has refused every string past the limit already.
        Some(checks_then(&doc, options, Strings::Parsed, then))
    })?;
    // The span index reads the JSON text itself, and only along the paths asked about
    // (the YAML loader's spans, byte for byte): a clean pack pays one copy of its text,
    // and whatever is reported later (lowering, host validators) is located all the same.
    let spans = load::SpanIndex::of_json(text);
    if !diagnostics.is_empty() {
        sort(&mut diagnostics, &spans);
        diagnostics.dedup();
    }
    let checked = Checked {
        loaded: Some(load::Loaded::json(spans)),
        diagnostics,
    };
    Some((checked, after))
}

/// Whether a document's strings still need the length limit checked.
#[derive(Clone, Copy)]
enum Strings {
    /// Loaded by a loader that does not check them.
    Unchecked,
    /// Parsed by [`load::json_fast`], which refuses a string past the limit.
    Parsed,
}

fn run_checks(
    value: &doc::Node<'_>,
    options: &Options,
    strings: Strings,
    out: &mut Vec<Diagnostic>,
) {
    // A pack past a limit gets that diagnostic alone: the later stages are where a huge
    // pack would cost time.
    let passed = match strings {
        Strings::Unchecked => load::check_limits(value, &options.limits, out),
        Strings::Parsed => load::check_limits_parsed(value, &options.limits, out),
    };
    if passed {
        return;
    }
    schema::validate_at(value, options.spec_level, out);
    let check_options = check::CheckOptions {
        base_dir: options.base_dir.clone(),
        allow_paths: options.allow_paths.clone(),
        spec_level: options.spec_level,
    };
    check::check(value, &check_options, out);
}

/// Check an already loaded pack document.
pub fn check_loaded(loaded: load::Loaded, options: &Options) -> Checked {
    check_loaded_then(loaded, options, |_, _| ()).0
}

/// [`check_loaded`], then `then` on the same document and the diagnostics found, as
/// [`check_json_fast_then`] does for a JSON text.
fn check_loaded_then<R>(
    loaded: load::Loaded,
    options: &Options,
    then: impl FnOnce(&doc::Node<'_>, &[Diagnostic]) -> R,
) -> (Checked, R) {
    let (mut diagnostics, after) =
        doc::with_arena(|arena| checks_then(&loaded.doc(arena), options, Strings::Unchecked, then));
    sort(&mut diagnostics, &loaded.spans);
    diagnostics.dedup();
    let checked = Checked {
        loaded: Some(loaded),
        diagnostics,
    };
    (checked, after)
}

/// The checks of `doc`, then `then` on it and the diagnostics found (in the order found).
fn checks_then<R>(
    doc: &doc::Node<'_>,
    options: &Options,
    strings: Strings,
    then: impl FnOnce(&doc::Node<'_>, &[Diagnostic]) -> R,
) -> (Vec<Diagnostic>, R) {
    let mut diagnostics = Vec::new();
    run_checks(doc, options, strings, &mut diagnostics);
    let after = then(doc, &diagnostics);
    (diagnostics, after)
}

/// Lower a pack that [`check_bytes`] / [`check_loaded`] found free of errors into the IR.
///
/// `options.base_dir` is where step `output_schema` files are read from (and embedded);
/// `None` keeps the declared names without schemas. A pack with errors, or one without a
/// loaded document, is refused with a [`lower::LowerError`].
pub fn lower(checked: &Checked, options: &Options) -> Result<ir_spec::Module, lower::LowerError> {
    let loaded = checked
        .loaded
        .as_ref()
        .filter(|_| !checked.has_errors())
        .ok_or_else(|| lower::LowerError {
            pointer: String::new(),
            message: "it has errors (check it first)".into(),
        })?;
    doc::with_arena(|arena| lower_doc(&loaded.doc(arena), options))
}

fn lower_doc(doc: &doc::Node<'_>, options: &Options) -> Result<ir_spec::Module, lower::LowerError> {
    let lower_options = lower::LowerOptions {
        base_dir: options.base_dir.clone(),
        allow_paths: options.allow_paths.clone(),
        spec_level: options.spec_level,
    };
    lower::lower(doc, &lower_options)
}

/// The compiler version written into every artifact header, e.g. `packc 0.1.0`.
pub const COMPILER_VERSION: &str = concat!("packc ", env!("CARGO_PKG_VERSION"));

/// SHA-256 of a pack's source bytes: the provenance recorded in its artifact.
pub fn source_hash(source: &[u8]) -> [u8; 32] {
    use sha2::Digest;
    sha2::Sha256::digest(source).into()
}

/// Lower a checked pack and wrap it as an [`ir_spec::Artifact`], stamped with the SHA-256
/// of `source` (the bytes `checked` came from) and [`COMPILER_VERSION`].
///
/// Like [`lower`](fn@lower), refuses a pack with errors. The artifact depends only on the source
/// bytes, the embedded schema files and the compiler version, so building twice gives
/// identical bytes.
pub fn artifact(
    checked: &Checked,
    source: &[u8],
    options: &Options,
) -> Result<ir_spec::Artifact, lower::LowerError> {
    Ok(wrap(source, lower(checked, options)?))
}

/// Check a pack, then, when it has no errors, lower and wrap it ([`artifact`]).
///
/// The artifact is `None` when the diagnostics hold an error. `Err` means a pack that
/// checked clean could not be lowered, which is a compiler bug.
pub fn build_artifact(
    source: &[u8],
    options: &Options,
) -> Result<(Checked, Option<ir_spec::Artifact>), lower::LowerError> {
    build_and(None, source, options)
}

/// `module` as the artifact of `source`.
fn wrap(source: &[u8], module: ir_spec::Module) -> ir_spec::Artifact {
    ir_spec::Artifact {
        source_hash: source_hash(source),
        compiler: COMPILER_VERSION.to_owned(),
        module,
    }
}

/// Sort diagnostics by position in the source, then kind and message, so output is
/// deterministic whatever order the checks ran in.
fn sort(diags: &mut [Diagnostic], spans: &load::SpanIndex) {
    let pos = |d: &Diagnostic| match &d.site {
        Site::Span(r) => r.start,
        Site::Pointer(p) => spans.key_or_value(p).map_or(0, |r| r.start),
        Site::Whole => 0,
    };
    diags.sort_by_cached_key(|d| {
        (
            pos(d),
            d.kind,
            d.pointer().map(str::to_owned),
            d.message.clone(),
        )
    });
}
