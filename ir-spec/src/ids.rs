//! Typed indices into the tables of a [`Module`](crate::Module).
//!
//! Each table has its own index type, so a [`StepId`] can never index the state table
//! by mistake. An index is only meaningful for the module that produced it.

use serde::{Deserialize, Serialize};

macro_rules! typed_ids {
    ($( $(#[$doc:meta])* $name:ident; )*) => {$(
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        pub struct $name(pub u32);

        impl $name {
            /// The index as a `usize`, for indexing the table it belongs to.
            pub fn index(self) -> usize {
                self.0 as usize
            }

            /// The id of the `i`-th table entry; `None` when `i` does not fit a `u32`.
            pub fn from_index(i: usize) -> Option<Self> {
                u32::try_from(i).ok().map(Self)
            }
        }
    )*};
}

typed_ids! {
    /// An entry of [`Module::strings`](crate::Module::strings), the interned string table.
    StrId;
    /// An entry of [`Module::prompts`](crate::Module::prompts): one key of the pack's `prompts`.
    PromptId;
    /// An entry of [`Module::tools`](crate::Module::tools): one key of the pack's `tools`.
    ToolId;
    /// An entry of [`Workflow::states`](crate::Workflow::states): one key of `workflow.states`.
    StateId;
    /// An entry of [`Module::events`](crate::Module::events): one event name used in an `on_event`.
    EventId;
    /// An entry of [`Workflow::artifacts`](crate::Workflow::artifacts): one workflow-wide artifact name.
    ArtifactId;
    /// An entry of [`Module::agents`](crate::Module::agents): one key of `agents.members`.
    AgentId;
    /// An entry of [`Module::compositions`](crate::Module::compositions): one key of `compositions`.
    CompId;
    /// An entry of [`Composition::steps`](crate::Composition::steps): one step of one
    /// composition, top-level or nested in a parallel. It is also the index of the step's
    /// output slot while the composition runs.
    StepId;
}
