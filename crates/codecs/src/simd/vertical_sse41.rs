//! 128-bit kernels for the 4-lane vertical layout of [`crate::vertical`] (BP128, SIMD FOR).
//!
//! One 128-value frame is 32 vectors of 4 lanes: vector `j` holds values `4j..4j+4`, and lane `l`
//! packs its 32 values horizontally into `b` words, word `k` of lane `l` at byte `16k + 4l`.
//! So vector `j` is word row `k = j*b / 32` shifted right by `s = j*b % 32`, ORed with row `k+1`
//! shifted left by `32 - s` when the value straddles two rows.
//!
//! The bodies here are generic over the bit width `B` (a const, so every shift is an immediate
//! and the 32 steps are unrolled), use only SSE2 (the x86-64 baseline), and are `#[inline(always)]`
//! so that the SSE4.1 wrappers below and the AVX2 wrappers in `vertical_avx2` compile them with
//! their own target features. Each `[_; 33]` table is indexed by `b`.
//!
//! Contract of every kernel: `B <= 32`; `packed` points to `16 * B` readable (or writable) bytes,
//! `keys`/`out` to 128 `u32`. Kernels never touch a byte outside those ranges.

use core::arch::x86_64::*;

/// Repeats `$body` 32 times with `$j` bound to the constants 0..32.
macro_rules! unroll32 {
    ($j:ident, $body:block) => {{
        let $j: u32 = 0;
        $body
    }
    {
        let $j: u32 = 1;
        $body
    }
    {
        let $j: u32 = 2;
        $body
    }
    {
        let $j: u32 = 3;
        $body
    }
    {
        let $j: u32 = 4;
        $body
    }
    {
        let $j: u32 = 5;
        $body
    }
    {
        let $j: u32 = 6;
        $body
    }
    {
        let $j: u32 = 7;
        $body
    }
    {
        let $j: u32 = 8;
        $body
    }
    {
        let $j: u32 = 9;
        $body
    }
    {
        let $j: u32 = 10;
        $body
    }
    {
        let $j: u32 = 11;
        $body
    }
    {
        let $j: u32 = 12;
        $body
    }
    {
        let $j: u32 = 13;
        $body
    }
    {
        let $j: u32 = 14;
        $body
    }
    {
        let $j: u32 = 15;
        $body
    }
    {
        let $j: u32 = 16;
        $body
    }
    {
        let $j: u32 = 17;
        $body
    }
    {
        let $j: u32 = 18;
        $body
    }
    {
        let $j: u32 = 19;
        $body
    }
    {
        let $j: u32 = 20;
        $body
    }
    {
        let $j: u32 = 21;
        $body
    }
    {
        let $j: u32 = 22;
        $body
    }
    {
        let $j: u32 = 23;
        $body
    }
    {
        let $j: u32 = 24;
        $body
    }
    {
        let $j: u32 = 25;
        $body
    }
    {
        let $j: u32 = 26;
        $body
    }
    {
        let $j: u32 = 27;
        $body
    }
    {
        let $j: u32 = 28;
        $body
    }
    {
        let $j: u32 = 29;
        $body
    }
    {
        let $j: u32 = 30;
        $body
    }
    {
        let $j: u32 = 31;
        $body
    }};
}

/// `[$f::<0>, ..., $f::<32>]`.
macro_rules! table33 {
    ($f:ident) => {
        [
            $f::<0>, $f::<1>, $f::<2>, $f::<3>, $f::<4>, $f::<5>, $f::<6>, $f::<7>, $f::<8>,
            $f::<9>, $f::<10>, $f::<11>, $f::<12>, $f::<13>, $f::<14>, $f::<15>, $f::<16>,
            $f::<17>, $f::<18>, $f::<19>, $f::<20>, $f::<21>, $f::<22>, $f::<23>, $f::<24>,
            $f::<25>, $f::<26>, $f::<27>, $f::<28>, $f::<29>, $f::<30>, $f::<31>, $f::<32>,
        ]
    };
}
pub(crate) use table33;

/// Decodes one frame: `out[i] = base + v[0] + .. + v[i]` (prefix sum) or `base + v[i]`.
pub type UnpackFn = unsafe fn(packed: *const u8, base: u32, out: *mut u32);
/// Encodes one frame of 128 keys as deltas (from `base`, then each key's predecessor) or as
/// offsets `key - base`. Every resulting value must be `< 2^B`.
pub type PackFn = unsafe fn(keys: *const u32, base: u32, packed: *mut u8);
/// Wrapping sum of the first `n <= 128` values of a frame.
pub type SumFn = unsafe fn(packed: *const u8, n: u32) -> u32;
/// For a delta frame from `base`: first `i < n` whose prefix-summed key is `>= key` (`key >= 1`),
/// as `(i, key_i)`, or `(n, 0)` when there is none.
pub type SeekFn = unsafe fn(packed: *const u8, base: u32, n: u32, key: u32) -> (u32, u32);

