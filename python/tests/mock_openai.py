"""A loopback OpenAI-compatible Chat Completions server for the tests and examples.

``MockOpenAI(reply)`` serves ``POST /v1/chat/completions`` on 127.0.0.1 (a free port) in
a thread; ``reply(body)`` gets the request body and returns the assistant message
(``{"content": ...}`` or ``{"tool_calls": [...]}``). It counts requests and the most in
flight at once.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Dict, List, Optional

Reply = Callable[[Dict[str, Any]], Dict[str, Any]]


class MockOpenAI:
    """A mock server; use as a context manager. ``base_url`` ends in ``/v1``."""

    def __init__(self, reply: Reply, delay: float = 0.0) -> None:
        self.reply = reply
        self.delay = delay
        self.requests: List[Dict[str, Any]] = []
        #: The ``Authorization`` header of each request (``None`` when absent).
        self.auth: List[Optional[str]] = []
        self.in_flight = 0
        self.most_in_flight = 0
        self._lock = threading.Lock()
        mock = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                length = int(self.headers.get("content-length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                with mock._lock:
                    mock.requests.append(body)
                    mock.auth.append(self.headers.get("authorization"))
                    mock.in_flight += 1
                    mock.most_in_flight = max(mock.most_in_flight, mock.in_flight)
                status: int
                payload: Dict[str, Any]
                try:
                    if mock.delay:
                        time.sleep(mock.delay)
                    if not self.path.endswith("/chat/completions"):
                        status, payload = 404, {"error": {"message": f"no route {self.path}"}}
                    else:
                        message = {"role": "assistant", "content": None, **mock.reply(body)}
                        status, payload = 200, {
                            "id": "mock",
                            "object": "chat.completion",
                            "model": body.get("model", "mock"),
                            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                            "usage": {"total_tokens": 10},
                        }
                finally:
                    # A request stops being in flight once its reply is made, before the
                    # reply is written: a client may send its next request as soon as it
                    # has read this one's, before this thread would get the lock again.
                    with mock._lock:
                        mock.in_flight -= 1
                self._send(status, payload)

            def _send(self, status: int, payload: Dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    # The client has gone (a cancelled batch drops its open requests):
                    # there is no one to answer.
                    pass

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self._thread: Optional[threading.Thread] = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self) -> "MockOpenAI":
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()


def system_of(body: Dict[str, Any]) -> str:
    """The system message of a request."""
    for m in body.get("messages", []):
        if m.get("role") == "system":
            return str(m.get("content") or "")
    return ""


def tool_results(body: Dict[str, Any]) -> int:
    """How many tool results a request's messages carry."""
    return sum(1 for m in body.get("messages", []) if m.get("role") == "tool")


def call(name: str, args: Dict[str, Any], n: int) -> Dict[str, Any]:
    """One tool call of an assistant message."""
    return {"id": f"call_{n}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


def documents(body: Dict[str, Any]) -> Dict[str, Any]:
    """Answers the RFC 0010 example packs' prompts (Examples 2 and 3) by their system prompt."""
    system = system_of(body)
    if system.startswith("Classify the document"):
        return {"content": json.dumps({"type": "research_paper", "confidence": 0.9})}
    if system.startswith("Extract from this research paper"):
        return {"content": json.dumps({"title": "T", "authors": ["A"], "summary": "S", "findings": ["F"]})}
    if system.startswith("Extract a one-sentence summary"):
        return {"content": json.dumps({"summary": "S", "entities": []})}
    if system.startswith("Extract the title"):
        return {"content": "Sparse Attention for Long Documents"}
    if system.startswith("List up to five keywords"):
        return {"content": json.dumps(["sparse attention", "long documents"])}
    if system.startswith("You are a document analyst"):
        done = tool_results(body)
        if done == 0:
            return {"tool_calls": [call("doc_section_lookup", {"section": "Method"}, 0)]}
        if done == 1:
            return {
                "tool_calls": [
                    call("ref_search", {"query": "Vaswani 2017"}, 1),
                    call("kb_lookup", {"topic": "sparsity"}, 2),
                ]
            }
        return {"content": json.dumps({"summary": f"after {done} tool results", "findings": [], "references": []})}
    return {"content": "?"}
