#!/usr/bin/env python3
"""Derive packc's schemas, one per spec level, from the official PromptPack schemas.

Run from this folder (S = ../../../shared/spec):

    python3 derive.py v1.5 $S/promptpack.schema.v1.4.0.json > promptpack.v1.5.schema.json
    python3 derive.py official $S/promptpack.schema.v1.5.1.json > promptpack.v1.5.1.schema.json
    python3 derive.py v1.6 $S/promptpack.schema.v1.5.1.json $S/promptpack.schema.v1.8.1.json \
        > promptpack.v1.6.schema.json
    python3 derive.py official $S/promptpack.schema.v1.8.1.json > promptpack.v1.8.1.schema.json
    python3 derive.py official $S/promptpack.schema.v1.9.0.json > promptpack.v1.9.0.schema.json

`official`: the official v1.5.1, v1.8.1 and v1.9.0 schemas already define compositions,
`requires.providers` and `AgentDef.state`; only their annotations are dropped. Nothing is
added to them by hand.

`v1.6`: a v1.6 claim is read at level 1.5.1, with RFC 0013's governance members as v1.8.1
defines them: `metadata.governance` and `AgentDef.governance`, and the definitions they
use, copied from the v1.8.1 schema unchanged.

`v1.5` (the level of packs that claim v1.5.0 or earlier, or nothing):

What changes (RFC 0010, RFC 0011, shared/semantics/workflow.md §16):
- top level: `compositions`, a map of composition name to object. The inside of a
  composition is checked by hand in `check/compositions.rs`, because the semantics give
  most of its rules kinds more specific than `schema_violation`
  (shared/semantics/compositions.md 2.23).
- WorkflowState: `composition` (string); `prompt_task` no longer required (a missing one
  is `orchestration_conflict`, checked by hand); `orchestration` and `persistence`
  become enums again, as RFC 0005/0010 define them.
- WorkflowConfig.version: 1 or 2 (2 is a synonym of 1, RFC 0009 Unresolved Questions 1).
- AgentDef: `state` (string, RFC 0011).
- `examples` and `description` annotations are dropped: they do not validate anything.
"""
import json
import sys


ANNOTATIONS = ("examples", "description", "default")


def strip(node, in_properties=False):
    """Drop annotation keywords; keep members *named* like them inside `properties`."""
    if isinstance(node, dict):
        return {
            k: strip(v, k in ("properties", "$defs"))
            for k, v in node.items()
            if in_properties or k not in ANNOTATIONS
        }
    if isinstance(node, list):
        return [strip(v) for v in node]
    return node


def official(path):
    return strip(json.load(open(path)))


def v16(path_151, path_181):
    schema = official(path_151)
    later = official(path_181)
    for name in ("Governance", "Obligation", "ObligationControl", "Review", "ActionScope"):
        schema["$defs"][name] = later["$defs"][name]
    ref = {"$ref": "#/$defs/Governance"}
    schema["properties"]["metadata"]["properties"]["governance"] = ref
    schema["$defs"]["AgentDef"]["properties"]["governance"] = ref
    return schema


def dump(schema):
    json.dump(schema, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")


mode = sys.argv[1]
if mode == "official":
    dump(official(sys.argv[2]))
    sys.exit(0)
if mode == "v1.6":
    dump(v16(sys.argv[2], sys.argv[3]))
    sys.exit(0)
assert mode == "v1.5", "mode: v1.5, v1.6 or official"
src = json.load(open(sys.argv[2]))
schema = strip(src)
schema["$id"] = "https://packc.invalid/schema/v1.5/promptpack.schema.json"
schema["title"] = "PromptPack v1.5 (packc)"
defs = schema["$defs"]

schema["properties"]["compositions"] = {
    "type": "object",
    "additionalProperties": {"type": "object"},
}

state = defs["WorkflowState"]
state["required"] = [r for r in state.get("required", []) if r != "prompt_task"]
if not state["required"]:
    del state["required"]
state["properties"]["composition"] = {"type": "string"}
state["properties"]["orchestration"] = {
    "type": "string",
    "enum": ["internal", "external", "hybrid", "composition"],
}
state["properties"]["persistence"] = {"type": "string", "enum": ["transient", "persistent"]}

defs["WorkflowConfig"]["properties"]["version"] = {"type": "integer", "enum": [1, 2]}
defs["AgentDef"]["properties"]["state"] = {"type": "string"}

dump(schema)
