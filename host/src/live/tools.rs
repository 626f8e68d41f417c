//! Tool bindings: the spec leaves tool implementations to the runtime, so `--tools
//! tools.yaml` binds each pack tool (by its key) to a command or an HTTP endpoint.
//!
//! ```yaml
//! tools:
//!   lookup_order:                 # a key of the pack's `tools` (or of `agents.members`)
//!     command: [python3, tools/lookup_order.py]   # argv; relative paths: this file's folder
//!     timeout_sec: 10             # default 60
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
//! not JSON or a run past the timeout (the process is killed). An endpoint answers a 2xx
//! with a JSON body; anything else is a tool error. A tool error is what the VM makes of
//! it: an error result for the model in an agent loop, a failed step in a tool step.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::transport::{Transport, TransportConfig};

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

const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

impl ToolBindings {
    /// Reads a bindings file (YAML or JSON).
    pub fn read(path: &Path) -> Result<ToolBindings, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        ToolBindings::parse(&text, &dir).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// Parses bindings from text; relative command paths are resolved against `dir`.
    pub fn parse(text: &str, dir: &Path) -> Result<ToolBindings, String> {
        let loaded =
            packc_compiler::load::load_str(text, &Default::default()).map_err(|d| d.message)?;
        let section = |name: &str| loaded.value.get(name).and_then(Value::as_object);
        if ["tools", "guards", "extensions"]
            .iter()
            .all(|name| section(name).is_none())
        {
            return Err(
                "a bindings file needs a `tools`, `guards` or `extensions` mapping".to_owned(),
            );
        }
        let empty = serde_json::Map::new();
        Ok(ToolBindings {
            tools: parse_section("tools", section("tools").unwrap_or(&empty), dir)?,
            guards: parse_section("guards", section("guards").unwrap_or(&empty), dir)?,
            extensions: parse_section("extensions", section("extensions").unwrap_or(&empty), dir)?,
        })
    }
}

