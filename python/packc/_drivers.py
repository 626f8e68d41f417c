"""Drivers: run a :class:`packc.Run` to the end with host functions answering.

:func:`drive` answers with plain callables, one call at a time (the lowest parallel
branch first, as the conformance runner does). :func:`drive_async` awaits async host
functions and issues every outstanding call at once: the branches of a parallel step
run concurrently, and each answer is fed back as it arrives.

A host function gets the :class:`packc.Call` and returns the call's output as a plain
value, or an :class:`Answer` for anything else (tool requests, an event, an error).
Raising :class:`CallFailed` fails the call (an ``error`` answer, which the VM treats as
the host failing: a ``retry`` may ask again); any other exception stops the driver
and propagates.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from typing import Any, Awaitable, Callable, Dict, Iterable, Iterator, Mapping, Optional, Tuple, Union

from ._errors import ProtocolError
from ._packc import Call, Need, Outcome, Run


class Answer:
    """A host function's answer, when it is more than an output value.

    Exactly one of: ``output`` (with, for a prompt state, the ``event`` it names),
    ``tool_calls`` (a model asking for tools: ``[{"name": key, "args": {...}}]``),
    or ``error`` (the call failed, with this message).
    """

    __slots__ = ("output", "event", "tool_calls", "error")

    def __init__(
        self,
        output: Any = None,
        *,
        event: Optional[str] = None,
        tool_calls: Optional[Iterable[Any]] = None,
        error: Optional[str] = None,
    ) -> None:
        self.output = output
        self.event = event
        self.tool_calls = None if tool_calls is None else list(tool_calls)
        self.error = error

    def __repr__(self) -> str:
        if self.error is not None:
            return f"Answer(error={self.error!r})"
        if self.tool_calls is not None:
            return f"Answer(tool_calls={self.tool_calls!r})"
        if self.event is not None:
            return f"Answer({self.output!r}, event={self.event!r})"
        return f"Answer({self.output!r})"


class CallFailed(Exception):
    """Raised by a host function: the call fails with this message (an ``error`` answer)."""


HostFn = Callable[[Call], Any]
AsyncHostFn = Callable[[Call], Union[Any, Awaitable[Any]]]
ScriptItem = Mapping[str, Any]


def _handler(call: Call, handlers: Mapping[str, Optional[Callable[[Call], Any]]]) -> Callable[[Call], Any]:
    """The host function for a call, by ``call.kind`` (the one place kinds map to
    driver arguments)."""
    fn = handlers.get(call.kind)
    if fn is None:
        what = {
            "tool": call.tool,
            "guard": (call.guard or {}).get("type"),
            "extension": (call.extension or {}).get("kind"),
        }.get(call.kind, call.prompt_task)
        raise TypeError(
            f"the run made a {call.kind} call ({what!r}) but the driver got no {call.kind}= function"
        )
    return fn


def _feed(run: Run, call: Call, result: Any) -> Need:
    """Hands a host function's result to the run."""
    if isinstance(result, Answer):
        return run.answer(
            call,
            output=result.output,
            event=result.event,
            tool_calls=result.tool_calls,
            error=result.error,
        )
    return run.answer(call, output=result)


class _Unset:
    """The default of ``input=``: no input given (``None`` is a JSON ``null`` turn)."""

    def __repr__(self) -> str:
        return "<no input>"


_UNSET: Any = _Unset()


def _items(run: Run, input: Any, script: Optional[Iterable[ScriptItem]]) -> Iterator[Tuple[str, Any]]:
    """The caller's turns for a drive of ``run``: both ``input`` and ``script`` is a
    ``TypeError``; given neither, a run in the middle of a turn finishes once that turn
    ends, and any other run does one turn with ``None``."""
    if script is not None and input is not _UNSET:
        raise TypeError("drive takes input= (one turn) or script= (turns and events), not both")
    if script is None and input is _UNSET and run.waiting_for in (Need.CALLS, Need.WAIT, Need.CLOCK):
        return _script(None, [])
    return _script(None if input is _UNSET else input, script)


def _script(input: Any, script: Optional[Iterable[ScriptItem]]) -> Iterator[Tuple[str, Any]]:
    """The caller's turns: ``script`` (``{"turn": value}`` / ``{"event": name}`` items,
    as in a case file), else one turn with ``input``."""
    if script is None:
        yield ("turn", input)
        return
    for i, item in enumerate(script):
        if "turn" in item:
            yield ("turn", item["turn"])
        elif "event" in item:
            yield ("event", item["event"])
        else:
            raise ValueError(f"script[{i}] is neither {{'turn': ...}} nor {{'event': ...}}")


def _caller(run: Run, items: Iterator[Tuple[str, Any]]) -> Need:
    item = next(items, None)
    if item is None:
        return run.resume(finish=True)
    if item[0] == "turn":
        return run.resume(turn=item[1])
    return run.resume(event=item[1])


