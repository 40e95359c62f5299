//! Exact sum of `u32` keys as `u64`: the SUM aggregate's inner loop over a decoded block.
//! The AVX2 kernel widens eight keys at a time to 64-bit lanes; the scalar twin is the reference
//! (and the path on other CPUs).

use crate::isa::Isa;

/// Scalar reference.
pub fn sum_u32_scalar(keys: &[u32]) -> u64 {
    keys.iter().map(|&k| k as u64).sum()
}

/// Exact sum of `keys` with the kernel of `isa` (capped at what the CPU has).
#[inline]
pub fn sum_u32_with(isa: Isa, keys: &[u32]) -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        if isa >= Isa::Avx2 && Isa::Avx2.is_supported() {
            // SAFETY: AVX2 is supported (checked above); the kernel reads only `keys`.
            return unsafe { crate::simd::sum_avx2::sum_u32(keys) };
        }
    }
    let _ = isa;
    sum_u32_scalar(keys)
}

/// Exact sum of `keys` on the detected ISA.
#[inline]
pub fn sum_u32(keys: &[u32]) -> u64 {
    sum_u32_with(Isa::detect(), keys)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernels_match_scalar() {
        let mut rng = fastrand::Rng::with_seed(9);
        for isa in Isa::available() {
            for n in [0usize, 1, 7, 8, 9, 31, 32, 33, 128, 129, 257, 10_000] {
                for fill in [None, Some(0u32), Some(u32::MAX), Some(1)] {
                    let v: Vec<u32> = (0..n)
                        .map(|_| fill.unwrap_or_else(|| rng.u32(..)))
                        .collect();
                    assert_eq!(sum_u32_with(isa, &v), sum_u32_scalar(&v), "{isa:?} n={n}");
                }
            }
        }
    }
}
