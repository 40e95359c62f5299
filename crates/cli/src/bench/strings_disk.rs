//! `tersedb bench strings --disk`: the disk setting of Gao et al., "Revisiting B-tree
//! Compression" (§3.3; Fig. 11 at 4 KiB pages, Fig. 15 over page sizes, Table 5's right half
//! for range queries of 10 and 100 keys).
//!
//! Each run opens a fresh file with `O_DIRECT` ([`DirectFile`]) and an environment without a
//! page cache (`cache_bytes(0)`): every leaf the tree touches is a `pread` from the device, never
//! a copy in RAM (neither the OS page cache nor the engine's); branch pages are kept in RAM, as
//! the study keeps its non-leaf nodes in memory. The key set and orders are those of the
//! in-memory bench (`strings`), cut to what a disk can do in about a minute:
//!
//! ```text
//! keys (shuffled): [ loaded untimed, one transaction, committed    | timed inserts (T keys) ]
//!                  timed inserts: write transactions of INSERT_BATCH keys, each committed
//!                  (Durability::None: written with O_DIRECT, no fsync)
//! then:            an untimed scan (verifies the tree; statistics)
//!                  L lookups of inserted keys in random order
//!                  Q range queries reading 10 keys, then the same Q reading 100
//! ```
//!
//! Besides throughput (thousands of operations per second, the study's Kop/s), each phase
//! reports the device reads per operation: a lookup must cost one leaf read whatever the scheme
//! (the study: "all techniques, except PkB, involve only one disk I/O for accessing the leaf
//! node"), so the column shows the setting is what it claims. WiredTiger keeps the engine's
//! roll-forward distance of 10 and PkB takes 5-byte partial keys unless told otherwise, the
//! study's disk choices (§3.3, §4.1, Fig. 10).

use super::direct_io::{Counters, DirectFile};
use super::strings::{
    config, limits, none_stats, parse_schemes, range_queries, scan_check, too_long, workload, Lead,
    Options, Workload, RANGE_LENS,
};
use super::timing::median;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;
use tersedb::{DbStats, Durability, Env, EnvOptions, Error, KeyScheme};

/// Keys committed per write transaction in the timed inserts.
pub const INSERT_BATCH: usize = 100;
/// PkB's partial key length on disk (the study's choice after Fig. 10).
pub const DISK_PKB_LEN: u8 = 5;
/// Page sizes of the default sweep (Fig. 15; 4 KiB is Fig. 11's and Table 5's).
pub const PAGE_SIZES: [usize; 3] = [4096, 8192, 16384];

/// Options of the disk mode.
#[derive(Clone, Debug)]
pub struct DiskOptions {
    /// Directory of the benchmark's files (on a file system that takes `O_DIRECT`).
    pub dir: PathBuf,
    /// Page sizes to run; empty = [`PAGE_SIZES`].
    pub page_sizes: Vec<usize>,
    /// Fewer keys and operations: a few seconds.
    pub quick: bool,
}

/// Operations of each timed phase.
#[derive(Clone, Copy, Debug)]
struct Ops {
    inserts: usize,
    lookups: usize,
    ranges: usize,
}

impl DiskOptions {
    /// Keys of a generated data set unless `--keys` says otherwise.
    pub fn default_keys(&self) -> usize {
        if self.quick {
            20_000
        } else {
            150_000
        }
    }
    fn ops(&self) -> Ops {
        if self.quick {
            Ops {
                inserts: 1000,
                lookups: 1000,
                ranges: 200,
            }
        } else {
            Ops {
                inserts: 2000,
                lookups: 4000,
                ranges: 1000,
            }
        }
    }
    pub(super) fn page_sizes(&self) -> Vec<usize> {
        if self.page_sizes.is_empty() {
            PAGE_SIZES.to_vec()
        } else {
            self.page_sizes.clone()
        }
    }
}

/// Seconds and device reads of one timed phase.
#[derive(Clone, Copy, Debug, Default)]
struct Phase {
    secs: f64,
    ops: usize,
    reads: u64,
}

impl Phase {
    fn kops(&self) -> f64 {
        self.ops as f64 / self.secs.max(1e-12) / 1e3
    }
    fn reads_per_op(&self) -> f64 {
        self.reads as f64 / self.ops.max(1) as f64
    }
}

/// One run of one scheme at one page size.
#[derive(Clone, Debug, Default)]
struct Run {
    insert: Phase,
    lookup: Phase,
    range: [Phase; 2],
    stats: DbStats,
    file_bytes: u64,
}

/// The key orders of the disk workload, as indexes into the sorted keys.
pub(super) struct DiskWork {
    load: Vec<u32>,
    timed: Vec<u32>,
    lookups: Vec<u32>,
    range_starts: Vec<u32>,
}

