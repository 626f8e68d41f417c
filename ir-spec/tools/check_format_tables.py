#!/usr/bin/env python3
"""Check that the type listings `ppk_dump.py` decodes by are those of FORMAT.md §2.3–§2.6.

`ppk_types.py` (the tables `ppk_dump.py` decodes by) transcribes each struct table (fields,
types, in order) and each enum table (variant indices, names, fields) of FORMAT.md by hand. This script reads the tables back
out of the document and compares, so that an edit to one without the other is caught.

Usage: check_format_tables.py [FORMAT.md]   (default: the FORMAT.md beside tools/)
Exit status 0 when they agree; 1, listing each difference, when they do not.
"""

import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True  # no __pycache__ beside the sources

import ppk_types  # noqa: E402


def type_name(t):
    """A type descriptor of ppk_dump, in FORMAT.md's notation."""
    if isinstance(t, str):
        return t
    kind = t[0]
    if kind == "opt":
        return type_name(t[1]) + "?"
    if kind == "seq":
        return "[" + type_name(t[1]) + "]"
    if kind == "pair":
        return f"({type_name(t[1])}, {type_name(t[2])})"
    return t[1]


def table_rows(doc, name, kind, header):
    """The cells of the table that follows `**`name`** (kind...)`, or None."""
    m = re.search(
        r"\*\*`" + name + r"`\*\* \(" + kind + r"[^\n]*\n\n\| " + header
        + r" \|[^\n]*\n\|[^\n]*\n((?:\|[^\n]*\n)+)",
        doc,
    )
    if not m:
        return None
    return [[c.strip() for c in row.strip().strip("|").split("|")]
            for row in m.group(1).strip().split("\n")]


def check(doc):
    problems = []
    for name, fields in ppk_types.STRUCTS.items():
        rows = table_rows(doc, name, "struct", "#")
        if rows is None:
            problems.append(f"struct {name}: no table in FORMAT.md")
            continue
        got = [(r[0], r[1].strip("`"), r[2].strip("`")) for r in rows]
        want = [(str(i + 1), f, type_name(t)) for i, (f, t) in enumerate(fields)]
        if got != want:
            problems.append(f"struct {name}: FORMAT.md {got}, ppk_dump {want}")
    for name, variants in ppk_types.ENUMS.items():
        want = [(str(i), v) for i, (v, _) in enumerate(variants)]
        if all(f is None for _, f in variants):
            m = re.search(r"\*\*`" + name + r"`\*\* \(enum, no fields\):(.*?)\n\n", doc, re.S)
            got = re.findall(r"(\d+)\s*`(\w+)`", m.group(1)) if m else None
            if got != want:
                problems.append(f"enum {name}: FORMAT.md {got}, ppk_dump {want}")
            continue
        rows = table_rows(doc, name, "enum", "index")
        if rows is None:
            problems.append(f"enum {name}: no table in FORMAT.md")
            continue
        got = [(r[0], r[1].strip("`")) for r in rows]
        if got != want:
            problems.append(f"enum {name}: FORMAT.md {got}, ppk_dump {want}")
            continue
        for row, (v, f) in zip(rows, variants):
            if f is None:
                fields = "—"
            elif isinstance(f, list):
                fields = ", ".join(f"`{a}: {type_name(b)}`" for a, b in f)
            else:
                fields = f"`{type_name(f)}`"
            if row[2] != fields:
                problems.append(f"enum {name}::{v}: FORMAT.md {row[2]!r}, ppk_dump {fields!r}")
    return problems


def main(argv):
    path = argv[1] if len(argv) > 1 else os.path.join(HERE, "..", "FORMAT.md")
    with open(path, encoding="utf-8") as f:
        problems = check(f.read())
    for p in problems:
        print(p, file=sys.stderr)
    if not problems:
        n = len(ppk_types.STRUCTS) + len(ppk_types.ENUMS)
        print(f"{n} types: ppk_dump.py and FORMAT.md agree")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
