#!/usr/bin/env python3
"""Read a `.ppk` artifact as `ir-spec/FORMAT.md` specifies it, and print a summary.

This reader is written from FORMAT.md alone (Python 3 standard library only), as a check
that the document suffices to read an artifact. It

- checks the container in the order of FORMAT.md §1 "Reading, in order": size, magic,
  major version, the declared lengths, CRC-32, compiler version, tags, nothing after the
  last section, no unknown required section, a `MODL` section;
- decodes the `MODL` section completely (§2) into Python dicts and lists, and checks that
  the decoding consumes the section exactly;
- verifies the module's indices (§3);
- prints a stable JSON summary: pack id, prompt keys, tool keys, state names with their
  transitions, composition names with their step ids and kinds in table order.

Usage: ppk_dump.py FILE [--full | --serde | --both]

`--full` prints the whole decoded module instead of the summary; `--serde` prints it with
every JSON field (§2.1) as its text, which for a file packc wrote is exactly the JSON
that serde_json gives for the Rust `ir_spec::Module` (for cross-checking the readers);
`--both` prints `{"summary": ..., "serde": ...}`, the two in one run. Exit
status 0 on success, 1 when the file is refused, 2 on a usage error. A refused file's
message on stderr is `FILE: NAME: why`, NAME being the error's stable name of FORMAT.md §1
"Reading, in order" (`truncated`, `corrupted`, `malformed_module`, ...).

Decoded values: a struct is a dict of its fields; an enum value is its variant name when
the variant has no fields, else a one-member dict `{name: fields}` where `fields` is the
one unnamed field or a dict of the named ones; `T?` is `None` or the value; a pair is a
two-element list; a JSON field is its parsed JSON (`None` for absent).
"""

import json
import struct
import sys

try:
    import zlib
except ImportError:  # a Python built without zlib
    zlib = None

MAX_ARTIFACT_BYTES = 64 << 20
MAGIC = b"\x89PPK\r\n\x1a\n"
FORMAT_MAJOR = 1
MAX_NESTING = 256
MAX_JSON_DEPTH = 127
KNOWN_SECTIONS = {b"MODL", b"GARD"}


class Refused(Exception):
    """The file is not a readable artifact: `name` (FORMAT.md §1) and why."""

    def __init__(self, name, why):
        super().__init__(f"{name}: {why}")
        self.name = name


# --- §1 Container -------------------------------------------------------------------

def crc32(data):
    """CRC-32, IEEE 802.3 polynomial 0xEDB88320 reflected, init and final xor 0xFFFFFFFF.

    That is zlib's checksum (§1), so zlib computes it when Python has it; the table-driven
    loop below is the definition, and the fallback.
    """
    if zlib is not None:
        return zlib.crc32(data) & 0xFFFFFFFF
    table = crc32.table
    if table is None:
        table = []
        for i in range(256):
            c = i
            for _ in range(8):
                c = (0xEDB88320 ^ (c >> 1)) if c & 1 else (c >> 1)
            table.append(c)
        crc32.table = table
    crc = 0xFFFFFFFF
    for b in data:
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


crc32.table = None


