//! `tersedb bench strings`: the byte-string key compression schemes on the workload of Gao et
//! al., "Revisiting B-tree Compression" (SIGMOD 2024), §3-4.
//!
//! A key set (distinct keys, see `string_datasets`) is shuffled with the seed. For every scheme,
//! in a fresh in-memory environment (512-byte pages by default, the study's in-memory setting)
//! and one write transaction:
//!
//! ```text
//! keys (shuffled):  [ warm-up 20% | timed inserts 80%                     ]
//! committed, then:  an untimed scan (verifies the tree, fills the page cache)
//!                   lookups of the timed 80% in another random order
//!                   range queries: min(100k, n)/10 cursor seeks to a random key, reading
//!                   10 keys, then the same seeks reading 100
//! ```
//!
//! The commit is not timed. A range query counts as one operation. Stored bytes are
//! `DbStats::key_bytes` (the key lists of all nodes: keys, per-key metadata, prefixes); the
//! compression ratio is `none`'s key bytes over the scheme's, from the same key set. Each figure
//! is the median of `--repeat` runs, taken round-robin over the schemes. Every run verifies its
//! answers: the scan finds exactly the key set, every lookup hits, and every range query
//! returns the keys that follow its start in ascending order, as many as there are.

use super::timing::median;
use crate::string_datasets as sets;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Instant;
use tersedb::{
    DbConfig, DbStats, Durability, Env, EnvOptions, Error, Key, KeyScheme, KeyType, Limits,
    RecordType,
};

/// Keys of a generated data set when `--keys` is not given.
pub const DEFAULT_KEYS: usize = 1_000_000;
/// Share of the keys inserted before the timed inserts (the study's warm-up).
const WARMUP_PERCENT: usize = 20;
/// Keys each range query reads.
pub(super) const RANGE_LENS: [usize; 2] = [10, 100];

/// Options of the strings benchmark.
#[derive(Clone, Debug)]
pub struct Options {
    /// Keys of a generated data set (default [`DEFAULT_KEYS`], or the disk mode's); for a
    /// word list or `--input`, a random sample of this many (default all).
    pub keys: Option<usize>,
    pub dataset: String,
    pub input: Option<PathBuf>,
    pub hex: bool,
    /// Standard deviation of the `clustered` numbers.
    pub scale: f64,
    /// Scheme names; empty = all.
    pub schemes: Vec<String>,
    pub page_size: usize,
    pub seed: u64,
    pub repeat: usize,
    pub json: bool,
    /// WiredTiger's roll-forward distance, PkB's partial key length, the tail schemes' split
    /// range in percent; 0 = the engine's default.
    pub wt_distance: u8,
    pub pkb_len: u8,
    pub split_range: u8,
    /// `--disk`: the study's disk setting (`strings_disk`) instead of the in-memory one.
    pub disk: Option<super::strings_disk::DiskOptions>,
    /// Characters of a `randomD` key (0 = [`sets::KEY_LEN`]).
    pub key_len: usize,
    /// `--sweep`: one of the study's parameter sweeps (`strings_sweep`) instead of one run.
    pub sweep: Option<super::strings_sweep::SweepOptions>,
}

/// The key set and the orders the workload visits it in; orders are indexes into `sorted`.
pub(super) struct Workload {
    pub label: String,
    pub sorted: Vec<Vec<u8>>,
    pub warm: Vec<u32>,
    pub timed: Vec<u32>,
    pub lookups: Vec<u32>,
    pub range_starts: Vec<u32>,
    pub max_len: usize,
}

/// One run of one scheme: seconds of each timed phase, and the tree's statistics.
#[derive(Clone, Debug, Default)]
struct Run {
    insert_s: f64,
    lookup_s: f64,
    range_s: [f64; 2],
    stats: DbStats,
}

/// A scheme's reported figures.
pub(super) struct Row {
    pub scheme: KeyScheme,
    pub insert_mops: f64,
    pub lookup_mops: f64,
    pub range_mops: [f64; 2],
    pub stats: DbStats,
    /// `none`'s key bytes on the same keys and page size (the compression baseline).
    pub none_key_bytes: u64,
}