def _clock(clock: Optional[Callable[[], int]], started: float) -> int:
    if clock is not None:
        return int(clock())
    return int((time.monotonic() - started) * 1000)


def _first_need(run: Run) -> Need:
    """Starts ``run``, or picks it up where it waits (restored, or left partway). A run
    that has ended is refused: its input would be dropped, and its old outcome returned
    as if it were the new one's."""
    need = run.waiting_for
    if need == Need.DONE:
        raise ProtocolError(
            "the run has already ended (its outcome is run.outcome): start a new run to drive"
        )
    return run.resume() if need is None else need


def drive(
    run: Run,
    *,
    model: Optional[HostFn] = None,
    tool: Optional[HostFn] = None,
    guard: Optional[HostFn] = None,
    extension: Optional[HostFn] = None,
    input: Any = _UNSET,
    script: Optional[Iterable[ScriptItem]] = None,
    clock: Optional[Callable[[], int]] = None,
) -> Outcome:
    """Runs ``run`` to the end and returns its :class:`packc.Outcome`.

    ``model`` answers model calls, ``tool`` tool calls, ``guard`` host validators'
    calls (return ``{"pass": bool}``) and ``extension`` extension steps' calls (each
    gets the :class:`packc.Call`). The caller does one turn with ``input``, or the ``script``
    (``[{"turn": value}, {"event": "name"}, ...]``), then finishes. ``clock`` returns
    milliseconds (default: time since the drive started). A failed run raises its
    :class:`packc.RunError`. A run already started (restored from a snapshot, or left
    by a drive whose host function raised) is picked up where it waits
    (:attr:`packc.Run.waiting_for`): a turn under way ends first, then the caller does
    ``input`` or ``script``; with neither, a run in the middle of a turn finishes once it
    ends, and a run waiting for its caller does one turn with ``None``. Giving both ``input`` and ``script``
    raises ``TypeError``; a run that has ended raises :class:`packc.ProtocolError`.
    """
    handlers = {"model": model, "tool": tool, "guard": guard, "extension": extension}
    items = _items(run, input, script)
    started = time.monotonic()
    need = _first_need(run)
    while True:
        if need == Need.DONE:
            outcome = run.outcome
            assert outcome is not None
            return outcome
        if need == Need.CLOCK:
            need = run.resume(clock=_clock(clock, started))
        elif need == Need.CALLER:
            need = _caller(run, items)
        else:
            call = run.next_call
            if call is None:
                raise ProtocolError("the run waits, but no call is outstanding")
            fn = _handler(call, handlers)
            try:
                result = fn(call)
            except CallFailed as e:
                result = Answer(error=str(e))
            need = _feed(run, call, result)


async def _call_async(fn: AsyncHostFn, call: Call) -> Any:
    try:
        result = fn(call)
        if inspect.isawaitable(result):
            result = await result
    except CallFailed as e:
        return Answer(error=str(e))
    return result


async def drive_async(
    run: Run,
    *,
    model: Optional[AsyncHostFn] = None,
    tool: Optional[AsyncHostFn] = None,
    guard: Optional[AsyncHostFn] = None,
    extension: Optional[AsyncHostFn] = None,
    input: Any = _UNSET,
    script: Optional[Iterable[ScriptItem]] = None,
    clock: Optional[Callable[[], int]] = None,
) -> Outcome:
    """Runs ``run`` to the end, awaiting async host functions, and returns its outcome.

    Every outstanding call is started at once as its own task (the branches of a
    parallel step run concurrently), and each answer is fed back as it arrives, one at
    a time. Host functions may be ``async def`` or plain functions. Otherwise as
    :func:`drive`. If a host function raises (other than :class:`CallFailed`) or the run
    fails, the calls still in flight are cancelled and the exception propagates.
    """
    handlers = {"model": model, "tool": tool, "guard": guard, "extension": extension}
    items = _items(run, input, script)
    started = time.monotonic()
    inflight: Dict[int, Tuple[Call, "asyncio.Future[Any]"]] = {}
    try:
        need = _first_need(run)
        while True:
            if need == Need.DONE:
                outcome = run.outcome
                assert outcome is not None
                return outcome
            if need == Need.CLOCK:
                need = run.resume(clock=_clock(clock, started))
                continue
            if need == Need.CALLER:
                need = _caller(run, items)
                continue
            for call in run.pending:
                if call.id not in inflight:
                    fn = _handler(call, handlers)
                    inflight[call.id] = (call, asyncio.ensure_future(_call_async(fn, call)))
            if not inflight:
                raise ProtocolError("the run waits, but no call is outstanding")
            await asyncio.wait([f for _, f in inflight.values()], return_when=asyncio.FIRST_COMPLETED)
            # One answer per resume; the others that finished are picked up next time round.
            first = min(i for i, (_, f) in inflight.items() if f.done())
            call, fut = inflight.pop(first)
            need = _feed(run, call, fut.result())
    finally:
        for _, fut in inflight.values():
            fut.cancel()
