//! `tersedb import --key-column/--value-column`: files of more than two columns (CSV with quoted
//! fields, TSV, whitespace) import the chosen columns, by number or by header name, against a
//! `BTreeMap` model of the same rows (later rows overwrite earlier ones); `--timestamps` on a
//! chosen key column; `erase --key-column`; and the errors: a short line names its line and
//! the column it lacks, names without `--header`, unknown and repeated names (in a header-only
//! file too, leaving the file as it was), column 0.
//! Seeded: prints the seed; re-run with `SEED=n`.

mod common;

use common::{stderr, stdout, temp, tersedb};
use std::collections::BTreeMap;

fn seed() -> u64 {
    let s = std::env::var("SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5eed_0fc0_u64);
    println!("SEED={s}");
    s
}

/// splitmix64.
fn next(s: &mut u64) -> u64 {
    *s = s.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *s;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Rows of (station, id, note, reading): ids collide now and then.
fn rows(n: usize, s: &mut u64) -> Vec<(String, u64, String, i64)> {
    (0..n)
        .map(|i| {
            let id = next(s) % (n as u64 * 2);
            let reading = (next(s) % 2001) as i64 - 1000;
            let note = match next(s) % 3 {
                0 => "ok".to_string(),
                1 => "late, \"rerouted\"".to_string(),
                _ => String::new(),
            };
            (format!("st{}", i % 7), id, note, reading)
        })
        .collect()
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn export(f: &str, db: &str) -> String {
    let o = tersedb(&["export", f, "--db", db], b"");
    assert!(o.status.success(), "{}", stderr(&o));
    stdout(&o)
}

fn model_text(m: &BTreeMap<u64, i64>) -> String {
    m.iter().map(|(k, v)| format!("{k}\t{v}\n")).collect()
}

fn import(f: &str, args: &[&str], input: &str) {
    let mut a = vec!["import", f];
    a.extend_from_slice(args);
    let o = tersedb(&a, input.as_bytes());
    assert!(o.status.success(), "{args:?}: {}", stderr(&o));
}

#[test]
fn chosen_columns_against_a_model() {
    let mut s = seed();
    let data = rows(500, &mut s);
    let model: BTreeMap<u64, i64> = data.iter().map(|r| (r.1, r.3)).collect();
    let f = temp("columns");
    let num = ["--key-type", "u64", "--record-type", "i64"];
    let with = |db: &'static str, extra: &[&'static str]| -> Vec<&'static str> {
        let mut v = vec!["--db", db];
        v.extend_from_slice(&num);
        v.extend_from_slice(extra);
        v
    };

    // CSV with quoted commas in another column, by number and by header name.
    let mut csv = String::from("station,id,note,reading\n");
    for (st, id, note, r) in &data {
        csv.push_str(&format!("{st},{id},{},{r}\n", csv_field(note)));
    }
    import(
        &f,
        &with(
            "by_number",
            &["--header", "--key-column", "2", "--value-column", "4"],
        ),
        &csv,
    );
    assert_eq!(export(&f, "by_number"), model_text(&model));
    import(
        &f,
        &with(
            "by_name",
            &["--header", "--key-col", "id", "--value-col", "reading"],
        ),
        &csv,
    );
    assert_eq!(export(&f, "by_name"), model_text(&model));

    // The value column before the key column; TSV (every TAB separates) and whitespace.
    let mut tsv = String::from("reading\tnote\tid\tstation\n");
    let mut ws = String::new();
    for (st, id, note, r) in &data {
        tsv.push_str(&format!("{r}\t{note}\t{id}\t{st}\n"));
        ws.push_str(&format!("  {st}   {r} {id}\n"));
    }
    import(
        &f,
        &with(
            "tsv",
            &["--header", "--key-column", "id", "--value-column", "1"],
        ),
        &tsv,
    );
    assert_eq!(export(&f, "tsv"), model_text(&model));
    import(
        &f,
        &with("ws", &["--key-column", "3", "--value-column", "2"]),
        &ws,
    );
    assert_eq!(export(&f, "ws"), model_text(&model));

    // A key column alone: keys only; the key is column 1 when only the value column is named.
    import(
        &f,
        &["--db", "keys", "--key-type", "u64", "--key-column", "2"],
        &csv.lines().skip(1).collect::<Vec<_>>().join("\n"),
    );
    let keys: String = model.keys().map(|k| format!("{k}\n")).collect();
    assert_eq!(export(&f, "keys"), keys);
    let mut first = String::new();
    for (_, id, note, r) in &data {
        first.push_str(&format!("{id},{},{r}\n", csv_field(note)));
    }
    import(&f, &with("first", &["--value-column", "3"]), &first);
    assert_eq!(export(&f, "first"), model_text(&model));

    // erase --key-column: the keys of a wide file.
    let gone: Vec<u64> = model.keys().copied().step_by(3).collect();
    let mut wide = String::new();
    for k in &gone {
        wide.push_str(&format!("x,{k},y\n"));
    }
    let o = tersedb(
        &["erase", &f, "--db", "by_number", "--key-column", "2"],
        wide.as_bytes(),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let mut left = model.clone();
    for k in &gone {
        left.remove(k);
    }
    assert_eq!(export(&f, "by_number"), model_text(&left));
    let _ = std::fs::remove_file(&f);
}

#[test]
fn timestamps_in_a_chosen_column() {
    let f = temp("columns-ts");
    let csv = "station,time,delay,comment\n\
               A,2024-03-01T08:00:00Z,4,\"fine, thanks\"\n\
               B,2024-03-01 17:30:00,NA,\n\
               C,2024-03-02,12,x\n";
    import(
        &f,
        &[
            "--db",
            "d",
            "--record-type",
            "u32",
            "--header",
            "--timestamps",
            "s",
            "--key-column",
            "time",
            "--value-column",
            "delay",
        ],
        csv,
    );
    // 17:30 had no value (NA): skipped.
    assert_eq!(export(&f, "d"), "1709280000\t4\n1709337600\t12\n");
    let _ = std::fs::remove_file(&f);
}

#[test]
fn column_errors_name_the_line_or_the_option() {
    let f = temp("columns-err");
    let run = |args: &[&str], input: &str| -> String {
        let mut a = vec!["import", f.as_str(), "--db", "a", "--record-type", "u32"];
        a.extend_from_slice(args);
        let o = tersedb(&a, input.as_bytes());
        assert!(!o.status.success(), "{args:?} succeeded");
        stderr(&o)
    };
    let e = run(
        &["--key-column", "1", "--value-column", "3"],
        "1,2,3\n4,5,6\n7,8\n9,1,2\n",
    );
    assert!(
        e.contains("line 3: 2 fields separated by ','; --value-column 3 needs at least 3"),
        "{e}"
    );
    assert!(e.contains("nothing was committed"), "{e}");
    let e = run(&["--header", "--key-column", "4"], "a,b,c\n1,2,3\n");
    assert!(
        e.contains("line 2: 3 fields separated by ','; --key-column 4 needs at least 4"),
        "{e}"
    );
    let e = run(&["--key-column", "id"], "1,2\n");
    assert!(
        e.contains("--key-column \"id\" names a column: give --header"),
        "{e}"
    );
    let e = run(&["--header", "--value-column", "delya"], "id,delay\n1,2\n");
    assert!(
        e.contains("--value-column \"delya\": no such column in the header (its columns: \"id\", \"delay\")"),
        "{e}"
    );
    let e = run(&["--header", "--value-column", "v"], "id,v,v\n1,2,3\n");
    assert!(e.contains("2 columns of that name (columns 2, 3)"), "{e}");
    let e = run(&["--key-column", "0"], "1,2\n");
    assert!(e.contains("columns are numbered from 1"), "{e}");
    let e = run(&["--key-column", "2", "--value-column", "2"], "1,2\n");
    assert!(e.contains("both column 2"), "{e}");
    // Without a column option, extra fields stay an error, now pointing at the options.
    let e = run(&[], "1,2,3\n");
    assert!(
        e.contains("line 1: 3 fields") && e.contains("--key-column"),
        "{e}"
    );
    let o = tersedb(&["erase", &f, "--db", "a", "--value-column", "2"], b"1,2\n");
    assert!(
        stderr(&o).contains("erase reads keys only"),
        "{}",
        stderr(&o)
    );
    // Nothing was created by the failed imports.
    assert!(!std::path::Path::new(&f).exists());
}

/// Names were resolved on the first data line: a header-only file with a misspelt name
/// imported 0 lines without an error (and committed the new database). Now the names are
/// checked against the header either way; a failure leaves the file byte-identical, and a file
/// (and reader table) the command created is removed.
#[test]
fn a_header_only_file_checks_its_column_names() {
    let f = temp("columns-header-only");
    let readers = format!("{f}-readers");
    let import = |db: &str, args: &[&str], input: &str| {
        let mut a = vec!["import", f.as_str(), "--db", db, "--record-type", "u32"];
        a.extend_from_slice(args);
        tersedb(&a, input.as_bytes())
    };
    let cases: [(&[&str], &str, &str); 5] = [
        (
            &["--header", "--key-column", "tme", "--value-column", "delay"],
            "time,delay\n",
            r#"--key-column "tme": no such column in the header (its columns: "time", "delay")"#,
        ),
        (
            &["--header", "--key-column", "time", "--value-column", "dlay"],
            "time,delay\r\n",
            r#"--value-column "dlay": no such column in the header (its columns: "time", "delay")"#,
        ),
        (
            &["--header", "--key-column", "time", "--value-column", "dlay"],
            "time\tdelay\n\n\n",
            r#"--value-column "dlay": no such column in the header (its columns: "time", "delay")"#,
        ),
        // With data lines, the same message (this worked before; the file must not change).
        (
            &["--header", "--key-column", "tme", "--value-column", "delay"],
            "time,delay\n5,6\n",
            r#"--key-column "tme": no such column in the header (its columns: "time", "delay")"#,
        ),
        (
            &["--header", "--key-column", "time"],
            "",
            "--header: the input ended before its header line (line 1)",
        ),
    ];
    // No file before: none after, and no reader table.
    for (args, input, want) in cases {
        let o = import("d", args, input);
        assert!(!o.status.success(), "{args:?} {input:?} succeeded");
        assert!(stderr(&o).contains(want), "{args:?}: {}", stderr(&o));
        assert!(!std::path::Path::new(&f).exists(), "{args:?} {input:?}");
        assert!(
            !std::path::Path::new(&readers).exists(),
            "{args:?} {input:?}"
        );
    }
    // A file with a database: byte-identical after each failure, into it or into a new one.
    let o = import("d", &[], "1\t2\n");
    assert!(o.status.success(), "{}", stderr(&o));
    let before = std::fs::read(&f).unwrap();
    for db in ["d", "e"] {
        for (args, input, want) in cases {
            let o = import(db, args, input);
            assert!(!o.status.success(), "{db} {args:?} {input:?} succeeded");
            assert!(stderr(&o).contains(want), "{args:?}: {}", stderr(&o));
            assert!(
                std::fs::read(&f).unwrap() == before,
                "{db} {args:?} {input:?}"
            );
        }
    }
    // erase reads the same header.
    let o = tersedb(
        &["erase", &f, "--db", "d", "--header", "--key-column", "tme"],
        b"time,delay\n",
    );
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains(r#"--key-column "tme": no such column"#),
        "{}",
        stderr(&o)
    );
    assert!(std::fs::read(&f).unwrap() == before);
    // Names that exist: a header-only file is an empty import, not an error.
    let o = import(
        "e",
        &[
            "--header",
            "--key-column",
            "time",
            "--value-column",
            "delay",
        ],
        "time,delay\n",
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("imported 0 lines"), "{}", stderr(&o));
    assert_eq!(export(&f, "d"), "1\t2\n");
    assert_eq!(export(&f, "e"), "");
    let _ = std::fs::remove_file(&f);
    let _ = std::fs::remove_dir_all(&readers);
}
