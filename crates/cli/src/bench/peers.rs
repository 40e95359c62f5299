//! `tersedb bench --peers lmdb,redb,sqlite,roaring[,rocksdb,fjall]`: tersedb (one row per key
//! codec, and `auto`) against the
//! stores a user would pick instead, on the same keys in one run. Each store runs in a process of
//! its own (this binary's hidden `bench peer-worker`), so its peak memory is its own; runs are
//! round-robin over the stores and every figure is the median of `--repeat` runs. Every store's
//! answers are checked against the truth computed from the keys: a mismatch fails the command.
//! The workload is `tersedb_bench_peers::run_workload`'s; beside the sizes, the entropy bound
//! log2 C(U, n) of the key set.

use std::path::PathBuf;

/// Options of the peers benchmark (read only by a build with the `peers` feature).
#[cfg_attr(not(feature = "peers"), allow(dead_code))]
#[derive(Clone, Debug)]
pub struct Options {
    pub peers: Vec<String>,
    /// tersedb codecs (`none` = uncompressed, `auto` = chosen per block); empty = none, bp128,
    /// pfor-delta, auto.
    pub codecs: Vec<String>,
    pub keys: usize,
    pub dist: String,
    pub input: Option<PathBuf>,
    pub seed: u64,
    pub repeat: usize,
    pub json: bool,
    /// Write SVG charts here.
    pub plot: Option<PathBuf>,
}

/// tersedb's rows of the default run.
#[cfg_attr(not(feature = "peers"), allow(dead_code))]
pub const DEFAULT_CODECS: [&str; 4] = ["none", "bp128", "pfor-delta", "auto"];

#[cfg(not(feature = "peers"))]
pub fn run(_: &Options) -> Result<(), String> {
    Err("this tersedb was built without the peers (rebuild with `--features peers`)".into())
}

/// Every peer this build has, for `bench peers`.
#[cfg(feature = "peers")]
pub fn all_peers() -> Result<Vec<String>, String> {
    Ok(tersedb_bench_peers::peer_names()
        .into_iter()
        .map(String::from)
        .collect())
}

#[cfg(not(feature = "peers"))]
pub fn all_peers() -> Result<Vec<String>, String> {
    run(&Options {
        peers: Vec::new(),
        codecs: Vec::new(),
        keys: 0,
        dist: String::new(),
        input: None,
        seed: 0,
        repeat: 0,
        json: false,
        plot: None,
    })
    .map(|()| Vec::new())
}

#[cfg(not(feature = "peers"))]
pub fn worker(_: &str, _: &std::path::Path, _: u64, _: &std::path::Path) -> Result<(), String> {
    run(&Options {
        peers: Vec::new(),
        codecs: Vec::new(),
        keys: 0,
        dist: String::new(),
        input: None,
        seed: 0,
        repeat: 0,
        json: false,
        plot: None,
    })
}

#[cfg(feature = "peers")]
pub use with_peers::{run, worker, Row};

#[cfg(feature = "peers")]
mod with_peers {
    use super::{Options, DEFAULT_CODECS};
    use crate::bench::store::{bench_keys, json_str};
    use crate::bench::timing::median;
    use std::path::Path;
    use std::process::Command;
    use tersedb_bench_peers::{
        entropy, expand_peer, missing_peers, peer_names, worker::Report, Figures, Plan,
    };

    /// The hidden subcommand: one store's workload, figures on stdout.
    pub fn worker(store: &str, keys_file: &Path, seed: u64, work: &Path) -> Result<(), String> {
        tersedb_bench_peers::worker::run(store, keys_file, seed, work, std::io::stdout().lock())
    }

    /// The universe the keys were drawn from, for the entropy bound.
    fn universe(opts: &Options, keys: &[u64]) -> u64 {
        let n = keys.len() as u64;
        let top = keys.last().map_or(0, |&k| k + 1);
        if opts.input.is_some() {
            return top;
        }
        match opts.dist.as_str() {
            "clustered" => (9 * n / 8).max(n),
            "uniform" => 1 << 32,
            _ => top,
        }
    }

    /// One store's medians over the runs.
    pub struct Row {
        pub name: String,
        pub f: Figures,
        pub harness_rss: u64,
    }

    fn medians(name: &str, reports: &[Report]) -> Row {
        let med = |g: fn(&Figures) -> f64| {
            median(&mut reports.iter().map(|r| g(&r.figures)).collect::<Vec<_>>())
        };
        let first = &reports[0].figures;
        let f = Figures {
            durability: first.durability.clone(),
            settle: first.settle.clone(),
            load_ascending_s: med(|f| f.load_ascending_s),
            load_random_s: med(|f| f.load_random_s),
            settle_s: med(|f| f.settle_s),
            bytes_ascending: first.bytes_ascending,
            bytes_random: first.bytes_random,
            lookup_s: med(|f| f.lookup_s),
            absent_s: med(|f| f.absent_s),
            scan_s: med(|f| f.scan_s),
            range_count_s: med(|f| f.range_count_s),
            range_sum_s: med(|f| f.range_sum_s),
            peak_rss: reports.iter().filter_map(|r| r.figures.peak_rss).max(),
            answers: first.answers,
        };
        Row {
            name: name.to_string(),
            f,
            harness_rss: reports.iter().map(|r| r.harness_rss).max().unwrap_or(0),
        }
    }

