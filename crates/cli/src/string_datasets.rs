//! Byte-string key sets for `tersedb bench strings`, after Gao et al., "Revisiting B-tree
//! Compression" (SIGMOD 2024), sections 4-5. Every generator is seeded and deterministic; each
//! returns distinct keys, sorted.
//!
//! - `random10` / `random26` / `random36` / `random62`: 32 characters drawn uniformly from a
//!   domain of 10 digits, 26 lowercase letters, 36 digits and lowercase letters, or 62 digits and
//!   letters (the study's default keys and its domain-size experiment, §4.1 and §4.5).
//! - `clustered`: normally distributed numbers written at a fixed width, so that neighbours
//!   share long prefixes (§4.6, Fig. 17-18). A number is `5e15 + N(0, scale)`; its integer part
//!   is written as 16 digits, a `.`, and 15 fraction digits (uniform, which is what the fraction
//!   of a normal sample is once `scale` is well above 1):
//!   ```text
//!   5000000000000417.302914820459118      32 bytes
//!   |-- N(5e15, scale), 16 digits -|-- uniform, 15 digits --|
//!   ```
//!   The smaller the scale, the longer the common prefixes: with `scale` = 1,000, 16 digits vary
//!   only in their last four or so.
//! - `tpch`: TPC-H LINEITEM composite keys `shipdate|orderkey|linenumber` (e.g.
//!   `1996-03-13|1|1`), as dbgen writes the columns, from the `tpchgen` generator at the scale
//!   factor that yields the keys asked for (about 6M lines per unit).
//! - `lineitem`: whole LINEITEM rows as keys, all 16 columns as dbgen writes a `lineitem.tbl`
//!   line (96 to 156 bytes, the study's TPC-H keys of Table 1 and §5.1, Figs. 19-20):
//!   ```text
//!   1|155190|7706|1|17|21168.23|0.04|0.02|N|O|1996-03-13|1996-02-12|1996-03-22|DELIVER IN PERSON|TRUCK|egular courts above the|
//!   ```
//! - `words`: a word list, one word per line (`/usr/share/dict/words`).
//! - a file of keys in the import format (`key` or `key<TAB>value` lines, values ignored; `--hex`
//!   for hex keys, where an empty line is the empty key).

use crate::lines::{self, KeyFormat, ParsedKey};
use fastrand::Rng;
use std::collections::HashSet;
use std::io::{BufRead, BufReader};
use std::path::Path;

/// Length of the random and clustered keys (the study's default key length).
pub const KEY_LEN: usize = 32;

/// The word list `words` reads.
pub const WORDS_PATH: &str = "/usr/share/dict/words";

/// Names of the generated data sets (`words` and files are read, not generated).
pub const GENERATED: [&str; 7] = [
    "random10",
    "random26",
    "random36",
    "random62",
    "clustered",
    "tpch",
    "lineitem",
];

/// The alphabet of a `randomD` data set, in byte order.
pub fn alphabet(name: &str) -> Option<&'static [u8]> {
    Some(match name {
        "random10" => b"0123456789",
        "random26" => b"abcdefghijklmnopqrstuvwxyz",
        "random36" => b"0123456789abcdefghijklmnopqrstuvwxyz",
        "random62" => b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz",
        _ => return None,
    })
}

/// Draws keys with `draw` until `n` are distinct; returns them sorted.
fn distinct(n: usize, mut draw: impl FnMut() -> Vec<u8>) -> Vec<Vec<u8>> {
    let mut set = HashSet::with_capacity(n);
    while set.len() < n {
        set.insert(draw());
    }
    let mut v: Vec<Vec<u8>> = set.into_iter().collect();
    v.sort_unstable();
    v
}

/// `n` distinct keys of [`KEY_LEN`] characters drawn uniformly from `alphabet`.
pub fn random(rng: &mut Rng, n: usize, alphabet: &[u8]) -> Vec<Vec<u8>> {
    random_len(rng, n, alphabet, KEY_LEN)
}

