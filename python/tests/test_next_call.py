"""`Run.next_call`: the call a one-at-a-time host answers next (the VM's default pick)."""

from __future__ import annotations

import packc
from conftest import EX3_INPUT, ex3_model, ex3_tool


def test_next_call_is_the_lowest_branch_then_the_oldest(ex3_program: packc.Program) -> None:
    run = ex3_program.start()
    assert run.resume() == packc.Need.CALLER
    assert run.next_call is None
    assert run.resume(turn=EX3_INPUT) == packc.Need.CALLS
    assert len(run.pending) > 1
    # Answered from the highest branch down, the lowest branch still waiting is next.
    while len(run.pending) > 1:
        call = max(run.pending, key=lambda c: c.branch or 0)
        lowest = min(run.pending, key=lambda c: (c.branch or 0, c.id))
        assert run.next_call is not None and run.next_call.id == lowest.id
        answer = ex3_model(call) if call.kind == "model" else ex3_tool(call)
        if isinstance(answer, packc.Answer):
            run.answer(call, tool_calls=answer.tool_calls)
        else:
            run.answer(call, output=answer)
    assert run.next_call is not None and run.next_call.id == run.pending[0].id
