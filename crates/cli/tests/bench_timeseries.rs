//! Pins `tersedb bench timeseries --quick --json` end to end: every table has its rows (three
//! series, none + every codec + auto, raw and compressed records), the sizes follow from the
//! types (raw keys and records take exactly their width), compressed records are smaller than
//! raw ones, zstd -19 is measured beside them, every speed row says how many answers it checked
//! against the generated data, and each target has a verdict. Bad arguments are errors.

use std::process::{Command, Output};

fn tersedb(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tersedb"))
        .args(args)
        .output()
        .expect("run tersedb")
}

/// The raw text of field `key` in a one-line JSON object (numbers, booleans, strings unquoted).
fn raw<'a>(line: &'a str, key: &str) -> &'a str {
    let at = line
        .find(&format!("\"{key}\":"))
        .unwrap_or_else(|| panic!("no {key} in {line}"))
        + key.len()
        + 3;
    let rest = &line[at..];
    if let Some(s) = rest.strip_prefix('"') {
        return &s[..s.find('"').unwrap()];
    }
    &rest[..rest.find([',', '}']).unwrap()]
}

fn num(line: &str, key: &str) -> f64 {
    raw(line, key)
        .parse()
        .unwrap_or_else(|_| panic!("{key} of {line} is not a number"))
}

fn rows<'a>(out: &'a str, table: &str) -> Vec<&'a str> {
    out.lines()
        .filter(|l| l.contains(&format!("\"table\":\"{table}\"")))
        .collect()
}

const CODECS: [&str; 10] = [
    "vbyte",
    "masked-vbyte",
    "varintgb",
    "streamvbyte",
    "bp128",
    "for",
    "simd-for",
    "pfor",
    "pfor-delta",
    "rice",
];

#[test]
fn quick_json_has_every_table_and_verified_answers() {
    let o = tersedb(&["bench", "timeseries", "--quick", "--json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8_lossy(&o.stdout);
    for l in out.lines() {
        assert!(l.starts_with("{\"table\":\"ts_") && l.ends_with('}'), "{l}");
    }
    // (series, key width, record width)
    let series = [("a", 8.0, 8.0), ("b", 8.0, 8.0), ("c", 4.0, 4.0)];

    let sizes = rows(&out, "ts_sizes");
    assert_eq!(sizes.len(), 3 * 12 * 2, "{out}");
    for (s, kw, rw) in series {
        let of = |keys: &str, records: &str| -> &str {
            sizes
                .iter()
                .find(|l| {
                    raw(l, "series") == s && raw(l, "keys") == keys && raw(l, "records") == records
                })
                .unwrap_or_else(|| panic!("no size row {s} {keys} {records}"))
        };
        for keys in std::iter::once("none").chain(CODECS).chain(["auto"]) {
            let (r, c) = (of(keys, "raw"), of(keys, "compressed"));
            for l in [r, c] {
                assert_eq!(raw(l, "verified"), "true", "{l}");
                let file = num(l, "file_bpe");
                assert!(
                    file >= num(l, "live_bpe") && num(l, "live_bpe") > 0.0,
                    "{l}"
                );
                assert!(
                    num(l, "live_bpe") >= num(l, "key_bpe") + num(l, "record_bpe") - 1e-6,
                    "{l}"
                );
                assert!(
                    (num(l, "of_raw") - num(l, "live_bpe") / (kw + rw)).abs() < 1e-3,
                    "{l}"
                );
            }
            // Raw records take exactly their width; compressed ones less.
            assert!((num(r, "record_bpe") - rw).abs() < 1e-3, "{r}");
            assert!(num(c, "record_bpe") < rw / 2.0, "{c}");
            if keys == "none" {
                assert!((num(r, "key_bpe") - kw).abs() < 1e-3, "{r}");
            } else {
                assert!(num(r, "key_bpe") < kw / 2.0, "{r}");
            }
        }

        let z = rows(&out, "ts_zstd");
        let z = z.iter().find(|l| raw(l, "series") == s).expect("zstd row");
        assert_eq!(num(z, "raw_bpe"), kw + rw);
        let total = num(z, "zstd19_bpe");
        assert!(total > 0.0 && total < kw + rw, "{z}");
        assert!((num(z, "zstd19_key_bpe") + num(z, "zstd19_value_bpe") - total).abs() < 2e-3);

        let speed: Vec<&str> = rows(&out, "ts_speed")
            .into_iter()
            .filter(|l| raw(l, "series") == s)
            .collect();
        assert_eq!(speed.len(), 3, "{out}");
        let recs: Vec<&str> = speed.iter().map(|l| raw(l, "records")).collect();
        assert_eq!(recs, ["raw", "compressed", "ratio"]);
        // 20,000 entries, two rounds (one to warm up) of 2,000 lookups, the cursor's 20,000
        // entries, 22 sums, up to 1,001 groups (fewer where series a pauses).
        for l in &speed[..2] {
            let checked = num(l, "answers_checked");
            assert!(
                (2.0 * (22_022.0 + 900.0)..=2.0 * (22_022.0 + 1001.0)).contains(&checked),
                "{l}"
            );
            for k in [
                "load_asc_s",
                "load_random_s",
                "lookup_us",
                "cursor_ms",
                "sum_1pct_ms",
                "sum_10pct_ms",
                "sum_100pct_ms",
                "group_by_ms",
            ] {
                assert!(num(l, k) > 0.0, "{k}: {l}");
            }
        }
        assert_eq!(
            num(speed[0], "answers_checked"),
            num(speed[1], "answers_checked")
        );
        let ratio = |k: &str| num(speed[2], k);
        assert!(
            (ratio("lookup_us") - num(speed[1], "lookup_us") / num(speed[0], "lookup_us")).abs()
                < 0.01
        );
        assert!(ratio("random_file_bpe") < 1.0, "{}", speed[2]);

        let v: Vec<&str> = rows(&out, "ts_verdict")
            .into_iter()
            .filter(|l| raw(l, "series") == s)
            .collect();
        assert_eq!(v.len(), if s == "c" { 6 } else { 5 }, "{out}");
        for l in v {
            assert!(matches!(raw(l, "met"), "true" | "false"), "{l}");
        }
    }

    let u = rows(&out, "ts_u64_vs_u32");
    let names: Vec<&str> = u.iter().map(|l| raw(l, "keys")).collect();
    let mut want: Vec<&str> = CODECS.to_vec();
    want.push("auto");
    assert_eq!(names, want);
    for l in u {
        let ratio = num(l, "u64_key_bpe") / num(l, "u32_key_bpe");
        assert!((ratio - num(l, "ratio")).abs() < 2e-3, "{l}");
        assert_eq!(
            raw(l, "within_5pct") == "true",
            num(l, "ratio") <= 1.05,
            "{l}"
        );
    }
}

#[test]
fn bad_arguments_are_errors() {
    let o = tersedb(&["bench", "timeseries", "--series", "a,x"]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("unknown series \"x\""));
    let o = tersedb(&["bench", "timeseries", "--entries", "1"]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("at least 2"));
}
