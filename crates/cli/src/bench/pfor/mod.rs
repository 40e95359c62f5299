//! `tersedb bench pfor`: the experiments of Zukowski et al., "Super-Scalar RAM-CPU Cache
//! Compression" (the patched-FOR paper) on this machine, with tersedb's production PFOR and
//! PFOR-DELTA kernels (`tersedb_codecs::pfor::column`, the key codecs' frames and decoder) and
//! the engine's PDICT record chunks (`tersedb::ChunkCodec`; [`pdict`]).
//!
//! - Fig. 4: decompression bandwidth against the exception rate (0..100%), width 8 and the width
//!   each frame chooses: NAIVE (if-then-else per value), PFOR and PFOR-DELTA (two loops), and
//!   PDICT over values from a dictionary of 16 with the same share outside it.
//! - Fig. 5: compression bandwidth of PFOR at width 8 with the NAIVE, PRED and DC first loops
//!   and the production one (a bit set of the exceptions).
//! - Fig. 6: compulsory exceptions: the measured exception rate E' per width 1..8 against the
//!   paper's `E' = max(E, (128E - 1)/(128E) * 2^-b)`.
//! - Fig. 7 / Table 3: SUM over a column of tens of millions of values, page-wise (decompress a
//!   page into RAM, then sum) against vector-wise (decompress 128-1024 values into cache, sum).
//! - Table 4: PFOR-DELTA on d-gaps of Zipf-distributed posting lists against VByte, StreamVByte
//!   and BP128, with a semi-static Huffman code of the gaps as the size reference.
//! - Table 2: TPC-H LINEITEM columns: PFOR, PFOR-DELTA (sorted), PDICT, the engine's automatic
//!   record codec (compressed records through the public API) and zstd of the raw column.
//!
//! Every measurement first checks its answer against the data. Speeds are medians of rounds.
//! Hardware counters (branch and cache misses) are not read here: run the command under
//! `perf stat` where the machine exposes them (docs/BENCHMARKS.md says where it does not).

mod inverted;
pub mod kernels;
pub mod pdict;
mod tpch;

use super::timing::{ops_per_sec, Budget};
use kernels::{page_wise_sum, sum, vector_wise_sum, Column, Loop1, Naive, N};
use std::hint::black_box;
use std::time::Duration;
use tersedb_codecs::pfor::column;
use tersedb_codecs::Isa;

/// Options of `tersedb bench pfor`.
#[derive(Clone, Debug)]
pub struct Options {
    pub quick: bool,
    pub json: bool,
    pub seed: u64,
    /// Parts to run (fig4, fig5, fig6, fig7, table4, table2); empty = all.
    pub only: Vec<String>,
    /// `--plot DIR`: SVG line charts of Figs. 4, 5 and 6 (those that ran).
    pub plot: Option<std::path::PathBuf>,
}

/// Fig. 4 points: (method, b, exception rate, MB/s).
type Fig4Points = Vec<(String, String, f64, f64)>;
/// Fig. 5 points: (method, exception rate, MB/s).
type Fig5Points = Vec<(String, f64, f64)>;
/// Fig. 6 points: (b, E, formula E', measured E' with even spacing).
type Fig6Points = Vec<(u32, f64, f64, f64)>;

/// The parts, in the order they run.
pub const PARTS: [&str; 6] = ["fig4", "fig5", "fig6", "fig7", "table4", "table2"];

/// Sizes and budgets of one run.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Scale {
    pub budget: Budget,
    /// Values per exception rate (Fig. 4, 5).
    pub rate_values: usize,
    /// Exception-rate step in percent.
    pub rate_step: usize,
    /// Frames per (b, E) point of Fig. 6.
    pub fig6_frames: usize,
    /// Column length of Fig. 7.
    pub fig7_values: usize,
    /// Postings of Table 4.
    pub postings: usize,
    /// LINEITEM rows of Table 2.
    pub rows: usize,
}

impl Scale {
    pub(crate) fn new(quick: bool) -> Scale {
        if quick {
            Scale {
                budget: Budget {
                    min_time: Duration::from_millis(4),
                    rounds: 2,
                },
                // Large enough that the branch predictor cannot learn NAIVE's pattern (at
                // 2^15 values it partly does, and NAIVE stays flat).
                rate_values: 1 << 18,
                rate_step: 25,
                fig6_frames: 256,
                fig7_values: 1 << 21,
                postings: 300_000,
                rows: 60_000,
            }
        } else {
            Scale {
                budget: Budget {
                    min_time: Duration::from_millis(40),
                    rounds: 3,
                },
                rate_values: 1 << 20,
                rate_step: 5,
                fig6_frames: 8192,
                fig7_values: 1 << 25,
                postings: 8_000_000,
                rows: 3_000_000,
            }
        }
    }
}

