//! Snapshots: a run saved to bytes between two resumes and restored later, possibly on
//! another machine, from the same module plus the bytes.
//!
//! # Design: a replay log
//!
//! The live state of a run is mostly the state of suspended `async` functions (see
//! `exec`), which Rust cannot serialize. But a run is deterministic: its module, its
//! target and options, and the inputs handed to [`Run::resume`] fix everything it does,
//! down to the call ids (the VM reads no clock and draws no randomness). So a snapshot
//! records exactly that, and [`Run::restore`] builds a fresh run and hands it the same
//! inputs again. Each input is stored with a summary of what its `resume` returned (the
//! ids of the calls it issued, or which other [`Need`], or the error kind
//! that ended the run); the replay must reproduce every summary, so a snapshot restored
//! against a VM that behaves differently is refused rather than silently continued.
//! Inputs the run refused (protocol errors that leave it as it was) are not recorded.
//!
//! Cost: a run keeps a copy of every input it accepted, so its memory grows with the
//! answers it has seen; [`Run::snapshot`] is O(inputs so far) in time and size, and
//! [`Run::restore`] re-executes the run so far (O(inputs so far), without any host I/O).
//! Long-lived runs (many caller turns) pay for their whole history on each restore.
//!
//! # Bytes
//!
//! All integers are little-endian.
//!
//! ```text
//! offset  size  field
//! 0       8     magic: 89 50 50 52 0D 0A 1A 0A  ("\x89PPR\r\n\x1a\n", "packc run")
//! 8       2     snapshot format version (u16), FORMAT_VERSION
//! 10      8     module fingerprint (u64): FNV-1a 64 of the module's postcard bytes
//! 18      N     body, postcard: target, host variables, max_host_calls, the input log
//! end-8   8     FNV-1a 64 of every byte before it
//! ```
//!
//! In the body, JSON values (turn inputs, answers, tool arguments, host variables) are
//! compact JSON text, as in `ir_spec` (postcard cannot carry a `serde_json::Value`).
//! The fingerprint and the checksum catch mistakes (another module, a damaged file), not
//! an adversary: a snapshot is as trusted as the answers it replays.

use std::sync::Arc;

use ir_spec::{AgentId, CompId, Module};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::api::{Answer, CallId, ErrorKind, Input, Need, RunError, Target, ToolRequest};
use crate::run::{Run, RunOptions};

/// The eight bytes every snapshot starts with (the `.ppk` magic's shape, `PPR` for "packc
/// run").
pub const MAGIC: [u8; 8] = *b"\x89PPR\r\n\x1a\n";

/// The snapshot format version this VM writes and reads. Any change to the body's layout
/// or to what a replay must reproduce bumps it; other versions are refused.
pub const FORMAT_VERSION: u16 = 1;

const HEADER: usize = 8 + 2 + 8;
const TRAILER: usize = 8;

/// Why a snapshot cannot be restored.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SnapshotError {
    /// The bytes do not start with [`MAGIC`].
    #[error("not a packc run snapshot (bad magic)")]
    BadMagic,
    /// The snapshot was written in another format version.
    #[error("snapshot format {found} is not the one this VM reads ({supported})")]
    Version {
        /// The version in the snapshot.
        found: u16,
        /// [`FORMAT_VERSION`].
        supported: u16,
    },
    /// The bytes end before the header and trailer do.
    #[error("the snapshot is truncated ({len} bytes)")]
    Truncated {
        /// How many bytes there were.
        len: usize,
    },
    /// The checksum does not match: the bytes were damaged or cut.
    #[error("the snapshot is damaged (checksum mismatch)")]
    Checksum,
    /// The snapshot was taken of a run of another module.
    #[error("the snapshot belongs to another module (fingerprint {found:016x}, this module {expected:016x})")]
    OtherModule {
        /// The fingerprint of the module given to restore.
        expected: u64,
        /// The fingerprint in the snapshot.
        found: u64,
    },
    /// The body does not decode (bad postcard or bad JSON text).
    #[error("the snapshot body does not decode: {0}")]
    Decode(String),
    /// The recorded target and options do not start a run of this module.
    #[error("the snapshot's run cannot start: {0}")]
    Start(RunError),
    /// Replaying recorded input `index` did not give the recorded result.
    #[error(
        "replaying input {index} diverged from the recorded run: expected {expected}, got {found}"
    )]
    Diverged {
        /// The 0-based index of the input in the log.
        index: usize,
        /// What the recorded run returned.
        expected: String,
        /// What the replay returned.
        found: String,
    },
}

/// What one `resume` returned, as recorded beside its input and checked on replay.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) enum Step {
    /// [`Need::Calls`], by call id.
    Calls(Vec<CallId>),
    /// [`Need::Wait`].
    Wait,
    /// [`Need::Clock`].
    Clock,
    /// [`Need::Caller`].
    Caller,
    /// [`Need::Done`].
    Done,
    /// The run ended with an error of this kind.
    Failed(ErrorKind),
}

