"""RFC 0010 Example 2 from Python: a whole run in the packc VM vs the same graph in
LangGraph, both on one core, with instant answering functions.

    python bench_ex2.py [--core N] [--number N] [--repeat N]

Each figure is the minimum over ``--repeat`` rounds of ``--number`` whole runs (timeit),
per run, in wall-clock time and in the process's CPU time (which a machine shared with
other work inflates less). The packc run is compiled once (``Program``) and started anew each time; the
LangGraph graph is compiled once and invoked anew each time. Both answer the same fixed
values: the classifier says research_paper, the extractor returns a fixed analysis.

- ``packc (sans-IO loop)``: start, resume, the turn, two answers, finish, the outcome.
- ``packc.drive``: the same through the blocking driver with a model function.
- ``LangGraph invoke``: a ``StateGraph`` with no-op nodes classify, extract_paper,
  extract_general and a conditional edge after classify.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
import timeit
from pathlib import Path
from typing import Any, Callable, Dict, List, Literal, Optional, TypedDict

import packc

EX2 = Path(__file__).resolve().parents[2] / "examples" / "rfc0010-ex2.pack.yaml"
TEXT = "Deep Residual Learning for Image Recognition. Kaiming He et al. Abstract: ..."
TYPE = {"type": "research_paper", "confidence": 0.97}
ANALYSIS = {
    "title": "Deep Residual Learning for Image Recognition",
    "authors": ["Kaiming He", "Xiangyu Zhang", "Shaoqing Ren", "Jian Sun"],
    "summary": "Residual connections make much deeper networks trainable.",
    "findings": ["152-layer residual nets train well"],
}


def packc_loop() -> Callable[[], Any]:
    program = packc.Program(packc.compile(EX2))
    turn = {"text": TEXT}

    def one() -> Any:
        run = program.start()
        run.resume()
        run.resume(turn=turn)
        run.answer(run.pending[0], output=TYPE)
        run.answer(run.pending[0], output=ANALYSIS)
        run.resume(finish=True)
        outcome = run.outcome
        assert outcome is not None
        return outcome.output

    return one


def packc_drive() -> Callable[[], Any]:
    program = packc.Program(packc.compile(EX2))
    turn = {"text": TEXT}

    def model(call: packc.Call) -> Any:
        return TYPE if call.prompt_task == "doc_classifier" else ANALYSIS

    def one() -> Any:
        return packc.drive(program.start(), model=model, input=turn).output

    return one


class State(TypedDict, total=False):
    text: str
    classify: Dict[str, Any]
    output: Dict[str, Any]


def langgraph_invoke() -> Callable[[], Any]:
    from langgraph.graph import END, START, StateGraph

    def classify(state: State) -> State:
        return {"classify": TYPE}

    def extract_paper(state: State) -> State:
        return {"output": ANALYSIS}

    def extract_general(state: State) -> State:
        return {"output": {"summary": "general", "entities": []}}

    def route(state: State) -> Literal["extract_paper", "extract_general"]:
        return "extract_paper" if state["classify"]["type"] == "research_paper" else "extract_general"

    graph = StateGraph(State)
    graph.add_node("classify", classify)
    graph.add_node("extract_paper", extract_paper)
    graph.add_node("extract_general", extract_general)
    graph.add_edge(START, "classify")
    graph.add_conditional_edges("classify", route)
    graph.add_edge("extract_paper", END)
    graph.add_edge("extract_general", END)
    app = graph.compile()
    state: State = {"text": TEXT}

    def one() -> Any:
        return app.invoke(state)["output"]

    return one


def best(fn: Callable[[], Any], number: int, repeat: int, timer: Callable[[], float]) -> float:
    """Seconds per call: the minimum over ``repeat`` rounds of ``number`` calls."""
    fn()
    return min(timeit.repeat(fn, number=number, repeat=repeat, timer=timer)) / number


def cpu() -> str:
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def main(argv: Optional[List[str]] = None) -> None:
    parser = argparse.ArgumentParser(description="packc vs LangGraph on RFC 0010 Example 2")
    parser.add_argument("--core", type=int, default=0, help="the CPU core both run on")
    parser.add_argument("--number", type=int, default=20_000, help="runs per round for packc")
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args(argv)
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {args.core})

    packc_one, drive_one, lg_one = packc_loop(), packc_drive(), langgraph_invoke()
    assert packc_one() == drive_one() == lg_one() == ANALYSIS
    lg_number = max(1, args.number // 50)
    rows = [
        (name, best(fn, n, args.repeat, time.perf_counter), best(fn, n, args.repeat, time.process_time))
        for name, fn, n in [
            ("packc (sans-IO loop)", packc_one, args.number),
            ("packc.drive", drive_one, args.number),
            ("LangGraph invoke", lg_one, lg_number),
        ]
    ]
    import langgraph  # noqa: F401  (for its version)
    from importlib.metadata import version

    print(f"python {platform.python_version()}, packc {packc.__version__}, langgraph {version('langgraph')}")
    print(f"cpu: {cpu()} (pinned to core {args.core})")
    print(f"load average (1, 5, 15 min) when done: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    lg_wall, lg_cpu = rows[-1][1], rows[-1][2]
    print("| what | wall per run | CPU per run | LangGraph / this (wall) | LangGraph / this (CPU) |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for name, wall, cpu_t in rows:
        print(f"| {name} | {wall * 1e6:.2f} µs | {cpu_t * 1e6:.2f} µs | {lg_wall / wall:.1f}× | {lg_cpu / cpu_t:.1f}× |")


if __name__ == "__main__":
    main()
