//! The time series of `tersedb bench timeseries`: seeded, deterministic generators and the
//! answers every query must give (the model the bench checks the engine against).
//!
//! - (a) `ms-walk`: u64 millisecond timestamps, gaps of 1 s ± 100 ms jitter with a pause of up
//!   to a minute once in about a thousand readings; i64 values, a random walk of steps in
//!   [-100, 100] from 0 (it crosses zero and drifts into the tens of thousands).
//! - (b) `s-temp`: u64 millisecond timestamps exactly 1 s apart; f64 temperatures with two
//!   decimals (a daily sine of ±5 °C around 15 °C, a slow random drift and ±0.2 °C noise,
//!   rounded to hundredths).
//! - (c) `s-status`: u32 second timestamps, one event every 1..=10 s; u32 HTTP-like status codes
//!   from six values (200 nine times in ten).
//!
//! Keys are sorted and distinct; a series' values are kept as what they mean (f64 as integer
//! hundredths), so sums over ranges are exact in the model.

use tersedb::{KeyType, RecordType, ValueType};

/// The series' names, in the order they run (`--series a,b,c`).
pub const NAMES: [&str; 3] = ["a", "b", "c"];

/// 2025-11-24T16:00:00Z, the first timestamp of every series (in its unit).
const START_S: u64 = 1_764_000_000;

/// Status codes of series (c) and their weights out of 100.
const STATUS: [(u32, u32); 6] = [(200, 90), (204, 3), (301, 2), (404, 3), (500, 1), (503, 1)];

/// One series' values, in key order.
#[derive(Clone, Debug, PartialEq)]
pub enum Values {
    /// i64 records.
    I64(Vec<i64>),
    /// f64 records with two decimals, held as hundredths (`v as f64 / 100.0` is the record).
    Cents(Vec<i64>),
    /// u32 records.
    U32(Vec<u32>),
}

/// A generated series: sorted distinct keys and one value per key.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    /// `a`, `b` or `c`.
    pub name: &'static str,
    /// What it is, for the report.
    pub label: &'static str,
    /// u32 or u64.
    pub key_type: KeyType,
    /// Sorted, distinct; below 2^32 for u32 series.
    pub keys: Vec<u64>,
    pub values: Values,
}

/// A sum of records as the query language returns it: exact integers, or an f64 sum with the
/// sum of the magnitudes (the bound a summation order may move it by is relative to that).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Total {
    Int(i128),
    /// Exact sum of hundredths, sum of |hundredths|.
    Cents(i128, i128),
}

impl Total {
    /// Whether the engine's answer is this sum: integers exactly; f64 within 1e-9 of the sum
    /// of magnitudes (the rounding any summation order of at most millions of doubles stays
    /// inside, while one record too many or too few is 0.01 or more away).
    pub fn matches(&self, got: &tersedb::Value) -> bool {
        match (*self, got) {
            (Total::Int(w), tersedb::Value::Int(g)) => w == *g,
            (Total::Cents(w, abs), tersedb::Value::Float(g)) => {
                let want = w as f64 / 100.0;
                (g - want).abs() <= 1e-9 * (abs as f64 / 100.0) + 1e-9
            }
            // An empty range sums to NULL or 0.
            (Total::Int(0) | Total::Cents(0, 0), tersedb::Value::Null) => true,
            _ => false,
        }
    }
}

impl std::fmt::Display for Total {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Total::Int(v) => write!(f, "{v}"),
            Total::Cents(v, _) => write!(f, "{}", *v as f64 / 100.0),
        }
    }
}