def read_container(data):
    """The header fields and the sections, checked in the order of §1 "Reading, in order"."""
    size = len(data)
    if size > MAX_ARTIFACT_BYTES:
        raise Refused("too_large", f"{size} bytes")
    if data[:8] != MAGIC[:min(size, 8)]:
        raise Refused("not_ppk", "the file does not start with the .ppk magic")

    def truncated(what, need):
        return Refused("truncated", f"{size} bytes, but its {what} needs {need}")

    if size < 8:
        raise truncated("magic", 8)
    if size < 12:
        raise truncated("format version", 12)
    major = int.from_bytes(data[8:10], "little")
    minor = int.from_bytes(data[10:12], "little")
    if major != FORMAT_MAJOR:
        raise Refused("unsupported_version", f"format {major}.x not supported")
    if size < 12 + 32 + 1 + 4 + 4:
        raise truncated("header", 12 + 32 + 1 + 4 + 4)

    # Step 5: the declared layout, by its lengths alone, before the checksum.
    content, trailer = data[:-4], data[-4:]
    pos = 12

    def take(n, what):
        nonlocal pos
        if pos + n > len(content):
            raise truncated(what, pos + n + 4)
        out = content[pos:pos + n]
        pos += n
        return out

    source_hash = take(32, "header")
    n = take(1, "header")[0]
    compiler = take(n, "compiler version")
    count = int.from_bytes(take(4, "section count"), "little")
    sections = []
    for _ in range(count):
        tag = take(4, "section header")
        length = int.from_bytes(take(4, "section header"), "little")
        sections.append((tag, take(length, "section payload")))

    found, expected = int.from_bytes(trailer, "little"), crc32(content)
    if found != expected:
        raise Refused("corrupted", f"CRC-32 {found:08x}, contents give {expected:08x}")
    try:
        compiler = compiler.decode("utf-8")
    except UnicodeDecodeError:
        raise Refused("bad_compiler_version", "the compiler version is not UTF-8") from None
    seen = set()
    for tag, _ in sections:
        if not all(65 <= b <= 90 or 97 <= b <= 122 for b in tag):
            raise Refused("bad_section_tag", f"section tag {tag!r} is not four ASCII letters")
        if tag in seen:
            raise Refused("duplicate_section", f"section {tag.decode()} appears twice")
        seen.add(tag)
    if pos != len(content):
        raise Refused("trailing_bytes", f"{len(content) - pos} bytes after the last section")
    for tag, _ in sections:
        optional = 97 <= tag[0] <= 122
        if not optional and tag not in KNOWN_SECTIONS:
            raise Refused("unknown_required_section",
                          f"section {tag.decode()} is required but unknown")
    return {
        "major": major,
        "minor": minor,
        "source_hash": source_hash.hex(),
        "compiler": compiler,
        "sections": sections,
    }


# --- §2 The MODL payload: type listings ---------------------------------------------
# The types of FORMAT.md §2, as tables: `ppk_types.py`, beside this file (imported
# without leaving a __pycache__ beside the sources).
sys.dont_write_bytecode = True
from ppk_types import ENUMS, IDS, RECURSIVE, STRUCTS, S, seq  # noqa: E402



class JsonText:
    """A `json` / `json?` field: its text as stored, and the parsed value."""

    def __init__(self, text, value):
        self.text = text
        self.value = value


def _not_json(name):
    """Python's parser accepts NaN and Infinity; RFC 8259 JSON does not."""
    raise ValueError(f"{name} is not JSON")


def _json_int(literal):
    """A number without fraction or exponent, as §2.1 reads it: an integer when it fits
    an i64 (negative) or a u64, else (`-0` too) the nearest binary64. Long literals
    never reach `int()`, which refuses more than 4300 digits."""
    if literal == "-0":
        return -0.0
    if len(literal.lstrip("-")) <= 20:
        n = int(literal)
        if -(1 << 63) <= n < (1 << 64):
            return n
    return float(literal)


def _model_problem(v):
    """Why the JSON value `v` has no place in the IR's JSON model (§2.1), or None."""
    stack = [v]
    while stack:
        x = stack.pop()
        if isinstance(x, float) and x in (float("inf"), float("-inf")):
            return "number out of range"
        if isinstance(x, str) and any(0xD800 <= ord(c) <= 0xDFFF for c in x):
            return "lone surrogate escape"
        if isinstance(x, dict):
            stack.extend(x.keys())
            stack.extend(x.values())
        elif isinstance(x, list):
            stack.extend(x)
    return None


def json_depth(v):
    """Arrays and objects nested in `v`, counting `v` itself (0 for a scalar)."""
    deepest, stack = 0, [(v, 1)]
    while stack:
        x, d = stack.pop()
        if isinstance(x, (list, dict)):
            deepest = max(deepest, d)
            stack.extend((c, d + 1) for c in (x.values() if isinstance(x, dict) else x))
    return deepest


def plain(x, raw_json=False):
    """`x` with every JsonText replaced by its value (or its text, with `raw_json`)."""
    if isinstance(x, JsonText):
        return x.text if raw_json else x.value
    if isinstance(x, dict):
        return {k: plain(v, raw_json) for k, v in x.items()}
    if isinstance(x, list):
        return [plain(v, raw_json) for v in x]
    return x


def variant(e):
    """(name, payload) of a decoded enum value; payload None for a variant without fields."""
    if isinstance(e, str):
        return e, None
    (name, payload), = e.items()
    return name, payload