#[inline(always)]
const fn mask(b: u32) -> u32 {
    if b >= 32 {
        u32::MAX
    } else {
        (1u32 << b) - 1
    }
}

// The helpers below are `unsafe fn` because they call SSE2 intrinsics outside a
// `#[target_feature]` function (SSE2 is the x86-64 baseline, so the calls themselves are sound)
// and read or write through raw pointers as the kernel contract allows.

#[inline(always)]
unsafe fn row(packed: *const u8, k: u32) -> __m128i {
    // SAFETY: callers only ask for rows k < B, inside the 16*B bytes the kernel contract grants.
    unsafe { _mm_loadu_si128(packed.add(16 * k as usize) as *const __m128i) }
}

/// Vector `j` (values 4j..4j+4) of a frame of width `B`.
#[inline(always)]
unsafe fn extract<const B: u32>(packed: *const u8, j: u32) -> __m128i {
    // SAFETY: SSE2 is baseline; row k and (when the value straddles) row k+1 are < B because
    // j*B + B <= 32*B, so `row` stays in the frame.
    unsafe {
        if B == 0 {
            return _mm_setzero_si128();
        }
        let bit = j * B;
        let (k, s) = (bit / 32, bit % 32);
        let mut v = row(packed, k);
        if s > 0 {
            v = _mm_srl_epi32(v, _mm_cvtsi32_si128(s as i32));
        }
        if s + B > 32 {
            let hi = _mm_sll_epi32(row(packed, k + 1), _mm_cvtsi32_si128((32 - s) as i32));
            v = _mm_or_si128(v, hi);
        }
        if s + B != 32 {
            v = _mm_and_si128(v, _mm_set1_epi32(mask(B) as i32));
        }
        v
    }
}

/// Inclusive prefix sum of the 4 lanes.
#[inline(always)]
unsafe fn scan4(v: __m128i) -> __m128i {
    // SAFETY: SSE2 is baseline.
    unsafe {
        let v = _mm_add_epi32(v, _mm_slli_si128::<4>(v));
        _mm_add_epi32(v, _mm_slli_si128::<8>(v))
    }
}

#[inline(always)]
pub(crate) unsafe fn unpack<const B: u32, const D1: bool>(
    packed: *const u8,
    base: u32,
    out: *mut u32,
) {
    // SAFETY: kernel contract (16*B readable bytes, 128 writable u32 at `out`); the stores are
    // at out[4j..4j+4], j < 32.
    unsafe {
        let mut carry = _mm_set1_epi32(base as i32);
        unroll32!(j, {
            let mut v = extract::<B>(packed, j);
            if D1 {
                v = _mm_add_epi32(scan4(v), carry);
                carry = _mm_shuffle_epi32::<0xFF>(v);
            } else {
                v = _mm_add_epi32(v, carry);
            }
            _mm_storeu_si128(out.add(4 * j as usize) as *mut __m128i, v);
        });
        let _ = carry;
    }
}

#[inline(always)]
pub(crate) unsafe fn pack<const B: u32, const D1: bool>(
    keys: *const u32,
    base: u32,
    packed: *mut u8,
) {
    if B == 0 {
        return;
    }
    // SAFETY: kernel contract (128 readable u32 at `keys`, 16*B writable bytes); the row
    // stored, k = j*B/32, is < B.
    unsafe {
        let basev = _mm_set1_epi32(base as i32);
        let mut prev = basev;
        let mut acc = _mm_setzero_si128();
        unroll32!(j, {
            let cur = _mm_loadu_si128(keys.add(4 * j as usize) as *const __m128i);
            let v = if D1 {
                let before = _mm_or_si128(_mm_slli_si128::<4>(cur), _mm_srli_si128::<12>(prev));
                prev = cur;
                _mm_sub_epi32(cur, before)
            } else {
                _mm_sub_epi32(cur, basev)
            };
            let bit = j * B;
            let (k, s) = (bit / 32, bit % 32);
            acc = if s == 0 {
                v
            } else {
                _mm_or_si128(acc, _mm_sll_epi32(v, _mm_cvtsi32_si128(s as i32)))
            };
            if s + B >= 32 {
                _mm_storeu_si128(packed.add(16 * k as usize) as *mut __m128i, acc);
                if s + B > 32 {
                    acc = _mm_srl_epi32(v, _mm_cvtsi32_si128((32 - s) as i32));
                }
            }
        });
        let _ = (prev, acc);
    }
}

