"""A FastAPI service that holds conversations with a PromptPack workflow and parks each
one, between the customer's messages, as a VM snapshot in SQLite.

It runs the support workflow of ``examples/guide-add-workflow.pack.yaml``: a triage state
routes to a persistent billing or technical state, which stays put (waiting for the
customer: a human in the loop) until the model names ``resolved`` or ``escalate``.

    POST /runs            {"message": "..."} -> {"id", "reply", "state", "waiting"}
    POST /runs/{id}       {"message": "..."} -> the same, for the next message (409: see below)
    POST /runs/{id}/finish                   -> {"id", "output", "state"}; the run is deleted
    GET  /runs/{id}                          -> {"id", "trace"}

Nothing of a run lives in the process between requests: each request restores the run
from its snapshot, drives it until it waits for the caller again, and stores the new
snapshot, so any worker (or a restarted service) can take the next message.

Two requests for one run can overlap (a double click, a retry, two workers): each
restores the same snapshot, and the one that saved last would silently drop the other's
message. So each run has a version, and a request saves only if the version is still the
one it restored (compare-and-swap, in one SQL ``UPDATE``; it works across processes and
machines sharing the database). The request that loses gets ``409 Conflict`` and nothing
of it is kept: the client sends its message again, to the run as the winner left it.

    uvicorn --factory fastapi_service:create_app    # the support pack, ./runs.sqlite3
    PACKC_PACK=my.pack.yaml PACKC_DB=/srv/runs.sqlite3 uvicorn fastapi_service:app

(``app`` exists only when ``PACKC_PACK`` or ``PACKC_DB`` is set, so that importing the
module creates no database.)

``model`` below is a stand-in that answers by keywords; put a real model call there.
"""

from __future__ import annotations

import os
import sqlite3
import time
import uuid
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

from fastapi import FastAPI, HTTPException
from pydantic import BaseModel

import packc

REPO = Path(__file__).resolve().parents[2]
DEFAULT_PACK = REPO / "examples" / "guide-add-workflow.pack.yaml"

Model = Callable[[packc.Call], Any]


def model(call: packc.Call) -> Any:
    """A keyword model for the support workflow: routes, resolves, or asks for more."""
    text = str(call.input).lower()
    if call.prompt_task == "triage":
        route = "billing" if any(w in text for w in ("invoice", "bill", "refund")) else "technical"
        return packc.Answer(route, event=route)
    if call.prompt_task in ("billing", "technical"):
        if "thank" in text or "works" in text:
            return packc.Answer("Glad that fixed it.", event="resolved")
        if "human" in text or "agent" in text:
            return packc.Answer("Passing you to a colleague.", event="escalate")
        return f"Let's look at that ({call.prompt_task}): can you tell me more?"
    return "Summary: your request is handled. Anything else?"


class Message(BaseModel):
    """A customer message."""

    message: str


def state_of(trace: List[str]) -> Optional[str]:
    """The workflow state a trace ends in (`enter S` / `transition A -> S on E`)."""
    for line in reversed(trace):
        if line.startswith("enter "):
            return line.split()[1]
        if line.startswith("transition "):
            return line.split("->")[1].split()[0]
    return None


class Store:
    """Snapshots by run id, in SQLite (standard library), each with the version it was
    saved at: a change is written only over the version it was made from."""

    def __init__(self, path: str) -> None:
        self.path = path
        with self.connect() as db:
            db.execute(
                "CREATE TABLE IF NOT EXISTS runs "
                "(id TEXT PRIMARY KEY, snapshot BLOB NOT NULL, version INTEGER NOT NULL, updated REAL)"
            )

    def connect(self) -> sqlite3.Connection:
        return sqlite3.connect(self.path)

    def create(self, run_id: str, snapshot: bytes) -> None:
        with self.connect() as db:
            db.execute(
                "INSERT INTO runs (id, snapshot, version, updated) VALUES (?, ?, 1, ?)",
                (run_id, snapshot, time.time()),
            )

    def load(self, run_id: str) -> Tuple[bytes, int]:
        """The run's snapshot and its version."""
        with self.connect() as db:
            row = db.execute("SELECT snapshot, version FROM runs WHERE id = ?", (run_id,)).fetchone()
        if row is None:
            raise HTTPException(status_code=404, detail=f"no run {run_id}")
        return bytes(row[0]), int(row[1])

    def save(self, run_id: str, snapshot: bytes, version: int) -> None:
        """Replaces version ``version`` of the run; 409 if another request changed it since."""
        with self.connect() as db:
            changed = db.execute(
                "UPDATE runs SET snapshot = ?, version = version + 1, updated = ? WHERE id = ? AND version = ?",
                (snapshot, time.time(), run_id, version),
            ).rowcount
        if changed == 0:
            raise conflict(run_id)

    def delete(self, run_id: str, version: int) -> None:
        """Deletes version ``version`` of the run; 409 if another request changed it since."""
        with self.connect() as db:
            changed = db.execute("DELETE FROM runs WHERE id = ? AND version = ?", (run_id, version)).rowcount
        if changed == 0:
            raise conflict(run_id)


