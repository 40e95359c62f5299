//! Seeded, deterministic key generators for the benchmarks.
//!
//! - ClusterData (Anh & Moffat, "Index compression using 64-bit words", 2010), as used by the
//!   Upscaledb paper: `n` sorted distinct keys in `[min, max)`. The range is split recursively at a
//!   random point; each half is filled either uniformly or, recursively, clustered, so dense runs and
//!   sparse stretches alternate at every scale.
//! - uniform: `n` sorted distinct keys drawn uniformly from `[min, max)`.
//! - ascending: `min, min+1, ...` (dense).
//! - fixed-width deltas: the seed 000 / seed 001 micro-benchmark setup, deltas of exactly `b` bits
//!   (random below the top bit) prefix-summed.
//! - a key file (`--input FILE`): one decimal u32 or u64 key per line, in any order.

use fastrand::Rng;
use std::io::BufRead;

/// Keys read from a file by [`read_keys`]: sorted and distinct.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyFile {
    pub keys: Vec<u64>,
    /// Lines that repeated a key already read (dropped).
    pub duplicates: usize,
}

/// Reads one decimal key per line (u32 or u64; surrounding spaces and a trailing `\r` allowed,
/// blank lines skipped, `key<TAB>value` lines keep the key), sorts them and drops duplicates.
/// A line that is not an unsigned 64-bit integer is an error naming the file, the line number and
/// the text; so is a file without keys.
pub fn read_keys(path: &std::path::Path) -> Result<KeyFile, String> {
    let f = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    parse_keys(std::io::BufReader::new(f)).map_err(|e| format!("{}: {e}", path.display()))
}

/// [`read_keys`] on any reader (errors without the file name).
pub fn parse_keys(mut r: impl BufRead) -> Result<KeyFile, String> {
    let mut keys = Vec::new();
    let mut line = Vec::new();
    let mut no = 0u64;
    loop {
        line.clear();
        let n = r
            .read_until(b'\n', &mut line)
            .map_err(|e| format!("line {}: {e}", no + 1))?;
        if n == 0 {
            break;
        }
        no += 1;
        let text = String::from_utf8_lossy(&line);
        let field = text.split('\t').next().unwrap_or("").trim();
        if field.is_empty() {
            continue;
        }
        let k: u64 = field.parse().map_err(|_| {
            let shown: String = field.chars().take(40).collect();
            format!("line {no}: {shown:?} is not an unsigned integer key (u32 or u64, decimal)")
        })?;
        keys.push(k);
    }
    if keys.is_empty() {
        return Err("no keys (one decimal key per line expected)".into());
    }
    let read = keys.len();
    keys.sort_unstable();
    keys.dedup();
    Ok(KeyFile {
        duplicates: read - keys.len(),
        keys,
    })
}

/// `n` sorted distinct keys drawn uniformly from `[min, max)`. Requires `max - min >= n`.
pub fn uniform(rng: &mut Rng, n: usize, min: u64, max: u64) -> Vec<u64> {
    let range = max - min;
    assert!(range >= n as u64, "range too small for {n} distinct keys");
    let mut out = Vec::with_capacity(n);
    if n == 0 {
        return out;
    }
    if (n as u64).saturating_mul(4) >= range {
        // Selection sampling (Knuth's Algorithm S): O(range), exact, already sorted.
        let mut needed = n as u64;
        for v in 0..range {
            let left = range - v;
            if rng.u64(..left) < needed {
                out.push(min + v);
                needed -= 1;
                if needed == 0 {
                    break;
                }
            }
        }
        return out;
    }
    // Sparse: draw, sort, dedup, top up until there are enough, then drop random extras.
    while out.len() < n {
        let missing = n - out.len();
        out.extend((0..missing + missing / 8 + 8).map(|_| min + rng.u64(..range)));
        out.sort_unstable();
        out.dedup();
    }
    drop_random(rng, &mut out, n);
    out
}

