//! Everyday use of the `tersedb` command (issue "Everyday use"): each import format (TAB, CSV
//! with quotes, whitespace, a header, skipped lines, blank lines, NA values, ISO 8601
//! timestamps), each error a user meets (a line with too many fields, a missing value with
//! `--missing error`, a page size that does not fit the file, an ambiguous or misspelt
//! database, an absent key), `get`, `drop`, `export` ranges, queries as CSV and JSON (errors
//! too), `info`'s size breakdown adding up, and open errors naming the file once.

mod common;

use common::{stderr, stdout, temp, tersedb};

/// Imports `input` and returns the export of the database.
fn round(f: &str, args: &[&str], input: &str) -> String {
    let mut a = vec!["import", f];
    a.extend_from_slice(args);
    let o = tersedb(&a, input.as_bytes());
    assert!(o.status.success(), "{args:?}: {}", stderr(&o));
    let db = args
        .iter()
        .position(|&x| x == "--db")
        .map(|i| args[i + 1])
        .unwrap();
    stdout(&tersedb(&["export", f, "--db", db], b""))
}

#[test]
fn every_import_format() {
    let f = temp("formats");
    let num = ["--key-type", "u64", "--record-type", "i64"];
    let with = |db: &'static str, extra: &[&'static str]| -> Vec<&'static str> {
        let mut v = vec!["--db", db];
        v.extend_from_slice(&num);
        v.extend_from_slice(extra);
        v
    };
    let want = "1\t10\n2\t-20\n3\t30\n";
    assert_eq!(round(&f, &with("tab", &[]), "1\t10\n2\t-20\n3\t30\n"), want);
    assert_eq!(
        round(&f, &with("csv", &[]), "1,10\r\n2,-20\r\n3,\"30\"\r\n"),
        want
    );
    assert_eq!(
        round(&f, &with("ws", &[]), "  1   10\n2\t -20\n3 30  \n"),
        want
    );
    assert_eq!(
        round(
            &f,
            &with("semi", &["--delimiter", ";"]),
            "1;10\n2;-20\n3;30\n"
        ),
        want
    );
    assert_eq!(
        round(
            &f,
            &with("header", &["--header"]),
            "id,value\n1,10\n2,-20\n3,30\n"
        ),
        want
    );
    assert_eq!(
        round(
            &f,
            &with("skip", &["--skip", "2", "--header"]),
            "# exported\n# by hand\nid value\n1 10\n2 -20\n3 30\n"
        ),
        want
    );
    // Blank lines anywhere, a trailing one included, are no entries.
    assert_eq!(
        round(&f, &with("blank", &[]), "\n1,10\n\n2,-20\n3,30\n\n  \n"),
        want
    );
    // Empty and NA values are skipped, and counted.
    let o = tersedb(
        &[
            "import",
            &f,
            "--db",
            "na",
            "--key-type",
            "u64",
            "--record-type",
            "i64",
        ],
        b"1,10\n2,NA\n3,\n4,-20\n",
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("2 lines without a value"),
        "{}",
        stderr(&o)
    );
    assert_eq!(
        stdout(&tersedb(&["export", &f, "--db", "na"], b"")),
        "1\t10\n4\t-20\n"
    );
    // Keys only, in any of the formats.
    assert_eq!(round(&f, &["--db", "set"], "3\n1\n\n2\n"), "1\n2\n3\n");
    let _ = std::fs::remove_file(&f);
}

