//! The fuzz harnesses (tests/fuzz/*.rs, the same code the cargo-fuzz targets in crates/tersedb/fuzz
//! run) in the normal test suite, where CI always runs them, nightly toolchain or not:
//! * every checked-in seed (`fuzz/seeds/<target>/`) and every input that once crashed a target
//!   (`fuzz/regressions/<target>/`, one file per fixed bug, named after it) is replayed;
//! * seeded random inputs (structured like the seeds) are run: a few hundred per target by
//!   default, many more under `TERSEDB_LONG=1`; `SEED=` re-runs one seed.

#[path = "fuzz/engine.rs"]
mod engine;
#[path = "fuzz/pages.rs"]
mod pages;
#[path = "fuzz/query.rs"]
mod query;

use std::path::PathBuf;

fn files(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fuzz");
    let mut out = Vec::new();
    for dir in ["seeds", "regressions"] {
        let Ok(rd) = std::fs::read_dir(root.join(dir).join(target)) else {
            continue;
        };
        for e in rd {
            let p = e.unwrap().path();
            let data = std::fs::read(&p).unwrap();
            out.push((p, data));
        }
    }
    out.sort();
    out
}

fn replay(target: &str, run: fn(&[u8])) {
    let inputs = files(target);
    assert!(!inputs.is_empty(), "no seeds for {target}");
    for (path, data) in inputs {
        eprintln!("replay {}", path.display());
        run(&data);
    }
}

fn seed() -> u64 {
    match std::env::var("SEED") {
        Ok(s) => s.parse().expect("SEED must be a number"),
        Err(_) => fastrand::u64(..),
    }
}

fn rounds(default: usize) -> usize {
    if std::env::var_os("SEED").is_some() {
        1
    } else if std::env::var_os("TERSEDB_LONG").is_some() {
        default * 50
    } else {
        default
    }
}

/// Random inputs built by `gen` from a seeded generator; prints the seed of a failing input.
fn random(target: &str, n: usize, run: fn(&[u8]), gen: fn(&mut fastrand::Rng) -> Vec<u8>) {
    for _ in 0..rounds(n) {
        let s = seed();
        let data = gen(&mut fastrand::Rng::with_seed(s));
        let r = std::panic::catch_unwind(|| run(&data));
        if let Err(e) = r {
            eprintln!("{target}: failed with SEED={s}, input {data:?}");
            std::panic::resume_unwind(e);
        }
    }
}

#[test]
fn pages_seeds_and_regressions() {
    replay("pages", pages::run);
}

#[test]
fn engine_seeds_and_regressions() {
    replay("engine", engine::run);
}

#[test]
fn query_seeds_and_regressions() {
    replay("query", query::run);
}

/// The `pages` templates of record kind 5 (status codes, one value nine times in ten) hold PDICT
/// chunks, so its seeds and random inputs damage that layout.
#[test]
fn pages_status_templates_hold_pdict_chunks() {
    for kind in [0u8, 7, 29, 30] {
        let img = pages::template(kind, 5);
        let store = tersedb::storage::MemStorage::from_bytes(img);
        let opts = tersedb::EnvOptions::default().page_size(pages::PAGE);
        let env = tersedb::Env::open_with_storage(Box::new(store), &opts, false).unwrap();
        let r = env.begin_read().unwrap();
        let mix = r.stats(&r.open_db("d").unwrap()).unwrap().record_mix();
        assert!(mix.iter().any(|m| m.0 == "pdict"), "kind {kind}: {mix:?}");
    }
}

#[test]
fn pages_random_damage() {
    random("pages", 200, pages::run, |rng| {
        let mut d = vec![
            rng.u8(..pages::KINDS),
            rng.u8(..pages::RECORDS),
            rng.u8(..8),
        ];
        for _ in 0..rng.usize(1..4) {
            d.push(rng.u8(..));
            d.extend(rng.u16(..).to_le_bytes());
            let len = rng.u8(1..12);
            d.push(len);
            d.extend((0..len).map(|_| rng.u8(..)));
        }
        d
    });
}

#[test]
fn engine_random_programs() {
    random("engine", 60, engine::run, |rng| {
        let mut d = vec![rng.u8(..)];
        for _ in 0..rng.usize(10..120) {
            // Mostly writes, with commits, faults, reopens and reads mixed in; keys from a narrow
            // domain (high byte < 8) so updates and erases hit.
            let op = match rng.u8(..10) {
                0..=4 => rng.u8(..5),
                5 | 6 => 5 + rng.u8(..8),
                _ => 13,
            };
            d.push(op);
            let key = [rng.u8(..), rng.u8(..8)];
            match op {
                0..=4 => d.extend([key[0], key[1], rng.u8(..)]),
                5 | 8 | 9 => d.push(rng.u8(..)),
                13 => d.extend([key[0], key[1], rng.u8(..), rng.u8(..)]),
                _ => {}
            }
        }
        d
    });
}

#[test]
fn query_random_splices() {
    let seeds: Vec<Vec<u8>> = files("query").into_iter().map(|(_, d)| d).collect();
    static SEEDS: std::sync::OnceLock<Vec<Vec<u8>>> = std::sync::OnceLock::new();
    SEEDS.get_or_init(|| seeds);
    random("query", 2000, query::run, |rng| {
        // Splice two seed queries at random points, sometimes flipping a byte.
        let s = SEEDS.get().unwrap();
        let (a, b) = (&s[rng.usize(..s.len())], &s[rng.usize(..s.len())]);
        let mut d = a[..rng.usize(..=a.len())].to_vec();
        d.extend_from_slice(&b[rng.usize(..=b.len())..]);
        if !d.is_empty() && rng.bool() {
            let i = rng.usize(..d.len());
            d[i] = rng.u8(..);
        }
        d
    });
}
