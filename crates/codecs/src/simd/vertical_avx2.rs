//! AVX2 kernels for the 4-lane vertical layout (see `vertical_sse41` for the layout and the
//! kernel contract).
//!
//! Unpack works on two value vectors per 256-bit register: vector `j` in the low half and `j+1`
//! in the high half, each half loaded from its own frame row, shifted by per-half counts
//! (`vpsrlvd`/`vpsllvd`; a count of 32 gives 0) and masked. The prefix sum runs within each
//! 128-bit half with byte shifts, adds the low half's total to the high half, and keeps a running
//! carry off the critical path; sum and seek reuse the pair extraction and scan. Pack is the
//! 128-bit body built with AVX2 enabled (VEX encoding).
//!
//! The unpack kernels also have a build for [`crate::Isa::Avx512`] (`*_V2` tables), still on
//! 256-bit registers (Zen 4 splits 512-bit shuffles and shifts): a value that straddles two words
//! is one funnel shift (`vpshrdvd`, VBMI2) instead of two shifts and an OR, and the prefix sum's
//! shuffle-and-blend pairs are single zero-masked shuffles. 7-14% faster at widths where values
//! straddle (12, 24) in same-run A/B (`examples/decode_ab.rs`), equal where none do.

use core::arch::x86_64::*;

use super::vertical_sse41::{pack, table33, PackFn, SeekFn, SumFn, UnpackFn};

/// Repeats `$body` 16 times with `$j` bound to the constants 0, 2, .., 30.
macro_rules! unroll16x2 {
    ($j:ident, $body:block) => {{
        let $j: u32 = 0;
        $body
    }
    {
        let $j: u32 = 2;
        $body
    }
    {
        let $j: u32 = 4;
        $body
    }
    {
        let $j: u32 = 6;
        $body
    }
    {
        let $j: u32 = 8;
        $body
    }
    {
        let $j: u32 = 10;
        $body
    }
    {
        let $j: u32 = 12;
        $body
    }
    {
        let $j: u32 = 14;
        $body
    }
    {
        let $j: u32 = 16;
        $body
    }
    {
        let $j: u32 = 18;
        $body
    }
    {
        let $j: u32 = 20;
        $body
    }
    {
        let $j: u32 = 22;
        $body
    }
    {
        let $j: u32 = 24;
        $body
    }
    {
        let $j: u32 = 26;
        $body
    }
    {
        let $j: u32 = 28;
        $body
    }
    {
        let $j: u32 = 30;
        $body
    }};
}

#[inline(always)]
const fn mask(b: u32) -> u32 {
    if b >= 32 {
        u32::MAX
    } else {
        (1u32 << b) - 1
    }
}

/// Rows `k0` (low half) and `k1` (high half) as one register, `k1 - k0` in {0, 1}: one
/// broadcast or one 32-byte load, never an ALU op.
#[inline(always)]
unsafe fn rows2(packed: *const u8, k0: u32, k1: u32) -> __m256i {
    debug_assert!(k1 == k0 || k1 == k0 + 1);
    // SAFETY: callers pass rows k0, k1 < B, inside the 16*B bytes of the kernel contract; the
    // 32-byte load covers exactly rows k0 and k0 + 1 = k1. AVX2 is enabled by every caller.
    unsafe {
        let p = packed.add(16 * k0 as usize);
        if k0 == k1 {
            _mm256_broadcastsi128_si256(_mm_loadu_si128(p as *const __m128i))
        } else {
            _mm256_loadu_si256(p as *const __m256i)
        }
    }
}

