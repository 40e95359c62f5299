//! Masked VByte decoding with SSSE3 `pshufb` and SSE4.1 widening (see [`crate::masked_vbyte`]).

use core::arch::x86_64::*;

use crate::masked_vbyte::{META, SHUFFLE};
use crate::vbyte::get_varint;
use crate::Result;

/// Inclusive prefix sum of four u32 lanes plus `prev` (broadcast).
#[inline]
#[target_feature(enable = "sse2")]
fn prefix4(x: __m128i, prev: __m128i) -> __m128i {
    let x = _mm_add_epi32(x, _mm_slli_si128::<4>(x));
    let x = _mm_add_epi32(x, _mm_slli_si128::<8>(x));
    _mm_add_epi32(x, prev)
}

/// Broadcasts lane 3.
#[inline]
#[target_feature(enable = "sse2")]
fn last_lane(x: __m128i) -> __m128i {
    _mm_shuffle_epi32::<0xFF>(x)
}

/// Decodes deltas from `data[pos..]` into `out`, prefix-summed from `prev`, while at least 16
/// bytes of input and 16 slots of output remain. Returns the new position and the number of keys
/// written; the caller decodes the rest in scalar. Errors on a malformed long varint.
///
/// # Safety
/// The CPU must support SSSE3 and SSE4.1.
#[target_feature(enable = "sse2,ssse3,sse4.1")]
pub unsafe fn decode(
    data: &[u8],
    mut pos: usize,
    prev: u32,
    out: &mut [u32],
) -> Result<(usize, usize)> {
    let mut i = 0;
    let mut acc = _mm_set1_epi32(prev as i32);
    let lo7 = _mm_set1_epi8(0x7F);
    // pmaddubsw: unsigned constant times signed (non-negative) data: lo + 128 * hi.
    let join8 = _mm_set1_epi16(0x8001u16 as i16);
    // pmaddwd: lo14 + 16384 * hi14.
    let join16 = _mm_set1_epi32(0x4000_0001);
    while pos + 16 <= data.len() && i + 16 <= out.len() {
        // SAFETY: pos + 16 <= data.len(), so the 16-byte unaligned load stays inside `data`.
        let v = unsafe { _mm_loadu_si128(data.as_ptr().add(pos) as *const __m128i) };
        let mask = _mm_movemask_epi8(v) as u32;
        let dst = out[i..i + 16].as_mut_ptr() as *mut __m128i;
        if mask == 0 {
            // Sixteen one-byte deltas.
            let a = prefix4(_mm_cvtepu8_epi32(v), acc);
            let b = prefix4(_mm_cvtepu8_epi32(_mm_srli_si128::<4>(v)), last_lane(a));
            let c = prefix4(_mm_cvtepu8_epi32(_mm_srli_si128::<8>(v)), last_lane(b));
            let d = prefix4(_mm_cvtepu8_epi32(_mm_srli_si128::<12>(v)), last_lane(c));
            // SAFETY: i + 16 <= out.len(): four 16-byte stores fill out[i..i + 16].
            unsafe {
                _mm_storeu_si128(dst, a);
                _mm_storeu_si128(dst.add(1), b);
                _mm_storeu_si128(dst.add(2), c);
                _mm_storeu_si128(dst.add(3), d);
            }
            acc = last_lane(d);
            i += 16;
            pos += 16;
            continue;
        }
        let idx = (mask & 0xFFF) as usize;
        let m = META[idx];
        if m.n == 0 {
            // A varint of 5 bytes (or a malformed one): scalar, with full checks.
            let (delta, len) = get_varint(data, pos)?;
            let k = (_mm_cvtsi128_si32(acc) as u32).wrapping_add(delta);
            out[i] = k;
            acc = _mm_set1_epi32(k as i32);
            i += 1;
            pos += len;
            continue;
        }
        // SAFETY: SHUFFLE[idx] is a 16-byte array; unaligned load.
        let shuf = unsafe { _mm_loadu_si128(SHUFFLE[idx].as_ptr() as *const __m128i) };
        // Lanes the entry leaves unused are zero, so they repeat the last key in the prefix sum.
        let bytes = _mm_and_si128(_mm_shuffle_epi8(v, shuf), lo7);
        let words = _mm_maddubs_epi16(join8, bytes);
        if m.wide {
            let a = prefix4(_mm_madd_epi16(words, join16), acc);
            // SAFETY: i + 16 <= out.len().
            unsafe { _mm_storeu_si128(dst, a) };
            acc = last_lane(a);
        } else {
            let a = prefix4(_mm_cvtepu16_epi32(words), acc);
            let b = prefix4(_mm_cvtepu16_epi32(_mm_srli_si128::<8>(words)), last_lane(a));
            // SAFETY: i + 16 <= out.len().
            unsafe {
                _mm_storeu_si128(dst, a);
                _mm_storeu_si128(dst.add(1), b);
            }
            acc = last_lane(b);
        }
        i += m.n as usize;
        pos += m.consumed as usize;
    }
    Ok((pos, i))
}
