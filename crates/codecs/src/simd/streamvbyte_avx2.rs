//! StreamVByte decoding with AVX2: two control bytes (eight values) per step, prefix sum fused
//! (see [`crate::streamvbyte`]). Two equal control bytes giving all eight values one byte width
//! take a fast path without table lookups.

use core::arch::x86_64::*;

use crate::search::{Pad, Seek};
use crate::streamvbyte::{GROUP_LEN, GROUP_SHUFFLE};

/// Inclusive prefix sum of eight u32 lanes.
#[inline]
#[target_feature(enable = "avx2")]
fn prefix8(x: __m256i) -> __m256i {
    // within each 128-bit lane, then the low lane's total carried into the high one
    let x = _mm256_add_epi32(x, _mm256_slli_si256::<4>(x));
    let x = _mm256_add_epi32(x, _mm256_slli_si256::<8>(x));
    _mm256_add_epi32(
        x,
        _mm256_permute2x128_si256::<0x08>(_mm256_shuffle_epi32::<0xFF>(x), x),
    )
}

/// Decodes eight-value steps while both control bytes of a step code width `W` for all values
/// (`0x00`, `0x55`, `0xAA`, `0xFF`) and the loads fit in `data`. Returns the new group index,
/// data position and running key vector.
///
/// # Safety
/// The CPU must support AVX2. `out.len() >= 4 * ctrl.len()`.
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn run<const W: usize>(
    ctrl: &[u8],
    data: &[u8],
    out: &mut [u32],
    mut g: usize,
    mut pos: usize,
    mut acc: __m256i,
) -> (usize, usize, __m256i) {
    let code = [0x00u8, 0x55, 0xAA, 0xFF][W - 1];
    let last = _mm256_set1_epi32(7);
    // Width 3 reads 16 bytes at +12: 4 bytes beyond the step's 24.
    let span = 8 * W + if W == 3 { 4 } else { 0 };
    while g + 2 <= ctrl.len() && ctrl[g] == code && ctrl[g + 1] == code && pos + span <= data.len()
    {
        let at = data.as_ptr().wrapping_add(pos);
        // SAFETY: pos + span <= data.len(): every load below ends inside `data`.
        let x = unsafe {
            match W {
                1 => _mm256_cvtepu8_epi32(_mm_loadl_epi64(at as *const __m128i)),
                2 => _mm256_cvtepu16_epi32(_mm_loadu_si128(at as *const __m128i)),
                3 => _mm256_shuffle_epi8(
                    _mm256_loadu2_m128i(at.add(12) as *const __m128i, at as *const __m128i),
                    _mm256_broadcastsi128_si256(_mm_loadu_si128(
                        GROUP_SHUFFLE[0xAA].as_ptr() as *const __m128i
                    )),
                ),
                _ => _mm256_loadu_si256(at as *const __m256i),
            }
        };
        let x = prefix8(x);
        // SAFETY: g + 2 <= ctrl.len() and out.len() >= 4 * ctrl.len(): out[4g..4g + 8] exists.
        unsafe {
            _mm256_storeu_si256(
                out.as_mut_ptr().add(4 * g) as *mut __m256i,
                _mm256_add_epi32(x, acc),
            )
        };
        acc = _mm256_add_epi32(acc, _mm256_permutevar8x32_epi32(x, last));
        pos += 8 * W;
        g += 2;
    }
    (g, pos, acc)
}

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
        if c0 == c1 && matches!(c0, 0x00 | 0x55 | 0xAA | 0xFF) {
            // A run of eight-value steps of one byte width: a loop specialised per width.
            // SAFETY: AVX2 is enabled here; `run` keeps g + 2 <= ctrl.len() and its loads in
            // `data`.
            let (g2, p2, a2) = unsafe {
                match c0 {
                    0x00 => run::<1>(ctrl, data, out, g, pos, acc),
                    0x55 => run::<2>(ctrl, data, out, g, pos, acc),
                    0xAA => run::<3>(ctrl, data, out, g, pos, acc),
                    _ => run::<4>(ctrl, data, out, g, pos, acc),
                }
            };
            if g2 == g {
                break; // not even one step fits before the end of `data`
            }
            (g, pos, acc) = (g2, p2, a2);
            continue;
        }
        let x = {
            let p1 = pos + GROUP_LEN[c0] as usize;
            if p1 + 16 > data.len() {
                break;
            }
            // SAFETY: pos < p1 and p1 + 16 <= data.len(): both loads are inside `data`; the
            // shuffle rows are 16 bytes.
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
            pos = p1 + GROUP_LEN[c1] as usize;
            _mm256_shuffle_epi8(v, shuf)
        };
        let x = prefix8(x);
        // SAFETY: out[4g..4g + 8] exists (see the loop condition).
        unsafe { _mm256_storeu_si256(dst.add(g) as *mut __m256i, _mm256_add_epi32(x, acc)) };
        acc = _mm256_add_epi32(acc, _mm256_permutevar8x32_epi32(x, last));
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

/// Unsigned `a >= b` per lane, as a bit mask of the eight lanes.
#[inline]
#[target_feature(enable = "avx2")]
fn ge_mask(a: __m256i, b: __m256i) -> u32 {
    let ge = _mm256_cmpeq_epi32(_mm256_max_epu32(a, b), a);
    _mm256_movemask_ps(_mm256_castsi256_ps(ge)) as u32
}

/// Lane `k` of `x`.
#[inline]
#[target_feature(enable = "avx2")]
fn lane(x: __m256i, k: u32) -> u32 {
    _mm256_cvtsi256_si32(_mm256_permutevar8x32_epi32(x, _mm256_set1_epi32(k as i32))) as u32
}

