//! "Did you mean ...?": the closest known name to a misspelt one, by edit distance.

/// Edit distance between `a` and `b` (insertions, deletions, substitutions and swaps of two
/// neighbouring characters: the optimal string alignment distance), case-insensitive.
fn distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().flat_map(char::to_lowercase).collect();
    let b: Vec<char> = b.chars().flat_map(char::to_lowercase).collect();
    // Rolling rows of the (a.len() + 1) x (b.len() + 1) table: `before` is row i - 1 (empty
    // while i = 0), `prev` row i, `cur` row i + 1, for the i-th character of `a`.
    let mut before: Vec<usize> = Vec::new();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut last_a = None;
    for (i, &ca) in a.iter().enumerate() {
        let mut cur = Vec::with_capacity(b.len() + 1);
        cur.push(i + 1);
        let mut last_b = None;
        for (j, ((&cb, &diag), &up)) in b.iter().zip(&prev).zip(prev.iter().skip(1)).enumerate() {
            let left = cur.last().copied().unwrap_or(i + 1);
            let mut v = (diag + usize::from(ca != cb)).min(up + 1).min(left + 1);
            // A swap of two neighbours: this pair of characters is the previous pair crossed.
            if last_a == Some(cb) && last_b == Some(ca) {
                if let Some(&t) = j.checked_sub(1).and_then(|k| before.get(k)) {
                    v = v.min(t + 1);
                }
            }
            cur.push(v);
            last_b = Some(cb);
        }
        before = std::mem::replace(&mut prev, cur);
        last_a = Some(ca);
    }
    prev.last().copied().unwrap_or(0)
}

/// The candidate closest to `word` when it is close enough to be a slip (at most a third of
/// its characters edited, at least one allowed), the first such on ties; `None` otherwise.
pub fn did_you_mean<'a, S: AsRef<str>>(word: &str, candidates: &'a [S]) -> Option<&'a str> {
    let limit = (word.chars().count() / 3).max(1);
    candidates
        .iter()
        .map(|c| (distance(word, c.as_ref()), c.as_ref()))
        .filter(|&(d, _)| d <= limit)
        .min_by_key(|&(d, _)| d)
        .map(|(_, c)| c)
}

#[cfg(test)]
#[allow(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic
)]
mod tests {
    use super::*;

    #[test]
    fn suggestions() {
        assert_eq!(distance("dealy", "delay"), 1);
        assert_eq!(distance("kitten", "sitting"), 3);
        assert_eq!(did_you_mean("dealy", &["delay", "ids"]), Some("delay"));
        assert_eq!(did_you_mean("keys", &["key", "record"]), Some("key"));
        assert_eq!(did_you_mean("recrod", &["key", "record"]), Some("record"));
        assert_eq!(did_you_mean("Delay", &["delay"]), Some("delay"));
        assert_eq!(did_you_mean("zzz", &["key", "record"]), None);
        let none: [&str; 0] = [];
        assert_eq!(did_you_mean("a", &none), None);
    }
}