/// A cell of an output row.
pub(crate) enum Cell {
    S(String),
    /// Number with this many decimals in the text table.
    F(f64, usize),
    I(u64),
    /// JSON `true` / `false`; `yes` / `NO` in the text table.
    B(bool),
    None,
}

/// Prints one table as aligned text, or as one JSON object per row with `"table": name`.
pub(crate) struct Table {
    pub name: &'static str,
    /// (JSON key, text header, text width)
    pub cols: &'static [(&'static str, &'static str, usize)],
    pub json: bool,
}

impl Table {
    pub(crate) fn start(&self, title: &str) {
        if self.json {
            return;
        }
        outln!();
        outln!("{title}");
        let h: Vec<String> = self
            .cols
            .iter()
            .map(|(_, h, w)| format!("{h:>w$}"))
            .collect();
        outln!("{}", h.join(" "));
    }

    pub(crate) fn note(&self, text: &str) {
        if !self.json {
            outln!("  {text}");
        }
    }

    pub(crate) fn row(&self, cells: &[Cell]) {
        if self.json {
            let mut s = format!("{{\"table\":\"{}\"", self.name);
            for ((k, _, _), c) in self.cols.iter().zip(cells) {
                let v = match c {
                    Cell::S(t) => format!("\"{}\"", t.replace('"', "'")),
                    Cell::F(x, _) if x.is_finite() => format!("{x:.6}"),
                    Cell::I(x) => x.to_string(),
                    Cell::B(b) => b.to_string(),
                    _ => "null".into(),
                };
                s.push_str(&format!(",\"{k}\":{v}"));
            }
            s.push('}');
            outln!("{s}");
        } else {
            let t: Vec<String> = self
                .cols
                .iter()
                .zip(cells)
                .map(|((_, _, w), c)| match c {
                    Cell::S(t) => format!("{t:>w$}"),
                    Cell::F(x, p) => format!("{x:>w$.p$}"),
                    Cell::I(x) => format!("{x:>w$}"),
                    Cell::B(b) => format!("{:>w$}", if *b { "yes" } else { "NO" }),
                    Cell::None => format!("{:>w$}", "-"),
                })
                .collect();
            outln!("{}", t.join(" "));
        }
    }
}

pub fn run(opts: &Options) -> Result<(), String> {
    for p in &opts.only {
        if !PARTS.contains(&p.as_str()) {
            return Err(format!(
                "unknown part {p:?} (expected one of {})",
                PARTS.join(", ")
            ));
        }
    }
    let want = |p: &str| opts.only.is_empty() || opts.only.iter().any(|o| o == p);
    let scale = Scale::new(opts.quick);
    if !opts.json {
        outln!(
            "tersedb bench pfor (Zukowski et al., Super-Scalar RAM-CPU Cache Compression): isa {}, seed {}{}",
            Isa::detect(),
            opts.seed,
            if opts.quick { ", quick" } else { "" }
        );
        outln!("  hardware counters (branch / cache misses) are not read by the bench: run it under `perf stat` where they are readable");
    }
    let (mut f4, mut f5, mut f6) = (Vec::new(), Vec::new(), Vec::new());
    if want("fig4") {
        f4 = fig4(opts, &scale)?;
    }
    if want("fig5") {
        f5 = fig5(opts, &scale)?;
    }
    if want("fig6") {
        f6 = fig6(opts, &scale)?;
    }
    if want("fig7") {
        fig7(opts, &scale)?;
    }
    if want("table4") {
        inverted::run(opts, &scale)?;
    }
    if want("table2") {
        tpch::run(opts, &scale)?;
    }
    if let Some(dir) = &opts.plot {
        for p in super::plot::pfor(dir, &f4, &f5, &f6)? {
            // stderr: stdout stays one JSON object per line under --json
            eprintln!("wrote {p}");
        }
    }
    Ok(())
}

fn err(e: impl std::fmt::Display) -> String {
    format!("codec error: {e}")
}

