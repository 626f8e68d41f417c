"""The sans-IO VM from Python: Program, Run, Call, Need; values; errors and misuse."""

from __future__ import annotations

import asyncio
import re
import sys
from collections import OrderedDict, UserDict, UserList
from types import MappingProxyType
from typing import Any, Dict, List

import pytest

import packc
from conftest import EX2, EXAMPLES, EXTRACTED, PAPER, REPO, ex2_model

TEXT = "Deep Residual Learning for Image Recognition. Abstract: residual nets."
WORKFLOW = EXAMPLES / "guide-add-workflow.pack.yaml"


def test_ex2_step_by_step(ex2_program: packc.Program) -> None:
    run = ex2_program.start("workflow", record_calls=True)
    assert run.resume() == packc.Need.CALLER
    assert run.resume(turn={"text": TEXT}) == packc.Need.CALLS
    [call] = run.issued
    assert [c.id for c in run.pending] == [call.id]
    assert call.kind == "model"
    assert call.prompt_task == "doc_classifier"
    assert call.tool is None and call.branch is None and call.provider == "default"
    assert call.input == TEXT
    assert call.system.startswith("Classify the document") and call.system.endswith(TEXT)
    assert call.history == []
    assert call.offered_tools == []
    assert call.events == []
    assert call.parameters == {"temperature": 0.0}
    schema = call.output_schema
    assert schema is not None and schema["name"] == "schemas/document-type.json"
    assert schema["schema"]["type"] == "object"
    assert run.answer(call, output=PAPER) == packc.Need.CALLS
    [extract] = run.pending
    assert extract.prompt_task == "research_paper_extractor"
    assert run.answer(extract.id, output=EXTRACTED) == packc.Need.CALLER
    assert run.outcome is None and not run.finished
    assert run.resume(finish=True) == packc.Need.DONE
    outcome = run.outcome
    assert outcome is not None
    assert outcome.output == EXTRACTED and outcome.state == "main"
    assert run.finished
    assert run.trace == [
        "enter main",
        "step classify",
        "branch route -> extract_paper",
        "step extract_paper",
        "skip extract_general",
    ]
    assert [c["prompt"] for c in run.calls] == ["doc_classifier", "research_paper_extractor"]


def test_the_call_log_is_empty_unless_asked_for(ex2_program: packc.Program) -> None:
    run = ex2_program.start()
    packc.drive(run, model=ex2_model, input={"text": TEXT})
    assert run.calls == []


def test_drive_runs_ex2_on_both_branches(ex2_program: packc.Program) -> None:
    outcome = packc.drive(ex2_program.start(), model=ex2_model, input={"text": TEXT})
    assert outcome.output == EXTRACTED

    def general(call: packc.Call) -> Any:
        if call.prompt_task == "doc_classifier":
            return {"type": "general", "confidence": 0.4}
        return {"summary": call.input[:4], "entities": []}

    run = ex2_program.start("composition:analyze_document")
    assert packc.drive(run, model=general, input={"text": TEXT}).output == {
        "summary": "Deep",
        "entities": [],
    }
    assert run.trace[-1] == "step extract_general"
    # A run that ended is not driven again: its old outcome would pass for the new input's.
    with pytest.raises(packc.ProtocolError, match="the run has already ended"):
        packc.drive(run, model=general, input={"text": "another document"})

    async def drive_again() -> packc.Outcome:
        return await packc.drive_async(run, model=general, input={"text": "another"})

    with pytest.raises(packc.ProtocolError, match="the run has already ended"):
        asyncio.run(drive_again())


def test_drive_with_events_and_turns() -> None:
    program = packc.Program(packc.compile(WORKFLOW))
    seen: List[str] = []

    def model(call: packc.Call) -> Any:
        seen.append(f"{call.prompt_task}:{','.join(call.events)}")
        if call.prompt_task == "triage":
            return packc.Answer("technical", event="technical")
        if call.prompt_task == "technical":
            return packc.Answer("fixed", event="resolved")
        return "bye" if len(call.history) else "anything else?"

    run = program.start(record_calls=True)
    outcome = packc.drive(run, model=model, script=[{"turn": "VPN drops"}, {"turn": "thanks"}])
    assert outcome.state == "closing_state"
    assert outcome.output == "bye"
    assert seen[:2] == ["triage:billing,technical", "technical:resolved,escalate"]
    assert packc.run_case(EXAMPLES / "cases" / "guide-add-workflow.case.yaml").passed