/// `n` distinct keys of `len` characters drawn uniformly from `alphabet` (the key length
/// sweep, "Revisiting B-tree Compression" §4.3). `alphabet.len()^len` must exceed `n` well.
pub fn random_len(rng: &mut Rng, n: usize, alphabet: &[u8], len: usize) -> Vec<Vec<u8>> {
    assert!(alphabet.len() >= 2 && len >= 1);
    assert!(
        (len as f64) * (alphabet.len() as f64).log2() >= (n as f64).log2() + 4.0,
        "{len} characters over {} symbols are too few for {n} distinct keys",
        alphabet.len()
    );
    distinct(n, || {
        (0..len)
            .map(|_| alphabet[rng.usize(..alphabet.len())])
            .collect()
    })
}

/// A standard normal sample (Box-Muller).
fn normal(rng: &mut Rng) -> f64 {
    let u1 = 1.0 - rng.f64(); // (0, 1]: ln is finite
    let u2 = rng.f64();
    (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}

/// Mean of the `clustered` numbers: 16 digits starting `5000...`.
const CLUSTER_MEAN: f64 = 5e15;

/// `n` distinct [`KEY_LEN`]-byte keys `5e15 + N(0, scale)` written as `IIII(16).FFF(15)`.
pub fn clustered(rng: &mut Rng, n: usize, scale: f64) -> Vec<Vec<u8>> {
    const FRACTION: u64 = 1_000_000_000_000_000; // 10^15
    let max_int = 9_999_999_999_999_999.0; // 16 digits
    distinct(n, || {
        let x = (CLUSTER_MEAN + normal(rng) * scale).clamp(0.0, max_int);
        let key = format!("{:016}.{:015}", x.floor() as u64, rng.u64(..FRACTION));
        debug_assert_eq!(key.len(), KEY_LEN);
        key.into_bytes()
    })
}

/// TPC-H LINEITEM rows per unit of scale factor (dbgen at SF 1 writes 6,001,215).
const TPCH_LINES_PER_SF: f64 = 6_001_215.0;
/// The smallest scale factor asked of `tpchgen`: below 1e-4 its supplier count is 0 and it
/// divides by it (6,000 rows, made in a few milliseconds).
const MIN_SF: f64 = 1e-3;

/// The first `n` LINEITEM rows of TPC-H as keys `shipdate|orderkey|linenumber` (distinct, since
/// (orderkey, linenumber) is the table's key), sorted. The scale factor is chosen so that the
/// rows suffice; the rows are dbgen's for that scale factor, only the comment text (not part of
/// the key) comes from a smaller text pool than dbgen's 300 MB, for speed.
pub fn tpch(n: usize) -> Vec<Vec<u8>> {
    use std::io::Write;
    use tpchgen::distribution::Distributions;
    use tpchgen::generators::LineItemGenerator;
    use tpchgen::text::TextPool;
    let dists = Distributions::static_default();
    let pool = TextPool::new(1 << 20, dists);
    let mut sf = (n as f64 / TPCH_LINES_PER_SF * 1.05).max(MIN_SF);
    loop {
        let g = LineItemGenerator::new_with_distributions_and_text_pool(sf, 1, 1, dists, &pool);
        let mut keys = Vec::with_capacity(n);
        for l in g.iter().take(n) {
            let mut k = Vec::with_capacity(24);
            let _ = write!(k, "{}|{}|{}", l.l_shipdate, l.l_orderkey, l.l_linenumber);
            keys.push(k);
        }
        if keys.len() == n {
            keys.sort_unstable();
            keys.dedup();
            return keys;
        }
        sf *= 1.25;
    }
}

/// The scale factor of the study's TPC-H keys (§5.1: 60M rows).
const LINEITEM_SF: f64 = 10.0;
/// Stretches of LINEITEM that `lineitem` takes its rows from, spread over the whole table.
const LINEITEM_STRETCHES: usize = 1000;

/// `n` LINEITEM rows of TPC-H at scale factor 10 or more (the study's), each whole row as one
/// key (see the module doc), sorted; distinct, since every row holds (orderkey, linenumber).
/// The rows are the first of up to [`LINEITEM_STRETCHES`] equal stretches of the table (dbgen's
/// parts), so that order keys, part keys, supplier keys and prices all come from the study's
/// domains and the rows are as long as its. The comments come from a 1 MiB text pool (dbgen's
/// is 300 MB) built from the same word grammar, for speed.
pub fn lineitem(n: usize) -> Vec<Vec<u8>> {
    use std::io::Write;
    use tpchgen::distribution::Distributions;
    use tpchgen::generators::LineItemGenerator;
    use tpchgen::text::TextPool;
    let dists = Distributions::static_default();
    let pool = TextPool::new(1 << 20, dists);
    let parts = (n / 1000).clamp(1, LINEITEM_STRETCHES);
    let per_part = n.div_ceil(parts);
    let mut sf = (n as f64 / TPCH_LINES_PER_SF * 1.05).max(LINEITEM_SF);
    loop {
        let mut keys = Vec::with_capacity(n);
        for part in 1..=parts {
            let g = LineItemGenerator::new_with_distributions_and_text_pool(
                sf,
                part as i32,
                parts as i32,
                dists,
                &pool,
            );
            for l in g.iter().take(per_part.min(n - keys.len())) {
                let mut k = Vec::with_capacity(160);
                let _ = write!(k, "{l}");
                keys.push(k);
            }
        }
        if keys.len() == n {
            keys.sort_unstable();
            keys.dedup();
            return keys;
        }
        sf *= 1.25;
    }
}

/// Reads keys in the import format from `path` (see the module doc); duplicates are removed,
/// the result is sorted.
pub fn read(path: &Path, hex: bool) -> Result<Vec<Vec<u8>>, String> {
    let f = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut input = BufReader::with_capacity(1 << 20, f);
    let mut keys = Vec::new();
    let mut buf = Vec::new();
    let mut line_no = 0u64;
    loop {
        buf.clear();
        let n = input
            .read_until(b'\n', &mut buf)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        if n == 0 {
            break;
        }
        line_no += 1;
        if buf.last() == Some(&b'\n') {
            buf.pop();
        }
        let e = lines::parse_line(line_no, &buf, KeyFormat::Binary, hex)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        if let ParsedKey::Bytes(k) = e.key {
            keys.push(k);
        }
    }
    keys.sort_unstable();
    keys.dedup();
    Ok(keys)
}

/// The word list at [`WORDS_PATH`], or an error that says how to install one.
pub fn words() -> Result<Vec<Vec<u8>>, String> {
    let p = Path::new(WORDS_PATH);
    if !p.exists() {
        return Err(format!(
            "data set words needs a word list at {WORDS_PATH}, and there is none: install one \
             (Debian, Ubuntu: apt-get install wamerican-insane) or pass --input FILE"
        ));
    }
    read(p, false)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sorted_distinct(v: &[Vec<u8>]) -> bool {
        v.windows(2).all(|w| w[0] < w[1])
    }

    #[test]
    fn random_keys_use_their_alphabet_and_are_deterministic() {
        for name in ["random10", "random26", "random36", "random62"] {
            let abc = alphabet(name).unwrap();
            assert!(abc.windows(2).all(|w| w[0] < w[1]));
            let a = random(&mut Rng::with_seed(7), 500, abc);
            let b = random(&mut Rng::with_seed(7), 500, abc);
            assert_eq!(a, b);
            assert_eq!(a.len(), 500);
            assert!(sorted_distinct(&a));
            assert!(a
                .iter()
                .all(|k| k.len() == KEY_LEN && k.iter().all(|c| abc.contains(c))));
        }
        assert!(alphabet("random11").is_none());
    }

    #[test]
    fn clustered_keys_share_longer_prefixes_at_smaller_scales() {
        let lcp = |a: &[u8], b: &[u8]| a.iter().zip(b).take_while(|(x, y)| x == y).count();
        let mean_lcp = |v: &[Vec<u8>]| {
            v.windows(2).map(|w| lcp(&w[0], &w[1])).sum::<usize>() as f64 / (v.len() - 1) as f64
        };
        let tight = clustered(&mut Rng::with_seed(1), 5000, 10.0);
        let loose = clustered(&mut Rng::with_seed(1), 5000, 1e9);
        for v in [&tight, &loose] {
            assert_eq!(v.len(), 5000);
            assert!(sorted_distinct(v));
            assert!(v.iter().all(|k| k.len() == KEY_LEN && k[16] == b'.'));
        }
        assert!(tight[0].starts_with(b"4999999999999") || tight[0].starts_with(b"5000000000000"));
        assert!(mean_lcp(&tight) > mean_lcp(&loose) + 4.0);
    }

    #[test]
    fn tpch_keys_are_lineitem_dates_orders_and_lines() {
        let k = tpch(2000);
        assert_eq!(k.len(), 2000);
        assert!(sorted_distinct(&k));
        // dbgen's first row: order 1, line 1, shipped 1996-03-13
        assert!(k.contains(&b"1996-03-13|1|1".to_vec()), "{:?}", &k[..3]);
        for key in &k {
            let s = std::str::from_utf8(key).unwrap();
            let f: Vec<&str> = s.split('|').collect();
            assert_eq!(f.len(), 3, "{s}");
            assert!(
                f[0].len() == 10 && ("1992".."1999").contains(&&f[0][..4]),
                "{s}"
            );
            assert!((1..=7).contains(&f[2].parse::<u32>().unwrap()), "{s}");
        }
        assert_eq!(tpch(2000), k);
    }

    #[test]
    fn random_len_keys_have_their_length() {
        for len in [8, 64, 256] {
            let k = random_len(&mut Rng::with_seed(3), 300, b"0123456789", len);
            assert_eq!(k.len(), 300);
            assert!(sorted_distinct(&k));
            assert!(k.iter().all(|x| x.len() == len));
        }
    }

    #[test]
    fn lineitem_keys_are_whole_rows() {
        let k = lineitem(3000);
        assert_eq!(k.len(), 3000);
        assert!(sorted_distinct(&k));
        // dbgen's first row: order 1, line 1 (part and supplier keys and the comment depend
        // on the scale factor and the text pool)
        let first = b"|N|O|1996-03-13|1996-02-12|1996-03-22|DELIVER IN PERSON|TRUCK|";
        let row1 = k.iter().find(|r| r.starts_with(b"1|")).unwrap();
        assert!(
            row1.windows(first.len()).any(|w| w == first),
            "{}",
            String::from_utf8_lossy(row1)
        );
        let (min, max) = (
            k.iter().map(Vec::len).min().unwrap(),
            k.iter().map(Vec::len).max().unwrap(),
        );
        // the study's Table 1: 96 to 156 bytes at SF 10; the first orders have shorter keys
        assert!(min >= 90 && max <= 160, "{min}..{max}");
        let mean = k.iter().map(Vec::len).sum::<usize>() as f64 / k.len() as f64;
        assert!((115.0..135.0).contains(&mean), "{mean}");
        for row in &k {
            let s = std::str::from_utf8(row).unwrap();
            // 16 columns, each closed by '|'
            assert_eq!(s.matches('|').count(), 16, "{s}");
        }
    }

    #[test]
    fn read_takes_import_lines_and_hex() {
        let p = std::env::temp_dir().join(format!("tersedb-strsets-{}.txt", std::process::id()));
        std::fs::write(&p, "b\na\tvalue\nb\n\n").unwrap();
        assert_eq!(
            read(&p, false).unwrap(),
            vec![b"".to_vec(), b"a".to_vec(), b"b".to_vec()]
        );
        std::fs::write(&p, "00ff\n\n61\n").unwrap();
        assert_eq!(
            read(&p, true).unwrap(),
            vec![b"".to_vec(), vec![0, 0xff], b"a".to_vec()]
        );
        std::fs::write(&p, "0g\n").unwrap();
        assert!(read(&p, true).unwrap_err().contains("line 1"));
        let _ = std::fs::remove_file(&p);
    }
}