    pub fn run(opts: &Options) -> Result<(), String> {
        let (keys, label) = bench_keys(opts.input.as_deref(), &opts.dist, opts.keys, opts.seed)?;
        let codecs: Vec<String> = if opts.codecs.is_empty() {
            DEFAULT_CODECS.map(String::from).to_vec()
        } else {
            opts.codecs.clone()
        };
        let known = peer_names();
        let mut stores: Vec<String> = codecs.iter().map(|c| format!("tersedb-{c}")).collect();
        for p in &opts.peers {
            for p in expand_peer(p) {
                if let Some((_, feature)) = missing_peers().into_iter().find(|(m, _)| *m == p) {
                    return Err(format!(
                        "peer {p:?} is not in this build (rebuild with `--features peers,{feature}`)"
                    ));
                }
                if !known.contains(&p) {
                    return Err(format!(
                        "unknown peer {p:?} ({}, rocksdb = rocksdb-lz4,rocksdb-zstd)",
                        known.join(", ")
                    ));
                }
                if !stores.iter().any(|s| s == p) {
                    stores.push(p.to_string());
                }
            }
        }

        let work = std::env::temp_dir().join(format!("tersedb-peers-{}", std::process::id()));
        std::fs::create_dir_all(&work).map_err(|e| format!("{}: {e}", work.display()))?;
        let result = run_in(opts, &keys, &label, &stores, &work);
        let _ = std::fs::remove_dir_all(&work);
        result
    }

    fn run_in(
        opts: &Options,
        keys: &[u64],
        label: &str,
        stores: &[String],
        work: &Path,
    ) -> Result<(), String> {
        let keys_file = work.join("keys.bin");
        tersedb_bench_peers::worker::write_keys(&keys_file, keys)?;
        let truth = Plan::new(keys.to_vec(), opts.seed).truth();
        let exe = std::env::current_exe().map_err(|e| format!("finding this program: {e}"))?;
        let reps = opts.repeat.max(1);
        let mut progress = crate::progress::Progress::new((reps * stores.len()) as u64, "runs");
        let mut reports: Vec<Vec<Report>> = vec![Vec::new(); stores.len()];
        // Round-robin: run k of every store before run k + 1 of any.
        for i in 0..reps {
            for (si, store) in stores.iter().enumerate() {
                progress.message(&format!("{store} run {}/{reps}", i + 1));
                let dir = work.join(store);
                let out = Command::new(&exe)
                    .args(["bench", "peer-worker", "--store", store, "--seed"])
                    .arg(opts.seed.to_string())
                    .arg("--keys-file")
                    .arg(&keys_file)
                    .arg("--work")
                    .arg(&dir)
                    .output()
                    .map_err(|e| format!("{store}: starting {}: {e}", exe.display()))?;
                let _ = std::fs::remove_dir_all(&dir);
                if !out.status.success() {
                    progress.finish("");
                    return Err(format!(
                        "{store}: {}",
                        String::from_utf8_lossy(&out.stderr)
                            .trim()
                            .trim_start_matches("tersedb: ")
                    ));
                }
                let r = tersedb_bench_peers::worker::parse(&String::from_utf8_lossy(&out.stdout))
                    .map_err(|e| format!("{store}: {e}"))?;
                if r.figures.answers != truth {
                    progress.finish("");
                    return Err(format!(
                        "{store} answered wrong: {:?}, expected {truth:?}",
                        r.figures.answers
                    ));
                }
                reports[si].push(r);
                progress.inc(1);
            }
        }
        progress.finish(&format!(
            "{} runs of {} stores, every answer verified",
            reps * stores.len(),
            stores.len()
        ));
        let rows: Vec<Row> = stores
            .iter()
            .zip(&reports)
            .map(|(s, r)| medians(s, r))
            .collect();
        let n = keys.len() as u64;
        let u = universe(opts, keys);
        let bound = entropy::bytes_per_key(u, n);
        if opts.json {
            for r in &rows {
                let f = &r.f;
                outln!(
                    "{{\"store\":\"{}\",\"keys\":{n},\"dataset\":\"{}\",\"universe\":{u},\"entropy_bytes_per_key\":{bound:.4},\"bytes_per_key\":{:.4},\"bytes_per_key_random\":{:.4},\"load_ascending_s\":{:.6},\"load_random_s\":{:.6},\"lookup_s\":{:.6},\"absent_s\":{:.6},\"scan_s\":{:.6},\"range_count_s\":{:.6},\"range_sum_s\":{:.6},\"settle_s\":{:.6},\"peak_rss\":{},\"durability\":\"{}\",\"verified\":true}}",
                    r.name, json_str(label), f.bytes_ascending as f64 / n as f64,
                    f.bytes_random as f64 / n as f64, f.load_ascending_s, f.load_random_s,
                    f.lookup_s, f.absent_s, f.scan_s, f.range_count_s, f.range_sum_s,
                    f.settle_s, f.peak_rss.unwrap_or(0), json_str(&f.durability)
                );
            }
        } else {
            print_table(&rows, n, label, u, bound, reps, opts.seed);
        }
        if let Some(dir) = &opts.plot {
            for f in crate::bench::plot::peers(dir, &rows, n, label, bound)? {
                eprintln!("tersedb: wrote {f}");
            }
        }
        Ok(())
    }

