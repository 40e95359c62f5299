//! Record aggregates over key ranges, raw against compressed records, in one run: `N` time-series
//! entries (u64 µs timestamps with jitter, BP128 keys) of each value kind (f64 readings with two
//! decimals, an i64 random walk, u32 status codes), loaded ascending; then `SUM(record)`,
//! `MIN/MAX(record)` and `AVG(record)` over the whole table and 1,000 ranges of ~1%, and a
//! `GROUP BY key / N` of 1,000 buckets; medians of `R` interleaved runs, ratios compressed/raw.
//! Usage: `cargo run --release -p tersedb --example record_sums -- [N] [R]`.

use std::time::Instant;
use tersedb::{CodecId, DbConfig, Env, EnvOptions, KeyType, RecordType, ValueType};

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn main() {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().map_or(2_000_000, |s| s.parse().expect("N"));
    let rounds: usize = args.next().map_or(5, |s| s.parse().expect("R"));
    let mut rng = fastrand::Rng::with_seed(11);
    let t0 = 1_764_000_000_000_000u64;
    let keys: Vec<u64> = (0..n as u64)
        .map(|i| t0 + i * 1_000_000 + rng.u64(0..1000))
        .collect();
    let mut walk = 0i64;
    let kinds: [(&str, ValueType, Vec<[u8; 8]>); 3] = [
        (
            "f64 readings",
            ValueType::F64,
            (0..n)
                .map(|i| {
                    let c = 2000 + (i as i64 / 60 % 500) + rng.i64(-30..30);
                    (c as f64 / 100.0).to_le_bytes()
                })
                .collect(),
        ),
        (
            "i64 walk",
            ValueType::I64,
            (0..n)
                .map(|_| {
                    walk += rng.i64(-50..51);
                    walk.to_le_bytes()
                })
                .collect(),
        ),
        (
            "u32 codes",
            ValueType::U32,
            (0..n)
                .map(|_| {
                    let c = [200u64, 200, 200, 404, 500, 301][rng.usize(0..6)];
                    c.to_le_bytes()
                })
                .collect(),
        ),
    ];
    let ranges: Vec<(u64, u64)> = (0..1000)
        .map(|_| {
            let a = rng.usize(0..n - n / 100);
            (keys[a], keys[a + n / 100])
        })
        .collect();
    let span = (keys[n - 1] - keys[0]) / 1000 + 1;
    let queries = [
        ("SUM all", "SELECT SUM(record) FROM t".to_string()),
        (
            "MIN,MAX all",
            "SELECT MIN(record), MAX(record) FROM t".to_string(),
        ),
        (
            "1000 buckets",
            format!("SELECT key / {span}, AVG(record) FROM t GROUP BY key / {span}"),
        ),
    ];
    for (name, vt, vals) in &kinds {
        let width = vt.width().unwrap() as usize;
        let mut envs = Vec::new();
        for compressed in [false, true] {
            let env = Env::in_memory(&EnvOptions::default()).unwrap();
            let cfg = DbConfig::raw(KeyType::U64, RecordType::Fixed(width as u32))
                .with_codec(Some(CodecId::Bp128))
                .with_value_type(*vt)
                .with_compressed_records(compressed);
            let mut w = env.begin_write().unwrap();
            let db = w.create_db("t", cfg).unwrap();
            for (k, v) in keys.iter().zip(vals) {
                w.append(&db, *k, &v[..width]).unwrap();
            }
            w.commit().unwrap();
            envs.push(env);
        }
        // times[query][layout]
        let mut times = vec![[Vec::new(), Vec::new()]; queries.len() + 1];
        for _ in 0..rounds {
            for (li, env) in envs.iter().enumerate() {
                let r = env.begin_read().unwrap();
                let mut answers = Vec::new();
                for (qi, (_, q)) in queries.iter().enumerate() {
                    let s = Instant::now();
                    let res = r.query_str(q).unwrap();
                    times[qi][li].push(s.elapsed().as_secs_f64());
                    answers.push(format!("{res}"));
                }
                let s = Instant::now();
                for &(a, b) in &ranges {
                    let q = format!("SELECT SUM(record) FROM t WHERE key BETWEEN {a} AND {b}");
                    answers.push(format!("{}", r.query_str(&q).unwrap()));
                }
                times[queries.len()][li].push(s.elapsed().as_secs_f64());
                std::hint::black_box(answers);
            }
        }
        // Both layouts answer alike (printed results compared once).
        let ans: Vec<String> = envs
            .iter()
            .map(|e| {
                let r = e.begin_read().unwrap();
                queries
                    .iter()
                    .map(|(_, q)| format!("{}", r.query_str(q).unwrap()))
                    .collect()
            })
            .collect();
        // Integers equal; f64 sums equal up to rounding (raw records are added one by one in
        // key order, compressed decimal chunks summed exactly).
        let nums = |s: &String| -> Vec<f64> {
            s.split(|c: char| c.is_whitespace() || c == '|')
                .filter_map(|t| t.parse::<f64>().ok())
                .collect()
        };
        let (a, b) = (nums(&ans[0]), nums(&ans[1]));
        assert_eq!(
            a.len(),
            b.len(),
            "{name}: raw and compressed answers differ"
        );
        for (x, y) in a.iter().zip(&b) {
            assert!(
                x == y || (x - y).abs() <= 1e-12 * x.abs().max(1.0),
                "{name}: raw {x} and compressed {y} differ"
            );
        }
        println!("{name}: {n} entries, medians of {rounds} interleaved runs");
        let names = queries.iter().map(|q| q.0).chain(["SUM 1% x1000"]);
        for (qi, q) in names.enumerate() {
            let (a, b) = (median(times[qi][0].clone()), median(times[qi][1].clone()));
            println!(
                "  {q:<14} raw {:>9.3} ms   compressed {:>9.3} ms   {:>5.2}x",
                a * 1e3,
                b * 1e3,
                b / a
            );
        }
    }
}