impl Row {
    pub fn ratio(&self) -> f64 {
        self.none_key_bytes as f64 / self.stats.key_bytes.max(1) as f64
    }
    pub fn bytes_per_key(&self) -> f64 {
        self.stats.key_bytes as f64 / self.stats.key_count.max(1) as f64
    }
    /// Average children per branch node (0 for a tree of one leaf).
    pub fn internal_fanout(&self) -> f64 {
        let b = self.stats.branch_pages;
        if b == 0 {
            0.0
        } else {
            (self.stats.branch_keys + b) as f64 / b as f64
        }
    }
}

fn load(opts: &Options, rng: &mut fastrand::Rng) -> Result<(String, Vec<Vec<u8>>), String> {
    let n = opts.keys.unwrap_or(match &opts.disk {
        Some(d) => d.default_keys(),
        None => DEFAULT_KEYS,
    });
    if n == 0 {
        return Err("--keys must be at least 1".into());
    }
    let (label, mut keys, sampled) = if let Some(p) = &opts.input {
        (p.display().to_string(), sets::read(p, opts.hex)?, true)
    } else {
        let d = opts.dataset.as_str();
        if opts.key_len > 0 && sets::alphabet(d).is_none() {
            return Err(format!(
                "--key-len applies to the random data sets ({}), not to {d}",
                sets::GENERATED[..4].join(", ")
            ));
        }
        let keys = match d {
            "words" => sets::words()?,
            "clustered" => {
                if !(opts.scale.is_finite() && opts.scale > 0.0) {
                    return Err(format!("--scale must be positive, not {}", opts.scale));
                }
                sets::clustered(rng, n, opts.scale)
            }
            "tpch" => sets::tpch(n),
            "lineitem" => sets::lineitem(n),
            _ => match sets::alphabet(d) {
                Some(abc) if opts.key_len > 0 => {
                    let bits = opts.key_len as f64 * (abc.len() as f64).log2();
                    if bits < (n as f64).log2() + 4.0 {
                        return Err(format!(
                            "{n} distinct keys of {} characters over {} symbols: too few \
                             possible keys; use longer keys or a larger alphabet",
                            opts.key_len,
                            abc.len()
                        ));
                    }
                    sets::random_len(rng, n, abc, opts.key_len)
                }
                Some(abc) => sets::random(rng, n, abc),
                None => {
                    return Err(format!(
                        "unknown data set {d:?} ({}, words; or --input FILE)",
                        sets::GENERATED.join(", ")
                    ))
                }
            },
        };
        let label = if d == "clustered" {
            format!("clustered(scale={})", opts.scale)
        } else if opts.key_len > 0 {
            format!("{d}(len={})", opts.key_len)
        } else {
            d.to_string()
        };
        (label, keys, d == "words")
    };
    if sampled {
        if let Some(n) = opts.keys.filter(|&n| n < keys.len()) {
            rng.shuffle(&mut keys);
            keys.truncate(n);
            keys.sort_unstable();
        }
    }
    if keys.is_empty() {
        return Err(format!("{label}: no keys"));
    }
    Ok((label, keys))
}

pub(super) fn workload(opts: &Options) -> Result<Workload, String> {
    let mut rng = fastrand::Rng::with_seed(opts.seed);
    let (label, sorted) = load(opts, &mut rng)?;
    let n = sorted.len();
    if n > u32::MAX as usize {
        return Err("too many keys".into());
    }
    let mut rng = fastrand::Rng::with_seed(opts.seed ^ 0x5eed);
    let mut order: Vec<u32> = (0..n as u32).collect();
    rng.shuffle(&mut order);
    let timed = order.split_off(n * WARMUP_PERCENT / 100);
    let mut lookups = timed.clone();
    rng.shuffle(&mut lookups);
    // Starts leave room for the longest query when there are enough keys, so that every query
    // of a length does the same work.
    let queries = (n.min(100_000) / 10).max(1);
    let last_start = n.saturating_sub(RANGE_LENS[1]);
    let range_starts = (0..queries)
        .map(|_| rng.usize(..=last_start) as u32)
        .collect();
    let max_len = sorted.iter().map(Vec::len).max().unwrap_or(0);
    Ok(Workload {
        label,
        sorted,
        warm: order,
        timed,
        lookups,
        range_starts,
        max_len,
    })
}

