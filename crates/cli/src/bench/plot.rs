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

/// One line of a [`LineChart`]: `(x, y)` points in x order.
pub struct Line {
    pub name: String,
    pub points: Vec<(f64, f64)>,
    /// Drawn as circles at the points instead of a line (measurements beside a model).
    pub markers: bool,
    /// Index into plotters' `Palette99`: lines sharing a colour belong together.
    pub color: usize,
}

/// A chart of lines over a numeric x axis (the patched-FOR paper's Figs. 4-6).
pub struct LineChart<'a> {
    pub title: &'a str,
    pub x_desc: &'a str,
    pub y_desc: &'a str,
    pub lines: Vec<Line>,
}

/// Writes `chart` as SVG to `path` (linear axes from 0).
pub fn write_lines(path: &Path, chart: &LineChart) -> Result<(), String> {
    let pts = || chart.lines.iter().flat_map(|l| l.points.iter().copied());
    let (x_hi, y_hi) = pts()
        .filter(|(x, y)| x.is_finite() && y.is_finite())
        .fold((0f64, 0f64), |(a, b), (x, y)| (a.max(x), b.max(y)));
    if x_hi <= 0.0 || y_hi <= 0.0 {
        return Err(err(format!("{}: nothing to plot", path.display())));
    }
    let root = SVGBackend::new(path, SIZE).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let mut c = ChartBuilder::on(&root)
        .caption(chart.title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(0.0..x_hi * 1.02, 0.0..y_hi * 1.1)
        .map_err(err)?;
    c.configure_mesh()
        .x_desc(chart.x_desc)
        .y_desc(chart.y_desc)
        .draw()
        .map_err(err)?;
    for l in &chart.lines {
        let color = Palette99::pick(l.color).to_rgba();
        let pts = l
            .points
            .iter()
            .copied()
            .filter(|(x, y)| x.is_finite() && y.is_finite());
        if l.markers {
            c.draw_series(pts.map(|p| Circle::new(p, 4, color.filled())))
                .map_err(err)?
                .label(l.name.as_str())
                .legend(move |(x, y)| Circle::new((x + 5, y), 4, color.filled()));
        } else {
            c.draw_series(LineSeries::new(pts, color.stroke_width(2)))
                .map_err(err)?
                .label(l.name.as_str())
                .legend(move |(x, y)| {
                    PathElement::new([(x, y), (x + 14, y)], color.stroke_width(2))
                });
        }
    }
    c.configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperRight)
        .draw()
        .map_err(err)?;
    root.present().map_err(err)
}

/// `bench pfor`'s charts, each written when its part ran (empty points: not written).
/// `fig4`: (method, b, exception rate, MB/s) per row; `fig5`: (method, exception rate, MB/s);
/// `fig6`: (b, E, formula E', measured E' with even spacing).
pub fn pfor(
    dir: &Path,
    fig4: &[(String, String, f64, f64)],
    fig5: &[(String, f64, f64)],
    fig6: &[(u32, f64, f64, f64)],
) -> Result<Vec<String>, String> {
    create_dir(dir)?;
    let mut written = Vec::new();
    // Lines in order of first appearance, one colour each.
    fn group<T>(
        rows: &[T],
        name: impl Fn(&T) -> String,
        xy: impl Fn(&T) -> (f64, f64),
    ) -> Vec<Line> {
        let mut lines: Vec<Line> = Vec::new();
        for r in rows {
            let n = name(r);
            match lines.iter_mut().find(|l| l.name == n) {
                Some(l) => l.points.push(xy(r)),
                None => lines.push(Line {
                    color: lines.len(),
                    name: n,
                    points: vec![xy(r)],
                    markers: false,
                }),
            }
        }
        lines
    }
    if !fig4.is_empty() {
        let p = dir.join("pfor_fig4_decompression.svg");
        write_lines(
            &p,
            &LineChart {
                title: "Fig. 4: decompression bandwidth vs exception rate",
                x_desc: "exception rate (%)",
                y_desc: "MB/s of decoded 32-bit values",
                lines: group(
                    fig4,
                    |r| format!("{} b={}", r.0, r.1),
                    |r| (r.2 * 100.0, r.3),
                ),
            },
        )?;
        written.push(p.display().to_string());
    }
    if !fig5.is_empty() {
        let p = dir.join("pfor_fig5_compression.svg");
        write_lines(
            &p,
            &LineChart {
                title: "Fig. 5: PFOR compression bandwidth vs exception rate (b = 8)",
                x_desc: "exception rate (%)",
                y_desc: "MB/s of 32-bit input",
                lines: group(fig5, |r| r.0.clone(), |r| (r.1 * 100.0, r.2)),
            },
        )?;
        written.push(p.display().to_string());
    }
    if !fig6.is_empty() {
        let p = dir.join("pfor_fig6_compulsory.svg");
        let mut lines = Vec::new();
        for b in 1..=8u32 {
            let rows: Vec<_> = fig6.iter().filter(|r| r.0 == b).collect();
            if rows.is_empty() {
                continue;
            }
            let color = lines.len() / 2;
            lines.push(Line {
                name: format!("b={b} formula"),
                points: rows.iter().map(|r| (r.1, r.2)).collect(),
                markers: false,
                color,
            });
            lines.push(Line {
                name: format!("b={b} measured"),
                points: rows.iter().map(|r| (r.1, r.3)).collect(),
                markers: true,
                color,
            });
        }
        write_lines(
            &p,
            &LineChart {
                title: "Fig. 6: effective exception rate E' with compulsory exceptions",
                x_desc: "exception rate E of the data",
                y_desc: "E' (exceptions stored / values)",
                lines,
            },
        )?;
        written.push(p.display().to_string());
    }
    Ok(written)
}
