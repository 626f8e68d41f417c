"""Run a pack over a Ray Dataset: the batch engine of ``packc batch`` on every Ray worker.

Ray is optional (``pip install packc[ray]``); ``import packc`` never imports it, this
module does. Ray does the distribution: it splits the dataset into blocks, starts the
actors, ships each block to one and collects the results. packc adds no scheduler, queue
or cluster code of its own: each actor holds one :class:`packc.Batch` (built once, from
the artifact's bytes shipped once per actor) and runs each block it is given through it,
many rows in flight at once.

::

    import packc, packc.ray, ray

    ray.init()                                    # local; on a cluster: ray.init(address="auto")
    ds = ray.data.read_json("tickets.jsonl")      # one row per record
    out = packc.ray.run_dataset(
        ds, packc.compile("triage.pack.yaml"),
        model="gpt-4o-mini", concurrency=64,      # the live options of packc.Batch
        actors=4,                                 # Ray's side: actors, rows per block
    )
    out.write_json("results/")

Each result row is the input row with five columns added: ``output`` (the run's output
as JSON text, ``None`` when it failed), ``error`` (``None``, or ``{"kind", "message",
"where"}``), ``calls``, ``tokens`` and ``wall_ms``. A failed row is a row with an
``error``; the dataset goes on. The output is text because a pack's outputs may differ in
shape from row to row (ex2's paper and general analyses), and Arrow, which holds Ray's
blocks, would merge such dicts into one struct and add the other shape's members as
nulls: ``json.loads(row["output"])`` gives back exactly what the run returned.

Arrow does the same to the input: a record that lacks a member another record has gets
a null in that column. A null cell is therefore left out of the row's input (a missing
optional member, not a ``null`` that an ``input_schema`` would refuse). A dataset with a
column named like a result column is refused before anything runs: its values would be
replaced; rename it first (``ds.rename_columns({"output": "previous_output"})``).
"""

from __future__ import annotations

from typing import Any, Dict, List, Union

import json

import numpy as np
import ray.data

from . import Artifact, Batch
from ._plain import plain

#: The columns :class:`PackRunner` adds to each row.
RESULT_COLUMNS = ("output", "error", "calls", "tokens", "wall_ms")


class PackRunner:
    """A callable class for ``Dataset.map_batches(PackRunner, batch_format="numpy", ...)``.

    ``PackRunner(artifact_bytes, **live_options)`` builds one :class:`packc.Batch` per
    actor from the ``.ppk`` bytes (``Artifact.to_bytes()``) and the keyword arguments of
    ``packc.Batch`` (``model``, ``base_url``, ``concurrency``, ``rpm``, ...). Called with a
    block (a dict of column arrays), it runs each row as the input of one run and returns
    the block with :data:`RESULT_COLUMNS` added, rows in the same order.
    """

    def __init__(self, artifact: bytes, **live_options: Any) -> None:
        self.batch = Batch(Artifact.from_bytes(artifact), **live_options)

    def __call__(self, block: Dict[str, np.ndarray]) -> Dict[str, np.ndarray]:
        # A list-valued cell comes as an array (a column of them is an array of arrays,
        # which `tolist` leaves as they are): every array, at any depth, becomes a list.
        _refuse_result_columns(block.keys())
        columns = {name: plain(values) for name, values in block.items()}
        count = len(next(iter(columns.values()), []))
        # A null cell is a member the record lacked (Arrow fills the column): left out.
        rows = [
            {name: values[i] for name, values in columns.items() if values[i] is not None} for i in range(count)
        ]
        results = self.batch.run(rows)
        # The input's columns go back out with each object cell plain too: a cell that is
        # a NumPy array (a list column, ragged) can crash Ray 2.60's `write_json` (pandas'
        # `to_json` on such a block dies with SIGSEGV, and Ray retries it forever).
        out = {
            name: _objects(columns[name]) if values.dtype == object else values
            for name, values in block.items()
        }
        out["output"] = _objects([json.dumps(r["output"]) if "output" in r else None for r in results])
        out["error"] = _objects([_error(r.get("error")) for r in results])
        for name in ("calls", "tokens", "wall_ms"):
            out[name] = np.array([r[name] for r in results], dtype=np.int64)
        return out


def _refuse_result_columns(names: Any) -> None:
    """Raises ``ValueError`` when the input has a column a result would replace."""
    clash = [name for name in RESULT_COLUMNS if name in names]
    if clash:
        raise ValueError(
            f"the dataset has a column named {', '.join(repr(c) for c in clash)}, which the results would "
            f"replace: rename it first (ds.rename_columns({{{clash[0]!r}: 'input_{clash[0]}'}}))"
        )


def _error(error: Any) -> Any:
    """A row's error with all three members (``where`` may be ``None``), so every error
    of a column has the same shape."""
    if error is None:
        return None
    return {"kind": error["kind"], "message": error["message"], "where": error.get("where")}


def _objects(values: List[Any]) -> np.ndarray:
    """A one-dimensional object array of ``values`` (``np.array`` would turn a list of
    equal-length lists into a matrix)."""
    array = np.empty(len(values), dtype=object)
    for i, v in enumerate(values):
        array[i] = v
    return array


def run_dataset(
    ds: ray.data.Dataset,
    artifact: Union[Artifact, bytes],
    *,
    actors: int = 1,
    batch_size: int = 1024,
    num_cpus: float = 1.0,
    **live_options: Any,
) -> ray.data.Dataset:
    """Runs ``artifact`` over every row of ``ds``: ``ds.map_batches`` with :class:`PackRunner`.

    ``actors`` is how many :class:`PackRunner` actors Ray starts (each with ``num_cpus``
    CPUs and its own engine); ``batch_size`` rows go to an actor at a time. The other
    keyword arguments are :class:`packc.Batch`'s (``model`` is required); ``threads``
    defaults to the actor's CPUs. They are checked here, before Ray starts anything: a
    bad option, or a column named like a result column, raises at once rather than in
    every actor. Returns the (lazy) dataset of
    results; nothing runs until it is consumed.
    """
    schema = ds.schema()
    if schema is not None:
        _refuse_result_columns(schema.names)
    data = artifact.to_bytes() if isinstance(artifact, Artifact) else bytes(artifact)
    options: Dict[str, Any] = {"threads": max(1, int(num_cpus)), **live_options}
    # The same construction an actor does: a bad artifact or option fails here.
    Batch(Artifact.from_bytes(data), **options)
    mapped: ray.data.Dataset = ds.map_batches(
        PackRunner,
        batch_format="numpy",
        batch_size=batch_size,
        fn_constructor_args=(data,),
        fn_constructor_kwargs=options,
        compute=ray.data.ActorPoolStrategy(size=actors),
        num_cpus=num_cpus,
    )
    return mapped


__all__ = ["RESULT_COLUMNS", "PackRunner", "run_dataset"]