pub(super) fn config(scheme: KeyScheme, opts: &Options) -> DbConfig {
    let mut c = DbConfig::raw(KeyType::VarBinary, RecordType::None).with_key_scheme(scheme);
    match scheme {
        KeyScheme::WiredTiger if opts.wt_distance > 0 => c = c.with_scheme_param(opts.wt_distance),
        KeyScheme::Pkb if opts.pkb_len > 0 => c = c.with_scheme_param(opts.pkb_len),
        _ => {}
    }
    if scheme.tail() && opts.split_range > 0 {
        c = c.with_split_range(opts.split_range);
    }
    c
}

fn new_env(page_size: usize) -> Result<Env, String> {
    let opts = EnvOptions::default()
        .page_size(page_size)
        .durability(Durability::None)
        .cache_bytes(1 << 30);
    Env::in_memory(&opts).map_err(|e| e.to_string())
}

/// The key limits of a database of `scheme` on this page size (an error when the engine
/// refuses the scheme's default configuration: every scheme must run, none is skipped).
pub(super) fn limits(scheme: KeyScheme, page_size: usize) -> Result<Limits, String> {
    let env = new_env(page_size)?;
    let mut w = env.begin_write().map_err(|e| e.to_string())?;
    let cfg = DbConfig::raw(KeyType::VarBinary, RecordType::None).with_key_scheme(scheme);
    let db = w
        .create_db("probe", cfg)
        .map_err(|e| format!("scheme {}: {e}", scheme.name()))?;
    Ok(db.limits())
}

/// The key-length error: the longest key, the limit, and the page size that would take it.
pub(super) fn too_long(wl: &Workload, limit: usize, page_size: usize) -> String {
    let key = wl.sorted.iter().find(|k| k.len() == wl.max_len).cloned();
    let shown = key.map_or_else(String::new, |k| {
        let s = String::from_utf8_lossy(&k[..k.len().min(40)]).into_owned();
        format!(" ({s:?}{})", if k.len() > 40 { "..." } else { "" })
    });
    let fits = (0..8)
        .map(|i| 512usize << i)
        .find(|&p| p > page_size && Limits::for_page_size(p).max_key_len >= wl.max_len);
    let hint = match fits {
        Some(p) => format!("use --page-size {p} or larger"),
        None => "no page size holds it".into(),
    };
    format!(
        "{}: the longest key has {} bytes{shown}, but keys on {page_size}-byte pages hold at most \
         {limit} bytes: {hint}",
        wl.label, wl.max_len
    )
}

/// A cursor's key as bytes (empty when unpositioned: the checks then fail).
fn bytes(k: Option<Key<'_>>) -> &[u8] {
    match k {
        Some(Key::Bytes(b)) => b,
        _ => &[],
    }
}

/// One run of one scheme; verifies every answer.
fn one_run(opts: &Options, scheme: KeyScheme, wl: &Workload) -> Result<Run, String> {
    let e = |x: Error| x.to_string();
    let keys = &wl.sorted;
    let key = |i: u32| keys[i as usize].as_slice();
    let env = new_env(opts.page_size)?;
    let mut run = Run::default();

    let mut w = env.begin_write().map_err(e)?;
    let db = w.create_db("bench", config(scheme, opts)).map_err(e)?;
    for &i in &wl.warm {
        w.insert(&db, key(i), &[]).map_err(e)?;
    }
    let t = Instant::now();
    for &i in &wl.timed {
        w.insert(&db, key(i), &[]).map_err(e)?;
    }
    run.insert_s = t.elapsed().as_secs_f64();
    w.commit().map_err(e)?;

    let r = env.begin_read().map_err(e)?;
    // The whole tree, untimed: exactly the key set, in order. The scan also brings every page
    // into the page cache, so that lookups and range queries run in memory as in the study.
    let mut c = r.cursor(&db).map_err(e)?;
    run.stats = scan_check(&r, &db, &mut c, keys)?;
    let t = Instant::now();
    let mut hits = 0usize;
    for &i in &wl.lookups {
        hits += r.contains(&db, key(i)).map_err(e)? as usize;
    }
    run.lookup_s = t.elapsed().as_secs_f64();
    if hits != wl.lookups.len() {
        return Err(format!("lookups found {hits} of {} keys", wl.lookups.len()));
    }

    for (li, &len) in RANGE_LENS.iter().enumerate() {
        run.range_s[li] = range_queries(&mut c, wl, &wl.range_starts, len)?;
    }
    Ok(run)
}

