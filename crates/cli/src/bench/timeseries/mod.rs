//! `tersedb bench timeseries`: compressed keys and compressed numeric records on three
//! generated time series (the targets of issue 16), through the engine's public API only.
//!
//! Per series ([`series`]: (a) u64 ms timestamps with an i64 random walk, (b) 1 s u64
//! timestamps with two-decimal f64 temperatures, (c) u32 seconds with u32 status codes):
//!
//! 1. Sizes: the series loaded in ascending order into a fresh file for keys none, every codec
//!    and auto, records raw and compressed; bytes per entry of the file, of its live pages
//!    (`Env::space`), of the leaves' keys and records (`DbStats`); zstd -19 of the raw
//!    little-endian key and value columns as the general-purpose peer, in the same run.
//! 2. Speed, auto keys, records raw against compressed, medians of `--repeat` runs: ascending
//!    load (append, one transaction); then, the two databases open side by side and each phase
//!    run on one and then the other for several rounds (a noisy stretch of a shared machine
//!    hits both alike): point lookups in random order, a cursor over every entry, `SELECT
//!    SUM(record)` over 1%, 10% and 100% key ranges and a `GROUP BY key / N` of about 1,000
//!    buckets, through the query language; in the first run only (it is the slowest part),
//!    the random-order load (100,000 entries per transaction).
//! 3. The verdict of the targets: auto keys with compressed records take at most 1/4
//!    of the raw size and no more than zstd -19 of the raw columns (the live pages: the meta
//!    pages and free list are a fixed few pages of the file); SUM over 10% and 100% at least
//!    2x faster than with raw records; lookups at most 1.2x slower.
//!
//! Then the u64-vs-u32 check: series (c)'s keys stored as u32 and, shifted by 2^40, as u64
//! (the same deltas), keys only: the u64 leaves' key bytes within 5% of the u32 ones for every
//! codec and auto.
//!
//! Every answer (lookups, cursor entries, sums, groups; for the size-only databases their
//! entry count and total) is checked against the generated data; a mismatch fails the bench.

pub mod measure;
pub mod series;

use super::pfor::{Cell, Table};
use super::timing::median;
use measure::{Keys, Plan, Reads, Scratch, Sizes};
use series::Series;
use std::time::Instant;
use tersedb::{CodecId, KeyType};

/// Options of `tersedb bench timeseries`.
#[derive(Clone, Debug)]
pub struct Options {
    pub quick: bool,
    pub json: bool,
    /// Entries per series (default 200,000; quick 20,000).
    pub entries: Option<usize>,
    /// Runs of the speed part (default 3; quick 1); medians are reported.
    pub repeat: Option<usize>,
    /// Series to run (a, b, c); empty = all.
    pub series: Vec<String>,
    pub seed: u64,
}

/// Sizes of one run.
struct Scale {
    entries: usize,
    repeat: usize,
    /// Point lookups per database and round.
    lookups: usize,
    /// Timed rounds per query and cursor scan.
    rounds: usize,
}

impl Scale {
    fn new(o: &Options) -> Scale {
        // The default takes about a minute on the shared 2-core machine of docs/BENCHMARKS.md
        // (at 1,000,000 entries it takes 12 minutes: the random-order loads alone take 50 s per
        // series and run).
        let (entries, repeat, lookups, rounds) = if o.quick {
            (20_000, 1, 2_000, 1)
        } else {
            (200_000, 3, 20_000, 5)
        };
        Scale {
            entries: o.entries.unwrap_or(entries),
            repeat: o.repeat.unwrap_or(repeat).max(1),
            lookups,
            rounds,
        }
    }
}

/// Key configurations of the size table: none, every codec, auto.
fn key_configs() -> Vec<Keys> {
    std::iter::once(Keys::None)
        .chain(CodecId::ALL.iter().map(|&c| Keys::Codec(c)))
        .chain(std::iter::once(Keys::Auto))
        .collect()
}

const SIZE_COLS: &[(&str, &str, usize)] = &[
    ("series", "series", 6),
    ("keys", "keys", 12),
    ("records", "records", 10),
    ("file_bpe", "file B/e", 8),
    ("live_bpe", "live B/e", 8),
    ("key_bpe", "key B/e", 7),
    ("record_bpe", "rec B/e", 7),
    ("of_raw", "x raw", 6),
    ("load_s", "load s", 7),
    ("verified", "checked", 7),
];

