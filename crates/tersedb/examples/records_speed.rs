//! Raw against compressed records on a time series: `N` readings (u64 µs timestamps one second
//! apart with jitter, f64 values with two decimals) behind BP128-compressed keys, in one run,
//! the two layouts interleaved `R` times; medians. Phases: ascending load (append, one
//! transaction), random-order load (50k per transaction), every key read in random order,
//! a cursor over every entry summing the records, `SELECT SUM(record)` over everything and over
//! 1,000 ranges of ~1%; bytes per record after the ascending load, leaf-page bytes per entry
//! after the random-order load.
//! Usage: `cargo run --release -p tersedb --example records_speed -- [N] [R]`.

use std::time::Instant;
use tersedb::{CodecId, DbConfig, Durability, Env, EnvOptions, KeyType, RecordType, ValueType};

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn main() {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().map_or(1_000_000, |s| s.parse().expect("N"));
    let rounds: usize = args.next().map_or(3, |s| s.parse().expect("R"));
    let mut rng = fastrand::Rng::with_seed(7);
    let t0 = 1_764_000_000_000_000u64;
    let rows: Vec<(u64, f64)> = (0..n as u64)
        .map(|i| {
            let t = t0 + i * 1_000_000 + rng.u64(0..1000);
            let tenths = 2000 + (i as i64 / 60 % 500) + rng.i64(-30..30);
            (t, tenths as f64 / 100.0)
        })
        .collect();
    let mut shuffled = rows.clone();
    rng.shuffle(&mut shuffled);
    let mut order: Vec<u64> = rows.iter().map(|r| r.0).collect();
    rng.shuffle(&mut order);
    let ranges: Vec<(u64, u64)> = (0..1000)
        .map(|_| {
            let a = rng.usize(0..n - n / 100);
            (rows[a].0, rows[a + n / 100].0)
        })
        .collect();
    let phases = [
        "load asc",
        "load rand",
        "get",
        "cursor sum",
        "SUM all",
        "SUM 1% x1000",
    ];
    // times[layout][phase] = runs
    let mut times = vec![vec![Vec::new(); phases.len()]; 2];
    let mut bytes = [0f64; 2];
    let mut rand_pages = [0f64; 2];
    let mut check = [0f64; 2];
    for _ in 0..rounds {
        for (li, compressed) in [false, true].into_iter().enumerate() {
            let path =
                std::env::temp_dir().join(format!("tersedb-recs-{}-{li}.tdb", std::process::id()));
            let _ = std::fs::remove_file(&path);
            let opts = EnvOptions::default()
                .durability(Durability::None)
                .cache_bytes(1 << 30);
            let env = Env::create(&path, &opts).expect("create");
            let cfg = DbConfig::raw(KeyType::U64, RecordType::Fixed(8))
                .with_codec(Some(CodecId::Bp128))
                .with_value_type(ValueType::F64)
                .with_compressed_records(compressed);
            let mut t = Vec::new();
            let s = Instant::now();
            let mut w = env.begin_write().unwrap();
            let db = w.create_db("a", cfg).unwrap();
            for &(k, v) in &rows {
                w.append(&db, k, &v.to_le_bytes()).unwrap();
            }
            let st = w.stats(&db).unwrap();
            w.commit().unwrap();
            t.push(s.elapsed().as_secs_f64());
            bytes[li] = st.leaf_record_bytes as f64 / n as f64;
            let s = Instant::now();
            let mut w = env.begin_write().unwrap();
            let db = w.create_db("r", cfg).unwrap();
            for (j, &(k, v)) in shuffled.iter().enumerate() {
                if j > 0 && j % 50_000 == 0 {
                    w.commit().unwrap();
                    w = env.begin_write().unwrap();
                }
                w.insert(&db, k, &v.to_le_bytes()).unwrap();
            }
            let st = w.stats(&db).unwrap();
            w.commit().unwrap();
            t.push(s.elapsed().as_secs_f64());
            rand_pages[li] = (st.leaf_pages * env.page_size() as u64) as f64 / n as f64;
            let r = env.begin_read().unwrap();
            let db = r.open_db("a").unwrap();
            let s = Instant::now();
            let mut found = 0usize;
            for &k in &order {
                found += r.get(&db, k).unwrap().map_or(0, |v| v.len());
            }
            t.push(s.elapsed().as_secs_f64());
            assert_eq!(found, 8 * n);
            let s = Instant::now();
            let mut sum = 0f64;
            for x in r.iter(&db).unwrap() {
                let (_, v) = x.unwrap();
                sum += f64::from_le_bytes(v.try_into().unwrap());
            }
            t.push(s.elapsed().as_secs_f64());
            check[li] = sum;
            let s = Instant::now();
            let q = r.query_str("SELECT SUM(record) FROM a").unwrap();
            t.push(s.elapsed().as_secs_f64());
            std::hint::black_box(q);
            let s = Instant::now();
            for &(a, b) in &ranges {
                let q = r
                    .query_str(&format!(
                        "SELECT SUM(record) FROM a WHERE key BETWEEN {a} AND {b}"
                    ))
                    .unwrap();
                std::hint::black_box(q);
            }
            t.push(s.elapsed().as_secs_f64());
            drop(r);
            drop(env);
            let _ = std::fs::remove_file(&path);
            for (p, x) in t.into_iter().enumerate() {
                times[li][p].push(x);
            }
        }
    }
    assert_eq!(check[0].to_bits(), check[1].to_bits(), "sums differ");
    println!("{n} f64 readings, u64 keys (bp128), medians of {rounds} interleaved runs");
    println!(
        "{:<14} {:>12} {:>12} {:>8}",
        "phase", "raw", "compressed", "ratio"
    );
    for (p, name) in phases.iter().enumerate() {
        let (a, b) = (median(times[0][p].clone()), median(times[1][p].clone()));
        println!(
            "{name:<14} {:>10.1}ms {:>10.1}ms {:>7.2}x",
            a * 1e3,
            b * 1e3,
            b / a
        );
    }
    println!(
        "{:<14} {:>12.3} {:>12.3} {:>7.2}x",
        "bytes/record",
        bytes[0],
        bytes[1],
        bytes[1] / bytes[0]
    );
    println!(
        "{:<14} {:>12.3} {:>12.3} {:>7.2}x",
        "rand leaf B/e",
        rand_pages[0],
        rand_pages[1],
        rand_pages[1] / rand_pages[0]
    );
}
