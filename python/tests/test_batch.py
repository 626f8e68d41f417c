"""packc.Batch: the batch engine of ``packc batch`` over a block of rows, against a loopback model."""

from __future__ import annotations

import json
import sys
import threading
from typing import Any, Dict, List

import pytest

import packc
from conftest import EX2
from mock_openai import MockOpenAI, documents, system_of

DOCUMENT_SCHEMA: Dict[str, Any] = json.loads((EX2.parent / "schemas" / "document.json").read_text())


def rows(n: int) -> List[Dict[str, Any]]:
    return [{"id": f"r{i}", "text": f"Paper {i}. Abstract: a result."} for i in range(n)]


def test_a_block_of_rows_runs_in_order_with_two_calls_each() -> None:
    with MockOpenAI(documents, delay=0.05) as mock:
        batch = packc.Batch(packc.compile(EX2), model="m", base_url=mock.base_url, concurrency=20)
        results = batch.run(rows(40))
        assert [r["id"] for r in results] == [f"r{i}" for i in range(40)]
        assert all(r["output"] == {"title": "T", "authors": ["A"], "summary": "S", "findings": ["F"]} for r in results)
        assert all(r["calls"] == 2 and r["tokens"] == 20 and "error" not in r for r in results)
        assert len(mock.requests) == 80
        # Rows run side by side, not one by one, and never more calls at once than the cap.
        # (How many overlap depends on how fast the one-thread-per-request mock accepts.)
        assert 1 < mock.most_in_flight <= 20
        assert batch.progress["done"] == 40 and batch.progress["calls"] == 80


def test_the_engine_is_reused_across_blocks() -> None:
    with MockOpenAI(documents) as mock:
        batch = packc.Batch(packc.compile(EX2), model="m", base_url=mock.base_url)
        first = batch.run(rows(3))
        second = batch.run(iter(rows(5)))
        assert len(first) == 3 and len(second) == 5
        assert [r["id"] for r in second] == ["r0", "r1", "r2", "r3", "r4"]
        assert len(mock.requests) == 16


def test_rows_without_an_id_are_numbered_from_one() -> None:
    with MockOpenAI(documents) as mock:
        batch = packc.Batch(packc.compile(EX2), model="m", base_url=mock.base_url)
        results = batch.run([{"text": "a"}, {"text": "b"}])
        assert [r["id"] for r in results] == [1, 2]


def test_a_row_not_matching_the_input_schema_fails_alone_before_any_call() -> None:
    with MockOpenAI(documents) as mock:
        batch = packc.Batch(
            packc.compile(EX2), model="m", base_url=mock.base_url, input_schema=DOCUMENT_SCHEMA
        )
        results = batch.run([{"id": "good", "text": "x"}, {"id": "bad", "body": "no text"}, "just a string"])
        assert "output" in results[0]
        assert results[1]["error"]["kind"] == "invalid_input"
        assert "text" in results[1]["error"]["message"]
        assert results[2]["error"]["kind"] == "invalid_input"
        assert results[1]["calls"] == 0
        assert len(mock.requests) == 2


def test_a_failing_model_fails_its_rows_with_a_host_error() -> None:
    def refuse(body: Dict[str, Any]) -> Dict[str, Any]:
        if "Extract" in system_of(body):
            return {"content": "not JSON at all"}
        return documents(body)

    with MockOpenAI(refuse) as mock:
        batch = packc.Batch(packc.compile(EX2), model="m", base_url=mock.base_url, retries=0)
        (result,) = batch.run([{"text": "Abstract: x"}])
        assert result["error"]["kind"] == "host_error"
        assert "output" not in result


def test_a_call_cap_of_one_sends_one_request_at_a_time() -> None:
    with MockOpenAI(documents, delay=0.02) as mock:
        batch = packc.Batch(packc.compile(EX2), model="m", base_url=mock.base_url, concurrency=1)
        batch.run(rows(6))
        assert mock.most_in_flight == 1
        assert len(mock.requests) == 12


def test_bad_options_are_refused_when_the_engine_is_built() -> None:
    artifact = packc.compile(EX2)
    with pytest.raises(ValueError, match="provider"):
        packc.Batch(artifact, model="m", provider="anthropic")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="timeout"):
        packc.Batch(artifact, model="m", timeout=0)
    with pytest.raises(ValueError, match="concurrency"):
        packc.Batch(artifact, model="m", concurrency=0)
    # More worker threads than the engine starts: refused before any thread starts.
    with pytest.raises(ValueError, match="threads is 100000"):
        packc.Batch(artifact, model="m", threads=100_000)
    with pytest.raises(ValueError, match="base_url"):
        packc.Batch(artifact, model="m", base_url="not a url")
    # run_live refuses the same options, before any call.
    with pytest.raises(ValueError, match="concurrency"):
        packc.run_live(artifact, {"text": "t"}, model="m", concurrency=0)
    with pytest.raises(ValueError, match="base_url"):
        packc.run_live(artifact, {"text": "t"}, model="m", base_url="localhost:8000/v1")
    with pytest.raises(TypeError, match="input_schema"):
        packc.Batch(artifact, model="m", input_schema=[1, 2])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="input_schema"):
        packc.Batch(artifact, model="m", input_schema={"type": 12})


def test_cancel_from_another_thread_returns_the_rows_finished_so_far() -> None:
    with MockOpenAI(documents, delay=0.2) as mock:
        batch = packc.Batch(packc.compile(EX2), model="m", base_url=mock.base_url, concurrency=2)
        timer = threading.Timer(0.3, batch.cancel)
        timer.start()
        results = batch.run(rows(50))
        timer.join()
        assert len(results) < 50


def test_importing_packc_does_not_import_ray() -> None:
    import subprocess

    code = "import packc, sys; assert 'ray' not in sys.modules, 'ray was imported'"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_a_row_that_is_not_json_fails_alone() -> None:
    with MockOpenAI(documents) as mock:
        batch = packc.Batch(packc.compile(EX2), model="m", base_url=mock.base_url)
        results = batch.run(
            [{"id": "a", "text": "x", "score": float("nan")}, {"id": "b", "text": "y"}, {"text": {1}}]
        )
        assert [r["id"] for r in results] == ["a", "b", 3]
        assert results[0]["error"]["kind"] == "invalid_row"
        assert "NaN" in results[0]["error"]["message"]
        assert "output" in results[1] and results[1]["calls"] == 2
        assert results[2]["error"]["kind"] == "invalid_row"
        assert 'rows[2]["text"]' in results[2]["error"]["message"]
        assert len(mock.requests) == 2