def test_drive_needs_a_function_for_each_kind_of_call(ex2_program: packc.Program) -> None:
    with pytest.raises(TypeError, match="no model= function"):
        packc.drive(ex2_program.start(), tool=lambda c: None, input={"text": TEXT})


def test_call_failed_is_an_error_answer(ex2_program: packc.Program) -> None:
    def failing(call: packc.Call) -> Any:
        raise packc.CallFailed("the model is down")

    with pytest.raises(packc.HostError) as info:
        packc.drive(ex2_program.start(), model=failing, input={"text": TEXT})
    assert info.value.kind == "host_error"
    assert "the model is down" in info.value.message
    assert isinstance(info.value, packc.RunError)


def test_other_host_exceptions_propagate(ex2_program: packc.Program) -> None:
    def broken(call: packc.Call) -> Any:
        raise KeyError("bug in the host")

    with pytest.raises(KeyError):
        packc.drive(ex2_program.start(), model=broken, input={"text": TEXT})


def test_values_cross_as_native_objects(ex2_program: packc.Program) -> None:
    value: Dict[str, Any] = {
        "text": "x",
        "n": [1, -2, 2**63 - 1, 2**64 - 1, 1.5, True, False, None],
        "t": ("a", {"b": []}),
    }
    run = ex2_program.start("composition:analyze_document")
    run.resume()
    run.resume(turn=value)
    run.answer(run.pending[0], output={"type": "general"})
    run.answer(run.pending[0], output=value)
    run.resume(finish=True)
    outcome = run.outcome
    assert outcome is not None
    expected = dict(value, t=["a", {"b": []}])
    assert outcome.output == expected
    assert type(outcome.output["n"][5]) is bool and type(outcome.output["n"][0]) is int


def test_any_mapping_or_sequence_crosses_as_a_dict_or_a_list(ex2_program: packc.Program) -> None:
    # What the stubs' Mapping and Sequence parameters promise.
    value = MappingProxyType(
        {"text": "x", "items": range(3), "more": UserList([OrderedDict(a=1)]), "d": UserDict(b=None)}
    )
    run = ex2_program.start("composition:analyze_document", variables=MappingProxyType({"v": "1"}))
    run.resume()
    run.resume(turn=value)
    run.answer(run.pending[0], output=UserDict(type="general"))
    run.answer(run.pending[0], output=value)
    run.resume(finish=True)
    outcome = run.outcome
    assert outcome is not None
    assert outcome.output == {"text": "x", "items": [0, 1, 2], "more": [{"a": 1}], "d": {"b": None}}
    run = ex2_program.start("composition:analyze_document")
    run.resume()
    run.resume(turn={"text": "x"})
    # A sequence of requests is read item by item (this one's first lacks its name).
    with pytest.raises(TypeError, match=r"tool_calls\[0\] is not"):
        run.answer(run.pending[0], tool_calls=UserList([{"args": {}}]))


@pytest.mark.parametrize(
    "bad, path",
    [
        ({"a": {1, 2}}, 'output["a"] is of type set'),
        ({"a": [0, object()]}, 'output["a"][1] is of type object'),
        ({1: "x"}, "output has a key of type int"),
        ({"a": float("nan")}, 'output["a"] is NaN, which JSON cannot represent'),
        ({"a": 2**64}, 'output["a"] is an int outside the 64-bit range'),
        (b"bytes", "output is of type bytes"),
        ({"a": bytearray(b"x")}, 'output["a"] is of type bytearray'),
        ({"a": memoryview(b"x")}, 'output["a"] is of type memoryview'),
        ({"a": MappingProxyType({2: "x"})}, 'output["a"] has a key of type int'),
    ],
)
def test_a_value_that_is_not_json_raises_type_error_naming_its_path(
    ex2_program: packc.Program, bad: Any, path: str
) -> None:
    run = ex2_program.start()
    run.resume()
    run.resume(turn={"text": TEXT})
    call = run.pending[0]
    with pytest.raises(TypeError) as info:
        run.answer(call, output=bad)
    assert path in str(info.value)
    # The run is untouched: the call is still outstanding and can be answered.
    assert [c.id for c in run.pending] == [call.id]
    assert run.answer(call, output=PAPER) == packc.Need.CALLS