/// Drops random elements of `v` until `n` are left: the elements `v.remove(rng.usize(..len))`
/// would drop one after the other (the same draws, so the same keys as ever for a seed), found
/// by rank among the survivors in a Fenwick tree instead of shifting the vector on each draw
/// (quadratic: 25 s of the uniform generator's 2M keys, which drew ~n/8 extras).
fn drop_random(rng: &mut Rng, v: &mut Vec<u64>, n: usize) {
    let len = v.len();
    if len <= n {
        return;
    }
    // tree[i] (1-based) counts the survivors in (i - lowbit(i), i].
    let mut tree: Vec<u32> = (0..=len).map(|i| (i & i.wrapping_neg()) as u32).collect();
    tree[0] = 0;
    let mut alive = vec![true; len];
    let top = usize::BITS - 1 - len.leading_zeros();
    for left in (n + 1..=len).rev() {
        // The survivor of rank `r` (0-based): the smallest position whose prefix count is r + 1.
        let mut r = rng.usize(..left) as u32;
        let (mut pos, mut step) = (0usize, 1usize << top);
        while step > 0 {
            let next = pos + step;
            if next <= len && tree[next] <= r {
                pos = next;
                r -= tree[next];
            }
            step >>= 1;
        }
        // `pos` survivors-or-not precede it: element `pos` (0-based) is the one.
        alive[pos] = false;
        let mut i = pos + 1;
        while i <= len {
            tree[i] -= 1;
            i += i & i.wrapping_neg();
        }
    }
    let mut keep = alive.iter();
    v.retain(|_| keep.next() == Some(&true));
}

/// ClusterData: `n` sorted distinct keys in `[min, max)`.
pub fn clustered(rng: &mut Rng, n: usize, min: u64, max: u64) -> Vec<u64> {
    assert!(
        max - min >= n as u64,
        "range too small for {n} distinct keys"
    );
    let mut out = Vec::with_capacity(n);
    fill_clustered(rng, &mut out, n, min, max);
    debug_assert!(out.windows(2).all(|w| w[0] < w[1]));
    out
}

fn fill_clustered(rng: &mut Rng, out: &mut Vec<u64>, n: usize, min: u64, max: u64) {
    let range = max - min;
    if range == n as u64 || n <= 10 {
        out.extend(uniform(rng, n, min, max));
        return;
    }
    let half = n / 2;
    // The cut leaves room for both halves: [min, min+cut) gets `half` keys, the rest gets n-half.
    let slack = range - n as u64;
    let cut = half as u64 + if slack > 1 { rng.u64(..slack) } else { 0 };
    let p = rng.f64();
    if p < 0.25 {
        out.extend(uniform(rng, half, min, min + cut));
        fill_clustered(rng, out, n - half, min + cut, max);
    } else if p < 0.5 {
        fill_clustered(rng, out, half, min, min + cut);
        out.extend(uniform(rng, n - half, min + cut, max));
    } else {
        fill_clustered(rng, out, half, min, min + cut);
        fill_clustered(rng, out, n - half, min + cut, max);
    }
}

/// `n` keys whose deltas have exactly `b` bits (`1 <= b <= 32`; the top bit set, the rest random),
/// prefix-summed from `start`. Stops early rather than pass `u32::MAX`.
pub fn fixed_width_deltas(rng: &mut Rng, n: usize, b: u32, start: u32) -> Vec<u32> {
    assert!((1..=32).contains(&b));
    let mut out = Vec::with_capacity(n);
    let mut cur = start as u64;
    for i in 0..n {
        if i > 0 {
            let top = 1u64 << (b - 1);
            cur += top | rng.u64(..top);
            if cur > u32::MAX as u64 {
                break;
            }
        }
        out.push(cur as u32);
    }
    out
}

