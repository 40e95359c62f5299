//! `tersedb bench strings --sweep ...`: the parameter sweeps of Gao et al., "Revisiting B-tree
//! Compression" (SIGMOD 2024), each one table with the swept value in the first column:
//!
//! ```text
//! --sweep key-length   random keys of 8..256 characters (§4.3, Fig. 13); one page size for
//!                      all, by default the smallest that holds the longest key (4 KiB for 256)
//! --sweep page-size    512 B..16 KiB pages in memory (§4.4, Fig. 14; the study's 256 B is below
//!                      the engine's smallest page); with --disk 4..16 KiB (Fig. 15)
//! --sweep pkb          PkB's partial key length 1..8 bytes (§4.1, Fig. 10), the pkb scheme
//!                      only (none runs untimed for the compression ratio)
//! ```
//!
//! Every point is a full run of `strings` (or `strings_disk` with `--disk`, at 4 KiB pages
//! unless `--page-size` says otherwise): the same phases, the same verification. With
//! `--repeat`, run k of every point comes before run k + 1 of any, and medians are reported. The
//! key set is made once, except for the key-length sweep, which makes one per length from the
//! same seed.

use super::strings::{self as mem, parse_schemes, workload, Lead, Options, Workload};
use super::strings_disk::{self as disk, DISK_PKB_LEN};
use tersedb::{KeyScheme, Limits};

/// Keys of a generated data set in an in-memory sweep unless `--keys` says otherwise.
pub const SWEEP_KEYS: usize = 200_000;
/// ... with `--quick`.
pub const QUICK_KEYS: usize = 5_000;
/// The disk sweeps' page size unless `--page-size` says otherwise (the study's disk default).
pub const DISK_PAGE: usize = 4096;

/// Which parameter a sweep varies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sweep {
    KeyLength,
    PageSize,
    Pkb,
}

impl Sweep {
    pub const NAMES: [&'static str; 3] = ["key-length", "page-size", "pkb"];

    pub fn from_name(s: &str) -> Option<Sweep> {
        Some(match s {
            "key-length" => Sweep::KeyLength,
            "page-size" => Sweep::PageSize,
            "pkb" => Sweep::Pkb,
            _ => return None,
        })
    }
    fn name(self) -> &'static str {
        match self {
            Sweep::KeyLength => "key-length",
            Sweep::PageSize => "page-size",
            Sweep::Pkb => "pkb",
        }
    }
    /// The text table's first column.
    fn title(self) -> &'static str {
        match self {
            Sweep::KeyLength => "key_len",
            Sweep::PageSize => "page",
            Sweep::Pkb => "pkb_len",
        }
    }
    /// The study's figure.
    fn figure(self, on_disk: bool) -> &'static str {
        match (self, on_disk) {
            (Sweep::KeyLength, _) => "Fig. 13",
            (Sweep::PageSize, false) => "Fig. 14",
            (Sweep::PageSize, true) => "Fig. 15",
            (Sweep::Pkb, _) => "Fig. 10",
        }
    }
    fn default_values(self, on_disk: bool) -> Vec<usize> {
        match (self, on_disk) {
            (Sweep::KeyLength, _) => vec![8, 16, 32, 64, 128, 256],
            (Sweep::PageSize, false) => vec![512, 1024, 2048, 4096, 8192, 16384],
            (Sweep::PageSize, true) => disk::PAGE_SIZES.to_vec(),
            (Sweep::Pkb, _) => (1..=8).collect(),
        }
    }
}

/// Options of a sweep.
#[derive(Clone, Debug)]
pub struct SweepOptions {
    pub sweep: Sweep,
    /// The values to run; empty = the sweep's default.
    pub values: Vec<usize>,
    /// `--page-size` as given (the sweeps pick their own default).
    pub page_size: Option<usize>,
    /// Fewer keys (in memory; on disk `DiskOptions::quick` says the same).
    pub quick: bool,
}

/// The options of one point of the sweep.
fn point(opts: &Options, sw: &SweepOptions, v: usize) -> Options {
    let mut o = opts.clone();
    match sw.sweep {
        Sweep::KeyLength => o.key_len = v,
        Sweep::PageSize => o.page_size = v,
        Sweep::Pkb => o.pkb_len = v as u8,
    }
    o
}