# --- §2.1 Encoding ------------------------------------------------------------------

class Decoder:
    def __init__(self, data):
        self.data = data
        self.pos = 0
        self.depth = 0

    def fail(self, why):
        raise Refused("malformed_module",
                      f"MODL does not decode as a module: {why} at byte {self.pos}")

    def byte(self):
        if self.pos >= len(self.data):
            self.fail("unexpected end")
        b = self.data[self.pos]
        self.pos += 1
        return b

    def take(self, n):
        if n > len(self.data) - self.pos:
            self.fail(f"{n} bytes announced, {len(self.data) - self.pos} left")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def varint(self, bits):
        """Unsigned LEB128, at most ceil(bits/7) bytes, the last one within range."""
        max_bytes = (bits + 6) // 7
        last_max = (1 << (bits - 7 * (max_bytes - 1))) - 1
        out = 0
        for i in range(max_bytes):
            b = self.byte()
            out |= (b & 0x7F) << (7 * i)
            if b & 0x80 == 0:
                if i == max_bytes - 1 and b > last_max:
                    self.fail(f"varint overflows u{bits}")
                return out
        self.fail(f"varint longer than {max_bytes} bytes")

    def string(self):
        raw = self.take(self.varint(64))
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            self.fail("invalid UTF-8")

    def json_text(self, kind):
        """A `json` (value), `json-array` (a value, an array) or `json-text` (document)."""
        text = self.string()
        try:
            value = json.loads(text, parse_constant=_not_json, parse_int=_json_int)
        except (ValueError, RecursionError) as e:
            self.fail(f"bad JSON text: {e}")
        if json_depth(value) > MAX_JSON_DEPTH:
            self.fail(f"JSON text nested deeper than {MAX_JSON_DEPTH} levels")
        if kind != "json-text":
            problem = _model_problem(value)
            if problem:
                self.fail(f"JSON value: {problem}")
        if kind == "json-array" and not isinstance(value, list):
            self.fail("JSON value is not an array")
        if kind == "json-text":
            text = text.strip(" \t\n\r")  # kept as written, less the whitespace around it
        return JsonText(text, value)

    def value(self, t):
        if isinstance(t, str):
            if t == "u32" or t in IDS:
                return self.varint(32)
            if t == "u64":
                return self.varint(64)
            if t == "bool":
                b = self.byte()
                if b > 1:
                    self.fail(f"bool byte {b}")
                return b == 1
            if t == "f64":
                return struct.unpack("<d", self.take(8))[0]
            if t == "str":
                return self.string()
            if t in ("json", "json-text"):
                return self.json_text(t)
            if t in ("json?", "json-array?", "json-text?"):
                tag = self.byte()  # an option around the text: a present `null` stays present
                if tag == 0:
                    return None
                if tag != 1:
                    self.fail(f"option tag {tag}")
                return self.json_text(t[:-1])
            raise AssertionError(t)
        kind = t[0]
        if kind == "opt":
            tag = self.byte()
            if tag == 0:
                return None
            if tag != 1:
                self.fail(f"option tag {tag}")
            return self.value(t[1])
        if kind == "seq":
            n = self.varint(64)
            # Every element takes at least one byte: refuse impossible counts early.
            if n > len(self.data) - self.pos:
                self.fail(f"sequence of {n} elements in {len(self.data) - self.pos} bytes")
            return [self.value(t[1]) for _ in range(n)]
        if kind == "pair":
            return [self.value(t[1]), self.value(t[2])]
        if kind == "struct":
            return {name: self.value(ft) for name, ft in STRUCTS[t[1]]}
        if kind == "enum":
            return self.enum(t[1])
        raise AssertionError(t)

    def enum(self, name):
        recursive = name in RECURSIVE
        if recursive:
            self.depth += 1
            if self.depth > MAX_NESTING:
                self.fail(f"predicates or bindings nested deeper than {MAX_NESTING} levels")
        try:
            variants = ENUMS[name]
            index = self.varint(32)
            if index >= len(variants):
                self.fail(f"{name} variant {index} of {len(variants)}")
            vname, fields = variants[index]
            if fields is None:
                return vname
            if isinstance(fields, list):
                return {vname: {fname: self.value(ft) for fname, ft in fields}}
            return {vname: self.value(fields)}
        finally:
            if recursive:
                self.depth -= 1


