//! Tool bindings: the spec leaves tool implementations to the runtime, so `--tools
//! tools.yaml` binds each pack tool (by its key) to a command or an HTTP endpoint.
//!
//! ```yaml
//! tools:
//!   lookup_order:                 # a key of the pack's `tools` (or of `agents.members`)
//!     command: [python3, tools/lookup_order.py]   # argv; relative paths: this file's folder
//!     timeout_sec: 10             # default 60, at most 86400
//!     env: [DATABASE_URL]         # passed through from packc's environment
//!   web_search:
//!     http: http://127.0.0.1:8080/search          # JSON POST of the args
//!     headers: {x-team: docs}
//!     timeout_sec: 5
//! guards:                         # host validators, by validator `type`
//!   toxicity:
//!     command: [python3, guards/toxicity.py]      # {"type","params","text"} on stdin
//!                                                 # answers {"pass": true|false}
//! extensions:                     # extension step kinds (`vendor.name`)
//!   acme.rerank:
//!     http: http://127.0.0.1:9000/rerank          # {"kind","params","input"} POSTed
//! ```                                             # answers the step's output
//!
//! A command gets the arguments as JSON on stdin and answers with JSON on stdout; a
//! non-zero exit is a tool error carrying the end of its stderr, and so is output that is
//! not JSON, more than 64 MiB of output, or a run past the timeout. An endpoint answers a
//! 2xx with a JSON body; anything else is a tool error. A tool error is what the VM makes
//! of it: an error result for the model in an agent loop, a failed step in a tool step.
//!
//! A command starts with a clean environment: `PATH`, `HOME`, `LANG` and `TMPDIR` from
//! packc's own, and what its binding lists under `env:`, either a list of names passed
//! through (`env: [GITHUB_TOKEN]`) or a mapping of names to values (`env: {MODE: test,
//! GITHUB_TOKEN: null}`, `null` passing the variable through). Nothing else of packc's
//! environment (API keys included) reaches it. It runs in a process group of its own
//! (Unix): at the deadline the whole group is killed, children it left behind included,
//! and packc does not wait on pipes they hold open; when the command exits, what it left
//! running in its group is killed too. The values of `env:` and of `headers:` are
//! secrets: they are redacted from the error text a tool returns.

mod command;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use super::redact::{url_credentials, Redactor};
use super::transport::{timeout_secs, Transport, TransportConfig};
use command::run_command;

/// How one tool is carried out.
#[derive(Clone, Debug, PartialEq)]
pub enum Binding {
    /// Run a command.
    Command {
        /// The program and its arguments.
        argv: Vec<String>,
        /// The working directory (the bindings file's folder).
        dir: PathBuf,
        /// The longest run.
        timeout: Duration,
        /// Environment variables besides the clean base (`PATH`, `HOME`, `LANG`,
        /// `TMPDIR`).
        env: Vec<EnvVar>,
    },
    /// POST to an endpoint.
    Http {
        /// The URL.
        url: String,
        /// Extra headers.
        headers: Vec<(String, String)>,
        /// The longest call.
        timeout: Duration,
    },
}

/// A variable a command binding's `env:` lists.
#[derive(Clone, Debug, PartialEq)]
pub enum EnvVar {
    /// Passed through from packc's environment (left out when packc has none).
    Pass(String),
    /// Set to this value.
    Set(String, String),
}

/// The variables of packc's environment every command gets (when packc has them).
pub const BASE_ENV: [&str; 4] = ["PATH", "HOME", "LANG", "TMPDIR"];

/// The most a command may print on stdout.
pub const MAX_OUTPUT_BYTES: usize = 64 << 20;

/// The tool bindings of a run, by tool key, and the host validators' bindings, by
/// validator type.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ToolBindings {
    /// Bindings by tool key.
    pub tools: BTreeMap<String, Binding>,
    /// `guards:` bindings by validator type (`toxicity`, `pii_leakage`, …): a command
    /// gets `{"type", "params", "text"}` as JSON on stdin, an endpoint as the POST body;
    /// either answers `{"pass": true|false}`.
    pub guards: BTreeMap<String, Binding>,
    /// `extensions:` bindings by extension step kind (`acme.rerank`): a command gets
    /// `{"kind", "params", "input"}` as JSON on stdin, an endpoint as the POST body;
    /// either answers with the step's output as JSON.
    pub extensions: BTreeMap<String, Binding>,
}

