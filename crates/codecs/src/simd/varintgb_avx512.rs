//! VarIntGB decoding with AVX-512 (F, BW, VBMI): four groups of one byte width (sixteen values)
//! per step, prefix sum fused (see [`crate::varintgb`]). Four groups whose key bytes are all
//! `0x00`, `0x55` or `0xAA` (every value 1, 2 or 3 bytes) sit at fixed offsets, so one 64-byte
//! load and one `vpermb` with a constant pattern drop the key bytes and widen the values. Other
//! groups are decoded one at a time as in the SSE4.1 kernel.

use core::arch::x86_64::*;

use super::streamvbyte_sse41::prefix4;
use crate::streamvbyte::{GROUP_LEN, GROUP_SHUFFLE};

/// `vpermb` patterns for four groups of width `w` (index `w - 1`, widths 1..=3): lane `4g + k`
/// takes bytes `g*(1 + 4w) + 1 + k*w ..` (`w` of them; the rest are zeroed by [`mask`]).
static WIDEN: [[u8; 64]; 3] = {
    let mut t = [[0u8; 64]; 3];
    let mut w = 1;
    while w <= 3 {
        let mut lane = 0;
        while lane < 16 {
            let (g, k) = (lane / 4, lane % 4);
            let mut b = 0;
            while b < w {
                t[w - 1][4 * lane + b] = (g * (1 + 4 * w) + 1 + k * w + b) as u8;
                b += 1;
            }
            lane += 1;
        }
        w += 1;
    }
    t
};

/// Which bytes of the 64 output bytes are value bytes for width `w` (the others are zero).
const fn mask(w: usize) -> u64 {
    let per_lane: u64 = (1 << w) - 1;
    let mut m = 0u64;
    let mut lane = 0;
    while lane < 16 {
        m |= per_lane << (4 * lane);
        lane += 1;
    }
    m
}

/// Inclusive prefix sum of sixteen u32 lanes (shift-and-add across the whole register).
#[inline]
#[target_feature(enable = "avx512f")]
fn prefix16(x: __m512i) -> __m512i {
    let z = _mm512_setzero_si512();
    let x = _mm512_add_epi32(x, _mm512_alignr_epi32::<15>(x, z));
    let x = _mm512_add_epi32(x, _mm512_alignr_epi32::<14>(x, z));
    let x = _mm512_add_epi32(x, _mm512_alignr_epi32::<12>(x, z));
    _mm512_add_epi32(x, _mm512_alignr_epi32::<8>(x, z))
}

/// Sixteen-value steps while the next four key bytes all equal the code of width `W` and their
/// groups fit in `data`. Returns the new group count, position and running key (all lanes equal).
///
/// # Safety
/// The CPU must support AVX-512 F, BW and VBMI. `out.len() >= 4 * groups`.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
unsafe fn run<const W: usize>(
    data: &[u8],
    out: &mut [u32],
    groups: usize,
    mut g: usize,
    mut pos: usize,
    acc: __m128i,
) -> (usize, usize, __m128i) {
    let key = [0x00u8, 0x55, 0xAA][W - 1];
    let step = 1 + 4 * W;
    let last = _mm512_set1_epi32(15);
    // SAFETY: WIDEN rows are 64 bytes.
    let pattern = unsafe { _mm512_loadu_si512(WIDEN[W - 1].as_ptr() as *const _) };
    let mut acc = _mm512_broadcast_i32x4(acc);
    let span = 4 * step; // at most 52 bytes
    while g + 4 <= groups
        && pos + span <= data.len()
        && data[pos] == key
        && data[pos + step] == key
        && data[pos + 2 * step] == key
        && data[pos + 3 * step] == key
    {
        // SAFETY: the load mask covers bytes pos..pos + span only, inside `data`; masked
        // bytes are neither read nor faulted on.
        let v = unsafe {
            _mm512_maskz_loadu_epi8((1u64 << span) - 1, data.as_ptr().add(pos) as *const i8)
        };
        let x = prefix16(_mm512_maskz_permutexvar_epi8(mask(W), pattern, v));
        // SAFETY: g + 4 <= groups and out.len() >= 4 * groups: out[4g..4g + 16] exists.
        unsafe {
            _mm512_storeu_si512(
                out.as_mut_ptr().add(4 * g) as *mut _,
                _mm512_add_epi32(x, acc),
            )
        };
        acc = _mm512_add_epi32(acc, _mm512_permutexvar_epi32(last, x));
        pos += 4 * step;
        g += 4;
    }
    (g, pos, _mm512_castsi512_si128(acc))
}

