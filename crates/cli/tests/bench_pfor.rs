//! Pins `tersedb bench pfor` and `tersedb bench --block-size A,B` end to end: the JSON rows name
//! their table, the compulsory-exception figure agrees with the paper's formula, Fig. 4 has a
//! PDICT row per exception rate whose exceptions follow the rate, Table 2 has the engine's
//! automatic record choice and its PDICT for every column (each checked against the column),
//! and the block-size comparison runs every codec at each size or says that the codec cannot
//! take it.

use std::process::{Command, Output};

fn tersedb(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tersedb"))
        .args(args)
        .output()
        .expect("run tersedb")
}

fn field(line: &str, key: &str) -> f64 {
    let at = line.find(&format!("\"{key}\":")).expect(key) + key.len() + 3;
    let rest = &line[at..];
    let end = rest.find([',', '}']).unwrap();
    rest[..end].parse().unwrap()
}

#[test]
fn pfor_fig6_and_table2_rows() {
    let o = tersedb(&[
        "bench",
        "pfor",
        "--quick",
        "--json",
        "--only",
        "fig6,table2",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8_lossy(&o.stdout);
    let fig6: Vec<&str> = out
        .lines()
        .filter(|l| l.contains("\"table\":\"fig6\""))
        .collect();
    assert_eq!(fig6.len(), 8 * 8, "{out}");
    for l in &fig6 {
        assert!(field(l, "difference").abs() <= 0.01, "{l}");
    }
    let t2: Vec<&str> = out
        .lines()
        .filter(|l| l.contains("\"table\":\"table2\""))
        .collect();
    // 15 columns x (PFOR, PFOR-DELTA, PDICT, engine auto, zstd)
    assert_eq!(t2.len(), 75, "{out}");
    // Every method but PDICT beats the raw column everywhere; PDICT's chunk dictionaries cost
    // more than they save where a chunk's 255 values are nearly all distinct.
    assert!(t2
        .iter()
        .filter(|l| !l.contains("\"method\":\"PDICT\""))
        .all(|l| field(l, "ratio") > 1.0));
    let auto: Vec<&&str> = t2
        .iter()
        .filter(|l| l.contains("\"method\":\"engine auto\""))
        .collect();
    assert_eq!(auto.len(), 15, "{out}");
    // The engine picks FOR or DICT per chunk: flags of 2-7 values take at most 3 bits each
    // (ratio above 8), and no column is stored raw.
    for col in ["l_returnflag", "l_linestatus", "l_shipmode", "l_linenumber"] {
        let l = auto
            .iter()
            .find(|l| l.contains(&format!("\"column\":\"{col}\"")))
            .unwrap();
        assert!(field(l, "ratio") > 8.0, "{l}");
    }
    assert!(auto.iter().all(|l| field(l, "decode_mb_per_s") > 0.0));
    let pdict = |col: &str| {
        let l = t2
            .iter()
            .find(|l| l.contains(&format!("\"column\":\"{col}\",\"method\":\"PDICT\"")))
            .unwrap_or_else(|| panic!("no PDICT row for {col}: {out}"));
        assert!(field(l, "decode_mb_per_s") > 0.0, "{l}");
        field(l, "ratio")
    };
    // Low-cardinality columns: a dictionary of 2-11 values per chunk, 1-4 bits a value.
    for col in [
        "l_returnflag",
        "l_linestatus",
        "l_shipmode",
        "l_shipinstruct",
        "l_linenumber",
        "l_discount",
    ] {
        assert!(pdict(col) > 4.0, "{col}: {}", pdict(col));
    }
    // 50 values a chunk: 6-bit codes and a dictionary of 200 bytes.
    assert!(pdict("l_quantity") > 2.0);
    // Nearly distinct values: the dictionary is the column again, plus codes.
    assert!(pdict("l_partkey") < 1.0);
    let o = tersedb(&["bench", "pfor", "--only", "fig9"]);
    assert!(!o.status.success());
}

#[test]
fn pfor_fig4_has_pdict_beside_pfor() {
    let o = tersedb(&["bench", "pfor", "--quick", "--json", "--only", "fig4"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8_lossy(&o.stdout);
    let rows: Vec<&str> = out
        .lines()
        .filter(|l| l.contains("\"table\":\"fig4\""))
        .collect();
    // --quick: rates 0, 25, 50, 75, 100% x (NAIVE, PFOR x 2, PFOR-DELTA x 2, PDICT x 2)
    assert_eq!(rows.len(), 5 * 7, "{out}");
    let pdict = |b: &str| -> Vec<&str> {
        let key = format!("\"method\":\"PDICT\",\"b\":\"{b}\"");
        rows.iter().filter(|l| l.contains(&key)).copied().collect()
    };
    let (fixed, data) = (pdict("4"), pdict("data"));
    assert_eq!((fixed.len(), data.len()), (5, 5), "{out}");
    for l in fixed.iter().chain(&data) {
        assert!(field(l, "mb_per_s") > 0.0, "{l}");
        assert!(field(l, "mean_bits") <= 8.0, "{l}");
    }
    // No exceptions: every chunk a plain dictionary of 16 values in 4 bits (but the last, of
    // 2^18 mod 255 = 4 values).
    let four = |l: &str| (field(l, "mean_bits") - 4.0).abs() < 0.01;
    for l in [fixed[0], data[0]] {
        assert_eq!(field(l, "measured_rate"), 0.0, "{l}");
        assert!(four(l), "{l}");
    }
    // At b = 4 the values outside the dictionary are the exceptions, at every rate (at 100%
    // each chunk's 16 coded values are some of those).
    for (l, e) in fixed.iter().zip([0.0, 0.25, 0.5, 0.75, 1.0]) {
        let m = field(l, "measured_rate");
        assert!(m <= e + 0.01 && m >= e - 16.0 / 255.0 - 0.01, "{l}");
        assert!(four(l), "{l}");
    }
    // With b from the data, coding a value seen once costs less than listing it: the engine
    // leaves fewer exceptions than b = 4 does, and never a larger column.
    for (d, f) in data.iter().zip(&fixed) {
        assert!(
            field(d, "measured_rate") <= field(f, "measured_rate"),
            "{d}"
        );
        assert!(
            field(d, "bits_per_value") <= field(f, "bits_per_value"),
            "{d}"
        );
    }
}

#[test]
fn block_sizes_run_every_codec_at_each_size() {
    let o = tersedb(&[
        "bench",
        "--block-size",
        "64,256",
        "--keys",
        "3000",
        "--codecs",
        "bp128,vbyte",
        "--json",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8_lossy(&o.stdout);
    let rows: Vec<&str> = out.lines().collect();
    assert_eq!(rows.len(), 5, "{out}");
    assert!(rows[0].contains("\"codec\":\"none\""));
    assert!(out.contains("\"codec\":\"bp128\",\"block_size\":64,\"supported\":true"));
    assert!(out.contains(
        "\"codec\":\"bp128\",\"block_size\":256,\"supported\":false,\"max_block_keys\":129"
    ));
    assert!(out.contains("\"codec\":\"vbyte\",\"block_size\":256,\"supported\":true"));
    // Bigger blocks: fewer block headers, never more bytes per key for VByte.
    let bpk = |size: &str| {
        field(
            rows.iter()
                .find(|l| l.contains("\"vbyte\"") && l.contains(&format!("\"block_size\":{size},")))
                .unwrap(),
            "bytes_per_key",
        )
    };
    assert!(bpk("256") <= bpk("64"), "{out}");
    let o = tersedb(&["bench", "--block-size", "128,256", "--queries"]);
    assert!(!o.status.success());
}