/// A bindings file [`ToolBindings::read`] or [`ToolBindings::parse`] refuses.
#[derive(Debug, thiserror::Error)]
pub enum BindingsError {
    /// The file cannot be read.
    #[error("cannot read {}: {error}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        error: std::io::Error,
    },
    /// What is wrong with the text of the file at `path` (`path:line:column: ...` when
    /// the error says where).
    #[error("{}{}", path.display(), match error.as_ref() {
        BindingsError::At { line, column, error } => format!(":{line}:{column}: {error}"),
        other => format!(": {other}"),
    })]
    In {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        #[source]
        error: Box<BindingsError>,
    },
    /// Where in the text `error` is: 1-based line and column.
    #[error("line {line}, column {column}: {error}")]
    At {
        /// The line.
        line: usize,
        /// The column, in characters.
        column: usize,
        /// What is wrong there.
        #[source]
        error: Box<BindingsError>,
    },
    /// The text is not YAML or JSON: the loader's message.
    #[error("{0}")]
    Syntax(String),
    /// None of the three mappings is there; the keys at the top that look like
    /// bindings (a mapping with `command` or `http`), if any.
    #[error("a bindings file needs a `tools`, `guards` or `extensions` mapping{}",
        match .0.as_slice() {
            [] => String::new(),
            [key] => format!("; `{key}` at the top looks like a binding: indent it under `tools:`"),
            keys => format!(
                "; `{}` at the top look like bindings: indent them under `tools:`",
                keys.join("`, `")
            ),
        })]
    NoSection(Vec<String>),
    /// One binding is wrong, e.g. "tools.lookup: needs `command` or `http`".
    #[error("{section}.{key}: {problem}")]
    Binding {
        /// `tools`, `guards` or `extensions`.
        section: String,
        /// The binding's key.
        key: String,
        /// What is wrong with it.
        problem: String,
    },
}

const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

impl ToolBindings {
    /// Reads a bindings file (YAML or JSON).
    pub fn read(path: &Path) -> Result<ToolBindings, BindingsError> {
        let text = std::fs::read_to_string(path).map_err(|error| BindingsError::Read {
            path: path.to_path_buf(),
            error,
        })?;
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        ToolBindings::parse(&text, &dir).map_err(|error| BindingsError::In {
            path: path.to_path_buf(),
            error: Box::new(error),
        })
    }

    /// Parses bindings from text; relative command paths are resolved against `dir`. An
    /// error that can say where it is is [`BindingsError::At`] a line and column.
    pub fn parse(text: &str, dir: &Path) -> Result<ToolBindings, BindingsError> {
        let at = |offset: usize, error: BindingsError| {
            let (line, column) = crate::case_format::line_col(text, offset);
            BindingsError::At {
                line,
                column,
                error: Box::new(error),
            }
        };
        let loaded = packc_compiler::load::load_str(text, &Default::default()).map_err(|d| {
            let error = BindingsError::Syntax(match d.help {
                Some(help) => format!("{}; {help}", d.message),
                None => d.message,
            });
            match d.site {
                packc_compiler::diag::Site::Span(span) => at(span.start, error),
                _ => error,
            }
        })?;
        let section = |name: &str| loaded.value().get(name).and_then(Value::as_object);
        if ["tools", "guards", "extensions"]
            .iter()
            .all(|name| section(name).is_none())
        {
            let looks_bound = |v: &Value| {
                v.as_object()
                    .is_some_and(|b| b.contains_key("command") || b.contains_key("http"))
            };
            let keys = loaded
                .value()
                .as_object()
                .map(|top| {
                    top.iter()
                        .filter(|(_, v)| looks_bound(v))
                        .map(|(k, _)| k.clone())
                        .collect()
                })
                .unwrap_or_default();
            return Err(BindingsError::NoSection(keys));
        }
        let empty = serde_json::Map::new();
        let read = |name: &str| {
            parse_section(name, section(name).unwrap_or(&empty), dir).map_err(|(error, pointer)| {
                match loaded.spans.key_or_value(&pointer) {
                    Some(span) => at(span.start, error),
                    None => error,
                }
            })
        };
        Ok(ToolBindings {
            tools: read("tools")?,
            guards: read("guards")?,
            extensions: read("extensions")?,
        })
    }
}

