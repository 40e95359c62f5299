//! Pins `tersedb import --record-type` (numeric `key<TAB>value` lines, exported back as the same
//! numbers, shown by `info`) and `tersedb query` (table and `--json` output, exact integers,
//! NULL for empty selections, errors naming the column).

mod common;

use common::{stderr, stdout, temp, tersedb};

#[test]
fn import_numeric_records_round_trip() {
    let f = temp("numeric");
    for (t, lines) in [
        ("u32", "1\t0\n2\t4294967295\n"),
        ("u64", "1\t18446744073709551615\n5\t7\n"),
        ("i64", "1\t-9223372036854775808\n3\t42\n"),
        ("i32", "1\t-2147483648\n2\t2147483647\n3\t-1\n"),
        ("i16", "1\t-32768\n2\t32767\n4\t0\n"),
        ("f64", "1\t-0.5\n2\t123456789012.25\n3\t0.1\n"),
    ] {
        let o = tersedb(
            &[
                "import",
                &f,
                "--db",
                t,
                "--key-type",
                "u64",
                "--record-type",
                t,
            ],
            lines.as_bytes(),
        );
        assert!(o.status.success(), "{}", stderr(&o));
        let o = tersedb(&["export", &f, "--db", t], b"");
        assert_eq!(stdout(&o), lines, "{t}");
    }
    let o = tersedb(&["info", &f], b"");
    assert!(stdout(&o).contains("records      f64"), "{}", stdout(&o));
    let o = tersedb(&["info", &f, "--json"], b"");
    assert!(stdout(&o).contains("\"records\":\"i64\""), "{}", stdout(&o));

    // A value that is not a number of the type names the line.
    let o = tersedb(
        &[
            "import",
            &f,
            "--db",
            "u32",
            "--key-type",
            "u64",
            "--record-type",
            "u32",
        ],
        b"9\t12\n10\t-1\n",
    );
    assert!(!o.status.success());
    assert!(stderr(&o).contains("line 2"), "{}", stderr(&o));
    // The existing database keeps its type.
    let o = tersedb(
        &[
            "import",
            &f,
            "--db",
            "u32",
            "--key-type",
            "u64",
            "--record-type",
            "f64",
        ],
        b"9\t1.5\n",
    );
    assert!(!o.status.success());
    assert!(stderr(&o).contains("record type u32"), "{}", stderr(&o));
    let _ = std::fs::remove_file(&f);
}

/// i32 and i16 records: negative numbers imported in random order come back in key order, are
/// summed past their type's range and shown by `info`; a value out of range is refused with the
/// line and the range, and nothing of that batch is stored.
#[test]
fn import_i32_and_i16_records() {
    let f = temp("small_signed");
    for (t, lo, hi) in [
        ("i32", -2_000_000_000i64, 2_000_000_000i64),
        ("i16", -30_000, 30_000),
    ] {
        // Keys 0..3000 in a scrambled order; values from lo to hi and back, negative half the time.
        let n = 3000u64;
        let val = |k: u64| lo + ((k * 7919) % 1000) as i64 * (hi - lo) / 999;
        let lines: String = (0..n)
            .map(|i| (i * 1237) % n)
            .map(|k| format!("{k}\t{}\n", val(k)))
            .collect();
        let o = tersedb(
            &[
                "import",
                &f,
                "--db",
                t,
                "--key-type",
                "u64",
                "--record-type",
                t,
            ],
            lines.as_bytes(),
        );
        assert!(o.status.success(), "{}", stderr(&o));
        let o = tersedb(&["export", &f, "--db", t], b"");
        let want: String = (0..n).map(|k| format!("{k}\t{}\n", val(k))).collect();
        assert_eq!(stdout(&o), want, "{t}");
        let sum: i64 = (0..n).map(val).sum();
        let min = (0..n).map(val).min().unwrap();
        let o = tersedb(
            &[
                "query",
                &f,
                &format!("SELECT SUM(record), MIN(record), COUNT(*) FROM {t} WHERE record < 0"),
                "--json",
            ],
            b"",
        );
        assert!(o.status.success(), "{}", stderr(&o));
        let neg: Vec<i64> = (0..n).map(val).filter(|&v| v < 0).collect();
        let out = stdout(&o);
        for want in [
            neg.iter().sum::<i64>().to_string(),
            min.to_string(),
            neg.len().to_string(),
        ] {
            assert!(out.contains(&want), "{t}: {want} in {out}");
        }
        let o = tersedb(&["query", &f, &format!("SELECT SUM(record) FROM {t}")], b"");
        assert!(stdout(&o).contains(&sum.to_string()), "{t}: {}", stdout(&o));

        // Out of range, on line 3 of a new batch: refused, the database unchanged.
        let big = if t == "i32" { "2147483648" } else { "-32769" };
        let o = tersedb(
            &["import", &f, "--db", t, "--record-type", t],
            format!("5000\t1\n5001\t-2\n5002\t{big}\n").as_bytes(),
        );
        assert!(!o.status.success());
        let err = stderr(&o);
        assert!(err.contains("line 3"), "{err}");
        assert!(
            err.contains(&format!("{big} is out of range for {t}")),
            "{err}"
        );
        let o = tersedb(&["export", &f, "--db", t], b"");
        assert_eq!(stdout(&o), want, "{t} after the refused import");
    }
    let o = tersedb(&["info", &f], b"");
    let out = stdout(&o);
    assert!(out.contains("records      i32, compressed"), "{out}");
    assert!(out.contains("records      i16, compressed"), "{out}");
    let _ = std::fs::remove_file(&f);
}

