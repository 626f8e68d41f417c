"""Type stubs of ``packc._packc``, the native half of ``packc``.

The Python half (``packc/_errors.py``, ``packc/_drivers.py``) carries its own types.
"""

import os
from typing import (
    Any,
    Awaitable,
    Callable,
    Dict,
    Iterable,
    List,
    Literal,
    Mapping,
    Optional,
    Sequence,
    Type,
    Union,
    final,
    overload,
)

from packc._errors import RunError

__all__ = [
    "__version__",
    "COMPILER_VERSION",
    "Diagnostic",
    "Artifact",
    "check",
    "compile",
    "Program",
    "Run",
    "Need",
    "Call",
    "Outcome",
    "CaseResult",
    "LiveResult",
    "run_case",
    "run_live",
    "Batch",
]

__version__: str
COMPILER_VERSION: str

#: A JSON-shaped Python value: dict (or any other Mapping with str keys), list, tuple (or
#: any other Sequence but bytes), str, int, float, bool or None.
_Json = Any
#: What ``Call.kind`` can be.
_CallKind = Literal["model", "tool", "guard", "extension"]
_StrPath = Union[str, "os.PathLike[str]"]

@final
class Diagnostic:
    """One compiler finding, located in the source."""

    def __new__(
        cls,
        kind: str,
        severity: Literal["error", "warning", "note"],
        message: str,
        file: str,
        line: Optional[int] = None,
        column: Optional[int] = None,
        pointer: Optional[str] = None,
        help: Optional[str] = None,
    ) -> Diagnostic: ...

    @property
    def kind(self) -> str: ...
    @property
    def severity(self) -> Literal["error", "warning", "note"]: ...
    @property
    def message(self) -> str: ...
    @property
    def file(self) -> str: ...
    @property
    def line(self) -> Optional[int]: ...
    @property
    def column(self) -> Optional[int]: ...
    @property
    def pointer(self) -> Optional[str]: ...
    @property
    def help(self) -> Optional[str]: ...

def check(
    path: Optional[_StrPath] = None,
    *,
    text: Optional[str] = None,
    format: Optional[Literal["yaml", "json"]] = None,
    spec_level: Optional[str] = None,
    base_dir: Optional[_StrPath] = None,
) -> List[Diagnostic]:
    """Every error and warning of a pack (a file, or ``text=``), in source order.

    ``format="json"`` requires strict JSON, ``format="yaml"`` reads YAML 1.2; left out, a
    file named ``*.json`` is strict JSON (as ``packc check`` reads it) and anything else
    YAML 1.2. ``output_schema`` files are read from ``base_dir``, by default the file's
    folder; for ``text=`` they are looked up only when ``base_dir`` is given."""

def compile(
    path: Optional[_StrPath] = None,
    *,
    text: Optional[str] = None,
    format: Optional[Literal["yaml", "json"]] = None,
    spec_level: Optional[str] = None,
    base_dir: Optional[_StrPath] = None,
) -> Artifact:
    """Checks and lowers a pack; raises :class:`CompileError` when it has errors. Each
    warning of a pack that compiles is a ``UserWarning``
    (``file:line:column: warning[kind]: message``); ``compile(text=...)`` without
    ``base_dir=`` also warns naming the ``output_schema`` files it did not read."""

@final
class Artifact:
    """A compiled pack: what a ``.ppk`` file holds."""

    @property
    def module_id(self) -> str: ...
    def to_bytes(self) -> bytes:
        """The ``.ppk`` bytes."""
    @staticmethod
    def from_bytes(data: bytes, *, max_bytes: Optional[int] = None) -> Artifact:
        """Decodes and verifies ``.ppk`` bytes; raises :class:`ArtifactError`."""
    def inspect(self) -> Dict[str, Any]:
        """The header, the targets, each prompt's validators, the static call bounds and the governance (the pack's and each agent member's), as plain dicts."""

@final
class Need:
    """What a run needs next."""

    CALLS: Need
    WAIT: Need
    CLOCK: Need
    CALLER: Need
    DONE: Need
    def __eq__(self, other: object, /) -> bool: ...
    def __hash__(self) -> int: ...

