//! "Did you mean ...?": the closest known name to a misspelt one, by edit distance.

/// Edit distance between `a` and `b` (insertions, deletions, substitutions and swaps of two
/// neighbouring characters: the optimal string alignment distance), case-insensitive.
fn distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().flat_map(char::to_lowercase).collect();
    let b: Vec<char> = b.chars().flat_map(char::to_lowercase).collect();
    let w = b.len() + 1;
    let mut d = vec![0usize; (a.len() + 1) * w];
    for i in 0..=a.len() {
        for j in 0..=b.len() {
            d[i * w + j] = if i == 0 || j == 0 {
                i + j
            } else {
                let mut v = (d[(i - 1) * w + j - 1] + usize::from(a[i - 1] != b[j - 1]))
                    .min(d[(i - 1) * w + j] + 1)
                    .min(d[i * w + j - 1] + 1);
                if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                    v = v.min(d[(i - 2) * w + j - 2] + 1);
                }
                v
            };
        }
    }
    d[a.len() * w + b.len()]
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