fn disk_work(wl: &Workload, ops: Ops) -> DiskWork {
    let mut load: Vec<u32> = wl.warm.iter().chain(&wl.timed).copied().collect();
    // At least one key loaded before the timed inserts, at most half of them timed.
    let t = ops.inserts.min(load.len() / 2);
    let timed = load.split_off(load.len() - t);
    DiskWork {
        load,
        timed,
        lookups: wl.lookups.iter().take(ops.lookups).copied().collect(),
        range_starts: wl.range_starts.iter().take(ops.ranges).copied().collect(),
    }
}

fn one_run(
    opts: &Options,
    d: &DiskOptions,
    scheme: KeyScheme,
    page_size: usize,
    wl: &Workload,
    dw: &DiskWork,
) -> Result<Run, String> {
    let e = |x: Error| x.to_string();
    let key = |i: u32| wl.sorted[i as usize].as_slice();
    let counters = Arc::new(Counters::default());
    let path = d.dir.join(format!(
        "tersedb-strings-disk-{}-{}-{page_size}.tdb",
        std::process::id(),
        scheme.name()
    ));
    let file = DirectFile::create(&path, page_size, counters.clone())?;
    let env_opts = EnvOptions::default()
        .page_size(page_size)
        .durability(Durability::None)
        .cache_bytes(0);
    let env = Env::create_with_storage(Box::new(file), &env_opts).map_err(e)?;
    let mut run = Run::default();

    let mut w = env.begin_write().map_err(e)?;
    let db = w.create_db("bench", config(scheme, opts)).map_err(e)?;
    for &i in &dw.load {
        w.insert(&db, key(i), &[]).map_err(e)?;
    }
    w.commit().map_err(e)?;

    let phase = |ops: usize, f: &mut dyn FnMut() -> Result<(), String>| {
        let r0 = counters.device_reads();
        let t = Instant::now();
        f()?;
        Ok::<Phase, String>(Phase {
            secs: t.elapsed().as_secs_f64(),
            ops,
            reads: counters.device_reads() - r0,
        })
    };
    run.insert = phase(dw.timed.len(), &mut || {
        for batch in dw.timed.chunks(INSERT_BATCH) {
            let mut w = env.begin_write().map_err(e)?;
            for &i in batch {
                w.insert(&db, key(i), &[]).map_err(e)?;
            }
            w.commit().map_err(e)?;
        }
        Ok(())
    })?;

    let r = env.begin_read().map_err(e)?;
    let mut c = r.cursor(&db).map_err(e)?;
    run.stats = scan_check(&r, &db, &mut c, &wl.sorted)?;
    let mut hits = 0usize;
    let (leaf0, branch0) = (counters.leaf_reads(), counters.branch_hits());
    run.lookup = phase(dw.lookups.len(), &mut || {
        for &i in &dw.lookups {
            hits += r.contains(&db, key(i)).map_err(e)? as usize;
        }
        Ok(())
    })?;
    if hits != dw.lookups.len() {
        return Err(format!("lookups found {hits} of {} keys", dw.lookups.len()));
    }
    // The setting itself: each lookup read its leaf from the device and every branch on the
    // way from RAM.
    let (leaves, branches) = (
        counters.leaf_reads() - leaf0,
        counters.branch_hits() - branch0,
    );
    let n = dw.lookups.len() as u64;
    let levels = run.stats.height.saturating_sub(1) as u64;
    if leaves != n || branches != n * levels {
        return Err(format!(
            "{n} lookups read {leaves} leaves from the device and {branches} branch pages from \
             RAM; expected {n} and {} (height {})",
            n * levels,
            run.stats.height
        ));
    }
    for (li, &len) in RANGE_LENS.iter().enumerate() {
        let r0 = counters.device_reads();
        let secs = range_queries(&mut c, wl, &dw.range_starts, len)?;
        run.range[li] = Phase {
            secs,
            ops: dw.range_starts.len(),
            reads: counters.device_reads() - r0,
        };
    }
    run.file_bytes = env.space().map_err(e)?.live_bytes;
    Ok(run)
}

/// A reported row: medians over the runs of one scheme at one page size.
pub(super) struct Row {
    page_size: usize,
    scheme: KeyScheme,
    kops: [f64; 4],
    reads: [f64; 4],
    stats: DbStats,
    file_bytes: u64,
    none_key_bytes: u64,
}

fn row(page_size: usize, scheme: KeyScheme, runs: &[Run], none_key_bytes: u64) -> Row {
    let phases: [fn(&Run) -> Phase; 4] =
        [|r| r.insert, |r| r.lookup, |r| r.range[0], |r| r.range[1]];
    let med = |f: &dyn Fn(&Run) -> f64| median(&mut runs.iter().map(f).collect::<Vec<_>>());
    Row {
        page_size,
        scheme,
        kops: phases.map(|p| med(&|r| p(r).kops())),
        reads: phases.map(|p| med(&|r| p(r).reads_per_op())),
        stats: runs[0].stats.clone(),
        file_bytes: runs[0].file_bytes,
        none_key_bytes,
    }
}

