"""RFC 0010 Example 2 over a file of rows in LangGraph, against an OpenAI-compatible server.

    python langgraph_ex2.py --base-url URL --input rows.jsonl --output results.jsonl \
        [--max-concurrency 1000]

The graph is the pack's: ``classify`` → a conditional edge on the type → ``extract_paper``
or ``extract_general``. Each node is an ``async`` model call through one shared
``httpx.AsyncClient`` (a connection pool as large as the concurrency), sending the
pack's rendered system prompt and the document as the user message, and parsing the
answer's JSON content. The rows run through ``graph.abatch(..., max_concurrency=N)``:
the async form of ``graph.batch``, which a graph of ``async`` nodes needs (``batch``
would run them on a thread pool, one blocking call per thread). One result line per
row, in input order: ``{"id", "output"}`` or ``{"id", "error"}``, the shape of
``packc batch``'s lines that the benchmark counts.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from typing import Any, Dict, List, Literal, Optional, TypedDict

import httpx
from langgraph.graph import END, START, StateGraph

CLASSIFY = (
    "Classify the document into exactly one type: research_paper, technical_report, manual or general. "
    'Return JSON: {"type": <type>, "confidence": <0..1>}.\n\nDocument:\n'
)
PAPER = (
    "Extract from this research paper its title, authors, a one-sentence summary of the abstract, "
    "and its key findings. Return JSON with title, authors, summary, findings.\n\nPaper:\n"
)
GENERAL = (
    "Extract a one-sentence summary and the main entities of this document. "
    "Return JSON with summary and entities.\n\nDocument:\n"
)


class State(TypedDict, total=False):
    text: str
    classify: Dict[str, Any]
    output: Dict[str, Any]


def build(client: httpx.AsyncClient, model: str, temperature: Dict[str, float]) -> Any:
    async def complete(system: str, text: str, temp: float) -> Dict[str, Any]:
        response = await client.post(
            "chat/completions",
            json={
                "model": model,
                "messages": [{"role": "system", "content": system + text}, {"role": "user", "content": text}],
                "temperature": temp,
            },
        )
        response.raise_for_status()
        content = response.json()["choices"][0]["message"]["content"]
        answer = json.loads(content)
        if not isinstance(answer, dict):
            raise ValueError(f"the model answered {content!r}, not a JSON object")
        return answer

    async def classify(state: State) -> State:
        return {"classify": await complete(CLASSIFY, state["text"], temperature["classify"])}

    async def extract_paper(state: State) -> State:
        return {"output": await complete(PAPER, state["text"], temperature["extract"])}

    async def extract_general(state: State) -> State:
        return {"output": await complete(GENERAL, state["text"], temperature["extract"])}

    def route(state: State) -> Literal["extract_paper", "extract_general"]:
        return "extract_paper" if state["classify"].get("type") == "research_paper" else "extract_general"

    graph = StateGraph(State)
    graph.add_node("classify", classify)
    graph.add_node("extract_paper", extract_paper)
    graph.add_node("extract_general", extract_general)
    graph.add_edge(START, "classify")
    graph.add_conditional_edges("classify", route)
    graph.add_edge("extract_paper", END)
    graph.add_edge("extract_general", END)
    return graph.compile()


async def run(base_url: str, rows: List[Dict[str, Any]], concurrency: int, model: str) -> List[Any]:
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(
        base_url=base_url.rstrip("/") + "/", limits=limits, timeout=120.0
    ) as client:
        app = build(client, model, {"classify": 0.0, "extract": 0.2})
        inputs: List[State] = [{"text": row["text"]} for row in rows]
        results: List[Any] = await app.abatch(
            inputs, config={"max_concurrency": concurrency}, return_exceptions=True
        )
        return results


def main(argv: Optional[List[str]] = None) -> None:
    parser = argparse.ArgumentParser(description="RFC 0010 example 2 over rows, in LangGraph")
    parser.add_argument("--base-url", required=True, help="the server's base URL, ending in /v1")
    parser.add_argument("--input", required=True, help="rows as JSON Lines, each with id and text")
    parser.add_argument("--output", required=True, help="where the result lines go")
    parser.add_argument("--max-concurrency", type=int, default=1000)
    parser.add_argument("--model", default="mock")
    args = parser.parse_args(argv)

    with open(args.input, encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    results = asyncio.run(run(args.base_url, rows, args.max_concurrency, args.model))
    with open(args.output, "w", encoding="utf-8") as out:
        for n, (row, result) in enumerate(zip(rows, results)):
            line: Dict[str, Any] = {"id": row.get("id", n + 1)}
            if isinstance(result, BaseException):
                line["error"] = {"kind": type(result).__name__, "message": str(result)}
            else:
                line["output"] = result.get("output")
            out.write(json.dumps(line) + "\n")


if __name__ == "__main__":
    main()