/// `n` values of which a share `rate` (0..=1) are exceptions at random positions: codes uniform in
/// `[0, 255)` (width 8 with NAIVE's reserved code), exceptions uniform in `[2^20, 2^32)`.
pub(crate) fn rated_values(rng: &mut fastrand::Rng, n: usize, rate: f64) -> Vec<u32> {
    (0..n)
        .map(|_| {
            if rng.f64() < rate {
                rng.u32(1 << 20..)
            } else {
                rng.u32(0..255)
            }
        })
        .collect()
}

/// Running sum (wrapping) of `v`: a column whose deltas are `v`.
fn running_sum(v: &[u32]) -> Vec<u32> {
    let mut acc = 0u32;
    v.iter()
        .map(|&d| {
            acc = acc.wrapping_add(d);
            acc
        })
        .collect()
}

fn wrapping_total(v: &[u32]) -> u64 {
    sum(v)
}

/// Decodes every frame of `c` into one cache-resident vector; returns a checksum.
fn decode_column(c: &Column, isa: Isa, buf: &mut [u32; N]) -> u64 {
    let mut check = 0u64;
    for f in 0..c.frames() {
        let n = c.frame_len(f);
        let out = &mut buf[..n];
        if c.decode_frame(isa, f, out).is_err() {
            return u64::MAX;
        }
        black_box(&mut *out);
        check = check.wrapping_add(out[0] as u64);
    }
    check
}

fn decode_naive(nv: &Naive, isa: Isa, buf: &mut [u32; N]) -> u64 {
    let mut check = 0u64;
    for f in 0..nv.frames() {
        let n = N.min(nv.len - f * N);
        let out = &mut buf[..n];
        if nv.decode_frame(isa, f, out).is_none() {
            return u64::MAX;
        }
        black_box(&mut *out);
        check = check.wrapping_add(out[0] as u64);
    }
    check
}

/// Sum of every decoded value (the check before timing).
fn column_sum(c: &Column, isa: Isa) -> Result<u64, String> {
    let mut buf = [0u32; N];
    let mut total = 0u64;
    for f in 0..c.frames() {
        let out = &mut buf[..c.frame_len(f)];
        c.decode_frame(isa, f, out).map_err(err)?;
        total = total.wrapping_add(sum(out));
    }
    Ok(total)
}

fn rates(scale: &Scale) -> Vec<f64> {
    (0..=100)
        .step_by(scale.rate_step)
        .map(|p| p as f64 / 100.0)
        .collect()
}

const FIG4_COLS: &[(&str, &str, usize)] = &[
    ("method", "method", 10),
    ("b", "b", 4),
    ("exception_rate", "E", 5),
    ("measured_rate", "E meas", 7),
    ("mean_bits", "mean b", 6),
    ("bits_per_value", "bits/val", 8),
    ("mb_per_s", "MB/s", 8),
    ("values_per_ns", "val/ns", 7),
];

