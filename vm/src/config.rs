//! [`Config`]: what a run is given once and never changes, beside its program: the
//! embedder's options it keeps and the pack's budget. Not saved in a snapshot: a
//! restored run takes the restorer's options.

use ir_spec::Budget;

use crate::limits::Limits;
use crate::options::RunOptions;

/// A run's configuration, set at [`Run::new`](crate::Run::new) or
/// [`Run::restore_with`](crate::Run::restore_with).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Config {
    /// Keep the call log ([`RunOptions::record_calls`]).
    pub record_calls: bool,
    /// [`RunOptions::max_host_calls`].
    pub max_host_calls: Option<u64>,
    /// The embedder's limits on values handed in, built text and snapshots.
    pub limits: Limits,
    /// The workflow budget; `None` outside workflow runs (`workflow.md` §10).
    pub budget: Option<Budget>,
}

impl Config {
    /// The configuration of a run under `options` with the pack's `budget`.
    // Inlined so that `Run::new` builds this part in place rather than copying it.
    #[inline]
    pub fn new(options: &RunOptions, budget: Option<Budget>) -> Config {
        Config {
            record_calls: options.record_calls,
            max_host_calls: options.max_host_calls,
            limits: Limits::of(options),
            budget,
        }
    }
}
