"""An async OpenAI-compatible host for packc: model calls over HTTP with httpx, tools
as async Python functions, the calls of a parallel step in flight together.

    python asyncio_host.py PACK --base-url http://127.0.0.1:8080/v1 --model NAME \\
        [--input JSON] [--api-key-env OPENAI_API_KEY]

prints the run's output as JSON. The VM decides what to call; this file only carries the
calls out (``packc.drive_async`` starts every outstanding call at once and feeds each
answer back as it arrives).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from typing import Any, Awaitable, Callable, Dict, List, Optional

import httpx

import packc

Tool = Callable[[Any], Awaitable[Any]]


async def parse_structure(args: Any) -> Any:
    """doc.parse_structure: the section outline (the lines that name sections)."""
    text = str(args.get("content", ""))
    _, _, sections = text.partition("Sections:")
    return {"sections": [s.strip(" .") for s in sections.split(",") if s.strip(" .")]}


async def extract_citations(args: Any) -> Any:
    """doc.extract_citations: sentences that look like citations."""
    return [s.strip() for s in str(args.get("content", "")).split(".") if "et al" in s]


async def echo(args: Any) -> Any:
    """A stand-in for a lookup service: says what it was asked."""
    return {"asked": args}


TOOLS: Dict[str, Tool] = {
    "doc.parse_structure": parse_structure,
    "doc.extract_citations": extract_citations,
    "doc.section_lookup": echo,
    "ref.search": echo,
    "kb.lookup": echo,
}


def text(value: Any) -> str:
    """A value as message text: a string as is, anything else as JSON."""
    return value if isinstance(value, str) else json.dumps(value)


class OpenAIHost:
    """Carries out model calls against an OpenAI-compatible Chat Completions server."""

    def __init__(self, client: httpx.AsyncClient, base_url: str, model: str, api_key: Optional[str]) -> None:
        self.client = client
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model = model
        self.headers = {"authorization": f"Bearer {api_key}"} if api_key else {}

    def messages(self, call: packc.Call) -> List[Dict[str, Any]]:
        """The system prompt, earlier exchanges, the input, then this call's tool loop."""
        out: List[Dict[str, Any]] = [{"role": "system", "content": call.system}]
        loop: List[Dict[str, Any]] = []
        ids: List[str] = []  # tool call ids waiting for their results, in order
        issued = 0
        for entry in call.history:
            if "input" in entry:
                out.append({"role": "user", "content": text(entry["input"])})
                out.append({"role": "assistant", "content": text(entry["output"])})
            elif "tool_calls" in entry:
                calls = []
                for req in entry["tool_calls"]:
                    ids.append(f"call_{issued}")
                    issued += 1
                    function = {"name": self.function(call, req["name"]), "arguments": json.dumps(req["args"])}
                    calls.append({"id": ids[-1], "type": "function", "function": function})
                loop.append({"role": "assistant", "content": None, "tool_calls": calls})
            else:
                result = entry["tool_result"]
                body = result["output"] if "output" in result else {"error": result.get("error")}
                loop.append({"role": "tool", "tool_call_id": ids.pop(0), "content": text(body)})
        out.append({"role": "user", "content": text(call.input)})
        return out + loop

    @staticmethod
    def function(call: packc.Call, key: str) -> str:
        """The function name a model sees for a tool key."""
        return next((t["name"] for t in call.offered_tools if t["key"] == key), key)

    async def __call__(self, call: packc.Call) -> Any:
        body: Dict[str, Any] = {"model": self.model, "messages": self.messages(call)}
        params = call.parameters or {}
        body.update({k: v for k, v in params.items() if k in ("temperature", "max_tokens", "top_p")})
        if call.offered_tools:
            body["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": t["name"],
                        "description": t["description"],
                        "parameters": t["parameters"] or {"type": "object"},
                    },
                }
                for t in call.offered_tools
            ]
        schema = call.output_schema
        if schema and schema["schema"] is not None:
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "output", "schema": schema["schema"]},
            }
        try:
            response = await self.client.post(self.url, json=body, headers=self.headers)
            response.raise_for_status()
            message = response.json()["choices"][0]["message"]
        except (httpx.HTTPError, KeyError, IndexError, ValueError) as e:
            raise packc.CallFailed(f"{self.url}: {e}") from e
        if message.get("tool_calls"):
            keys = {t["name"]: t["key"] for t in call.offered_tools}
            return packc.Answer(
                tool_calls=[
                    {"name": keys.get(tc["function"]["name"], tc["function"]["name"]),
                     "args": json.loads(tc["function"]["arguments"] or "{}")}
                    for tc in message["tool_calls"]
                ]
            )
        content = message.get("content") or ""
        output: Any = content
        if content.lstrip()[:1] in ("{", "["):
            try:
                output = json.loads(content)
            except ValueError:
                pass
        # In a prompt state with events, the answer names the first event the text does.
        event = next((e for e in call.events if e in content), None)
        return packc.Answer(output, event=event) if event else output


async def tool(call: packc.Call) -> Any:
    """Carries out a tool call with the Python function bound to its key."""
    fn = TOOLS.get(call.tool or "")
    if fn is None:
        raise packc.CallFailed(f"no tool bound to {call.tool!r}")
    return await fn(call.input)


async def run(pack: str, input: Any, base_url: str, model: str, api_key: Optional[str] = None) -> packc.Outcome:
    """Compiles ``pack`` and runs it once with ``input``."""
    program = packc.Program(packc.compile(pack))
    async with httpx.AsyncClient(timeout=120) as client:
        host = OpenAIHost(client, base_url, model, api_key)
        return await packc.drive_async(program.start(), model=host, tool=tool, input=input)


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("pack")
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--input", default="null", help="the turn's input, as JSON")
    parser.add_argument("--api-key-env", default="OPENAI_API_KEY")
    args = parser.parse_args(argv)
    try:
        outcome = asyncio.run(
            run(args.pack, json.loads(args.input), args.base_url, args.model, os.environ.get(args.api_key_env))
        )
    except packc.RunError as e:
        print(f"error[{e.kind}]: {e.message}", file=sys.stderr)
        return 1
    print(json.dumps(outcome.output))
    return 0


if __name__ == "__main__":
    sys.exit(main())
