//! The issue-4 speed check: N dense ascending u32 keys without records in one write transaction
//! (Durability::None), N random-order lookups, one full cursor scan, bytes per key.
//!
//! `cargo run --release -p tersedb --example engine_perf [N]` (default 10,000,000).

use std::time::Instant;
use tersedb::{DbConfig, Durability, Env, EnvOptions};

fn main() -> tersedb::Result<()> {
    let n: u32 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(10_000_000);
    let opts = EnvOptions::default()
        .durability(Durability::None)
        .cache_bytes(1 << 30);
    let env = Env::in_memory(&opts)?;
    let backend = "in-memory";

    let t = Instant::now();
    let mut w = env.begin_write()?;
    let db = w.create_db("bench", DbConfig::u32_set())?;
    for k in 0..n {
        w.insert(&db, k, &[])?;
    }
    w.commit()?;
    let insert = t.elapsed();

    let r = env.begin_read()?;
    let stats = r.stats(&db)?;
    let check = env.check()?;
    let file_bytes = check.total_pages * env.page_size() as u64;

    let mut rng = fastrand::Rng::with_seed(42);
    let t = Instant::now();
    let mut found = 0u32;
    for _ in 0..n {
        if r.contains(&db, rng.u32(0..n))? {
            found += 1;
        }
    }
    let lookup = t.elapsed();
    assert_eq!(found, n);

    let t = Instant::now();
    let mut c = r.cursor(&db)?;
    let mut ok = c.first()?;
    let (mut count, mut sum) = (0u64, 0u64);
    while ok {
        sum += c.key_u32().unwrap_or(0) as u64;
        count += 1;
        ok = c.next()?;
    }
    let scan = t.elapsed();
    assert_eq!(count, n as u64);

    println!("backend {backend}, {n} keys, page size {}", env.page_size());
    println!("insert  {:>8.3} s", insert.as_secs_f64());
    println!("lookup  {:>8.3} s", lookup.as_secs_f64());
    println!("scan    {:>8.3} s  (sum {sum})", scan.as_secs_f64());
    println!(
        "size    {file_bytes} bytes in {} pages = {:.3} bytes/key (height {}, {} leaves, {} branches)",
        check.total_pages,
        file_bytes as f64 / n as f64,
        stats.height,
        stats.leaf_pages,
        stats.branch_pages
    );
    assert!(check.is_clean(), "{check}");
    Ok(())
}