impl Series {
    /// The series `name` (`a`, `b`, `c`) of `n` entries from `seed`.
    pub fn generate(name: &str, n: usize, seed: u64) -> Result<Series, String> {
        if n == 0 {
            return Err("--entries must be at least 1".into());
        }
        let mut rng = fastrand::Rng::with_seed(
            seed ^ name
                .bytes()
                .fold(0u64, |h, b| h.wrapping_mul(31).wrapping_add(b as u64)),
        );
        Ok(match name {
            "a" => {
                let mut keys = Vec::with_capacity(n);
                let mut values = Vec::with_capacity(n);
                let (mut t, mut v) = (START_S * 1000, 0i64);
                for _ in 0..n {
                    keys.push(t);
                    values.push(v);
                    let pause = if rng.u32(0..1000) == 0 {
                        rng.u64(0..60_000)
                    } else {
                        0
                    };
                    t += 900 + rng.u64(0..=200) + pause;
                    v += rng.i64(-100..=100);
                }
                Series {
                    name: "a",
                    label: "u64 ms timestamps (1 s ± 100 ms, pauses), i64 random walk",
                    key_type: KeyType::U64,
                    keys,
                    values: Values::I64(values),
                }
            }
            "b" => {
                let mut values = Vec::with_capacity(n);
                let mut drift = 0f64;
                for i in 0..n {
                    let day = (i % 86_400) as f64 / 86_400.0 * std::f64::consts::TAU;
                    drift = (drift + rng.f64() * 0.02 - 0.01).clamp(-8.0, 8.0);
                    let noise = rng.f64() * 0.4 - 0.2;
                    let c = 15.0 + 5.0 * day.sin() + drift + noise;
                    values.push((c * 100.0).round() as i64);
                }
                Series {
                    name: "b",
                    label: "u64 ms timestamps (exactly 1 s), f64 temperatures (2 decimals)",
                    key_type: KeyType::U64,
                    keys: (0..n as u64).map(|i| START_S * 1000 + i * 1000).collect(),
                    values: Values::Cents(values),
                }
            }
            "c" => {
                // Gaps of at most 10 s from START_S: checked before anything is allocated.
                let most = (u32::MAX as u64 - START_S) / 10;
                if n as u64 > most {
                    return Err(format!(
                        "series c: {n} entries may not fit u32 seconds (at most {most})"
                    ));
                }
                let mut keys = Vec::with_capacity(n);
                let mut t = START_S;
                for _ in 0..n {
                    keys.push(t);
                    t += rng.u64(1..=10);
                }
                let values = (0..n)
                    .map(|_| {
                        let mut x = rng.u32(0..100);
                        for (code, w) in STATUS {
                            if x < w {
                                return code;
                            }
                            x -= w;
                        }
                        STATUS[0].0
                    })
                    .collect();
                Series {
                    name: "c",
                    label: "u32 s timestamps (1..10 s apart), u32 status codes (6 values)",
                    key_type: KeyType::U32,
                    keys,
                    values: Values::U32(values),
                }
            }
            other => {
                return Err(format!(
                    "unknown series {other:?} (a, b, c: {})",
                    "a = ms timestamps and i64 random walk, b = 1 s timestamps and f64 temperatures, c = u32 seconds and status codes"
                ))
            }
        })
    }

    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Bytes of one key as the database stores it uncompressed.
    pub fn key_width(&self) -> usize {
        if self.key_type == KeyType::U32 {
            4
        } else {
            8
        }
    }

    pub fn value_type(&self) -> ValueType {
        match self.values {
            Values::I64(_) => ValueType::I64,
            Values::Cents(_) => ValueType::F64,
            Values::U32(_) => ValueType::U32,
        }
    }

    pub fn record_type(&self) -> RecordType {
        RecordType::Fixed(self.value_width() as u32)
    }

    pub fn value_width(&self) -> usize {
        match self.values {
            Values::I64(_) | Values::Cents(_) => 8,
            Values::U32(_) => 4,
        }
    }

    /// Raw bytes of one entry: key and record, uncompressed.
    pub fn raw_entry_bytes(&self) -> usize {
        self.key_width() + self.value_width()
    }

    /// The record of entry `i` as stored (little-endian), in `buf`; returns its length.
    pub fn record(&self, i: usize, buf: &mut [u8; 8]) -> usize {
        match &self.values {
            Values::I64(v) => {
                *buf = v[i].to_le_bytes();
                8
            }
            Values::Cents(v) => {
                *buf = (v[i] as f64 / 100.0).to_le_bytes();
                8
            }
            Values::U32(v) => {
                buf[..4].copy_from_slice(&v[i].to_le_bytes());
                4
            }
        }
    }

