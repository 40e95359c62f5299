//! StreamVByte decoding with AVX2: two control bytes (eight values) per step, prefix sum fused
//! (see [`crate::streamvbyte`]). Two equal control bytes giving all eight values one byte width
//! take a fast path without table lookups.

use core::arch::x86_64::*;

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