/// Value vectors `j` and `j+1` of a frame of width `B` (`1 <= B <= 32`). `V2`: the caller
/// enables AVX-512 VL + VBMI2, and a straddling pair is joined with one funnel shift
/// (`vpshrdvd`) instead of two shifts and an OR.
#[inline(always)]
unsafe fn extract2<const B: u32, const V2: bool>(packed: *const u8, j: u32) -> __m256i {
    let (b0, b1) = (j * B, (j + 1) * B);
    let (k0, s0, k1, s1) = (b0 / 32, b0 % 32, b1 / 32, b1 % 32);
    // SAFETY: AVX2 is enabled by every caller; rows read are k0, k1 (< B) and, for a straddling
    // half, k+1 where k*32 + s + B > 32*(k+1), i.e. still inside the 32*B bits of the frame.
    unsafe {
        let lo = rows2(packed, k0, k1);
        let (r0, r1) = (s0 as i32, s1 as i32);
        let (st0, st1) = (s0 + B > 32, s1 + B > 32);
        let counts = _mm256_setr_epi32(r0, r0, r0, r0, r1, r1, r1, r1);
        if V2 && (st0 || st1) {
            // The same filler rows as below; the funnel shift takes the high word's bits from
            // position 32 - s up (none for s = 0), which the mask clears in a non-straddling half.
            let (h0, h1) = match (st0, st1) {
                (true, true) => (k0 + 1, k1 + 1),
                (true, false) => (k0 + 1, k0 + 1),
                _ => (k1, k1 + 1),
            };
            let hi = rows2(packed, h0, h1);
            let v = _mm256_shrdv_epi32(lo, hi, counts);
            return if B < 32 {
                _mm256_and_si256(v, _mm256_set1_epi32(mask(B) as i32))
            } else {
                v
            };
        }
        let mut v = _mm256_srlv_epi32(lo, counts);
        if st0 || st1 {
            // A half that does not straddle reads any row of the frame as filler: shifted left
            // by 32 - s its bits land at or above B (or vanish for a count of 32) and are masked
            // off. The filler is chosen so the two rows are equal or consecutive.
            let (h0, h1) = match (st0, st1) {
                (true, true) => (k0 + 1, k1 + 1),
                (true, false) => (k0 + 1, k0 + 1),
                _ => (k1, k1 + 1),
            };
            let hi = rows2(packed, h0, h1);
            let (l0, l1) = ((32 - s0) as i32, (32 - s1) as i32);
            let h = _mm256_sllv_epi32(hi, _mm256_setr_epi32(l0, l0, l0, l0, l1, l1, l1, l1));
            v = _mm256_or_si256(v, h);
        }
        if B < 32 {
            v = _mm256_and_si256(v, _mm256_set1_epi32(mask(B) as i32));
        }
        v
    }
}

#[inline(always)]
unsafe fn unpack2<const B: u32, const D1: bool, const V2: bool>(
    packed: *const u8,
    base: u32,
    out: *mut u32,
) {
    // SAFETY: AVX2 is enabled by every caller; kernel contract (16*B readable bytes, 128
    // writable u32); stores are at out[4j..4j+8], j <= 30.
    unsafe {
        let mut carry = _mm256_set1_epi32(base as i32);
        unroll16x2!(j, {
            let mut v = pair::<B, V2>(packed, j);
            if D1 {
                // The pair's total goes into the carry off the critical path.
                let (scanned, total) = scan8::<V2>(v);
                v = _mm256_add_epi32(scanned, carry);
                carry = _mm256_add_epi32(carry, total);
            } else {
                v = _mm256_add_epi32(v, carry);
            }
            _mm256_storeu_si256(out.add(4 * j as usize) as *mut __m256i, v);
        });
        let _ = carry;
    }
}

/// Value vectors `j, j+1` (zero for `B = 0`); `V2` as in [`extract2`].
#[inline(always)]
unsafe fn pair<const B: u32, const V2: bool>(packed: *const u8, j: u32) -> __m256i {
    // SAFETY: AVX2 (and for V2 AVX-512 VL + VBMI2) is enabled by every caller; `extract2`
    // keeps to the frame.
    unsafe {
        if B == 0 {
            _mm256_setzero_si256()
        } else {
            extract2::<B, V2>(packed, j)
        }
    }
}

