//! The bound no store can beat: a set of `n` keys out of a universe of `u` values is one of
//! C(u, n) sets, so any encoding needs log2 C(u, n) bits for some of them (the information-
//! theoretic minimum for a set; 2M uniform u32 keys: 1.56 bytes per key).

/// log2 C(u, n), exact to ~1e-9 relative for large arguments (Stirling's series with three
/// correction terms) and summed exactly for small ones.
pub fn log2_binomial(u: u64, n: u64) -> f64 {
    if n > u {
        return f64::NAN;
    }
    let k = n.min(u - n);
    if k == 0 {
        return 0.0;
    }
    if k < 64 {
        // Product of (u - i) / (i + 1): exact enough and cheap for small k.
        return (0..k)
            .map(|i| ((u - i) as f64).log2() - ((i + 1) as f64).log2())
            .sum();
    }
    (ln_factorial(u) - ln_factorial(k) - ln_factorial(u - k)) / std::f64::consts::LN_2
}

/// ln(x!) by Stirling's series; exact below 32.
fn ln_factorial(x: u64) -> f64 {
    if x < 32 {
        return (2..=x).map(|i| (i as f64).ln()).sum();
    }
    let x = x as f64;
    x * x.ln() - x + 0.5 * (2.0 * std::f64::consts::PI * x).ln() + 1.0 / (12.0 * x)
        - 1.0 / (360.0 * x * x * x)
        + 1.0 / (1260.0 * x.powi(5))
}

/// The bound in bytes per key.
pub fn bytes_per_key(u: u64, n: u64) -> f64 {
    if n == 0 {
        return 0.0;
    }
    log2_binomial(u, n) / 8.0 / n as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_cases_are_exact() {
        assert_eq!(log2_binomial(10, 0), 0.0);
        assert_eq!(log2_binomial(10, 10), 0.0);
        assert!((log2_binomial(10, 3) - 120f64.log2()).abs() < 1e-12);
        // C(100, 50) = 100891344545564193334812497256
        let c = 100891344545564193334812497256f64.log2();
        assert!(
            (log2_binomial(100, 50) - c).abs() < 1e-9,
            "{}",
            log2_binomial(100, 50)
        );
        assert!(log2_binomial(3, 5).is_nan());
    }

    #[test]
    fn the_issues_example() {
        // 2M uniform u32 keys: 1.56 bytes per key.
        let b = bytes_per_key(1 << 32, 2_000_000);
        assert!((b - 1.56).abs() < 0.01, "{b}");
        // Dense keys: nothing to store.
        assert_eq!(bytes_per_key(1000, 1000), 0.0);
        // ClusterData's universe 9n/8: n H(1/9) 9/8 bits, about 0.071 bytes per key.
        let c = bytes_per_key(9_000_000, 8_000_000);
        assert!(c > 0.065 && c < 0.075, "{c}");
    }
}