/// Scans the whole tree, untimed: it must hold exactly `keys`, in order. Returns its statistics.
pub(super) fn scan_check(
    r: &tersedb::ReadTxn,
    db: &tersedb::Db,
    c: &mut tersedb::Cursor<'_>,
    keys: &[Vec<u8>],
) -> Result<DbStats, String> {
    let e = |x: Error| x.to_string();
    let mut seen = 0usize;
    let mut ok = c.first().map_err(e)?;
    while ok {
        if seen >= keys.len() || bytes(c.key()) != keys[seen].as_slice() {
            return Err(format!(
                "the scan differs from the key set at key {seen} of {}",
                keys.len()
            ));
        }
        seen += 1;
        ok = c.next().map_err(e)?;
    }
    let stats = r.stats(db).map_err(e)?;
    if seen != keys.len() || stats.key_count != keys.len() as u64 {
        return Err(format!(
            "the tree holds {seen} keys (stats: {}), the key set {}",
            stats.key_count,
            keys.len()
        ));
    }
    Ok(stats)
}

/// Range queries from `starts` (indexes into the sorted keys), each reading `len` keys; returns
/// their seconds after checking every answer. A query seeks to its start key, then reads keys
/// until it has `len`. Reading a key copies it out (what a caller does); checking that it
/// ascends costs one comparison.
pub(super) fn range_queries(
    c: &mut tersedb::Cursor<'_>,
    wl: &Workload,
    starts: &[u32],
    len: usize,
) -> Result<f64, String> {
    let e = |x: Error| x.to_string();
    let keys = &wl.sorted;
    let key = |i: u32| keys[i as usize].as_slice();
    let mut prev: Vec<u8> = Vec::with_capacity(wl.max_len);
    let (mut wrong_count, mut wrong_order) = (0usize, 0usize);
    let t = Instant::now();
    for &s in starts {
        let mut got = 0usize;
        if c.lower_bound(key(s)).map_err(e)? {
            prev.clear();
            prev.extend_from_slice(bytes(c.key()));
            wrong_order += (prev.as_slice() != key(s)) as usize;
            got = 1;
            while got < len && c.next().map_err(e)? {
                let k = bytes(c.key());
                wrong_order += (k <= prev.as_slice()) as usize;
                prev.clear();
                prev.extend_from_slice(k);
                got += 1;
            }
        }
        wrong_count += (got != len.min(keys.len() - s as usize)) as usize;
    }
    let secs = t.elapsed().as_secs_f64();
    if wrong_count + wrong_order > 0 {
        return Err(format!(
            "range queries of {len} keys: {wrong_count} returned the wrong number of keys, \
             {wrong_order} did not start at their key or did not ascend"
        ));
    }
    Ok(secs)
}

/// `none`'s statistics for the compression ratio when `none` is not among the schemes run.
pub(super) fn none_stats(opts: &Options, wl: &Workload) -> Result<DbStats, String> {
    let e = |x: Error| x.to_string();
    let env = new_env(opts.page_size)?;
    let mut w = env.begin_write().map_err(e)?;
    let db = w
        .create_db("none", config(KeyScheme::None, opts))
        .map_err(e)?;
    for &i in wl.warm.iter().chain(&wl.timed) {
        w.insert(&db, wl.sorted[i as usize].as_slice(), &[])
            .map_err(e)?;
    }
    w.stats(&db).map_err(e)
}