@final
class Outcome:
    """How a run ended without error. Pickles, and compares equal by its fields."""

    def __new__(cls, output: _Json, state: Optional[str] = None) -> Outcome: ...

    @property
    def output(self) -> _Json: ...
    @property
    def state(self) -> Optional[str]: ...

@final
class Call:
    """One outstanding host call; read its fields before answering it."""

    @property
    def id(self) -> int: ...
    @property
    def kind(self) -> _CallKind: ...
    @property
    def prompt_task(self) -> Optional[str]: ...
    @property
    def tool(self) -> Optional[str]: ...
    @property
    def provider(self) -> Optional[str]: ...
    @property
    def branch(self) -> Optional[int]: ...
    @property
    def input(self) -> _Json: ...
    @property
    def system(self) -> str: ...
    @property
    def history(self) -> List[Dict[str, Any]]: ...
    @property
    def offered_tools(self) -> List[Dict[str, Any]]: ...
    @property
    def output_schema(self) -> Optional[Dict[str, Any]]: ...
    @property
    def events(self) -> List[str]: ...
    @property
    def parameters(self) -> Optional[Dict[str, Any]]: ...
    @property
    def guard(self) -> Optional[Dict[str, Any]]: ...
    @property
    def extension(self) -> Optional[Dict[str, Any]]: ...

@final
class Run:
    """One run of a program, driven by the host."""

    @overload
    def resume(self) -> Need: ...
    @overload
    def resume(self, *, turn: _Json) -> Need: ...
    @overload
    def resume(self, *, event: str) -> Need: ...
    @overload
    def resume(self, *, finish: Literal[True]) -> Need: ...
    @overload
    def resume(self, *, clock: int) -> Need: ...
    def answer(
        self,
        call: Union[Call, int],
        *,
        output: _Json = None,
        tool_calls: Optional[Sequence[Any]] = None,
        event: Optional[str] = None,
        error: Optional[str] = None,
    ) -> Need:
        """Answers an outstanding call: a :class:`Call` of this run, or its id. A ``Call``
        of another run raises :class:`ProtocolError` (ids start at 0 in every run)."""
    @property
    def pending(self) -> List[Call]: ...
    @property
    def next_call(self) -> Optional[Call]: ...
    @property
    def issued(self) -> List[Call]: ...
    @property
    def outcome(self) -> Optional[Outcome]: ...
    @property
    def waiting_for(self) -> Optional[Need]: ...
    @property
    def caller_events(self) -> List[str]:
        """The events the caller may send now: while the run waits for the caller in a
        workflow state the caller drives, that state's event names; else empty. Any other
        event ends the run (``InvalidEvent``, or ``TerminalState``)."""
    @property
    def finished(self) -> bool: ...
    @property
    def error(self) -> Optional[RunError]:
        """The error that ended the run, as ``resume`` or ``answer`` raised it; ``None``
        while it runs and when it finished with an output."""
    @property
    def trace(self) -> List[str]: ...
    @property
    def calls(self) -> List[Dict[str, Any]]: ...
    def snapshot(self) -> bytes: ...

@final
class Program:
    """A checked module, shared by runs and threads.

    The limits of ``start`` and ``restore`` (``max_host_calls``, ``max_value_bytes``, …)
    are ints from 0; a negative one raises ``ValueError``."""

    def __new__(cls, artifact: Artifact) -> Program: ...
    def start(
        self,
        target: str = "workflow",
        *,
        variables: Optional[Mapping[str, _Json]] = None,
        record_calls: bool = False,
        max_host_calls: Optional[int] = None,
        max_value_bytes: Optional[int] = None,
        max_value_depth: Optional[int] = None,
        max_snapshot_bytes: Optional[int] = None,
        max_built_bytes: Optional[int] = None,
    ) -> Run: ...
    def restore(
        self,
        data: bytes,
        *,
        variables: Optional[Mapping[str, _Json]] = None,
        record_calls: bool = False,
        max_host_calls: Optional[int] = None,
        max_value_bytes: Optional[int] = None,
        max_value_depth: Optional[int] = None,
        max_snapshot_bytes: Optional[int] = None,
        max_built_bytes: Optional[int] = None,
    ) -> Run: ...

