//! Engine speed probe for the reference workload: N dense ascending u32 keys without
//! records, uncompressed leaves, Durability::None, one write transaction; then N random-order
//! lookups and a full cursor scan. Usage: `cargo run --release -p tersedb --example engine_speed
//! [N]` (default 10,000,000).

use std::time::Instant;
use tersedb::{DbConfig, Durability, Env, EnvOptions};

fn main() {
    let n: u32 = std::env::args()
        .nth(1)
        .map_or(10_000_000, |s| s.parse().expect("N"));
    let path = std::env::temp_dir().join(format!("tersedb-speed-{}.tdb", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let opts = EnvOptions::default()
        .durability(Durability::None)
        .cache_bytes(1 << 30);
    let env = Env::create(&path, &opts).expect("create");

    let t = Instant::now();
    let mut w = env.begin_write().expect("write");
    let db = w.create_db("keys", DbConfig::u32_set()).expect("db");
    for k in 0..n {
        w.append(&db, k, &[]).expect("append");
    }
    w.commit().expect("commit");
    let insert = t.elapsed().as_secs_f64();
    let bytes = std::fs::metadata(&path).expect("stat").len();

    let mut order: Vec<u32> = (0..n).collect();
    fastrand::Rng::with_seed(1).shuffle(&mut order);
    let r = env.begin_read().expect("read");
    let t = Instant::now();
    let mut hits = 0u64;
    for &k in &order {
        hits += r.contains(&db, k).expect("get") as u64;
    }
    let find = t.elapsed().as_secs_f64();
    assert_eq!(hits, n as u64);

    let t = Instant::now();
    let mut c = r.cursor(&db).expect("cursor");
    let mut count = 0u64;
    let mut sum = 0u64;
    let mut ok = c.first().expect("first");
    while ok {
        sum += c.key_u32().expect("key") as u64;
        count += 1;
        ok = c.next().expect("next");
    }
    let scan = t.elapsed().as_secs_f64();
    assert_eq!(count, n as u64);
    assert_eq!(sum, (n as u64) * (n as u64 - 1) / 2);
    println!(
        "keys {n}: insert {insert:.3} s, lookups {find:.3} s, cursor {scan:.3} s, {:.3} bytes/key ({bytes} bytes)",
        bytes as f64 / n as f64
    );
    drop(r);
    drop(env);
    let _ = std::fs::remove_file(&path);
}
