//! Snapshots: a run saved to bytes between two resumes and restored later, from the same
//! program plus the bytes.
//!
//! The run's state is explicit data (no suspended futures), so a snapshot is that state
//! itself, written with postcard: the top-level position, the composition walk and its
//! output slots, the lanes with their loop transcripts, the workflow counters, the log.
//! JSON values are written as compact JSON text (postcard cannot carry a
//! `serde_json::Value`). Restoring decodes it; nothing is replayed, so a snapshot costs
//! O(state), not O(history).
//!
//! ```text
//! offset  size  field
//! 0       8     magic: 89 50 50 53 0D 0A 1A 0A  ("\x89PPS\r\n\x1a\n", "packc state")
//! 8       2     snapshot format version (u16), FORMAT_VERSION
//! 10      8     module fingerprint (u64): FNV-1a 64 of the module's postcard bytes
//! 18      N     body, postcard (`Body`)
//! end-8   8     FNV-1a 64 of every byte before it
//! ```
//!
//! The body carries the run's state only: the target, the host variables and what the
//! run did. The limits, `max_host_calls` and `record_calls` are the embedder's and are
//! not in it: [`Run::restore_with`] takes them from the restorer's [`RunOptions`]
//! ([`Run::restore`]: the defaults), so a snapshot cannot switch a limit off. Restore
//! reads at most the options' `max_snapshot_bytes`, and decoding allocates no more than
//! the bytes justify. Format 3 snapshots, which did carry the options, still load; the
//! options they hold are read and ignored.
//!
//! The fingerprint and the checksum catch mistakes (another module, a damaged file), not
//! an adversary: a snapshot is as trusted as the answers it holds.

use std::sync::Arc;

use ir_spec::Module;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::api::{RunError, Target};
use ir_spec::{CompId, StepId};

use crate::api::RunOptions;
use crate::lane::{Call, Job, Lane, Phase, TEntry};
use crate::limits::Limits;
use crate::program::Program;
use crate::run::{Run, Top, Walk, Wf};
use crate::trace::Io;
use crate::trace::TraceEvent;

/// The eight bytes every snapshot starts with.
pub const MAGIC: [u8; 8] = *b"\x89PPS\r\n\x1a\n";

/// The snapshot format version this VM writes and reads; other versions are refused.
/// (2: the body carries the run's value and snapshot limits; 3: and `max_built_bytes`,
/// and one eval record per step completion; 4: each model call record carries its
/// provider key, and the body no longer carries the run's options (limits,
/// `max_host_calls`, `record_calls`), which restore takes from the embedder, so a
/// snapshot cannot raise or lift them.) Older snapshots are refused rather than read:
/// their call records lack the provider, and their module fingerprint predates the
/// spec level.
pub const FORMAT_VERSION: u16 = 4;

const HEADER: usize = 8 + 2 + 8;
const TRAILER: usize = 8;

/// Why a snapshot cannot be restored.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SnapshotError {
    /// The bytes do not start with [`MAGIC`].
    #[error("not a packc run snapshot (bad magic)")]
    BadMagic,
    /// Another format version.
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
    /// The checksum does not match.
    #[error("the snapshot is damaged (checksum mismatch)")]
    Checksum,
    /// The snapshot was taken of a run of another module.
    #[error("the snapshot belongs to another module (fingerprint {found:016x}, this module {expected:016x})")]
    OtherModule {
        /// The fingerprint of the program given to restore.
        expected: u64,
        /// The fingerprint in the snapshot.
        found: u64,
    },
    /// The body does not decode, or does not fit the program.
    #[error("the snapshot body does not decode: {0}")]
    Decode(String),
    /// The snapshot is (or would be) larger than the limit: the run's
    /// [`RunOptions::max_snapshot_bytes`](crate::RunOptions::max_snapshot_bytes) when
    /// writing, the restorer's when reading.
    #[error("the snapshot is larger than the limit of {limit} bytes (`max_snapshot_bytes`)")]
    TooLarge {
        /// The limit.
        limit: usize,
    },
}

/// The postcard body: the run's state.
#[derive(Serialize, Deserialize)]
struct Body {
    target: Target,
    #[serde(with = "map_text")]
    host_vars: Map<String, Value>,
    workflow_run: bool,
    top: Top,
    #[serde(with = "value_text")]
    input: Value,
    wf: Wf,
    walk: Walk,
    lanes: Vec<Lane>,
    io: Io,
}

/// FNV-1a, 64 bits: tiny and stable across platforms and Rust versions.
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

