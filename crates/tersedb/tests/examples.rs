//! The programs in `examples/` (ids, time series, string keys) run, twice on the same file
//! (every write is a `put`, so a second run overwrites instead of failing), and give the
//! answers a plain computation gives.

#[allow(dead_code)]
#[path = "../examples/ids.rs"]
mod ids;
#[allow(dead_code)]
#[path = "../examples/string_keys.rs"]
mod string_keys;
#[allow(dead_code)]
#[path = "../examples/time_series.rs"]
mod time_series;

fn temp(name: &str) -> std::path::PathBuf {
    let p = std::env::temp_dir().join(format!("tersedb-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_file(&p);
    let _ = std::fs::remove_dir_all(tersedb::storage::readers::dir_of(&p));
    p
}

fn cleanup(p: &std::path::Path) {
    let _ = std::fs::remove_file(p);
    let _ = std::fs::remove_dir_all(tersedb::storage::readers::dir_of(p));
}

#[test]
fn ids_runs_twice() {
    let p = temp("ids.tdb");
    // Orders 0..50000 go to user (order % 10000) * 3: user 21 is order 7, 10007, ... 40007.
    assert_eq!(ids::run(&p).unwrap(), 5);
    assert_eq!(ids::run(&p).unwrap(), 5);
    cleanup(&p);
}

#[test]
fn time_series_runs_twice() {
    let p = temp("series.tdb");
    for _ in 0..2 {
        let minutes = time_series::run(&p).unwrap();
        assert_eq!(minutes.len(), 60);
        for (i, (minute, avg)) in minutes.iter().enumerate() {
            assert_eq!(*minute, 1_709_251_200_000_000 + i as u64 * 60_000_000);
            // 30 readings of x and 30 of x + 0.5 in every minute.
            let want = 20.0 + i as f64 / 10.0 + 0.25;
            assert!((avg - want).abs() < 1e-9, "minute {i}: {avg} != {want}");
        }
    }
    cleanup(&p);
}

#[test]
fn string_keys_runs_twice() {
    let p = temp("strings.tdb");
    let want = [
        ("fr/lyon".to_string(), 522_250),
        ("fr/marseille".to_string(), 877_215),
        ("fr/paris".to_string(), 2_102_650),
    ];
    assert_eq!(string_keys::run(&p).unwrap(), want);
    assert_eq!(string_keys::run(&p).unwrap(), want);
    cleanup(&p);
}