/// In-lane prefix sum of a pair, with the low half's total carried into the high half; also
/// returns the pair's total in every lane.
#[inline(always)]
unsafe fn scan8<const V2: bool>(v: __m256i) -> (__m256i, __m256i) {
    if V2 {
        // SAFETY: AVX-512 F + VL are enabled by every V2 caller.
        return unsafe { scan8_masked(v) };
    }
    // SAFETY: AVX2 is enabled by every caller.
    unsafe {
        // [a b c d] -> [a, a+b, c, c+d] with a 64-bit shift (no shuffle), then the pair sum
        // of the low 64 bits into both high dwords.
        let v = _mm256_add_epi32(v, _mm256_slli_epi64::<32>(v));
        let lo2 = _mm256_blend_epi32::<0b1100_1100>(
            _mm256_setzero_si256(),
            _mm256_shuffle_epi32::<0b01_01_00_00>(v),
        );
        let v = _mm256_add_epi32(v, lo2);
        // The low half's total (lane 3) into the high half, then the pair's total (lane 7)
        // broadcast: two lane-crossing permutes, one blend.
        let t0 = _mm256_permutevar8x32_epi32(v, _mm256_set1_epi32(3));
        let v = _mm256_add_epi32(
            v,
            _mm256_blend_epi32::<0b1111_0000>(_mm256_setzero_si256(), t0),
        );
        let total = _mm256_permutevar8x32_epi32(v, _mm256_set1_epi32(7));
        (v, total)
    }
}

/// [`scan8`] with AVX-512 VL zero-masking: each shuffle and its blend are one instruction.
#[inline(always)]
unsafe fn scan8_masked(v: __m256i) -> (__m256i, __m256i) {
    // SAFETY: AVX2 and AVX-512 F + VL are enabled by every caller.
    unsafe {
        let v = _mm256_add_epi32(v, _mm256_slli_epi64::<32>(v));
        let v = _mm256_add_epi32(
            v,
            _mm256_maskz_shuffle_epi32::<0b01_01_00_00>(0b1100_1100, v),
        );
        let t0 = _mm256_maskz_permutexvar_epi32(0b1111_0000, _mm256_set1_epi32(3), v);
        let v = _mm256_add_epi32(v, t0);
        let total = _mm256_permutevar8x32_epi32(v, _mm256_set1_epi32(7));
        (v, total)
    }
}

#[inline(always)]
unsafe fn sum2<const B: u32>(packed: *const u8, n: u32) -> u32 {
    // SAFETY: AVX2 is enabled by every caller; kernel contract (16*B readable bytes).
    unsafe {
        let mut acc = _mm256_setzero_si256();
        let lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        'done: {
            unroll16x2!(j, {
                if 4 * j >= n {
                    break 'done;
                }
                let v = pair::<B, false>(packed, j);
                if 4 * j + 8 <= n {
                    acc = _mm256_add_epi32(acc, v);
                } else {
                    let keep = _mm256_cmpgt_epi32(_mm256_set1_epi32((n - 4 * j) as i32), lanes);
                    acc = _mm256_add_epi32(acc, _mm256_and_si256(v, keep));
                    break 'done;
                }
            });
        }
        let x = _mm_add_epi32(
            _mm256_castsi256_si128(acc),
            _mm256_extracti128_si256::<1>(acc),
        );
        let x = _mm_add_epi32(x, _mm_shuffle_epi32::<0b01_00_11_10>(x));
        let x = _mm_add_epi32(x, _mm_shuffle_epi32::<0b10_11_00_01>(x));
        _mm_cvtsi128_si32(x) as u32
    }
}

