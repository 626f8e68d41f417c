"""Threads sharing one Program; the async driver's concurrency; memory over many runs."""

from __future__ import annotations

import asyncio
import os
import threading
from typing import Any, Dict, List, Set

import pytest

import packc
from conftest import EX2, EX3_INPUT, EXTRACTED, PAPER, ex2_model, ex3_model, ex3_tool


def test_threads_share_one_program(ex3_program: packc.Program) -> None:
    expected = packc.drive(ex3_program.start(), model=ex3_model, tool=ex3_tool, input=EX3_INPUT).output
    results: List[Any] = []
    errors: List[BaseException] = []
    lock = threading.Lock()

    def worker(n: int) -> None:
        try:
            for i in range(200):
                run = ex3_program.start()
                text = {"text": f"{EX3_INPUT['text']} #{n}.{i}"}
                out = packc.drive(run, model=ex3_model, tool=ex3_tool, input=text).output
                with lock:
                    results.append(out)
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(results) == 1600
    assert all(r == expected for r in results)


def test_threads_compile_and_run_cases_side_by_side() -> None:
    # compile and run_case release the GIL; whatever the interleaving, each gets its own.
    out: Dict[int, bytes] = {}

    def worker(n: int) -> None:
        out[n] = packc.compile(EX2).to_bytes()

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(out.values())) == 1


def test_drive_async_issues_the_four_branches_concurrently(ex3_program: packc.Program) -> None:
    """A host that answers a branch call only once all four branch calls are out at once:
    a driver that awaited one call before issuing the next would never finish."""

    async def main() -> packc.Outcome:
        outstanding: Set[int] = set()
        all_four = asyncio.Event()
        most = 0

        async def branch_gate(call: packc.Call) -> None:
            nonlocal most
            if call.branch is None:
                return
            outstanding.add(call.id)
            most = max(most, len(outstanding))
            if len(outstanding) == 4:
                all_four.set()
            await asyncio.wait_for(all_four.wait(), timeout=10)

        async def model(call: packc.Call) -> Any:
            await branch_gate(call)
            return ex3_model(call)

        async def tool(call: packc.Call) -> Any:
            await branch_gate(call)
            await asyncio.sleep(0.001 * (3 - (call.branch or 0)))  # finish out of order
            return ex3_tool(call)

        run = ex3_program.start(record_calls=True)
        outcome = await packc.drive_async(run, model=model, tool=tool, input=EX3_INPUT)
        assert most == 4
        # The call log keeps declaration order whatever order the answers came in.
        assert [c.get("prompt", c.get("tool")) for c in run.calls[:4]] == [
            "title_extractor",
            "keyword_extractor",
            "doc.parse_structure",
            "doc.extract_citations",
        ]
        return outcome

    outcome = asyncio.run(main())
    sync = packc.drive(ex3_program.start(), model=ex3_model, tool=ex3_tool, input=EX3_INPUT)
    assert outcome.output == sync.output


def test_drive_async_cancels_calls_in_flight_when_one_fails(ex3_program: packc.Program) -> None:
    cancelled: List[int] = []

    async def main() -> None:
        async def model(call: packc.Call) -> Any:
            if call.branch == 1:
                raise RuntimeError("host bug")
            try:
                await asyncio.sleep(10)
            except asyncio.CancelledError:
                cancelled.append(call.id)
                raise
            return None

        await packc.drive_async(ex3_program.start(), model=model, tool=model, input=EX3_INPUT)

    with pytest.raises(RuntimeError, match="host bug"):
        asyncio.run(main())
    assert len(cancelled) == 3


def test_drive_async_accepts_plain_functions_and_call_failed(ex2_program: packc.Program) -> None:
    def model(call: packc.Call) -> Any:
        if call.prompt_task == "doc_classifier":
            return PAPER
        raise packc.CallFailed("extractor down")

    with pytest.raises(packc.HostError, match="extractor down"):
        asyncio.run(packc.drive_async(ex2_program.start(), model=model, input={"text": "t"}))
    outcome = asyncio.run(packc.drive_async(ex2_program.start(), model=ex2_model, input={"text": "t"}))
    assert outcome.output == EXTRACTED


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="needs Linux /proc")
def test_memory_stays_flat_over_100000_runs(ex2_program: packc.Program) -> None:
    turn = {"text": "Deep Residual Learning"}

    def runs(n: int) -> None:
        for _ in range(n):
            run = ex2_program.start()
            run.resume()
            run.resume(turn=turn)
            call = run.pending[0]
            call.system  # rendered and dropped
            run.answer(call, output=PAPER)
            run.answer(run.pending[0], output=EXTRACTED)
            run.resume(finish=True)
            outcome = run.outcome
            assert outcome is not None
            run.snapshot()

    runs(5_000)  # warm up allocator pools
    before = rss_bytes()
    runs(100_000)
    grown = rss_bytes() - before
    # A leak of even one small object per run would be several MB here.
    assert grown < 4 * 1024 * 1024, f"RSS grew by {grown} bytes over 100,000 runs"