#[test]
fn timestamps_in_and_out() {
    let f = temp("ts");
    let input = "when,delay\n2024-03-01T00:00:00Z,1.5\n2024-03-01 06:00:00,2.5\n\
                 2024-03-02T01:00:00+01:00,4\n2024-03-03,NA\n";
    let o = tersedb(
        &[
            "import",
            &f,
            "--db",
            "delay",
            "--key-type",
            "u64",
            "--record-type",
            "f64",
            "--header",
            "--timestamps",
            "s",
        ],
        input.as_bytes(),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let o = tersedb(&["export", &f, "--timestamps", "s"], b"");
    assert_eq!(
        stdout(&o),
        "2024-03-01T00:00:00Z\t1.5\n2024-03-01T06:00:00Z\t2.5\n2024-03-02T00:00:00Z\t4\n"
    );
    let o = tersedb(&["export", &f, "--timestamps", "ms", "--limit", "1"], b"");
    assert_eq!(stdout(&o), "1970-01-20T18:47:31.200Z\t1.5\n");
    let o = tersedb(
        &[
            "export",
            &f,
            "--timestamps",
            "s",
            "--from",
            "2024-03-01T01:00:00Z",
            "--to",
            "2024-03-02",
        ],
        b"",
    );
    assert_eq!(
        stdout(&o),
        "2024-03-01T06:00:00Z\t2.5\n2024-03-02T00:00:00Z\t4\n"
    );
    let o = tersedb(
        &["get", &f, "--timestamps", "s", "2024-03-01 06:00:00"],
        b"",
    );
    assert_eq!(stdout(&o), "2024-03-01T06:00:00Z\t2.5\n");
    // Daily averages: GROUP BY a bucket of 86400 seconds.
    let o = tersedb(
        &[
            "query", &f, "--csv",
            "SELECT key / 86400 * 86400 AS day, COUNT(*) AS n, AVG(record) FROM delay GROUP BY key / 86400;",
        ],
        b"",
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        "day,n,AVG(record)\r\n1709251200,2,2\r\n1709337600,1,4\n"
    );
    // A fraction finer than the unit, and a key before 1970, name the line.
    let o = tersedb(
        &["import", &f, "--db", "delay", "--timestamps", "s"],
        b"2024-03-01T00:00:00.5Z,1\n",
    );
    assert!(
        stderr(&o).contains("line 1") && stderr(&o).contains("finer"),
        "{}",
        stderr(&o)
    );
    let o = tersedb(
        &["import", &f, "--db", "delay", "--timestamps", "s"],
        b"2024-03-05T00:00:00Z,1\n1969-07-20T20:17:00Z,2\n",
    );
    assert!(
        stderr(&o).contains("line 2") && stderr(&o).contains("1970"),
        "{}",
        stderr(&o)
    );
    let _ = std::fs::remove_file(&f);
}

#[test]
fn import_errors_name_the_line_or_the_option() {
    let f = temp("errors");
    let o = tersedb(
        &["import", &f, "--db", "a", "--record-type", "u32"],
        b"1,2\n2,3,4\n",
    );
    assert!(!o.status.success());
    assert!(stderr(&o).contains("line 2: 3 fields"), "{}", stderr(&o));
    let o = tersedb(
        &[
            "import",
            &f,
            "--db",
            "a",
            "--record-type",
            "u32",
            "--missing",
            "error",
        ],
        b"1,2\n2,NA\n",
    );
    assert!(stderr(&o).contains("line 2: no value"), "{}", stderr(&o));
    let o = tersedb(
        &["import", &f, "--db", "a", "--record-type", "u32"],
        b"1,2\n\"3,4\n",
    );
    assert!(
        stderr(&o).contains("line 2: unterminated"),
        "{}",
        stderr(&o)
    );
    let o = tersedb(&["import", &f, "--db", "a", "--delimiter", "::"], b"1\n");
    assert!(stderr(&o).contains("--delimiter"), "{}", stderr(&o));
    // Options a file or database cannot take are refused, not ignored.
    assert!(tersedb(
        &["import", &f, "--db", "a", "--record-type", "u32"],
        b"1,2\n"
    )
    .status
    .success());
    let o = tersedb(
        &["import", &f, "--db", "a", "--page-size", "4096"],
        b"5,6\n",
    );
    assert!(
        stderr(&o).contains("--page-size 4096 applies to a new file"),
        "{}",
        stderr(&o)
    );
    let o = tersedb(&["import", &f, "--db", "a", "--key-type", "u64"], b"5,6\n");
    assert!(
        stderr(&o).contains("exists with key type u32, not u64"),
        "{}",
        stderr(&o)
    );
    let o = tersedb(&["import", &f, "--db", "a", "--block-size", "32"], b"5,6\n");
    assert!(stderr(&o).contains("keys per block"), "{}", stderr(&o));
    let o = tersedb(&["import", &f, "--db", "a", "--timestamps", "s"], b"x\n");
    assert!(stderr(&o).contains("line 1"), "{}", stderr(&o));
    // One database: --db may be left out; with two it must be given.
    assert!(tersedb(&["import", &f], b"7,8\n").status.success());
    assert_eq!(stdout(&tersedb(&["export", &f], b"")), "1\t2\n7\t8\n");
    assert!(tersedb(&["import", &f, "--db", "b"], b"1\n")
        .status
        .success());
    let o = tersedb(&["export", &f], b"");
    assert!(
        stderr(&o).contains("2 databases (\"a\", \"b\")"),
        "{}",
        stderr(&o)
    );
    let o = tersedb(&["export", &f, "--db", "A"], b"");
    assert!(stderr(&o).contains("did you mean \"a\"?"), "{}", stderr(&o));
    let o = tersedb(&["import", &temp("fresh")], b"1\n");
    assert!(
        stderr(&o).contains("name the one to create with --db"),
        "{}",
        stderr(&o)
    );
    let _ = std::fs::remove_file(&f);
}

#[test]
fn get_drop_and_export_ranges() {
    let f = temp("get");
    let lines: String = (0..100).map(|i| format!("{}\t{}\n", i * 3, i)).collect();
    assert!(tersedb(
        &["import", &f, "--db", "t", "--record-type", "u64"],
        lines.as_bytes()
    )
    .status
    .success());
    let o = tersedb(&["get", &f, "9", "12"], b"");
    assert!(o.status.success());
    assert_eq!(stdout(&o), "9\t3\n12\t4\n");
    let o = tersedb(&["get", &f, "9", "10"], b"");
    assert!(!o.status.success());
    assert_eq!(stdout(&o), "9\t3\n");
    assert!(
        stderr(&o).contains("1 of 2 keys not in \"t\": 10"),
        "{}",
        stderr(&o)
    );
    let o = tersedb(&["get", &f, "--json", "9", "10"], b"");
    assert!(!o.status.success());
    assert_eq!(
        stdout(&o),
        "[{\"key\":9,\"value\":3,\"found\":true},{\"key\":10,\"value\":null,\"found\":false}]\n"
    );
    let o = tersedb(&["get", &f, "nine"], b"");
    assert!(stderr(&o).contains("\"nine\""), "{}", stderr(&o));
    let o = tersedb(&["export", &f, "--from", "10", "--to", "20"], b"");
    assert_eq!(stdout(&o), "12\t4\n15\t5\n18\t6\n");
    let o = tersedb(&["export", &f, "--from", "290", "--limit", "5"], b"");
    assert_eq!(stdout(&o), "291\t97\n294\t98\n297\t99\n");
    let o = tersedb(&["export", &f, "--limit", "2"], b"");
    assert_eq!(stdout(&o), "0\t0\n3\t1\n");
    let o = tersedb(&["drop", &f, "--db", "tt"], b"");
    assert!(stderr(&o).contains("did you mean \"t\"?"), "{}", stderr(&o));
    let o = tersedb(&["drop", &f, "--db", "t"], b"");
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("dropped database \"t\" (100 keys)"),
        "{}",
        stderr(&o)
    );
    let o = tersedb(&["export", &f], b"");
    assert!(stderr(&o).contains("has no database"), "{}", stderr(&o));
    assert!(tersedb(&["check", &f], b"").status.success());
    let _ = std::fs::remove_file(&f);
}