#[inline(always)]
unsafe fn seek2<const B: u32>(packed: *const u8, base: u32, n: u32, key: u32) -> (u32, u32) {
    // SAFETY: AVX2 is enabled by every caller; kernel contract (16*B readable bytes); `vals`
    // is 32 writable bytes.
    unsafe {
        let sign = _mm256_set1_epi32(i32::MIN);
        // v >= key  <=>  (v ^ sign) > ((key - 1) ^ sign) as signed, for key >= 1.
        let below = _mm256_set1_epi32((key.wrapping_sub(1) ^ 0x8000_0000) as i32);
        let mut carry = _mm256_set1_epi32(base as i32);
        unroll16x2!(j, {
            if 4 * j >= n {
                return (n, 0);
            }
            let (v, total) = scan8::<false>(pair::<B, false>(packed, j));
            let v = _mm256_add_epi32(v, carry);
            carry = _mm256_add_epi32(carry, total);
            let ge = _mm256_cmpgt_epi32(_mm256_xor_si256(v, sign), below);
            let hit = _mm256_movemask_ps(_mm256_castsi256_ps(ge));
            if hit != 0 {
                let lane = hit.trailing_zeros();
                let i = 4 * j + lane;
                if i >= n {
                    return (n, 0);
                }
                let mut vals = [0u32; 8];
                _mm256_storeu_si256(vals.as_mut_ptr() as *mut __m256i, v);
                return (i, vals[lane as usize]);
            }
        });
        let _ = carry;
        (n, 0)
    }
}

/// Count of the first `n <= 128` values of a frame that are `< target` (unsigned): for the
/// sorted offsets of a SIMD FOR frame, the position of the first offset `>= target`. A
/// branch-free scan of every value vector in registers (no stores, no prefix sum).
pub type RankFn = unsafe fn(packed: *const u8, n: u32, target: u32) -> u32;

#[inline(always)]
unsafe fn rank2<const B: u32>(packed: *const u8, n: u32, target: u32) -> u32 {
    // SAFETY: AVX2 is enabled by every caller; kernel contract (16*B readable bytes).
    unsafe {
        let sign = _mm256_set1_epi32(i32::MIN);
        // v < target  <=>  (target ^ sign) > (v ^ sign) as signed.
        let t = _mm256_set1_epi32((target ^ 0x8000_0000) as i32);
        let lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        let mut acc = _mm256_setzero_si256();
        'done: {
            unroll16x2!(j, {
                if 4 * j >= n {
                    break 'done;
                }
                let v = _mm256_xor_si256(pair::<B, false>(packed, j), sign);
                let lt = _mm256_cmpgt_epi32(t, v);
                if 4 * j + 8 <= n {
                    acc = _mm256_sub_epi32(acc, lt);
                } else {
                    let keep = _mm256_cmpgt_epi32(_mm256_set1_epi32((n - 4 * j) as i32), lanes);
                    acc = _mm256_sub_epi32(acc, _mm256_and_si256(lt, keep));
                    break 'done;
                }
            });
        }
        let x = _mm_add_epi32(
            _mm256_castsi256_si128(acc),
            _mm256_extracti128_si256::<1>(acc),
        );
        let x = _mm_add_epi32(x, _mm_shuffle_epi32::<0b01_00_11_10>(x));
        let x = _mm_add_epi32(x, _mm_shuffle_epi32::<0b10_11_00_01>(x));
        _mm_cvtsi128_si32(x) as u32
    }
}

/// [`crate::vertical::rank_near`]'s window: value vectors `j, j + 1` of a frame of width `b`
/// (not a constant here: the window is one step, not a loop), compared with `target`. Returns how
/// many of the lanes set in `valid` are below `target` and the value in the lane after them (0
/// when all are below).
///
/// # Safety
/// The CPU must support AVX2; `1 <= b <= 32`, `j <= 30`, and `packed` points to `16 * b`
/// readable bytes.
#[target_feature(enable = "avx2,popcnt")]
pub unsafe fn rank_window(
    packed: *const u8,
    b: u32,
    j: u32,
    valid: u32,
    target: u32,
) -> (u32, u32) {
    // SAFETY: same contract.
    unsafe { window(packed, b, j, valid, target) }
}

