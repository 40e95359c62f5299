//! `--plot DIR`: SVG bar charts of the benchmarks, drawn with `plotters` (SVG backend only).
//!
//! Grouped bars in the style of the Upscaledb paper's Fig. 9 and 10 (one group per operation,
//! one bar per codec, each relative to the uncompressed store), the same per peer (the peer's
//! time over tersedb's: above 1, tersedb is faster), and bytes per key with the entropy bound as
//! a line. Ratios use a log scale, so 2x faster and 2x slower are bars of the same length.
//!
//! ```text
//!  x slots:  | s0 s1 .. sk-1 gap | s0 s1 .. gap | ...     one category = k bars + one gap slot
//! ```

use plotters::coord::types::RangedCoordi32;
use plotters::prelude::*;
use std::path::Path;

/// One bar per category.
pub struct Series {
    pub name: String,
    pub values: Vec<f64>,
}

/// A grouped bar chart.
pub struct Chart<'a> {
    pub title: &'a str,
    pub y_desc: &'a str,
    pub categories: Vec<String>,
    pub series: Vec<Series>,
    /// A horizontal line and its legend (1.0 for ratios; the entropy bound for sizes).
    pub reference: Option<(f64, String)>,
    pub log: bool,
}

/// Width and height of every chart, in SVG pixels.
pub const SIZE: (u32, u32) = (960, 540);

fn err(e: impl std::fmt::Display) -> String {
    format!("plot: {e}")
}

/// Writes `chart` as SVG to `path`.
pub fn write(path: &Path, chart: &Chart) -> Result<(), String> {
    let k = chart.series.len().max(1) as i32;
    let slots = chart.categories.len() as i32 * (k + 1);
    let values = chart
        .series
        .iter()
        .flat_map(|s| s.values.iter().copied())
        .chain(chart.reference.iter().map(|r| r.0))
        .filter(|v| v.is_finite() && *v > 0.0);
    let (lo, hi) = values.fold((f64::MAX, 0f64), |(a, b), v| (a.min(v), b.max(v)));
    if hi <= 0.0 {
        return Err(err(format!("{}: nothing to plot", path.display())));
    }
    let root = SVGBackend::new(path, SIZE).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let mut b = ChartBuilder::on(&root);
    b.caption(chart.title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70);
    let centre = |x: i32| x % (k + 1) == k / 2;
    let label = |x: &i32| {
        let i = (*x / (k + 1)) as usize;
        if centre(*x) {
            chart.categories.get(i).cloned().unwrap_or_default()
        } else {
            String::new()
        }
    };
    if chart.log {
        let base = (lo / 2.0).min(0.5);
        let mut c = b
            .build_cartesian_2d(0..slots, (base..hi * 2.0).log_scale())
            .map_err(err)?;
        c.configure_mesh()
            .disable_x_mesh()
            .x_labels(slots as usize + 1)
            .x_label_formatter(&label)
            .y_desc(chart.y_desc)
            .draw()
            .map_err(err)?;
        draw(&mut c, chart, slots, base)?;
        c.configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .position(SeriesLabelPosition::UpperRight)
            .draw()
            .map_err(err)?;
    } else {
        let mut c = b
            .build_cartesian_2d(0..slots, 0.0..hi * 1.15)
            .map_err(err)?;
        c.configure_mesh()
            .disable_x_mesh()
            .x_labels(slots as usize + 1)
            .x_label_formatter(&label)
            .y_desc(chart.y_desc)
            .draw()
            .map_err(err)?;
        draw(&mut c, chart, slots, 0.0)?;
        c.configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .position(SeriesLabelPosition::UpperRight)
            .draw()
            .map_err(err)?;
    }
    root.present().map_err(err)
}

/// The bars (from `base` up) and the reference line, with their legend entries.
fn draw<'a, Y>(
    c: &mut ChartContext<'a, SVGBackend<'a>, Cartesian2d<RangedCoordi32, Y>>,
    chart: &Chart,
    slots: i32,
    base: f64,
) -> Result<(), String>
where
    Y: Ranged<ValueType = f64>,
{
    let k = chart.series.len().max(1) as i32;
    for (si, s) in chart.series.iter().enumerate() {
        let color = Palette99::pick(si).to_rgba();
        c.draw_series(
            s.values
                .iter()
                .enumerate()
                .filter(|(_, v)| v.is_finite())
                .map(|(ci, &v)| {
                    let x = ci as i32 * (k + 1) + si as i32;
                    Rectangle::new([(x, base), (x + 1, v.max(base))], color.filled())
                }),
        )
        .map_err(err)?
        .label(s.name.as_str())
        .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 10, y + 5)], color.filled()));
    }
    if let Some((v, name)) = &chart.reference {
        c.draw_series(LineSeries::new(
            [(0, *v), (slots, *v)],
            BLACK.stroke_width(2),
        ))
        .map_err(err)?
        .label(name.as_str())
        .legend(|(x, y)| PathElement::new([(x, y), (x + 14, y)], BLACK.stroke_width(2)));
    }
    Ok(())
}