const ZSTD_COLS: &[(&str, &str, usize)] = &[
    ("series", "series", 6),
    ("raw_bpe", "raw B/e", 7),
    ("zstd19_key_bpe", "zstd key B/e", 12),
    ("zstd19_value_bpe", "zstd value B/e", 14),
    ("zstd19_bpe", "zstd B/e", 8),
    ("of_raw", "x raw", 6),
    ("compress_s", "zstd s", 7),
];

const SPEED_COLS: &[(&str, &str, usize)] = &[
    ("series", "series", 6),
    ("keys", "keys", 5),
    ("records", "records", 10),
    ("load_asc_s", "load asc s", 10),
    ("load_random_s", "load rand s", 11),
    ("random_file_bpe", "rand B/e", 8),
    ("lookup_us", "lookup us", 9),
    ("cursor_ms", "cursor ms", 9),
    ("sum_1pct_ms", "SUM 1% ms", 9),
    ("sum_10pct_ms", "SUM 10% ms", 10),
    ("sum_100pct_ms", "SUM 100% ms", 11),
    ("group_by_ms", "GROUP ms", 9),
    ("answers_checked", "checked", 9),
];

const VERDICT_COLS: &[(&str, &str, usize)] = &[
    ("series", "series", 6),
    ("target", "target", 38),
    ("measured", "measured", 9),
    ("limit", "limit", 7),
    ("met", "met", 4),
];

const U64_COLS: &[(&str, &str, usize)] = &[
    ("keys", "keys", 12),
    ("u32_key_bpe", "u32 key B/e", 11),
    ("u64_key_bpe", "u64 key B/e", 11),
    ("ratio", "u64/u32", 8),
    ("u32_file_bpe", "u32 file B/e", 12),
    ("u64_file_bpe", "u64 file B/e", 12),
    ("within_5pct", "within 5%", 9),
];

/// One timed run of a database (speed part); the random-order load runs in the first run only
/// (NaN in the others).
#[derive(Clone, Debug, Default)]
struct Timed {
    load_asc_s: f64,
    load_random_s: f64,
    random_file: u64,
    reads: Reads,
}

/// Medians over runs of each figure.
fn median_timed(runs: &[Timed]) -> Timed {
    let med = |f: &dyn Fn(&Timed) -> f64| {
        median(
            &mut runs
                .iter()
                .map(f)
                .filter(|x| !x.is_nan())
                .collect::<Vec<_>>(),
        )
    };
    let sums = runs.first().map_or(0, |r| r.reads.sum_s.len());
    Timed {
        load_asc_s: med(&|r| r.load_asc_s),
        load_random_s: med(&|r| r.load_random_s),
        random_file: runs.first().map_or(0, |r| r.random_file),
        reads: Reads {
            lookup_s: med(&|r| r.reads.lookup_s),
            cursor_s: med(&|r| r.reads.cursor_s),
            sum_s: (0..sums).map(|i| med(&|r| r.reads.sum_s[i])).collect(),
            group_s: med(&|r| r.reads.group_s),
            checked: runs.iter().map(|r| r.reads.checked).sum(),
        },
    }
}

/// What the verdict needs of one series.
struct SeriesResult {
    raw_bpe: f64,
    zstd_bpe: f64,
    /// Bytes per entry with auto keys and compressed records: of the live pages, of the file.
    auto_live_bpe: f64,
    auto_file_bpe: f64,
    raw: Timed,
    compressed: Timed,
}