#[inline(always)]
unsafe fn window(packed: *const u8, b: u32, j: u32, valid: u32, target: u32) -> (u32, u32) {
    let (b0, b1) = (j * b, (j + 1) * b);
    let (k0, s0, k1, s1) = (b0 / 32, b0 % 32, b1 / 32, b1 % 32);
    // A value that straddles continues in the next row (inside the frame); one that does not
    // reads a filler row (the next one, or the last) whose bits land at or above bit b.
    let (n0, n1) = ((k0 + 1).min(b - 1), (k1 + 1).min(b - 1));
    let row = |k: u32| packed.wrapping_add(16 * k as usize) as *const __m128i;
    // SAFETY: AVX2 is enabled by every caller. Rows k0, k1, n0, n1 are < b (the window's bits
    // end inside the 32*b bits per lane since j + 1 <= 31), so every 16-byte load is inside the
    // 16*b bytes of the contract.
    unsafe {
        let lo = _mm256_loadu2_m128i(row(k1), row(k0));
        let hi = _mm256_loadu2_m128i(row(n1), row(n0));
        let sr = _mm256_set_m128i(_mm_set1_epi32(s1 as i32), _mm_set1_epi32(s0 as i32));
        let sl = _mm256_sub_epi32(_mm256_set1_epi32(32), sr);
        let m = if b >= 32 { u32::MAX } else { (1u32 << b) - 1 };
        let v = _mm256_and_si256(
            _mm256_or_si256(_mm256_srlv_epi32(lo, sr), _mm256_sllv_epi32(hi, sl)),
            _mm256_set1_epi32(m as i32),
        );
        let sign = _mm256_set1_epi32(i32::MIN);
        let lt = _mm256_cmpgt_epi32(
            _mm256_set1_epi32((target ^ 0x8000_0000) as i32),
            _mm256_xor_si256(v, sign),
        );
        let below = _mm256_movemask_ps(_mm256_castsi256_ps(lt)) as u32 & valid;
        let c = below.count_ones();
        let at = _mm256_permutevar8x32_epi32(v, _mm256_set1_epi32(c as i32));
        let value = if c < 8 {
            _mm256_cvtsi256_si32(at) as u32
        } else {
            0
        };
        (c, value)
    }
}

/// [`crate::vertical::rank_near`] for SIMD FOR's lower_bound, inlined into
/// [`simd_for_lower_bound`]: the guess `target * n / range` from a reciprocal estimate (a few
/// cycles instead of a division's ~15; a guess only places the window).
///
/// # Safety
/// AVX2 must be enabled in the caller; `1 <= b <= 32`, `1 <= n <= 128`, `range >= 1`, and
/// `packed` points to `16 * b` readable bytes.
#[inline(always)]
pub(crate) unsafe fn rank_near_body(
    packed: *const u8,
    b: u32,
    n: usize,
    target: u32,
    range: u32,
) -> Option<(usize, u32)> {
    if b == 0 || b > 32 || n == 0 || n > 128 {
        return None;
    }
    // SAFETY: SSE is part of the AVX2 the caller enables.
    let guess = unsafe {
        let r = _mm_rcp_ss(_mm_set_ss(range as f32));
        let g = _mm_mul_ss(_mm_set_ss(target as f32 * n as f32), r);
        _mm_cvttss_si32(g).max(0) as usize
    };
    let (j, valid) = crate::vertical::near_window(n, guess);
    // SAFETY: j <= 30 (`near_window`) and the caller's contract.
    let (c, v) = unsafe { window(packed, b, j as u32, valid, target) };
    crate::vertical::near_result(n, j, valid, c, v)
}

