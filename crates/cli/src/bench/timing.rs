//! Timing helpers: each measurement runs a closure repeatedly for a minimum time, several rounds,
//! and reports the median rate. Shared machines are noisy; medians and same-run ratios are what we
//! quote.

use std::hint::black_box;
use std::time::{Duration, Instant};

/// How long and how often to measure.
#[derive(Clone, Copy, Debug)]
pub struct Budget {
    /// Minimum time per round.
    pub min_time: Duration,
    /// Rounds; the median is reported.
    pub rounds: usize,
}

/// Runs `round` (which performs `ops` operations and returns a checksum) until `budget.min_time`
/// elapses, for `budget.rounds` rounds; returns the median operations per second.
pub fn ops_per_sec(budget: Budget, ops: u64, mut round: impl FnMut() -> u64) -> f64 {
    let mut rates = Vec::with_capacity(budget.rounds);
    // warm-up
    black_box(round());
    for _ in 0..budget.rounds.max(1) {
        let mut done = 0u64;
        let t = Instant::now();
        loop {
            black_box(round());
            done += ops;
            if t.elapsed() >= budget.min_time {
                break;
            }
        }
        rates.push(done as f64 / t.elapsed().as_secs_f64());
    }
    median(&mut rates)
}

/// Like [`ops_per_sec`], but each round needs fresh state that must not be timed (e.g. blocks to
/// insert into): `setup` builds it, `run` consumes it and returns the ops done and a checksum.
pub fn ops_per_sec_with_setup<S>(
    budget: Budget,
    mut setup: impl FnMut() -> S,
    mut run: impl FnMut(S) -> (u64, u64),
) -> f64 {
    let mut rates = Vec::with_capacity(budget.rounds);
    black_box(run(setup()));
    for _ in 0..budget.rounds.max(1) {
        let mut done = 0u64;
        let mut spent = Duration::ZERO;
        while spent < budget.min_time {
            let s = setup();
            let t = Instant::now();
            let (ops, sum) = run(s);
            spent += t.elapsed();
            black_box(sum);
            done += ops;
        }
        rates.push(done as f64 / spent.as_secs_f64());
    }
    median(&mut rates)
}

/// Median of a non-empty slice (sorts it).
pub fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n == 0 {
        return f64::NAN;
    }
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_and_even() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut [4.0, 1.0, 2.0, 3.0]), 2.5);
    }

    #[test]
    fn rates_are_positive_and_count_ops() {
        let b = Budget {
            min_time: Duration::from_millis(2),
            rounds: 3,
        };
        let mut calls = 0u64;
        let r = ops_per_sec(b, 10, || {
            calls += 1;
            calls
        });
        assert!(r > 0.0 && calls > 3);
        let r2 = ops_per_sec_with_setup(b, || 5u64, |s| (s, s));
        assert!(r2 > 0.0);
    }
}
