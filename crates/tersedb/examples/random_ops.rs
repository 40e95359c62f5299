//! Random-order workload probe (not a documented benchmark): N random u64 inserts with 16-byte
//! records in one write transaction, N random lookups, erase half, check.
//! `cargo run --release -p tersedb --example random_ops [N]`.

use std::time::Instant;
use tersedb::{DbConfig, Durability, Env, EnvOptions, KeyType, RecordType};

fn main() -> tersedb::Result<()> {
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let env = Env::in_memory(&EnvOptions::default().durability(Durability::None))?;
    let mut rng = fastrand::Rng::with_seed(5);
    let keys: Vec<u64> = (0..n).map(|_| rng.u64(..)).collect();
    let t = Instant::now();
    let mut w = env.begin_write()?;
    let db = w.create_db("r", DbConfig::raw(KeyType::U64, RecordType::Fixed(16)))?;
    for k in &keys {
        w.upsert(&db, *k, &k.to_le_bytes().repeat(2))?;
    }
    w.commit()?;
    let ins = t.elapsed();
    let r = env.begin_read()?;
    let t = Instant::now();
    for k in &keys {
        assert!(r.get(&db, *k)?.is_some());
    }
    let get = t.elapsed();
    drop(r);
    let t = Instant::now();
    let mut w = env.begin_write()?;
    for k in keys.iter().step_by(2) {
        w.erase(&db, *k)?;
    }
    w.commit()?;
    let era = t.elapsed();
    let rep = env.check()?;
    println!(
        "{n} random u64 + 16 B: upsert {:.3} s, get {:.3} s, erase half {:.3} s; {} pages, clean {}",
        ins.as_secs_f64(),
        get.as_secs_f64(),
        era.as_secs_f64(),
        rep.total_pages,
        rep.is_clean()
    );
    Ok(())
}