    fn print_table(rows: &[Row], n: u64, label: &str, u: u64, bound: f64, reps: usize, seed: u64) {
        outln!(
            "# tersedb bench --peers: {n} keys ({label}), seed {seed}, median of {reps} runs, each store in its own process; isa {}",
            tersedb_codecs::Isa::detect()
        );
        outln!(
            "# entropy bound log2 C(U, n) with U = {u}: {bound:.4} bytes/key ({:.3} bits/key): no store can be smaller",
            bound * 8.0
        );
        outln!(
            "# bytes/key after a clean close (ascending load; random-order load); seconds; ranges: {} ranges of {}% of the keys",
            tersedb_bench_peers::RANGES,
            tersedb_bench_peers::RANGE_FRACTION * 100.0
        );
        outln!(
            "{:<19} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>9} {:>9} {:>8}",
            "store",
            "B/key",
            "B/key r",
            "load s",
            "load r s",
            "lookup s",
            "absent s",
            "scan s",
            "COUNT ms",
            "SUM ms",
            "peak MiB"
        );
        for r in rows {
            let f = &r.f;
            outln!(
                "{:<19} {:>8.3} {:>8.3} {:>8.3} {:>8.3} {:>8.3} {:>8.3} {:>8.4} {:>9.3} {:>9.3} {:>8.0}",
                r.name,
                f.bytes_ascending as f64 / n as f64,
                f.bytes_random as f64 / n as f64,
                f.load_ascending_s,
                f.load_random_s,
                f.lookup_s,
                f.absent_s,
                f.scan_s,
                f.range_count_s * 1e3,
                f.range_sum_s * 1e3,
                f.peak_rss.unwrap_or(0) as f64 / (1 << 20) as f64,
            );
        }
        let harness = rows.iter().map(|r| r.harness_rss).max().unwrap_or(0);
        outln!(
            "# peak MiB includes the harness's key arrays ({:.0} MiB before the store opens)",
            harness as f64 / (1 << 20) as f64
        );
        // Ratios: each peer's time over the best tersedb row's, per operation (>1 = tersedb faster).
        let terse: Vec<&Row> = rows
            .iter()
            .filter(|r| r.name.starts_with("tersedb-"))
            .collect();
        let peers: Vec<&Row> = rows
            .iter()
            .filter(|r| !r.name.starts_with("tersedb-"))
            .collect();
        if !terse.is_empty() && !peers.is_empty() {
            outln!("# peer time / tersedb time, per tersedb codec (>1: tersedb faster); bytes: peer / tersedb (>1: tersedb smaller)");
            outln!(
                "{:<19} {:<10} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7}",
                "tersedb",
                "peer",
                "bytes",
                "load",
                "load r",
                "lookup",
                "absent",
                "scan",
                "COUNT",
                "SUM"
            );
            for t in &terse {
                for p in &peers {
                    let x = |g: fn(&Figures) -> f64| g(&p.f) / g(&t.f).max(1e-12);
                    outln!(
                        "{:<19} {:<10} {:>7.2} {:>7.2} {:>7.2} {:>7.2} {:>7.2} {:>7.2} {:>7.1} {:>7.1}",
                        t.name,
                        p.name,
                        x(|f| f.bytes_ascending as f64),
                        x(|f| f.load_ascending_s),
                        x(|f| f.load_random_s),
                        x(|f| f.lookup_s),
                        x(|f| f.absent_s),
                        x(|f| f.scan_s),
                        x(|f| f.range_count_s),
                        x(|f| f.range_sum_s),
                    );
                }
            }
        }
        outln!("# durability:");
        for r in rows {
            let settle =
                r.f.settle
                    .as_ref()
                    .map(|s| format!("; {s}: up to {:.3} s after a load", r.f.settle_s))
                    .unwrap_or_default();
            outln!("#   {:<17} {}{settle}", r.name, r.f.durability);
        }
        outln!(
            "verified: every store found all {n} keys and none of the absent ones, and scanned, counted and summed exactly"
        );
    }
}
