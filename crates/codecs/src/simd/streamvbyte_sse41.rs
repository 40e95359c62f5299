//! StreamVByte decoding with SSSE3 `pshufb` (see [`crate::streamvbyte`]), prefix sum fused.

use core::arch::x86_64::*;

use crate::streamvbyte::{GROUP_LEN, GROUP_SHUFFLE};

/// Inclusive prefix sum of four u32 lanes plus `prev` (broadcast).
#[inline]
#[target_feature(enable = "sse2")]
pub(crate) fn prefix4(x: __m128i, prev: __m128i) -> __m128i {
    let x = _mm_add_epi32(x, _mm_slli_si128::<4>(x));
    let x = _mm_add_epi32(x, _mm_slli_si128::<8>(x));
    _mm_add_epi32(x, prev)
}

/// Decodes one group of four values per control byte of `ctrl` from `data[pos..]` into
/// `out[4g..4g + 4]`, prefix-summed from `prev`, while 16 data bytes remain readable. Returns the
/// new position and the number of keys written (a multiple of 4).
///
/// # Safety
/// The CPU must support SSSE3 and SSE4.1. `out.len() >= 4 * ctrl.len()`.
#[target_feature(enable = "sse2,ssse3,sse4.1")]
pub unsafe fn decode(
    ctrl: &[u8],
    data: &[u8],
    mut pos: usize,
    prev: u32,
    out: &mut [u32],
) -> (usize, usize) {
    assert!(out.len() >= 4 * ctrl.len());
    let mut acc = _mm_set1_epi32(prev as i32);
    let dst = out.as_mut_ptr() as *mut __m128i;
    let mut g = 0;
    while g < ctrl.len() && pos + 16 <= data.len() {
        let c = ctrl[g] as usize;
        // SAFETY: pos + 16 <= data.len(); GROUP_SHUFFLE[c] is 16 bytes.
        let (v, shuf) = unsafe {
            (
                _mm_loadu_si128(data.as_ptr().add(pos) as *const __m128i),
                _mm_loadu_si128(GROUP_SHUFFLE[c].as_ptr() as *const __m128i),
            )
        };
        // The local prefix sum does not depend on `acc`; the loop-carried chain is one add.
        let x = prefix4(_mm_shuffle_epi8(v, shuf), _mm_setzero_si128());
        // SAFETY: g < ctrl.len() and out.len() >= 4 * ctrl.len(): out[4g..4g + 4] exists.
        unsafe { _mm_storeu_si128(dst.add(g), _mm_add_epi32(x, acc)) };
        acc = _mm_add_epi32(acc, _mm_shuffle_epi32::<0xFF>(x));
        pos += GROUP_LEN[c] as usize;
        g += 1;
    }
    (pos, 4 * g)
}
