//! Pins `tersedb sql`: SQL over a file and over a directory of files (a partition column from
//! the file names), the table, `--json` and `--csv` outputs, errors, and that the plain build
//! refuses the command with a hint. The SQL tests run with the CLI's `sql` feature
//! (scripts/test.d/sql.sh); `cargo test --workspace` runs the plain build's test.

mod common;
#[cfg(feature = "sql")]
use common::stdout;
use common::{stderr, tersedb};

/// A scratch directory, emptied if present.
fn temp(name: &str) -> std::path::PathBuf {
    let p = std::env::temp_dir().join(format!("tersedb-cli-sql-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&p);
    std::fs::create_dir_all(&p).unwrap();
    p
}

/// Imports `key<TAB>record` lines (u32 keys, u64 records) into database `ev` of `file`.
fn import(file: &str, lines: &str) {
    let o = tersedb(
        &[
            "import",
            file,
            "--db",
            "ev",
            "--key-type",
            "u32",
            "--record-type",
            "u64",
        ],
        lines.as_bytes(),
    );
    assert!(o.status.success(), "{}", stderr(&o));
}

#[cfg(not(feature = "sql"))]
#[test]
fn plain_build_refuses_sql_with_a_hint() {
    let d = temp("plain");
    let f = d.join("a.tdb").to_string_lossy().into_owned();
    import(&f, "1\t10\n");
    let o = tersedb(&["sql", &f, "SELECT COUNT(*) FROM ev"], b"");
    assert!(!o.status.success());
    assert!(stderr(&o).contains("--features sql"), "{}", stderr(&o));
}

#[cfg(feature = "sql")]
#[test]
fn sql_over_a_file_and_a_directory() {
    let d = temp("dir");
    let a = d.join("day1.tdb").to_string_lossy().into_owned();
    let b = d.join("day2.tdb").to_string_lossy().into_owned();
    let lines =
        |r: std::ops::Range<u32>| -> String { r.map(|k| format!("{k}\t{}\n", k * 2)).collect() };
    import(&a, &lines(0..1000));
    import(&b, &lines(500..1500));

    // One file: the table output, pushed-down aggregates.
    let o = tersedb(
        &["sql", &a, "SELECT COUNT(*) AS n, SUM(key) AS s, MAX(record) AS m FROM ev WHERE key BETWEEN 10 AND 19"],
        b"",
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("| n  | s   | m  |"), "{out}");
    assert!(out.contains("| 10 | 145 | 38 |"), "{out}");

    // A directory: one table, a file column, GROUP BY and ORDER BY; JSON rows.
    let dir = d.to_string_lossy().into_owned();
    let o = tersedb(
        &[
            "sql",
            &dir,
            "SELECT file, COUNT(*) AS n, MIN(key) AS lo FROM ev WHERE key >= 900 GROUP BY file ORDER BY file",
            "--json",
        ],
        b"",
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        stdout(&o).trim(),
        r#"[{"file":"day1","n":100,"lo":900},{"file":"day2","n":600,"lo":900}]"#
    );

    // CSV with a header; a join of the two files on the key.
    let o = tersedb(
        &[
            "sql",
            &dir,
            "SELECT COUNT(*) AS both_days FROM ev x JOIN ev y ON x.key = y.key WHERE x.file = 'day1' AND y.file = 'day2'",
            "--csv",
        ],
        b"",
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o).trim(), "both_days\n500");

    // An empty result is an empty JSON array; bad SQL is an error naming the problem.
    let o = tersedb(
        &["sql", &a, "SELECT key FROM ev WHERE key > 5000", "--json"],
        b"",
    );
    assert_eq!(stdout(&o).trim(), "[]");
    let o = tersedb(&["sql", &a, "SELECT nope FROM ev"], b"");
    assert!(!o.status.success());
    assert!(stderr(&o).contains("nope"), "{}", stderr(&o));

    // Files that do not open name their path once (the engine names it in some errors).
    let junk = d.join("junk.tdb").to_string_lossy().into_owned();
    std::fs::write(&junk, b"not a database\n").unwrap();
    let fifo = d.join("fifo.tdb").to_string_lossy().into_owned();
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    let missing = d.join("missing.tdb").to_string_lossy().into_owned();
    let mut cases = vec![
        (junk.clone(), "not a tersedb file"),
        (missing, "No such file"),
    ];
    if made.is_ok_and(|s| s.success()) {
        cases.push((fifo, "is not a regular file"));
    }
    for (f, want) in cases {
        let o = tersedb(&["sql", &f, "SELECT COUNT(*) FROM ev"], b"");
        assert!(!o.status.success(), "{f}");
        let e = stderr(&o);
        assert_eq!(e.matches(f.as_str()).count(), 1, "{e}");
        assert!(e.contains(want), "{e}");
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// i16 and i32 records (signed, narrower than the u64/i64 the SQL types widen to) through
/// `tersedb sql`: COUNT/SUM/MIN/MAX with negative values equal a sum computed here, and the
/// plan answers them in the tree (EXPLAIN names the push-down) rather than decoding rows.
#[cfg(feature = "sql")]
#[test]
fn sql_on_small_signed_records() {
    for (ty, value) in [
        ("i16", (|k: i64| (k * 7) % 41 - 20) as fn(i64) -> i64),
        ("i32", |k: i64| (k * 37) % 200_001 - 100_000),
    ] {
        let d = temp(ty);
        let f = d.join("s.tdb").to_string_lossy().into_owned();
        let lines: String = (0..1000i64)
            .map(|k| format!("{k}\t{}\n", value(k)))
            .collect();
        let o = tersedb(
            &[
                "import",
                &f,
                "--db",
                "ev",
                "--key-type",
                "u32",
                "--record-type",
                ty,
            ],
            lines.as_bytes(),
        );
        assert!(o.status.success(), "{ty}: {}", stderr(&o));
        let sel: Vec<i64> = (100..900).map(value).collect();
        let want = format!(
            r#"[{{"n":{},"s":{},"lo":{},"hi":{}}}]"#,
            sel.len(),
            sel.iter().sum::<i64>(),
            sel.iter().min().unwrap(),
            sel.iter().max().unwrap()
        );
        let q = "SELECT COUNT(*) AS n, SUM(record) AS s, MIN(record) AS lo, MAX(record) AS hi FROM ev WHERE key BETWEEN 100 AND 899";
        let o = tersedb(&["sql", &f, q, "--json"], b"");
        assert!(o.status.success(), "{ty}: {}", stderr(&o));
        assert_eq!(stdout(&o).trim(), want, "{ty}");
        let o = tersedb(&["sql", &f, &format!("EXPLAIN {q}")], b"");
        assert!(o.status.success(), "{ty}: {}", stderr(&o));
        let plan = stdout(&o);
        assert!(
            plan.contains("TerseAggregateExec") && plan.contains("in-tree"),
            "{ty}: aggregates not pushed into the tree:\n{plan}"
        );
        let _ = std::fs::remove_dir_all(&d);
    }
}
