//! VarIntGB decoding with AVX2: two groups with the same key byte per step (see
//! [`crate::varintgb`]), prefix sum fused.

use core::arch::x86_64::*;

use crate::streamvbyte::{GROUP_LEN, GROUP_SHUFFLE};

/// As [`super::varintgb_sse41::decode`], eight keys per step inside runs of equal key bytes.
///
/// # Safety
/// The CPU must support AVX2.
#[target_feature(enable = "avx2,sse4.1,ssse3")]
pub unsafe fn decode(data: &[u8], mut pos: usize, prev: u32, out: &mut [u32]) -> (usize, usize) {
    let mut acc = _mm256_set1_epi32(prev as i32);
    let last = _mm256_set1_epi32(7);
    let groups = out.len() / 4;
    let dst = out.as_mut_ptr() as *mut __m128i;
    let mut g = 0;
    // Two groups span at most 34 bytes: key, 16 bytes, key, 16 bytes.
    while g + 2 <= groups && pos + 34 <= data.len() {
        let key = data[pos];
        let step = 1 + GROUP_LEN[key as usize] as usize;
        if data[pos + step] != key {
            break;
        }
        // SAFETY: GROUP_SHUFFLE rows are 16 bytes.
        let shuf = unsafe {
            _mm256_broadcastsi128_si256(_mm_loadu_si128(
                GROUP_SHUFFLE[key as usize].as_ptr() as *const __m128i
            ))
        };
        loop {
            // SAFETY: pos + 34 <= data.len() and step <= 17: both 16-byte loads (at pos + 1 and
            // pos + step + 1 <= pos + 18) end inside `data`.
            let v = unsafe {
                _mm256_loadu2_m128i(
                    data.as_ptr().add(pos + step + 1) as *const __m128i,
                    data.as_ptr().add(pos + 1) as *const __m128i,
                )
            };
            let x = _mm256_shuffle_epi8(v, shuf);
            let x = _mm256_add_epi32(x, _mm256_slli_si256::<4>(x));
            let x = _mm256_add_epi32(x, _mm256_slli_si256::<8>(x));
            let carry = _mm256_permute2x128_si256::<0x08>(_mm256_shuffle_epi32::<0xFF>(x), x);
            // The local prefix sum does not depend on `acc`; the loop-carried chain is one add.
            let x = _mm256_add_epi32(x, carry);
            // SAFETY: out[4g..4g + 8] exists (see the loop condition).
            unsafe { _mm256_storeu_si256(dst.add(g) as *mut __m256i, _mm256_add_epi32(x, acc)) };
            acc = _mm256_add_epi32(acc, _mm256_permutevar8x32_epi32(x, last));
            pos += 2 * step;
            g += 2;
            if !(g + 2 <= groups
                && pos + 34 <= data.len()
                && data[pos] == key
                && data[pos + step] == key)
            {
                break;
            }
        }
    }
    let prev = if g > 0 { out[4 * g - 1] } else { prev };
    // SAFETY: SSE4.1 and SSSE3 are implied by AVX2 support; the slices keep the length contract.
    let (pos, done) = unsafe { super::varintgb_sse41::decode(data, pos, prev, &mut out[4 * g..]) };
    (pos, 4 * g + done)
}
