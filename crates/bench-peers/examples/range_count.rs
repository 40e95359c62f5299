//! Range COUNT alone, for profiling tersedb's in-tree fold against Roaring's
//! `range_cardinality`: `cargo run --release -p tersedb-bench-peers --example range_count
//! [N] [REPS] [STORES]`. ClusterData-like keys (runs and gaps, as `--dist clustered`), the
//! `bench --peers` plan's 1,000 ranges of 1%, each store loaded ascending, closed, reopened, then
//! the 1,000 COUNTs timed REPS times (median, per range).

use std::time::Instant;
use tersedb_bench_peers::{create, Plan, Width};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let n: usize = args
        .first()
        .and_then(|a| a.parse().ok())
        .unwrap_or(2_000_000);
    let reps: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(50);
    let stores = args
        .get(2)
        .cloned()
        .unwrap_or_else(|| "tersedb-none,tersedb-bp128,tersedb-auto,roaring".into());
    let mut rng = fastrand::Rng::with_seed(1);
    let mut k = 0u64;
    let keys: Vec<u64> = (0..n)
        .map(|_| {
            k += if rng.u8(..) < 230 { 1 } else { rng.u64(2..64) };
            k
        })
        .collect();
    let plan = Plan::new(keys, 1);
    let work = std::env::temp_dir().join(format!("tersedb-range-count-{}", std::process::id()));
    for name in stores.split(',') {
        let dir = work.join(name);
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("work directory");
        let mut s = create(name, &dir, Width::of(&plan.keys)).expect("store");
        s.load_ascending(&plan.keys).expect("load");
        s.close().expect("close");
        s.reopen().expect("reopen");
        let mut times = Vec::with_capacity(reps);
        let mut total = 0;
        for _ in 0..reps {
            let t = Instant::now();
            let r = s.ranges(&plan.ranges, false).expect("ranges");
            times.push(t.elapsed().as_secs_f64());
            total = r.iter().map(|x| x.0).sum::<u64>();
        }
        times.sort_by(f64::total_cmp);
        let med = times[times.len() / 2];
        println!(
            "{name:<16} {:>8.3} µs per range COUNT ({} keys counted per 1,000 ranges)",
            med * 1e6 / plan.ranges.len() as f64,
            total
        );
        drop(s);
        let _ = std::fs::remove_dir_all(&dir);
    }
    let _ = std::fs::remove_dir_all(&work);
}
