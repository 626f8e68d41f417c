"""Snapshots: in one process, and across processes (snapshot in one interpreter,
restore in a fresh one)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import pytest

import packc
from conftest import EX3_INPUT, PAPER, ex3_half_answered, ex3_model, ex3_tool

HERE = Path(__file__).resolve().parent


def finish(run: packc.Run) -> Dict[str, Any]:
    """Drives a run from wherever it is to the end, lowest branch first."""
    need = packc.Need.WAIT if run.pending else packc.Need.CALLER
    while need != packc.Need.DONE:
        if need == packc.Need.CALLER:
            need = run.resume(finish=True)
            continue
        call = min(run.pending, key=lambda c: (c.branch or 0, c.id))
        fn = ex3_model if call.kind == "model" else ex3_tool
        answer = fn(call)
        if isinstance(answer, packc.Answer):
            need = run.answer(call, tool_calls=answer.tool_calls)
        else:
            need = run.answer(call, output=answer)
    outcome = run.outcome
    assert outcome is not None
    return {"output": outcome.output, "state": outcome.state, "trace": run.trace, "calls": run.calls}


def uninterrupted(program: packc.Program) -> Dict[str, Any]:
    run = program.start(record_calls=True)
    run.resume()
    run.resume(turn=EX3_INPUT)
    return finish(run)


def test_restore_in_process_after_every_answer(ex3_program: packc.Program) -> None:
    expected = uninterrupted(ex3_program)
    run = ex3_program.start(record_calls=True)
    run.resume()
    need = run.resume(turn=EX3_INPUT)
    steps = 0
    while need != packc.Need.CALLER:
        run = ex3_program.restore(run.snapshot(), record_calls=True)
        call = min(run.pending, key=lambda c: (c.branch or 0, c.id))
        answer = (ex3_model if call.kind == "model" else ex3_tool)(call)
        if isinstance(answer, packc.Answer):
            need = run.answer(call, tool_calls=answer.tool_calls)
        else:
            need = run.answer(call, output=answer)
        steps += 1
    assert steps == 10
    assert finish(ex3_program.restore(run.snapshot(), record_calls=True)) == expected


SNAPSHOT_SIDE = textwrap.dedent(
    """
    import sys
    import packc
    from conftest import EX3, ex3_half_answered
    run = ex3_half_answered(packc.Program(packc.compile(EX3)))
    open(sys.argv[1], "wb").write(run.snapshot())
    print(sorted(c.id for c in run.pending))
    """
)

RESTORE_SIDE = textwrap.dedent(
    """
    import json, sys
    import packc
    from conftest import EX3
    from test_snapshot import finish
    program = packc.Program(packc.compile(EX3))
    run = program.restore(open(sys.argv[1], "rb").read(), record_calls=True)
    print(json.dumps({"pending": sorted(c.id for c in run.pending), "result": finish(run)}))
    """
)


def python(script: str, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", script, *args],
        cwd=HERE,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_snapshot_restored_in_a_fresh_interpreter_finishes_identically(
    tmp_path: Path, ex3_program: packc.Program
) -> None:
    # The same run, uninterrupted, but with the branches answered in the same order.
    expected = finish(ex3_half_answered(ex3_program))

    saved = tmp_path / "run.snapshot"
    outstanding = json.loads(python(SNAPSHOT_SIDE, str(saved)))
    assert len(outstanding) == 2
    restored = json.loads(python(RESTORE_SIDE, str(saved)))
    assert restored["pending"] == outstanding
    assert restored["result"] == expected
    assert restored["result"]["output"]["summary"] == "seen Sparse Attention for Long Documents"


def test_damaged_or_foreign_snapshots_raise_snapshot_error(
    ex2_program: packc.Program, ex3_program: packc.Program
) -> None:
    run = ex3_program.start()
    run.resume()
    run.resume(turn=EX3_INPUT)
    data = run.snapshot()
    with pytest.raises(packc.SnapshotError, match="cannot restore"):
        ex2_program.restore(data)
    for n in range(0, len(data), max(1, len(data) // 100)):
        with pytest.raises(packc.SnapshotError):
            ex3_program.restore(data[:n])
    flipped = bytearray(data)
    flipped[len(data) // 2] ^= 0x55
    try:
        other = ex3_program.restore(bytes(flipped))
    except packc.SnapshotError:
        pass
    else:  # a flip the format cannot see still gives a usable run
        assert isinstance(other.pending, list)
    with pytest.raises(packc.SnapshotError, match="cannot restore"):
        ex3_program.restore(data, max_snapshot_bytes=8)


def test_a_snapshot_past_its_limit_raises(ex2_program: packc.Program) -> None:
    run = ex2_program.start(max_snapshot_bytes=16)
    run.resume()
    run.resume(turn={"text": "x" * 100})
    with pytest.raises(packc.SnapshotError, match="cannot snapshot"):
        run.snapshot()
    # The run goes on.
    assert run.answer(run.pending[0], output=PAPER) == packc.Need.CALLS


def test_snapshot_of_a_finished_run_restores_finished(ex2_program: packc.Program) -> None:
    run = ex2_program.start()
    packc.drive(run, model=lambda c: PAPER if c.prompt_task == "doc_classifier" else [], input={"text": "t"})
    back = ex2_program.restore(run.snapshot())
    assert back.finished
    outcome = back.outcome
    assert outcome is not None and outcome.output == []
    assert back.trace == run.trace
    with pytest.raises(packc.ProtocolError):
        back.resume(turn={"text": "again"})




def test_drive_picks_up_a_started_or_restored_run(ex3_program: packc.Program) -> None:
    expected = uninterrupted(ex3_program)
    fresh = ex3_program.start()
    assert fresh.waiting_for is None
    half = ex3_half_answered(ex3_program)
    assert half.waiting_for == packc.Need.CALLS
    # Given no input= or script=, a run under way finishes once its turn ends, as with
    # script=[]; a new run does one turn.
    cases: List[Tuple[str, Optional[List[Dict[str, Any]]]]] = [
        ("drive", []),
        ("drive", None),
        ("drive_async", []),
        ("drive_async", None),
    ]
    for drive, script in cases:
        run = ex3_program.restore(half.snapshot(), record_calls=True)
        assert run.waiting_for == packc.Need.CALLS
        kw: Dict[str, Any] = {} if script is None else {"script": script}
        if drive == "drive":
            out = packc.drive(run, model=ex3_model, tool=ex3_tool, **kw)
        else:
            out = asyncio.run(packc.drive_async(run, model=ex3_model, tool=ex3_tool, **kw))
        assert run.waiting_for == packc.Need.DONE
        assert out.output == expected["output"], drive
        assert run.trace == expected["trace"], drive
    with pytest.raises(TypeError, match="not both"):
        packc.drive(fresh, model=ex3_model, tool=ex3_tool, input="x", script=[])
    assert fresh.waiting_for is None
    # A run waiting for its caller, given neither, still does its one turn (with None:
    # here a binding of the input that does not resolve).
    assert fresh.resume() == packc.Need.CALLER
    with pytest.raises(packc.UnresolvedBinding):
        packc.drive(fresh, model=ex3_model, tool=ex3_tool)


DRAFT_PACK = """
id: drafts
name: Drafts
version: 1.0.0
template_engine: {version: v1, syntax: "{{variable}}"}
prompts:
  draft: {id: draft, name: Draft, version: 1.0.0, system_template: "Draft for {{audience}}."}
workflow:
  version: 1
  entry: drafting
  states:
    drafting: {prompt_task: draft, terminal: true}
"""


def test_a_restored_run_keeps_the_host_variables_it_started_with() -> None:
    # `{{audience}}` is a host variable: the pack does not declare it, and says so.
    with pytest.warns(UserWarning, match=r"undeclared_variable"):
        program = packc.Program(packc.compile(text=DRAFT_PACK))
    run = program.start(variables={"audience": "kids"})
    run.resume()
    saved = run.snapshot()
    # Variables given to restore would be silently unused: refused.
    with pytest.raises(ValueError, match="keeps the host variables it started with"):
        program.restore(saved, variables={"audience": "adults"})
    restored = program.restore(saved)
    restored.resume(turn="write it")
    call = restored.next_call
    assert call is not None and call.system == "Draft for kids."