def decode_module(payload):
    d = Decoder(payload)
    module = d.value(S("Module"))
    if d.pos != len(payload):
        raise Refused("malformed_module",
                      f"MODL: {len(payload) - d.pos} unexpected bytes after the module")
    return module


# --- §3 Verification ----------------------------------------------------------------

def verify(m):
    """Refuse a module whose indices do not fit its tables (FORMAT.md §3)."""

    def need(ok, what):
        if not ok:
            raise Refused("invalid_module", what)

    n_str = len(m["strings"])
    n_prompts, n_tools = len(m["prompts"]), len(m["tools"])
    n_events, n_comps = len(m["events"]), len(m["compositions"])
    wf = m["workflow"]
    n_states = len(wf["states"]) if wf else 0
    n_artifacts = len(wf["artifacts"]) if wf else 0

    def tool_ref_ok(r):
        name, i = variant(r)
        return i < (n_tools if name == "Tool" else n_str)

    need(all(e < n_str for e in m["events"]), "event name out of range")
    for p in m["prompts"]:
        need(p["key"] < n_str, "prompt key out of range")
        need(all(tool_ref_ok(r) for r in p["tools"]), "prompt tool out of range")
        for seg in p["system"]:
            name, ph = variant(seg)
            if name != "Var":
                continue
            root, i = variant(ph["root"])
            if root == "Declared":
                need(i < len(p["variables"]), "declared variable out of range")
            if root == "Artifact" and i is not None:
                need(i < n_artifacts, "placeholder artifact out of range")
    need(all(t["key"] < n_str for t in m["tools"]), "tool key out of range")
    if wf:
        need(wf["entry"] < n_states, "entry out of range")
        need(all(a < n_str for a in wf["artifacts"]), "artifact name out of range")
        for s in wf["states"]:
            need(s["key"] < n_str, "state key out of range")
            body, i = variant(s["body"])
            need(i < (n_prompts if body == "Prompt" else n_comps), "state body out of range")
            need(all(e < n_events and t < n_states for e, t in s["on_event"]),
                 "transition out of range")
            need(s["on_max_visits"] is None or s["on_max_visits"] < n_states,
                 "on_max_visits out of range")
            need(all(a < n_artifacts for a, _ in s["artifacts"]), "state artifact out of range")
    for a in m["agents"]:
        need(a["key"] < n_str, "agent key out of range")
        start, i = variant(a["start"])
        if start == "Plain":
            need(i is None or i < n_prompts, "agent prompt out of range")
        else:
            need(i < n_states, "agent state out of range")
    for c in m["compositions"]:
        verify_composition(m, c, need)


def verify_composition(m, c, need):
    steps = c["steps"]
    n = len(steps)
    n_str, n_prompts, n_tools = len(m["strings"]), len(m["prompts"]), len(m["tools"])
    need(c["key"] < n_str, "composition key out of range")
    need(all(s < n for s in c["walk"]), "walk out of range")
    need(c["output"] is None or c["output"] < n, "output out of range")

    def ref_ok(r, reader):
        root, s = variant(r["root"])
        return root == "Input" or s < reader

    def bind_ok(b, reader):
        name, x = variant(b)
        if name == "Const":
            return True
        if name == "Whole":
            return ref_ok(x, reader)
        if name == "Interp":
            return all(pn == "Text" or ref_ok(px, reader) for pn, px in map(variant, x))
        if name == "Array":
            return all(bind_ok(item, reader) for item in x)
        return all(bind_ok(item, reader) for _, item in x)

    def pred_ok(p, reader):
        name, x = variant(p)
        if name in ("Compare", "Exists"):
            return ref_ok(x["path"], reader)
        if name in ("All", "Any"):
            return all(pred_ok(item, reader) for item in x)
        return pred_ok(x, reader)

    leaf = ("Prompt", "Agent", "Tool", "Extension")
    for i, s in enumerate(steps):
        kind, k = variant(s["kind"])
        if kind in ("Prompt", "Agent"):
            ok = k["prompt"] < n_prompts and bind_ok(k["input"], i)
            if kind == "Agent":
                ok = ok and all(
                    t < (n_tools if tn == "Tool" else n_str) for tn, t in map(variant, k["tools"])
                ) and (k["tool_called"] is None or k["tool_called"] < n_tools)
        elif kind == "Tool":
            ok = k["tool"] < n_tools and bind_ok(k["args"], i)
        elif kind == "Extension":
            ok = bind_ok(k["input"], i)
        elif kind == "Branch":
            ok = pred_ok(k["predicate"], i) and k["then"] < n \
                and (k["otherwise"] is None or k["otherwise"] < n)
        else:
            ok = all(b < n and variant(steps[b]["kind"])[0] in leaf for b in k["branches"])
        need(ok, f"composition step {i} out of range")
        need(s["id"] < n_str, "step id out of range")
        need(all(d < n for d in s["depends_on"] + s["guarded_by"]),
             "depends_on / guarded_by out of range")