/// The eight values of control bytes `c0, c1` whose data start at `p0` and `p1`, prefix-summed
/// (no carry-in). `None` if a position is past the data.
#[inline]
#[target_feature(enable = "avx2")]
fn pair(data: &[u8], pad: &Pad, c0: usize, c1: usize, p0: usize, p1: usize) -> Option<__m256i> {
    let (a0, a1) = (pad.at(data, p0)?, pad.at(data, p1)?);
    // SAFETY: `Pad::at` gives 16 readable bytes at each address; shuffle rows are 16 bytes.
    let (v, shuf) = unsafe {
        (
            _mm256_loadu2_m128i(a1 as *const __m128i, a0 as *const __m128i),
            _mm256_loadu2_m128i(
                GROUP_SHUFFLE[c1].as_ptr() as *const __m128i,
                GROUP_SHUFFLE[c0].as_ptr() as *const __m128i,
            ),
        )
    };
    Some(prefix8(_mm256_shuffle_epi8(v, shuf)))
}

/// Forward seek (see [`crate::search`]) over the whole groups `ctrl` (one control byte per four
/// values), eight values per step, from `(v, pos, key(v - 1))` with `v` a multiple of 4. Stops
/// with [`Seek::Next`] (group index, position, running key) when fewer than two groups remain or
/// a position leaves the data (the scalar twin finishes and reports it).
///
/// # Safety
/// The CPU must support AVX2.
#[target_feature(enable = "avx2,bmi1")]
pub(crate) unsafe fn seek_fwd(
    ctrl: &[u8],
    data: &[u8],
    pad: &Pad,
    (v, mut pos, acc): (usize, usize, u32),
    target: u32,
    stop: usize,
) -> Seek {
    let mut g = v / 4;
    let t = _mm256_set1_epi32(target as i32);
    let mut acc = _mm256_set1_epi32(acc as i32);
    let lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    while g + 2 <= ctrl.len() {
        let (c0, c1) = (ctrl[g] as usize, ctrl[g + 1] as usize);
        let p1 = pos + GROUP_LEN[c0] as usize;
        let p2 = p1 + GROUP_LEN[c1] as usize;
        if p2 > data.len() {
            break;
        }
        let Some(x) = pair(data, pad, c0, c1, pos, p1) else {
            break;
        };
        let keys = _mm256_add_epi32(x, acc);
        // Lanes at or past `stop` count as hits.
        let rel = stop.saturating_sub(4 * g).min(8) as i32;
        let past = _mm256_cmpgt_epi32(lanes, _mm256_set1_epi32(rel - 1));
        let hit = ge_mask(keys, t) | _mm256_movemask_ps(_mm256_castsi256_ps(past)) as u32;
        if hit != 0 {
            let k = hit.trailing_zeros();
            return Seek::Found(4 * g + k as usize, lane(keys, k));
        }
        acc = _mm256_permutevar8x32_epi32(keys, _mm256_set1_epi32(7));
        pos = p2;
        g += 2;
    }
    Seek::Next(g, pos, _mm256_cvtsi256_si32(acc) as u32)
}

/// Backward seek (see [`crate::search`]) over the whole groups `ctrl[..g_end]`, eight values
/// per step, from `(g_end, position after group g_end - 1, key(4 * g_end - 1))`. Stops with
/// [`Seek::Next`] (group index, position, key at the end of what remains) when fewer than two
/// groups remain or a position leaves the data.
///
/// # Safety
/// The CPU must support AVX2.
#[target_feature(enable = "avx2,lzcnt")]
pub(crate) unsafe fn seek_bwd(
    ctrl: &[u8],
    data: &[u8],
    pad: &Pad,
    (mut g, mut pos, key): (usize, usize, u32),
    target: u32,
    stop: usize,
) -> Seek {
    let t = _mm256_set1_epi32(target as i32);
    let mut end = key;
    let lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    let up = _mm256_setr_epi32(0, 0, 1, 2, 3, 4, 5, 6);
    while g >= 2 && g <= ctrl.len() {
        let (c0, c1) = (ctrl[g - 2] as usize, ctrl[g - 1] as usize);
        let (l0, l1) = (GROUP_LEN[c0] as usize, GROUP_LEN[c1] as usize);
        let Some(p0) = pos.checked_sub(l0 + l1) else {
            break;
        };
        let Some(x) = pair(data, pad, c0, c1, p0, p0 + l0) else {
            break;
        };
        let total = lane(x, 7);
        let before = end.wrapping_sub(total);
        let keys = _mm256_add_epi32(x, _mm256_set1_epi32(before as i32));
        // key(v - 1) per lane: `before`, then the keys moved up one lane.
        let prev = _mm256_blend_epi32::<1>(
            _mm256_permutevar8x32_epi32(keys, up),
            _mm256_set1_epi32(before as i32),
        );
        let v0 = 4 * (g - 2);
        // Lanes at `stop` (and below, which the walk never passes) count as hits.
        let rel = (stop as isize - v0 as isize).clamp(-1, 7) as i32;
        let at_stop = _mm256_cmpgt_epi32(_mm256_set1_epi32(rel + 1), lanes);
        let below = !ge_mask(prev, t) & 0xFF;
        let hit = below | _mm256_movemask_ps(_mm256_castsi256_ps(at_stop)) as u32;
        if hit != 0 {
            let k = 31 - hit.leading_zeros();
            return Seek::Found(v0 + k as usize, lane(keys, k));
        }
        end = before;
        pos = p0;
        g -= 2;
    }
    Seek::Next(g, pos, end)
}
