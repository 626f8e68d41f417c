"""Host validators (``guard`` calls) and extension steps through the Python drivers."""

from typing import Any, Dict, List

import packc
from conftest import ONE_PROMPT_PACK

TOXIC = """
id: t
name: T
version: 1.0.0
template_engine: {version: v1, syntax: "{{variable}}"}
prompts:
  chat:
    id: chat
    name: Chat
    version: 1.0.0
    system_template: Hi.
    validators:
      - {type: toxicity, message: "withheld", params: {threshold: 0.5}}
workflow:
  version: 1
  entry: s
  states:
    s: {prompt_task: chat, terminal: true}
"""

EXTENSION = ONE_PROMPT_PACK + """\
$schema: https://promptpack.org/schema/v1.9.0/promptpack.schema.json
compositions:
  c:
    version: 1
    steps:
      - {id: r, kind: acme.rerank, input: "${input}", top_k: 3}
"""


def test_a_guard_call_is_answered_by_the_guard_function() -> None:
    program = packc.Program(packc.compile(text=TOXIC))
    seen: List[Dict[str, Any]] = []

    def judge(call: packc.Call) -> Any:
        assert call.kind == "guard"
        assert call.guard is not None
        seen.append(call.guard)
        return {"pass": "rude" not in call.guard["text"]}

    def model(call: packc.Call) -> Any:
        return "a rude answer"

    outcome = packc.drive(program.start(), model=model, guard=judge, input="hello")
    assert outcome.output == "withheld"
    assert seen == [{"type": "toxicity", "params": {"threshold": 0.5}, "text": "a rude answer"}]
    # A passing verdict leaves the answer as it is.
    outcome = packc.drive(program.start(), model=lambda c: "kind words", guard=judge, input="x")
    assert outcome.output == "kind words"


def test_an_extension_step_is_answered_by_the_extension_function() -> None:
    program = packc.Program(packc.compile(text=EXTENSION))

    def rerank(call: packc.Call) -> Any:
        assert call.kind == "extension"
        assert call.extension == {"kind": "acme.rerank", "params": {"top_k": 3}}
        return {"ranked": call.input}

    outcome = packc.drive(program.start("composition:c"), extension=rerank, input=["b", "a"])
    assert outcome.output == {"ranked": ["b", "a"]}
