//! The two printers of a [`Graph`]: Graphviz `dot` and Mermaid `flowchart`. Both walk the
//! same groups and edges, so the formats always show the same nodes.

use super::{Graph, Group, Item, Shape};

/// Prints a Graphviz `digraph`.
pub fn to_dot(g: &Graph) -> String {
    let mut out = format!("digraph {} {{\n", dot_str(&g.name));
    out.push_str("  compound=true;\n  node [shape=box, style=rounded];\n");
    for group in &g.groups {
        dot_group(&mut out, group, 1);
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

fn dot_group(out: &mut String, group: &Group, depth: usize) {
    let pad = "  ".repeat(depth);
    out.push_str(&format!("{pad}subgraph cluster_{} {{\n", group.id));
    out.push_str(&format!("{pad}  label={};\n", dot_str(&group.title)));
    for item in &group.items {
        match item {
            Item::Node(n) => {
                let label = dot_str(&n.lines.join("\n"));
                let shape = match n.shape {
                    Shape::Start => ", shape=plaintext",
                    Shape::State | Shape::Step => "",
                    Shape::Terminal => ", peripheries=2",
                    Shape::Branch => ", shape=diamond",
                    Shape::Parallel => ", shape=hexagon",
                };
                out.push_str(&format!("{pad}  {} [label={label}{shape}];\n", n.id));
            }
            Item::Group(g) => dot_group(out, g, depth + 1),
        }
    }
    out.push_str(&format!("{pad}}}\n"));
}

/// A DOT double-quoted string; a newline becomes a centered line break.
fn dot_str(s: &str) -> String {
    quoted(s, |c| match c {
        '"' => Some("\\\""),
        '\\' => Some("\\\\"),
        '\n' => Some("\\n"),
        '\r' => Some(""),
        _ => None,
    })
}

/// `s` in double quotes, each character as `escape` writes it (`None`: itself).
fn quoted(s: &str, escape: impl Fn(char) -> Option<&'static str>) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match escape(c) {
            Some(e) => out.push_str(e),
            None => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Prints a Mermaid `flowchart`.
pub fn to_mermaid(g: &Graph) -> String {
    let mut out = format!(
        "%% packc graph of pack {}\nflowchart TD\n",
        one_line(&g.name)
    );
    for group in &g.groups {
        mermaid_group(&mut out, group, 1);
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

fn mermaid_group(out: &mut String, group: &Group, depth: usize) {
    let pad = "  ".repeat(depth);
    out.push_str(&format!(
        "{pad}subgraph {}[{}]\n",
        group.id,
        mermaid_str(&group.title)
    ));
    for item in &group.items {
        match item {
            Item::Node(n) => {
                let label = mermaid_str(&n.lines.join("\n"));
                let (open, close) = match n.shape {
                    Shape::Start => ("([", "])"),
                    Shape::State => ("(", ")"),
                    Shape::Terminal => ("(((", ")))"),
                    Shape::Step => ("[", "]"),
                    Shape::Branch => ("{", "}"),
                    Shape::Parallel => ("{{", "}}"),
                };
                out.push_str(&format!("{pad}  {}{open}{label}{close}\n", n.id));
            }
            Item::Group(g) => mermaid_group(out, g, depth + 1),
        }
    }
    out.push_str(&format!("{pad}end\n"));
}

/// A Mermaid quoted label: entity codes for the characters Mermaid or its HTML labels
/// would read as syntax, `<br/>` for a newline.
fn mermaid_str(s: &str) -> String {
    quoted(s, |c| match c {
        '#' => Some("#35;"),
        '"' => Some("#quot;"),
        '<' => Some("#lt;"),
        '>' => Some("#gt;"),
        '\n' => Some("<br/>"),
        '\r' => Some(""),
        _ => None,
    })
}

fn one_line(s: &str) -> String {
    s.replace(['\n', '\r'], " ")
}
