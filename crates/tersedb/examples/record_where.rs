//! Aggregates under a condition on the record (`WHERE record > X`) on the three series of
//! `tersedb bench timeseries` (a: u64 ms timestamps and an i64 random walk, b: 1 s timestamps
//! and f64 temperatures with two decimals, c: u32 seconds and status codes; the same
//! generators and seed), loaded ascending into a database with the defaults
//! (`DbConfig::new`: auto key codec, compressed records). For thresholds X at quantiles of the
//! values, `COUNT(*)` and `SUM(record)` with `record > X`, and `SUM(record)` over a 10% key
//! range with `record > X`; each answer checked against a plain loop, medians of `R` runs in
//! ms per query, and the query's statistics.
//!
//! Usage: `cargo run --release -p tersedb --example record_where -- [N] [R] [SERIES] [QUERY]`
//! (N entries per series, default 1,000,000; R runs, default 3; SERIES a, b, c or all; QUERY
//! the index of one query to run R times, for instruction counts: `R = 0` then measures the
//! load alone).

use std::time::Instant;
use tersedb::{DbConfig, Env, EnvOptions, KeyType, RecordType, ValueType};

const START_S: u64 = 1_764_000_000;
const STATUS: [(u32, u32); 6] = [(200, 90), (204, 3), (301, 2), (404, 3), (500, 1), (503, 1)];

/// Keys, records as numbers (b: cents), value type.
fn series(name: &str, n: usize, seed: u64) -> (Vec<u64>, Vec<i64>, ValueType) {
    let mut rng = fastrand::Rng::with_seed(
        seed ^ name
            .bytes()
            .fold(0u64, |h, b| h.wrapping_mul(31).wrapping_add(b as u64)),
    );
    let (mut keys, mut vals) = (Vec::with_capacity(n), Vec::with_capacity(n));
    match name {
        "a" => {
            let (mut t, mut v) = (START_S * 1000, 0i64);
            for _ in 0..n {
                keys.push(t);
                vals.push(v);
                let pause = if rng.u32(0..1000) == 0 {
                    rng.u64(0..60_000)
                } else {
                    0
                };
                t += 900 + rng.u64(0..=200) + pause;
                v += rng.i64(-100..=100);
            }
            (keys, vals, ValueType::I64)
        }
        "b" => {
            let mut drift = 0f64;
            for i in 0..n {
                let day = (i % 86_400) as f64 / 86_400.0 * std::f64::consts::TAU;
                drift = (drift + rng.f64() * 0.02 - 0.01).clamp(-8.0, 8.0);
                let noise = rng.f64() * 0.4 - 0.2;
                let c = 15.0 + 5.0 * day.sin() + drift + noise;
                keys.push(START_S * 1000 + i as u64 * 1000);
                vals.push((c * 100.0).round() as i64);
            }
            (keys, vals, ValueType::F64)
        }
        _ => {
            let mut t = START_S;
            for _ in 0..n {
                keys.push(t);
                t += rng.u64(1..=10);
            }
            for _ in 0..n {
                let mut x = rng.u32(0..100);
                let mut code = STATUS[0].0;
                for (c, w) in STATUS {
                    if x < w {
                        code = c;
                        break;
                    }
                    x -= w;
                }
                vals.push(code as i64);
            }
            (keys, vals, ValueType::U32)
        }
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn main() {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().map_or(1_000_000, |s| s.parse().expect("N"));
    let rounds: usize = args.next().map_or(3, |s| s.parse().expect("R"));
    let which = args.next().unwrap_or_else(|| "all".into());
    let only: Option<usize> = args.next().map(|s| s.parse().expect("QUERY"));
    for name in ["a", "b", "c"] {
        if which != "all" && which != name {
            continue;
        }
        let (keys, vals, vt) = series(name, n, 1);
        let env = Env::in_memory(&EnvOptions::default()).unwrap();
        let kt = if name == "c" {
            KeyType::U32
        } else {
            KeyType::U64
        };
        let cfg = DbConfig::new(kt, RecordType::Fixed(vt.width().unwrap())).with_value_type(vt);
        let mut w = env.begin_write().unwrap();
        let db = w.create_db("t", cfg).unwrap();
        for (k, v) in keys.iter().zip(&vals) {
            let bytes = match vt {
                ValueType::I64 => v.to_le_bytes().to_vec(),
                ValueType::F64 => (*v as f64 / 100.0).to_le_bytes().to_vec(),
                _ => (*v as u32).to_le_bytes().to_vec(),
            };
            match kt {
                KeyType::U32 => w.put(&db, *k as u32, &bytes).unwrap(),
                _ => w.put(&db, *k, &bytes).unwrap(),
            };
        }
        w.commit().unwrap();
        let mut sorted = vals.clone();
        sorted.sort_unstable();
        let lit = |c: i64| match vt {
            ValueType::F64 => format!("{}", c as f64 / 100.0),
            _ => c.to_string(),
        };
        let (k0, k1) = (keys[n * 45 / 100], keys[n * 55 / 100]);
        let mut queries = Vec::new();
        for q in [0.5, 0.9, 0.99, 0.999] {
            let x = sorted[((n as f64 * q) as usize).min(n - 1)];
            let count = vals.iter().filter(|&&v| v > x).count() as i128;
            let sum: i128 = vals.iter().filter(|&&v| v > x).map(|&v| v as i128).sum();
            let in_range = keys
                .iter()
                .zip(&vals)
                .filter(|(&k, &v)| k >= k0 && k <= k1 && v > x)
                .map(|(_, &v)| v as i128)
                .sum::<i128>();
            let xs = lit(x);
            queries.push((
                format!("q{q}"),
                format!("SELECT COUNT(*) FROM t WHERE record > {xs}"),
                count,
                false,
            ));
            queries.push((
                format!("q{q}"),
                format!("SELECT SUM(record) FROM t WHERE record > {xs}"),
                sum,
                vt == ValueType::F64,
            ));
            queries.push((
                format!("q{q}"),
                format!(
                    "SELECT SUM(record) FROM t WHERE key BETWEEN {k0} AND {k1} AND record > {xs}"
                ),
                in_range,
                vt == ValueType::F64,
            ));
        }
        let r = env.begin_read().unwrap();
        for (i, (label, text, want, cents)) in queries.iter().enumerate() {
            if only.is_some_and(|o| o != i) {
                continue;
            }
            let mut times = Vec::new();
            let mut stats = None;
            for _ in 0..rounds {
                let t = Instant::now();
                let res = r.query_str(text).unwrap();
                times.push(t.elapsed().as_secs_f64() * 1e3);
                let got = &res.values[0];
                let ok = if *cents {
                    let g = got.as_f64().unwrap();
                    (g * 100.0 - *want as f64).abs() <= 1e-6 * (*want as f64).abs() + 1.0
                } else {
                    got.as_int() == Some(*want)
                };
                assert!(ok, "{text}: {got:?}, want {want}");
                stats = Some(res.stats);
            }
            if rounds > 0 {
                println!(
                    "{name} {i:2} {label:6} {:8.3} ms  {text}\n      {:?}",
                    median(times),
                    stats.unwrap()
                );
            }
        }
    }
}
