//! Prompts: templates, variables, offered tools and tool policy.

use serde::{Deserialize, Serialize};

use crate::{StrId, ToolId};

/// A prompt of the pack's `prompts` map.
///
/// ```yaml
/// prompts:
///   greeter:                                   # -> Prompt::key
///     system_template: "Hello {{name}}"        # -> Prompt::system (fragments expanded)
///     variables: [{name: name, required: true}]  # -> Prompt::variables
///     tools: [kb_lookup]                       # -> Prompt::tools
///     tool_policy: {max_rounds: 3}             # -> Prompt::policy
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Prompt {
    /// The key in `prompts` (the `prompt_task` that names it).
    pub key: StrId,
    /// The `system_template`, fragments expanded, split into text and placeholders.
    pub system: Vec<Segment>,
    /// The declared `variables`, in source order ([`VarRoot::Declared`] indexes it).
    pub variables: Vec<Variable>,
    /// The offered tools of `tools`, in the order written: names that are neither a tool
    /// key nor a member key are dropped, and `tool_policy.blocklist` is applied. Empty
    /// under `tool_choice: none`.
    pub tools: Vec<ToolRef>,
    /// The `tool_policy`.
    pub policy: ToolPolicy,
    /// The `parameters` (temperature, max_tokens, top_p, …), for a host making the real
    /// model call; `null` when absent. The VM does not read them.
    pub parameters: crate::JsonText,
    /// The enabled `validators` that can trigger, in declaration order: the prompt's
    /// guard program (`later-versions.md` §4). Empty for most prompts, and then the VM
    /// does nothing for them. Not part of the `MODL` payload: an artifact carries the
    /// guards of every prompt in its required `GARD` section, present only when some
    /// prompt has one (so a reader that does not enforce them refuses the file).
    #[serde(skip)]
    pub guards: Vec<Guard>,
}

/// One enabled validator of a prompt, its params parsed once.
///
/// ```yaml
/// validators:
///   - type: banned_words                       # -> Guard::name, Guard::check
///     params: {words: [Refund], direction: both}  # -> Check::BannedWords, Guard::direction
///     message: "I can't discuss that."         # -> Guard::message
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Guard {
    /// The `type` as written (alias or not): the trace line and the call record name it.
    pub name: String,
    /// What the validator checks.
    pub check: Check,
    /// The text that replaces a triggering answer: the validator's `message`, else
    /// `params.message`, else the default blocked message.
    pub message: String,
    /// `params.direction`.
    pub direction: Direction,
}

/// The text a validator that replaces an answer uses when the pack gives no message.
pub const DEFAULT_BLOCKED_MESSAGE: &str =
    "Sorry, we can't provide this response as it would violate our content policy.";

/// What a validator reads: `params.direction`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Direction {
    /// `output` (the default): the model's answer.
    Output,
    /// `input`: the call's input, when it is a string, before the model is called.
    Input,
    /// `both`.
    Both,
}

impl Direction {
    /// Reads the model's answer.
    pub fn output(self) -> bool {
        matches!(self, Direction::Output | Direction::Both)
    }

    /// Reads the call's input.
    pub fn input(self) -> bool {
        matches!(self, Direction::Input | Direction::Both)
    }
}

