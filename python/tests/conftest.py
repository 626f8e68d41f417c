"""Shared paths and fixtures of the packc Python tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict

import pytest

import packc

#: The repository root (this folder is python/tests).
REPO = Path(__file__).resolve().parents[2]
#: The shared reference material beside the repository (absent in a bare clone).
SHARED = REPO.parent / "shared"
EXAMPLES = REPO / "examples"

#: The members every pack has (id, name, version, template engine) and one prompt `p`:
#: the start of the small packs the tests write.
ONE_PROMPT_PACK = """\
id: t
name: T
version: 1.0.0
template_engine: {version: v1, syntax: "{{variable}}"}
prompts:
  p: {id: p, name: P, version: 1.0.0, system_template: hi}
"""

EX2 = EXAMPLES / "rfc0010-ex2.pack.yaml"
EX3 = EXAMPLES / "rfc0010-ex3.pack.yaml"

#: A research paper classification and extraction: the answers of RFC 0010 Example 2.
PAPER: Dict[str, Any] = {"type": "research_paper", "confidence": 0.97}
EXTRACTED: Dict[str, Any] = {
    "title": "Deep Residual Learning",
    "authors": ["Kaiming He"],
    "summary": "Residual connections make deep networks trainable.",
    "findings": ["152 layers train well"],
}


def ex2_model(call: packc.Call) -> Any:
    """Answers Example 2's model calls: a research paper, then its extraction."""
    if call.prompt_task == "doc_classifier":
        return PAPER
    return EXTRACTED


@pytest.fixture(scope="session")
def ex2_program() -> packc.Program:
    return packc.Program(packc.compile(EX2))


@pytest.fixture(scope="session")
def ex3_program() -> packc.Program:
    return packc.Program(packc.compile(EX3))


def ex3_model(call: packc.Call) -> Any:
    """Answers Example 3's model calls: the two extractors, then the agent's three turns
    (one tool, then two tools in one turn, then the analysis)."""
    if call.prompt_task == "title_extractor":
        return "Sparse Attention for Long Documents"
    if call.prompt_task == "keyword_extractor":
        return ["sparse attention", "long documents"]
    results = sum(1 for h in call.history if "tool_result" in h)
    if results == 0:
        return packc.Answer(tool_calls=[{"name": "doc.section_lookup", "args": {"section": "Method"}}])
    if results == 1:
        return packc.Answer(
            tool_calls=[("ref.search", {"query": "Vaswani 2017"}), ("kb.lookup", {"topic": "sparsity"})]
        )
    return {"summary": f"seen {call.input['title']}", "findings": [], "references": []}


def ex3_tool(call: packc.Call) -> Any:
    """Answers Example 3's tool calls with their own key and arguments."""
    return {"tool": call.tool, "args": call.input}


EX3_INPUT = {"text": "Sparse Attention for Long Documents. Sections: Introduction, Method."}


def ex3_half_answered(program: packc.Program) -> packc.Run:
    """Example 3 started with :data:`EX3_INPUT`, two of its four parallel branches
    answered out of order (branch 2, then branch 0); the other two stay outstanding."""
    run = program.start(record_calls=True)
    run.resume()
    run.resume(turn=EX3_INPUT)
    calls = {c.branch: c for c in run.pending}
    run.answer(calls[2], output=ex3_tool(calls[2]))
    run.answer(calls[0], output=ex3_model(calls[0]))
    return run