    /// The key column as the raw little-endian bytes of its type.
    pub fn key_column(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.len() * self.key_width());
        for &k in &self.keys {
            if self.key_type == KeyType::U32 {
                out.extend_from_slice(&(k as u32).to_le_bytes());
            } else {
                out.extend_from_slice(&k.to_le_bytes());
            }
        }
        out
    }

    /// The value column as the raw little-endian records.
    pub fn value_column(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.len() * self.value_width());
        let mut buf = [0u8; 8];
        for i in 0..self.len() {
            let w = self.record(i, &mut buf);
            out.extend_from_slice(&buf[..w]);
        }
        out
    }

    /// The value of entry `i` as an integer (hundredths for f64).
    fn int(&self, i: usize) -> i128 {
        match &self.values {
            Values::I64(v) | Values::Cents(v) => v[i] as i128,
            Values::U32(v) => v[i] as i128,
        }
    }

    /// Prefix sums of the values and of their magnitudes: `sums(i..j)` in O(1).
    pub fn prefix(&self) -> Prefix {
        let mut sum = Vec::with_capacity(self.len() + 1);
        let mut abs = Vec::with_capacity(self.len() + 1);
        let (mut s, mut a) = (0i128, 0i128);
        sum.push(0);
        abs.push(0);
        for i in 0..self.len() {
            let v = self.int(i);
            s += v;
            a += v.abs();
            sum.push(s);
            abs.push(a);
        }
        Prefix {
            sum,
            abs,
            cents: matches!(self.values, Values::Cents(_)),
        }
    }

    /// The model of `GROUP BY key / width`: (bucket, count, sum) in bucket order.
    pub fn buckets(&self, width: u64, prefix: &Prefix) -> Vec<(u64, u64, Total)> {
        let mut out = Vec::new();
        let mut i = 0;
        while i < self.len() {
            let b = self.keys[i] / width;
            let j = i + self.keys[i..].partition_point(|&k| k / width == b);
            out.push((b, (j - i) as u64, prefix.total(i, j)));
            i = j;
        }
        out
    }
}

/// Prefix sums of a series' values ([`Series::prefix`]).
pub struct Prefix {
    sum: Vec<i128>,
    abs: Vec<i128>,
    cents: bool,
}