def test_a_value_that_contains_itself_is_refused(ex2_program: packc.Program) -> None:
    loop: List[Any] = []
    loop.append(loop)
    run = ex2_program.start()
    run.resume()
    with pytest.raises(ValueError, match="nested more than") as info:
        run.resume(turn=loop)
    # The path of a value that deep is shown by its two ends.
    assert len(str(info.value)) < 250 and "turn[0][0]" in str(info.value) and "…" in str(info.value)


def test_a_str_with_a_lone_surrogate_is_a_value_error_naming_its_path(ex2_program: packc.Program) -> None:
    run = ex2_program.start()
    run.resume()
    with pytest.raises(ValueError, match=r'turn\["text"\] is a str with a lone surrogate'):
        run.resume(turn={"text": "a\ud800b"})
    with pytest.raises(ValueError, match=r"turn is a str with a lone surrogate"):
        run.resume(turn={"\udfff": 1})


def test_protocol_misuse_raises_and_leaves_the_run_usable(ex2_program: packc.Program) -> None:
    run = ex2_program.start()
    assert run.resume() == packc.Need.CALLER
    with pytest.raises(packc.ProtocolError) as info:
        run.answer(42, output=1)
    assert info.value.kind == "protocol"
    assert run.resume(turn={"text": TEXT}) == packc.Need.CALLS
    call = run.pending[0]
    with pytest.raises(packc.ProtocolError):
        run.resume(turn={"text": "a turn while a call is out"})
    with pytest.raises(packc.ProtocolError):
        run.resume(clock=5)
    with pytest.raises(packc.ProtocolError):
        run.answer(call.id + 100, output=PAPER)
    assert [c.id for c in run.pending] == [call.id]
    assert run.answer(call, output=PAPER) == packc.Need.CALLS
    with pytest.raises(packc.ProtocolError):
        run.answer(call, output=PAPER)  # answered already
    run.answer(run.pending[0], output=EXTRACTED)
    assert run.resume(finish=True) == packc.Need.DONE
    with pytest.raises(packc.ProtocolError):
        run.resume(turn={"text": "after the end"})
    outcome = run.outcome
    assert outcome is not None and outcome.output == EXTRACTED


def test_python_level_misuse_raises_type_or_value_errors(ex2_program: packc.Program) -> None:
    run = ex2_program.start()
    run.resume()
    with pytest.raises(TypeError, match="at most one"):
        run.resume(turn=1, event="x")  # type: ignore[call-overload]
    with pytest.raises(TypeError, match='unexpected keyword argument "output"'):
        run.resume(output=1)  # type: ignore[call-overload]
    with pytest.raises(ValueError, match="finish=True"):
        run.resume(finish=False)  # type: ignore[call-overload]
    with pytest.raises(TypeError, match="packc.Call or its id"):
        run.answer("0", output=1)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"an int, 0 or more"):
        run.answer(-1, output=1)
    with pytest.raises(ValueError, match="not both"):
        run.answer(0, error="x", tool_calls=[])
    with pytest.raises(TypeError, match="tool_calls\\[0\\]"):
        run.answer(0, tool_calls=[{"args": {}}])
    with pytest.raises(TypeError, match="^error must be a str, not int"):
        run.answer(0, error=5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="^event must be a str, not list"):
        run.answer(0, output=1, event=["x"])  # type: ignore[arg-type]
    # None of it touched the run.
    assert run.resume(turn={"text": TEXT}) == packc.Need.CALLS


