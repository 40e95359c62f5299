//! Pins `tersedb bench strings` end to end: one verified JSON line per scheme (db2 included:
//! no scheme may be skipped), the key count, `none` as the compression baseline, and the
//! study's qualitative findings that hold at any size: Head+Tail stores fewer bytes per key than
//! no compression on prefix-heavy keys, PkB more, and Tail raises the branches' fan-out. Also
//! hex input with the empty key, and a key too long for the page size as a clear error.

mod common;
use common::{field, num};
use std::collections::HashMap;
use std::process::{Command, Output};

fn tersedb(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tersedb"))
        .args(args)
        .output()
        .expect("run tersedb")
}

fn temp(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!(
        "tersedb-bench-strings-{}-{name}",
        std::process::id()
    ))
}

/// Runs the bench with `--json`; returns its lines by scheme, after checking that every scheme
/// is there, verified, with `keys` keys.
fn run(args: &[&str], keys: u64) -> HashMap<String, String> {
    let mut all = vec!["bench", "strings", "--json"];
    all.extend_from_slice(args);
    let o = tersedb(&all);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{all:?}: {err}");
    let out = String::from_utf8_lossy(&o.stdout);
    let rows: HashMap<String, String> = out
        .lines()
        .map(|l| (field(l, "scheme").to_string(), l.to_string()))
        .collect();
    assert_eq!(rows.len(), out.lines().count(), "a scheme twice: {out}");
    for s in [
        "none",
        "head",
        "tail",
        "head-tail",
        "db2",
        "wiredtiger",
        "myisam",
        "pkb",
    ] {
        match rows.get(s) {
            Some(l) => {
                assert_eq!(num(l, "keys") as u64, keys, "{l}");
                assert!(l.ends_with("\"verified\":true}"), "{l}");
                for f in [
                    "insert_mops",
                    "lookup_mops",
                    "range10_mops",
                    "range100_mops",
                    "bytes_per_key",
                    "compression_ratio",
                ] {
                    assert!(num(l, f) > 0.0, "{f}: {l}");
                }
                assert!(num(l, "leaf_nodes") > num(l, "branch_nodes"), "{l}");
            }
            None => panic!("{all:?}: no line for {s}: {out}"),
        }
    }
    rows
}

#[test]
fn every_scheme_on_prefix_heavy_and_random_keys() {
    for (dataset, page) in [("clustered", "512"), ("tpch", "512"), ("random36", "1024")] {
        let rows = run(
            &["--keys", "3000", "--dataset", dataset, "--page-size", page],
            3000,
        );
        for l in rows.values() {
            assert!(
                num(l, "height") >= 3.0 && num(l, "internal_fanout") > 2.0,
                "{l}"
            );
        }
        let none = &rows["none"];
        assert_eq!(field(none, "compression_ratio"), "1.0000", "{none}");
        assert_eq!(field(none, "page_size"), page);
        let bpk = |s: &str| num(&rows[s], "bytes_per_key");
        let fanout = |s: &str| num(&rows[s], "internal_fanout");
        assert!(bpk("pkb") > bpk("none"), "{dataset}: {rows:?}");
        assert!(fanout("tail") > fanout("none"), "{dataset}: {rows:?}");
        assert!(fanout("head-tail") > fanout("none"), "{dataset}: {rows:?}");
        if dataset != "random36" {
            // prefix-heavy keys: prefix compression pays
            assert!(bpk("head-tail") < bpk("none"), "{dataset}: {rows:?}");
            assert!(bpk("myisam") < bpk("none"), "{dataset}: {rows:?}");
            assert!(num(&rows["head-tail"], "compression_ratio") > 1.0);
        }
    }
}

#[test]
fn schemes_subset_keeps_none_as_the_baseline() {
    let o = tersedb(&[
        "bench",
        "strings",
        "--json",
        "--keys",
        "2000",
        "--dataset",
        "clustered",
        "--schemes",
        "head-tail,wiredtiger",
        "--wt-distance",
        "4",
        "--repeat",
        "2",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(out.lines().count(), 2, "{out}");
    for l in out.lines() {
        assert!(num(l, "compression_ratio") > 1.0, "{l}");
    }
    let o = tersedb(&["bench", "strings", "--schemes", "zip"]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("head-tail"));
    let o = tersedb(&["bench", "strings", "--dataset", "nope"]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("random62"));
}

#[test]
fn hex_input_with_the_empty_key() {
    let p = temp("hex.txt");
    // the empty key, a key with 0x00 and 0xff, duplicates, and keys sharing prefixes
    let mut text = String::from("\n00ff\n\n00ff\n");
    for i in 0..500u32 {
        text.push_str(&format!("6b65792d{:08x}\n", i * 7919));
    }
    std::fs::write(&p, text).unwrap();
    let rows = run(&["--input", p.to_str().unwrap(), "--hex"], 502);
    assert!(field(&rows["none"], "dataset").ends_with("hex.txt"));
    // a sample of the file
    let rows = run(
        &["--input", p.to_str().unwrap(), "--hex", "--keys", "100"],
        100,
    );
    assert_eq!(rows.len(), 8, "{rows:?}");
    let _ = std::fs::remove_file(&p);
}

#[test]
fn a_key_too_long_for_the_page_is_a_clear_error() {
    let p = temp("long.txt");
    let long = "x".repeat(60);
    std::fs::write(&p, format!("short\n{long}\n")).unwrap();
    let o = tersedb(&["bench", "strings", "--input", p.to_str().unwrap()]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("60 bytes") && err.contains("at most 50") && err.contains("--page-size 1024"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
    // the page size it suggests works
    run(&["--input", p.to_str().unwrap(), "--page-size", "1024"], 2);
    let _ = std::fs::remove_file(&p);
}

#[test]
fn words_when_a_word_list_is_installed() {
    let o = tersedb(&[
        "bench",
        "strings",
        "--json",
        "--dataset",
        "words",
        "--keys",
        "3000",
        "--page-size",
        "1024",
    ]);
    if std::path::Path::new("/usr/share/dict/words").exists() {
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(out.lines().all(|l| num(l, "keys") == 3000.0), "{out}");
    } else {
        assert!(!o.status.success());
        assert!(String::from_utf8_lossy(&o.stderr).contains("apt-get install wamerican-insane"));
    }
}
