//! Pins `tersedb bench strings --sweep ...` and `--dataset lineitem`, the parameter sweeps and
//! the TPC-H rows of Gao et al., "Revisiting B-tree Compression" (§4.1 Fig. 10, §4.3 Fig. 13,
//! §4.4 Fig. 14, §5.1 Figs. 19-20): every point of a sweep is a verified run with a JSON line
//! per scheme, and each sweep moves what its parameter must move: longer keys take more bytes
//! and leaves, and Tail compression and PkB gain on them (the study's §4.3); larger pages make
//! fewer leaves and Tail's branches wider (Table 4); each byte more of PkB's partial key costs
//! exactly one byte per key in the leaves; whole LINEITEM rows default to 4 KiB pages and read
//! one leaf per lookup on disk. Also the refusals.

mod common;
use common::{field, num};
use std::collections::HashMap;
use std::path::PathBuf;
use std::process::{Command, Output};

fn tersedb(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tersedb"))
        .args(args)
        .output()
        .expect("run tersedb")
}

/// A directory on the target's file system (the system's temp dir may be a tmpfs without
/// O_DIRECT).
fn dir(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("bench-strings-sweep-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

const SCHEMES: [&str; 8] = [
    "none",
    "head",
    "tail",
    "head-tail",
    "db2",
    "wiredtiger",
    "myisam",
    "pkb",
];

/// Runs `bench strings --json ARGS`; returns the lines by (sweep value or 0, scheme) after checking that
/// each is verified and has `keys` keys, and that no (value, scheme) comes twice.
fn run(args: &[&str], keys: f64) -> HashMap<(u64, String), String> {
    let mut all = vec!["bench", "strings", "--json"];
    all.extend_from_slice(args);
    let o = tersedb(&all);
    assert!(
        o.status.success(),
        "{all:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    let rows: HashMap<(u64, String), String> = out
        .lines()
        .map(|l| {
            assert!(l.ends_with("\"verified\":true}"), "{l}");
            assert_eq!(num(l, "keys"), keys, "{l}");
            for f in ["bytes_per_key", "compression_ratio", "leaf_nodes"] {
                assert!(num(l, f) > 0.0, "{f}: {l}");
            }
            // a run without a sweep has no value: 0
            let value = if l.contains("\"value\":") {
                num(l, "value") as u64
            } else {
                0
            };
            ((value, field(l, "scheme").to_string()), l.to_string())
        })
        .collect();
    assert_eq!(rows.len(), out.lines().count(), "a line twice: {out}");
    rows
}

#[test]
fn key_length_sweep_longer_keys_cost_more_and_favour_tail_and_pkb() {
    let rows = run(
        &["--sweep", "key-length", "--quick", "--keys", "3000"],
        3000.0,
    );
    let lens = [8u64, 16, 32, 64, 128, 256];
    assert_eq!(rows.len(), lens.len() * SCHEMES.len());
    let r = |len: u64, s: &str, f: &str| {
        let l = rows
            .get(&(len, s.to_string()))
            .unwrap_or_else(|| panic!("no {s} at {len}"));
        assert_eq!(field(l, "sweep"), "key-length", "{l}");
        // one page size for the whole sweep: the smallest holding 256-byte keys
        assert_eq!(field(l, "page_size"), "4096", "{l}");
        assert!(field(l, "dataset").contains(&format!("len={len}")), "{l}");
        num(l, f)
    };
    for w in lens.windows(2) {
        let (a, b) = (w[0], w[1]);
        assert!(r(b, "none", "bytes_per_key") > r(a, "none", "bytes_per_key"));
        assert!(r(b, "none", "leaf_nodes") > r(a, "none", "leaf_nodes"));
        // PkB's header is a fixed cost: the longer the key, the smaller its share.
        assert!(r(b, "pkb", "compression_ratio") > r(a, "pkb", "compression_ratio"));
    }
    for len in lens {
        assert!(r(len, "none", "bytes_per_key") >= len as f64);
        assert_eq!(r(len, "none", "compression_ratio"), 1.0);
    }
    // Separators stay short while keys grow: Tail compression pays more on long keys.
    assert!(r(256, "tail", "compression_ratio") > r(32, "tail", "compression_ratio"));
    assert!(r(32, "tail", "compression_ratio") > r(8, "tail", "compression_ratio"));
    assert!(r(256, "tail", "height") < r(256, "none", "height"));
}

#[test]
fn page_size_sweep_larger_pages_fewer_leaves_wider_tail_branches() {
    let rows = run(
        &[
            "--sweep",
            "page-size",
            "--quick",
            "--keys",
            "4000",
            "--sweep-values",
            "512,1024,2048,4096,8192",
        ],
        4000.0,
    );
    let pages = [512u64, 1024, 2048, 4096, 8192];
    assert_eq!(rows.len(), pages.len() * SCHEMES.len());
    let r = |p: u64, s: &str, f: &str| {
        let l = &rows[&(p, s.to_string())];
        assert_eq!(num(l, "page_size"), p as f64, "{l}");
        num(l, f)
    };
    let mut wider = 0;
    for w in pages.windows(2) {
        let (a, b) = (w[0], w[1]);
        for s in SCHEMES {
            assert!(r(b, s, "leaf_nodes") < r(a, s, "leaf_nodes"), "{s} {a} {b}");
            assert!(r(b, s, "height") <= r(a, s, "height"), "{s} {a} {b}");
        }
        // The study's Table 4: Tail's fan-out grows with the page, while the tree keeps
        // levels of branches (once one root holds every leaf, its fan-out is the leaf count).
        if r(b, "tail", "height") >= 3.0 {
            assert!(r(b, "tail", "internal_fanout") > r(a, "tail", "internal_fanout"));
            wider += 1;
        }
    }
    assert!(wider >= 1, "no two page sizes with branch levels: {rows:?}");
    assert!(r(512, "tail", "height") < r(512, "none", "height"));
}

#[test]
fn pkb_sweep_each_partial_key_byte_costs_one_byte_per_key() {
    // two rounds over the points: medians of the same trees
    let rows = run(&["--sweep", "pkb", "--quick", "--repeat", "2"], 5000.0);
    assert_eq!(rows.len(), 8, "{rows:?}");
    let r = |l: u64, f: &str| {
        let line = rows
            .get(&(l, "pkb".to_string()))
            .unwrap_or_else(|| panic!("no pkb at {l}: {rows:?}"));
        num(line, f)
    };
    for l in 1..8u64 {
        assert_eq!(
            r(l + 1, "leaf_key_bytes") - r(l, "leaf_key_bytes"),
            5000.0,
            "partial key {l} -> {}",
            l + 1
        );
        assert!(r(l + 1, "compression_ratio") < r(l, "compression_ratio"));
        assert!(r(l + 1, "leaf_nodes") >= r(l, "leaf_nodes"));
    }
    // PkB stores the whole key beside its partial key: never below none.
    assert!(r(1, "compression_ratio") < 1.0);
}

#[test]
fn pkb_sweep_on_disk_reads_one_leaf_per_lookup() {
    let d = dir("pkb");
    let rows = run(
        &[
            "--sweep",
            "pkb",
            "--disk",
            "--quick",
            "--keys",
            "4000",
            "--sweep-values",
            "1,4,8",
            "--dir",
            d.to_str().unwrap(),
        ],
        4000.0,
    );
    assert_eq!(rows.len(), 3, "{rows:?}");
    let line = |l: u64| rows[&(l, "pkb".to_string())].as_str();
    for l in [1, 4, 8] {
        assert_eq!(field(line(l), "disk"), "true");
        assert_eq!(field(line(l), "page_size"), "4096");
        assert_eq!(field(line(l), "reads_per_lookup"), "1.0000", "{}", line(l));
    }
    let lkb = |l: u64| num(line(l), "leaf_key_bytes");
    assert_eq!(lkb(4) - lkb(1), 3.0 * 4000.0);
    assert_eq!(lkb(8) - lkb(4), 4.0 * 4000.0);
    let left: Vec<_> = std::fs::read_dir(&d).unwrap().collect();
    assert!(left.is_empty(), "files left behind: {left:?}");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn key_length_sweep_on_disk_reads_one_leaf_per_lookup() {
    let d = dir("keylen");
    let rows = run(
        &[
            "--sweep",
            "key-length",
            "--disk",
            "--quick",
            "--keys",
            "3000",
            "--sweep-values",
            "8,64,200",
            "--schemes",
            "none,tail",
            "--dir",
            d.to_str().unwrap(),
        ],
        3000.0,
    );
    assert_eq!(rows.len(), 6, "{rows:?}");
    let r = |len: u64, s: &str, f: &str| num(&rows[&(len, s.to_string())], f);
    for len in [8, 64, 200] {
        for s in ["none", "tail"] {
            let l = &rows[&(len, s.to_string())];
            assert_eq!(field(l, "page_size"), "4096", "{l}");
            assert_eq!(field(l, "reads_per_lookup"), "1.0000", "{l}");
        }
    }
    assert!(r(64, "none", "leaf_nodes") > r(8, "none", "leaf_nodes"));
    assert!(r(200, "none", "leaf_nodes") > r(64, "none", "leaf_nodes"));
    // more leaves, more of them crossed by a 100-key range query
    assert!(r(200, "none", "reads_per_range100") > r(8, "none", "reads_per_range100"));
    assert!(r(200, "tail", "compression_ratio") > r(8, "tail", "compression_ratio"));
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn lineitem_rows_at_4k_pages_in_memory_and_on_disk() {
    let rows = run(&["--dataset", "lineitem", "--keys", "3000"], 3000.0);
    assert_eq!(rows.len(), SCHEMES.len());
    let r = |s: &str, f: &str| num(&rows[&(0, s.to_string())], f);
    for s in SCHEMES {
        let l = &rows[&(0, s.to_string())];
        assert_eq!(field(l, "dataset"), "lineitem", "{l}");
        assert_eq!(field(l, "page_size"), "4096", "{l}");
    }
    // whole rows: 96 to 156 bytes each, plus per-key metadata
    assert!(r("none", "bytes_per_key") > 96.0 && r("none", "bytes_per_key") < 170.0);
    assert!(r("head-tail", "compression_ratio") > 1.0);
    assert!(r("tail", "height") <= r("none", "height"));

    let d = dir("lineitem");
    let o = tersedb(&[
        "bench",
        "strings",
        "--disk",
        "--quick",
        "--dataset",
        "lineitem",
        "--keys",
        "3000",
        "--schemes",
        "none,head-tail,pkb",
        "--dir",
        d.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8_lossy(&o.stdout);
    // one page size, 4096: a row per scheme
    let table: Vec<&str> = out.lines().filter(|l| !l.starts_with('#')).collect();
    assert!(
        table[0].contains("page") && table[0].contains("rd/lk"),
        "{out}"
    );
    assert_eq!(table.len(), 5, "{out}");
    for l in &table[1..4] {
        let cols: Vec<&str> = l.split_whitespace().collect();
        assert_eq!(cols[0], "4096", "{l}");
        assert_eq!(cols[7], "1.00", "reads per lookup: {l}");
    }
    assert!(table[4].starts_with("verified:"), "{out}");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn text_table_and_refusals() {
    let o = tersedb(&[
        "bench",
        "strings",
        "--sweep",
        "pkb",
        "--quick",
        "--keys",
        "2000",
        "--sweep-values",
        "2,6",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.starts_with("# sweep pkb (Fig. 10"), "{out}");
    let rows: Vec<Vec<&str>> = out
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(rows[0][..2], ["pkb_len", "scheme"], "{out}");
    assert_eq!(rows[1][..2], ["2", "pkb"], "{out}");
    assert_eq!(rows[2][..2], ["6", "pkb"], "{out}");
    assert_eq!(rows[3][0], "verified:", "{out}");

    let refused = |args: &[&str], says: &str| {
        let mut all = vec!["bench", "strings"];
        all.extend_from_slice(args);
        let o = tersedb(&all);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{args:?} ran");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    };
    refused(
        &["--sweep", "key-length", "--dataset", "clustered"],
        "random data set",
    );
    refused(
        &["--sweep", "pkb", "--schemes", "none"],
        "leave out --schemes",
    );
    refused(
        &["--sweep", "page-size", "--sweep-values", "3000"],
        "not a valid value",
    );
    refused(&["--sweep", "size"], "key-length");
    refused(&["--key-len", "16", "--dataset", "tpch"], "--key-len");
    refused(
        &["--key-len", "4", "--keys", "100000"],
        "too few possible keys",
    );
    refused(&["--sweep-values", "1,2"], "--sweep");
    refused(&["--quick"], "--disk");
}