pub fn run(opts: &Options) -> Result<(), String> {
    let names: Vec<String> = if opts.series.is_empty() {
        series::NAMES.iter().map(|s| s.to_string()).collect()
    } else {
        opts.series.clone()
    };
    for n in &names {
        if !series::NAMES.contains(&n.as_str()) {
            return Err(format!("unknown series {n:?} (a, b, c)"));
        }
    }
    let scale = Scale::new(opts);
    if scale.entries < 2 {
        return Err("--entries must be at least 2".into());
    }
    if !opts.json {
        outln!(
            "tersedb bench timeseries: {} entries per series, speed medians of {} runs, seed {}, isa {}, page {} B{}",
            scale.entries,
            scale.repeat,
            opts.seed,
            tersedb_codecs::Isa::detect(),
            tersedb::EnvOptions::default().page_size,
            if opts.quick { ", quick" } else { "" }
        );
        outln!("  B/e = bytes per entry; x raw = live bytes over the raw key and record bytes; every answer checked against the generated data");
    }
    let scratch = Scratch::new("run")?;
    let mut progress = crate::progress::Progress::new(names.len() as u64 + 1, "parts");
    let mut results = Vec::new();
    for name in &names {
        progress.message(&format!("series {name}"));
        let s = Series::generate(name, scale.entries, opts.seed)?;
        let r =
            one_series(opts, &scale, &scratch, &s).map_err(|e| format!("series {name}: {e}"))?;
        results.push((s.name, r));
        progress.inc(1);
    }
    progress.message("u64 against u32 keys");
    let u64_ok = u64_vs_u32(opts, &scale, &scratch)?;
    progress.inc(1);
    progress.finish("bench timeseries, every answer verified");
    verdicts(opts, &results, u64_ok);
    Ok(())
}

fn one_series(
    opts: &Options,
    scale: &Scale,
    scratch: &Scratch,
    s: &Series,
) -> Result<SeriesResult, String> {
    let n = s.len() as f64;
    let raw_bpe = s.raw_entry_bytes() as f64;
    let prefix = s.prefix();
    if !opts.json {
        outln!();
        outln!(
            "series {}: {} ({} entries, raw {} B/entry)",
            s.name,
            s.label,
            s.len(),
            s.raw_entry_bytes()
        );
    }

    // zstd -19 of the raw columns.
    let t = Instant::now();
    let (keys, values) = (s.key_column(), s.value_column());
    let zk = zstd_size(&keys)?;
    let zv = zstd_size(&values)?;
    let zstd_s = t.elapsed().as_secs_f64();
    let zstd_bpe = (zk + zv) as f64 / n;

    // Sizes.
    let table = Table {
        name: "ts_sizes",
        cols: SIZE_COLS,
        json: opts.json,
    };
    table.start("sizes after an ascending load (one transaction)");
    let (mut auto_live_bpe, mut auto_file_bpe) = (f64::NAN, f64::NAN);
    for keys in key_configs() {
        for compressed in [false, true] {
            let path = scratch.file("size.tdb");
            let env = measure::open_env(&path)?;
            let cfg = measure::config(s, s.key_type, keys, compressed);
            let (db, load_s) = measure::load_ascending(&env, s, cfg, 0)
                .map_err(|e| format!("{} keys: {e}", keys.name()))?;
            let z = measure::sizes(&env, &db, &path)?;
            let r = env.begin_read().map_err(|e| e.to_string())?;
            measure::check_totals(&r, &db, s, &prefix).map_err(|e| {
                format!(
                    "{} keys, records {}: {e}",
                    keys.name(),
                    rec_name(compressed)
                )
            })?;
            drop(r);
            drop(env);
            measure::remove_env(&path);
            if keys == Keys::Auto && compressed {
                auto_live_bpe = z.live as f64 / n;
                auto_file_bpe = z.file as f64 / n;
            }
            table.row(&[
                Cell::S(s.name.into()),
                Cell::S(keys.name().into()),
                Cell::S(rec_name(compressed).into()),
                Cell::F(z.file as f64 / n, 3),
                Cell::F(z.live as f64 / n, 3),
                Cell::F(z.keys as f64 / n, 3),
                Cell::F(z.records as f64 / n, 3),
                Cell::F(z.live as f64 / n / raw_bpe, 3),
                Cell::F(load_s, 3),
                Cell::B(true),
            ]);
        }
    }
    let zt = Table {
        name: "ts_zstd",
        cols: ZSTD_COLS,
        json: opts.json,
    };
    zt.start("zstd -19 of the raw little-endian columns (each column one frame)");
    zt.row(&[
        Cell::S(s.name.into()),
        Cell::F(raw_bpe, 3),
        Cell::F(zk as f64 / n, 3),
        Cell::F(zv as f64 / n, 3),
        Cell::F(zstd_bpe, 3),
        Cell::F(zstd_bpe / raw_bpe, 3),
        Cell::F(zstd_s, 2),
    ]);

    // Speed: auto keys, raw and compressed records interleaved.
    let plan = Plan::new(s, scale.lookups, scale.rounds, opts.seed);
    let mut order: Vec<u32> = (0..s.len() as u32).collect();
    fastrand::Rng::with_seed(opts.seed ^ 0x0bde).shuffle(&mut order);
    let mut runs: [Vec<Timed>; 2] = [Vec::new(), Vec::new()];
    let checksum = measure::Checksum::of(s);
    for run in 0..scale.repeat {
        let [raw, compressed] = timed_run(
            scratch,
            s,
            &prefix,
            checksum,
            &plan,
            (run == 0).then_some(&order[..]),
        )?;
        runs[0].push(raw);
        runs[1].push(compressed);
    }
    let raw = median_timed(&runs[0]);
    let compressed = median_timed(&runs[1]);
    let st = Table {
        name: "ts_speed",
        cols: SPEED_COLS,
        json: opts.json,
    };
    st.start(&format!(
        "speed, auto keys, medians of {} runs (the random-order load: one run, 100,000 entries per transaction); in each run the reads alternate between raw and compressed, {} rounds: {} lookups in random order (us each), SUM(record) over {} ranges of 1%, {} of 10%, the whole series (ms per query), GROUP BY key / {} ({} groups)",
        scale.repeat,
        scale.rounds,
        plan.lookups.len(),
        measure::COVERAGE[0].1,
        measure::COVERAGE[1].1,
        plan.width,
        s.buckets(plan.width, &prefix).len()
    ));
    for (label, t) in [("raw", &raw), ("compressed", &compressed)] {
        st.row(&speed_cells(s.name, label, t, n));
    }
    let ratio = |f: &dyn Fn(&Timed) -> f64| f(&compressed) / f(&raw);
    let mut cells = vec![
        Cell::S(s.name.into()),
        Cell::S("auto".into()),
        Cell::S("ratio".into()),
        Cell::F(ratio(&|t| t.load_asc_s), 2),
        Cell::F(ratio(&|t| t.load_random_s), 2),
        Cell::F(ratio(&|t| t.random_file as f64), 2),
        Cell::F(ratio(&|t| t.reads.lookup_s), 2),
        Cell::F(ratio(&|t| t.reads.cursor_s), 2),
    ];
    for i in 0..measure::COVERAGE.len() {
        cells.push(Cell::F(ratio(&|t| t.reads.sum_s[i]), 2));
    }
    cells.push(Cell::F(ratio(&|t| t.reads.group_s), 2));
    cells.push(Cell::None);
    st.note("ratio = compressed / raw (below 1: compressed is faster or smaller)");
    st.row(&cells);
    Ok(SeriesResult {
        raw_bpe,
        zstd_bpe,
        auto_live_bpe,
        auto_file_bpe,
        raw,
        compressed,
    })
}