impl Prefix {
    /// The sum of the values of entries `i..j`.
    pub fn total(&self, i: usize, j: usize) -> Total {
        let s = self.sum[j] - self.sum[i];
        if self.cents {
            Total::Cents(s, self.abs[j] - self.abs[i])
        } else {
            Total::Int(s)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strictly_ascending(k: &[u64]) -> bool {
        k.windows(2).all(|w| w[0] < w[1])
    }

    #[test]
    fn same_seed_same_series_other_seed_other_series() {
        for name in NAMES {
            let a = Series::generate(name, 5000, 1).unwrap();
            assert_eq!(a, Series::generate(name, 5000, 1).unwrap(), "{name}");
            let b = Series::generate(name, 5000, 2).unwrap();
            assert_ne!(a.values, b.values, "{name}");
            // A prefix of a longer run is the shorter run.
            let long = Series::generate(name, 9000, 1).unwrap();
            assert_eq!(long.keys[..5000], a.keys[..], "{name}");
        }
    }

    #[test]
    fn keys_are_sorted_distinct_and_fit_their_type() {
        for name in NAMES {
            let s = Series::generate(name, 200_000, 7).unwrap();
            assert_eq!(s.len(), 200_000);
            assert!(strictly_ascending(&s.keys), "{name}");
            if s.key_type == KeyType::U32 {
                assert!(*s.keys.last().unwrap() <= u32::MAX as u64);
            }
            assert_eq!(s.key_column().len(), s.len() * s.key_width());
            assert_eq!(s.value_column().len(), s.len() * s.value_width());
        }
    }

    #[test]
    fn series_a_gaps_are_jittered_and_the_walk_moves_in_small_steps() {
        let s = Series::generate("a", 100_000, 3).unwrap();
        let gaps: Vec<u64> = s.keys.windows(2).map(|w| w[1] - w[0]).collect();
        assert!(gaps.iter().all(|&g| g >= 900));
        let short = gaps.iter().filter(|&&g| g <= 1100).count();
        assert!(short > 99_000, "{short}");
        assert!(gaps.iter().any(|&g| g > 10_000), "some pauses");
        let distinct: std::collections::BTreeSet<u64> = gaps.iter().copied().collect();
        assert!(distinct.len() > 150, "jitter: {}", distinct.len());
        let Values::I64(v) = &s.values else {
            panic!("i64 values")
        };
        assert_eq!(v[0], 0);
        assert!(v.windows(2).all(|w| (w[1] - w[0]).abs() <= 100));
        assert!(v.iter().any(|&x| x < 0) || v.iter().any(|&x| x > 1000));
        assert_eq!(s.raw_entry_bytes(), 16);
    }

    #[test]
    fn series_b_is_regular_with_two_decimal_temperatures() {
        let s = Series::generate("b", 100_000, 4).unwrap();
        assert!(s.keys.windows(2).all(|w| w[1] - w[0] == 1000));
        let mut buf = [0u8; 8];
        for i in 0..s.len() {
            assert_eq!(s.record(i, &mut buf), 8);
            let v = f64::from_le_bytes(buf);
            // Two decimals: the shortest decimal form has at most two digits after the point.
            let text = v.to_string();
            let decimals = text.split('.').nth(1).map_or(0, str::len);
            assert!(decimals <= 2, "{v}");
            assert!((-5.0..=35.0).contains(&v), "{v}");
        }
        let Values::Cents(c) = &s.values else {
            panic!("f64 values")
        };
        let distinct: std::collections::BTreeSet<i64> = c.iter().copied().collect();
        assert!(distinct.len() > 500, "{}", distinct.len());
        assert_eq!(s.value_type(), ValueType::F64);
    }

    #[test]
    fn series_c_has_u32_seconds_and_six_status_codes() {
        let s = Series::generate("c", 100_000, 5).unwrap();
        assert_eq!(s.key_type, KeyType::U32);
        assert!(s.keys.windows(2).all(|w| (1..=10).contains(&(w[1] - w[0]))));
        let Values::U32(v) = &s.values else {
            panic!("u32 values")
        };
        let distinct: std::collections::BTreeSet<u32> = v.iter().copied().collect();
        assert_eq!(distinct.len(), 6);
        let ok = v.iter().filter(|&&x| x == 200).count() as f64 / v.len() as f64;
        assert!((0.88..0.92).contains(&ok), "{ok}");
        assert_eq!(s.raw_entry_bytes(), 8);
        assert_eq!(s.record_type(), RecordType::Fixed(4));
    }

    #[test]
    fn sums_and_buckets_agree_with_a_plain_loop() {
        for name in NAMES {
            let s = Series::generate(name, 30_000, 6).unwrap();
            let p = s.prefix();
            let (i, j) = (1234, 25_000);
            let want: i128 = (i..j).map(|x| s.int(x)).sum();
            match p.total(i, j) {
                Total::Int(v) | Total::Cents(v, _) => assert_eq!(v, want, "{name}"),
            }
            let width = (s.keys[s.len() - 1] - s.keys[0]) / 100 + 1;
            let b = s.buckets(width, &p);
            assert!((100..=101).contains(&b.len()), "{}", b.len());
            assert_eq!(b.iter().map(|x| x.1).sum::<u64>(), s.len() as u64);
            let mut model = std::collections::BTreeMap::<u64, (u64, i128)>::new();
            for x in 0..s.len() {
                let e = model.entry(s.keys[x] / width).or_default();
                e.0 += 1;
                e.1 += s.int(x);
            }
            let flat: Vec<(u64, u64, i128)> = b
                .iter()
                .map(|&(k, n, t)| match t {
                    Total::Int(v) | Total::Cents(v, _) => (k, n, v),
                })
                .collect();
            let m: Vec<(u64, u64, i128)> = model.into_iter().map(|(k, (n, v))| (k, n, v)).collect();
            assert_eq!(flat, m, "{name}");
        }
    }

    #[test]
    fn totals_match_exactly_or_within_rounding() {
        use tersedb::Value;
        assert!(Total::Int(5).matches(&Value::Int(5)));
        assert!(!Total::Int(5).matches(&Value::Int(6)));
        assert!(!Total::Int(5).matches(&Value::Float(5.0)));
        let t = Total::Cents(2135 + 1999, 2135 + 1999);
        assert!(t.matches(&Value::Float(21.35 + 19.99)));
        assert!(!t.matches(&Value::Float(21.35 + 19.99 + 0.01)));
        assert!(!t.matches(&Value::Float(21.35)));
        assert!(Total::Int(0).matches(&Value::Null));
        assert!(!Total::Int(1).matches(&Value::Null));
    }

    #[test]
    fn unknown_series_and_zero_entries_are_errors() {
        assert!(Series::generate("d", 10, 1)
            .unwrap_err()
            .contains("unknown series"));
        assert!(Series::generate("a", 0, 1).is_err());
        let e = Series::generate("c", 300_000_000, 1).unwrap_err();
        assert!(e.contains("at most 253"), "{e}");
    }
}
