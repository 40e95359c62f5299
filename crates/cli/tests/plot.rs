//! Pins `--plot DIR`: the store benchmark writes its charts, each a valid SVG that renders to
//! pixels (resvg, no fonts: text is skipped, bars are drawn) with one bar per codec and
//! operation in that codec's colour, plus its legend swatch; `bench pfor` writes Figs. 4-6 of
//! the patched-FOR paper as line charts with one line per variant and a point per measured
//! exception rate. Set TERSEDB_KEEP_PLOTS=1 to keep the SVGs and their PNG renderings (the path
//! is printed) for a person to look at.

use std::process::Command;

#[test]
fn store_bench_plots_render_with_one_bar_per_codec_and_operation() {
    let dir = std::env::temp_dir().join(format!("tersedb-plot-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let o = Command::new(env!("CARGO_BIN_EXE_tersedb"))
        .args([
            "bench",
            "--keys",
            "20000",
            "--codecs",
            "none,bp128,simd-for",
            "--plot",
        ])
        .arg(&dir)
        .output()
        .expect("run tersedb");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for name in ["bytes_per_key.svg", "speed_vs_none.svg"] {
        let svg = std::fs::read_to_string(dir.join(name)).unwrap();
        let tree = resvg::usvg::Tree::from_str(&svg, &resvg::usvg::Options::default())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let size = tree.size().to_int_size();
        assert_eq!((size.width(), size.height()), (960, 540));
        let mut pix = resvg::tiny_skia::Pixmap::new(size.width(), size.height()).unwrap();
        resvg::render(
            &tree,
            resvg::tiny_skia::Transform::default(),
            &mut pix.as_mut(),
        );
        pix.save_png(dir.join(name.replace(".svg", ".png")))
            .unwrap();
        // Series colours: plotters' Palette99 0 and 1 (#E6194B, #3CB44B).
        let painted = |rgb: [u8; 3]| {
            pix.pixels()
                .iter()
                .filter(|p| [p.red(), p.green(), p.blue()] == rgb && p.alpha() == 255)
                .count()
        };
        let (red, green) = (painted([0xE6, 0x19, 0x4B]), painted([0x3C, 0xB4, 0x4B]));
        let rects = |fill: &str| {
            svg.lines()
                .filter(|l| l.starts_with("<rect") && l.contains(&format!("fill=\"{fill}\"")))
                .count()
        };
        if name == "speed_vs_none.svg" {
            // bp128 and simd-for against none: 5 operations each, plus a legend swatch.
            assert_eq!(rects("#E6194B"), 6, "{name}");
            assert_eq!(rects("#3CB44B"), 6, "{name}");
            assert!(
                svg.contains("<polyline") || svg.contains("<path"),
                "reference line"
            );
        } else {
            // none, bp128, simd-for: one bar each, plus a legend swatch.
            assert_eq!(rects("#E6194B"), 2, "{name}");
            assert_eq!(rects("#3CB44B"), 2, "{name}");
        }
        assert!(
            red > 200 && green > 200,
            "{name}: {red} {green} pixels of the bars"
        );
    }
    if std::env::var_os("TERSEDB_KEEP_PLOTS").is_some() {
        eprintln!("plots kept in {}", dir.display());
    } else {
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// Renders `svg` (960 x 540) to pixels, saved beside it as PNG.
fn render(svg: &str, png: &std::path::Path) -> resvg::tiny_skia::Pixmap {
    let tree = resvg::usvg::Tree::from_str(svg, &resvg::usvg::Options::default())
        .unwrap_or_else(|e| panic!("{}: {e}", png.display()));
    let size = tree.size().to_int_size();
    assert_eq!((size.width(), size.height()), (960, 540));
    let mut pix = resvg::tiny_skia::Pixmap::new(size.width(), size.height()).unwrap();
    resvg::render(
        &tree,
        resvg::tiny_skia::Transform::default(),
        &mut pix.as_mut(),
    );
    pix.save_png(png).unwrap();
    pix
}

/// The `points` attributes of the 2-pixel polylines stroked in `color` (data lines and their
/// legend entries).
fn lines_of<'a>(svg: &'a str, color: &str) -> Vec<&'a str> {
    svg.lines()
        .filter(|l| {
            l.starts_with("<polyline")
                && l.contains(&format!("stroke=\"{color}\""))
                && l.contains("stroke-width=\"2\"")
        })
        .map(|l| {
            let after = l.split("points=\"").nth(1).unwrap_or("");
            after.split('"').next().unwrap_or("")
        })
        .collect()
}

#[test]
fn pfor_plots_draw_one_line_per_variant_and_rate() {
    let dir = std::env::temp_dir().join(format!("tersedb-plot-pfor-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let o = Command::new(env!("CARGO_BIN_EXE_tersedb"))
        .args([
            "bench",
            "pfor",
            "--quick",
            "--json",
            "--only",
            "fig4,fig5,fig6",
            "--plot",
        ])
        .arg(&dir)
        .output()
        .expect("run tersedb");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // --json output stays JSON: the file names go to stderr.
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.lines().all(|l| l.starts_with('{')), "{out}");
    // Palette99's first colours, one per line in order of appearance.
    const COLORS: [&str; 8] = [
        "#E6194B", "#3CB44B", "#FFE119", "#0082C8", "#F58230", "#911EB4", "#46F0F0", "#F032E6",
    ];
    // --quick: exception rates 0, 25, 50, 75, 100% -> 5 points per line.
    for (name, variants) in [
        ("pfor_fig4_decompression.svg", 7),
        ("pfor_fig5_compression.svg", 4),
    ] {
        let svg = std::fs::read_to_string(dir.join(name)).unwrap();
        let pix = render(&svg, &dir.join(name.replace(".svg", ".png")));
        for (i, c) in COLORS.iter().enumerate() {
            let lines = lines_of(&svg, c);
            if i < variants {
                assert_eq!(lines.len(), 2, "{name} {c}: a line and its legend entry");
                let pts = lines.iter().map(|p| p.split_whitespace().count()).max();
                assert_eq!(pts, Some(5), "{name} {c}: {lines:?}");
            } else {
                assert!(lines.is_empty(), "{name}: only {variants} variants");
            }
        }
        let red = pix
            .pixels()
            .iter()
            .filter(|p| [p.red(), p.green(), p.blue()] == [0xE6, 0x19, 0x4B])
            .count();
        assert!(red > 100, "{name}: {red} pixels of the first line");
    }
    // Fig. 6: per width b = 1..8 the formula as a line and the measurements as points (8
    // exception rates each, plus a legend dot), sharing the colour.
    let name = "pfor_fig6_compulsory.svg";
    let svg = std::fs::read_to_string(dir.join(name)).unwrap();
    render(&svg, &dir.join("pfor_fig6_compulsory.png"));
    for c in COLORS {
        let formula = lines_of(&svg, c);
        assert_eq!(formula.len(), 2, "{c}: {formula:?}");
        let pts = formula.iter().map(|p| p.split_whitespace().count()).max();
        assert_eq!(pts, Some(8), "{c}");
        let dots = svg
            .lines()
            .filter(|l| l.starts_with("<circle") && l.contains(&format!("fill=\"{c}\"")))
            .count();
        assert_eq!(dots, 9, "{c}: 8 measured rates and a legend dot");
    }
    if std::env::var_os("TERSEDB_KEEP_PLOTS").is_some() {
        eprintln!("plots kept in {}", dir.display());
    } else {
        let _ = std::fs::remove_dir_all(&dir);
    }
}