#[inline(always)]
unsafe fn hsum(v: __m128i) -> u32 {
    // SAFETY: SSE2 is baseline.
    unsafe {
        let v = _mm_add_epi32(v, _mm_shuffle_epi32::<0b01_00_11_10>(v));
        let v = _mm_add_epi32(v, _mm_shuffle_epi32::<0b10_11_00_01>(v));
        _mm_cvtsi128_si32(v) as u32
    }
}

#[inline(always)]
pub(crate) unsafe fn sum<const B: u32>(packed: *const u8, n: u32) -> u32 {
    // SAFETY: kernel contract (16*B readable bytes).
    unsafe {
        let mut acc = _mm_setzero_si128();
        let lanes = _mm_setr_epi32(0, 1, 2, 3);
        'done: {
            unroll32!(j, {
                if 4 * j >= n {
                    break 'done;
                }
                let v = extract::<B>(packed, j);
                if 4 * j + 4 <= n {
                    acc = _mm_add_epi32(acc, v);
                } else {
                    let keep = _mm_cmpgt_epi32(_mm_set1_epi32((n - 4 * j) as i32), lanes);
                    acc = _mm_add_epi32(acc, _mm_and_si128(v, keep));
                    break 'done;
                }
            });
        }
        hsum(acc)
    }
}

#[inline(always)]
pub(crate) unsafe fn seek<const B: u32>(
    packed: *const u8,
    base: u32,
    n: u32,
    key: u32,
) -> (u32, u32) {
    // SAFETY: kernel contract (16*B readable bytes); `vals` is 16 writable bytes.
    unsafe {
        let sign = _mm_set1_epi32(i32::MIN);
        // v >= key  <=>  (v ^ sign) > ((key - 1) ^ sign) as signed, for key >= 1.
        let below = _mm_set1_epi32((key.wrapping_sub(1) ^ 0x8000_0000) as i32);
        let mut carry = _mm_set1_epi32(base as i32);
        unroll32!(j, {
            if 4 * j >= n {
                return (n, 0);
            }
            let v = _mm_add_epi32(scan4(extract::<B>(packed, j)), carry);
            carry = _mm_shuffle_epi32::<0xFF>(v);
            let ge = _mm_cmpgt_epi32(_mm_xor_si128(v, sign), below);
            let hit = _mm_movemask_ps(_mm_castsi128_ps(ge));
            if hit != 0 {
                let lane = hit.trailing_zeros();
                let i = 4 * j + lane;
                if i >= n {
                    return (n, 0);
                }
                let mut vals = [0u32; 4];
                _mm_storeu_si128(vals.as_mut_ptr() as *mut __m128i, v);
                return (i, vals[lane as usize]);
            }
        });
        let _ = carry;
        (n, 0)
    }
}

#[target_feature(enable = "sse4.1")]
unsafe fn unpack_d1<const B: u32>(packed: *const u8, base: u32, out: *mut u32) {
    // SAFETY: same contract as this kernel's.
    unsafe { unpack::<B, true>(packed, base, out) }
}
#[target_feature(enable = "sse4.1")]
unsafe fn unpack_for<const B: u32>(packed: *const u8, base: u32, out: *mut u32) {
    // SAFETY: same contract as this kernel's.
    unsafe { unpack::<B, false>(packed, base, out) }
}
#[target_feature(enable = "sse4.1")]
unsafe fn pack_d1<const B: u32>(keys: *const u32, base: u32, packed: *mut u8) {
    // SAFETY: same contract as this kernel's.
    unsafe { pack::<B, true>(keys, base, packed) }
}
#[target_feature(enable = "sse4.1")]
unsafe fn pack_for<const B: u32>(keys: *const u32, base: u32, packed: *mut u8) {
    // SAFETY: same contract as this kernel's.
    unsafe { pack::<B, false>(keys, base, packed) }
}
#[target_feature(enable = "sse4.1")]
unsafe fn sum_n<const B: u32>(packed: *const u8, n: u32) -> u32 {
    // SAFETY: same contract as this kernel's.
    unsafe { sum::<B>(packed, n) }
}
#[target_feature(enable = "sse4.1")]
unsafe fn seek_d1<const B: u32>(packed: *const u8, base: u32, n: u32, key: u32) -> (u32, u32) {
    // SAFETY: same contract as this kernel's.
    unsafe { seek::<B>(packed, base, n, key) }
}

pub static UNPACK_D1: [UnpackFn; 33] = table33!(unpack_d1);
pub static UNPACK_FOR: [UnpackFn; 33] = table33!(unpack_for);
pub static PACK_D1: [PackFn; 33] = table33!(pack_d1);
pub static PACK_FOR: [PackFn; 33] = table33!(pack_for);
pub static SUM: [SumFn; 33] = table33!(sum_n);
pub static SEEK_D1: [SeekFn; 33] = table33!(seek_d1);
