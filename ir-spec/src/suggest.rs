//! "Did you mean": the closest known name to a misspelt one, shared by every stage that
//! names something that does not exist (diagnostics, case files, run errors).

/// The closest name to `name` among `candidates`, for "did you mean" help lines (the
/// compiler's help lines, the case loader, the CLI and the VM's run errors).
pub fn suggest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let mut best: Option<(usize, &str)> = None;
    for c in candidates {
        let d = edit_distance(name, c);
        if d < name.len()
            && d <= (name.len().max(c.len()) / 3).max(1)
            && best.is_none_or(|(bd, bc)| (d, c) < (bd, bc))
        {
            best = Some((d, c));
        }
    }
    best.map(|(_, c)| c)
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
