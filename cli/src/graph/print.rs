//! The two printers of a [`Graph`]: Graphviz `dot` and Mermaid `flowchart`. Both walk the
//! same groups and edges, so the formats always show the same nodes.

use packc_compiler::render::{escape_control, is_control};

use super::{Graph, Group, Item, Node, Shape};

/// Prints a Graphviz `digraph`.
pub fn to_dot(g: &Graph) -> String {
    let mut out = format!("digraph {} {{\n", dot_str(&g.name));
    out.push_str("  compound=true;\n  node [shape=box, style=rounded];\n");
    for group in &g.groups {
        print_group(&mut out, group, 1, &DOT_GROUP);
    }
    for e in &g.edges {
        let mut attrs = Vec::new();
        if let Some(l) = &e.label {
            attrs.push(format!("label={}", dot_str(l)));
        }
        if e.dashed {
            attrs.push("style=dashed".to_owned());
        }
        if let Some(group) = &e.from_group {
            // Leave from the cluster's border, one rank below its branches.
            attrs.push(format!("ltail=cluster_{group}, minlen=2"));
        }
        let attrs = if attrs.is_empty() {
            String::new()
        } else {
            format!(" [{}]", attrs.join(", "))
        };
        out.push_str(&format!("  {} -> {}{attrs};\n", e.from, e.to));
    }
    out.push_str("}\n");
    out
}

/// How one format writes a group: its opening lines, each node's line and its last line
/// (without the indent).
struct GroupLines {
    open: fn(&Group) -> String,
    node: fn(&Node) -> String,
    close: &'static str,
}

/// Writes `group` and the groups inside it, indented two spaces a level from `depth`.
fn print_group(out: &mut String, group: &Group, depth: usize, lines: &GroupLines) {
    let pad = "  ".repeat(depth);
    for line in (lines.open)(group).lines() {
        out.push_str(&format!("{pad}{line}\n"));
    }
    for item in &group.items {
        match item {
            Item::Node(n) => out.push_str(&format!("{pad}  {}\n", (lines.node)(n))),
            Item::Group(g) => print_group(out, g, depth + 1, lines),
        }
    }
    out.push_str(&format!("{pad}{}\n", lines.close));
}

/// A group as a DOT `cluster_` subgraph, its nodes as boxes shaped by kind.
const DOT_GROUP: GroupLines = GroupLines {
    open: |group| {
        format!(
            "subgraph cluster_{} {{\n  label={};",
            group.id,
            dot_str(&group.title)
        )
    },
    node: |n| {
        let shape = match n.shape {
            Shape::Start => ", shape=plaintext",
            Shape::State | Shape::Step => "",
            Shape::Terminal => ", peripheries=2",
            Shape::Branch => ", shape=diamond",
            Shape::Parallel => ", shape=hexagon",
        };
        format!("{} [label={}{shape}];", n.id, dot_str(&n.lines.join("\n")))
    },
    close: "}",
};

/// A DOT double-quoted string; a newline becomes a centered line break.
fn dot_str(s: &str) -> String {
    quoted(s, DOT_ESCAPES)
}

/// What a DOT double-quoted string escapes, and how.
const DOT_ESCAPES: &[(char, &str)] = &[('"', "\\\""), ('\\', "\\\\"), ('\n', "\\n"), ('\r', "")];

/// `s` in double quotes, each character of `escapes` written as its text there.
fn quoted(s: &str, escapes: &[(char, &str)]) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    push_escaped(&mut out, s, escapes);
    out.push('"');
    out
}

/// Appends `s` to `out`, each character of `escapes` written as its text there. Any other
/// control character is written as its visible escape (`\u{1b}`, itself escaped for the
/// format): a graph is often read on a terminal before it is drawn.
fn push_escaped(out: &mut String, s: &str, escapes: &[(char, &str)]) {
    for c in s.chars() {
        match escapes.iter().find(|(e, _)| *e == c) {
            Some((_, text)) => out.push_str(text),
            None if is_control(c) => {
                push_escaped(out, &escape_control(c.encode_utf8(&mut [0; 4])), escapes)
            }
            None => out.push(c),
        }
    }
}

/// Prints a Mermaid `flowchart`.
pub fn to_mermaid(g: &Graph) -> String {
    let mut out = format!(
        "%% packc graph of pack {}\nflowchart TD\n",
        one_line(&g.name)
    );
    for group in &g.groups {
        print_group(&mut out, group, 1, &MERMAID_GROUP);
    }
    for e in &g.edges {
        let arrow = if e.dashed { "-.->" } else { "-->" };
        let from = e.from_group.as_ref().unwrap_or(&e.from);
        match &e.label {
            Some(l) => out.push_str(&format!("  {from} {arrow}|{}| {}\n", mermaid_str(l), e.to)),
            None => out.push_str(&format!("  {from} {arrow} {}\n", e.to)),
        }
    }
    out
}

/// A group as a Mermaid `subgraph`, its nodes bracketed by kind.
const MERMAID_GROUP: GroupLines = GroupLines {
    open: |group| format!("subgraph {}[{}]", group.id, mermaid_str(&group.title)),
    node: |n| {
        let (open, close) = match n.shape {
            Shape::Start => ("([", "])"),
            Shape::State => ("(", ")"),
            Shape::Terminal => ("(((", ")))"),
            Shape::Step => ("[", "]"),
            Shape::Branch => ("{", "}"),
            Shape::Parallel => ("{{", "}}"),
        };
        format!("{}{open}{}{close}", n.id, mermaid_str(&n.lines.join("\n")))
    },
    close: "end",
};

/// A Mermaid quoted label: entity codes for the characters Mermaid or its HTML labels
/// would read as syntax, `<br/>` for a newline.
fn mermaid_str(s: &str) -> String {
    quoted(s, MERMAID_ESCAPES)
}

/// What a Mermaid label escapes, and how.
const MERMAID_ESCAPES: &[(char, &str)] = &[
    ('#', "#35;"),
    ('"', "#quot;"),
    ('<', "#lt;"),
    ('>', "#gt;"),
    ('\n', "<br/>"),
    ('\r', ""),
];

/// `s` on one line, for a Mermaid comment: line breaks become spaces, other control
/// characters their escapes.
fn one_line(s: &str) -> String {
    escape_control(&s.replace(['\n', '\r'], " ")).into_owned()
}