#[test]
fn queries_as_csv_and_json_errors_as_json() {
    let f = temp("q");
    assert!(tersedb(
        &["import", &f, "--db", "delay", "--record-type", "u32"],
        b"1,5\n2,7\n3,\"9\"\n"
    )
    .status
    .success());
    let o = tersedb(
        &[
            "query",
            &f,
            "--csv",
            "SELECT * FROM delay ORDER BY key DESC LIMIT 2",
        ],
        b"",
    );
    assert_eq!(stdout(&o), "key,record\r\n3,9\r\n2,7\n");
    let o = tersedb(
        &[
            "query",
            &f,
            "--json",
            "SELECT key AS k FROM delay LIMIT 1 OFFSET 1",
        ],
        b"",
    );
    assert_eq!(stdout(&o), "{\"columns\":[\"k\"],\"rows\":[[2]]}\n");
    let o = tersedb(
        &[
            "query",
            &f,
            "SELECT record, COUNT(*) FROM delay GROUP BY record",
        ],
        b"",
    );
    assert!(stdout(&o).contains("(3 rows)"), "{}", stdout(&o));
    let o = tersedb(&["query", &f, "--json", "SELECT COUNT(*) FROM dealy"], b"");
    assert!(!o.status.success());
    assert_eq!(
        stdout(&o),
        "{\"error\":\"no database named \\\"dealy\\\" (did you mean \\\"delay\\\"?)\"}\n"
    );
    let o = tersedb(&["query", &f, "--json", "SELECT SUM(keys) FROM delay"], b"");
    assert!(
        stdout(&o).starts_with(
            "{\"error\":\"syntax error at column 12: unknown column keys (did you mean key?)"
        ),
        "{}",
        stdout(&o)
    );
    let o = tersedb(&["info", "--json", &temp("absent")], b"");
    assert!(stdout(&o).starts_with("{\"error\":"), "{}", stdout(&o));
    let o = tersedb(&["check", "--json", &f], b"");
    assert!(stdout(&o).contains("\"clean\":true"), "{}", stdout(&o));
    let _ = std::fs::remove_file(&f);
}