fn create_dir(dir: &Path) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))
}

/// The store benchmark's charts: bytes per key per codec, and each operation's speed relative
/// to `none` (the paper's Fig. 9 and 10: above 1, the codec is faster than no compression).
/// `rows`: (codec, bytes per key, [insert, lookup, cursor, SUM, AVG] seconds).
pub fn store(
    dir: &Path,
    label: &str,
    rows: &[(String, f64, [f64; 5])],
) -> Result<Vec<String>, String> {
    create_dir(dir)?;
    let mut written = Vec::new();
    let p = dir.join("bytes_per_key.svg");
    write(
        &p,
        &Chart {
            title: &format!("bytes per key on disk, {label}"),
            y_desc: "bytes per key",
            categories: vec!["bytes/key".into()],
            series: rows
                .iter()
                .map(|r| Series {
                    name: r.0.clone(),
                    values: vec![r.1],
                })
                .collect(),
            reference: None,
            log: false,
        },
    )?;
    written.push(p.display().to_string());
    if let Some(base) = rows.iter().find(|r| r.0 == "none") {
        let p = dir.join("speed_vs_none.svg");
        write(
            &p,
            &Chart {
                title: &format!(
                    "speed relative to no compression (time of none / time of codec), {label}"
                ),
                y_desc: "x faster than none",
                categories: ["insert", "lookup", "cursor", "SUM", "AVG>max/2"]
                    .map(String::from)
                    .to_vec(),
                series: rows
                    .iter()
                    .filter(|r| r.0 != "none")
                    .map(|r| Series {
                        name: r.0.clone(),
                        values: (0..5).map(|i| base.2[i] / r.2[i].max(1e-12)).collect(),
                    })
                    .collect(),
                reference: Some((1.0, "none".into())),
                log: true,
            },
        )?;
        written.push(p.display().to_string());
    }
    Ok(written)
}

/// The peers benchmark's charts: bytes per key per store with the entropy bound, and per
/// tersedb codec each peer's time over tersedb's per operation.
#[cfg(feature = "peers")]
pub fn peers(
    dir: &Path,
    rows: &[crate::bench::peers::Row],
    n: u64,
    label: &str,
    bound: f64,
) -> Result<Vec<String>, String> {
    use tersedb_bench_peers::Figures;
    create_dir(dir)?;
    let mut written = Vec::new();
    let p = dir.join("peers_bytes_per_key.svg");
    write(
        &p,
        &Chart {
            title: &format!("bytes per key on disk after a clean close, {n} keys ({label})"),
            y_desc: "bytes per key",
            categories: vec!["ascending load".into(), "random-order load".into()],
            series: rows
                .iter()
                .map(|r| Series {
                    name: r.name.clone(),
                    values: vec![
                        r.f.bytes_ascending as f64 / n as f64,
                        r.f.bytes_random as f64 / n as f64,
                    ],
                })
                .collect(),
            reference: (bound > 0.0).then(|| (bound, format!("entropy bound {bound:.3}"))),
            log: true,
        },
    )?;
    written.push(p.display().to_string());
    type Op = (&'static str, fn(&Figures) -> f64);
    let ops: [Op; 7] = [
        ("load", |f| f.load_ascending_s),
        ("load random", |f| f.load_random_s),
        ("lookup", |f| f.lookup_s),
        ("absent", |f| f.absent_s),
        ("scan", |f| f.scan_s),
        ("range COUNT", |f| f.range_count_s),
        ("range SUM", |f| f.range_sum_s),
    ];
    for t in rows.iter().filter(|r| r.name.starts_with("tersedb-")) {
        let peers: Vec<&crate::bench::peers::Row> = rows
            .iter()
            .filter(|r| !r.name.starts_with("tersedb-"))
            .collect();
        if peers.is_empty() {
            break;
        }
        let p = dir.join(format!("peers_speed_{}.svg", t.name));
        write(
            &p,
            &Chart {
                title: &format!(
                    "peer time / {} time (above 1: tersedb faster), {n} keys ({label})",
                    t.name
                ),
                y_desc: "x slower than tersedb",
                categories: ops.iter().map(|o| o.0.to_string()).collect(),
                series: peers
                    .iter()
                    .map(|r| Series {
                        name: r.name.clone(),
                        values: ops
                            .iter()
                            .map(|o| o.1(&r.f) / o.1(&t.f).max(1e-12))
                            .collect(),
                    })
                    .collect(),
                reference: Some((1.0, t.name.clone())),
                log: true,
            },
        )?;
        written.push(p.display().to_string());
    }
    Ok(written)
}