#[test]
fn query_prints_a_table_or_json() {
    let f = temp("query");
    let lines: String = (0..1000u64)
        .map(|i| format!("{}\t{}\n", i * 10, i as f64 / 2.0))
        .collect();
    let o = tersedb(
        &[
            "import",
            &f,
            "--db",
            "ts",
            "--key-type",
            "u64",
            "--record-type",
            "f64",
            "--page-size",
            "512",
        ],
        lines.as_bytes(),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let q = "select count(*), sum(key), avg(key), max(record), top(2) from ts where key > (select max(key) from ts) / 2";
    let o = tersedb(&["query", &f, q], b"");
    assert!(o.status.success(), "{}", stderr(&o));
    let keys: Vec<u64> = (0..1000u64)
        .map(|i| i * 10)
        .filter(|&k| k > 9990 / 2)
        .collect();
    let sum: u64 = keys.iter().sum();
    let avg = sum as f64 / keys.len() as f64;
    let out = stdout(&o);
    let mut rows = out.lines();
    let header = rows.next().unwrap();
    assert!(
        header.starts_with("COUNT(*) | SUM(key) | AVG(key)"),
        "{out}"
    );
    assert!(rows.next().unwrap().starts_with("---------+-"), "{out}");
    let values: Vec<&str> = rows.next().unwrap().split(" | ").map(str::trim).collect();
    assert_eq!(
        values,
        [
            keys.len().to_string(),
            sum.to_string(),
            avg.to_string(),
            "499.5".to_string(),
            "[9990, 9980]".to_string()
        ]
    );

    let o = tersedb(&["query", &f, q, "--json", "--stats"], b"");
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        stdout(&o).trim(),
        format!(
            "{{\"columns\":[\"COUNT(*)\",\"SUM(key)\",\"AVG(key)\",\"MAX(record)\",\"TOP(2, key)\"],\"values\":[{},{sum},{avg:?},499.5,[9990,9980]]}}",
            keys.len()
        )
    );
    assert!(stderr(&o).contains("blocks:"), "{}", stderr(&o));

    // Integers are exact in JSON, beyond 2^53; empty selections give 0 and null.
    let big = "18446744073709551615\t1\n18446744073709551614\t2\n";
    let o = tersedb(
        &[
            "import",
            &f,
            "--db",
            "big",
            "--key-type",
            "u64",
            "--record-type",
            "u64",
        ],
        big.as_bytes(),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let o = tersedb(
        &[
            "query",
            &f,
            "SELECT SUM(key), MIN(record), COUNT(*) FROM big",
            "--json",
        ],
        b"",
    );
    assert_eq!(
        stdout(&o).trim(),
        "{\"columns\":[\"SUM(key)\",\"MIN(record)\",\"COUNT(*)\"],\"values\":[36893488147419103229,1,2]}"
    );
    let o = tersedb(
        &[
            "query",
            &f,
            "SELECT COUNT(*), SUM(key), AVG(key), BOTTOM(3) FROM big WHERE key < 5",
            "--json",
        ],
        b"",
    );
    assert_eq!(
        stdout(&o).trim(),
        "{\"columns\":[\"COUNT(*)\",\"SUM(key)\",\"AVG(key)\",\"BOTTOM(3, key)\"],\"values\":[0,0,null,[]]}"
    );

    // A syntax error names the column and fails.
    let o = tersedb(&["query", &f, "SELECT SUM(key FROM big"], b"");
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("syntax error at column 16"),
        "{}",
        stderr(&o)
    );
    let _ = std::fs::remove_file(&f);
}