/// A JSON number field of `s` after `"name":`.
fn field(s: &str, name: &str) -> u64 {
    let at = s
        .find(&format!("\"{name}\":"))
        .unwrap_or_else(|| panic!("{name} in {s}"));
    s[at + name.len() + 3..]
        .split(|c: char| !c.is_ascii_digit())
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

#[test]
fn info_explains_every_byte() {
    let f = temp("info");
    let lines: String = (0..20000)
        .map(|i| format!("{}\t{}\n", i * 7, i % 100))
        .collect();
    // "plain": keys and records raw; "packed": BP128 keys, records compressed (the default).
    for (db, comp, recs) in [
        ("plain", "none", &["--record-compression", "none"][..]),
        ("packed", "bp128", &[][..]),
    ] {
        let mut args = vec![
            "import",
            &f,
            "--db",
            db,
            "--record-type",
            "u32",
            "--compression",
            comp,
            "--page-size",
            "4096",
        ];
        args.extend_from_slice(recs);
        let o = tersedb(&args, lines.as_bytes());
        assert!(o.status.success(), "{}", stderr(&o));
    }
    // Some free pages.
    assert!(tersedb(&["erase", &f, "--db", "plain"], b"0\n7\n14\n")
        .status
        .success());
    let o = tersedb(&["info", &f, "--json"], b"");
    let j = stdout(&o);
    let file = std::fs::metadata(&f).unwrap().len();
    assert_eq!(field(&j, "file_bytes"), file);
    assert_eq!(
        field(&j, "database_bytes")
            + field(&j, "catalog_bytes")
            + field(&j, "free_bytes")
            + field(&j, "pager_bytes")
            + field(&j, "tail_bytes"),
        file,
        "{j}"
    );
    for db in ["plain", "packed"] {
        let e = &j[j.find(&format!("\"name\":\"{db}\"")).unwrap()..];
        assert_eq!(
            field(e, "key_bytes") + field(e, "record_bytes") + field(e, "overhead_bytes"),
            field(e, "total_bytes"),
            "{e}"
        );
    }
    let rec_bytes = |db: &str| {
        let e = &j[j.find(&format!("\"name\":\"{db}\"")).unwrap()..];
        (field(e, "record_bytes"), field(e, "keys"))
    };
    let (plain, n) = rec_bytes("plain");
    assert!(plain >= 4 * n, "{j}");
    // Values 0..100 in 7 bits: compressed records take a fraction of the raw 4 bytes.
    let (packed, n) = rec_bytes("packed");
    assert!(packed * 2 < 4 * n, "{j}");
    assert!(j.contains("\"record_compression\":\"auto\""), "{j}");
    assert!(j.contains("\"compression\":\"bp128\""), "{j}");
    assert!(
        j.contains("\"key_type\":\"u32\",\"records\":\"u32\""),
        "{j}"
    );
    let t = stdout(&tersedb(&["info", &f], b""));
    for word in [
        "key bytes",
        "record bytes",
        "overhead",
        "free",
        "compression  bp128",
        "records      u32",
        "records      u32, compressed (auto: ",
    ] {
        assert!(t.contains(word), "{word}: {t}");
    }
    assert!(!t.contains("U32") && !t.contains("Fixed("), "{t}");
    let _ = std::fs::remove_file(&f);
}

/// `--record-compression auto`: sensor readings (f64 with two decimals, µs timestamps) export
/// the same as raw records, aggregate the same, take a fraction of the record bytes in `info`,
/// and an existing database refuses the other setting.
#[test]
fn compressed_records_round_trip_and_shrink() {
    let f = temp("recs");
    let lines: String = (0..30000u64)
        .map(|i| {
            let t = 1_764_000_000_000_000u64 + i * 250_000 + (i * 7919) % 1000;
            // Readings as a sensor writes them: two decimals of text.
            let k = (i * 37) % 900;
            format!("{t}\t{}.{:02}\n", 18 + k / 100, k % 100)
        })
        .collect();
    let args = |db: &'static str, rc: &'static str| {
        vec![
            "--db",
            db,
            "--key-type",
            "u64",
            "--record-type",
            "f64",
            "--record-compression",
            rc,
        ]
    };
    let raw = round(&f, &args("raw", "none"), &lines);
    let packed = round(&f, &args("packed", "auto"), &lines);
    assert_eq!(raw, packed);
    assert_eq!(raw.lines().count(), 30000);
    let q = |db: &str| {
        stdout(&tersedb(
            &[
                "query",
                &f,
                &format!("SELECT COUNT(*), SUM(record), MIN(record), MAX(record) FROM {db}"),
                "--csv",
            ],
            b"",
        ))
    };
    assert_eq!(q("raw"), q("packed"));
    let j = stdout(&tersedb(&["info", &f, "--json"], b""));
    let rec = |db: &str| {
        let e = &j[j.find(&format!("\"name\":\"{db}\"")).unwrap()..];
        field(e, "record_bytes")
    };
    assert!(rec("raw") >= 8 * 30000, "{j}");
    assert!(rec("packed") * 4 < rec("raw"), "{j}");
    assert!(j.contains("\"record_compression\":\"auto\""), "{j}");
    let t = stdout(&tersedb(&["info", &f], b""));
    assert!(t.contains("records      f64, compressed (auto: "), "{t}");
    // The other setting on an existing database is refused, naming both.
    let o = tersedb(
        &[
            "import",
            &f,
            "--db",
            "packed",
            "--record-compression",
            "none",
        ],
        b"1\t2.5\n",
    );
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("record compression auto, not none"),
        "{}",
        stderr(&o)
    );
    // Variable-size records cannot be compressed: a clear error.
    let o = tersedb(
        &["import", &f, "--db", "var", "--record-compression", "auto"],
        b"1\thello\n",
    );
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("compressed records need fixed-size records"),
        "{}",
        stderr(&o)
    );
}

