//! "Did you mean" for run errors that name something that does not exist (a target, an
//! event).

/// "did you mean `x`?" for a name close to one of `names`, else the names there are
/// ("the agent members are: `a`, `b`"), for errors naming something that does not exist.
pub(crate) fn choices(what: &str, name: &str, mut names: Vec<&str>) -> String {
    if let Some(n) = ir_spec::suggest::suggest(name, names.iter().copied()) {
        return format!("did you mean `{n}`?");
    }
    names.sort_unstable();
    match names.len() {
        0 => format!("there are no {what}"),
        1..=12 => format!(
            "the {what} are: {}",
            names
                .iter()
                .map(|n| format!("`{n}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        n => format!("there are {n} {what}"),
    }
}
