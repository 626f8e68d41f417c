//! [`State`]: everything about a run that changes, in parts, saved and restored as it
//! is (a snapshot's body is this struct as postcard writes it, `snapshot.rs`); and
//! [`Top`], where the run is at the top level.

use ir_spec::{CompId, PromptId, StateId};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::api::Target;
use crate::config::Config;
use crate::ctx::Base;
use crate::job::Lane;
use crate::program::Program;
use crate::trace::Io;
use crate::walk::Walk;
use crate::workflow::{Move, Wf};

/// Where the run is, at the top level.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum Top {
    /// Before [`Input::Start`].
    NotStarted,
    /// A workflow run started and waits for the clock reading of its start time.
    StartClock,
    /// Waiting for the caller.
    Idle,
    /// A prompt state executes in lane 0.
    StatePrompt(StateId),
    /// A composition state's composition runs.
    StateComp(StateId),
    /// A transition waits for its clock reading (`workflow.md` §7 step 3).
    Transition(Move),
    /// A `composition:<name>` target's turn.
    CompTarget(CompId),
    /// A plain agent member's turn, in lane 0.
    PlainAgent(PromptId),
    /// The run ended without error.
    Done,
    /// The run ended with an error.
    Failed,
}

impl Top {
    /// The prompt state executing, when a prompt state is.
    #[inline]
    pub(crate) fn prompt_state(self) -> Option<StateId> {
        match self {
            Top::StatePrompt(s) => Some(s),
            _ => None,
        }
    }
}

/// A run's state, in parts each with its own file: where the top level is ([`Top`]),
/// the workflow's part ([`Wf`]), the composition walk ([`Walk`]), the lanes issuing host
/// calls ([`Lane`]), and the outstanding-call counters and the log ([`Io`]). The target,
/// the host variables and the turn input are set by the caller. A snapshot's body is
/// this struct, as postcard writes it (`snapshot`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct State {
    pub target: Target,
    #[serde(with = "crate::text::map_text")]
    pub host_vars: Map<String, Value>,
    /// A workflow run: the target is the workflow or a state-backed agent member.
    pub workflow_run: bool,
    pub top: Top,
    /// The current turn's input.
    #[serde(with = "crate::text::value_text")]
    pub input: Value,
    pub wf: Wf,
    pub walk: Walk,
    pub lanes: Vec<Lane>,
    pub io: Io,
}

/// The base of a run's lanes: its program and configuration, its turn `input`, its
/// host variables and the memory of its workflow part `wf`.
#[inline]
pub(crate) fn base<'a>(
    prog: &'a Program,
    config: &'a Config,
    input: &'a Value,
    host_vars: &'a Map<String, Value>,
    wf: &'a Wf,
) -> Base<'a> {
    Base {
        prog,
        config,
        input,
        host_vars,
        artifacts: &wf.artifacts,
        history: &wf.history,
        start_ms: wf.start_ms,
    }
}

impl State {
    /// The lanes' shared context, beside the parts the lanes and the walk change.
    #[inline]
    pub(crate) fn split<'a>(
        &'a mut self,
        prog: &'a Program,
        config: &'a Config,
    ) -> (Base<'a>, &'a mut Walk, &'a mut Vec<Lane>, &'a mut Io) {
        let State {
            host_vars,
            input,
            wf,
            walk,
            lanes,
            io,
            ..
        } = self;
        (base(prog, config, input, host_vars, wf), walk, lanes, io)
    }
}
