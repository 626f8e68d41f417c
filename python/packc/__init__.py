"""packc: compile PromptPacks and run them in the packc VM, from Python.

::

    import packc

    artifact = packc.compile("examples/rfc0010-ex2.pack.yaml")
    program = packc.Program(artifact)          # once; shared by runs and threads
    run = program.start("workflow")
    outcome = packc.drive(run, model=lambda call: {"type": "general"}, input={"text": "..."})

The front end (:func:`check`, :func:`compile`, :class:`Artifact`), the sans-IO VM
(:class:`Program`, :class:`Run`, :class:`Need`, :class:`Call`) and the Rust hosts
(:func:`run_case`, :func:`run_live`) and the batch engine (:class:`Batch`) are native; the drivers (:func:`drive`,
:func:`drive_async`) are plain Python over the VM's API.
"""

from ._packc import (
    COMPILER_VERSION,
    Artifact,
    Batch,
    Call,
    CaseResult,
    Diagnostic,
    LiveResult,
    Need,
    Outcome,
    Program,
    Run,
    __version__,
    check,
    compile,
    run_case,
    run_live,
)
from ._errors import (
    RUN_ERRORS,
    AgentStepLimit,
    ArtifactError,
    BudgetExhausted,
    CompileError,
    GuardrailBlocked,
    HostError,
    InternalError,
    InvalidEvent,
    InvalidModule,
    InvalidTarget,
    InvalidVariable,
    LimitExceeded,
    MaxVisitsExceeded,
    NoOutput,
    PackcError,
    ProtocolError,
    RunError,
    RunTypeError,
    SnapshotError,
    TerminalState,
    UnresolvedBinding,
)
from ._drivers import Answer, CallFailed, drive, drive_async

__all__ = [
    "COMPILER_VERSION",
    "RUN_ERRORS",
    "AgentStepLimit",
    "Answer",
    "Artifact",
    "ArtifactError",
    "Batch",
    "BudgetExhausted",
    "Call",
    "CallFailed",
    "CaseResult",
    "CompileError",
    "Diagnostic",
    "GuardrailBlocked",
    "HostError",
    "InternalError",
    "InvalidEvent",
    "InvalidModule",
    "InvalidTarget",
    "InvalidVariable",
    "LimitExceeded",
    "LiveResult",
    "MaxVisitsExceeded",
    "Need",
    "NoOutput",
    "Outcome",
    "PackcError",
    "Program",
    "ProtocolError",
    "Run",
    "RunError",
    "RunTypeError",
    "SnapshotError",
    "TerminalState",
    "UnresolvedBinding",
    "__version__",
    "check",
    "compile",
    "drive",
    "drive_async",
    "run_case",
    "run_live",
]
