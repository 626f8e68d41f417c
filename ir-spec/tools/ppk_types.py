"""The `MODL` section's types as FORMAT.md §2 lists them, as tables for `ppk_dump.py`.

Each struct is its fields in order, each enum its variants in tag order (a variant's
fields: `None`, one unnamed type, or named fields). Standard library only, like the
reader that uses it.
"""

#
# Types: "u32", "u64", "bool", "f64", "str", the JSON kinds of §2.1 ("json", "json?",
# "json-array?", "json-text", "json-text?"), a typed index name (a u32), ("opt", T),
# ("seq", T), ("pair", A, B), ("struct", Name), ("enum", Name).

IDS = {"StrId", "PromptId", "ToolId", "EventId", "AgentId", "CompId", "StateId",
       "ArtifactId", "StepId"}


def S(name):
    return ("struct", name)


def E(name):
    return ("enum", name)


def opt(t):
    return ("opt", t)


def seq(t):
    return ("seq", t)


def pair(a, b):
    return ("pair", a, b)


STRUCTS = {
    # §2.3
    "Module": [
        ("id", "str"),
        ("strings", seq("str")),
        ("events", seq("StrId")),
        ("prompts", seq(S("Prompt"))),
        ("tools", seq(S("Tool"))),
        ("workflow", opt(S("Workflow"))),
        ("agents", seq(S("Agent"))),
        ("compositions", seq(S("Composition"))),
    ],
    "Tool": [
        ("key", "StrId"),
        ("name", "str"),
        ("description", "str"),
        ("parameters", "json-text"),
    ],
    "Agent": [
        ("key", "StrId"),
        ("start", E("AgentStart")),
    ],
    # §2.4
    "Prompt": [
        ("key", "StrId"),
        ("system", seq(E("Segment"))),
        ("variables", seq(S("Variable"))),
        ("tools", seq(E("ToolRef"))),
        ("policy", S("ToolPolicy")),
        ("parameters", "json-text"),
    ],
    "Guard": [
        ("name", "str"),
        ("check", E("Check")),
        ("message", "str"),
        ("direction", E("Direction")),
    ],
    "ToolPolicy": [
        ("tool_choice_none", "bool"),
        ("max_rounds", opt("u32")),
        ("max_tool_calls_per_turn", opt("u32")),
        ("blocklist", seq("str")),
    ],
    "Placeholder": [
        ("root", E("VarRoot")),
        ("path", seq(E("PathSeg"))),
    ],
    "Variable": [
        ("name", "str"),
        ("ty", opt(E("VarType"))),
        ("required", "bool"),
        ("default", "json?"),
        ("validation", S("Validation")),
    ],
    "Validation": [
        ("pattern", opt("str")),
        ("min_length", opt("u64")),
        ("max_length", opt("u64")),
        ("minimum", opt("f64")),
        ("maximum", opt("f64")),
        ("allowed", "json-array?"),
    ],
    "OutputSchema": [
        ("name", "str"),
        ("schema", "json-text?"),
    ],
    # §2.5
    "Workflow": [
        ("entry", "StateId"),
        ("states", seq(S("State"))),
        ("budget", S("Budget")),
        ("artifacts", seq("StrId")),
    ],
    "Budget": [
        ("max_total_visits", opt("u64")),
        ("max_tool_calls", opt("u64")),
        ("max_wall_time_sec", opt("u64")),
    ],
    "State": [
        ("key", "StrId"),
        ("body", E("StateBody")),
        ("mode", E("Orchestration")),
        ("terminal", "bool"),
        ("on_event", seq(pair("EventId", "StateId"))),
        ("max_visits", opt("u64")),
        ("on_max_visits", opt("StateId")),
        ("persistent", "bool"),
        ("artifacts", seq(pair("ArtifactId", E("ArtifactMode")))),
    ],
    # §2.6
    "Composition": [
        ("key", "StrId"),
        ("steps", seq(S("Step"))),
        ("walk", seq("StepId")),
        ("output", opt("StepId")),
    ],
    "Step": [
        ("id", "StrId"),
        ("kind", E("StepKind")),
        ("depends_on", seq("StepId")),
        ("guarded_by", seq("StepId")),
        ("max_attempts", "u32"),
        ("evals", seq("str")),
    ],
    "Ref": [
        ("root", E("Root")),
        ("path", seq("str")),
    ],
}

