"""packc.Batch: the batch engine of ``packc batch`` over a block of rows, against a loopback model."""

from __future__ import annotations

import json
import multiprocessing
import multiprocessing.queues
import os
import sys
import threading
import time
from typing import Any, Dict, List

import pytest

import packc
from conftest import EX2
from mock_openai import MockOpenAI, documents, system_of

DOCUMENT_SCHEMA: Dict[str, Any] = json.loads((EX2.parent / "schemas" / "document.json").read_text())

# A local server: no API key is needed (api.openai.com, the default, needs one).
LOCAL = "http://127.0.0.1:9/v1"


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
        packc.Batch(artifact, model="m", base_url=LOCAL, provider="anthropic")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="timeout"):
        packc.Batch(artifact, model="m", base_url=LOCAL, timeout=0)
    with pytest.raises(ValueError, match="concurrency"):
        packc.Batch(artifact, model="m", base_url=LOCAL, concurrency=0)
    with pytest.raises(ValueError, match="tool_concurrency must be at least 1"):
        packc.Batch(artifact, model="m", base_url=LOCAL, tool_concurrency=0)
    with pytest.raises(ValueError, match="model= is empty"):
        packc.Batch(artifact, model=" ", base_url=LOCAL)
    with pytest.raises(ValueError, match="model= is empty"):
        packc.run_live(artifact, {"text": "t"}, model="", base_url=LOCAL)
    # More worker threads than the engine starts: refused before any thread starts.
    with pytest.raises(ValueError, match="threads is 100000"):
        packc.Batch(artifact, model="m", base_url=LOCAL, threads=100_000)
    with pytest.raises(ValueError, match="base_url"):
        packc.Batch(artifact, model="m", base_url="not a url")
    # run_live refuses the same options, before any call.
    with pytest.raises(ValueError, match="concurrency"):
        packc.run_live(artifact, {"text": "t"}, model="m", base_url=LOCAL, concurrency=0)
    with pytest.raises(ValueError, match="base_url"):
        packc.run_live(artifact, {"text": "t"}, model="m", base_url="localhost:8000/v1")
    with pytest.raises(TypeError, match="input_schema"):
        packc.Batch(artifact, model="m", base_url=LOCAL, input_schema=[1, 2])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="input_schema"):
        packc.Batch(artifact, model="m", base_url=LOCAL, input_schema={"type": 12})


def test_a_cancelled_block_still_has_one_result_per_row_in_order() -> None:
    release = threading.Event()

    def slow_first(body: Dict[str, Any]) -> Dict[str, Any]:
        if "SLOW" in system_of(body):
            release.wait(30)
        return documents(body)

    with MockOpenAI(slow_first) as mock:
        batch = packc.Batch(packc.compile(EX2), model="m", base_url=mock.base_url, concurrency=8)
        block = [{"id": "slow", "text": "SLOW"}] + rows(9)

        def cancel_when_the_others_are_done() -> None:
            while batch.progress["done"] < 9 and not release.is_set():
                time.sleep(0.01)
            batch.cancel()

        canceller = threading.Thread(target=cancel_when_the_others_are_done)
        canceller.start()
        try:
            results = batch.run(block)
        finally:
            release.set()
            canceller.join()
        assert [r["id"] for r in results] == ["slow"] + [f"r{i}" for i in range(9)]
        assert results[0]["error"]["kind"] == "cancelled"
        assert "cancelled" in results[0]["error"]["message"]
        assert "output" not in results[0] and results[0]["calls"] == 0
        assert all("output" in r and r["calls"] == 2 for r in results[1:])


def test_timeouts_and_concurrency_past_their_maximum_are_value_errors() -> None:
    artifact = packc.compile(EX2)
    with pytest.raises(ValueError, match="timeout .* maximum of 86400"):
        packc.Batch(artifact, model="m", base_url=LOCAL, timeout=1e20)
    with pytest.raises(ValueError, match="timeout .* maximum of 86400"):
        packc.run_live(artifact, {"text": "t"}, model="m", base_url="http://127.0.0.1:9/v1", timeout=1e20)
    packc.Batch(artifact, model="m", base_url=LOCAL, timeout=86400)
    with pytest.raises(ValueError, match=r"concurrency is 4611686018427387904, .*\(100000\)"):
        packc.Batch(artifact, model="m", base_url=LOCAL, concurrency=2**62)
    with pytest.raises(ValueError, match=r"tool_concurrency is 4611686018427387904, .*\(100000\)"):
        packc.Batch(artifact, model="m", base_url=LOCAL, tool_concurrency=2**62)
    packc.Batch(artifact, model="m", base_url=LOCAL, concurrency=100_000, tool_concurrency=100_000)
    with pytest.raises(ValueError, match=r"concurrency is 257, .*threads.*\(256\)"):
        packc.run_live(artifact, {"text": "t"}, model="m", base_url=LOCAL, concurrency=257)
    with pytest.raises(ValueError, match=r"concurrency is 4611686018427387904"):
        packc.run_live(artifact, {"text": "t"}, model="m", base_url=LOCAL, concurrency=2**62)


