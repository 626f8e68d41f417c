"""The examples in python/examples, run against the loopback mock server; run_live."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List

import pytest

import packc
from conftest import EX2, EX3, EX3_INPUT, REPO
from mock_openai import MockOpenAI, documents, system_of

EXAMPLES_PY = REPO / "python" / "examples"


def run_example(name: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(EXAMPLES_PY / name), *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_asyncio_host_runs_example_3_against_the_mock() -> None:
    with MockOpenAI(documents, delay=0.2) as mock:
        done = run_example(
            "asyncio_host.py", str(EX3), "--base-url", mock.base_url, "--model", "mock", "--input", json.dumps(EX3_INPUT)
        )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"summary": "after 3 tool results", "findings": [], "references": []}
    # The two model branches of the parallel step were in flight together.
    assert mock.most_in_flight == 2
    systems = [system_of(r) for r in mock.requests]
    assert sum(s.startswith("You are a document analyst") for s in systems) == 3
    # The agent's last request carries the tool loop with matched ids.
    last = mock.requests[-1]["messages"]
    assert [m["role"] for m in last[-5:]] == ["assistant", "tool", "assistant", "tool", "tool"]
    assert last[-1]["tool_call_id"] == "call_2"
    assert mock.requests[-1]["tools"][0]["function"]["name"] == "doc_section_lookup"


def test_asyncio_host_reports_a_failing_server() -> None:
    done = run_example(
        "asyncio_host.py", str(EX2), "--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--input", '{"text": "t"}'
    )
    assert done.returncode == 1
    assert done.stderr.startswith("error[host_error]")


def test_run_live_drives_example_2_through_the_rust_host() -> None:
    with MockOpenAI(documents) as mock:
        result = packc.run_live(
            packc.compile(EX2), {"text": "A paper"}, model="mock", base_url=mock.base_url, api_key="sk-test"
        )
    assert result.output == {"title": "T", "authors": ["A"], "summary": "S", "findings": ["F"]}
    assert result.state == "main"
    assert result.model_calls == 2 and result.tool_calls == 0 and result.tokens == 20
    assert result.trace[-1] == "skip extract_general"
    assert mock.requests[0]["model"] == "mock"


def test_the_default_key_variable_goes_to_openai_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-default-SECRET")
    monkeypatch.setenv("MY_KEY", "sk-named-1")
    with MockOpenAI(documents) as mock:
        packc.run_live(packc.compile(EX2), {"text": "A paper"}, model="m", base_url=mock.base_url)
        packc.run_live(packc.compile(EX2), {"text": "A paper"}, model="m", base_url=mock.base_url, api_key_env="MY_KEY")
    # Another server gets no key from OPENAI_API_KEY; a variable named for it is sent.
    assert mock.auth == [None, None, "Bearer sk-named-1", "Bearer sk-named-1"]


def test_run_live_binds_tools_and_fails_with_run_errors(tmp_path: Path) -> None:
    tool = tmp_path / "tool.py"
    tool.write_text("import json, sys\nprint(json.dumps({'got': json.load(sys.stdin)}))\n")
    bindings: Dict[str, Any] = {
        key: {"command": [sys.executable, str(tool)]}
        for key in ["doc.parse_structure", "doc.extract_citations", "doc.section_lookup", "ref.search", "kb.lookup"]
    }
    with MockOpenAI(documents) as mock:
        result = packc.run_live(packc.compile(EX3), EX3_INPUT, model="m", base_url=mock.base_url, tools=bindings)
    assert result.output["summary"] == "after 3 tool results"
    assert result.tool_calls == 5
    with pytest.raises(packc.HostError, match="127.0.0.1:9"):
        packc.run_live(packc.compile(EX2), {"text": "t"}, model="m", base_url="http://127.0.0.1:9/v1", retries=0)
    with pytest.raises(ValueError, match="provider"):
        packc.run_live(packc.compile(EX2), model="m", provider="anthropic")  # type: ignore[arg-type]


def test_run_live_and_batch_refuse_settings_that_cannot_work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ex2, ex3 = packc.compile(EX2), packc.compile(EX3)
    url = "http://127.0.0.1:9/v1"
    # What the CLI refuses before its first call is refused here too, before any request.
    with pytest.raises(ValueError, match=r'ends with /chat/completions.*base_url="http://127.0.0.1:9/v1"'):
        packc.run_live(ex2, {"text": "t"}, model="m", base_url=url + "/chat/completions")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ValueError, match="no API key for api.openai.com"):
        packc.run_live(ex2, {"text": "t"}, model="m")
    with pytest.raises(ValueError, match="no API key for api.openai.com"):
        packc.Batch(ex2, model="m")
    missing = {"doc.parse_structure": {"command": [str(tmp_path / "nope")]}}
    with pytest.raises(ValueError, match="tool `doc.parse_structure`: .*nope"):
        packc.run_live(ex3, {}, model="m", base_url=url, tools=missing)
    with pytest.raises(ValueError, match="tool `doc.parse_structure`: .*nope"):
        packc.Batch(ex3, model="m", base_url=url, tools=missing)
    # A key that names no tool is most likely misspelt: a warning, with the nearest key.
    tool = tmp_path / "tool.py"
    tool.write_text("print('{}')\n")
    typo = {"doc.parse_structur": {"command": [sys.executable, str(tool)]}}
    with pytest.warns(UserWarning, match="did you mean `doc.parse_structure`"):
        packc.Batch(ex3, model="m", base_url=url, tools=typo)


def import_fastapi_service() -> Any:
    sys.path.insert(0, str(EXAMPLES_PY))
    try:
        import fastapi_service
    finally:
        sys.path.remove(str(EXAMPLES_PY))
    return fastapi_service


def test_fastapi_service_parks_runs_in_sqlite_and_resumes_them(tmp_path: Path) -> None:
    from fastapi.testclient import TestClient

    fastapi_service = import_fastapi_service()
    db = str(tmp_path / "runs.sqlite3")

    client = TestClient(fastapi_service.create_app(db_path=db))
    first = client.post("/runs", json={"message": "My VPN disconnects every hour"}).json()
    assert first["waiting"] is True
    assert first["state"] == "tech_state"
    assert "can you tell me more" in first["reply"]
    run_id = first["id"]

    # Another service instance (a restart, another worker) takes the next messages.
    client = TestClient(fastapi_service.create_app(db_path=db))
    second = client.post(f"/runs/{run_id}", json={"message": "It happens on wifi only"}).json()
    assert second["state"] == "tech_state" and second["waiting"] is True
    third = client.post(f"/runs/{run_id}", json={"message": "Thanks, it works now"}).json()
    assert third["state"] == "closing_state"
    assert third["reply"].startswith("Summary")
    trace = client.get(f"/runs/{run_id}").json()["trace"]
    assert trace[:2] == ["enter triage", "transition triage -> tech_state on technical"]

    # A message past the run's value limit is refused, and the parked run goes on.
    huge = client.post(f"/runs/{run_id}", json={"message": "x" * (17 << 20)})
    assert huge.status_code == 413 and "max_value_bytes" in huge.json()["detail"]
    assert client.post("/runs", json={"message": "x" * (17 << 20)}).status_code == 413
    assert client.get(f"/runs/{run_id}").json()["trace"] == trace

    done = client.post(f"/runs/{run_id}/finish").json()
    assert done["state"] == "closing_state" and done["output"].startswith("Summary")
    assert client.post(f"/runs/{run_id}", json={"message": "again"}).status_code == 404
    assert client.get("/runs/nope").status_code == 404


def test_fastapi_service_refuses_the_later_of_two_overlapping_messages(tmp_path: Path) -> None:
    from fastapi.testclient import TestClient

    fastapi_service = import_fastapi_service()
    db = str(tmp_path / "runs.sqlite3")
    other = TestClient(fastapi_service.create_app(db_path=db))
    run_id = ""
    histories: List[str] = []

    def model(call: packc.Call) -> Any:
        if call.prompt_task == "technical":
            histories.append(json.dumps(call.history))
            if "first" in str(call.input):
                # Another worker takes a message for the same run while this request is
                # between restoring the run and saving it.
                second = other.post(f"/runs/{run_id}", json={"message": "second"})
                assert second.status_code == 200, second.text
        return fastapi_service.model(call)

    client = TestClient(fastapi_service.create_app(db_path=db, answer=model))
    run_id = client.post("/runs", json={"message": "My VPN disconnects"}).json()["id"]
    first = client.post(f"/runs/{run_id}", json={"message": "first"})
    assert first.status_code == 409
    assert "send the message again" in first.json()["detail"]

    # The run is as the second request left it: its next turn's history has the second
    # message and not the first.
    histories.clear()
    third = client.post(f"/runs/{run_id}", json={"message": "third"})
    assert third.status_code == 200
    (history,) = histories
    assert "second" in history and "first" not in history
    # The finish of a run changed since it was read is refused the same way, and nothing
    # of it is kept.
    from fastapi import HTTPException

    store = fastapi_service.Store(db)
    _, version = store.load(run_id)
    with pytest.raises(HTTPException) as info:
        store.delete(run_id, version - 1)
    assert info.value.status_code == 409
    assert client.get(f"/runs/{run_id}").status_code == 200
