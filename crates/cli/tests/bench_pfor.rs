//! Pins `tersedb bench pfor` and `tersedb bench --block-size A,B` end to end: the JSON rows name
//! their table, the compulsory-exception figure agrees with the paper's formula, Table 2 has the
//! engine's automatic record choice for every column (checked against the column's sum) and no
//! PDICT numbers, and the block-size comparison runs every codec at each size or says that the
//! codec cannot take it.

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
    // 15 columns x (PFOR, PFOR-DELTA, engine auto, zstd)
    assert_eq!(t2.len(), 60, "{out}");
    assert!(t2.iter().all(|l| field(l, "ratio") > 1.0));
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
    assert!(
        !out.contains("PDICT\""),
        "no PDICT numbers before PDICT exists"
    );
    let o = tersedb(&["bench", "pfor", "--only", "fig9"]);
    assert!(!o.status.success());
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