# --- Summary --------------------------------------------------------------------------

def summary(header, m):
    """The stable summary: names resolved through the string table, in table order."""
    strings = m["strings"]
    events = [strings[e] for e in m["events"]]
    wf = m["workflow"]
    states = []
    if wf:
        names = [strings[s["key"]] for s in wf["states"]]
        for s, name in zip(wf["states"], names):
            states.append({
                "name": name,
                "terminal": s["terminal"],
                "transitions": [[events[e], names[t]] for e, t in s["on_event"]],
            })
    return {
        "format": f"{header['major']}.{header['minor']}",
        "compiler": header["compiler"],
        "sections": [tag.decode() for tag, _ in header["sections"]],
        "pack": m["id"],
        "prompts": [strings[p["key"]] for p in m["prompts"]],
        "tools": [strings[t["key"]] for t in m["tools"]],
        "entry": strings[wf["states"][wf["entry"]]["key"]] if wf else None,
        "states": states,
        "agents": [strings[a["key"]] for a in m["agents"]],
        "compositions": [
            {
                "name": strings[c["key"]],
                "steps": [
                    {"id": strings[s["id"]], "kind": variant(s["kind"])[0].lower()}
                    for s in c["steps"]
                ],
                "walk": [strings[c["steps"][i]["id"]] for i in c["walk"]],
            }
            for c in m["compositions"]
        ],
    }


def read(data):
    """(header, module) of an artifact's bytes; raises `Refused`."""
    header = read_container(data)
    modl = dict(header["sections"]).get(b"MODL")
    if modl is None:
        raise Refused("missing_section", "section MODL is missing")
    module = decode_module(modl)
    verify(module)
    module["guards"] = decode_guards(dict(header["sections"]).get(b"GARD"), module)
    return header, module


def decode_guards(payload, module):
    """The `GARD` section (§2.4.1): one list of guards per prompt; all empty without it."""
    n = len(module["prompts"])
    if payload is None:
        return [[] for _ in range(n)]
    d = Decoder(payload)
    guards = d.value(seq(seq(S("Guard"))))
    if d.pos != len(payload) or len(guards) != n:
        raise Refused(f"GARD holds {len(guards)} guard lists for {n} prompts")
    return guards


def main(argv):
    flags = {a for a in argv[1:] if a.startswith("--")}
    args = [a for a in argv[1:] if not a.startswith("--")]
    if len(args) != 1 or not flags <= {"--full", "--serde", "--both"} or len(flags) > 1:
        print(__doc__.split("\n\n")[3], file=sys.stderr)
        return 2
    # Pred and Bind may nest 256 levels, each a few Python frames deep.
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 20000))
    try:
        with open(args[0], "rb") as f:
            data = f.read()
        header, module = read(data)
    except OSError as e:
        print(f"{args[0]}: {e}", file=sys.stderr)
        return 1
    except Refused as e:
        print(f"{args[0]}: {e}", file=sys.stderr)
        return 1
    guards = module.pop("guards")
    if "--both" in flags:
        out = {"summary": summary(header, module), "serde": plain(module, raw_json=True),
               "guards": plain(guards, raw_json=True)}
    elif "--serde" in flags:
        out = plain(module, raw_json=True)
    elif "--full" in flags:
        out = plain(module)
    else:
        out = summary(header, module)
    text = json.dumps(out, indent=2, ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate kept in a `json-text` field
        text = json.dumps(out, indent=2)
    try:
        sys.stdout.write(text + "\n")
        sys.stdout.flush()
    except BrokenPipeError:  # e.g. piped into `head`
        sys.stderr.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