/// One mapping of a bindings file (`tools` or `guards`): bindings by key. An error
/// comes with the JSON pointer of the binding, or of its member, that is wrong.
fn parse_section(
    name: &str,
    section: &serde_json::Map<String, Value>,
    dir: &Path,
) -> Result<BTreeMap<String, Binding>, (BindingsError, String)> {
    let mut out = BTreeMap::new();
    for (key, b) in section {
        let binding = packc_compiler::diag::join("", &[name, key]);
        let fail = |member: Option<&str>, m: &str| {
            let error = BindingsError::Binding {
                section: name.to_owned(),
                key: key.clone(),
                problem: m.to_owned(),
            };
            let pointer = match member {
                Some(member) => packc_compiler::diag::join(&binding, &[member]),
                None => binding.clone(),
            };
            (error, pointer)
        };
        let at = |m: &str| fail(None, m);
        let b = b.as_object().ok_or_else(|| at("not a mapping"))?;
        if let Some(k) = b.keys().find(|k| {
            !matches!(
                k.as_str(),
                "command" | "http" | "headers" | "timeout_sec" | "env"
            )
        }) {
            return Err(fail(Some(k), &format!("unknown member `{k}`")));
        }
        let timeout = match b.get("timeout_sec") {
            None => DEFAULT_TIMEOUT,
            Some(v) => {
                let bad = |m: &str| fail(Some("timeout_sec"), m);
                let secs = v
                    .as_f64()
                    .ok_or_else(|| bad("`timeout_sec` is not a positive number"))?;
                timeout_secs(secs, "`timeout_sec`").map_err(|e| bad(&e.to_string()))?
            }
        };
        if b.contains_key("env") && b.contains_key("http") {
            return Err(fail(Some("env"), "`env` is for `command` bindings"));
        }
        let env = match b.get("env") {
            None => Vec::new(),
            Some(v) => parse_env(v).map_err(|e| fail(Some("env"), &e))?,
        };
        let at_command = |m: &str| fail(Some("command"), m);
        let binding = match (b.get("command"), b.get("http")) {
            (Some(cmd), None) => {
                let argv: Vec<String> = match cmd {
                    // A string is split at white space, with no shell's quoting: a quote
                    // or a backslash would be taken literally, so it asks for the list.
                    Value::String(s) if s.contains(['"', '\'', '\\']) => {
                        return Err(at_command(
                            "`command` as a string is split at spaces, without quoting: write it as a list, e.g. [python3, -c, \"print(1)\"]",
                        ))
                    }
                    Value::String(s) => s.split_whitespace().map(str::to_owned).collect(),
                    Value::Array(a) => a
                        .iter()
                        .map(|v| v.as_str().map(str::to_owned))
                        .collect::<Option<_>>()
                        .ok_or_else(|| at_command("`command` items must be strings"))?,
                    _ => return Err(at_command("`command` is not a list of strings")),
                };
                if argv.is_empty() {
                    return Err(at_command("`command` is empty"));
                }
                Binding::Command {
                    argv,
                    dir: dir.to_path_buf(),
                    timeout,
                    env,
                }
            }
            (None, Some(Value::String(url))) => Binding::Http {
                url: url.clone(),
                headers: b
                    .get("headers")
                    .and_then(Value::as_object)
                    .map(|h| {
                        h.iter()
                            .map(|(k, v)| {
                                (
                                    k.clone(),
                                    v.as_str().map_or_else(|| v.to_string(), str::to_owned),
                                )
                            })
                            .collect()
                    })
                    .unwrap_or_default(),
                timeout,
            },
            (None, Some(_)) => return Err(fail(Some("http"), "`http` is not a URL string")),
            (Some(_), Some(_)) => return Err(at("give `command` or `http`, not both")),
            (None, None) => return Err(at("needs `command` or `http`")),
        };
        out.insert(key.clone(), binding);
    }
    Ok(out)
}

