#!/usr/bin/env python3
"""Derive packc's v1.5 schema from the official PromptPack v1.4.0 schema.

Run from this folder:  python3 derive.py ../../../shared/spec/promptpack.schema.v1.4.0.json

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


src = json.load(open(sys.argv[1]))
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

json.dump(schema, sys.stdout, indent=1, sort_keys=True)
sys.stdout.write("\n")
