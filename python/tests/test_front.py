"""The front end: check, compile, Artifact."""

from __future__ import annotations

import copy
import errno
import pickle
import warnings
from pathlib import Path

import pytest

import packc
from conftest import EX2, EXAMPLES, ONE_PROMPT_PACK

BROKEN = """\
$schema: "https://promptpack.org/schema/v1/promptpack.schema.json"
id: broken
name: Broken
version: 1.0.0
template_engine: {version: v1, syntax: "{{variable}}"}
prompts:
  p:
    id: p
    name: P
    version: 1.0.0
    system_template: "hi"
compositions:
  c:
    version: 1
    steps:
      - id: a
        kind: prompt
        prompt_task: p
      - id: a
        kind: prompt
        prompt_task: nowhere
"""


def test_check_a_clean_pack_reports_nothing() -> None:
    assert packc.check(EX2) == []


def test_check_locates_every_problem_in_text() -> None:
    diags = packc.check(text=BROKEN)
    kinds = {d.kind for d in diags}
    assert {"duplicate_step_id", "unresolved_prompt"} <= kinds, diags
    dup = next(d for d in diags if d.kind == "duplicate_step_id")
    assert dup.severity == "error"
    assert dup.file == "<text>"
    assert dup.pointer == "/compositions/c/steps/1/id"
    assert dup.line == 19 and dup.column is not None
    assert dup.help
    assert "duplicate_step_id" in repr(dup)


def test_check_json_text_is_strict(tmp_path: Path) -> None:
    diags = packc.check(text='{"id": "x",}', format="json")
    assert [d.kind for d in diags] == ["parse_error"]
    assert diags[0].line == 1 and diags[0].column is not None
    # The same text read as YAML is not a parse error.
    assert "parse_error" not in {d.kind for d in packc.check(text='{"id": "x"}')}


def test_files_are_read_as_packc_reads_them(tmp_path: Path) -> None:
    loose = '{"id": "x", "name": "X", "version": "1.0.0", "prompts": {},}'
    # A file named *.json is strict JSON, as `packc check` reads it.
    (tmp_path / "loose.json").write_text(loose)
    assert [d.kind for d in packc.check(tmp_path / "loose.json")] == ["parse_error"]
    # format= says how to read it whatever its name.
    assert "parse_error" not in {
        d.kind for d in packc.check(tmp_path / "loose.json", format="yaml")
    }
    (tmp_path / "loose.yaml").write_text(loose)
    assert "parse_error" not in {d.kind for d in packc.check(tmp_path / "loose.yaml")}
    assert [d.kind for d in packc.check(tmp_path / "loose.yaml", format="json")] == [
        "parse_error"
    ]
    with pytest.raises(packc.CompileError):
        packc.compile(tmp_path / "loose.json")


def test_compiling_a_json_file_gives_the_artifact_of_its_text(tmp_path: Path) -> None:
    pack = (
        '{"id": "t", "name": "T", "version": "1.0.0",'
        ' "template_engine": {"version": "v1", "syntax": "{{variable}}"},'
        ' "prompts": {"p": {"id": "p", "name": "P", "version": "1.0.0",'
        ' "system_template": "hi"}}}'
    )
    (tmp_path / "t.json").write_text(pack)
    from_file = packc.compile(tmp_path / "t.json").to_bytes()
    assert from_file == packc.compile(text=pack, format="json").to_bytes()
    assert from_file == packc.compile(text=pack).to_bytes()


def test_check_refuses_unknown_options() -> None:
    with pytest.raises(ValueError, match="spec_level"):
        packc.check(EX2, spec_level="v0.1")
    with pytest.raises(ValueError, match="format"):
        packc.check(text="{}", format="toml")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="not both"):
        packc.check(EX2, text="{}")
    with pytest.raises(OSError, match="missing.pack.yaml"):
        packc.check(EXAMPLES / "missing.pack.yaml")