impl ToolBindings {
    /// The secrets of the bindings: the values of every `headers:` and `env:` entry (a
    /// passed-through variable's value as packc's environment has it now) and the
    /// credentials of every URL.
    pub fn secrets(&self) -> Vec<String> {
        let mut out = Vec::new();
        for b in self
            .tools
            .values()
            .chain(self.guards.values())
            .chain(self.extensions.values())
        {
            match b {
                Binding::Command { env, .. } => {
                    for v in env {
                        match v {
                            EnvVar::Pass(name) => out.extend(std::env::var(name).ok()),
                            EnvVar::Set(_, value) => out.push(value.clone()),
                        }
                    }
                }
                Binding::Http { url, headers, .. } => {
                    out.extend(headers.iter().map(|(_, v)| v.clone()));
                    out.extend(url_credentials(url));
                }
            }
        }
        out
    }

    /// Calls tool `key` with `args`: its JSON result, or the error the model (or the
    /// step) gets. An HTTP binding gets a client of its own for this call; a host making
    /// many calls uses [`ToolBindings::call_via`] with [`ToolBindings::http_clients`].
    pub fn call(
        &self,
        key: &str,
        args: &Value,
        transport: &TransportConfig,
    ) -> Result<Value, String> {
        self.call_via(key, args, transport, None, &AtomicBool::new(false))
    }

    /// The clients of the HTTP bindings, one per binding (its timeout, no retries), made
    /// once so that calls reuse their connections; waits end early when `cancel` is set.
    pub fn http_clients(
        &self,
        transport: &TransportConfig,
        cancel: &Arc<AtomicBool>,
    ) -> BTreeMap<String, Transport> {
        self.tools
            .iter()
            .filter_map(|(key, b)| match b {
                Binding::Http { timeout, .. } => Some((
                    key.clone(),
                    Transport::new(http_config(*timeout, transport), cancel.clone()),
                )),
                Binding::Command { .. } => None,
            })
            .collect()
    }

    /// Asks the binding of host validator `ty` to judge `text`: sends
    /// `{"type", "params", "text"}` and reads `{"pass": bool}`. The answer is the
    /// output the VM applies; an error (unbound, failed, not JSON) fails closed there.
    pub fn call_guard(
        &self,
        ty: &str,
        params: &Value,
        text: &str,
        transport: &TransportConfig,
        cancel: &AtomicBool,
    ) -> Result<Value, String> {
        let request = serde_json::json!({"type": ty, "params": params, "text": text});
        match self.guards.get(ty) {
            None => Err(format!(
                "validator `{ty}` is not bound to anything: bind it under `guards:` in a --tools file"
            )),
            Some(binding) => binding.send(
                &format!("validator {ty}"),
                &format!("validator `{ty}`"),
                &request,
                transport,
                cancel,
            ),
        }
    }

    /// Carries out an extension step of kind `kind`: sends `{"kind", "params", "input"}`
    /// to its binding and returns the JSON answer, the step's output.
    pub fn call_extension(
        &self,
        kind: &str,
        params: &Value,
        input: &Value,
        transport: &TransportConfig,
        cancel: &AtomicBool,
    ) -> Result<Value, String> {
        let request = serde_json::json!({"kind": kind, "params": params, "input": input});
        match self.extensions.get(kind) {
            None => Err(format!(
                "extension `{kind}` is not bound to anything: bind it under `extensions:` in a --tools file"
            )),
            Some(binding) => binding.send(
                &format!("extension {kind}"),
                &format!("extension `{kind}`"),
                &request,
                transport,
                cancel,
            ),
        }
    }

    /// As [`ToolBindings::call`], POSTing an HTTP binding through `client` (from
    /// [`ToolBindings::http_clients`]) when given.
    pub fn call_via(
        &self,
        key: &str,
        args: &Value,
        transport: &TransportConfig,
        client: Option<&Transport>,
        cancel: &AtomicBool,
    ) -> Result<Value, String> {
        self.call_unredacted(key, args, transport, client, cancel)
            .map_err(|e| Redactor::new(self.secrets()).text(&e))
    }

