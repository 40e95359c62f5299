//! Pins `tersedb bench strings --disk` (Gao et al., "Revisiting B-tree Compression", §3.3):
//! one verified JSON line per scheme and page size of the sweep, and the setting itself: every
//! lookup reads exactly one page from the device (its leaf; branches come from RAM), range
//! queries of 100 keys read more leaves than those of 10, inserts read leaves too, larger pages
//! make fewer leaves, and the benchmark's files are gone afterwards. Also the refusals: pages
//! below 4 KiB, and `--quick` without `--disk`.

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
        .join(format!("bench-strings-disk-{}-{name}", std::process::id()));
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

#[test]
fn every_scheme_at_every_page_size_reads_one_leaf_per_lookup() {
    let d = dir("sweep");
    let o = tersedb(&[
        "bench",
        "strings",
        "--disk",
        "--quick",
        "--json",
        "--keys",
        "6000",
        "--dataset",
        "clustered",
        "--dir",
        d.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8_lossy(&o.stdout);
    let rows: HashMap<(String, String), &str> = out
        .lines()
        .map(|l| {
            (
                (
                    field(l, "scheme").to_string(),
                    field(l, "page_size").to_string(),
                ),
                l,
            )
        })
        .collect();
    assert_eq!(rows.len(), 24, "8 schemes x 3 page sizes, each once: {out}");
    for page in ["4096", "8192", "16384"] {
        for s in SCHEMES {
            let l = rows
                .get(&(s.to_string(), page.to_string()))
                .unwrap_or_else(|| panic!("no {s} at {page}: {out}"));
            assert!(l.ends_with("\"verified\":true}"), "{l}");
            assert_eq!(field(l, "disk"), "true", "{l}");
            assert_eq!(num(l, "keys"), 6000.0, "{l}");
            // The leaf from the device, nothing else (branches are in RAM).
            assert_eq!(field(l, "reads_per_lookup"), "1.0000", "{l}");
            assert!(num(l, "reads_per_range10") >= 1.0, "{l}");
            assert!(
                num(l, "reads_per_range100") > num(l, "reads_per_range10"),
                "{l}"
            );
            assert!(num(l, "reads_per_insert") > 0.0, "{l}");
            for f in [
                "insert_kops",
                "lookup_kops",
                "range10_kops",
                "range100_kops",
                "bytes_per_key",
                "file_bytes_per_key",
            ] {
                assert!(num(l, f) > 0.0, "{f}: {l}");
            }
        }
        let r = |s: &str, f: &str| num(rows[&(s.to_string(), page.to_string())], f);
        assert_eq!(r("none", "compression_ratio"), 1.0);
        // Clustered keys share long prefixes: prefix schemes pay; PkB stores more.
        assert!(r("head-tail", "compression_ratio") > 1.0);
        assert!(r("myisam", "bytes_per_key") < r("none", "bytes_per_key"));
        assert!(r("pkb", "bytes_per_key") > r("none", "bytes_per_key"));
    }
    let leaves = |page: &str| num(rows[&("none".to_string(), page.to_string())], "leaf_nodes");
    assert!(leaves("4096") > leaves("8192") && leaves("8192") > leaves("16384"));
    let left: Vec<_> = std::fs::read_dir(&d).unwrap().collect();
    assert!(left.is_empty(), "files left behind: {left:?}");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn one_page_size_text_table_and_refusals() {
    let d = dir("one");
    let o = tersedb(&[
        "bench",
        "strings",
        "--disk",
        "--quick",
        "--keys",
        "3000",
        "--page-size",
        "4096",
        "--schemes",
        "none,head-tail",
        "--dir",
        d.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8_lossy(&o.stdout);
    let rows: Vec<&str> = out.lines().filter(|l| l.starts_with(" 4096 ")).collect();
    assert_eq!(rows.len(), 2, "{out}");
    assert!(
        rows[0].contains(" none ") && rows[1].contains(" head-tail "),
        "{out}"
    );
    assert!(out.contains("O_DIRECT") && out.lines().last().unwrap().starts_with("verified:"));

    let o = tersedb(&[
        "bench",
        "strings",
        "--disk",
        "--page-size",
        "2048",
        "--dir",
        d.to_str().unwrap(),
    ]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("4096"));
    let o = tersedb(&["bench", "strings", "--quick"]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("--disk"));
    let _ = std::fs::remove_dir_all(&d);
}
