"""Plain Python values from what data libraries hand out (numpy arrays and scalars)."""

from __future__ import annotations

import sys
from typing import Any


def plain(value: Any) -> Any:
    """``value`` with every numpy array turned into a list and every numpy scalar into
    the Python scalar it holds, at any depth (inside dicts, lists and tuples, and inside
    arrays of objects), so the batch engine reads it as JSON. Other values are returned
    as they are; numpy is never imported here (a value can only be numpy's if numpy was
    imported already)."""
    np = sys.modules.get("numpy")
    if np is None:
        return value
    return _plain(value, np)


def _plain(value: Any, np: Any) -> Any:
    if isinstance(value, np.ndarray):
        # `tolist` converts numbers at every depth, but leaves the items of an object
        # array (Ray's list-valued cells: arrays of arrays) as they are.
        return [_plain(v, np) for v in value.tolist()]
    if isinstance(value, np.generic):
        return _plain(value.item(), np)
    if isinstance(value, dict):
        return {k: _plain(v, np) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v, np) for v in value]
    return value
