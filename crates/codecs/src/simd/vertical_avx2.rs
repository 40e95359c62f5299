//! AVX2 kernels for the 4-lane vertical layout (see `vertical_sse41` for the layout and the
//! kernel contract).
//!
//! Unpack works on two value vectors per 256-bit register: vector `j` in the low half and `j+1`
//! in the high half, each half loaded from its own frame row, shifted by per-half counts
//! (`vpsrlvd`/`vpsllvd`; a count of 32 gives 0) and masked. The prefix sum runs within each
//! 128-bit half with byte shifts, adds the low half's total to the high half, and keeps a running
//! carry off the critical path. Pack, sum and seek are the 128-bit bodies built with AVX2 enabled
//! (VEX encoding).

use core::arch::x86_64::*;

use super::vertical_sse41::{pack, seek, sum, table33, PackFn, SeekFn, SumFn, UnpackFn};

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

/// Rows `k0` (low half) and `k1` (high half) as one register.
#[inline(always)]
unsafe fn rows2(packed: *const u8, k0: u32, k1: u32) -> __m256i {
    // SAFETY: callers pass rows < B, inside the 16*B bytes of the kernel contract; AVX2 is
    // enabled by every caller.
    unsafe {
        let lo = _mm_loadu_si128(packed.add(16 * k0 as usize) as *const __m128i);
        if k0 == k1 {
            _mm256_broadcastsi128_si256(lo)
        } else {
            let hi = _mm_loadu_si128(packed.add(16 * k1 as usize) as *const __m128i);
            _mm256_inserti128_si256::<1>(_mm256_castsi128_si256(lo), hi)
        }
    }
}

/// Value vectors `j` and `j+1` of a frame of width `B` (`1 <= B <= 32`).
#[inline(always)]
unsafe fn extract2<const B: u32>(packed: *const u8, j: u32) -> __m256i {
    let (b0, b1) = (j * B, (j + 1) * B);
    let (k0, s0, k1, s1) = (b0 / 32, b0 % 32, b1 / 32, b1 % 32);
    // SAFETY: AVX2 is enabled by every caller; rows read are k0, k1 (< B) and, for a straddling
    // half, k+1 where k*32 + s + B > 32*(k+1), i.e. still inside the 32*B bits of the frame.
    unsafe {
        let lo = rows2(packed, k0, k1);
        let (r0, r1) = (s0 as i32, s1 as i32);
        let mut v = _mm256_srlv_epi32(lo, _mm256_setr_epi32(r0, r0, r0, r0, r1, r1, r1, r1));
        let (st0, st1) = (s0 + B > 32, s1 + B > 32);
        if st0 || st1 {
            // A half that does not straddle re-reads its own row: its bits land at or above B
            // (or vanish for a count of 32) and are masked off.
            let hi = rows2(
                packed,
                if st0 { k0 + 1 } else { k0 },
                if st1 { k1 + 1 } else { k1 },
            );
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
unsafe fn unpack2<const B: u32, const D1: bool>(packed: *const u8, base: u32, out: *mut u32) {
    // SAFETY: AVX2 is enabled by every caller; kernel contract (16*B readable bytes, 128
    // writable u32); stores are at out[4j..4j+8], j <= 30.
    unsafe {
        let mut carry = _mm256_set1_epi32(base as i32);
        let last = _mm256_set1_epi32(7);
        unroll16x2!(j, {
            let mut v = if B == 0 {
                _mm256_setzero_si256()
            } else {
                extract2::<B>(packed, j)
            };
            if D1 {
                v = _mm256_add_epi32(v, _mm256_bslli_epi128::<4>(v));
                v = _mm256_add_epi32(v, _mm256_bslli_epi128::<8>(v));
                let low_total = _mm256_shuffle_epi32::<0xFF>(v);
                v = _mm256_add_epi32(v, _mm256_permute2x128_si256::<0x08>(low_total, low_total));
                let total = _mm256_permutevar8x32_epi32(v, last);
                v = _mm256_add_epi32(v, carry);
                carry = _mm256_add_epi32(carry, total);
            } else {
                v = _mm256_add_epi32(v, carry);
            }
            _mm256_storeu_si256(out.add(4 * j as usize) as *mut __m256i, v);
        });
        let _ = (carry, last);
    }
}

#[target_feature(enable = "avx2")]
unsafe fn unpack_d1<const B: u32>(packed: *const u8, base: u32, out: *mut u32) {
    // SAFETY: same contract as this kernel's.
    unsafe { unpack2::<B, true>(packed, base, out) }
}
#[target_feature(enable = "avx2")]
unsafe fn unpack_for<const B: u32>(packed: *const u8, base: u32, out: *mut u32) {
    // SAFETY: same contract as this kernel's.
    unsafe { unpack2::<B, false>(packed, base, out) }
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
    unsafe { sum::<B>(packed, n) }
}
#[target_feature(enable = "avx2")]
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