def threads_now() -> int:
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("Threads:"))


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="counts threads in /proc")
def test_run_live_starts_threads_only_for_the_calls_in_flight() -> None:
    # Example 2 makes one call at a time: one worker carries them, whatever concurrency is.
    with MockOpenAI(documents, delay=0.2) as mock:
        base = threads_now()
        peak = [0]
        stop = threading.Event()

        def watch() -> None:
            while not stop.is_set():
                peak[0] = max(peak[0], threads_now())
                time.sleep(0.01)

        watcher = threading.Thread(target=watch)
        watcher.start()
        try:
            result = packc.run_live(
                packc.compile(EX2), {"text": "x"}, model="m", base_url=mock.base_url, concurrency=256
            )
        finally:
            stop.set()
            watcher.join()
        assert result.model_calls == 2
        # The watcher, the driver, one worker, the mock's request thread and some slack.
        assert peak[0] - base < 12


def run_in_child(batch: packc.Batch, out: "multiprocessing.queues.Queue[Any]") -> None:
    results = batch.run([{"id": "child", "text": "x"}])
    out.put(results)


@pytest.mark.parametrize("used_in_parent", [False, True])
def test_a_batch_made_before_a_fork_runs_in_the_child(used_in_parent: bool) -> None:
    if "fork" not in multiprocessing.get_all_start_methods():
        pytest.skip("no fork start method here")
    context = multiprocessing.get_context("fork")
    with MockOpenAI(documents) as mock:
        batch = packc.Batch(packc.compile(EX2), model="m", base_url=mock.base_url)
        if used_in_parent:
            assert "output" in batch.run([{"text": "x"}])[0]
        out = context.Queue()
        child = context.Process(target=run_in_child, args=(batch, out))
        child.start()
        child.join(30)
        if child.is_alive():
            child.kill()
            child.join()
            pytest.fail("the forked child hung running the batch")
        assert child.exitcode == 0
        [result] = out.get(timeout=5)
        assert result["id"] == "child" and "output" in result and result["calls"] == 2
        # The parent's engine goes on as before.
        assert "output" in batch.run([{"text": "x"}])[0]


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
        # Where it failed, as `packc batch` says the line: the row's position from 1.
        assert [results[0]["error"]["where"], results[2]["error"]["where"]] == ["row 1", "row 3"]
        assert len(mock.requests) == 2


def test_a_negative_or_oversized_int_is_a_value_error_naming_it() -> None:
    artifact = packc.compile(EX2)
    u32, u64, usize = 2**32 - 1, 2**64 - 1, 2 * sys.maxsize + 1
    with pytest.raises(ValueError, match="^rows_in_flight must not be negative, not -1"):
        packc.Batch(artifact, model="m", base_url=LOCAL, rows_in_flight=-1)
    with pytest.raises(ValueError, match="^threads must not be negative, not -1"):
        packc.Batch(artifact, model="m", base_url=LOCAL, threads=-1)
    with pytest.raises(ValueError, match="^concurrency must not be negative, not -1"):
        packc.Batch(artifact, model="m", base_url=LOCAL, concurrency=-1)
    with pytest.raises(ValueError, match="^tool_concurrency must not be negative, not -5"):
        packc.Batch(artifact, model="m", base_url=LOCAL, tool_concurrency=-5)
    with pytest.raises(ValueError, match="^retries must not be negative, not -1"):
        packc.Batch(artifact, model="m", base_url=LOCAL, retries=-1)
    with pytest.raises(ValueError, match=f"^threads must be an int from 0 to {usize}, not {usize + 1}"):
        packc.Batch(artifact, model="m", base_url=LOCAL, threads=usize + 1)
    with pytest.raises(ValueError, match=f"^rpm must be an int from 0 to {u32}, not {u64}"):
        packc.Batch(artifact, model="m", base_url=LOCAL, rpm=u64)
    with pytest.raises(ValueError, match=f"^tpm must be an int from 0 to {u64}, not {u64 + 1}"):
        packc.Batch(artifact, model="m", base_url=LOCAL, tpm=u64 + 1)
    with pytest.raises(TypeError, match="^retries must be an int, not float"):
        packc.Batch(artifact, model="m", base_url=LOCAL, retries=1.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="^retries must not be negative, not -1"):
        packc.run_live(artifact, {"text": "t"}, model="m", base_url=LOCAL, retries=-1)
    with pytest.raises(ValueError, match="^concurrency must not be negative, not -1"):
        packc.run_live(artifact, {"text": "t"}, model="m", base_url=LOCAL, concurrency=-1)
    # In range, they are taken as before (None for no limit).
    packc.Batch(artifact, model="m", base_url=LOCAL, retries=0, rpm=None, tpm=u64, rows_in_flight=1)


def test_rows_must_be_an_iterable_of_rows_not_one_row() -> None:
    batch = packc.Batch(packc.compile(EX2), model="m", base_url="http://127.0.0.1:9/v1")
    with pytest.raises(TypeError, match=r"^rows must be a list .* not a dict: to run one row, pass \[row\]$"):
        batch.run({"text": "x"})
    with pytest.raises(TypeError, match=r"not a str: to run one row"):
        batch.run("text")
    with pytest.raises(TypeError, match=r"not bytes: to run one row"):
        batch.run(b"text")
    assert batch.run([]) == []


def test_an_id_that_is_not_a_str_or_a_number_is_the_rows_position() -> None:
    # As `packc batch` takes a line's `id` member only when it is a string or a number.
    ids: List[Any] = [True, None, [1], {"k": 1}, 7, "x", 2.5, False]
    with MockOpenAI(documents) as mock:
        batch = packc.Batch(packc.compile(EX2), model="m", base_url=mock.base_url)
        results = batch.run([{"id": id, "text": "Abstract: a result."} for id in ids])
    assert [r["id"] for r in results] == [1, 2, 3, 4, 7, "x", 2.5, 8]
    assert all("output" in r for r in results)
