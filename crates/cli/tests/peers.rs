//! Pins `tersedb bench --peers` end to end: every store runs in its own process and answers
//! exactly (the command fails otherwise), the JSON rows carry every figure and the entropy
//! bound, keys come from a file too (u64 keys: tersedb uncompressed, the codecs refused with a
//! clear error), and `--plot` writes the charts. Built only with the CLI's `peers` feature
//! (scripts/test.d/peers.sh).
#![cfg(feature = "peers")]

use std::process::{Command, Output};

fn tersedb(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tersedb"))
        .args(args)
        .output()
        .expect("run tersedb")
}

fn temp(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("tersedb-peers-cli-{}-{name}", std::process::id()))
}

fn num(line: &str, name: &str) -> f64 {
    let pat = format!("\"{name}\":");
    let start = line.find(&pat).unwrap_or_else(|| panic!("{name}: {line}")) + pat.len();
    let rest = &line[start..];
    let end = rest.find([',', '}']).unwrap_or(rest.len());
    rest[..end]
        .parse()
        .unwrap_or_else(|_| panic!("{name}: {line}"))
}

#[test]
fn peers_run_side_by_side_and_agree() {
    let o = tersedb(&[
        "bench",
        "--peers",
        "lmdb,redb,sqlite,roaring",
        "--keys",
        "30000",
        "--dist",
        "uniform",
        "--json",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rows = String::from_utf8_lossy(&o.stdout).into_owned();
    let names: Vec<&str> = rows
        .lines()
        .map(|l| l.split('"').nth(3).unwrap_or(""))
        .collect();
    assert_eq!(
        names,
        [
            "tersedb-none",
            "tersedb-bp128",
            "tersedb-pfor-delta",
            "tersedb-auto",
            "lmdb",
            "redb",
            "sqlite",
            "roaring"
        ]
    );
    for l in rows.lines() {
        assert!(l.contains("\"verified\":true"), "{l}");
        // 30,000 uniform u32 keys: log2 C(2^32, 30000) / 30000 bits = 2.32 bytes per key.
        let bound = num(l, "entropy_bytes_per_key");
        assert!((2.3..2.35).contains(&bound), "{l}");
        assert!(num(l, "bytes_per_key") > bound, "{l}");
        for f in [
            "load_ascending_s",
            "lookup_s",
            "scan_s",
            "range_sum_s",
            "peak_rss",
        ] {
            assert!(num(l, f) > 0.0, "{f}: {l}");
        }
        assert!(l.contains("\"durability\":\""), "{l}");
    }
    // The text report prints each store's durability and the bound.
    let o = tersedb(&[
        "bench", "--peers", "roaring", "--codecs", "bp128", "--keys", "5000",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("entropy bound log2 C(U, n)"), "{text}");
    assert!(text.contains("serialized to a file at close"), "{text}");
    assert!(text.contains("Durability::None"), "{text}");
}

#[test]
fn peers_on_a_key_file_and_bad_names() {
    let path = temp("keys.txt");
    let text: String = (0..4000u64)
        .map(|k| format!("{}\n", (1 << 40) + k * k))
        .collect();
    std::fs::write(&path, text).unwrap();
    let p = path.to_str().unwrap();
    let o = tersedb(&[
        "bench",
        "--peers",
        "lmdb,sqlite",
        "--codecs",
        "none",
        "--input",
        p,
        "--json",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(String::from_utf8_lossy(&o.stdout).lines().count(), 3);
    // u64 keys with a codec and `auto`: tersedb compresses them too (offsets from each block's
    // first key) and answers exactly.
    let o = tersedb(&[
        "bench",
        "--peers",
        "lmdb",
        "--codecs",
        "bp128,auto",
        "--input",
        p,
        "--json",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rows = String::from_utf8_lossy(&o.stdout).into_owned();
    assert_eq!(rows.lines().count(), 3, "{rows}");
    assert!(
        rows.lines().all(|l| l.contains("\"verified\":true")),
        "{rows}"
    );
    let o = tersedb(&["bench", "--peers", "lmdb", "--codecs", "nope", "--input", p]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("unknown codec") && err.contains("auto"),
        "{err}"
    );
    let o = tersedb(&["bench", "--peers", "mysql", "--keys", "100"]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("unknown peer"));
    let _ = std::fs::remove_file(&path);
}

/// `bench peers` is `bench --peers` with every peer of the build.
#[test]
fn bench_peers_runs_every_peer_of_the_build() {
    let o = tersedb(&[
        "bench", "peers", "--codecs", "none", "--keys", "3000", "--json",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rows = String::from_utf8_lossy(&o.stdout).into_owned();
    let names: Vec<&str> = rows
        .lines()
        .map(|l| l.split('"').nth(3).unwrap_or(""))
        .collect();
    let mut want = vec!["tersedb-none", "lmdb", "redb", "sqlite", "roaring"];
    if cfg!(feature = "rocksdb") {
        want.extend(["rocksdb-lz4", "rocksdb-zstd"]);
    }
    if cfg!(feature = "fjall") {
        want.push("fjall");
    }
    assert_eq!(names, want);
    // Named peers narrow it.
    let o = tersedb(&[
        "bench", "peers", "--peers", "roaring", "--keys", "3000", "--json",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stdout)
        .lines()
        .last()
        .unwrap_or("")
        .contains("\"store\":\"roaring\""));
}

/// A build without the RocksDB or fjall feature names the feature to rebuild with.
#[cfg(not(all(feature = "rocksdb", feature = "fjall")))]
#[test]
fn peers_left_out_of_the_build_name_their_feature() {
    let (peer, feature) = if cfg!(feature = "rocksdb") {
        ("fjall", "fjall")
    } else {
        ("rocksdb", "rocksdb")
    };
    let o = tersedb(&["bench", "--peers", peer, "--keys", "100"]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("not in this build") && err.contains(&format!("peers,{feature}")),
        "{err}"
    );
}

/// RocksDB (LZ4 and ZSTD, `rocksdb` stands for both) and fjall answer exactly beside tersedb,
/// their compaction time is printed beside their durability, and their sizes are real files.
#[cfg(all(feature = "rocksdb", feature = "fjall"))]
#[test]
fn lsm_peers_answer_exactly_and_show_their_compaction() {
    let o = tersedb(&[
        "bench",
        "--peers",
        "rocksdb,fjall,rocksdb-lz4",
        "--codecs",
        "auto",
        "--keys",
        "40000",
        "--dist",
        "clustered",
        "--json",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rows = String::from_utf8_lossy(&o.stdout).into_owned();
    let names: Vec<&str> = rows
        .lines()
        .map(|l| l.split('"').nth(3).unwrap_or(""))
        .collect();
    assert_eq!(
        names,
        ["tersedb-auto", "rocksdb-lz4", "rocksdb-zstd", "fjall"]
    );
    for l in rows.lines() {
        assert!(l.contains("\"verified\":true"), "{l}");
        // Every store holds 40,000 keys: more than the entropy bound, less than 16 bytes each.
        let b = num(l, "bytes_per_key");
        assert!(b > num(l, "entropy_bytes_per_key") && b < 16.0, "{l}");
        assert!(num(l, "bytes_per_key_random") > 0.0, "{l}");
    }
    let o = tersedb(&[
        "bench",
        "--peers",
        "rocksdb-zstd,fjall",
        "--codecs",
        "none",
        "--keys",
        "5000",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("ZSTD blocks") && text.contains("full compaction"),
        "{text}"
    );
    assert!(text.contains("major compaction"), "{text}");
}