impl Row {
    fn bytes_per_key(&self) -> f64 {
        self.stats.key_bytes as f64 / self.stats.key_count.max(1) as f64
    }
    fn ratio(&self) -> f64 {
        self.none_key_bytes as f64 / self.stats.key_bytes.max(1) as f64
    }
}

/// Runs the disk mode and prints one table (or one JSON object per scheme and page size).
pub fn run(opts: &Options, d: &DiskOptions) -> Result<(), String> {
    let schemes = parse_schemes(&opts.schemes)?;
    let mut opts = opts.clone();
    if opts.pkb_len == 0 {
        opts.pkb_len = DISK_PKB_LEN;
    }
    let sizes = d.page_sizes();
    check_page_sizes(&sizes)?;
    std::fs::create_dir_all(&d.dir).map_err(|e| format!("{}: {e}", d.dir.display()))?;
    let wl = workload(&opts)?;
    let (dw, rows) = measure(&opts, d, &wl, &schemes, &sizes)?;
    if !opts.json {
        print_header(&opts, &wl, &dw, d);
        print_columns(None);
    }
    print_rows(&opts, &wl, &rows, None);
    if !opts.json && !rows.is_empty() {
        super::strings::print_verified(&wl);
    }
    Ok(())
}

/// Page sizes `O_DIRECT` can take.
pub(super) fn check_page_sizes(sizes: &[usize]) -> Result<(), String> {
    for &ps in sizes {
        if ps % super::direct_io::ALIGN != 0 || !ps.is_power_of_two() || ps > 65536 {
            return Err(format!(
                "--disk page sizes are powers of two of 4096..=65536 bytes, not {ps}"
            ));
        }
    }
    Ok(())
}

/// Checks that every key fits, runs every scheme at every page size `--repeat` times
/// round-robin and returns the orders used and the medians. `d.dir` must exist.
pub(super) fn measure(
    opts: &Options,
    d: &DiskOptions,
    wl: &Workload,
    schemes: &[KeyScheme],
    sizes: &[usize],
) -> Result<(DiskWork, Vec<Row>), String> {
    for &ps in sizes {
        for &s in schemes {
            let l = limits(s, ps)?;
            if wl.max_len > l.max_key_len {
                return Err(too_long(wl, l.max_key_len, ps));
            }
        }
    }
    let ops = d.ops();
    let dw = disk_work(wl, ops);
    let reps = opts.repeat.max(1);
    let cells: Vec<(usize, KeyScheme)> = sizes
        .iter()
        .flat_map(|&ps| schemes.iter().map(move |&s| (ps, s)))
        .collect();
    let total = reps * cells.len();
    let tty = std::io::stderr().is_terminal();
    let mut runs: Vec<Vec<Run>> = vec![Vec::new(); cells.len()];
    // Round-robin, as in memory: run k of every cell before run k + 1 of any.
    for i in 0..reps {
        for (ci, &(ps, s)) in cells.iter().enumerate() {
            if tty {
                let done = i * cells.len() + ci;
                let w = 30 * done / total;
                eprint!(
                    "\r\x1b[K[{}{}] {done}/{total} runs: {} at {ps} B, run {}/{reps}",
                    "#".repeat(w),
                    "-".repeat(30 - w),
                    s.name(),
                    i + 1
                );
            }
            let r = one_run(opts, d, s, ps, wl, &dw)
                .map_err(|m| format!("{} at {ps} B: {m}", s.name()))?;
            runs[ci].push(r);
        }
    }
    if tty {
        eprint!("\r\x1b[K");
    }
    let mut rows = Vec::new();
    for &ps in sizes {
        let none_key_bytes = match cells.iter().position(|&c| c == (ps, KeyScheme::None)) {
            Some(ci) => runs[ci][0].stats.key_bytes,
            None => {
                let mut o = opts.clone();
                o.page_size = ps;
                none_stats(&o, wl)?.key_bytes
            }
        };
        for (ci, &(p, s)) in cells.iter().enumerate() {
            if p == ps {
                rows.push(row(ps, s, &runs[ci], none_key_bytes));
            }
        }
    }
    Ok((dw, rows))
}

