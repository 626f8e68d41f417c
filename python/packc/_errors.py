"""The exceptions of ``packc``.

Every error of a run is an instance of a :class:`RunError` subclass chosen by its
``kind``, the stable name of the conformance suite (``host_error``,
``budget_exhausted``, ...). :data:`RUN_ERRORS` is the one table from kind to class.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, List, Tuple, Type

if TYPE_CHECKING:
    from ._packc import Diagnostic


class PackcError(Exception):
    """Base class of every exception packc raises for bad input or a failed run."""


class CompileError(PackcError):
    """A pack with errors. ``diagnostics`` lists them; ``str()`` is the rendered report."""

    def __init__(self, report: str, diagnostics: List["Diagnostic"]) -> None:
        super().__init__(report)
        self.report = report
        self.diagnostics = diagnostics

    def __str__(self) -> str:
        return self.report

    def __reduce__(self) -> Tuple[Any, ...]:
        # Pickled whole (a process pool or Ray sends it back to the caller).
        return (type(self), (self.report, self.diagnostics))


class ArtifactError(PackcError, ValueError):
    """Bytes that are not a valid ``.ppk`` artifact (bad magic, checksum, tables...)."""


class SnapshotError(PackcError, ValueError):
    """Snapshot bytes that cannot be restored (damaged, of another module or format)."""


class RunError(PackcError):
    """A run-time error. ``kind`` is its conformance kind, ``message`` what happened.

    The run has ended, except after a :class:`ProtocolError` (the run is as it was) and
    a :class:`LimitExceeded` refusing a caller's turn or event (the run still waits for
    the caller); :attr:`Run.finished` says which.
    """

    kind: str = "run_error"

    def __init__(self, message: str, kind: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        if kind is not None:
            self.kind = kind

    def __str__(self) -> str:
        return f"{self.kind}: {self.message}"

    def __reduce__(self) -> Tuple[Any, ...]:
        return (type(self), (self.message, self.kind))


class HostError(RunError):
    """A host call failed (``host_error``)."""

    kind = "host_error"


class UnresolvedBinding(RunError):
    """A ``${...}`` reference names nothing at run time (``unresolved_binding``)."""

    kind = "unresolved_binding"


class RunTypeError(RunError):
    """A value has the wrong type where it is used (``type_error``)."""

    kind = "type_error"


class InvalidEvent(RunError):
    """An event the current state does not accept (``invalid_event``)."""

    kind = "invalid_event"


class TerminalState(RunError):
    """A turn or event after the workflow reached a terminal state (``terminal_state``)."""

    kind = "terminal_state"


class MaxVisitsExceeded(RunError):
    """A state entered more often than its ``max_visits`` (``max_visits_exceeded``)."""

    kind = "max_visits_exceeded"


class BudgetExhausted(RunError):
    """A workflow budget ran out (``budget_exhausted``)."""

    kind = "budget_exhausted"


class AgentStepLimit(RunError):
    """An agent step used up its ``max_steps`` (``agent_step_limit``)."""

    kind = "agent_step_limit"


class InvalidVariable(RunError):
    """A template variable is missing or invalid (``invalid_variable``)."""

    kind = "invalid_variable"


class NoOutput(RunError):
    """A composition ended without an output (``no_output``)."""

    kind = "no_output"


class LimitExceeded(RunError):
    """An embedder's limit was passed (``limit_exceeded``); the message names it. A turn
    or event past the value limits is refused and the run keeps waiting for the caller;
    past any other limit, the run has ended."""

    kind = "limit_exceeded"


class GuardrailBlocked(RunError):
    """A validator fired on a structured answer (one with an ``output_schema``, or JSON),
    where no text can be substituted (``guardrail_blocked``); a ``retry`` modifier retries
    it like a host error."""

    kind = "guardrail_blocked"


class ProtocolError(RunError):
    """The host broke the protocol (``protocol``); the run is left exactly as it was."""

    kind = "protocol"


class InvalidTarget(ProtocolError):
    """A target the program does not have (``invalid_target``): the message lists the
    ones it has. A caller's misuse, so it is also a :class:`ProtocolError`."""

    kind = "invalid_target"


class InvalidModule(RunError):
    """A module that fails the VM's checks when a program is made from it
    (``invalid_module``)."""

    kind = "invalid_module"


class InternalError(RunError):
    """The VM broke one of its own promises (``internal``): a bug to report, with the pack."""

    kind = "internal"


RUN_ERRORS: Dict[str, Type[RunError]] = {
    cls.kind: cls
    for cls in (
        HostError,
        UnresolvedBinding,
        RunTypeError,
        InvalidEvent,
        TerminalState,
        MaxVisitsExceeded,
        BudgetExhausted,
        AgentStepLimit,
        InvalidVariable,
        NoOutput,
        LimitExceeded,
        GuardrailBlocked,
        ProtocolError,
        InvalidTarget,
        InvalidModule,
        InternalError,
    )
}


# Shown as `packc.HostError`, where users import them from.
for _cls in (PackcError, CompileError, ArtifactError, SnapshotError, RunError, *RUN_ERRORS.values()):
    _cls.__module__ = "packc"


def run_error(kind: str, message: str) -> RunError:
    """The exception for a VM error of ``kind`` (a plain :class:`RunError` for a kind
    this table does not know yet)."""
    cls = RUN_ERRORS.get(kind)
    if cls is None:
        return RunError(message, kind)
    return cls(message)