/// Decodes whole groups from `data[pos..]` into `out`, prefix-summed from `prev`, while the
/// loads stay inside `data` and four output slots remain. Returns the new position and the
/// number of keys written (a multiple of 4); the caller finishes the rest.
///
/// # Safety
/// The CPU must support AVX-512 F, BW and VBMI (and SSSE3 / SSE4.1).
#[target_feature(enable = "avx512f,avx512bw,avx512vbmi,avx2,sse4.1,ssse3")]
pub unsafe fn decode(data: &[u8], mut pos: usize, prev: u32, out: &mut [u32]) -> (usize, usize) {
    let groups = out.len() / 4;
    let mut acc = _mm_set1_epi32(prev as i32);
    let mut g = 0;
    while g < groups && pos + 17 <= data.len() {
        let key = data[pos];
        let step = 1 + GROUP_LEN[key as usize] as usize;
        if g + 4 <= groups
            && matches!(key, 0x00 | 0x55 | 0xAA)
            && data.get(pos + step) == Some(&key)
        {
            // SAFETY: the CPU features are enabled here; `run` bounds its own accesses.
            let (g2, p2, a2) = unsafe {
                match key {
                    0x00 => run::<1>(data, out, groups, g, pos, acc),
                    0x55 => run::<2>(data, out, groups, g, pos, acc),
                    _ => run::<3>(data, out, groups, g, pos, acc),
                }
            };
            if g2 > g {
                (g, pos, acc) = (g2, p2, a2);
                continue;
            }
        }
        // One group at a time, staying in a run of equal key bytes (constant step: the next
        // load does not wait for this key byte).
        // SAFETY: GROUP_SHUFFLE rows are 16 bytes.
        let shuf =
            unsafe { _mm_loadu_si128(GROUP_SHUFFLE[key as usize].as_ptr() as *const __m128i) };
        loop {
            // SAFETY: pos + 17 <= data.len() (checked before each iteration).
            let v = unsafe { _mm_loadu_si128(data.as_ptr().add(pos + 1) as *const __m128i) };
            let x = prefix4(_mm_shuffle_epi8(v, shuf), _mm_setzero_si128());
            // SAFETY: g < groups = out.len() / 4: out[4g..4g + 4] exists.
            unsafe {
                _mm_storeu_si128(
                    out.as_mut_ptr().add(4 * g) as *mut __m128i,
                    _mm_add_epi32(x, acc),
                )
            };
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

/// Decodes all `out.len()` values (the last group may be partial: only the codes of its present
/// values count) from `data[pos..]`, prefix-summed from `prev`: [`decode`] for the bulk, then
/// the groups near the end of `data` one at a time with masked loads and stores, so there is
/// no padded copy and no scalar tail. Returns the position after the values; a position beyond
/// `data.len()` means the key bytes ask for more data than there is (the caller reports
/// corruption; bytes past the end were read as zeros, never from memory).
///
/// # Safety
/// The CPU must support AVX-512 F, BW, VL and VBMI (and SSSE3 / SSE4.1).
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vbmi,avx2,sse4.1,ssse3")]
pub unsafe fn decode_all(data: &[u8], pos: usize, prev: u32, out: &mut [u32]) -> usize {
    // SAFETY: same CPU features as this function's contract.
    let (mut pos, done) = unsafe { decode(data, pos, prev, out) };
    let mut acc = _mm_set1_epi32(if done > 0 { out[done - 1] } else { prev } as i32);
    let mut v = done;
    while v < out.len() {
        let Some(&key) = data.get(pos) else {
            return data.len() + 1;
        };
        let present = (out.len() - v).min(4);
        let key = (key as u32 & ((1u32 << (2 * present)) - 1)) as usize;
        let len = GROUP_LEN[key] as usize - (4 - present);
        let avail = data.len().saturating_sub(pos + 1).min(16);
        // SAFETY: the load mask covers bytes pos+1..pos+1+avail only, inside `data` (masked
        // bytes are neither read nor faulted on, and read as zero); shuffle rows are 16 bytes.
        let x = unsafe {
            let bytes = _mm_maskz_loadu_epi8(
                ((1u32 << avail) - 1) as __mmask16,
                data.as_ptr().wrapping_add(pos + 1) as *const i8,
            );
            let shuf = _mm_loadu_si128(GROUP_SHUFFLE[key].as_ptr() as *const __m128i);
            prefix4(_mm_shuffle_epi8(bytes, shuf), _mm_setzero_si128())
        };
        // SAFETY: the store mask covers out[v..v + present], inside `out`.
        unsafe {
            _mm_mask_storeu_epi32(
                out.as_mut_ptr().add(v) as *mut _,
                ((1u32 << present) - 1) as __mmask8,
                _mm_add_epi32(x, acc),
            )
        };
        acc = _mm_add_epi32(acc, _mm_shuffle_epi32::<0xFF>(x));
        pos += 1 + len;
        v += present;
    }
    pos
}
