//! "Did you mean ...?": the closest known name to a misspelt one, by edit distance.

/// Levenshtein distance between `a` and `b`, compared case-insensitively, by characters.
fn distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().flat_map(char::to_lowercase).collect();
    let b: Vec<char> = b.chars().flat_map(char::to_lowercase).collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, ca) in a.iter().enumerate() {
        cur[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != cb);
            cur[j + 1] = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
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
mod tests {
    use super::*;

    #[test]
    fn suggestions() {
        assert_eq!(distance("dealy", "delay"), 2);
        assert_eq!(did_you_mean("dealy", &["delay", "ids"]), Some("delay"));
        assert_eq!(did_you_mean("keys", &["key", "record"]), Some("key"));
        assert_eq!(did_you_mean("recrod", &["key", "record"]), Some("record"));
        assert_eq!(did_you_mean("Delay", &["delay"]), Some("delay"));
        assert_eq!(did_you_mean("zzz", &["key", "record"]), None);
        let none: [&str; 0] = [];
        assert_eq!(did_you_mean("a", &none), None);
    }
}