    fn call_unredacted(
        &self,
        key: &str,
        args: &Value,
        transport: &TransportConfig,
        client: Option<&Transport>,
        cancel: &AtomicBool,
    ) -> Result<Value, String> {
        match self.tools.get(key) {
            None => Err(format!(
                "tool `{key}` is not bound to anything: bind it in a --tools file (in Python, `tools=`)"
            )),
            Some(Binding::Command {
                argv,
                dir,
                timeout,
                env,
            }) => run_command(key, argv, dir, env, *timeout, args, cancel),
            Some(Binding::Http {
                url,
                headers,
                timeout,
            }) => {
                let what = format!("tool `{key}`");
                match client {
                    Some(c) => c.post_json(&what, url, headers, args),
                    None => Transport::new(http_config(*timeout, transport), Default::default())
                        .post_json(&what, url, headers, args),
                }
            }
        }
    }
}

/// An HTTP binding's transport: its own timeout, no retries (a tool call may not be
/// idempotent).
fn http_config(timeout: Duration, transport: &TransportConfig) -> TransportConfig {
    TransportConfig {
        timeout,
        retries: 0,
        ..transport.clone()
    }
}

/// Reads a binding's `env:`: a list of names, or a mapping of names to values (`null`:
/// passed through).
fn parse_env(v: &Value) -> Result<Vec<EnvVar>, String> {
    let name_ok = |n: &str| -> Result<String, String> {
        if n.is_empty() || n.contains(['=', '\0']) {
            Err(format!("`env`: `{n}` is not a variable name"))
        } else {
            Ok(n.to_owned())
        }
    };
    match v {
        Value::Array(items) => items
            .iter()
            .map(|i| match i {
                Value::String(n) => name_ok(n).map(EnvVar::Pass),
                _ => Err("`env` items must be variable names".to_owned()),
            })
            .collect(),
        Value::Object(map) => map
            .iter()
            .map(|(n, v)| {
                let n = name_ok(n)?;
                Ok(match v {
                    Value::Null => EnvVar::Pass(n),
                    Value::String(s) if s.contains('\0') => {
                        return Err(format!("`env`: the value of `{n}` holds a NUL byte"))
                    }
                    Value::String(s) => EnvVar::Set(n, s.clone()),
                    Value::Number(_) | Value::Bool(_) => EnvVar::Set(n, v.to_string()),
                    _ => return Err(format!("`env`: the value of `{n}` is not a string")),
                })
            })
            .collect(),
        _ => Err("`env` is not a list of names or a mapping of names to values".to_owned()),
    }
}