/// Rows of the same cells from several rounds (a sweep's repeats) as one row per cell: the
/// median of each throughput and read count; the rest from the first round.
pub(super) fn median_rows(rounds: &[Vec<Row>]) -> Vec<Row> {
    let Some(first) = rounds.first() else {
        return Vec::new();
    };
    let med = |i: usize, f: &dyn Fn(&Row) -> f64| {
        median(&mut rounds.iter().map(|r| f(&r[i])).collect::<Vec<_>>())
    };
    first
        .iter()
        .enumerate()
        .map(|(i, r)| Row {
            page_size: r.page_size,
            scheme: r.scheme,
            kops: [0, 1, 2, 3].map(|k| med(i, &|r| r.kops[k])),
            reads: [0, 1, 2, 3].map(|k| med(i, &|r| r.reads[k])),
            stats: r.stats.clone(),
            file_bytes: r.file_bytes,
            none_key_bytes: r.none_key_bytes,
        })
        .collect()
}

/// The text table's comment lines.
pub(super) fn print_header(opts: &Options, wl: &Workload, dw: &DiskWork, d: &DiskOptions) {
    let n = wl.sorted.len();
    let mean_len = wl.sorted.iter().map(Vec::len).sum::<usize>() as f64 / n as f64;
    outln!(
        "# tersedb bench strings --disk: {}, {n} keys ({mean_len:.1} B on average, at most {} B), O_DIRECT files in {}, seed {}, median of {}",
        wl.label, wl.max_len, d.dir.display(), opts.seed, opts.repeat.max(1)
    );
    outln!(
        "# Kop/s: insert = {} keys into the tree of the other {} (write transactions of {INSERT_BATCH}, each committed), lookup = {} of the keys, range10/100 = {} cursor seeks reading 10/100 keys",
        dw.timed.len(),
        dw.load.len(),
        dw.lookups.len(),
        dw.range_starts.len()
    );
    outln!("# rd/op = page reads from the device (O_DIRECT) per operation; branch pages are served from RAM, leaves never are");
    outln!("# bytes/key = key bytes of all nodes / keys; file B/key = live pages of the file / keys; ratio = none's key bytes / the scheme's");
}

/// The text table's column titles, after the sweep's parameter if there is one.
pub(super) fn print_columns(lead: Option<&str>) {
    let lead = lead.map_or_else(String::new, |t| format!("{t:>8} "));
    outln!(
        "{lead}{:>5} {:<11} {:>7} {:>7} {:>7} {:>8} {:>6} {:>6} {:>6} {:>6} {:>9} {:>7} {:>6} {:>6} {:>7} {:>8}",
        "page",
        "scheme",
        "insert",
        "lookup",
        "range10",
        "range100",
        "rd/ins",
        "rd/lk",
        "rd/r10",
        "rd/r100",
        "bytes/key",
        "file/k",
        "ratio",
        "height",
        "leaves",
        "branches"
    );
}

/// One text line or JSON object per row.
pub(super) fn print_rows(opts: &Options, wl: &Workload, rows: &[Row], lead: Option<&Lead>) {
    let n = wl.sorted.len();
    for r in rows {
        if opts.json {
            outln!(
                "{{{}\"scheme\":\"{}\",\"dataset\":{},\"keys\":{n},\"disk\":true,\"page_size\":{},\"insert_kops\":{:.4},\"lookup_kops\":{:.4},\"range10_kops\":{:.4},\"range100_kops\":{:.4},\"reads_per_insert\":{:.4},\"reads_per_lookup\":{:.4},\"reads_per_range10\":{:.4},\"reads_per_range100\":{:.4},\"bytes_per_key\":{:.4},\"leaf_key_bytes\":{},\"file_bytes_per_key\":{:.4},\"compression_ratio\":{:.4},\"height\":{},\"leaf_nodes\":{},\"branch_nodes\":{},\"verified\":true}}",
                Lead::json(lead),
                r.scheme.name(),
                crate::store::json_str(&wl.label),
                r.page_size,
                r.kops[0],
                r.kops[1],
                r.kops[2],
                r.kops[3],
                r.reads[0],
                r.reads[1],
                r.reads[2],
                r.reads[3],
                r.bytes_per_key(),
                r.stats.leaf_key_bytes,
                r.file_bytes as f64 / n as f64,
                r.ratio(),
                r.stats.height,
                r.stats.leaf_pages,
                r.stats.branch_pages
            );
        } else {
            let lead = lead.map_or_else(String::new, |l| format!("{:>8} ", l.value));
            outln!(
                "{lead}{:>5} {:<11} {:>7.1} {:>7.1} {:>7.1} {:>8.1} {:>6.2} {:>6.2} {:>6.2} {:>6.2} {:>9.2} {:>7.2} {:>6.3} {:>6} {:>7} {:>8}",
                r.page_size,
                r.scheme.name(),
                r.kops[0],
                r.kops[1],
                r.kops[2],
                r.kops[3],
                r.reads[0],
                r.reads[1],
                r.reads[2],
                r.reads[3],
                r.bytes_per_key(),
                r.file_bytes as f64 / n as f64,
                r.ratio(),
                r.stats.height,
                r.stats.leaf_pages,
                r.stats.branch_pages
            );
        }
    }
}
