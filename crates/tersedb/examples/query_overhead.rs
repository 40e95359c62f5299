//! The executor's cost on small ranges, for profiling: on 2M ClusterData-like keys, a
//! pre-parsed `SELECT SUM(key) ... BETWEEN` over 0.1% of the keys against `fold_keys` over the
//! same ranges, per leaf kind (or COUNT with `count`; a fixed number of rounds for callgrind).
//! `cargo run --release -p tersedb --example query_overhead [codec|none] [range in 1/1000]
//! [rounds] [sum|count]`.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// Counts heap allocations, to report how many a query makes.
struct Counting;
static ALLOCS: AtomicU64 = AtomicU64::new(0);
// SAFETY: forwards every call to the system allocator unchanged; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the caller's contract for `alloc` is passed on as it is.
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        // SAFETY: `p` came from `alloc` above, i.e. from `System`, with layout `l`.
        unsafe { System.dealloc(p, l) }
    }
}
#[global_allocator]
static GLOBAL: Counting = Counting;
use tersedb::{CodecId, DbConfig, Durability, Env, EnvOptions, Query};

fn main() -> tersedb::Result<()> {
    let codec = std::env::args().nth(1).and_then(|c| CodecId::from_name(&c));
    let per_mille: usize = std::env::args()
        .nth(2)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1);
    let rounds_arg: Option<usize> = std::env::args().nth(3).and_then(|s| s.parse().ok());
    let sum = std::env::args().nth(4).as_deref() != Some("count");
    let agg = if sum { "SUM" } else { "COUNT" };
    let n = 2_000_000usize;
    let mut rng = fastrand::Rng::with_seed(1);
    let mut keys = Vec::with_capacity(n);
    let mut k = 0u64;
    while keys.len() < n {
        k += 1 + if rng.u8(0..8) == 0 { rng.u64(0..3) } else { 0 };
        keys.push(k as u32);
    }
    let env = Env::in_memory(&EnvOptions::default().durability(Durability::None))?;
    let mut w = env.begin_write()?;
    let db = w.create_db("db", DbConfig::u32_set().with_codec(codec))?;
    for &k in &keys {
        w.append(&db, k, &[])?;
    }
    w.commit()?;
    let r = env.begin_read()?;
    let span = n / 1000 * per_mille;
    let ranges: Vec<(u32, u32)> = (0..64)
        .map(|_| {
            let a = rng.usize(0..n - span);
            (keys[a], keys[a + span])
        })
        .collect();
    let queries: Vec<Query> = ranges
        .iter()
        .map(|(a, b)| {
            Query::parse(&format!(
                "SELECT {agg}(key) FROM db WHERE key BETWEEN {a} AND {b}"
            ))
            .unwrap()
        })
        .collect();
    let rounds = rounds_arg.unwrap_or(2000 / per_mille.max(1));
    for _ in 0..3 {
        let a0 = ALLOCS.load(Ordering::Relaxed);
        let t = Instant::now();
        let mut s = 0i128;
        for _ in 0..rounds {
            for q in &queries {
                s += r.query(q)?.values[0].as_int().unwrap_or(0);
            }
        }
        let tq = t.elapsed().as_secs_f64() / (rounds * queries.len()) as f64;
        let aq = (ALLOCS.load(Ordering::Relaxed) - a0) as f64 / (rounds * queries.len()) as f64;
        let t = Instant::now();
        let mut f = 0u128;
        for _ in 0..rounds {
            for &(a, b) in &ranges {
                let kf = r.fold_keys(&db, a as u64, b as u64, sum)?;
                f += if sum { kf.sum } else { kf.count as u128 };
            }
        }
        let tf = t.elapsed().as_secs_f64() / (rounds * queries.len()) as f64;
        assert_eq!(s as u128, f);
        println!(
            "{}: query {:.2} us ({aq:.1} allocations), fold {:.2} us, ratio {:.2}",
            codec.map_or("none", |c| c.name()),
            tq * 1e6,
            tf * 1e6,
            tq / tf
        );
    }
    Ok(())
}