fn speed_cells(series: &str, label: &str, t: &Timed, n: f64) -> Vec<Cell> {
    let mut c = vec![
        Cell::S(series.into()),
        Cell::S("auto".into()),
        Cell::S(label.into()),
        Cell::F(t.load_asc_s, 3),
        Cell::F(t.load_random_s, 3),
        Cell::F(t.random_file as f64 / n, 3),
        Cell::F(t.reads.lookup_s * 1e6, 3),
        Cell::F(t.reads.cursor_s * 1e3, 2),
    ];
    for &s in &t.reads.sum_s {
        c.push(Cell::F(s * 1e3, 3));
    }
    c.push(Cell::F(t.reads.group_s * 1e3, 2));
    c.push(Cell::I(t.reads.checked));
    c
}

fn rec_name(compressed: bool) -> &'static str {
    if compressed {
        "compressed"
    } else {
        "raw"
    }
}

/// One timed run of raw and compressed records (auto keys): the two ascending loads, the read
/// phases on both, interleaved ([`measure::reads_interleaved`]), then (given an `order`) the two
/// random-order loads into other files.
fn timed_run(
    scratch: &Scratch,
    s: &Series,
    prefix: &series::Prefix,
    checksum: measure::Checksum,
    plan: &Plan,
    order: Option<&[u32]>,
) -> Result<[Timed; 2], String> {
    let e = |x: tersedb::Error| x.to_string();
    let cfgs = [false, true].map(|c| measure::config(s, s.key_type, Keys::Auto, c));
    let mut loaded = Vec::new();
    for (cfg, name) in cfgs.iter().zip(["asc-raw.tdb", "asc-compressed.tdb"]) {
        let path = scratch.file(name);
        let env = measure::open_env(&path)?;
        let (db, secs) = measure::load_ascending(&env, s, *cfg, 0)
            .map_err(|x| format!("records {}: {x}", rec_name(cfg.compress_records)))?;
        loaded.push((path, env, db, secs));
    }
    let txns = loaded
        .iter()
        .map(|l| l.1.begin_read())
        .collect::<tersedb::Result<Vec<_>>>()
        .map_err(e)?;
    let subjects: Vec<measure::Subject> = loaded
        .iter()
        .zip(&txns)
        .map(|(l, r)| measure::Subject {
            r,
            db: &l.2,
            s,
            prefix,
            checksum,
        })
        .collect();
    let reads = measure::reads_interleaved(&subjects, plan)?;
    drop(subjects);
    drop(txns);
    let mut out: [Timed; 2] = Default::default();
    for (i, ((path, env, _, secs), reads)) in loaded.into_iter().zip(reads).enumerate() {
        drop(env);
        measure::remove_env(&path);
        out[i].load_asc_s = secs;
        out[i].reads = reads;
        out[i].load_random_s = f64::NAN;
    }
    let Some(order) = order else {
        return Ok(out);
    };
    for (i, cfg) in cfgs.into_iter().enumerate() {
        let path = scratch.file("random.tdb");
        let env = measure::open_env(&path)?;
        let what = format!(
            "random-order load, records {}",
            rec_name(cfg.compress_records)
        );
        let (db, secs) =
            measure::load_random(&env, s, cfg, order).map_err(|x| format!("{what}: {x}"))?;
        let z: Sizes = measure::sizes(&env, &db, &path)?;
        let r = env.begin_read().map_err(e)?;
        measure::check_totals(&r, &db, s, prefix).map_err(|x| format!("{what}: {x}"))?;
        drop(r);
        drop(env);
        measure::remove_env(&path);
        out[i].load_random_s = secs;
        out[i].random_file = z.file;
    }
    Ok(out)
}

