//! VarIntGB decoding with SSSE3 `pshufb` (see [`crate::varintgb`]), prefix sum fused.

use core::arch::x86_64::*;

use super::streamvbyte_sse41::prefix4;
use crate::streamvbyte::{GROUP_LEN, GROUP_SHUFFLE};

/// Decodes whole groups from `data[pos..]` into `out`, prefix-summed from `prev`, while a group's
/// 16-byte load stays inside `data` and four output slots remain. Returns the new position and
/// the number of keys written (a multiple of 4).
///
/// A run of groups with the same key byte advances `pos` by a constant: the key byte is then only
/// compared (a predicted branch), not on the load-address dependency chain.
///
/// # Safety
/// The CPU must support SSSE3 and SSE4.1.
#[target_feature(enable = "sse2,ssse3,sse4.1")]
pub unsafe fn decode(data: &[u8], mut pos: usize, prev: u32, out: &mut [u32]) -> (usize, usize) {
    let mut acc = _mm_set1_epi32(prev as i32);
    let groups = out.len() / 4;
    let dst = out.as_mut_ptr() as *mut __m128i;
    let mut g = 0;
    while g < groups && pos + 17 <= data.len() {
        let key = data[pos];
        let step = 1 + GROUP_LEN[key as usize] as usize;
        // SAFETY: GROUP_SHUFFLE rows are 16 bytes.
        let shuf =
            unsafe { _mm_loadu_si128(GROUP_SHUFFLE[key as usize].as_ptr() as *const __m128i) };
        loop {
            // SAFETY: pos + 17 <= data.len() (loop conditions), so bytes pos+1..pos+17 exist.
            let v = unsafe { _mm_loadu_si128(data.as_ptr().add(pos + 1) as *const __m128i) };
            let x = prefix4(_mm_shuffle_epi8(v, shuf), _mm_setzero_si128());
            // SAFETY: g < groups = out.len() / 4: out[4g..4g + 4] exists.
            unsafe { _mm_storeu_si128(dst.add(g), _mm_add_epi32(x, acc)) };
            acc = _mm_add_epi32(acc, _mm_shuffle_epi32::<0xFF>(x));
            pos += step;
            g += 1;
            if !(g < groups && pos + 17 <= data.len() && data[pos] == key) {
                break;
            }
        }
    }
    (pos, 4 * g)
}
