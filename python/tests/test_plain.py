"""Numpy values (as Ray hands a block's cells) turned into plain Python values."""

from __future__ import annotations

from typing import Any

import pytest

from packc._plain import plain

np: Any = pytest.importorskip("numpy")


def test_numpy_arrays_and_scalars_become_lists_and_python_scalars_at_any_depth() -> None:
    # A column of list-valued cells is an object array of arrays; `tolist` keeps them.
    tags = np.empty(2, dtype=object)
    tags[0] = np.array(["a", "b"])
    tags[1] = np.array([], dtype=object)
    assert isinstance(tags.tolist()[0], np.ndarray)
    block = {
        "tags": tags,
        "score": np.array([1.5, 2.5]),
        "n": np.int64(3),
        "flag": np.bool_(True),
        "name": np.str_("x"),
        "nested": {"grid": np.array([[1, 2], [3, 4]]), "pair": (np.float32(0.5), [np.int8(1)])},
    }
    value = plain(block)
    assert value == {
        "tags": [["a", "b"], []],
        "score": [1.5, 2.5],
        "n": 3,
        "flag": True,
        "name": "x",
        "nested": {"grid": [[1, 2], [3, 4]], "pair": [0.5, [1]]},
    }
    assert type(value["n"]) is int and type(value["flag"]) is bool and type(value["name"]) is str
    assert type(value["tags"][0][0]) is str


def test_values_without_numpy_in_them_are_returned_as_they_are() -> None:
    row = {"text": "x", "tags": ["a"], "n": 1}
    assert plain(row) == row
    assert plain("x") == "x"