def test_unknown_targets_and_bad_variables(ex2_program: packc.Program) -> None:
    with pytest.raises(packc.ProtocolError, match="no composition `nope`"):
        ex2_program.start("composition:nope")
    with pytest.raises(packc.ProtocolError):
        ex2_program.start("somewhere")
    with pytest.raises(TypeError, match="variables must be a dict"):
        ex2_program.start(variables=[1])  # type: ignore[arg-type]


def test_run_errors_are_subclasses_by_kind() -> None:
    run = packc.Program(packc.compile(WORKFLOW)).start()
    run.resume()
    run.resume(turn="VPN drops")
    with pytest.raises(packc.RunError) as info:
        run.answer(run.pending[0], output="t", event="nope")
    err = info.value
    assert isinstance(err, packc.InvalidEvent)
    assert err.message == (
        "state `triage` has no event `nope`; the events of this state are: `billing`, `technical`"
    )
    assert type(err) is packc.RUN_ERRORS[err.kind]
    assert str(err).startswith(err.kind + ": ")
    assert run.finished
    # The run keeps the error that ended it; misuse afterwards does not replace it.
    kept = run.error
    assert kept is err and run.error is kept
    with pytest.raises(packc.ProtocolError):
        run.resume(turn="again")
    assert isinstance(run.error, packc.InvalidEvent)


def test_run_error_is_none_unless_the_run_failed(ex2_program: packc.Program) -> None:
    run = ex2_program.start()
    run.resume()
    assert run.error is None
    # Misuse of a running run is not the run's error.
    with pytest.raises(packc.ProtocolError):
        run.answer(7, output=1)
    assert run.error is None and not run.finished
    outcome = packc.drive(run, model=lambda c: {"type": "other"}, input={"text": TEXT})
    assert outcome.output == {"type": "other"}
    assert run.finished and run.error is None


def test_a_limit_out_of_range_is_a_value_error_naming_it(ex2_program: packc.Program) -> None:
    usize_max = 2 * sys.maxsize + 1
    with pytest.raises(ValueError, match="^max_host_calls must not be negative, not -1"):
        ex2_program.start(max_host_calls=-1)
    with pytest.raises(ValueError, match=f"^max_host_calls must be an int from 0 to {2**64 - 1}, not {2**64}"):
        ex2_program.start(max_host_calls=2**64)
    with pytest.raises(ValueError, match="^max_value_bytes must not be negative, not -1"):
        ex2_program.start(max_value_bytes=-1)
    with pytest.raises(ValueError, match="^max_value_depth must not be negative, not -1"):
        ex2_program.start(max_value_depth=-1)
    with pytest.raises(ValueError, match="^max_snapshot_bytes must not be negative, not -1"):
        ex2_program.start(max_snapshot_bytes=-1)
    with pytest.raises(ValueError, match="^max_built_bytes must not be negative, not -1"):
        ex2_program.start(max_built_bytes=-1)
    with pytest.raises(TypeError, match="^max_host_calls must be an int, not str"):
        ex2_program.start(max_host_calls="1")  # type: ignore[arg-type]
    saved = ex2_program.start().snapshot()
    with pytest.raises(ValueError, match="^max_host_calls must not be negative, not -1"):
        ex2_program.restore(saved, max_host_calls=-1)
    with pytest.raises(ValueError, match="^max_bytes must not be negative, not -1"):
        packc.Artifact.from_bytes(b"", max_bytes=-1)
    # None is the default.
    assert ex2_program.start(max_host_calls=None, max_value_bytes=2**20) is not None


def test_the_limit_on_host_calls(ex2_program: packc.Program) -> None:
    run = ex2_program.start(max_host_calls=1)
    with pytest.raises(packc.LimitExceeded, match="max_host_calls"):
        packc.drive(run, model=ex2_model, input={"text": TEXT})