/// A validator's test, with its params parsed: a built-in type run inside the VM, or a
/// host validator.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Check {
    /// `banned_words` / `content_excludes`: triggers when a word occurs, ignoring case.
    BannedWords {
        /// `words`, lowercased, empty ones dropped.
        words: Vec<String>,
        /// `match_mode: word_boundary` (the default; `false`: `substring`): a match counts
        /// only when no Unicode word character precedes or follows it.
        word_boundary: bool,
    },
    /// `max_length` / `length`: triggers when the text is longer. At least one is set.
    MaxLength {
        /// `max_characters` (`max`, `max_chars`), in Unicode scalar values: truncates.
        max_characters: Option<u64>,
        /// `max_tokens`, in whitespace-separated words: replaces.
        max_tokens: Option<u64>,
    },
    /// `max_sentences` / `sentence_count`: triggers when the text has more sentences (a
    /// sentence ends at `.`, `!` or `?` followed by whitespace or the end).
    MaxSentences(u64),
    /// `required_fields` / `field_presence` (`fields`) and `contains` (`patterns`):
    /// triggers when a listed string is absent (case-sensitive).
    ContainsAll(Vec<String>),
    /// `contains_any` (`values`): triggers when every listed string is absent.
    ContainsAny(Vec<String>),
    /// `regex` / `content_matches`: triggers when whether the text matches `pattern`
    /// (Rust `regex` syntax, compiled once per loaded program) differs from `expect_match`.
    Regex {
        /// `pattern`.
        pattern: String,
        /// `expect_match` (default true).
        expect_match: bool,
    },
    /// `json_valid` / `is_valid_json` / `valid_json`: triggers when the text is not JSON.
    JsonValid,
    /// `json_schema`: triggers when the text is not JSON or does not conform to `schema`.
    JsonSchema(crate::JsonText),
    /// Any other type (`toxicity`, `llm_judge`, custom names): the host decides, asked
    /// with a `guard` call carrying the type, these params and the text.
    Host {
        /// `params` (`{}` when absent).
        params: crate::JsonText,
    },
}

/// The words of a [`Check::BannedWords`] from `words` as the pack lists them: each
/// lowercased, a word equal to the one before it dropped.
pub fn banned_word_list<'a>(words: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let mut words: Vec<String> = words.into_iter().map(str::to_lowercase).collect();
    words.dedup();
    words
}

/// The regular expression (Rust `regex` syntax) a [`Check::BannedWords`] of `words`
/// defines: `(?i)`, then the words escaped as one alternation, between half word
/// boundaries (`\b{start-half}` … `\b{end-half}`) when `word_boundary` is set. A reader
/// compiles it within [`words_size_limit`]; the words of all lists together are bounded
/// by [`DecodeLimits::max_banned_word_bytes`](crate::DecodeLimits::max_banned_word_bytes).
pub fn words_pattern(words: &[String], word_boundary: bool) -> String {
    let mut pattern = String::from("(?i)");
    if word_boundary {
        pattern.push_str(r"\b{start-half}");
    }
    pattern.push_str("(?:");
    for (i, w) in words.iter().enumerate() {
        if i > 0 {
            pattern.push('|');
        }
        for c in w.chars() {
            if is_meta_character(c) {
                pattern.push('\\');
            }
            pattern.push(c);
        }
    }
    pattern.push(')');
    if word_boundary {
        pattern.push_str(r"\b{end-half}");
    }
    pattern
}

/// The compiled size a banned-word list's regex ([`words_pattern`]) may take, in bytes
/// (the `regex` crate's `size_limit`): 128 per byte of its words, plus 64 KiB for the
/// word-boundary tables. A list of random ASCII words takes about 90 bytes per byte, so
/// only a pathological list is refused, and the total is bounded by the words' bytes.
pub fn words_size_limit(words: &[String]) -> usize {
    let bytes = words.iter().fold(0usize, |n, w| n.saturating_add(w.len()));
    bytes.saturating_mul(128).saturating_add(64 * 1024)
}

/// The characters a regular expression must escape to match them literally (the `regex`
/// crate's meta characters).
fn is_meta_character(c: char) -> bool {
    matches!(
        c,
        '\\' | '.'
            | '+'
            | '*'
            | '?'
            | '('
            | ')'
            | '|'
            | '['
            | ']'
            | '{'
            | '}'
            | '^'
            | '$'
            | '#'
            | '&'
            | '-'
            | '~'
    )
}

/// Something a model may call as a tool.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ToolRef {
    /// A key of the pack's `tools`.
    Tool(ToolId),
    /// A key of `agents.members`, offered as a tool and called under the member key
    /// (`workflow.md` §6). The [`StrId`] is the member key.
    Member(StrId),
}