/// Bytes of zstd level 19 of `data` (one frame), checked by decompressing.
fn zstd_size(data: &[u8]) -> Result<usize, String> {
    let packed = zstd::bulk::compress(data, 19).map_err(|e| format!("zstd: {e}"))?;
    let back = zstd::bulk::decompress(&packed, data.len()).map_err(|e| format!("zstd: {e}"))?;
    if back != data {
        return Err("zstd -19 decoded other bytes".into());
    }
    Ok(packed.len())
}

/// The u64-vs-u32 check on series (c)'s keys; returns whether every codec is within 5%.
fn u64_vs_u32(opts: &Options, scale: &Scale, scratch: &Scratch) -> Result<bool, String> {
    const BASE: u64 = 1 << 40;
    let s = Series::generate("c", scale.entries, opts.seed)?;
    let prefix = s.prefix();
    let n = s.len() as f64;
    let t = Table {
        name: "ts_u64_vs_u32",
        cols: U64_COLS,
        json: opts.json,
    };
    t.start("u64 against u32 keys: series c's keys (keys only) as u32, and plus 2^40 as u64 (the same deltas); target: u64 key bytes within 5% of u32");
    let mut all = true;
    for keys in key_configs().into_iter().filter(|&k| k != Keys::None) {
        let mut got = [(0f64, 0f64); 2];
        for (i, (kt, base)) in [(KeyType::U32, 0), (KeyType::U64, BASE)]
            .into_iter()
            .enumerate()
        {
            let path = scratch.file("keys.tdb");
            let env = measure::open_env(&path)?;
            let cfg =
                measure::config(&s, kt, keys, false).with_value_type(tersedb::ValueType::Bytes);
            let cfg = tersedb::DbConfig {
                record_type: tersedb::RecordType::None,
                ..cfg
            };
            let (db, _) = measure::load_ascending(&env, &s, cfg, base)
                .map_err(|e| format!("{} {kt:?} keys: {e}", keys.name()))?;
            let z = measure::sizes(&env, &db, &path)?;
            let r = env.begin_read().map_err(|e| e.to_string())?;
            measure::check_totals(&r, &db, &s, &prefix)?;
            // The first and last keys read back with the base.
            let mut c = r.cursor(&db).map_err(|e| e.to_string())?;
            let first = c
                .first()
                .map_err(|e| e.to_string())?
                .then(|| c.key_u64())
                .flatten();
            let last = c
                .last()
                .map_err(|e| e.to_string())?
                .then(|| c.key_u64())
                .flatten();
            if first != Some(s.keys[0] + base) || last != s.keys.last().map(|k| k + base) {
                return Err(format!(
                    "{} {kt:?} keys: first {first:?}, last {last:?}",
                    keys.name()
                ));
            }
            drop(c);
            drop(r);
            drop(env);
            measure::remove_env(&path);
            got[i] = (z.keys as f64 / n, z.file as f64 / n);
        }
        let ratio = got[1].0 / got[0].0;
        let ok = ratio <= 1.05;
        all &= ok;
        t.row(&[
            Cell::S(keys.name().into()),
            Cell::F(got[0].0, 3),
            Cell::F(got[1].0, 3),
            Cell::F(ratio, 3),
            Cell::F(got[0].1, 3),
            Cell::F(got[1].1, 3),
            Cell::B(ok),
        ]);
    }
    Ok(all)
}