/// The module's fingerprint: FNV-1a 64 of its postcard encoding, hashed as written.
pub fn fingerprint(module: &Module) -> u64 {
    // Postcard fails only on a full fixed buffer (this flavor has none), on sequences of
    // unknown length (the IR has none) and on custom errors (the IR's JSON values are
    // written as text, which cannot fail).
    postcard::serialize_with_flavor(&(module, &module.spec, module.guards()), Fnv::new())
        .unwrap_or(0)
}

/// A postcard flavor appending to a `Vec` that refuses to grow past `max` bytes, so a
/// snapshot over the limit stops being written as soon as it passes it.
struct Capped {
    out: Vec<u8>,
    max: usize,
}

impl postcard::ser_flavors::Flavor for Capped {
    type Output = Vec<u8>;

    fn try_extend(&mut self, data: &[u8]) -> postcard::Result<()> {
        if self.out.len().saturating_add(data.len()) > self.max {
            return Err(postcard::Error::SerializeBufferFull);
        }
        self.out.extend_from_slice(data);
        Ok(())
    }

    fn try_push(&mut self, data: u8) -> postcard::Result<()> {
        self.try_extend(&[data])
    }

    fn finalize(self) -> postcard::Result<Vec<u8>> {
        Ok(self.out)
    }
}

impl Run {
    /// Saves the run to bytes, between two resumes, whatever their size (see
    /// [`Run::try_snapshot`] for a snapshot within the run's limit).
    pub fn snapshot(&self) -> Vec<u8> {
        self.write_snapshot(usize::MAX).unwrap_or_default()
    }

    /// Saves the run to bytes, or fails with [`SnapshotError::TooLarge`] when they would
    /// be larger than the run's
    /// [`RunOptions::max_snapshot_bytes`](crate::RunOptions::max_snapshot_bytes): writing
    /// stops as soon as it passes the limit. The run is not changed either way.
    pub fn try_snapshot(&self) -> Result<Vec<u8>, SnapshotError> {
        let limit = self.limits.max_snapshot_bytes;
        self.write_snapshot(limit)
            .ok_or(SnapshotError::TooLarge { limit })
    }

    /// The snapshot, or `None` past `max` bytes.
    fn write_snapshot(&self, max: usize) -> Option<Vec<u8>> {
        let body = Body {
            target: self.target,
            host_vars: self.host_vars.clone(),
            workflow_run: self.workflow_run,
            top: self.top,
            input: self.input.clone(),
            wf: self.wf.clone(),
            walk: self.walk.clone(),
            lanes: self.lanes.clone(),
            io: self.io.clone(),
        };
        let mut out = Vec::with_capacity(256);
        out.extend_from_slice(&MAGIC);
        out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        out.extend_from_slice(&self.prog.fingerprint().to_le_bytes());
        // The body holds strings, integers and sequences of known length only: writing
        // fails only past the limit.
        let max_body = max.checked_sub(TRAILER)?;
        let mut out = postcard::serialize_with_flavor(&body, Capped { out, max: max_body }).ok()?;
        let sum = fnv(&out);
        out.extend_from_slice(&sum.to_le_bytes());
        Some(out)
    }

    /// Continues a run saved by [`Run::snapshot`], given the program it ran, under the
    /// default [`RunOptions`]: [`Run::restore_with`] with `RunOptions::default()`.
    pub fn restore(program: Arc<Program>, bytes: &[u8]) -> Result<Run, SnapshotError> {
        Run::restore_with(program, bytes, &RunOptions::default())
    }

    /// [`Run::restore`] under the default options, refusing more than `max_bytes` bytes
    /// with [`SnapshotError::TooLarge`] before reading any.
    pub fn restore_with_limit(
        program: Arc<Program>,
        bytes: &[u8],
        max_bytes: usize,
    ) -> Result<Run, SnapshotError> {
        let options = RunOptions {
            max_snapshot_bytes: max_bytes,
            ..RunOptions::default()
        };
        Run::restore_with(program, bytes, &options)
    }