fn fig4(opts: &Options, scale: &Scale) -> Result<Fig4Points, String> {
    let mut points = Vec::new();
    let t = Table {
        name: "fig4",
        cols: FIG4_COLS,
        json: opts.json,
    };
    t.start(
        "Fig. 4: decompression bandwidth vs exception rate (32-bit values; MB/s of decoded output)",
    );
    t.note(&format!(
        "PDICT: the engine's record chunks of {} values, from a dictionary of {} with the share E outside it; b={}: PDICT at that width (DICT for a chunk of no other value); b=data: the smaller of PDICT at the engine's width and DICT",
        pdict::CHUNK,
        1 << pdict::DICT_BITS,
        pdict::DICT_BITS
    ));
    let isa = Isa::detect();
    let mut rng = fastrand::Rng::with_seed(opts.seed);
    let mut buf = [0u32; N];
    for e in rates(scale) {
        let vals = rated_values(&mut rng, scale.rate_values, e);
        let col = running_sum(&vals);
        let n = vals.len();
        let want_vals = wrapping_total(&vals);
        let want_col = wrapping_total(&col);
        // NAIVE at width 8.
        let nv = Naive::encode(&vals, 8, 0);
        {
            let mut check = 0u64;
            for f in 0..nv.frames() {
                let out = &mut buf[..N.min(n - f * N)];
                nv.decode_frame(isa, f, out)
                    .ok_or("NAIVE: malformed frame")?;
                check = check.wrapping_add(sum(out));
            }
            if check != want_vals {
                return Err("NAIVE decoded wrong values".into());
            }
            let rate = ops_per_sec(scale.budget, n as u64, || decode_naive(&nv, isa, &mut buf));
            let size = nv.codes.len() + 4 * nv.exceptions.len() + 4 * nv.frames();
            points.push(("NAIVE".into(), "8".into(), e, rate * 4.0 / 1e6));
            t.row(&[
                Cell::S("NAIVE".into()),
                Cell::S("8".into()),
                Cell::F(e, 2),
                Cell::F(nv.exceptions.len() as f64 / n as f64, 3),
                Cell::F(8.0, 2),
                Cell::F(size as f64 * 8.0 / n as f64, 2),
                Cell::F(rate * 4.0 / 1e6, 0),
                Cell::F(rate / 1e9, 3),
            ]);
        }
        for (name, delta, data) in [("PFOR", false, &vals), ("PFOR-DELTA", true, &col)] {
            let want = if delta { want_col } else { want_vals };
            for bits in [Some(8), None] {
                let c = Column::encode(data, delta, bits).map_err(err)?;
                if column_sum(&c, isa)? != want {
                    return Err(format!("{name} decoded wrong values"));
                }
                let rate = ops_per_sec(scale.budget, n as u64, || decode_column(&c, isa, &mut buf));
                let mean_b = c.bits.iter().map(|&b| b as f64).sum::<f64>() / c.frames() as f64;
                let b = bits.map_or("data".into(), |b| b.to_string());
                points.push((name.into(), b.clone(), e, rate * 4.0 / 1e6));
                t.row(&[
                    Cell::S(name.into()),
                    Cell::S(b),
                    Cell::F(e, 2),
                    Cell::F(c.exceptions as f64 / n as f64, 3),
                    Cell::F(mean_b, 2),
                    Cell::F(c.size() as f64 * 8.0 / n as f64, 2),
                    Cell::F(rate * 4.0 / 1e6, 0),
                    Cell::F(rate / 1e9, 3),
                ]);
            }
        }
        // PDICT: the same share of values outside a dictionary of 2^DICT_BITS values.
        let dv = pdict::dict_values(&mut rng, n, e, pdict::DICT_BITS);
        let want = wrapping_total(&dv);
        for bits in [Some(pdict::DICT_BITS), None] {
            let dc = pdict::DictColumn::encode(&dv, bits)?;
            if dc.sum()? != want {
                return Err("PDICT decoded wrong values".into());
            }
            let mut words = [0u64; pdict::CHUNK];
            let rate = ops_per_sec(scale.budget, n as u64, || {
                let mut check = 0u64;
                let ok = dc.decode_each(&mut words, |v| {
                    black_box(v);
                    check = check.wrapping_add(v[0]);
                });
                if ok.is_err() {
                    return u64::MAX;
                }
                check
            });
            let b = bits.map_or("data".into(), |b| b.to_string());
            points.push(("PDICT".into(), b.clone(), e, rate * 4.0 / 1e6));
            t.row(&[
                Cell::S("PDICT".into()),
                Cell::S(b),
                Cell::F(e, 2),
                Cell::F(dc.exceptions() as f64 / n as f64, 3),
                Cell::F(dc.mean_bits(), 2),
                Cell::F(dc.size() as f64 * 8.0 / n as f64, 2),
                Cell::F(rate * 4.0 / 1e6, 0),
                Cell::F(rate / 1e9, 3),
            ]);
        }
    }
    Ok(points)
}

const FIG5_COLS: &[(&str, &str, usize)] = &[
    ("method", "method", 10),
    ("exception_rate", "E", 5),
    ("mb_per_s", "MB/s", 8),
    ("values_per_ns", "val/ns", 7),
];