/// A new integer-key database compresses its keys (`auto`, a codec per block) unless
/// `--compression` says otherwise; pages under 1 KiB, where no codec block fits, stay raw; an
/// existing database keeps what it has when a later import names no compression.
#[test]
fn new_integer_databases_compress_by_default() {
    let f = temp("default-codec");
    let small = temp("default-codec-512");
    let lines: String = (0..5000).map(|i| format!("{}\n", i * 3)).collect();
    let import = |file: &str, extra: &[&str]| {
        let mut a = vec!["import", file];
        a.extend_from_slice(extra);
        let o = tersedb(&a, lines.as_bytes());
        assert!(o.status.success(), "{extra:?}: {}", stderr(&o));
    };
    import(&f, &["--db", "ids"]);
    import(&f, &["--db", "raw", "--compression", "none"]);
    import(&f, &["--db", "wide", "--key-type", "u64"]);
    import(&small, &["--db", "ids", "--page-size", "512"]);
    // Importing into the existing databases again changes nothing of their settings.
    import(&f, &["--db", "ids"]);
    import(&f, &["--db", "raw"]);
    let j = stdout(&tersedb(&["info", &f, "--json"], b""));
    let of = |db: &str| -> String {
        let e = &j[j.find(&format!("\"name\":\"{db}\"")).unwrap()..];
        let c = &e[e.find("\"compression\":").unwrap() + 14..];
        c[..c.find(',').unwrap()].to_string()
    };
    assert_eq!(of("ids"), "\"auto\"", "{j}");
    assert_eq!(of("wide"), "\"auto\"", "{j}");
    assert_eq!(of("raw"), "\"none\"", "{j}");
    let j2 = stdout(&tersedb(&["info", &small, "--json"], b""));
    assert!(j2.contains("\"compression\":\"none\""), "{j2}");
    // The compressed database holds the same keys in fewer bytes.
    assert_eq!(
        stdout(&tersedb(&["export", &f, "--db", "ids"], b"")),
        stdout(&tersedb(&["export", &f, "--db", "raw"], b""))
    );
    let bytes = |db: &str| {
        let e = &j[j.find(&format!("\"name\":\"{db}\"")).unwrap()..];
        field(e, "key_bytes")
    };
    assert!(bytes("ids") * 2 < bytes("raw"), "{j}");
    // The codec mix: blocks per codec, only for compressed keys.
    let mix = |db: &str| -> String {
        let e = &j[j.find(&format!("\"name\":\"{db}\"")).unwrap()..];
        let m = &e[e.find("\"codec_mix\":{").unwrap() + 13..];
        m[..m.find('}').unwrap()].to_string()
    };
    assert_eq!(mix("raw"), "", "{j}");
    let ids = mix("ids");
    assert!(!ids.is_empty(), "{j}");
    let blocks: u64 = ids
        .split(',')
        .map(|kv| kv.split(':').nth(1).unwrap().parse::<u64>().unwrap())
        .sum();
    // 5,000 keys in blocks of at most 257 keys.
    assert!(blocks >= 5000 / 257, "{ids}");
    let t = stdout(&tersedb(&["info", &f], b""));
    assert!(t.contains("codec mix"), "{t}");
    let _ = std::fs::remove_file(&f);
    let _ = std::fs::remove_file(&small);
}