impl Step {
    pub fn of(result: &Result<Need, RunError>) -> Step {
        match result {
            Ok(Need::Calls(calls)) => Step::Calls(calls.iter().map(|c| c.id).collect()),
            Ok(Need::Wait) => Step::Wait,
            Ok(Need::Clock) => Step::Clock,
            Ok(Need::Caller) => Step::Caller,
            Ok(Need::Done(_)) => Step::Done,
            Err(e) => Step::Failed(e.kind),
        }
    }
}

/// The postcard body.
#[derive(Serialize, Deserialize)]
struct Body {
    target: SnapTarget,
    /// The host variables, a JSON object as text.
    host_variables: String,
    max_host_calls: Option<u64>,
    log: Vec<Logged>,
}

#[derive(Serialize, Deserialize)]
enum SnapTarget {
    Workflow,
    Agent(u32),
    Composition(u32),
}

#[derive(Serialize, Deserialize)]
struct Logged {
    input: SnapInput,
    step: Step,
}

/// [`Input`] with JSON values as text.
#[derive(Serialize, Deserialize)]
enum SnapInput {
    Start,
    Turn(String),
    Event(String),
    Finish,
    Answer(CallId, SnapAnswer),
    Clock(u64),
}

/// [`Answer`] with JSON values as text.
#[derive(Serialize, Deserialize)]
enum SnapAnswer {
    Output {
        output: String,
        event: Option<String>,
    },
    ToolCalls(Vec<(String, String)>),
    Error(String),
}

fn text(v: &Value) -> String {
    v.to_string()
}

fn parse(t: &str) -> Result<Value, SnapshotError> {
    serde_json::from_str(t).map_err(|e| SnapshotError::Decode(format!("bad JSON text: {e}")))
}

impl SnapInput {
    fn of(input: &Input) -> SnapInput {
        match input {
            Input::Start => SnapInput::Start,
            Input::Turn(v) => SnapInput::Turn(text(v)),
            Input::Event(e) => SnapInput::Event(e.clone()),
            Input::Finish => SnapInput::Finish,
            Input::Answer(id, a) => SnapInput::Answer(
                *id,
                match a {
                    Answer::Output { output, event } => SnapAnswer::Output {
                        output: text(output),
                        event: event.clone(),
                    },
                    Answer::ToolCalls(reqs) => SnapAnswer::ToolCalls(
                        reqs.iter()
                            .map(|r| (r.name.clone(), text(&r.args)))
                            .collect(),
                    ),
                    Answer::Error(e) => SnapAnswer::Error(e.clone()),
                },
            ),
            Input::Clock(ms) => SnapInput::Clock(*ms),
        }
    }

    fn into_input(self) -> Result<Input, SnapshotError> {
        Ok(match self {
            SnapInput::Start => Input::Start,
            SnapInput::Turn(t) => Input::Turn(parse(&t)?),
            SnapInput::Event(e) => Input::Event(e),
            SnapInput::Finish => Input::Finish,
            SnapInput::Answer(id, a) => Input::Answer(
                id,
                match a {
                    SnapAnswer::Output { output, event } => Answer::Output {
                        output: parse(&output)?,
                        event,
                    },
                    SnapAnswer::ToolCalls(reqs) => Answer::ToolCalls(
                        reqs.into_iter()
                            .map(|(name, args)| {
                                Ok(ToolRequest {
                                    name,
                                    args: parse(&args)?,
                                })
                            })
                            .collect::<Result<_, SnapshotError>>()?,
                    ),
                    SnapAnswer::Error(e) => Answer::Error(e),
                },
            ),
            SnapInput::Clock(ms) => Input::Clock(ms),
        })
    }
}

/// FNV-1a, 64 bits: tiny, stable across platforms and Rust versions (unlike `std`'s
/// `DefaultHasher`), and every single-byte change alters the result.
#[derive(Clone, Copy)]
struct Fnv(u64);

impl Fnv {
    const fn new() -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325)
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
}

impl postcard::ser_flavors::Flavor for Fnv {
    type Output = u64;

    fn try_extend(&mut self, data: &[u8]) -> postcard::Result<()> {
        self.write(data);
        Ok(())
    }

    fn try_push(&mut self, data: u8) -> postcard::Result<()> {
        self.write(&[data]);
        Ok(())
    }

    fn finalize(self) -> postcard::Result<u64> {
        Ok(self.0)
    }
}

fn fnv(bytes: &[u8]) -> u64 {
    let mut h = Fnv::new();
    h.write(bytes);
    h.0
}

/// The module's fingerprint: FNV-1a 64 of its postcard encoding, hashed as it is
/// written (no copy of the module is made).
pub fn fingerprint(module: &Module) -> u64 {
    // Postcard fails only on a full fixed buffer (this flavor has none), on sequences of
    // unknown length (the IR has none) and on custom errors (the IR's JSON values are
    // written as text, which cannot fail). So this never panics.
    postcard::serialize_with_flavor(module, Fnv::new())
        .expect("a module always encodes with postcard")
}

