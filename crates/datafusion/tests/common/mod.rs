//! What the integration tests share.

/// A seeded proptest runner: prints `SEED=`, re-runs from `SEED=...`; `TERSEDB_LONG` runs 20x
/// the cases.
pub fn runner(cases: u32) -> proptest::test_runner::TestRunner {
    use proptest::test_runner::{Config, RngSeed, TestRunner};
    let seed = std::env::var("SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| fastrand::u64(..));
    eprintln!("SEED={seed}");
    let long = std::env::var("TERSEDB_LONG").is_ok();
    TestRunner::new(Config {
        cases: if long { cases * 20 } else { cases },
        rng_seed: RngSeed::Fixed(seed),
        failure_persistence: None,
        ..Config::default()
    })
}