def test_compile_error_carries_diagnostics_and_the_report() -> None:
    with pytest.raises(packc.CompileError) as info:
        packc.compile(text=BROKEN)
    err = info.value
    assert {d.kind for d in err.diagnostics} >= {"duplicate_step_id"}
    report = str(err)
    assert "[duplicate_step_id] Error" in report
    assert "<text>:19" in report


def test_artifact_round_trips_and_is_deterministic() -> None:
    a = packc.compile(EX2)
    data = a.to_bytes()
    assert packc.compile(EX2).to_bytes() == data
    b = packc.Artifact.from_bytes(data)
    assert b.to_bytes() == data
    assert b.module_id == "rfc0010-ex2-analyze-document"


def test_a_corrupt_artifact_raises_artifact_error() -> None:
    data = bytearray(packc.compile(EX2).to_bytes())
    data[len(data) // 2] ^= 0xFF
    with pytest.raises(packc.ArtifactError, match="not a valid .ppk artifact"):
        packc.Artifact.from_bytes(bytes(data))
    with pytest.raises(packc.ArtifactError):
        packc.Artifact.from_bytes(b"")
    with pytest.raises(packc.ArtifactError, match="bytes"):
        packc.Artifact.from_bytes(bytes(data), max_bytes=16)


def test_every_truncation_of_an_artifact_is_refused() -> None:
    data = packc.compile(EX2).to_bytes()
    for n in range(0, len(data), max(1, len(data) // 200)):
        with pytest.raises(packc.ArtifactError):
            packc.Artifact.from_bytes(data[:n])


def test_inspect_gives_header_targets_and_bounds() -> None:
    info = packc.compile(EX2).inspect()
    assert info["module"] == "rfc0010-ex2-analyze-document"
    assert info["compiler"] == packc.COMPILER_VERSION
    assert info["format"].startswith("1.")
    assert len(info["source_sha256"]) == 64
    assert info["targets"] == ["workflow", "composition:analyze_document"]
    assert info["prompts"] == ["doc_classifier", "research_paper_extractor", "general_doc_extractor"]
    assert info["bounds"]["compositions"]["analyze_document"] == {"model": 2, "tool": 0}
    assert info["bounds"]["workflow_turn"]["executions"] == 1
    assert info["validators"] == {}
    assert info["governance"] is None
    assert info["agent_governance"] == {}


GOVERNED_PACK = (
    '$schema: "https://promptpack.org/schema/v1.8.1/promptpack.schema.json"\n'
    + ONE_PROMPT_PACK
    + """\
metadata:
  governance: {intended_purpose: Answers., approved_environments: [staging]}
agents:
  entry: p
  members:
    p: {governance: {autonomy_level: suggests}}
"""
)


def test_inspect_gives_the_pack_and_member_governance() -> None:
    info = packc.compile(text=GOVERNED_PACK).inspect()
    assert info["format"] == "1.2"
    assert info["governance"] == {"intended_purpose": "Answers.", "approved_environments": ["staging"]}
    assert info["agent_governance"] == {"p": {"autonomy_level": "suggests"}}


def test_inspect_lists_each_prompts_validators() -> None:
    pack = ONE_PROMPT_PACK.replace(
        "system_template: hi}",
        "system_template: hi, validators: [{type: max_length, params: {max_characters: 9}},"
        " {type: json_valid, enabled: false}, {type: toxicity}]}",
    )
    assert pack != ONE_PROMPT_PACK
    info = packc.compile(text=pack).inspect()
    assert info["validators"] == {"p": ["max_length", "toxicity"]}


CONTROL_PACK = ONE_PROMPT_PACK + """\
workflow:
  version: 1
  entry: a
  states:
    a: {prompt_task: p, control: agent}
"""


def test_spec_level_overrides_the_claim() -> None:
    # `control` is a v1.7 member: a schema violation at the unclaimed level 1.5 ...
    low = packc.check(text=CONTROL_PACK)
    assert "schema_violation" in {d.kind for d in low}
    assert any(d.pointer == "/workflow/states/a/control" for d in low)
    # ... and known at 1.8 and 1.9, named as a level or as a version.
    for level in ["1.8", "1.9", "v1.7"]:
        kinds = {d.kind for d in packc.check(text=CONTROL_PACK, spec_level=level)}
        assert "schema_violation" not in kinds, (level, kinds)
    # It compiles there, with the pack's one warning as a UserWarning.
    with pytest.warns(UserWarning, match=r"warning\[inert_control\]"):
        assert packc.compile(text=CONTROL_PACK, spec_level="1.9").inspect()


def test_an_unreadable_file_raises_the_os_error_open_raises(tmp_path: Path) -> None:
    missing = tmp_path / "nope.pack.yaml"
    for read in (packc.check, packc.compile):
        with pytest.raises(FileNotFoundError) as info:
            read(missing)
        assert info.value.errno == errno.ENOENT
        assert info.value.filename == str(missing)
    with pytest.raises(IsADirectoryError):
        packc.check(tmp_path)


def test_text_reads_its_schema_files_from_base_dir(tmp_path: Path) -> None:
    text = EX2.read_text()
    # Without base_dir, text names no folder: its schema files are not looked up.
    assert packc.check(text=text) == []
    assert packc.check(text=text, base_dir=EX2.parent) == []
    unresolved = packc.check(text=text, base_dir=tmp_path)
    assert [d.kind for d in unresolved] == ["unresolved_schema"] * 3
    # The same artifact as from the file itself.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        from_text = packc.compile(text=text, base_dir=EX2.parent)
    assert from_text.to_bytes() == packc.compile(EX2).to_bytes()
    # A schema file missing from base_dir is a warning of compile too.
    with pytest.warns(UserWarning, match=r"<text>:\d+:\d+: warning\[unresolved_schema\]") as missing:
        packc.compile(text=text, base_dir=tmp_path)
    assert len(missing) == 3
    # Without base_dir, compiling says which schema files it left out.
    with pytest.warns(UserWarning, match="schemas/document-type.json") as caught:
        unread = packc.compile(text=text)
    assert len(caught) == 1
    assert "base_dir=" in str(caught[0].message)
    assert unread.to_bytes() != from_text.to_bytes()


PAPER_OUT = {"type": "research_paper"}


def test_errors_artifacts_and_needs_pickle_whole() -> None:
    with pytest.raises(packc.CompileError) as info:
        packc.compile(text=BROKEN)
    error = info.value
    back = pickle.loads(pickle.dumps(error))
    assert type(back) is packc.CompileError and str(back) == str(error)
    assert back.diagnostics == error.diagnostics and len(back.diagnostics) > 0
    assert {d for d in back.diagnostics} == set(error.diagnostics)
    artifact = packc.compile(EX2)
    assert pickle.loads(pickle.dumps(artifact)).to_bytes() == artifact.to_bytes()
    for need in (packc.Need.CALLS, packc.Need.DONE):
        assert pickle.loads(pickle.dumps(need)) is need and copy.copy(need) is need
    # Results go back from a process pool whole, and compare by their fields.
    outcome = packc.drive(packc.Program(artifact).start(), model=lambda c: PAPER_OUT, input={"text": "t"})
    assert pickle.loads(pickle.dumps(outcome)) == outcome
    assert outcome != packc.Outcome({"other": 1}, outcome.state)
    case = packc.run_case(EXAMPLES / "cases" / "guide-add-workflow.case.yaml")
    back_case = pickle.loads(pickle.dumps(case))
    assert back_case == case and back_case.passed and back_case.path == case.path
    live = packc.LiveResult({"a": [1]}, "done", ["enter done"], model_calls=2, tokens=7)
    assert pickle.loads(pickle.dumps(live)) == live and live.tokens == 7
    assert live != packc.LiveResult({"a": [1]}, "done", ["enter done"], model_calls=2, tokens=8)
    for run_error in (packc.HostError("down"), packc.RunError("odd", kind="invalid_target")):
        again = pickle.loads(pickle.dumps(run_error))
        assert (type(again), again.kind, again.message) == (type(run_error), run_error.kind, run_error.message)