pub(super) fn parse_schemes(names: &[String]) -> Result<Vec<KeyScheme>, String> {
    if names.is_empty() {
        return Ok(KeyScheme::ALL.to_vec());
    }
    let mut out = Vec::new();
    for n in names {
        let s = KeyScheme::from_name(n).ok_or_else(|| {
            format!(
                "unknown scheme {n:?} ({})",
                KeyScheme::ALL.map(|s| s.name()).join(", ")
            )
        })?;
        if !out.contains(&s) {
            out.push(s);
        }
    }
    Ok(out)
}

/// A sweep's parameter in front of each row (`strings_sweep`).
pub(super) struct Lead<'a> {
    /// The sweep's name (`"sweep":...` in JSON).
    pub sweep: &'a str,
    pub value: usize,
}

impl Lead<'_> {
    /// `"sweep":"pkb","value":3,` (empty without a lead).
    pub fn json(lead: Option<&Self>) -> String {
        lead.map_or_else(String::new, |l| {
            format!("\"sweep\":\"{}\",\"value\":{},", l.sweep, l.value)
        })
    }
}

/// Runs the benchmark and prints a table (or one JSON object per scheme).
pub fn run(opts: &Options) -> Result<(), String> {
    if let Some(sw) = &opts.sweep {
        return super::strings_sweep::run(opts, sw);
    }
    if let Some(d) = &opts.disk {
        return super::strings_disk::run(opts, d);
    }
    let schemes = parse_schemes(&opts.schemes)?;
    new_env(opts.page_size)?; // a bad page size fails before the keys are made
    let wl = workload(opts)?;
    let rows = measure(opts, &wl, &schemes)?;
    if !opts.json {
        print_header(opts, &wl);
        print_columns(None);
    }
    print_rows(opts, &wl, &rows, None);
    if !opts.json && !rows.is_empty() {
        print_verified(&wl);
    }
    Ok(())
}

/// Checks that every key fits, runs every scheme `--repeat` times round-robin and returns the
/// medians.
pub(super) fn measure(
    opts: &Options,
    wl: &Workload,
    schemes: &[KeyScheme],
) -> Result<Vec<Row>, String> {
    for &s in schemes {
        let limits = limits(s, opts.page_size)?;
        if wl.max_len > limits.max_key_len {
            return Err(too_long(wl, limits.max_key_len, opts.page_size));
        }
    }
    let tty = std::io::stderr().is_terminal();
    let reps = opts.repeat.max(1);
    let total = reps * schemes.len();
    // Round-robin: run k of every scheme before run k + 1 of any, so that a noisy stretch of the
    // shared machine hits every scheme alike.
    let mut runs: Vec<Vec<Run>> = vec![Vec::new(); schemes.len()];
    for i in 0..reps {
        for (si, &s) in schemes.iter().enumerate() {
            if tty {
                let done = i * schemes.len() + si;
                let w = 30 * done / total;
                eprint!(
                    "\r\x1b[K[{}{}] {done}/{total} runs: {} run {}/{reps}",
                    "#".repeat(w),
                    "-".repeat(30 - w),
                    s.name(),
                    i + 1
                );
            }
            runs[si].push(one_run(opts, s, wl).map_err(|m| format!("{}: {m}", s.name()))?);
        }
    }
    if tty {
        eprint!("\r\x1b[K");
    }
    // Median over the runs of millions of operations per second.
    let mops = |ops: usize, rs: &[Run], secs: fn(&Run) -> f64| {
        median(
            &mut rs
                .iter()
                .map(|r| ops as f64 / secs(r) / 1e6)
                .collect::<Vec<_>>(),
        )
    };
    let none_key_bytes = match schemes.iter().position(|&s| s == KeyScheme::None) {
        Some(i) => runs[i][0].stats.key_bytes,
        None if schemes.is_empty() => 0,
        None => none_stats(opts, wl)?.key_bytes,
    };
    Ok(schemes
        .iter()
        .zip(&runs)
        .map(|(&scheme, rs)| Row {
            scheme,
            insert_mops: mops(wl.timed.len(), rs, |r| r.insert_s),
            lookup_mops: mops(wl.lookups.len(), rs, |r| r.lookup_s),
            range_mops: [
                mops(wl.range_starts.len(), rs, |r| r.range_s[0]),
                mops(wl.range_starts.len(), rs, |r| r.range_s[1]),
            ],
            stats: rs[0].stats.clone(),
            none_key_bytes,
        })
        .collect())
}

