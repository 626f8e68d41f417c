//! Running a command binding: a clean environment, its own process group, JSON on
//! stdin and stdout, a deadline for the whole group, and bounded output.

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::{EnvVar, BASE_ENV, MAX_OUTPUT_BYTES};

/// How much of a command's stderr is kept (its end).
const STDERR_TAIL_BYTES: usize = 64 << 10;

/// How long to wait for a command's pipes to close once it exited and its group was
/// killed.
const PIPE_GRACE: Duration = Duration::from_millis(500);

/// Kills the process group a command leads (Unix), else the command alone.
fn kill_group(child: &mut Child) {
    #[cfg(unix)]
    {
        use nix::sys::signal::{killpg, Signal};
        use nix::unistd::Pid;
        if let Ok(pid) = i32::try_from(child.id()) {
            let _ = killpg(Pid::from_raw(pid), Signal::SIGKILL);
        }
    }
    let _ = child.kill();
}

/// What a reader thread hands back: the bytes, and whether there were more than it kept
/// (stdout: more than [`MAX_OUTPUT_BYTES`]; stderr keeps its end and reads on).
type Drained = (Vec<u8>, bool);

/// Reads `r` to its end on a thread: stdout up to `MAX_OUTPUT_BYTES` (then it stops
/// and says so), stderr keeping its last `STDERR_TAIL_BYTES`.
fn drain(r: Option<impl Read + Send + 'static>, tail: bool) -> mpsc::Receiver<Drained> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        let mut over = false;
        if let Some(mut r) = r {
            let mut chunk = vec![0u8; 64 << 10];
            loop {
                let n = match r.read(&mut chunk) {
                    Ok(0) => break,
                    Ok(n) => n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(_) => break,
                };
                buf.extend_from_slice(&chunk[..n]);
                if tail {
                    if buf.len() > STDERR_TAIL_BYTES {
                        buf.drain(..buf.len() - STDERR_TAIL_BYTES);
                        over = true;
                    }
                } else if buf.len() > MAX_OUTPUT_BYTES {
                    over = true;
                    break;
                }
            }
        }
        let _ = tx.send((buf, over));
    });
    rx
}