@final
class CaseResult:
    """A conformance case's verdict. Pickles, and compares equal by its fields."""

    def __new__(cls, path: str, passed: bool, failures: List[str] = ...) -> CaseResult: ...

    @property
    def path(self) -> str: ...
    @property
    def passed(self) -> bool: ...
    @property
    def failures(self) -> List[str]: ...
    def __bool__(self) -> bool: ...

def run_case(
    path: _StrPath, *, check_snapshots: bool = False, allow_paths: Optional[Sequence[_StrPath]] = None
) -> CaseResult:
    """Runs a conformance-format case file as ``packc test`` does.

    A case's ``pack_file`` is read only from the case's folder, the current folder or a
    folder of ``allow_paths`` (``packc test --allow-path``).

    A file that cannot be read raises ``OSError`` (``FileNotFoundError`` for a missing
    one), as :func:`check` and :func:`compile` do."""

@final
class LiveResult:
    """A live run's result. Pickles, and compares equal by its fields."""

    def __new__(
        cls,
        output: _Json,
        state: Optional[str] = None,
        trace: List[str] = ...,
        model_calls: int = 0,
        tool_calls: int = 0,
        tokens: int = 0,
    ) -> LiveResult: ...

    @property
    def output(self) -> _Json: ...
    @property
    def state(self) -> Optional[str]: ...
    @property
    def trace(self) -> List[str]: ...
    @property
    def model_calls(self) -> int: ...
    @property
    def tool_calls(self) -> int: ...
    @property
    def tokens(self) -> int: ...

def run_live(
    artifact: Artifact,
    input: _Json = None,
    *,
    model: str,
    provider: Literal["openai"] = "openai",
    base_url: Optional[str] = None,
    api_key: Optional[str] = None,
    api_key_env: str = "OPENAI_API_KEY",
    tools: Union[_StrPath, Mapping[str, Any], None] = None,
    target: str = "workflow",
    variables: Optional[Mapping[str, _Json]] = None,
    timeout: float = 120.0,
    retries: int = 3,
    concurrency: int = 4,
) -> LiveResult:
    """Runs an artifact with the Rust live host, the GIL released.

    ``concurrency`` is how many threads carry calls at once (at most 256; threads start
    as calls go out, so a pack making one call at a time uses one). ``timeout`` is in
    seconds, at most 86400. Out-of-range values raise ``ValueError``. The key is
    ``api_key``, else the variable ``api_key_env``; the default one, ``OPENAI_API_KEY``,
    is read only when the calls go to api.openai.com."""

@final
class Batch:
    """The batch engine of ``packc batch``: blocks of rows, one run each, many in flight.

    ``concurrency`` and ``tool_concurrency`` (calls in flight) are at most 100000,
    ``threads`` at most 256, ``timeout`` at most 86400 seconds; more raises
    ``ValueError``, as does a negative int. A ``Batch`` made before a fork works in the
    child: the child's first use starts an engine of its own."""

    def __new__(
        cls,
        artifact: Artifact,
        *,
        model: str,
        provider: Literal["openai"] = "openai",
        base_url: Optional[str] = None,
        api_key: Optional[str] = None,
        api_key_env: str = "OPENAI_API_KEY",
        tools: Union[_StrPath, Mapping[str, Any], None] = None,
        target: str = "workflow",
        variables: Optional[Mapping[str, _Json]] = None,
        input_schema: Optional[Mapping[str, Any]] = None,
        timeout: float = 120.0,
        retries: int = 3,
        concurrency: int = 64,
        rows_in_flight: int = 0,
        tool_concurrency: int = 16,
        rpm: Optional[int] = None,
        tpm: Optional[int] = None,
        threads: int = 0,
    ) -> Batch: ...
    def run(self, rows: Iterable[_Json]) -> List[Dict[str, Any]]:
        """One result dict per row, in order: ``id``, ``output`` or ``error``, ``calls``, ``tokens``, ``wall_ms``.

        A row's ``id`` is its ``id`` member when that is a str or a number, else its
        position from 1. ``rows`` is a list (or any iterable) of rows: a dict, a str or
        bytes raises ``TypeError``.

        After :meth:`cancel`, still one per row: a row that did not finish has
        ``{"error": {"kind": "cancelled", "message": ...}}``."""
    def cancel(self) -> None:
        """Stops the block running now (from another thread); ``run`` returns at once."""
    @property
    def progress(self) -> Dict[str, int]: ...
