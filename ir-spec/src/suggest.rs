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

/// The optimal-string-alignment distance: insertions, deletions, substitutions and
/// swaps of two neighbouring characters each cost 1 (`retyr` is one edit from `retry`).
fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    if a.len() > 64 || b.len() > 64 {
        return usize::MAX;
    }
    let mut before: Vec<usize> = Vec::new();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, &ca) in a.iter().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, &cb) in b.iter().enumerate() {
            let mut d = (prev[j] + usize::from(ca != cb))
                .min(prev[j + 1] + 1)
                .min(cur[j] + 1);
            if i > 0 && j > 0 && ca == b[j - 1] && a[i - 1] == cb {
                d = d.min(before[j - 1] + 1);
            }
            cur[j + 1] = d;
        }
        before = std::mem::replace(&mut prev, cur);
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances() {
        assert_eq!(edit_distance("retyr", "retry"), 1);
        assert_eq!(edit_distance("ab", "ba"), 1);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("same", "same"), 0);
        assert_eq!(edit_distance("ca", "abc"), 3);
        assert_eq!(suggest("retyr", ["retry", "eval"]), Some("retry"));
        assert_eq!(suggest("termnial", ["terminal", "entry"]), Some("terminal"));
    }
}