fn fig5(opts: &Options, scale: &Scale) -> Result<Fig5Points, String> {
    let mut points = Vec::new();
    let t = Table {
        name: "fig5",
        cols: FIG5_COLS,
        json: opts.json,
    };
    t.start("Fig. 5: PFOR compression bandwidth vs exception rate (b = 8; MB/s of 32-bit input)");
    t.note("NAIVE / PRED / DC: the paper's first loops; production: tersedb's (bit set); all then run the production LOOP2 and packing");
    let mut rng = fastrand::Rng::with_seed(opts.seed ^ 5);
    let mut out = vec![0u8; column::max_len(N)];
    for e in rates(scale) {
        let vals = rated_values(&mut rng, scale.rate_values, e);
        let n = vals.len();
        // Same bytes as the production encoder before timing.
        let mut want = vec![0u8; column::max_len(N)];
        for chunk in vals.chunks(N) {
            let info = column::encode_with(chunk, 8, 0, &mut want).map_err(err)?;
            for l in Loop1::ALL {
                let size = l.encode(chunk, 8, 0, &mut out).map_err(err)?;
                if out[..size] != want[..info.size] {
                    return Err(format!("{} wrote another frame", l.name()));
                }
            }
        }
        let mut subjects: Vec<(&str, Option<Loop1>)> =
            Loop1::ALL.iter().map(|&l| (l.name(), Some(l))).collect();
        subjects.push(("production", None));
        for (name, l) in subjects {
            let rate = ops_per_sec(scale.budget, n as u64, || {
                let mut check = 0u64;
                for chunk in vals.chunks(N) {
                    let size = match l {
                        Some(l) => l.encode(chunk, 8, 0, &mut out).unwrap_or(0),
                        None => column::encode_with(chunk, 8, 0, &mut out).map_or(0, |i| i.size),
                    };
                    black_box(&mut out);
                    check = check.wrapping_add(size as u64);
                }
                check
            });
            points.push((name.to_string(), e, rate * 4.0 / 1e6));
            t.row(&[
                Cell::S(name.into()),
                Cell::F(e, 2),
                Cell::F(rate * 4.0 / 1e6, 0),
                Cell::F(rate / 1e9, 3),
            ]);
        }
    }
    Ok(points)
}

/// The paper's compulsory-exception formula.
pub(crate) fn formula(e: f64, b: u32) -> f64 {
    if e <= 0.0 {
        return 0.0;
    }
    e.max((128.0 * e - 1.0) / (128.0 * e) * 2f64.powi(-(b as i32)))
}

/// Measured E' of the production encoder at width `b`: `frames` frames of 128 values whose
/// natural exceptions are every `1/e`-th position (`evenly`, the formula's model; `e` a power of
/// two, 1/128..1/2) or at random positions with probability `e`.
pub(crate) fn measure_e(
    rng: &mut fastrand::Rng,
    b: u32,
    e: f64,
    evenly: bool,
    frames: usize,
) -> Result<f64, String> {
    let n = frames * N;
    let gap = if e > 0.0 {
        (1.0 / e).round() as usize
    } else {
        0
    };
    let vals: Vec<u32> = (0..n)
        .map(|i| {
            let exc = if evenly {
                gap > 0 && i % N % gap == 0
            } else {
                rng.f64() < e
            };
            if exc {
                rng.u32(1 << 20..1 << 30)
            } else {
                rng.u32(0..1 << b)
            }
        })
        .collect();
    let c = Column::encode(&vals, false, Some(b)).map_err(err)?;
    if column_sum(&c, Isa::detect())? != sum(&vals) {
        return Err("Fig. 6: decoded wrong values".into());
    }
    Ok(c.exceptions as f64 / n as f64)
}

/// The exception rates of Fig. 6 (natural spacing a power of two: 128 .. 2 positions).
pub(crate) const FIG6_RATES: [f64; 8] = [
    0.0,
    1.0 / 128.0,
    1.0 / 64.0,
    1.0 / 32.0,
    1.0 / 16.0,
    0.125,
    0.25,
    0.5,
];

const FIG6_COLS: &[(&str, &str, usize)] = &[
    ("b", "b", 3),
    ("exception_rate", "E", 7),
    ("formula", "formula E'", 10),
    ("measured_even", "E' even", 8),
    ("difference", "diff", 7),
    ("measured_random", "E' random", 9),
];

fn fig6(opts: &Options, scale: &Scale) -> Result<Fig6Points, String> {
    let mut points = Vec::new();
    let t = Table {
        name: "fig6",
        cols: FIG6_COLS,
        json: opts.json,
    };
    t.start("Fig. 6: compulsory exceptions, E' = max(E, (128E-1)/(128E) * 2^-b) against the production encoder");
    t.note("even: natural exceptions every 1/E positions (the formula's model); random: each value an exception with probability E");
    let mut rng = fastrand::Rng::with_seed(opts.seed ^ 6);
    let mut worst: f64 = 0.0;
    for b in 1..=8 {
        for e in FIG6_RATES {
            let even = measure_e(&mut rng, b, e, true, scale.fig6_frames)?;
            let random = measure_e(&mut rng, b, e, false, scale.fig6_frames)?;
            let f = formula(e, b);
            worst = worst.max((even - f).abs());
            points.push((b, e, f, even));
            t.row(&[
                Cell::I(b as u64),
                Cell::F(e, 4),
                Cell::F(f, 4),
                Cell::F(even, 4),
                Cell::F(even - f, 4),
                Cell::F(random, 4),
            ]);
        }
    }
    t.note(&format!(
        "largest |E' even - formula| = {worst:.4} ({})",
        if worst <= 0.01 {
            "within 0.01"
        } else {
            "MORE than 0.01"
        }
    ));
    Ok(points)
}