/// Checks the sweep's values against what the engine and the data set take.
fn check(opts: &Options, sw: &SweepOptions, values: &[usize]) -> Result<(), String> {
    if values.is_empty() {
        return Err("--sweep-values: no values".into());
    }
    for &v in values {
        let ok = match sw.sweep {
            Sweep::KeyLength => (1..=65536).contains(&v),
            Sweep::PageSize => v.is_power_of_two() && (512..=65536).contains(&v),
            Sweep::Pkb => (1..=16).contains(&v),
        };
        if !ok {
            return Err(format!(
                "--sweep {}: {v} is not a valid value (key lengths 1..; page sizes powers of two \
                 of 512..=65536; partial key lengths 1..=16)",
                sw.sweep.name()
            ));
        }
    }
    if sw.sweep == Sweep::KeyLength && opts.input.is_some() {
        return Err("--sweep key-length makes random keys; it takes no --input".into());
    }
    if sw.sweep == Sweep::KeyLength && crate::string_datasets::alphabet(&opts.dataset).is_none() {
        return Err(format!(
            "--sweep key-length needs a random data set (random10, random26, random36, \
             random62), not {}",
            opts.dataset
        ));
    }
    Ok(())
}

/// The schemes of the sweep: PkB's sweep runs `pkb` alone.
fn schemes(opts: &Options, sw: &SweepOptions) -> Result<Vec<KeyScheme>, String> {
    let s = parse_schemes(&opts.schemes)?;
    if sw.sweep == Sweep::Pkb {
        if !opts.schemes.is_empty() && s != [KeyScheme::Pkb] {
            return Err("--sweep pkb varies PkB's partial key alone: leave out --schemes".into());
        }
        return Ok(vec![KeyScheme::Pkb]);
    }
    Ok(s)
}

/// Runs the sweep and prints one table (or one JSON object per value and scheme).
pub fn run(opts: &Options, sw: &SweepOptions) -> Result<(), String> {
    let on_disk = opts.disk.is_some();
    let values = if sw.values.is_empty() {
        sw.sweep.default_values(on_disk)
    } else {
        sw.values.clone()
    };
    check(opts, sw, &values)?;
    let schemes = schemes(opts, sw)?;
    let mut opts = opts.clone();
    if opts.keys.is_none() {
        opts.keys = Some(match &opts.disk {
            Some(d) => d.default_keys(),
            None if sw.quick => QUICK_KEYS,
            None => SWEEP_KEYS,
        });
        // a word list or an --input file is used whole, as without a sweep
        if opts.input.is_some() || opts.dataset == "words" {
            opts.keys = None;
        }
    }
    if let Some(d) = opts.disk.clone() {
        return run_disk(&opts, sw, &d, &values, &schemes);
    }
    if sw.page_size.is_none() && sw.sweep == Sweep::KeyLength {
        // One page size for every length (the study holds it fixed): the smallest that holds
        // the longest key.
        let longest = values.iter().copied().max().unwrap_or(0);
        opts.page_size = (0..8)
            .map(|i| 512usize << i)
            .find(|&p| Limits::for_page_size(p).max_key_len >= longest)
            .ok_or_else(|| format!("no page size holds keys of {longest} bytes"))?;
    }
    let wls = workloads(&opts, sw, &values)?;
    let w = |pi: usize| &wls[pi.min(wls.len() - 1)];
    // Round-robin over the points, as over the schemes inside a point: run k of every point
    // before run k + 1 of any, so that a noisy stretch of the shared machine hits all alike.
    let reps = opts.repeat.max(1);
    let mut once = opts.clone();
    once.repeat = 1;
    let mut rounds: Vec<Vec<Vec<mem::Row>>> = values.iter().map(|_| Vec::new()).collect();
    for _ in 0..reps {
        for (pi, &v) in values.iter().enumerate() {
            let rows = mem::measure(&point(&once, sw, v), w(pi), &schemes)
                .map_err(|m| format!("{} {v}: {m}", sw.sweep.title()))?;
            rounds[pi].push(rows);
        }
    }
    for (pi, &v) in values.iter().enumerate() {
        let o = point(&opts, sw, v);
        if !opts.json && pi == 0 {
            print_sweep_line(sw, &values, false);
            mem::print_header(&o, w(pi));
            mem::print_columns(Some(sw.sweep.title()));
        }
        let lead = Lead {
            sweep: sw.sweep.name(),
            value: v,
        };
        mem::print_rows(&o, w(pi), &mem::median_rows(&rounds[pi]), Some(&lead));
    }
    if !opts.json {
        print_verified(&values);
    }
    Ok(())
}