/// Writes the snapshot of a run with this state.
pub(crate) fn encode(
    fingerprint: u64,
    target: Target,
    host_variables: &Map<String, Value>,
    max_host_calls: Option<u64>,
    log: &[(Input, Step)],
) -> Vec<u8> {
    let body = Body {
        target: match target {
            Target::Workflow => SnapTarget::Workflow,
            Target::Agent(a) => SnapTarget::Agent(a.0),
            Target::Composition(c) => SnapTarget::Composition(c.0),
        },
        host_variables: text(&Value::Object(host_variables.clone())),
        max_host_calls,
        log: log
            .iter()
            .map(|(input, step)| Logged {
                input: SnapInput::of(input),
                step: step.clone(),
            })
            .collect(),
    };
    let mut out = Vec::with_capacity(HEADER + 64 * log.len() + TRAILER);
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    out.extend_from_slice(&fingerprint.to_le_bytes());
    // As in `fingerprint`: the body holds only strings, integers and sequences of known
    // length, so postcard cannot fail.
    let mut out = postcard::to_extend(&body, out).expect("a snapshot body always encodes");
    let sum = fnv(&out);
    out.extend_from_slice(&sum.to_le_bytes());
    out
}

/// Reads a snapshot and replays it on a fresh run of `module`.
pub(crate) fn restore(module: Arc<Module>, bytes: &[u8]) -> Result<Run, SnapshotError> {
    if bytes.len() < MAGIC.len() || bytes[..MAGIC.len()] != MAGIC {
        // A prefix of the magic is a cut snapshot, anything else a foreign file.
        return Err(if MAGIC.starts_with(bytes) {
            SnapshotError::Truncated { len: bytes.len() }
        } else {
            SnapshotError::BadMagic
        });
    }
    if bytes.len() < HEADER + TRAILER {
        return Err(SnapshotError::Truncated { len: bytes.len() });
    }
    let u64_at = |at: usize| {
        let mut b = [0u8; 8];
        b.copy_from_slice(&bytes[at..at + 8]);
        u64::from_le_bytes(b)
    };
    let version = u16::from_le_bytes([bytes[8], bytes[9]]);
    if version != FORMAT_VERSION {
        return Err(SnapshotError::Version {
            found: version,
            supported: FORMAT_VERSION,
        });
    }
    let end = bytes.len() - TRAILER;
    if fnv(&bytes[..end]) != u64_at(end) {
        return Err(SnapshotError::Checksum);
    }
    let found = u64_at(10);
    let expected = fingerprint(&module);
    if found != expected {
        return Err(SnapshotError::OtherModule { expected, found });
    }
    let decode = |e: postcard::Error| SnapshotError::Decode(e.to_string());
    let (body, rest) = postcard::take_from_bytes::<Body>(&bytes[HEADER..end]).map_err(decode)?;
    if !rest.is_empty() {
        return Err(SnapshotError::Decode(format!(
            "{} bytes after the body",
            rest.len()
        )));
    }
    let target = match body.target {
        SnapTarget::Workflow => Target::Workflow,
        SnapTarget::Agent(a) => Target::Agent(AgentId(a)),
        SnapTarget::Composition(c) => Target::Composition(CompId(c)),
    };
    let Value::Object(host_variables) = parse(&body.host_variables)? else {
        return Err(SnapshotError::Decode(
            "the host variables are not a JSON object".into(),
        ));
    };
    let options = RunOptions {
        host_variables,
        max_host_calls: body.max_host_calls,
    };
    let mut run = Run::new(module, target, options).map_err(SnapshotError::Start)?;
    run.set_fingerprint(expected);
    for (index, logged) in body.log.into_iter().enumerate() {
        let input = logged.input.into_input()?;
        let result = run.resume(input);
        let step = Step::of(&result);
        if step != logged.step {
            let found = match result {
                Err(e) => format!("error `{e}`"),
                Ok(_) => format!("{step:?}"),
            };
            return Err(SnapshotError::Diverged {
                index,
                expected: format!("{:?}", logged.step),
                found,
            });
        }
    }
    Ok(run)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv_matches_the_reference_vectors() {
        assert_eq!(fnv(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv(b"foobar"), 0x8594_4171_f739_67e8);
    }

    /// The body layout is a contract: a change shows up here and bumps [`FORMAT_VERSION`].
    #[test]
    fn logged_input_bytes_are_pinned() {
        let logged = Logged {
            input: SnapInput::of(&Input::Answer(
                CallId(3),
                Answer::Output {
                    output: serde_json::json!({"a": 1}),
                    event: None,
                },
            )),
            step: Step::Calls(vec![CallId(4)]),
        };
        let bytes = postcard::to_allocvec(&logged).expect("encodes");
        // Answer = variant 4, call id 3, Output = variant 0, 7 bytes of text, no event;
        // then Calls = variant 0, one id, 4.
        assert_eq!(
            bytes,
            [4, 3, 0, 7, b'{', b'"', b'a', b'"', b':', b'1', b'}', 0, 0, 1, 4]
        );
    }
}