impl Binding {
    /// Sends `request` to this binding (a validator's or an extension's): runs its
    /// command, named `command_what` in errors, or POSTs to its URL, named `http_what`.
    fn send(
        &self,
        command_what: &str,
        http_what: &str,
        request: &Value,
        transport: &TransportConfig,
        cancel: &AtomicBool,
    ) -> Result<Value, String> {
        match self {
            Binding::Command {
                argv,
                dir,
                timeout,
                env,
            } => run_command(command_what, argv, dir, env, *timeout, request, cancel),
            Binding::Http {
                url,
                headers,
                timeout,
            } => Transport::new(http_config(*timeout, transport), Default::default())
                .post_json(http_what, url, headers, request),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bindings_parse_and_refuse_nonsense() {
        let b = ToolBindings::parse(
            "tools:\n  a: {command: [sh, -c, cat], timeout_sec: 2}\n  b: {http: 'http://x/y'}\n",
            Path::new("/d"),
        )
        .unwrap();
        assert!(
            matches!(&b.tools["a"], Binding::Command { argv, timeout, .. }
            if argv.len() == 3 && *timeout == Duration::from_secs(2))
        );
        assert!(matches!(&b.tools["b"], Binding::Http { url, .. } if url == "http://x/y"));
        for bad in [
            "tools: {a: {}}",
            "tools: {a: {command: []}}",
            "tools: {a: {command: [x], http: y}}",
            "tools: {a: {command: [x], timeout_sec: 0}}",
            "tools: {a: {command: [x], retries: 3}}",
            "tools: {a: {command: [x], env: [A=B]}}",
            "tools: {a: {command: [x], env: {A: [1]}}}",
            "tools: {a: {command: [x], env: 3}}",
            "tools: {a: {http: 'http://x', env: [A]}}",
            "nothing: 1",
            r#"tools: {a: {command: "python3 -c 'print(1)'"}}"#,
        ] {
            assert!(ToolBindings::parse(bad, Path::new(".")).is_err(), "{bad}");
        }
        // A string without quotes is split at white space.
        let b =
            ToolBindings::parse("tools: {a: {command: python3  t.py -v}}", Path::new(".")).unwrap();
        assert!(
            matches!(&b.tools["a"], Binding::Command { argv, .. } if argv == &["python3", "t.py", "-v"])
        );
    }

    /// A file's errors say where: `file:line:column:` of the member at fault (or of the
    /// binding), and of a syntax error; bindings written at the top are pointed under
    /// `tools:`.
    #[test]
    fn a_files_errors_name_the_line_and_column() {
        let dir = std::env::temp_dir().join(format!("packc-bindings-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("tools.yaml");
        for (text, want) in [
            (
                "tools:\n  kb:\n    command: [echo]\n    timeout_sec: abc\n",
                ":4:5: tools.kb: `timeout_sec` is not a positive number",
            ),
            (
                "tools:\n  kb:\n    command: [echo]\n    bogus: 1\n",
                ":4:5: tools.kb: unknown member `bogus`",
            ),
            ("tools:\n  kb: 3\n", ":2:3: tools.kb: not a mapping"),
            (
                "tools:\n  kb:\n    command: [echo\n",
                ":4:1: the file is not valid YAML or JSON: ",
            ),
            (
                "kb:\n  command: [echo]\n",
                ": a bindings file needs a `tools`, `guards` or `extensions` mapping; `kb` at \
                 the top looks like a binding: indent it under `tools:`",
            ),
        ] {
            std::fs::write(&path, text).unwrap();
            let e = ToolBindings::read(&path).unwrap_err().to_string();
            let want = format!("{}{want}", path.display());
            assert!(e.starts_with(&want), "{text:?}:\n{e}\n{want}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn timeouts_past_the_maximum_or_not_positive_are_refused_at_parse_time() {
        for t in ["1e19", "1e20", "-1", "0", "86401", "'10'"] {
            let text = format!("tools: {{a: {{command: [x], timeout_sec: {t}}}}}");
            let e = ToolBindings::parse(&text, Path::new("."))
                .unwrap_err()
                .to_string();
            assert!(
                e.starts_with("line 1, column 27: tools.a: `timeout_sec`"),
                "{t}: {e}"
            );
        }
        let e = ToolBindings::parse(
            "tools: {a: {command: [x], timeout_sec: 1e20}}",
            Path::new("."),
        );
        assert!(e.unwrap_err().to_string().contains("maximum"));
        let b = ToolBindings::parse(
            "tools: {a: {command: [x], timeout_sec: 86400}}",
            Path::new("."),
        );
        assert!(b.is_ok());
    }

    #[test]
    fn env_lists_names_or_values() {
        let b = ToolBindings::parse(
            "tools:\n  a: {command: [x], env: [ONE, TWO]}\n  b: {command: [x], env: {MODE: test, N: 3, PASS: null}}\n",
            Path::new("."),
        )
        .unwrap();
        let env = |k: &str| match &b.tools[k] {
            Binding::Command { env, .. } => env.clone(),
            _ => unreachable!(),
        };
        assert_eq!(
            env("a"),
            [EnvVar::Pass("ONE".into()), EnvVar::Pass("TWO".into())]
        );
        assert_eq!(
            env("b"),
            [
                EnvVar::Set("MODE".into(), "test".into()),
                EnvVar::Set("N".into(), "3".into()),
                EnvVar::Pass("PASS".into()),
            ]
        );
    }
}
