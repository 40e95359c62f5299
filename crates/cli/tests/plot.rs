//! Pins `--plot DIR`: the store benchmark writes its charts, each a valid SVG that renders to
//! pixels (resvg, no fonts: text is skipped, bars are drawn) with one bar per codec and
//! operation in that codec's colour, plus its legend swatch. Set TERSEDB_KEEP_PLOTS=1 to keep
//! the SVGs and their PNG renderings (the path is printed) for a person to look at.

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