fn verdicts(opts: &Options, results: &[(&str, SeriesResult)], u64_ok: bool) {
    let t = Table {
        name: "ts_verdict",
        cols: VERDICT_COLS,
        json: opts.json,
    };
    t.start("verdict: the targets of issue 16 (auto keys, compressed records)");
    let mut missed = Vec::new();
    let mut notes = vec![
        "live bytes: the pages holding the catalog and the tree (Env::space().live_bytes); the file adds the meta pages and the free list, a few pages whatever the size".to_string(),
    ];
    for (name, r) in results {
        notes.push(format!(
            "{name}: with the whole file, {:.3} B/entry = {:.3}x raw, {:.3}x zstd -19",
            r.auto_file_bpe,
            r.auto_file_bpe / r.raw_bpe,
            r.auto_file_bpe / r.zstd_bpe
        ));
        let sum = |t: &Timed, i: usize| t.reads.sum_s.get(i).copied().unwrap_or(f64::NAN);
        let rows: [(&str, f64, f64, bool); 5] = [
            (
                "live bytes / raw size <= 1/4",
                r.auto_live_bpe / r.raw_bpe,
                0.25,
                false,
            ),
            (
                "live bytes / zstd -19 of raw columns <= 1",
                r.auto_live_bpe / r.zstd_bpe,
                1.0,
                false,
            ),
            (
                "SUM 10% speed-up (raw / compressed) >= 2",
                sum(&r.raw, 1) / sum(&r.compressed, 1),
                2.0,
                true,
            ),
            (
                "SUM 100% speed-up (raw / compressed) >= 2",
                sum(&r.raw, 2) / sum(&r.compressed, 2),
                2.0,
                true,
            ),
            (
                "lookup slow-down (compressed / raw) <= 1.2",
                r.compressed.reads.lookup_s / r.raw.reads.lookup_s,
                1.2,
                false,
            ),
        ];
        for (target, measured, limit, at_least) in rows {
            let met = if at_least {
                measured >= limit
            } else {
                measured <= limit
            };
            if !met {
                missed.push(format!("{name}: {target} (measured {measured:.2})"));
            }
            t.row(&[
                Cell::S(name.to_string()),
                Cell::S(target.into()),
                Cell::F(measured, 3),
                Cell::F(limit, 2),
                Cell::B(met),
            ]);
        }
    }
    t.row(&[
        Cell::S("c".into()),
        Cell::S("u64 key bytes / u32 <= 1.05, every codec".into()),
        Cell::None,
        Cell::F(1.05, 2),
        Cell::B(u64_ok),
    ]);
    if !u64_ok {
        missed.push("u64 keys within 5% of u32 (see the table above)".into());
    }
    if !opts.json {
        for n in notes {
            outln!("  {n}");
        }
        if missed.is_empty() {
            outln!("every target met");
        } else {
            outln!("targets missed ({}):", missed.len());
            for m in missed {
                outln!("  {m}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_series_is_an_error() {
        let o = Options {
            quick: true,
            json: true,
            entries: Some(100),
            repeat: None,
            series: vec!["x".into()],
            seed: 1,
        };
        assert!(run(&o).unwrap_err().contains("unknown series"));
        let o = Options {
            series: vec!["a".into()],
            entries: Some(1),
            ..o
        };
        assert!(run(&o).unwrap_err().contains("at least 2"));
    }
}