/// The key sets of the points: one per key length, else one for all.
fn workloads(opts: &Options, sw: &SweepOptions, values: &[usize]) -> Result<Vec<Workload>, String> {
    if sw.sweep == Sweep::KeyLength {
        values
            .iter()
            .map(|&v| workload(&point(opts, sw, v)))
            .collect()
    } else {
        Ok(vec![workload(opts)?])
    }
}

fn run_disk(
    opts: &Options,
    sw: &SweepOptions,
    d: &disk::DiskOptions,
    values: &[usize],
    schemes: &[KeyScheme],
) -> Result<(), String> {
    let mut opts = opts.clone();
    if opts.pkb_len == 0 {
        opts.pkb_len = DISK_PKB_LEN;
    }
    let fixed = vec![sw.page_size.unwrap_or(DISK_PAGE)];
    let sizes_of = |v: usize| {
        if sw.sweep == Sweep::PageSize {
            vec![v]
        } else {
            fixed.clone()
        }
    };
    for &v in values {
        disk::check_page_sizes(&sizes_of(v))?;
    }
    std::fs::create_dir_all(&d.dir).map_err(|e| format!("{}: {e}", d.dir.display()))?;
    let wls = workloads(&opts, sw, values)?;
    let w = |pi: usize| &wls[pi.min(wls.len() - 1)];
    let reps = opts.repeat.max(1);
    let mut once = opts.clone();
    once.repeat = 1;
    let mut rounds: Vec<Vec<Vec<disk::Row>>> = values.iter().map(|_| Vec::new()).collect();
    let mut work = None;
    for _ in 0..reps {
        for (pi, &v) in values.iter().enumerate() {
            let (dw, rows) = disk::measure(&point(&once, sw, v), d, w(pi), schemes, &sizes_of(v))
                .map_err(|m| format!("{} {v}: {m}", sw.sweep.title()))?;
            rounds[pi].push(rows);
            work.get_or_insert(dw);
        }
    }
    for (pi, &v) in values.iter().enumerate() {
        let o = point(&opts, sw, v);
        if let (false, 0, Some(dw)) = (opts.json, pi, work.as_ref()) {
            print_sweep_line(sw, values, true);
            disk::print_header(&o, w(pi), dw, d);
            // the disk table has a page column already
            disk::print_columns((sw.sweep != Sweep::PageSize).then(|| sw.sweep.title()));
        }
        let lead = Lead {
            sweep: sw.sweep.name(),
            value: v,
        };
        let lead = (opts.json || sw.sweep != Sweep::PageSize).then_some(&lead);
        disk::print_rows(&o, w(pi), &disk::median_rows(&rounds[pi]), lead);
    }
    if !opts.json {
        print_verified(values);
    }
    Ok(())
}

fn print_sweep_line(sw: &SweepOptions, values: &[usize], on_disk: bool) {
    let vs: Vec<String> = values.iter().map(|v| v.to_string()).collect();
    outln!(
        "# sweep {} ({} of \"Revisiting B-tree Compression\"): {} = {}; the lines below describe the first point{}",
        sw.sweep.name(),
        sw.sweep.figure(on_disk),
        sw.sweep.title(),
        vs.join(", "),
        if sw.sweep == Sweep::KeyLength {
            " (each length has its own key set of the same size and seed)"
        } else {
            ""
        }
    );
}

fn print_verified(values: &[usize]) {
    outln!(
        "verified: at each of the {} points, in every run every lookup found its key, every range query returned the keys following its start key in ascending order, and the tree held exactly the key set",
        values.len()
    );
}
