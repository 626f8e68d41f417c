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
//! 18      N     body, postcard: the run's `State` (`run.rs`)
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

use ir_spec::{CompId, StepId};

use crate::api::Target;
use crate::config::Config;
use crate::hash::fnv;
use crate::job::{Call, Job, Lane, Phase, TEntry};
use crate::options::RunOptions;
use crate::program::Program;
use crate::run::Run;
use crate::state::{State, Top};
use crate::trace::{At, EvalRec, TraceEvent};

pub use crate::hash::fingerprint;

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
        let limit = self.config.limits.max_snapshot_bytes;
        self.write_snapshot(limit)
            .ok_or(SnapshotError::TooLarge { limit })
    }

    /// The snapshot, or `None` past `max` bytes.
    fn write_snapshot(&self, max: usize) -> Option<Vec<u8>> {
        let mut out = Vec::with_capacity(256);
        out.extend_from_slice(&MAGIC);
        out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        out.extend_from_slice(&self.prog.fingerprint().to_le_bytes());
        // The body holds strings, integers and sequences of known length only: writing
        // fails only past the limit.
        let max_body = max.checked_sub(TRAILER)?;
        let mut out =
            postcard::serialize_with_flavor(&self.state, Capped { out, max: max_body }).ok()?;
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
        let (state, rest) = postcard::take_from_bytes::<State>(body_bytes).map_err(decode)?;
        if !rest.is_empty() {
            return Err(SnapshotError::Decode(format!(
                "{} bytes after the body",
                rest.len()
            )));
        }
        let run = Run {
            config: Config::new(options, program.budget(state.workflow_run)),
            prog: program,
            state,
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
    let w = &run.state.walk;
    if w.slots.len() != n || w.flags.len() != n {
        return Err("the walk's tables do not fit the program");
    }
    if run.state.wf.visits.len() != n_states || run.state.wf.artifacts.len() != n_artifacts {
        return Err("the workflow's tables do not fit the program");
    }
    let target_ok = match run.state.target {
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
    let top_ok = match run.state.top {
        Top::StatePrompt(s) | Top::StateComp(s) => state_ok(s),
        Top::Transition(mv) => state_ok(mv.from) && state_ok(mv.to),
        Top::CompTarget(c) => c.index() < m.compositions.len(),
        Top::PlainAgent(p) => p.index() < m.prompts.len(),
        _ => true,
    };
    // Call ids are issued in order: every waiting lane's id is below the next one. A
    // tool call of a model's turn names a request that exists, in the block the loop is
    // handling (a damaged snapshot could name any; fuzzing found it).
    let loop_ok = |l: &Lane| match l.phase {
        Phase::Issue(_, Call::LoopTool { block, req, .. })
        | Phase::Waiting(_, Call::LoopTool { block, req, .. }) => {
            block == l.lp.block
                && matches!(l.lp.transcript.get(block as usize),
                    Some(TEntry::Requests(reqs)) if (req as usize) < reqs.len())
        }
        _ => true,
    };
    let lanes_ok = run.state.lanes.iter().all(|l| {
        !matches!(l.phase, Phase::Waiting(c, _) if c.0 >= run.state.io.next_id) && loop_ok(l)
    });
    if !(target_ok && comp_ok && top_ok && lanes_ok && run.state.wf.current.is_none_or(state_ok)) {
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
    let lane_ok = |l: &Lane| match l.job {
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
                    At::Step(c, s) => step_ok(c, s),
                    At::State(s) => state_ok(s),
                    At::Prompt(p) => p.index() < m.prompts.len(),
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
    let eval_ok = |e: &EvalRec| {
        step_ok(e.comp, e.step)
            && !m.compositions[e.comp.index()].steps[e.step.index()]
                .evals
                .is_empty()
    };
    if !(run.state.lanes.iter().all(lane_ok)
        && run.state.lanes.len() <= run.prog.max_lanes
        && run.state.io.trace.iter().all(|(_, e)| trace_ok(e))
        && run.state.io.evals.iter().all(|(_, e)| eval_ok(e)))
    {
        return Err("a step, state or event does not fit the program");
    }
    Ok(())
}