/// The engine's open errors name the file (`cannot open FILE: ...`, `FILE is a directory`), and
/// the CLI used to add `FILE: ` in front once more. Every command's open error names the path
/// exactly once: a missing file, a directory, a file that is not a tersedb file, a file
/// another process writes (`Locked`), in text and in `--json`.
#[test]
fn open_errors_name_the_file_once() {
    let missing = temp("open-errors-missing");
    let dir = temp("open-errors-dir");
    std::fs::create_dir_all(&dir).unwrap();
    let junk = temp("open-errors-junk");
    std::fs::write(&junk, b"not a database\n").unwrap();
    let once = |f: &str, args: &[&str], want: &str| {
        let mut a = args.to_vec();
        a.insert(1, f);
        let o = tersedb(&a, b"1\n");
        assert!(!o.status.success(), "{a:?} succeeded");
        // --json errors are on standard output.
        let text = format!("{}{}", stderr(&o), stdout(&o));
        assert_eq!(text.matches(f).count(), 1, "{a:?}: {text}");
        assert!(text.contains(want), "{a:?}: {text}");
        text
    };
    let commands: [&[&str]; 12] = [
        &["info"],
        &["info", "--json"],
        &["check"],
        &["export"],
        &["get", "1"],
        &["query", "SELECT COUNT(*) FROM a"],
        &["query", "--json", "SELECT COUNT(*) FROM a"],
        &["drop", "--db", "a"],
        &["erase", "--db", "a"],
        &["dump", "--page", "0"],
        &["recover"],
        &["compact"],
    ];
    for c in commands {
        once(&missing, c, "No such file or directory");
        once(&dir, c, "is a directory");
        once(&junk, c, &format!("{junk}: not a usable tersedb file"));
    }
    once(&dir, &["import", "--db", "a"], "is a directory");
    once(
        &junk,
        &["import", "--db", "a"],
        &format!("{junk}: not a usable tersedb file"),
    );

    // A writer blocked on its input holds the file; every other writer is refused, naming the
    // file and the process.
    let f = temp("open-errors-locked");
    let o = tersedb(&["import", &f, "--db", "a"], b"1\n");
    assert!(o.status.success(), "{}", stderr(&o));
    let mut writer = std::process::Command::new(env!("CARGO_BIN_EXE_tersedb"))
        .args(["import", &f, "--db", "a"])
        .stdin(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let note = format!("{f}-readers/writer");
    let pid = writer.id().to_string();
    let start = std::time::Instant::now();
    while std::fs::read_to_string(&note).ok().as_deref() != Some(pid.as_str()) {
        assert!(
            start.elapsed().as_secs() < 20,
            "the writer never opened {f}"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    for c in [
        &["drop", "--db", "a"][..],
        &["import", "--db", "a"],
        &["erase", "--db", "a"],
    ] {
        once(
            &f,
            c,
            &format!("{f}: the file is already open for writing by process {pid}"),
        );
    }
    drop(writer.stdin.take());
    assert!(writer.wait().unwrap().success());
    for p in [&missing, &junk, &f] {
        let _ = std::fs::remove_file(p);
        let _ = std::fs::remove_dir_all(format!("{p}-readers"));
    }
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(format!("{dir}-readers"));
}