def test_a_call_read_after_its_answer_says_so(ex2_program: packc.Program) -> None:
    run = ex2_program.start()
    run.resume()
    run.resume(turn={"text": TEXT})
    call = run.pending[0]
    assert call.input == TEXT  # read before: kept
    run.answer(call, output=PAPER)
    assert call.input == TEXT
    with pytest.raises(packc.ProtocolError, match="no longer outstanding"):
        call.history
    assert "doc_classifier" in repr(call)


def test_every_error_kind_has_its_class() -> None:
    for kind, cls in packc.RUN_ERRORS.items():
        err = packc._errors.run_error(kind, "m")
        assert type(err) is cls and err.kind == kind and err.message == "m"
    unknown = packc._errors.run_error("new_kind", "m")
    assert type(unknown) is packc.RunError and unknown.kind == "new_kind"
    # Every kind the VM can raise (`vm/src/error.rs`) has a class of its own.
    source = (REPO / "vm" / "src" / "error.rs").read_text()
    vm_kinds = set(re.findall(r'^\s+[A-Z][A-Za-z]+ = "([a-z_]+)",', source, re.MULTILINE))
    assert "guardrail_blocked" in vm_kinds and len(vm_kinds) > 10
    assert vm_kinds == set(packc.RUN_ERRORS)


def test_an_unknown_target_is_its_own_kind() -> None:
    program = packc.Program(packc.compile(WORKFLOW))
    with pytest.raises(packc.InvalidTarget, match="no composition `nope`") as info:
        program.start("composition:nope")
    assert info.value.kind == "invalid_target" and isinstance(info.value, packc.ProtocolError)


def waiting_on_the_classifier(program: packc.Program) -> packc.Run:
    run = program.start()
    run.resume()
    run.resume(turn={"text": TEXT})
    return run


def test_a_call_of_another_run_is_refused(ex2_program: packc.Program) -> None:
    alice = waiting_on_the_classifier(ex2_program)
    bob = waiting_on_the_classifier(ex2_program)
    alices = alice.next_call
    assert alices is not None and alices.id == 0
    with pytest.raises(packc.ProtocolError, match="this call belongs to another run"):
        bob.answer(alices, output=PAPER)
    # Neither run moved; each takes its own call, and a plain id still works.
    assert [c.id for c in alice.pending] == [0] and [c.id for c in bob.pending] == [0]
    assert alice.answer(alices, output=PAPER) == packc.Need.CALLS
    assert bob.answer(0, output=PAPER) == packc.Need.CALLS


def test_reading_a_run_while_it_takes_an_answer_raises_runtime_error(ex2_program: packc.Program) -> None:
    run = waiting_on_the_classifier(ex2_program)
    call = run.next_call
    assert call is not None
    refused: List[str] = []

    class Key:
        # A dict key that is not a str: its repr goes into the TypeError, while the run
        # is taking the answer.
        def __repr__(self) -> str:
            for name in ("pending", "next_call", "issued", "finished"):
                try:
                    getattr(run, name)
                except RuntimeError:
                    refused.append(name)
            return "Key()"

    with pytest.raises(TypeError, match="Key()"):
        run.answer(call, output={Key(): 1})
    assert refused == ["pending", "next_call", "issued", "finished"]
    assert [c.id for c in run.pending] == [call.id]


# A review: `drafting` submits to the external state `editor`, which waits for
# `Approve` (to `done`) or `Reject`.
REVIEW = REPO / "cli" / "tests" / "packs" / "review.yaml"


def test_caller_events_name_what_the_idle_state_takes() -> None:
    program = packc.Program(packc.compile(REVIEW))
    run = program.start()
    assert run.caller_events == []
    assert run.resume() == packc.Need.CALLER
    assert run.caller_events == []
    assert run.resume(turn="write it") == packc.Need.CALLS
    call = run.next_call
    assert call is not None
    assert run.answer(call, output="a draft", event="Submit") == packc.Need.CALLER
    assert run.caller_events == ["Approve", "Reject"]
    # An event not listed ends the run.
    with pytest.raises(packc.InvalidEvent):
        run.resume(event="Maybe")
    assert run.caller_events == []