def conflict(run_id: str) -> HTTPException:
    """The answer to a request that lost a race for its run: nothing of it was kept."""
    return HTTPException(
        status_code=409,
        detail=f"run {run_id} was changed by another request meanwhile: send the message again",
    )


def advance(run: packc.Run, need: packc.Need, answer: Model) -> Tuple[packc.Need, Any]:
    """Answers calls until the run needs the caller (or is done); returns the last reply."""
    reply: Any = None
    while need not in (packc.Need.CALLER, packc.Need.DONE):
        if need == packc.Need.CLOCK:
            need = run.resume(clock=int(time.time() * 1000))
            continue
        call = run.pending[0]
        result = answer(call)
        if isinstance(result, packc.Answer):
            reply = result.output
            need = run.answer(call, output=result.output, event=result.event)
        else:
            reply = result
            need = run.answer(call, output=result)
    return need, reply


def create_app(pack: str | Path = DEFAULT_PACK, db_path: str = "runs.sqlite3", answer: Model = model) -> FastAPI:
    """The service for ``pack``, keeping snapshots in the SQLite file ``db_path``."""
    program = packc.Program(packc.compile(pack))
    store = Store(db_path)
    app = FastAPI(title="packc conversations")

    def step(run_id: str, run: packc.Run, need: packc.Need, version: Optional[int]) -> Dict[str, Any]:
        """Drives the run to its next wait and stores it over ``version`` (``None``: a new run)."""
        try:
            need, reply = advance(run, need, answer)
        except packc.RunError as e:
            if version is not None:
                store.delete(run_id, version)
            raise HTTPException(status_code=422, detail=f"{e.kind}: {e.message}") from e
        if version is None:
            store.create(run_id, run.snapshot())
        else:
            store.save(run_id, run.snapshot(), version)
        return {"id": run_id, "reply": reply, "state": state_of(run.trace), "waiting": need == packc.Need.CALLER}

    def turn(run: packc.Run, message: str) -> packc.Need:
        """Hands the run the caller's message. One past the run's value limits (16 MiB by
        default) is refused with 413; the stored run is left as it was."""
        try:
            return run.resume(turn=message)
        except packc.LimitExceeded as e:
            raise HTTPException(status_code=413, detail=e.message) from e
        except packc.ProtocolError as e:
            raise HTTPException(status_code=409, detail=e.message) from e

    @app.post("/runs")
    def start(body: Message) -> Dict[str, Any]:
        run = program.start()
        run.resume()
        return step(uuid.uuid4().hex, run, turn(run, body.message), None)

    @app.post("/runs/{run_id}")
    def message(run_id: str, body: Message) -> Dict[str, Any]:
        snapshot, version = store.load(run_id)
        run = program.restore(snapshot)
        return step(run_id, run, turn(run, body.message), version)

    @app.post("/runs/{run_id}/finish")
    def finish(run_id: str) -> Dict[str, Any]:
        snapshot, version = store.load(run_id)
        run = program.restore(snapshot)
        run.resume(finish=True)
        outcome = run.outcome
        store.delete(run_id, version)
        return {"id": run_id, "output": outcome.output if outcome else None, "state": outcome.state if outcome else None}

    @app.get("/runs/{run_id}")
    def show(run_id: str) -> Dict[str, Any]:
        snapshot, _ = store.load(run_id)
        return {"id": run_id, "trace": program.restore(snapshot).trace}

    return app


if os.environ.get("PACKC_PACK") or os.environ.get("PACKC_DB"):
    app = create_app(os.environ.get("PACKC_PACK", str(DEFAULT_PACK)), os.environ.get("PACKC_DB", "runs.sqlite3"))
