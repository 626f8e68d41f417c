//! Help lines for the YAML parser's commonest errors, which name the parser's state
//! ("while parsing a block mapping, did not find expected key") rather than the mistake.
//! Each reads the lines around the error and says what to change there: an indentation
//! that lines up with no level above it, a plain value holding `: `, a line indented
//! into the value above it, a quote never closed.

/// The help for the scanner or parser error `info` at byte `at` of `text`, when one of
/// the mistakes above explains it.
pub(super) fn help(text: &str, at: usize, info: &str) -> Option<String> {
    let lines: Vec<&str> = text.lines().map(|l| l.trim_end_matches('\r')).collect();
    let before = text.get(..at)?;
    let row = before.matches('\n').count();
    if info.contains("did not find expected key") || info.contains("expected '-' indicator") {
        // Only when the parser stopped where the line starts: an error further on
        // (`key: [1, 2] x`) is not about indentation.
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        let indent = lines
            .get(row)
            .map_or(0, |l| l.len() - l.trim_start_matches(' ').len());
        if at - line_start != indent {
            return None;
        }
        return misaligned(&lines, row);
    }
    if info.contains("mapping values are not allowed") {
        return colon_in_value(&lines, row);
    }
    if info.contains("while scanning a quoted scalar") && info.contains("end of stream") {
        let quote = text
            .get(at..)?
            .chars()
            .next()
            .filter(|c| matches!(c, '"' | '\''))?;
        let (name, inside) = if quote == '"' {
            ("double quote", "\\\"")
        } else {
            ("single quote", "''")
        };
        return Some(format!(
            "the {name} opened here is never closed: end the value with `{quote}` (a `{quote}` inside it is written `{inside}`)"
        ));
    }
    None
}

/// A level of nesting opened by a line above: its column, its line (from 1) and what
/// starts it there (a key with its `:`, or `-`).
struct Level<'t> {
    column: usize,
    line: usize,
    what: &'t str,
}

/// The levels the lines above `row` open, innermost first: the nearest line's own,
/// then each shallower line's going up (a `- key:` line opens two, the item's column
/// and the `-`'s).
fn levels<'t>(lines: &[&'t str], row: usize) -> Vec<Level<'t>> {
    let mut out: Vec<Level<'t>> = Vec::new();
    for (i, line) in lines.iter().enumerate().take(row).rev() {
        let body = line.trim_start_matches(' ');
        if body.is_empty() || body.starts_with('#') {
            continue;
        }
        let column = line.len() - body.len();
        let dash = body.starts_with("- ");
        // A key in the column of the list below it (`key:` over `- item`, which YAML
        // allows) opens a level of its own there.
        let beside_list = |l: &Level<'_>| l.column == column && l.what == "-" && !dash;
        if out
            .last()
            .is_some_and(|l| l.column <= column && !beside_list(l))
        {
            continue;
        }
        if let Some(item) = body.strip_prefix("- ") {
            let item = item.trim_start_matches(' ');
            if !item.is_empty() && !item.starts_with('#') {
                out.push(Level {
                    column: line.len() - item.len(),
                    line: i + 1,
                    what: key_of(item),
                });
            }
            out.push(Level {
                column,
                line: i + 1,
                what: "-",
            });
        } else {
            out.push(Level {
                column,
                line: i + 1,
                what: key_of(body),
            });
        }
    }
    out.retain(|l| !l.what.is_empty());
    out
}

/// What a line's content starts with, as the help names it: `key:`, or `-`.
fn key_of(body: &str) -> &str {
    match body
        .find(": ")
        .or_else(|| body.strip_suffix(':').map(str::len))
    {
        Some(end) => &body[..=end.min(body.len() - 1)],
        None => "",
    }
}

fn spaces(n: usize) -> String {
    match n {
        1 => "1 space".to_owned(),
        n => format!("{n} spaces"),
    }
}

/// "indent it N spaces", or for column 0 "start it in the first column".
fn indent(n: usize) -> String {
    match n {
        0 => "start it in the first column".to_owned(),
        n => format!("indent it {}", spaces(n)),
    }
}

/// Line `row` starts at a column that matches no level opened above it.
fn misaligned(lines: &[&str], row: usize) -> Option<String> {
    let line = lines.get(row)?;
    let body = line.trim_start_matches(' ');
    let column = line.len() - body.len();
    let levels = levels(lines, row);
    // A line that starts a key where a mapping above has its keys, or an item where a
    // list above has its dashes, is where it belongs: the mistake is elsewhere.
    let item = body.starts_with("- ") || body == "-";
    if levels
        .iter()
        .any(|l| l.column == column && (l.what == "-") == item)
    {
        return None;
    }
    let beside = |l: &Level<'_>| match l.what {
        "-" => format!(
            "{} with `- ` to add an item to the list of line {}",
            indent(l.column),
            l.line
        ),
        key => format!(
            "{} to put it beside `{key}` (line {})",
            indent(l.column),
            l.line
        ),
    };
    if let Some(list) = levels
        .iter()
        .find(|l| l.column == column && l.what == "-" && !item)
    {
        let item = levels.iter().find(|l| l.line == list.line && l.what != "-");
        let mut help = format!(
            "line {} starts in the column of the list on line {}, without a `- `: start it with `- ` to add an item",
            row + 1,
            list.line
        );
        if let Some(item) = item {
            help.push_str(&format!(", or {}", beside(item)));
        }
        return Some(help);
    }
    let deeper = levels
        .iter()
        .filter(|l| l.column > column)
        .min_by_key(|l| l.column);
    let shallower = levels
        .iter()
        .filter(|l| l.column < column)
        .max_by_key(|l| l.column);
    let mut options: Vec<String> = [deeper, shallower]
        .into_iter()
        .flatten()
        .map(beside)
        .collect();
    if options.is_empty() {
        return None;
    }
    let last = options.pop()?;
    let choice = match options.pop() {
        Some(first) => format!("{first}, or {last}"),
        None => last,
    };
    Some(format!(
        "line {} is indented {}, which lines up with no level above it (YAML nests by indentation): {choice}",
        row + 1,
        spaces(column)
    ))
}

/// A `:` where the parser takes no new key: in a plain value (`system: a: b`), or on a
/// line indented deeper than the key above it, which YAML reads as more of that key's
/// value.
fn colon_in_value(lines: &[&str], row: usize) -> Option<String> {
    let line = lines.get(row)?;
    let body = line.trim_start_matches(' ');
    let column = line.len() - body.len();
    let content = body.strip_prefix("- ").unwrap_or(body);
    if let Some(first) = content.find(": ") {
        let value = content[first + 2..].trim();
        // A comment after the value stays outside the quotes.
        let value = value
            .find(" #")
            .map_or(value, |end| value[..end].trim_end());
        let key = &content[..=first];
        if value.contains(": ")
            && !value.starts_with(['"', '\'', '[', '{', '|', '>', '&', '*', '!'])
            && !key.starts_with(['"', '\''])
        {
            let quoted = value.replace('\\', "\\\\").replace('"', "\\\"");
            return Some(format!(
                "a plain value cannot hold `: ` (a colon and a space): quote it, `{key} \"{quoted}\"`"
            ));
        }
    }
    // The nearest line above that is not blank or a comment.
    let above = levels(lines, row).into_iter().next()?;
    if above.column < column && above.what != "-" {
        let key = above.what;
        return Some(format!(
            "this line is indented deeper than `{key}` on line {}, so YAML reads it as more of that line's value: {} to put it beside `{key}`",
            above.line,
            indent(above.column)
        ));
    }
    None
}