    /// Continues a run saved by [`Run::snapshot`], given the program it ran and the
    /// embedder's options. The snapshot holds the run's state (the target, the host
    /// variables, what the run did); the limits, `max_host_calls` and `record_calls`
    /// come from `options`, whatever the run that wrote the snapshot had, and
    /// `options.host_variables` is not read (the run keeps the ones it started with).
    /// The call cap counts the calls made before the snapshot too.
    ///
    /// Bytes that are not an intact snapshot of a run of this program are an error,
    /// never a panic; so are more than `options.max_snapshot_bytes`
    /// ([`SnapshotError::TooLarge`], before any is read). The memory a restore takes is
    /// bounded by the bytes given.
    pub fn restore_with(
        program: Arc<Program>,
        bytes: &[u8],
        options: &RunOptions,
    ) -> Result<Run, SnapshotError> {
        let max_bytes = options.max_snapshot_bytes;
        if bytes.len() > max_bytes {
            return Err(SnapshotError::TooLarge { limit: max_bytes });
        }
        if bytes.len() < MAGIC.len() || bytes[..MAGIC.len()] != MAGIC {
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
        let expected = program.fingerprint();
        if found != expected {
            return Err(SnapshotError::OtherModule { expected, found });
        }
        let decode = |e: postcard::Error| SnapshotError::Decode(e.to_string());
        let body_bytes = &bytes[HEADER..end];
        let (body, rest) = postcard::take_from_bytes::<Body>(body_bytes).map_err(decode)?;
        if !rest.is_empty() {
            return Err(SnapshotError::Decode(format!(
                "{} bytes after the body",
                rest.len()
            )));
        }
        let run = Run {
            budget: program.budget(body.workflow_run),
            prog: program,
            target: body.target,
            host_vars: body.host_vars,
            record_calls: options.record_calls,
            max_host_calls: options.max_host_calls,
            limits: Limits::of(options),
            workflow_run: body.workflow_run,
            top: body.top,
            input: body.input,
            wf: body.wf,
            walk: body.walk,
            lanes: body.lanes,
            io: body.io,
        };
        check_fits(&run).map_err(|m| SnapshotError::Decode(m.to_owned()))?;
        Ok(run)
    }
}

/// The decoded state's tables have the program's sizes and its indices are in range.
fn check_fits(run: &Run) -> Result<(), &'static str> {
    let m = &run.prog.m;
    let n = run.prog.max_steps;
    let n_states = m.workflow.as_ref().map_or(0, |w| w.states.len());
    let n_artifacts = m.workflow.as_ref().map_or(0, |w| w.artifacts.len());
    let w = &run.walk;
    if w.slots.len() != n || w.flags.len() != n {
        return Err("the walk's tables do not fit the program");
    }
    if run.wf.visits.len() != n_states || run.wf.artifacts.len() != n_artifacts {
        return Err("the workflow's tables do not fit the program");
    }
    let target_ok = match run.target {
        Target::Workflow => m.workflow.is_some(),
        Target::Agent(a) => a.index() < m.agents.len(),
        Target::Composition(c) => c.index() < m.compositions.len(),
    };
    let comp_ok = w.id.is_none_or(|c| {
        c.index() < m.compositions.len() && {
            let steps = m.compositions[c.index()].steps.len();
            w.active.is_none_or(|s| s.index() < steps) && w.last.is_none_or(|s| s.index() < steps)
        }
    });
    let state_ok = |s: ir_spec::StateId| s.index() < n_states;
    let top_ok = match run.top {
        Top::StatePrompt(s) | Top::StateComp(s) => state_ok(s),
        Top::Transition { from, to, .. } => state_ok(from) && state_ok(to),
        Top::CompTarget(c) => c.index() < m.compositions.len(),
        Top::PlainAgent(p) => p.index() < m.prompts.len(),
        _ => true,
    };
    // Call ids are issued in order: every waiting lane's id is below the next one. A
    // tool call of a model's turn names a request that exists, in the block the loop is
    // handling (a damaged snapshot could name any; fuzzing found it).
    let loop_ok = |l: &crate::lane::Lane| match l.phase {
        Phase::Issue(_, Call::LoopTool { block, req, .. })
        | Phase::Waiting(_, Call::LoopTool { block, req, .. }) => {
            block == l.lp.block
                && matches!(l.lp.transcript.get(block as usize),
                    Some(TEntry::Requests(reqs)) if (req as usize) < reqs.len())
        }
        _ => true,
    };
    let lanes_ok = run
        .lanes
        .iter()
        .all(|l| !matches!(l.phase, Phase::Waiting(c, _) if c.0 >= run.io.next_id) && loop_ok(l));
    if !(target_ok && comp_ok && top_ok && lanes_ok && run.wf.current.is_none_or(state_ok)) {
        return Err("an index does not fit the program");
    }
    // Every step a lane, a trace entry or an eval request names is a step of its
    // composition; every event of a transition is one of the module's.
    let step_ok = |c: CompId, s: StepId| {
        m.compositions
            .get(c.index())
            .is_some_and(|comp| s.index() < comp.steps.len())
    };
    let running = |s: StepId| w.id.is_some_and(|c| step_ok(c, s));
    let lane_ok = |l: &crate::lane::Lane| match l.job {
        Job::Step(s) => running(s),
        Job::Prompt { prompt, events } => {
            prompt.index() < m.prompts.len() && events.is_none_or(state_ok)
        }
    };
    let trace_ok = |e: &TraceEvent| match *e {
        TraceEvent::Enter(s) => state_ok(s),
        TraceEvent::Step(c, s) | TraceEvent::Skip(c, s) | TraceEvent::Retry(c, s, _) => {
            step_ok(c, s)
        }
        TraceEvent::Branch(c, s, t) => step_ok(c, s) && t.is_none_or(|t| step_ok(c, t)),
        TraceEvent::Guardrail { prompt, guard, at } => {
            m.prompts
                .get(prompt.index())
                .is_some_and(|p| (guard as usize) < p.guards.len())
                && match at {
                    crate::trace::At::Step(c, s) => step_ok(c, s),
                    crate::trace::At::State(s) => state_ok(s),
                    crate::trace::At::Prompt(p) => p.index() < m.prompts.len(),
                }
        }
        TraceEvent::Transition {
            from,
            to,
            event,
            redirected,
        } => {
            state_ok(from)
                && state_ok(to)
                && event.index() < m.events.len()
                && redirected.is_none_or(state_ok)
        }
    };
    let eval_ok = |e: &crate::trace::EvalRec| {
        step_ok(e.comp, e.step)
            && !m.compositions[e.comp.index()].steps[e.step.index()]
                .evals
                .is_empty()
    };
    if !(run.lanes.iter().all(lane_ok)
        && run.lanes.len() <= run.prog.max_lanes
        && run.io.trace.iter().all(|(_, e)| trace_ok(e))
        && run.io.evals.iter().all(|(_, e)| eval_ok(e)))
    {
        return Err("a step, state or event does not fit the program");
    }
    Ok(())
}

