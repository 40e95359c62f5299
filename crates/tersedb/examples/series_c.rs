//! Series c of `tersedb bench timeseries` (u32 second timestamps 1..=10 s apart, u32 status
//! codes, 200 nine times in ten; `auto` keys) with raw or compressed records, its read phases
//! each a function of its own (`p_lookups`, `p_sums`), so that `callgrind_annotate
//! --inclusive=yes` gives each one's count; with `time` it also prints each phase's wall clock
//! (medians of 9 rounds).
//! Usage: `valgrind --tool=callgrind target/release/examples/series_c [N] [raw|cmp] [time|rand]`
//! (default 200,000 and `cmp`; `rand` adds the bench's random-order load, `p_load_rand`) after
//! `cargo build --release -p tersedb --example series_c`.

use std::time::Instant;
use tersedb::{Db, DbConfig, Durability, Env, EnvOptions, KeyType, ReadTxn, RecordType, ValueType};

#[inline(never)]
fn p_load(env: &Env, cfg: DbConfig, keys: &[u32], vals: &[u32]) -> Db {
    let mut w = env.begin_write().unwrap();
    let db = w.create_db("ts", cfg).unwrap();
    for (k, v) in keys.iter().zip(vals) {
        w.append(&db, *k, &v.to_le_bytes()).unwrap();
    }
    w.commit().unwrap();
    db
}

/// The bench's random-order load: `rows` in their order, 100,000 per write transaction.
#[inline(never)]
fn p_load_rand(env: &Env, cfg: DbConfig, rows: &[(u32, u32)]) {
    let mut w = env.begin_write().unwrap();
    let db = w.create_db("rand", cfg).unwrap();
    for (j, (k, v)) in rows.iter().enumerate() {
        if j > 0 && j % 100_000 == 0 {
            w.commit().unwrap();
            w = env.begin_write().unwrap();
        }
        w.insert(&db, *k, &v.to_le_bytes()).unwrap();
    }
    w.commit().unwrap();
}

#[inline(never)]
fn p_lookups(r: &ReadTxn, db: &Db, order: &[u32]) -> usize {
    let mut found = 0;
    for &k in order {
        found += r.get(db, k).unwrap().map_or(0, |v| v.len());
    }
    found
}

#[inline(never)]
fn p_sums(r: &ReadTxn, ranges: &[(u32, u32)]) -> usize {
    let mut t = 0;
    for &(a, b) in ranges {
        let q = r
            .query_str(&format!(
                "SELECT SUM(record) FROM ts WHERE key >= {a} AND key <= {b}"
            ))
            .unwrap();
        t += q.to_csv().len();
    }
    t
}

/// `p_sums` over the 10% ranges alone (the SUM target), for `--toggle-collect`.
#[inline(never)]
fn p_sums10(r: &ReadTxn, ranges: &[(u32, u32)]) -> usize {
    p_sums(r, ranges)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .map_or(200_000, |s| s.parse().unwrap());
    let compressed = std::env::args().nth(2).is_none_or(|s| s != "raw");
    let time = std::env::args().nth(3).is_some_and(|s| s == "time");
    let rand = std::env::args().nth(3).is_some_and(|s| s == "rand");
    let mut rng = fastrand::Rng::with_seed(7);
    let mut t = 1_764_000_000u32;
    let keys: Vec<u32> = (0..n)
        .map(|_| {
            let k = t;
            t += rng.u32(1..=10);
            k
        })
        .collect();
    let vals: Vec<u32> = (0..n)
        .map(|_| match rng.u32(0..100) {
            0..90 => 200,
            90..93 => 204,
            93..95 => 301,
            95..98 => 404,
            98 => 500,
            _ => 503,
        })
        .collect();
    let mut order = keys.clone();
    rng.shuffle(&mut order);
    order.truncate(20_000);
    let mut ranges = |frac: usize, count: usize| -> Vec<(u32, u32)> {
        let len = n / frac;
        (0..count)
            .map(|_| {
                let a = rng.usize(0..=n - len);
                (keys[a], keys[a + len - 1])
            })
            .collect::<Vec<_>>()
    };
    let (r1, r10, r100) = (ranges(100, 16), ranges(10, 5), ranges(1, 1));
    let path = std::env::temp_dir().join(format!("series-c-{}.tdb", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let opts = EnvOptions::default()
        .durability(Durability::None)
        .cache_bytes(1 << 30);
    let env = Env::create(&path, &opts).unwrap();
    let cfg = DbConfig::raw(KeyType::U32, RecordType::Fixed(4))
        .with_auto_codec(true)
        .with_value_type(ValueType::U32)
        .with_compressed_records(compressed);
    let db = p_load(&env, cfg, &keys, &vals);
    if rand {
        let mut rows: Vec<(u32, u32)> = keys.iter().copied().zip(vals.iter().copied()).collect();
        rng.shuffle(&mut rows);
        p_load_rand(&env, cfg, &rows);
    }
    let r = env.begin_read().unwrap();
    let mut out = 0usize;
    if time {
        let mut ts = vec![Vec::new(); 4];
        for _ in 0..9 {
            let t = Instant::now();
            out += p_lookups(&r, &db, &order);
            ts[0].push(t.elapsed().as_secs_f64() * 1e6 / order.len() as f64);
            for (i, rs) in [&r1, &r10, &r100].into_iter().enumerate() {
                let t = Instant::now();
                out += p_sums(&r, rs);
                ts[i + 1].push(t.elapsed().as_secs_f64() * 1e6 / rs.len() as f64);
            }
        }
        let m: Vec<f64> = ts.into_iter().map(median).collect();
        println!(
            "{} lookup {:.3} us, SUM 1% {:.2} us, SUM 10% {:.2} us, SUM 100% {:.2} us",
            if compressed { "cmp" } else { "raw" },
            m[0],
            m[1],
            m[2],
            m[3]
        );
    } else {
        out += p_lookups(&r, &db, &order);
        out += p_sums(&r, &r1);
        out += p_sums10(&r, &r10);
        out += p_sums(&r, &r100);
    }
    drop(r);
    drop(env);
    let _ = std::fs::remove_file(&path);
    println!("{out}");
}
