//! "Did you mean" for run errors that name something that does not exist (a target, an
//! event).

/// "did you mean `x`?" for a name close to one of `names`, else the names there are
/// ("the agent members are: `a`, `b`"), for errors naming something that does not exist.
pub(crate) fn choices(what: &str, name: &str, mut names: Vec<&str>) -> String {
    let close = names
        .iter()
        .map(|n| (edit_distance(name, n), *n))
        .filter(|(d, n)| *d <= (name.len().max(n.len()) / 3).max(1) && *d < name.len())
        .min();
    if let Some((_, n)) = close {
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

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    if a.chars().count() > 64 || b.len() > 64 {
        return usize::MAX;
    }
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(ca != *cb))
                .min(prev[j + 1] + 1)
                .min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}