/// `SimdFor::lower_bound` with AVX2 enabled throughout (so the window compare is inlined).
///
/// # Safety
/// The CPU must support AVX2.
#[target_feature(enable = "avx2,popcnt")]
pub unsafe fn simd_for_lower_bound(
    desc: &crate::Descriptor,
    payload: &[u8],
    key: u32,
) -> crate::Result<(usize, Option<u32>)> {
    // The usual case in a few compares: a block of 3..=129 keys in its only well-formed shape
    // (1 <= b <= 32, size = 16b, within the payload) and a key in (start, last]. Anything else
    // takes the general body, which reports what is wrong.
    let (count, b) = (desc.count, desc.bits as u32);
    let (start, last) = (desc.start, desc.last);
    if count.wrapping_sub(3) < 127
        && b.wrapping_sub(1) < 32
        && desc.size == 16 * b
        && payload.len() >= 16 * b as usize
        && key > start
        && key <= last
    {
        let n = count as usize - 1;
        let (target, range) = (key - start, last - start);
        // A reciprocal estimate is exact enough for a guess (it only places the window).
        let r = _mm_rcp_ss(_mm_set_ss(range as f32));
        let g = _mm_mul_ss(_mm_set_ss(target as f32 * n as f32), r);
        let guess = _mm_cvttss_si32(g).max(0) as usize;
        let (j, valid) = crate::vertical::near_window(n, guess);
        // SAFETY: 1 <= b <= 32, j <= 30 and the 16*b frame bytes are in `payload` (checked).
        let (c, v) = unsafe { window(payload.as_ptr(), b, j as u32, valid, target) };
        let (c, w) = (c as usize, valid.count_ones() as usize);
        if (c > 0 || j == 0) && (c < w || 4 * j + w >= n) {
            let lo = 4 * j + c;
            return Ok(if lo < n {
                (lo + 1, Some(start.wrapping_add(v)))
            } else {
                (count as usize, None)
            });
        }
    }
    crate::simd_for::lower_bound_body::<true>(crate::Isa::Avx2, desc, payload, key)
}

#[target_feature(enable = "avx2")]
unsafe fn rank_for<const B: u32>(packed: *const u8, n: u32, target: u32) -> u32 {
    // SAFETY: same contract as this kernel's.
    unsafe { rank2::<B>(packed, n, target) }
}

#[target_feature(enable = "avx2")]
unsafe fn unpack_d1<const B: u32>(packed: *const u8, base: u32, out: *mut u32) {
    // SAFETY: same contract as this kernel's.
    unsafe { unpack2::<B, true, false>(packed, base, out) }
}
#[target_feature(enable = "avx2")]
unsafe fn unpack_for<const B: u32>(packed: *const u8, base: u32, out: *mut u32) {
    // SAFETY: same contract as this kernel's.
    unsafe { unpack2::<B, false, false>(packed, base, out) }
}
#[target_feature(enable = "avx2,avx512f,avx512vl,avx512vbmi2")]
unsafe fn unpack_d1_v2<const B: u32>(packed: *const u8, base: u32, out: *mut u32) {
    // SAFETY: same contract as this kernel's.
    unsafe { unpack2::<B, true, true>(packed, base, out) }
}
#[target_feature(enable = "avx2,avx512f,avx512vl,avx512vbmi2")]
unsafe fn unpack_for_v2<const B: u32>(packed: *const u8, base: u32, out: *mut u32) {
    // SAFETY: same contract as this kernel's.
    unsafe { unpack2::<B, false, true>(packed, base, out) }
}
#[target_feature(enable = "avx2")]
unsafe fn pack_d1<const B: u32>(keys: *const u32, base: u32, packed: *mut u8) {
    // SAFETY: same contract as this kernel's.
    unsafe { pack::<B, true>(keys, base, packed) }
}
#[target_feature(enable = "avx2")]
unsafe fn pack_for<const B: u32>(keys: *const u32, base: u32, packed: *mut u8) {
    // SAFETY: same contract as this kernel's.
    unsafe { pack::<B, false>(keys, base, packed) }
}
#[target_feature(enable = "avx2")]
unsafe fn sum_n<const B: u32>(packed: *const u8, n: u32) -> u32 {
    // SAFETY: same contract as this kernel's.
    unsafe { sum2::<B>(packed, n) }
}
#[target_feature(enable = "avx2")]
unsafe fn seek_d1<const B: u32>(packed: *const u8, base: u32, n: u32, key: u32) -> (u32, u32) {
    // SAFETY: same contract as this kernel's.
    unsafe { seek2::<B>(packed, base, n, key) }
}

