//! StreamVByte decoding with AVX2: two control bytes (eight values) per step, prefix sum fused
//! (see [`crate::streamvbyte`]).

use core::arch::x86_64::*;

use crate::streamvbyte::{GROUP_LEN, GROUP_SHUFFLE};

/// Decodes groups of four values (one per control byte of `ctrl`) from `data[pos..]` into `out`,
/// prefix-summed from `prev`, while the loads stay inside `data`. Returns the new position and the
/// number of keys written (a multiple of 4).
///
/// # Safety
/// The CPU must support AVX2. `out.len() >= 4 * ctrl.len()`.
#[target_feature(enable = "avx2,sse4.1,ssse3")]
pub unsafe fn decode(
    ctrl: &[u8],
    data: &[u8],
    mut pos: usize,
    prev: u32,
    out: &mut [u32],
) -> (usize, usize) {
    assert!(out.len() >= 4 * ctrl.len());
    let mut acc = _mm256_set1_epi32(prev as i32);
    let last = _mm256_set1_epi32(7);
    let dst = out.as_mut_ptr() as *mut __m128i;
    let mut g = 0;
    while g + 2 <= ctrl.len() {
        let (c0, c1) = (ctrl[g] as usize, ctrl[g + 1] as usize);
        let p1 = pos + GROUP_LEN[c0] as usize;
        if p1 + 16 > data.len() {
            break;
        }
        // SAFETY: pos < p1 and p1 + 16 <= data.len(): both loads are inside `data`; the shuffle
        // rows are 16 bytes.
        let (v, shuf) = unsafe {
            (
                _mm256_loadu2_m128i(
                    data.as_ptr().add(p1) as *const __m128i,
                    data.as_ptr().add(pos) as *const __m128i,
                ),
                _mm256_loadu2_m128i(
                    GROUP_SHUFFLE[c1].as_ptr() as *const __m128i,
                    GROUP_SHUFFLE[c0].as_ptr() as *const __m128i,
                ),
            )
        };
        let x = _mm256_shuffle_epi8(v, shuf);
        // Prefix sum within each 128-bit lane, then carry the low lane's total into the high one.
        let x = _mm256_add_epi32(x, _mm256_slli_si256::<4>(x));
        let x = _mm256_add_epi32(x, _mm256_slli_si256::<8>(x));
        let carry = _mm256_permute2x128_si256::<0x08>(_mm256_shuffle_epi32::<0xFF>(x), x);
        // The local prefix sum does not depend on `acc`; the loop-carried chain is one add.
        let x = _mm256_add_epi32(x, carry);
        // SAFETY: out[4g..4g + 8] exists (see the loop condition).
        unsafe { _mm256_storeu_si256(dst.add(g) as *mut __m256i, _mm256_add_epi32(x, acc)) };
        acc = _mm256_add_epi32(acc, _mm256_permutevar8x32_epi32(x, last));
        pos = p1 + GROUP_LEN[c1] as usize;
        g += 2;
    }
    if g == ctrl.len() {
        return (pos, 4 * g);
    }
    let prev = if g > 0 { out[4 * g - 1] } else { prev };
    // SAFETY: SSE4.1 and SSSE3 are implied by AVX2 support; the slices keep the length contract.
    let (pos, done) =
        unsafe { super::streamvbyte_sse41::decode(&ctrl[g..], data, pos, prev, &mut out[4 * g..]) };
    (pos, 4 * g + done)
}
