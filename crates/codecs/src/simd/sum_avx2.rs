//! AVX2 kernels of `sum::sum_u32` and `sum::sum_le_u32`: eight keys per step, zero-extended
//! to 64-bit lanes (`vpmovzxdq`) and added into two independent accumulators.

use core::arch::x86_64::*;

/// Exact sum of `keys`.
///
/// # Safety
/// The CPU must support AVX2. Reads exactly `keys`.
#[target_feature(enable = "avx2")]
pub unsafe fn sum_u32(keys: &[u32]) -> u64 {
    // SAFETY: AVX2 is available (the caller's contract); `keys` is `4 * len` readable bytes.
    unsafe { sum_raw(keys.as_ptr() as *const u8, keys.len()) }
}

/// Exact sum of the `bytes.len() / 4` little-endian u32 values at the start of `bytes` (a
/// plain leaf's key array, which need not be 4-byte aligned).
///
/// # Safety
/// The CPU must support AVX2. Reads only `bytes`.
#[target_feature(enable = "avx2")]
pub unsafe fn sum_le_u32(bytes: &[u8]) -> u64 {
    // SAFETY: AVX2 is available; `bytes.len() / 4` values of 4 bytes lie inside `bytes`. x86
    // is little-endian, so a lane loaded from the bytes is the value.
    unsafe { sum_raw(bytes.as_ptr(), bytes.len() / 4) }
}

/// # Safety
/// AVX2; `p` points at `4 * n` readable bytes (any alignment).
#[target_feature(enable = "avx2")]
unsafe fn sum_raw(p: *const u8, n: usize) -> u64 {
    let mut a0 = _mm256_setzero_si256();
    let mut a1 = _mm256_setzero_si256();
    let full = n / 8 * 8;
    let mut i = 0;
    while i < full {
        // SAFETY: values i..i + 8 (32 bytes) lie inside the 4 * n bytes; unaligned loads.
        let (lo, hi) = unsafe {
            let q = p.add(4 * i) as *const __m128i;
            (_mm_loadu_si128(q), _mm_loadu_si128(q.add(1)))
        };
        a0 = _mm256_add_epi64(a0, _mm256_cvtepu32_epi64(lo));
        a1 = _mm256_add_epi64(a1, _mm256_cvtepu32_epi64(hi));
        i += 8;
    }
    let a = _mm256_add_epi64(a0, a1);
    let mut lanes = [0u64; 4];
    // SAFETY: `lanes` is 32 bytes, the store is unaligned.
    unsafe { _mm256_storeu_si256(lanes.as_mut_ptr() as *mut __m256i, a) };
    let mut s = lanes.iter().sum::<u64>();
    while i < n {
        // SAFETY: value i (4 bytes) lies inside the 4 * n bytes; unaligned read.
        s += unsafe { (p.add(4 * i) as *const u32).read_unaligned() } as u64;
        i += 1;
    }
    s
}