/// `Value` as JSON text.
pub(crate) mod value_text {
    use super::*;
    use serde::{de::Error as _, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &Value, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&v.to_string())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Value, D::Error> {
        let text = <&str>::deserialize(d)?;
        serde_json::from_str(text).map_err(D::Error::custom)
    }
}

/// A JSON object as text.
pub(crate) mod map_text {
    use super::*;
    use serde::{de::Error as _, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &Map<String, Value>, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&Value::Object(v.clone()).to_string())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Map<String, Value>, D::Error> {
        let text = <&str>::deserialize(d)?;
        serde_json::from_str(text).map_err(D::Error::custom)
    }
}

/// A `Serialize`/`Deserialize` wrapper writing a `Value` as text, for containers.
#[derive(Serialize, Deserialize)]
struct T(#[serde(with = "value_text")] Value);

/// `Option<Value>` as optional text.
pub(crate) mod opt_value_text {
    use super::*;
    use serde::{Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &Option<Value>, s: S) -> Result<S::Ok, S::Error> {
        v.as_ref().map(|v| T(v.clone())).serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
        Ok(Option::<T>::deserialize(d)?.map(|t| t.0))
    }
}

/// Output slots.
pub(crate) mod slots_text {
    use super::*;
    use serde::{Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &[Option<Value>], s: S) -> Result<S::Ok, S::Error> {
        let items: Vec<Option<T>> = v.iter().map(|v| v.as_ref().map(|v| T(v.clone()))).collect();
        items.serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Option<Value>>, D::Error> {
        Ok(Vec::<Option<T>>::deserialize(d)?
            .into_iter()
            .map(|t| t.map(|t| t.0))
            .collect())
    }
}

/// Tool requests.
pub(crate) mod requests_text {
    use super::*;
    use crate::api::ToolRequest;
    use serde::{Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &[ToolRequest], s: S) -> Result<S::Ok, S::Error> {
        let items: Vec<(&str, T)> = v
            .iter()
            .map(|r| (r.name.as_str(), T(r.args.clone())))
            .collect();
        items.serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<ToolRequest>, D::Error> {
        Ok(Vec::<(String, T)>::deserialize(d)?
            .into_iter()
            .map(|(name, args)| ToolRequest { name, args: args.0 })
            .collect())
    }
}

/// A lane's result.
pub(crate) mod opt_result_text {
    use super::*;
    use serde::{Deserializer, Serializer};

    pub fn serialize<S: Serializer>(
        r: &Option<Result<Value, RunError>>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        r.as_ref()
            .map(|r| r.as_ref().map(|v| T(v.clone())).map_err(Clone::clone))
            .serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<Result<Value, RunError>>, D::Error> {
        Ok(Option::<Result<T, RunError>>::deserialize(d)?.map(|r| r.map(|t| t.0)))
    }
}

#[derive(Serialize, Deserialize)]
enum SnapRecord {
    Model {
        prompt: String,
        input: T,
        system: String,
        provider: Option<String>,
    },
    Tool {
        tool: String,
        args: T,
    },
    Guardrail {
        validator: String,
        at: String,
        action: crate::GuardAction,
        length: u64,
    },
    Guard {
        validator: String,
        params: T,
        text: String,
    },
    Extension {
        extension: String,
        input: T,
        params: T,
    },
}

/// The call log.
pub(crate) mod calls_text {
    use super::*;
    use crate::api::CallRecord;
    use crate::trace::Tag;
    use serde::{Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &[(Tag, CallRecord)], s: S) -> Result<S::Ok, S::Error> {
        let items: Vec<(Tag, SnapRecord)> = v
            .iter()
            .map(|(t, r)| {
                (
                    *t,
                    match r {
                        CallRecord::Model {
                            prompt,
                            input,
                            system,
                            provider,
                        } => SnapRecord::Model {
                            prompt: prompt.clone(),
                            input: T(input.clone()),
                            system: system.clone(),
                            provider: provider.clone(),
                        },
                        CallRecord::Tool { tool, args } => SnapRecord::Tool {
                            tool: tool.clone(),
                            args: T(args.clone()),
                        },
                        CallRecord::Guardrail {
                            validator,
                            at,
                            action,
                            length,
                        } => SnapRecord::Guardrail {
                            validator: validator.clone(),
                            at: at.clone(),
                            action: *action,
                            length: *length,
                        },
                        CallRecord::Guard {
                            validator,
                            params,
                            text,
                        } => SnapRecord::Guard {
                            validator: validator.clone(),
                            params: T(params.clone()),
                            text: text.clone(),
                        },
                        CallRecord::Extension {
                            extension,
                            input,
                            params,
                        } => SnapRecord::Extension {
                            extension: extension.clone(),
                            input: T(input.clone()),
                            params: T(params.clone()),
                        },
                    },
                )
            })
            .collect();
        items.serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Vec<(Tag, CallRecord)>, D::Error> {
        Ok(Vec::<(Tag, SnapRecord)>::deserialize(d)?
            .into_iter()
            .map(|(t, r)| {
                (
                    t,
                    match r {
                        SnapRecord::Model {
                            prompt,
                            input,
                            system,
                            provider,
                        } => CallRecord::Model {
                            prompt,
                            input: input.0,
                            system,
                            provider,
                        },
                        SnapRecord::Tool { tool, args } => CallRecord::Tool { tool, args: args.0 },
                        SnapRecord::Guardrail {
                            validator,
                            at,
                            action,
                            length,
                        } => CallRecord::Guardrail {
                            validator,
                            at,
                            action,
                            length,
                        },
                        SnapRecord::Guard {
                            validator,
                            params,
                            text,
                        } => CallRecord::Guard {
                            validator,
                            params: params.0,
                            text,
                        },
                        SnapRecord::Extension {
                            extension,
                            input,
                            params,
                        } => CallRecord::Extension {
                            extension,
                            input: input.0,
                            params: params.0,
                        },
                    },
                )
            })
            .collect())
    }
}

#[derive(Serialize, Deserialize)]
enum SnapArtifact {
    Value(T),
    List(Vec<T>),
}

/// Artifact values.
pub(crate) mod artifacts_text {
    use super::*;
    use crate::render::Artifact;
    use serde::{Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &[Option<Artifact>], s: S) -> Result<S::Ok, S::Error> {
        let items: Vec<Option<SnapArtifact>> = v
            .iter()
            .map(|a| {
                a.as_ref().map(|a| match a {
                    Artifact::Value(v) => SnapArtifact::Value(T(v.clone())),
                    Artifact::List(l) => SnapArtifact::List(l.iter().cloned().map(T).collect()),
                })
            })
            .collect();
        items.serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Option<Artifact>>, D::Error> {
        Ok(Vec::<Option<SnapArtifact>>::deserialize(d)?
            .into_iter()
            .map(|a| {
                a.map(|a| match a {
                    SnapArtifact::Value(t) => Artifact::Value(t.0),
                    SnapArtifact::List(l) => Artifact::List(l.into_iter().map(|t| t.0).collect()),
                })
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv_matches_the_reference_vectors() {
        assert_eq!(fnv(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv(b"a"), 0xaf63_dc4c_8601_ec8c);
    }
}