# Each enum: its variants in index order, each (name, fields) where fields is None (no
# fields), a single type (one unnamed field), or a list of (name, type).
ENUMS = {
    "AgentStart": [("Plain", opt("PromptId")), ("State", "StateId")],
    "ToolRef": [("Tool", "ToolId"), ("Member", "StrId")],
    "Segment": [("Text", "str"), ("Var", S("Placeholder"))],
    "VarRoot": [
        ("Input", None),
        ("Artifacts", None),
        ("Artifact", opt("ArtifactId")),
        ("Declared", "u32"),
        ("Undeclared", "str"),
    ],
    "PathSeg": [("Field", "str"), ("Index", "u32")],
    "Direction": [("Output", None), ("Input", None), ("Both", None)],
    "Check": [
        ("BannedWords", [("words", seq("str")), ("word_boundary", "bool")]),
        ("MaxLength", [("max_characters", opt("u64")), ("max_tokens", opt("u64"))]),
        ("MaxSentences", "u64"),
        ("ContainsAll", seq("str")),
        ("ContainsAny", seq("str")),
        ("Regex", [("pattern", "str"), ("expect_match", "bool")]),
        ("JsonValid", None),
        ("JsonSchema", "json"),
        ("Host", [("params", "json")]),
    ],
    "VarType": [("String", None), ("Number", None), ("Boolean", None), ("Object", None),
                ("Array", None)],
    "StateBody": [("Prompt", "PromptId"), ("Composition", "CompId")],
    "Orchestration": [("Internal", None), ("External", None), ("Hybrid", None),
                      ("Composition", None)],
    "ArtifactMode": [("Replace", None), ("Append", None)],
    "StepKind": [
        ("Prompt", [("prompt", "PromptId"), ("input", E("Bind")),
                    ("output_schema", opt(S("OutputSchema")))]),
        ("Agent", [("prompt", "PromptId"), ("input", E("Bind")),
                   ("output_schema", opt(S("OutputSchema"))), ("tools", seq(E("ToolRef"))),
                   ("max_tool_calls_per_turn", opt("u32")), ("max_steps", opt("u32")),
                   ("tool_called", opt("ToolId"))]),
        ("Tool", [("tool", "ToolId"), ("args", E("Bind"))]),
        ("Branch", [("predicate", E("Pred")), ("then", "StepId"),
                    ("otherwise", opt("StepId"))]),
        ("Parallel", [("branches", seq("StepId")), ("strategy", E("Reduce")),
                      ("into", "str")]),
        ("Extension", [("kind", "str"), ("params", "json"), ("input", E("Bind"))]),
    ],
    "Reduce": [("Append", None), ("Replace", None), ("Barrier", None)],
    "Root": [("Input", None), ("Step", "StepId")],
    "Bind": [
        ("Const", "json"),
        ("Whole", S("Ref")),
        ("Interp", seq(E("Part"))),
        ("Array", seq(E("Bind"))),
        ("Object", seq(pair("str", E("Bind")))),
    ],
    "Part": [("Text", "str"), ("Ref", S("Ref"))],
    "Pred": [
        ("Compare", [("path", S("Ref")), ("test", E("Compare"))]),
        ("Exists", [("path", S("Ref")), ("expect", "bool")]),
        ("All", seq(E("Pred"))),
        ("Any", seq(E("Pred"))),
        ("Not", E("Pred")),
    ],
    "Compare": [
        ("Equals", [("value", "json"), ("negate", "bool")]),
        ("In", [("list", "json-array?"), ("negate", "bool")]),
        ("Ordered", [("op", E("Ordering")), ("bound", opt("f64"))]),
    ],
    "Ordering": [("Lt", None), ("Le", None), ("Gt", None), ("Ge", None)],
}

RECURSIVE = {"Pred", "Bind"}