pub static UNPACK_D1: [UnpackFn; 33] = table33!(unpack_d1);
pub static UNPACK_FOR: [UnpackFn; 33] = table33!(unpack_for);
/// [`UNPACK_D1`] for [`crate::Isa::Avx512`] (AVX-512 VL + VBMI2 on 256-bit registers).
pub static UNPACK_D1_V2: [UnpackFn; 33] = table33!(unpack_d1_v2);
/// [`UNPACK_FOR`] for [`crate::Isa::Avx512`].
pub static UNPACK_FOR_V2: [UnpackFn; 33] = table33!(unpack_for_v2);
pub static PACK_D1: [PackFn; 33] = table33!(pack_d1);
pub static PACK_FOR: [PackFn; 33] = table33!(pack_for);
pub static SUM: [SumFn; 33] = table33!(sum_n);
pub static SEEK_D1: [SeekFn; 33] = table33!(seek_d1);
pub static RANK_FOR: [RankFn; 33] = table33!(rank_for);

/// The sum of the 128 decoded keys of a delta frame, `sum(base + v[0] + .. + v[i])` over every
/// slot (the frame's zero padding repeats the last key), accumulated in 64-bit lanes: unpack,
/// prefix sum and the SUM aggregate fused, no key written to memory.
pub type SumKeysFn = unsafe fn(packed: *const u8, base: u32) -> u64;

#[inline(always)]
unsafe fn sum_keys2<const B: u32>(packed: *const u8, base: u32) -> u64 {
    // SAFETY: AVX2 is enabled by every caller; kernel contract (16*B readable bytes).
    unsafe {
        let mut carry = _mm256_set1_epi32(base as i32);
        let (mut a0, mut a1) = (_mm256_setzero_si256(), _mm256_setzero_si256());
        unroll16x2!(j, {
            let (scanned, total) = scan8::<false>(pair::<B, false>(packed, j));
            let v = _mm256_add_epi32(scanned, carry);
            carry = _mm256_add_epi32(carry, total);
            a0 = _mm256_add_epi64(a0, _mm256_cvtepu32_epi64(_mm256_castsi256_si128(v)));
            a1 = _mm256_add_epi64(a1, _mm256_cvtepu32_epi64(_mm256_extracti128_si256::<1>(v)));
        });
        let _ = carry;
        let mut lanes = [0u64; 4];
        _mm256_storeu_si256(lanes.as_mut_ptr() as *mut __m256i, _mm256_add_epi64(a0, a1));
        lanes.iter().sum()
    }
}
#[target_feature(enable = "avx2")]
unsafe fn sum_keys_d1<const B: u32>(packed: *const u8, base: u32) -> u64 {
    // SAFETY: same contract as this kernel's.
    unsafe { sum_keys2::<B>(packed, base) }
}

pub static SUM_KEYS_D1: [SumKeysFn; 33] = table33!(sum_keys_d1);

/// `(D, J)` of a frame of width `B <= 24`: `D = sum(v[i])`, `J = sum(i * v[i])` over its 128
/// values. The SUM of a delta block follows without a prefix sum (`n*start + n*D - J` for the
/// keys after the start). Two adds per pair of value vectors: a running sum `R` and the sum of
/// the running sums `T`; per lane `sum(q * w_q) = 16 * R - T` over the lane's 16 pairs.
pub type MomentsFn = unsafe fn(packed: *const u8) -> (u64, u64);