/// Rows of the same schemes from several rounds (a sweep's repeats) as one row per scheme: the
/// median of each throughput; the tree statistics are those of the first round (every round
/// builds the same tree).
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
            scheme: r.scheme,
            insert_mops: med(i, &|r| r.insert_mops),
            lookup_mops: med(i, &|r| r.lookup_mops),
            range_mops: [med(i, &|r| r.range_mops[0]), med(i, &|r| r.range_mops[1])],
            stats: r.stats.clone(),
            none_key_bytes: r.none_key_bytes,
        })
        .collect()
}

/// The text table's comment lines: the key set and what each column means.
pub(super) fn print_header(opts: &Options, wl: &Workload) {
    let n = wl.sorted.len();
    let mean_len = wl.sorted.iter().map(Vec::len).sum::<usize>() as f64 / n as f64;
    outln!(
        "# tersedb bench strings: {}, {n} keys ({mean_len:.1} B on average, at most {} B), page {} B, seed {}, median of {}",
        wl.label, wl.max_len, opts.page_size, opts.seed, opts.repeat.max(1)
    );
    outln!(
        "# millions of operations/s: insert = the last {}% of the keys after a {WARMUP_PERCENT}% warm-up ({} keys), lookup = those keys, range10/100 = {} cursor seeks reading 10/100 keys (a query is one operation)",
        100 - WARMUP_PERCENT,
        wl.timed.len(),
        wl.range_starts.len()
    );
    outln!("# bytes/key = key bytes of all nodes / keys; ratio = none's key bytes / the scheme's; fan-out = children per branch");
}

/// The text table's column titles, after the sweep's parameter if there is one.
pub(super) fn print_columns(lead: Option<&str>) {
    let lead = lead.map_or_else(String::new, |t| format!("{t:>8} "));
    outln!(
        "{lead}{:<11} {:>8} {:>8} {:>8} {:>8} {:>9} {:>6} {:>6} {:>7} {:>8} {:>8}",
        "scheme",
        "insert",
        "lookup",
        "range10",
        "range100",
        "bytes/key",
        "ratio",
        "height",
        "fan-out",
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
                "{{{}\"scheme\":\"{}\",\"dataset\":{},\"keys\":{n},\"page_size\":{},\"insert_mops\":{:.6},\"lookup_mops\":{:.6},\"range10_mops\":{:.6},\"range100_mops\":{:.6},\"bytes_per_key\":{:.4},\"leaf_key_bytes\":{},\"compression_ratio\":{:.4},\"height\":{},\"internal_fanout\":{:.4},\"leaf_nodes\":{},\"branch_nodes\":{},\"verified\":true}}",
                Lead::json(lead),
                r.scheme.name(),
                crate::store::json_str(&wl.label),
                opts.page_size,
                r.insert_mops,
                r.lookup_mops,
                r.range_mops[0],
                r.range_mops[1],
                r.bytes_per_key(),
                r.stats.leaf_key_bytes,
                r.ratio(),
                r.stats.height,
                r.internal_fanout(),
                r.stats.leaf_pages,
                r.stats.branch_pages
            );
        } else {
            let lead = lead.map_or_else(String::new, |l| format!("{:>8} ", l.value));
            outln!(
                "{lead}{:<11} {:>8.3} {:>8.3} {:>8.4} {:>8.4} {:>9.2} {:>6.3} {:>6} {:>7.2} {:>8} {:>8}",
                r.scheme.name(),
                r.insert_mops,
                r.lookup_mops,
                r.range_mops[0],
                r.range_mops[1],
                r.bytes_per_key(),
                r.ratio(),
                r.stats.height,
                r.internal_fanout(),
                r.stats.leaf_pages,
                r.stats.branch_pages
            );
        }
    }
}

/// The closing line of a text table.
pub(super) fn print_verified(wl: &Workload) {
    outln!(
        "verified: in every run every lookup found its key, every range query returned the keys following its start key in ascending order, and the tree held exactly the {} keys",
        wl.sorted.len()
    );
}