/// Narrows keys known to fit in u32.
pub fn to_u32(keys: &[u64]) -> Vec<u32> {
    keys.iter()
        .map(|&k| u32::try_from(k).expect("key fits in u32"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_files_parse_sort_and_dedup() {
        let f = parse_keys(&b"5\n 3 \r\n\n18446744073709551615\n3\n7\tvalue\n"[..]).unwrap();
        assert_eq!(f.keys, vec![3, 5, 7, u64::MAX]);
        assert_eq!(f.duplicates, 1);
    }

    #[test]
    fn bad_key_lines_name_the_line() {
        for (text, want) in [
            (&b"1\n2\nx3\n"[..], "line 3: \"x3\""),
            (b"-1\n", "line 1: \"-1\""),
            (b"1\n18446744073709551616\n", "line 2:"),
            (b"1.5\n", "line 1:"),
            (b"\n\n", "no keys"),
        ] {
            let e = parse_keys(text).unwrap_err();
            assert!(e.contains(want), "{e:?} should contain {want:?}");
        }
    }

    #[test]
    fn clustered_is_sorted_distinct_in_range_and_deterministic() {
        for (n, max) in [
            (0usize, 10u64),
            (1, 1),
            (10, 10),
            (1000, 1125),
            (100_000, 1 << 26),
        ] {
            let a = clustered(&mut Rng::with_seed(5), n, 0, max);
            let b = clustered(&mut Rng::with_seed(5), n, 0, max);
            assert_eq!(a, b);
            assert_eq!(a.len(), n);
            assert!(a.windows(2).all(|w| w[0] < w[1]));
            assert!(a.iter().all(|&k| k < max));
        }
    }

    #[test]
    fn clustered_is_clustered() {
        // More small gaps and more large gaps than a uniform sample of the same density.
        let n = 200_000;
        let max = 1u64 << 26;
        let c = clustered(&mut Rng::with_seed(1), n, 0, max);
        let u = uniform(&mut Rng::with_seed(1), n, 0, max);
        let ones = |v: &[u64]| v.windows(2).filter(|w| w[1] - w[0] == 1).count();
        assert!(ones(&c) > 4 * ones(&u), "{} vs {}", ones(&c), ones(&u));
    }

    /// The Fenwick tree drops exactly what removing by index from the vector drops.
    #[test]
    fn drop_random_is_remove_by_index() {
        for seed in 0..200u64 {
            let mut shape = Rng::with_seed(seed);
            let len = shape.usize(0..300);
            let n = shape.usize(0..=len);
            let v: Vec<u64> = (0..len as u64).map(|x| x * 3 + 1).collect();
            let mut want = v.clone();
            let mut rng = Rng::with_seed(seed ^ 0xabc);
            while want.len() > n {
                let i = rng.usize(..want.len());
                want.remove(i);
            }
            let mut got = v;
            drop_random(&mut Rng::with_seed(seed ^ 0xabc), &mut got, n);
            assert_eq!(got, want, "seed {seed}: len {len}, n {n}");
        }
    }

    #[test]
    fn uniform_dense_and_sparse() {
        let mut rng = Rng::with_seed(3);
        let d = uniform(&mut rng, 900, 100, 1000);
        assert_eq!(d.len(), 900);
        assert!(d.windows(2).all(|w| w[0] < w[1]) && d[0] >= 100 && d[899] < 1000);
        let full = uniform(&mut rng, 50, 0, 50);
        assert_eq!(full, (0..50).collect::<Vec<_>>());
        let s = uniform(&mut rng, 1000, 0, 1 << 40);
        assert_eq!(s.len(), 1000);
        assert!(s.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn fixed_width_deltas_have_that_width() {
        let mut rng = Rng::with_seed(4);
        for b in 1..=24 {
            let k = fixed_width_deltas(&mut rng, 256, b, 0);
            assert_eq!(k.len(), 256);
            assert!(k
                .windows(2)
                .all(|w| 32 - (w[1] - w[0]).leading_zeros() == b));
        }
    }
}
