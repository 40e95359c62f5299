//! AVX2 kernel of `sum::sum_u32`: eight keys per step, zero-extended to 64-bit lanes
//! (`vpmovzxdq`) and added into two independent accumulators.

use core::arch::x86_64::*;

/// Exact sum of `keys`.
///
/// # Safety
/// The CPU must support AVX2. Reads exactly `keys`.
#[target_feature(enable = "avx2")]
pub unsafe fn sum_u32(keys: &[u32]) -> u64 {
    let mut a0 = _mm256_setzero_si256();
    let mut a1 = _mm256_setzero_si256();
    let chunks = keys.chunks_exact(8);
    let tail = chunks.remainder();
    for c in chunks {
        let p = c.as_ptr() as *const __m128i;
        // SAFETY: `c` has 8 u32 = 32 bytes: two unaligned 16-byte loads stay inside it.
        let (lo, hi) = unsafe { (_mm_loadu_si128(p), _mm_loadu_si128(p.add(1))) };
        a0 = _mm256_add_epi64(a0, _mm256_cvtepu32_epi64(lo));
        a1 = _mm256_add_epi64(a1, _mm256_cvtepu32_epi64(hi));
    }
    let a = _mm256_add_epi64(a0, a1);
    let mut lanes = [0u64; 4];
    // SAFETY: `lanes` is 32 bytes, the store is unaligned.
    unsafe { _mm256_storeu_si256(lanes.as_mut_ptr() as *mut __m256i, a) };
    lanes.iter().sum::<u64>() + tail.iter().map(|&k| k as u64).sum::<u64>()
}
