"""packc.ray: a pack over a Ray Dataset on a local Ray instance, against a loopback model."""

from __future__ import annotations

import concurrent.futures
import json
import os
from pathlib import Path
from typing import Any, Dict, Iterator, List

import pytest
import ray

import packc
import packc.ray
from conftest import EX2
from mock_openai import MockOpenAI, documents, system_of

PAPER_OUTPUT = {"title": "T", "authors": ["A"], "summary": "S", "findings": ["F"]}
GENERAL_OUTPUT = {"summary": "S", "entities": []}


def by_abstract(body: Dict[str, Any]) -> Dict[str, Any]:
    """Example 2's answers, classifying a document with an abstract as a research paper
    and anything else as general."""
    system = system_of(body)
    if system.startswith("Classify the document"):
        kind = "research_paper" if "Abstract" in system else "general"
        return {"content": json.dumps({"type": kind, "confidence": 0.9})}
    return documents(body)


@pytest.fixture(scope="module")
def local_ray() -> Iterator[None]:
    # A small local instance: two CPUs, no dashboard, quiet progress bars.
    os.environ.setdefault("RAY_DATA_DISABLE_PROGRESS_BARS", "1")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        yield
    finally:
        ray.shutdown()


def dataset_rows(n: int) -> List[Dict[str, Any]]:
    return [
        {"id": i, "text": f"Paper {i}. Abstract: a result." if i % 2 == 0 else f"Notice {i}: offline at noon."}
        for i in range(n)
    ]


def test_run_dataset_runs_every_row_once_on_two_actors(local_ray: None) -> None:
    with MockOpenAI(by_abstract) as mock:
        # Six blocks, so both actors get some (a repartition would need CPUs the actors hold).
        ds = ray.data.from_items(dataset_rows(60), override_num_blocks=6)
        out = packc.ray.run_dataset(
            ds, packc.compile(EX2), model="m", base_url=mock.base_url, actors=2, batch_size=10, concurrency=8
        )
        rows = sorted(out.take_all(), key=lambda r: int(r["id"]))
        assert [int(r["id"]) for r in rows] == list(range(60))
        for r in rows:
            assert r["error"] is None
            assert json.loads(r["output"]) == (PAPER_OUTPUT if int(r["id"]) % 2 == 0 else GENERAL_OUTPUT)
            assert r["calls"] == 2 and r["tokens"] == 20
            assert r["text"].startswith("Paper" if int(r["id"]) % 2 == 0 else "Notice")
        # Every row reached the model exactly twice: nothing repeated, nothing lost.
        assert len(mock.requests) == 120


def test_failed_rows_carry_their_error_and_the_dataset_goes_on(local_ray: None) -> None:
    with MockOpenAI(by_abstract) as mock:
        items = dataset_rows(4) + [{"id": 4, "text": ""}]
        schema = {"type": "object", "required": ["text"], "properties": {"text": {"type": "string", "minLength": 1}}}
        out = packc.ray.run_dataset(
            ray.data.from_items(items),
            packc.compile(EX2).to_bytes(),
            model="m",
            base_url=mock.base_url,
            input_schema=schema,
        )
        rows = {int(r["id"]): r for r in out.take_all()}
        assert rows[4]["output"] is None
        assert rows[4]["error"]["kind"] == "invalid_input"
        assert rows[4]["error"]["where"] == "/text"
        assert rows[4]["calls"] == 0
        assert all(rows[i]["error"] is None for i in range(4))
        assert len(mock.requests) == 8