/// A prompt's `tool_policy`.
///
/// ```yaml
/// tool_policy: {tool_choice: none, max_rounds: 3, max_tool_calls_per_turn: 4, blocklist: [rm]}
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolPolicy {
    /// `tool_choice: none`: no tools are offered.
    pub tool_choice_none: bool,
    /// `max_rounds`: model calls per prompt-state execution (the VM defaults it to 5).
    pub max_rounds: Option<u32>,
    /// `max_tool_calls_per_turn` (prompt states default it to 10, agent steps do not).
    pub max_tool_calls_per_turn: Option<u32>,
    /// `blocklist`: names never offered.
    pub blocklist: Vec<String>,
}

/// A piece of a template.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Segment {
    /// Literal text, `Hello ` in `Hello {{name}}`.
    Text(String),
    /// A placeholder, `{{name}}` in `Hello {{name}}`.
    Var(Placeholder),
}

/// A `{{root.path[0]}}` placeholder with its root classified.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Placeholder {
    /// What the first name refers to.
    pub root: VarRoot,
    /// The steps after the root (after the artifact name for [`VarRoot::Artifact`]).
    pub path: Vec<PathSeg>,
}

/// The first name of a placeholder.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum VarRoot {
    /// `{{input...}}`: the call's input.
    Input,
    /// `{{artifacts}}` with no artifact name: the object of all set artifacts.
    Artifacts,
    /// `{{artifacts.<name>...}}`: one artifact; `None` when no state declares the name
    /// (it then always renders empty).
    Artifact(Option<crate::ArtifactId>),
    /// `{{v...}}` for a declared variable: the index into [`Prompt::variables`].
    Declared(u32),
    /// `{{x...}}` for an undeclared name: bound from the input's member `x`, else the host
    /// variable `x` (`workflow.md` §14).
    Undeclared(String),
}

/// One step of a placeholder path.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum PathSeg {
    /// `.name`
    Field(String),
    /// `[i]`
    Index(u32),
}

/// A declared template variable.
///
/// ```yaml
/// variables:
///   - {name: tier, type: string, required: false, default: standard,
///      validation: {enum: [standard, gold]}}
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Variable {
    /// `name`.
    pub name: String,
    /// `type`, when it is one the VM checks.
    pub ty: Option<VarType>,
    /// `required` (default false).
    pub required: bool,
    /// `default`, kept only when the variable is not required.
    #[serde(with = "crate::json_text::option")]
    pub default: Option<serde_json::Value>,
    /// `validation`.
    pub validation: Validation,
}

/// The checked variable types (other type names are not checked).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum VarType {
    /// `type: string`
    String,
    /// `type: number`
    Number,
    /// `type: boolean`
    Boolean,
    /// `type: object`
    Object,
    /// `type: array`
    Array,
}

/// A variable's `validation` rules.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Validation {
    /// `pattern`: a regex searched in the string, unanchored.
    pub pattern: Option<String>,
    /// `min_length`, in Unicode scalar values.
    pub min_length: Option<u64>,
    /// `max_length`, in Unicode scalar values.
    pub max_length: Option<u64>,
    /// `minimum`, inclusive.
    pub minimum: Option<f64>,
    /// `maximum`, inclusive.
    pub maximum: Option<f64>,
    /// `enum`: allowed values, compared with JSON equality.
    #[serde(with = "crate::json_text::option")]
    pub allowed: Option<Vec<serde_json::Value>>,
}

/// What a model call says about an output schema (`compositions.md` §11).
///
/// ```yaml
/// output_schema: schemas/verdict.json   # name; the file's JSON when packc embedded it
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OutputSchema {
    /// The declared name.
    pub name: String,
    /// The embedded schema, when the pack is a file and the schema file was found; kept
    /// as JSON text (the VM never reads it; a host passes it on or parses it).
    pub schema: Option<crate::JsonText>,
}