const FIG7_COLS: &[(&str, &str, usize)] = &[
    ("method", "method", 12),
    ("granule_values", "values", 9),
    ("granule_kib", "KiB", 7),
    ("mb_per_s", "MB/s", 8),
    ("values_per_ns", "val/ns", 7),
];

fn fig7(opts: &Options, scale: &Scale) -> Result<(), String> {
    let t = Table {
        name: "fig7",
        cols: FIG7_COLS,
        json: opts.json,
    };
    let n = scale.fig7_values;
    t.start(&format!(
        "Fig. 7 / Table 3: SUM over {n} PFOR-compressed values, page-wise (decode a page into RAM, then sum) vs vector-wise (decode into cache, sum); MB/s of decoded values"
    ));
    let isa = Isa::detect();
    let mut rng = fastrand::Rng::with_seed(opts.seed ^ 7);
    let vals = rated_values(&mut rng, n, 0.05);
    let want = sum(&vals);
    let c = Column::encode(&vals, false, None).map_err(err)?;
    t.note(&format!(
        "column: {:.2} bits per value (5% exceptions, width chosen per frame)",
        c.size() as f64 * 8.0 / n as f64
    ));
    // The uncompressed column in RAM, summed: the reference.
    let rate = ops_per_sec(scale.budget, n as u64, || sum(black_box(&vals)));
    t.row(&[
        Cell::S("uncompressed".into()),
        Cell::I(n as u64),
        Cell::I((n * 4 / 1024) as u64),
        Cell::F(rate * 4.0 / 1e6, 0),
        Cell::F(rate / 1e9, 3),
    ]);
    drop(vals);
    let mut granules: Vec<(&str, usize)> = [128, 256, 512, 1024]
        .iter()
        .map(|&v| ("vector-wise", v))
        .collect();
    for p in [1 << 16, 1 << 20, 1 << 23] {
        if p <= n {
            granules.push(("page-wise", p));
        }
    }
    for (name, g) in granules {
        let mut buf = vec![0u32; g];
        let run = |buf: &mut [u32]| {
            if name == "page-wise" {
                page_wise_sum(&c, isa, g, buf)
            } else {
                vector_wise_sum(&c, isa, g, buf)
            }
        };
        if run(&mut buf).map_err(err)? != want {
            return Err(format!("{name} {g}: wrong sum"));
        }
        let rate = ops_per_sec(scale.budget, n as u64, || run(&mut buf).unwrap_or(0));
        t.row(&[
            Cell::S(name.into()),
            Cell::I(g as u64),
            Cell::I((g * 4 / 1024) as u64),
            Cell::F(rate * 4.0 / 1e6, 0),
            Cell::F(rate / 1e9, 3),
        ]);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The check: for every width 1..8, the measured E' of the production encoder
    /// (exceptions spread evenly, the formula's model) is within 0.01 of the formula.
    #[test]
    fn compulsory_exceptions_follow_the_formula() {
        let mut rng = fastrand::Rng::with_seed(1);
        for b in 1..=8 {
            for e in FIG6_RATES {
                let m = measure_e(&mut rng, b, e, true, 64).unwrap();
                let f = formula(e, b);
                assert!(
                    (m - f).abs() <= 0.01,
                    "b={b} E={e}: measured {m}, formula {f}"
                );
            }
        }
    }

    /// Random positions need more compulsory exceptions than the formula at small widths
    /// (gaps longer than 2^b are likelier than with even spacing): the bench's second column.
    #[test]
    fn random_positions_exceed_the_formula_at_width_one() {
        let mut rng = fastrand::Rng::with_seed(2);
        let m = measure_e(&mut rng, 1, 0.25, false, 256).unwrap();
        assert!(m > formula(0.25, 1) + 0.02, "{m}");
    }

    #[test]
    fn every_part_runs_quickly_and_unknown_parts_are_errors() {
        let o = Options {
            quick: true,
            json: true,
            seed: 3,
            only: vec!["fig6".into()],
            plot: None,
        };
        run(&o).unwrap();
        let bad = Options {
            only: vec!["fig9".into()],
            ..o
        };
        assert!(run(&bad).unwrap_err().contains("fig9"));
    }
}