/// Runs the command `argv` of binding `key` on `args`. Once the command exits, what it
/// left running in its group is killed and its output read; at `timeout`, or as soon as
/// `cancel` is set (Ctrl-C), the whole group is killed and the call fails.
pub(super) fn run_command(
    key: &str,
    argv: &[String],
    dir: &Path,
    env: &[EnvVar],
    timeout: Duration,
    args: &Value,
    cancel: &AtomicBool,
) -> Result<Value, String> {
    let program = {
        let p = Path::new(&argv[0]);
        if p.is_relative() && argv[0].contains('/') {
            dir.join(p)
        } else {
            p.to_path_buf()
        }
    };
    let mut command = Command::new(&program);
    command
        .args(&argv[1..])
        .current_dir(if dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            dir
        })
        .env_clear()
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for name in BASE_ENV {
        if let Some(v) = std::env::var_os(name) {
            command.env(name, v);
        }
    }
    for v in env {
        match v {
            EnvVar::Pass(name) => {
                if let Some(v) = std::env::var_os(name) {
                    command.env(name, v);
                }
            }
            EnvVar::Set(name, value) => {
                command.env(name, value);
            }
        }
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        command.process_group(0);
    }
    let mut child = command
        .spawn()
        .map_err(|e| format!("tool `{key}`: cannot start {}: {e}", program.display()))?;
    // Feed stdin and drain stdout/stderr on threads, so a chatty tool cannot block on a
    // full pipe while we wait for it. None of them is joined: a pipe a stray process
    // holds open must not keep the call past its deadline.
    let input = args.to_string();
    if let Some(mut stdin) = child.stdin.take() {
        std::thread::spawn(move || {
            let _ = stdin.write_all(input.as_bytes());
        });
    }
    let out_rx = drain(child.stdout.take(), false);
    let err_rx = drain(child.stderr.take(), true);
    let started = Instant::now();
    let (mut status, mut out, mut err): (Option<ExitStatus>, Option<Drained>, Option<Drained>) =
        (None, None, None);
    let stopped = loop {
        if out.is_none() {
            out = out_rx.try_recv().ok();
        }
        if err.is_none() {
            err = err_rx.try_recv().ok();
        }
        if out.as_ref().is_some_and(|(_, over)| *over) {
            kill_group(&mut child);
            let _ = child.wait();
            return Err(format!(
                "tool `{key}` printed more than {} MiB: output too large",
                MAX_OUTPUT_BYTES >> 20
            ));
        }
        if status.is_none() {
            status = child.try_wait().map_err(|e| format!("tool `{key}`: {e}"))?;
        }
        if status.is_some() {
            break None;
        }
        if cancel.load(Ordering::Relaxed) {
            break Some(format!("tool `{key}` was stopped: the run was interrupted"));
        }
        if started.elapsed() >= timeout {
            break Some(format!(
                "tool `{key}` timed out after {timeout:?} and was stopped"
            ));
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    // Whatever the command left running in its group goes now: once it exited, at the
    // deadline, or when the run is interrupted.
    kill_group(&mut child);
    if let Some(why) = stopped {
        let _ = child.wait();
        return Err(why);
    }
    // With the group killed the pipes close (what the command wrote before it exited is
    // still read), unless a process it started left the group and holds them.
    let wait = |rx: &mpsc::Receiver<Drained>, got: &mut Option<Drained>| {
        if got.is_none() {
            *got = rx.recv_timeout(PIPE_GRACE).ok();
        }
    };
    wait(&out_rx, &mut out);
    wait(&err_rx, &mut err);
    if out.is_none() {
        return Err(format!(
            "tool `{key}` exited, but a process it started outside its process group kept its output open"
        ));
    }
    let status = status.unwrap_or_else(|| child.wait().unwrap_or_default());
    let (stdout, _) = out.unwrap_or_default();
    let (stderr, _) = err.unwrap_or_default();
    if out_too_large(&stdout) {
        return Err(format!(
            "tool `{key}` printed more than {} MiB: output too large",
            MAX_OUTPUT_BYTES >> 20
        ));
    }
    if !status.success() {
        let tail = String::from_utf8_lossy(&stderr);
        let tail = tail.trim();
        let tail = crate::live::redact::tail(tail, 500);
        return Err(format!(
            "tool `{key}` exited with {status}{}{tail}",
            if tail.is_empty() { "" } else { ": " }
        ));
    }
    serde_json::from_slice(&stdout).map_err(|e| {
        format!(
            "tool `{key}` printed output that is not JSON ({e}): {}",
            crate::live::redact::head(&String::from_utf8_lossy(&stdout), 200)
        )
    })
}

fn out_too_large(stdout: &[u8]) -> bool {
    stdout.len() > MAX_OUTPUT_BYTES
}

#[cfg(test)]
mod tests {
    use super::super::*;
    use serde_json::json;
    use std::time::{Duration, Instant};

    /// The bindings of a `--tools` file with this text, relative to the working folder.
    fn bindings(yaml: &str) -> ToolBindings {
        ToolBindings::parse(yaml, Path::new(".")).unwrap()
    }

    #[cfg(unix)]
    #[test]
    fn a_command_gets_a_clean_environment() {
        let b = bindings(
            r#"tools:
  env: {command: [sh, -c, 'cat >/dev/null; env | cut -d= -f1 | sort | tr "\n" " " | sed "s/^/\"/; s/ $/\"/"'], env: {MODE: test}}
"#,
        );
        let names = b
            .call("env", &json!({}), &TransportConfig::default())
            .unwrap();
        let names: Vec<&str> = names.as_str().unwrap().split(' ').collect();
        // What the shell adds itself (PWD, SHLVL, `_`), the base and the binding's own:
        // nothing of the test's environment (CARGO_*, RUST_*, ...) gets through.
        for n in &names {
            assert!(
                ["PATH", "HOME", "LANG", "TMPDIR", "MODE", "PWD", "SHLVL", "_", "OLDPWD"]
                    .contains(n),
                "{n} leaked into the tool: {names:?}"
            );
        }
        assert!(
            names.contains(&"MODE") && names.contains(&"PATH"),
            "{names:?}"
        );
    }

    /// Whether process `pid` (a number in text) still runs: gone, or a zombie waiting
    /// for its reaper, is not running; waits up to five seconds for it to go.
    fn outlives_its_kill(pid: &str) -> bool {
        let stat = format!("/proc/{}/stat", pid.trim());
        let deadline = Instant::now() + Duration::from_secs(5);
        let alive = || {
            std::fs::read_to_string(&stat).is_ok_and(|s| {
                s.rsplit(')')
                    .next()
                    .is_some_and(|r| !r.trim_start().starts_with('Z'))
            })
        };
        while alive() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        alive()
    }

    /// Calls tool `t`, bound to `sh -c SCRIPT` with `timeout_sec`, in a scratch folder,
    /// `cancel` set after `cancel_after`; returns the result, how long the call took, and
    /// whether the process whose pid the script wrote to `child.pid` outlived the call.
    #[cfg(unix)]
    fn group_call(
        script: &str,
        timeout_sec: f64,
        cancel_after: Option<Duration>,
    ) -> (Result<Value, String>, Duration, bool) {
        let tmp = tempfile::tempdir().unwrap();
        let yaml = format!(
            "tools:\n  t: {{command: [sh, -c, {}], timeout_sec: {timeout_sec}}}\n",
            json!(script)
        );
        let b = ToolBindings::parse(&yaml, tmp.path()).unwrap();
        let cancel = std::sync::Arc::new(AtomicBool::new(false));
        if let Some(after) = cancel_after {
            let flag = cancel.clone();
            std::thread::spawn(move || {
                std::thread::sleep(after);
                flag.store(true, std::sync::atomic::Ordering::SeqCst);
            });
        }
        let started = Instant::now();
        let r = b.call_via("t", &json!({}), &TransportConfig::default(), None, &cancel);
        let took = started.elapsed();
        let pid = std::fs::read_to_string(tmp.path().join("child.pid")).unwrap();
        (r, took, outlives_its_kill(&pid))
    }

    /// A command that answered and exited is done: what it left running (here holding
    /// its stdout open) is killed then, not waited for until the timeout.
    #[cfg(unix)]
    #[test]
    fn a_background_child_holding_stdout_does_not_hold_up_the_call() {
        let (r, took, survived) =
            group_call("sleep 30 & echo $! > child.pid; echo '{}'", 20.0, None);
        assert_eq!(r, Ok(json!({})));
        assert!(took < Duration::from_secs(3), "{took:?}");
        assert!(!survived, "the child survived");
    }

    /// Setting the cancel flag (Ctrl-C) stops a running command and its whole group at
    /// once.
    #[cfg(unix)]
    #[test]
    fn cancelling_kills_the_whole_process_group() {
        let script = "sleep 30 & echo $! > child.pid; sleep 60";
        let (r, took, survived) = group_call(script, 60.0, Some(Duration::from_millis(300)));
        assert_eq!(
            r,
            Err("tool `t` was stopped: the run was interrupted".into())
        );
        assert!(took < Duration::from_secs(5), "{took:?}");
        assert!(!survived, "the grandchild survived");
    }

    #[cfg(unix)]
    #[test]
    fn the_deadline_kills_the_whole_process_group() {
        let (r, took, survived) = group_call("sleep 30 & echo $! > child.pid; sleep 60", 0.5, None);
        let e = r.unwrap_err();
        assert!(e.contains("timed out"), "{e}");
        assert!(took < Duration::from_secs(3), "{took:?}");
        assert!(!survived, "the grandchild survived the deadline");
    }

    #[cfg(unix)]
    #[test]
    fn a_gigabyte_of_output_is_output_too_large() {
        let b = bindings(
            "tools:\n  big: {command: [sh, -c, 'head -c 1000000000 /dev/zero'], timeout_sec: 60}\n",
        );
        let started = Instant::now();
        let e = b
            .call("big", &json!({}), &TransportConfig::default())
            .unwrap_err();
        assert!(e.contains("output too large"), "{e}");
        assert!(!e.contains("141") && !e.contains("signal"), "{e}");
        assert!(started.elapsed() < Duration::from_secs(20));
    }

    #[test]
    fn a_tools_error_text_is_redacted_of_its_env_values() {
        let b = bindings("tools:\n  leak: {command: [sh, -c, 'echo \"token is $TOKEN\" >&2; exit 1'], env: {TOKEN: tok-5ecret-value}}\n");
        let e = b
            .call("leak", &json!({}), &TransportConfig::default())
            .unwrap_err();
        assert!(e.ends_with("token is [redacted]"), "{e}");
    }

    #[test]
    fn commands_answer_errors_and_time_out() {
        let b = bindings("tools:\n  echo: {command: [sh, -c, cat]}\n  fail: {command: [sh, -c, 'echo broken >&2; exit 3']}\n  text: {command: [sh, -c, 'echo hello']}\n  slow: {command: [sh, -c, 'sleep 5'], timeout_sec: 0.2}\n");
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