def test_rows_with_ragged_list_columns_are_written_as_json_lines(local_ray: None, tmp_path: Path) -> None:
    # A list column whose lengths vary comes to the runner as arrays in an object array;
    # passed back as they came, Ray's `write_json` crashed its worker (pandas' `to_json`).
    with MockOpenAI(by_abstract) as mock:
        items = [dict(row, tags=["a", "b"][: row["id"] % 3]) for row in dataset_rows(30)]
        out = packc.ray.run_dataset(
            ray.data.from_items(items), packc.compile(EX2), model="m", base_url=mock.base_url, batch_size=8
        )
        # A crashed write is retried by Ray without end: fail after two minutes instead.
        pool = concurrent.futures.ThreadPoolExecutor(1)
        try:
            pool.submit(out.write_json, str(tmp_path / "out")).result(timeout=120)
        finally:
            pool.shutdown(wait=False)
    lines = [json.loads(line) for f in sorted((tmp_path / "out").iterdir()) for line in f.read_text().splitlines()]
    rows = {int(r["id"]): r for r in lines}
    assert sorted(rows) == list(range(30))
    for i, r in rows.items():
        assert r["tags"] == ["a", "b"][: i % 3]
        assert json.loads(r["output"]) == (PAPER_OUTPUT if i % 2 == 0 else GENERAL_OUTPUT)


def test_a_bad_option_fails_before_ray_starts_anything(local_ray: None) -> None:
    ds = ray.data.from_items(dataset_rows(2))
    with pytest.raises(TypeError):
        packc.ray.run_dataset(ds, packc.compile(EX2), model="m", no_such_option=1)
    with pytest.raises(ValueError, match="concurrency"):
        packc.ray.run_dataset(ds, packc.compile(EX2), model="m", concurrency=0)
    with pytest.raises(packc.ArtifactError):
        packc.ray.run_dataset(ds, b"not a ppk", model="m")


def test_the_runner_is_a_plain_callable_on_a_block() -> None:
    # What map_batches calls per block, without Ray: columns in, the same columns plus
    # the result columns out, rows in order.
    import numpy as np

    with MockOpenAI(by_abstract) as mock:
        runner = packc.ray.PackRunner(packc.compile(EX2).to_bytes(), model="m", base_url=mock.base_url)
        block = {"id": np.array([7, 8]), "text": np.array(["Paper. Abstract: x", "Notice: y"])}
        out = runner(block)
        assert list(out) == ["id", "text", *packc.ray.RESULT_COLUMNS]
        assert json.loads(out["output"][0]) == PAPER_OUTPUT
        assert json.loads(out["output"][1]) == GENERAL_OUTPUT
        assert list(out["calls"]) == [2, 2] and list(out["error"]) == [None, None]
        assert out["output"].shape == (2,)


def test_the_runner_hands_list_valued_cells_to_the_engine_as_lists() -> None:
    # Ray gives a list-valued column as an object array of arrays.
    import numpy as np

    with MockOpenAI(by_abstract) as mock:
        runner = packc.ray.PackRunner(packc.compile(EX2).to_bytes(), model="m", base_url=mock.base_url)
        tags = np.empty(2, dtype=object)
        tags[0] = np.array(["a", "b"])
        tags[1] = np.array([], dtype=object)
        block = {"text": np.array(["Paper. Abstract: x", "Notice: y"]), "tags": tags}
        out = runner(block)
        assert list(out["error"]) == [None, None]
        assert json.loads(out["output"][0]) == PAPER_OUTPUT
        assert list(out["calls"]) == [2, 2]


def test_a_null_cell_is_a_member_the_record_lacked() -> None:
    # Arrow fills a column a record lacks with nulls: such a cell is left out of the
    # row, so an input_schema's optional member is missing rather than null.
    import numpy as np

    schema = {"type": "object", "properties": {"text": {"type": "string"}, "title": {"type": "string"}}}
    with MockOpenAI(by_abstract) as mock:
        runner = packc.ray.PackRunner(
            packc.compile(EX2).to_bytes(), model="m", base_url=mock.base_url, input_schema=schema
        )
        title = np.empty(2, dtype=object)
        title[0], title[1] = None, "T"
        out = runner({"text": np.array(["Paper. Abstract: x", "Notice: y"]), "title": title})
        assert list(out["error"]) == [None, None]
        assert list(out["calls"]) == [2, 2]


def test_a_column_named_like_a_result_is_refused(local_ray: None) -> None:
    ds = ray.data.from_items([{"text": "x", "output": "earlier"}])
    with pytest.raises(ValueError, match="column named 'output'.*rename it"):
        packc.ray.run_dataset(ds, packc.compile(EX2), model="m", base_url="http://127.0.0.1:9/v1")