/// One mapping of a bindings file (`tools` or `guards`): bindings by key.
fn parse_section(
    name: &str,
    section: &serde_json::Map<String, Value>,
    dir: &Path,
) -> Result<BTreeMap<String, Binding>, String> {
    let mut out = BTreeMap::new();
    for (key, b) in section {
        let at = |m: &str| format!("{name}.{key}: {m}");
        let b = b.as_object().ok_or_else(|| at("not a mapping"))?;
        if let Some(k) = b
            .keys()
            .find(|k| !matches!(k.as_str(), "command" | "http" | "headers" | "timeout_sec"))
        {
            return Err(at(&format!("unknown member `{k}`")));
        }
        let timeout = match b.get("timeout_sec") {
            None => DEFAULT_TIMEOUT,
            Some(v) => v
                .as_f64()
                .filter(|s| s.is_finite() && *s > 0.0)
                .map(Duration::from_secs_f64)
                .ok_or_else(|| at("`timeout_sec` is not a positive number"))?,
        };
        let binding = match (b.get("command"), b.get("http")) {
            (Some(cmd), None) => {
                let argv: Vec<String> = match cmd {
                    Value::String(s) => s.split_whitespace().map(str::to_owned).collect(),
                    Value::Array(a) => a
                        .iter()
                        .map(|v| v.as_str().map(str::to_owned))
                        .collect::<Option<_>>()
                        .ok_or_else(|| at("`command` items must be strings"))?,
                    _ => return Err(at("`command` is not a list of strings")),
                };
                if argv.is_empty() {
                    return Err(at("`command` is empty"));
                }
                Binding::Command {
                    argv,
                    dir: dir.to_path_buf(),
                    timeout,
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
            (None, Some(_)) => return Err(at("`http` is not a URL string")),
            (Some(_), Some(_)) => return Err(at("give `command` or `http`, not both")),
            (None, None) => return Err(at("needs `command` or `http`")),
        };
        out.insert(key.clone(), binding);
    }
    Ok(out)
}

impl ToolBindings {
    /// Calls tool `key` with `args`: its JSON result, or the error the model (or the
    /// step) gets. An HTTP binding gets a client of its own for this call; a host making
    /// many calls uses [`ToolBindings::call_via`] with [`ToolBindings::http_clients`].
    pub fn call(
        &self,
        key: &str,
        args: &Value,
        transport: &TransportConfig,
    ) -> Result<Value, String> {
        self.call_via(key, args, transport, None)
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
    ) -> Result<Value, String> {
        let request = serde_json::json!({"type": ty, "params": params, "text": text});
        match self.guards.get(ty) {
            None => Err(format!(
                "validator `{ty}` is not bound to anything: bind it under `guards:` in a --tools file"
            )),
            Some(Binding::Command { argv, dir, timeout }) => {
                run_command(&format!("validator {ty}"), argv, dir, *timeout, &request)
            }
            Some(Binding::Http {
                url,
                headers,
                timeout,
            }) => Transport::new(http_config(*timeout, transport), Default::default())
                .post_json(&format!("validator `{ty}`"), url, headers, &request),
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
    ) -> Result<Value, String> {
        let request = serde_json::json!({"kind": kind, "params": params, "input": input});
        match self.extensions.get(kind) {
            None => Err(format!(
                "extension `{kind}` is not bound to anything: bind it under `extensions:` in a --tools file"
            )),
            Some(Binding::Command { argv, dir, timeout }) => {
                run_command(&format!("extension {kind}"), argv, dir, *timeout, &request)
            }
            Some(Binding::Http {
                url,
                headers,
                timeout,
            }) => Transport::new(http_config(*timeout, transport), Default::default())
                .post_json(&format!("extension `{kind}`"), url, headers, &request),
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
    ) -> Result<Value, String> {
        match self.tools.get(key) {
            None => Err(format!(
                "tool `{key}` is not bound to anything: bind it in a --tools file"
            )),
            Some(Binding::Command { argv, dir, timeout }) => {
                run_command(key, argv, dir, *timeout, args)
            }
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

fn run_command(
    key: &str,
    argv: &[String],
    dir: &Path,
    timeout: Duration,
    args: &Value,
) -> Result<Value, String> {
    let program = {
        let p = Path::new(&argv[0]);
        if p.is_relative() && argv[0].contains('/') {
            dir.join(p)
        } else {
            p.to_path_buf()
        }
    };
    let mut child = Command::new(&program)
        .args(&argv[1..])
        .current_dir(if dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            dir
        })
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("tool `{key}`: cannot start {}: {e}", program.display()))?;
    // Feed stdin and drain stdout/stderr on threads, so a chatty tool cannot block on a
    // full pipe while we wait for it.
    let input = args.to_string();
    let mut stdin = child.stdin.take();
    let feeder = std::thread::spawn(move || {
        if let Some(s) = stdin.as_mut() {
            let _ = s.write_all(input.as_bytes());
        }
    });
    let drain = |r: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(r) = r {
                let _ = r.take(64 << 20).read_to_end(&mut buf);
            }
            buf
        })
    };
    let out = drain(
        child
            .stdout
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
    );
    let err = drain(
        child
            .stderr
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
    );
    let deadline = Instant::now() + timeout;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "tool `{key}` timed out after {timeout:?} and was stopped"
                ));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(2)),
            Err(e) => return Err(format!("tool `{key}`: {e}")),
        }
    };
    let _ = feeder.join();
    let stdout = out.join().unwrap_or_default();
    let stderr = err.join().unwrap_or_default();
    if !status.success() {
        let tail = String::from_utf8_lossy(&stderr);
        let tail = tail.trim();
        let tail: String = tail
            .chars()
            .rev()
            .take(500)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        return Err(format!(
            "tool `{key}` exited with {status}{}{tail}",
            if tail.is_empty() { "" } else { ": " }
        ));
    }
    serde_json::from_slice(&stdout).map_err(|e| {
        format!(
            "tool `{key}` printed output that is not JSON ({e}): {}",
            String::from_utf8_lossy(&stdout)
                .chars()
                .take(200)
                .collect::<String>()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
            "nothing: 1",
        ] {
            assert!(ToolBindings::parse(bad, Path::new(".")).is_err(), "{bad}");
        }
    }

    #[test]
    fn commands_answer_errors_and_time_out() {
        let b = ToolBindings::parse(
            "tools:\n  echo: {command: [sh, -c, cat]}\n  fail: {command: [sh, -c, 'echo broken >&2; exit 3']}\n  text: {command: [sh, -c, 'echo hello']}\n  slow: {command: [sh, -c, 'sleep 5'], timeout_sec: 0.2}\n",
            Path::new("."),
        )
        .unwrap();
        let t = TransportConfig::default();
        assert_eq!(
            b.call("echo", &json!({"q": [1, 2]}), &t),
            Ok(json!({"q": [1, 2]}))
        );
        let e = b.call("fail", &json!({}), &t).unwrap_err();
        assert!(e.contains("exit status: 3") && e.ends_with("broken"), "{e}");
        assert!(b
            .call("text", &json!({}), &t)
            .unwrap_err()
            .contains("not JSON"));
        let started = Instant::now();
        assert!(b
            .call("slow", &json!({}), &t)
            .unwrap_err()
            .contains("timed out"));
        assert!(started.elapsed() < Duration::from_secs(3));
        assert!(b
            .call("nope", &json!({}), &t)
            .unwrap_err()
            .contains("not bound"));
    }
}
