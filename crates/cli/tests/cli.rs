//! Pins the `tersedb` command's store subcommands end to end: import/export round trips for every
//! key type, a malformed line names its line number and commits nothing of its batch, a failed
//! import or erase that committed nothing leaves the file byte-identical (or absent), erase
//! counts absent keys, info and check report, and check fails on a damaged file. A damaged
//! newest meta page never rolls back silently: `export` shows the newest commit (from the meta's
//! copy) or fails naming the meta page, and `recover` rolls back only when asked.

mod common;

use common::{stdout, temp, tersedb};
use std::process::Output;

#[test]
fn import_export_round_trip_every_key_type() {
    let f = temp("roundtrip");
    let keys: String = (0..5000u32).map(|i| format!("{}\n", i * 7 + 3)).collect();
    let o = tersedb(
        &[
            "import",
            &f,
            "--db",
            "a",
            "--commit-every",
            "999",
            "--page-size",
            "512",
        ],
        keys.as_bytes(),
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = tersedb(&["export", &f, "--db", "a"], b"");
    assert_eq!(stdout(&o), keys);

    let kv = "18446744073709551615\tmax\n3\tthree\n0\t\n";
    let o = tersedb(
        &["import", &f, "--db", "b", "--key-type", "u64"],
        kv.as_bytes(),
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = tersedb(&["export", &f, "--db", "b"], b"");
    assert_eq!(stdout(&o), "0\t\n3\tthree\n18446744073709551615\tmax\n");

    // binary keys with 0x00 and bytes >= 0x80, and the empty key, through --hex
    let hex = "\t00\n00ff\t\n80\t0102\n7f\t\n";
    let o = tersedb(
        &["import", &f, "--db", "c", "--key-type", "binary", "--hex"],
        hex.as_bytes(),
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = tersedb(&["export", &f, "--db", "c", "--hex"], b"");
    assert_eq!(stdout(&o), "\t00\n00ff\t\n7f\t\n80\t0102\n");

    let o = tersedb(&["check", &f], b"");
    assert!(o.status.success(), "{}", stdout(&o));
    let o = tersedb(&["info", &f, "--json"], b"");
    let info = stdout(&o);
    assert!(
        info.contains("\"name\":\"a\"") && info.contains("\"keys\":5000"),
        "{info}"
    );
    assert!(info.contains("\"page_size\":512"), "{info}");
    let _ = std::fs::remove_file(&f);
}

#[test]
fn a_bad_line_names_its_number_and_commits_nothing_of_its_batch() {
    let f = temp("badline");
    let o = tersedb(
        &["import", &f, "--db", "a", "--commit-every", "2"],
        b"1\n2\n3\nfour\n5\n",
    );
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("line 4"), "{err}");
    // batch 1 (lines 1-2) committed, batch 2 (lines 3-4) not
    let o = tersedb(&["export", &f, "--db", "a"], b"");
    assert_eq!(stdout(&o), "1\n2\n");
    let o = tersedb(&["import", &f, "--db", "a"], b"4294967296\n");
    assert!(String::from_utf8_lossy(&o.stderr).contains("line 1"));
    let o = tersedb(&["erase", &f, "--db", "a"], b"2\n9\n");
    assert!(o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("1 were absent"));
    let o = tersedb(&["export", &f, "--db", "a"], b"");
    assert_eq!(stdout(&o), "1\n");
    let _ = std::fs::remove_file(&f);
}

/// Imports that fail before anything is committed: a header line on line 1, a bad line in the
/// middle of the first batch, bad options (checked before or after the file is opened).
const FAILING_IMPORTS: &[(&[&str], &str)] = &[
    (&["--record-type", "u64"], "key\tvalue\n1\t2\n"),
    (&[], "key\tvalue\n1\t2\n"),
    (&["--key-type", "binary", "--hex"], "6b\n6c\nzz\n6d\n"),
    (&["--commit-every", "3"], "1\n2\nthree\n4\n5\n"),
    (&["--record-size", "4"], "1\t2\nx\n"),
    (&["--compression", "zip"], "1\n"),
    (&["--key-type", "binary", "--compression", "bp128"], "61\n"),
    (&["--record-type", "u16"], "1\t2\n"),
    (&["--page-size", "1000"], "1\nx\n"),
    (&["--key-type", "i8"], "1\n"),
    (&["--input", "/nonexistent/tersedb-input"], ""),
];

fn import_into(f: &str, db: &str, extra: &[&str], input: &str) -> Output {
    let mut args = vec!["import", f, "--db", db];
    args.extend_from_slice(extra);
    tersedb(&args, input.as_bytes())
}

/// Issue 15: a failed import left its file and an empty database behind, with the failed
/// command's settings fixed in (a header line left database `c` with the wrong record type, and
/// the corrected retry was refused).
#[test]
fn a_failed_command_leaves_the_file_as_it_was() {
    // No file before: none after.
    let f = temp("failed-new");
    for (extra, input) in FAILING_IMPORTS {
        let o = import_into(&f, "c", extra, input);
        assert!(!o.status.success(), "{extra:?} {input:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!err.contains("panicked"), "{err}");
        assert!(
            !std::path::Path::new(&f).exists(),
            "{extra:?} {input:?}: {err}"
        );
    }
    // The corrected retry works.
    let o = import_into(&f, "c", &["--record-type", "u64"], "1\t2\n3\t4\n");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(
        stdout(&tersedb(&["export", &f, "--db", "c"], b"")),
        "1\t2\n3\t4\n"
    );

    // A file with databases: byte-identical after each failure, new database or existing one.
    let before = std::fs::read(&f).unwrap();
    for db in ["c", "d"] {
        for (extra, input) in FAILING_IMPORTS {
            let o = import_into(&f, db, extra, input);
            assert!(!o.status.success(), "{db} {extra:?} {input:?}");
            assert!(
                std::fs::read(&f).unwrap() == before,
                "{db} {extra:?} {input:?}"
            );
        }
    }
    // An existing database with other settings, and a key of the wrong type.
    for (extra, input) in [
        (&["--key-type", "binary"][..], "61\n"),
        (&["--record-type", "f64"][..], "5\t1.5\n"),
        (&["--compression", "bp128"][..], "5\t6\n"),
        (&[][..], "5\n"),
        (&[][..], "99999999999\t1\n"),
    ] {
        let o = import_into(&f, "c", extra, input);
        assert!(!o.status.success(), "{extra:?} {input:?}");
        assert!(std::fs::read(&f).unwrap() == before, "{extra:?} {input:?}");
    }
    // Erase: a bad line in the first batch, a missing database, a value on the line.
    for (db, input) in [("c", "1\nx\n3\n"), ("nope", "1\n"), ("c", "1\t2\n")] {
        let o = tersedb(&["erase", &f, "--db", db], input.as_bytes());
        assert!(!o.status.success(), "{db} {input:?}");
        assert!(std::fs::read(&f).unwrap() == before, "{db} {input:?}");
    }
    assert_eq!(
        stdout(&tersedb(&["export", &f, "--db", "c"], b"")),
        "1\t2\n3\t4\n"
    );
    let _ = std::fs::remove_file(&f);

    // An empty file stays empty.
    let f = temp("failed-empty");
    std::fs::write(&f, b"").unwrap();
    for (extra, input) in FAILING_IMPORTS {
        let o = import_into(&f, "c", extra, input);
        assert!(!o.status.success(), "{extra:?} {input:?}");
        assert_eq!(
            std::fs::metadata(&f).unwrap().len(),
            0,
            "{extra:?} {input:?}"
        );
    }
    let _ = std::fs::remove_file(&f);
}

#[test]
fn check_fails_on_a_damaged_file() {
    let f = temp("damaged");
    let keys: String = (0..3000u32).map(|i| format!("{i}\n")).collect();
    assert!(tersedb(
        &["import", &f, "--db", "a", "--page-size", "1024"],
        keys.as_bytes()
    )
    .status
    .success());
    let mut bytes = std::fs::read(&f).unwrap();
    // one byte in every page after the two meta pages: the tree's pages are among them
    for page in 2..bytes.len() / 1024 {
        bytes[page * 1024 + 100] ^= 0xff;
    }
    std::fs::write(&f, &bytes).unwrap();
    let o = tersedb(&["check", &f], b"");
    assert!(
        !o.status.success(),
        "check passed a damaged file: {}",
        stdout(&o)
    );
    let _ = std::fs::remove_file(&f);
}

#[test]
fn damaged_newest_meta_never_rolls_back_silently() {
    let f = temp("meta");
    let first: String = (0..100u32).map(|i| format!("{i}\n")).collect();
    let second: String = (100..5000u32).map(|i| format!("{i}\n")).collect();
    for keys in [&first, &second] {
        let o = tersedb(
            &["import", &f, "--db", "a", "--page-size", "512"],
            keys.as_bytes(),
        );
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    let all = format!("{first}{second}");
    let good = std::fs::read(&f).unwrap();
    // The newest commit's meta page: the one with the higher txn id (bytes 32..40).
    let txn = |slot: usize| {
        u64::from_le_bytes(good[slot * 512 + 32..slot * 512 + 40].try_into().unwrap())
    };
    let newest = if txn(1) > txn(0) { 1 } else { 0 };
    // One bit in its unused zero bytes: the copy restores it.
    let mut bad = good.clone();
    bad[newest * 512 + 300] ^= 1;
    std::fs::write(&f, &bad).unwrap();
    let o = tersedb(&["check", &f], b"");
    assert!(!o.status.success(), "check reports the damaged meta page");
    assert!(
        stdout(&o).contains(&format!("page {newest}")),
        "{}",
        stdout(&o)
    );
    let o = tersedb(&["export", &f, "--db", "a"], b"");
    assert!(o.status.success());
    assert_eq!(stdout(&o), all, "export shows the newest commit");
    // Its copy damaged too: export refuses, naming the meta page; recover rolls back on request.
    let copy = u64::from_le_bytes(
        good[(1 - newest) * 512 + 72 + 8 * newest..][..8]
            .try_into()
            .unwrap(),
    );
    bad[copy as usize * 512 + 300] ^= 1;
    std::fs::write(&f, &bad).unwrap();
    let o = tersedb(&["export", &f, "--db", "a"], b"");
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(
        err.contains(&format!("page {newest}")) && err.contains("recover"),
        "{err}"
    );
    let o = tersedb(&["recover", &f], b"");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(stdout(&o).contains("rolled back"), "{}", stdout(&o));
    let o = tersedb(&["export", &f, "--db", "a"], b"");
    assert_eq!(stdout(&o), first, "the older commit after recovery");
    let o = tersedb(&["check", &f], b"");
    assert!(o.status.success(), "{}", stdout(&o));
    let o = tersedb(&["recover", &f], b"");
    assert!(stdout(&o).contains("nothing to recover"), "{}", stdout(&o));
    let _ = std::fs::remove_file(&f);
}

#[test]
fn bench_store_reads_keys_from_a_file() {
    // Unsorted, with a duplicate and a blank line: 3000 distinct keys.
    let path = temp("keys.txt");
    let mut text = String::new();
    for k in (0..3000u32).rev() {
        text.push_str(&format!("{}\n", k * 7 + 1));
    }
    text.push_str("\n8\n");
    std::fs::write(&path, &text).unwrap();
    let o = tersedb(
        &[
            "bench",
            "--input",
            &path,
            "--codecs",
            "none,bp128",
            "--json",
        ],
        b"",
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rows = stdout(&o);
    assert_eq!(rows.lines().count(), 2, "{rows}");
    assert!(rows.lines().all(|l| l.contains("\"keys\":3000,")), "{rows}");
    assert!(rows.contains("1 duplicate lines dropped"), "{rows}");

    // A bad line: an error naming the line, no panic.
    std::fs::write(&path, "1\n2\nthree\n").unwrap();
    let o = tersedb(&["bench", "--input", &path], b"");
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("line 3: \"three\""), "{err}");
    // A u64 key: the store benchmark's codecs take u32 keys.
    std::fs::write(&path, "1\n4294967296\n").unwrap();
    let o = tersedb(&["bench", "--input", &path], b"");
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("does not fit in u32"), "{err}");
    // Missing file and --input with --keys are errors too.
    let o = tersedb(&["bench", "--input", "/nonexistent/keys"], b"");
    assert!(!o.status.success());
    let o = tersedb(&["bench", "--input", &path, "--keys", "5"], b"");
    assert!(!o.status.success());
    let _ = std::fs::remove_file(&path);
}

#[test]
fn bench_runs_and_verifies_its_answers() {
    let o = tersedb(
        &[
            "bench",
            "--keys",
            "20000",
            "--order",
            "random",
            "--json",
            "--page-size",
            "1024",
        ],
        b"",
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let line = stdout(&o);
    assert!(
        line.starts_with("{\"codec\":\"none\",\"keys\":20000"),
        "{line}"
    );
    for field in [
        "bytes_per_key",
        "file_bytes",
        "insert_s",
        "find_s",
        "cursor_s",
        "sum_s",
        "avg_where_s",
    ] {
        assert!(
            line.contains(&format!("\"{field}\":")),
            "{field} missing: {line}"
        );
    }
    let o = tersedb(
        &[
            "bench",
            "codecs",
            "--quick",
            "--widths",
            "5",
            "--codecs",
            "bp128,vbyte,memcpy",
            "--json",
        ],
        b"",
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rows = stdout(&o);
    // 3 subjects x (1 width + 2 ClusterData tables)
    assert_eq!(rows.lines().count(), 9, "{rows}");
    assert!(rows.lines().all(|l| l.contains("\"decode_gis\":")));
    assert!(
        rows.contains("\"codec\":\"bp128\",\"dataset\":\"fixed-5\""),
        "{rows}"
    );
    let o = tersedb(&["bench", "codecs", "--codecs", "nope"], b"");
    assert!(!o.status.success());
}

#[test]
fn compressed_import_export_info_check_and_bench() {
    let f = temp("compressed");
    let keys: String = (0..20_000u32)
        .map(|i| format!("{}\n", i * 8 + i % 7))
        .collect();
    for (db, codec) in [("v", "vbyte"), ("b", "bp128"), ("p", "pfor-delta")] {
        let o = tersedb(
            &[
                "import",
                &f,
                "--db",
                db,
                "--compression",
                codec,
                "--block-size",
                "64",
                "--page-size",
                "4096",
            ],
            keys.as_bytes(),
        );
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let o = tersedb(&["export", &f, "--db", db], b"");
        assert!(stdout(&o) == keys, "{codec}: export differs from import");
    }
    let o = tersedb(&["info", &f, "--json"], b"");
    let info = stdout(&o);
    assert!(
        info.contains("\"compression\":\"bp128\",\"block_size\":64"),
        "{info}"
    );
    let o = tersedb(&["info", &f], b"");
    assert!(stdout(&o).contains("pfor-delta (64 keys per block)"));
    let o = tersedb(&["check", &f], b"");
    assert!(o.status.success(), "{}", stdout(&o));
    // An existing database keeps its codec; asking for another is an error.
    let o = tersedb(&["import", &f, "--db", "v", "--compression", "for"], b"1\n");
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("vbyte"));
    let o = tersedb(&["import", &f, "--db", "x", "--compression", "zip"], b"1\n");
    assert!(!o.status.success());
    let _ = std::fs::remove_file(&f);

    // The store benchmark on a small data set: every codec row, answers verified.
    let o = tersedb(&["bench", "--keys", "20000", "--json"], b"");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = stdout(&o);
    for codec in [
        "none",
        "vbyte",
        "bp128",
        "simd-for",
        "pfor-delta",
        "streamvbyte",
    ] {
        assert!(
            out.contains(&format!("\"codec\":\"{codec}\"")),
            "{codec}: {out}"
        );
    }
    assert_eq!(out.lines().count(), 10);
    assert!(out.lines().all(|l| l.contains("\"verified\":true")));

    // The range-query part: four coverages per codec, every answer checked by the bench.
    let o = tersedb(
        &[
            "bench",
            "--keys",
            "20000",
            "--codecs",
            "none,bp128",
            "--queries",
            "--json",
        ],
        b"",
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = stdout(&o);
    assert_eq!(
        out.lines().filter(|l| l.contains("query_coverage")).count(),
        8,
        "{out}"
    );
}

/// `--key-type binary --compression SCHEME` for every scheme: the keys come back in unsigned
/// byte order, `info` names the scheme and its stored key bytes, `check` is clean; prefix-heavy
/// keys take fewer key bytes with head-tail than uncompressed; an unknown scheme is an error.
#[test]
fn binary_key_compression_schemes() {
    let f = temp("schemes");
    let mut keys: Vec<String> = (0..3000u32)
        .map(|i| {
            format!(
                "2026-11-23T{:02}:{:02}|order-{i:07}|{}",
                i % 24,
                i % 60,
                "ab".repeat((i % 4) as usize)
            )
        })
        .collect();
    let input: String = keys.iter().map(|k| format!("{k}\n")).collect();
    keys.sort();
    let sorted: String = keys.iter().map(|k| format!("{k}\n")).collect();
    let mut key_bytes = std::collections::HashMap::new();
    for scheme in [
        "none",
        "head",
        "tail",
        "head-tail",
        "wiredtiger",
        "myisam",
        "pkb",
    ] {
        let o = tersedb(
            &[
                "import",
                &f,
                "--db",
                scheme,
                "--key-type",
                "binary",
                "--compression",
                scheme,
                "--page-size",
                "1024",
            ],
            input.as_bytes(),
        );
        assert!(
            o.status.success(),
            "{scheme}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let o = tersedb(&["export", &f, "--db", scheme], b"");
        assert!(stdout(&o) == sorted, "{scheme}: export differs");
        let o = tersedb(&["info", &f, "--json"], b"");
        let info = stdout(&o);
        let at = info
            .find(&format!("\"name\":\"{scheme}\""))
            .unwrap_or_else(|| panic!("{info}"));
        let entry = &info[at..];
        assert!(
            entry.contains(&format!("\"compression\":\"{scheme}")),
            "{entry}"
        );
        let kb: u64 = entry["\"key_bytes\":".len() + entry.find("\"key_bytes\":").unwrap()..]
            .split(|c: char| !c.is_ascii_digit())
            .next()
            .unwrap()
            .parse()
            .unwrap();
        key_bytes.insert(scheme, kb);
    }
    assert!(
        key_bytes["head-tail"] < key_bytes["none"] && key_bytes["wiredtiger"] < key_bytes["none"],
        "{key_bytes:?}"
    );
    assert!(key_bytes["pkb"] > key_bytes["none"], "{key_bytes:?}");
    let o = tersedb(&["check", &f], b"");
    assert!(o.status.success(), "{}", stdout(&o));
    let o = tersedb(
        &[
            "import",
            &f,
            "--db",
            "x",
            "--key-type",
            "binary",
            "--compression",
            "zstd",
        ],
        b"a\n",
    );
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("unknown key compression"));
    let _ = std::fs::remove_file(&f);
}

/// `tersedb compact` shrinks a file loaded in random order and then mostly erased, keeps every
/// key, and leaves a clean file; `info` shows the free bytes that compaction gave back.
#[test]
fn compact_gives_back_free_space_and_keeps_every_key() {
    let f = temp("compact");
    let mut keys: Vec<u32> = (0..60_000u32).map(|i| i * 3 + 1).collect();
    fastrand::Rng::with_seed(3).shuffle(&mut keys);
    let text: String = keys.iter().map(|k| format!("{k}\n")).collect();
    let o = tersedb(
        &[
            "import",
            &f,
            "--db",
            "ids",
            "--compression",
            "bp128",
            "--commit-every",
            "5000",
        ],
        text.as_bytes(),
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let gone: String = keys[..50_000].iter().map(|k| format!("{k}\n")).collect();
    let o = tersedb(&["erase", &f, "--db", "ids"], gone.as_bytes());
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let before = std::fs::metadata(&f).unwrap().len();
    let info = stdout(&tersedb(&["info", &f, "--json"], b""));
    assert!(info.contains("\"free_bytes\":"), "{info}");

    let o = tersedb(&["compact", &f], b"");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let after = std::fs::metadata(&f).unwrap().len();
    assert!(after < before, "{before} -> {after}");
    assert!(
        stdout(&o).contains(&format!("{before} -> {after} bytes")),
        "{}",
        stdout(&o)
    );
    let info = stdout(&tersedb(&["info", &f, "--json"], b""));
    assert!(info.contains("\"free_bytes\":0,"), "{info}");
    let mut left: Vec<u32> = keys[50_000..].to_vec();
    left.sort_unstable();
    let want: String = left.iter().map(|k| format!("{k}\n")).collect();
    assert_eq!(stdout(&tersedb(&["export", &f, "--db", "ids"], b"")), want);
    assert!(tersedb(&["check", &f], b"").status.success());
    let _ = std::fs::remove_file(&f);
}