#[inline(always)]
unsafe fn moments2<const B: u32>(packed: *const u8) -> (u64, u64) {
    // SAFETY: AVX2 is enabled by every caller; kernel contract (16*B readable bytes). Lane sums
    // stay below 2^32 for B <= 24: T <= 136 * (2^24 - 1).
    unsafe {
        let (mut r, mut t) = (_mm256_setzero_si256(), _mm256_setzero_si256());
        unroll16x2!(j, {
            r = _mm256_add_epi32(r, pair::<B, false>(packed, j));
            t = _mm256_add_epi32(t, r);
        });
        // Lane x (half h = x / 4 holds value vector 2q + h, lane l = x % 4 value 8q + 4h + l)
        // contributes s_x to D and 8 * (16 * s_x - t_x) + x * s_x = (128 + x) * s_x - 8 * t_x
        // to J: widened to 64-bit lanes and reduced in registers.
        let wide = |v: __m256i| {
            (
                _mm256_cvtepu32_epi64(_mm256_castsi256_si128(v)),
                _mm256_cvtepu32_epi64(_mm256_extracti128_si256::<1>(v)),
            )
        };
        let ((rl, rh), (tl, th)) = (wide(r), wide(t));
        let d4 = _mm256_add_epi64(rl, rh);
        let j4 = _mm256_sub_epi64(
            _mm256_add_epi64(
                _mm256_mul_epu32(rl, _mm256_setr_epi64x(128, 129, 130, 131)),
                _mm256_mul_epu32(rh, _mm256_setr_epi64x(132, 133, 134, 135)),
            ),
            _mm256_slli_epi64::<3>(_mm256_add_epi64(tl, th)),
        );
        let hsum = |v: __m256i| {
            let x = _mm_add_epi64(_mm256_castsi256_si128(v), _mm256_extracti128_si256::<1>(v));
            (_mm_cvtsi128_si64(x) as u64).wrapping_add(_mm_extract_epi64::<1>(x) as u64)
        };
        (hsum(d4), hsum(j4))
    }
}
#[target_feature(enable = "avx2")]
unsafe fn moments<const B: u32>(packed: *const u8) -> (u64, u64) {
    // SAFETY: same contract as this kernel's.
    unsafe { moments2::<B>(packed) }
}

pub static MOMENTS: [MomentsFn; 33] = table33!(moments);

/// `kernel::<w>(args)` for the width `b` among the literals `w` (`None` for another width):
/// each width's kernel inlined through a `match`, for the `*_inline` functions below. Their
/// callers' contract is the kernels' (AVX2 enabled, `16 * b` readable bytes).
macro_rules! by_width {
    ($b:expr, $kernel:ident $args:tt, $($w:literal)*) => {
        match $b {
            // SAFETY: the caller's contract (AVX2 enabled, 16*b readable bytes).
            $($w => Some(unsafe { $kernel::<$w> $args }),)*
            _ => None,
        }
    };
}

/// `(D, J)` of a frame of width `b` in `1..=24` as [`MOMENTS`] gives them, with that width's
/// kernel inlined through a `match` instead of called through the table; `None` for other
/// widths. For loops over many frames compiled with AVX2 enabled (`sum::BlockSum::run`):
/// without a call per frame the loop's state stays in registers.
///
/// # Safety
/// AVX2 must be enabled in the caller; `packed` must point to `16 * b` readable bytes.
#[inline(always)]
pub unsafe fn moments_inline(b: u32, packed: *const u8) -> Option<(u64, u64)> {
    by_width!(b, moments2(packed), 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24)
}

/// The sum of the first `n <= 128` values of a frame of width `b` in `1..=25`, as [`SUM`]
/// gives it, with that width's kernel inlined through a `match` (as [`moments_inline`]);
/// `None` for other widths. For SIMD FOR's loop over many frames (`sum::BlockSum::run`).
///
/// # Safety
/// AVX2 must be enabled in the caller; `packed` must point to `16 * b` readable bytes.
#[inline(always)]
pub unsafe fn sum_inline(b: u32, packed: *const u8, n: u32) -> Option<u32> {
    by_width!(b, sum2(packed, n), 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25)
}
