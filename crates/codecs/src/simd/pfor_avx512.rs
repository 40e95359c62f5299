//! AVX-512 (F/BW/VBMI) kernels of PFOR / PFOR-DELTA: unpacking of horizontally packed codes,
//! sixteen per step, and an in-place prefix sum. Scalar twins: `pfor::unpack_add_scalar`,
//! `pfor::prefix_sum_scalar`.
//!
//! Sixteen codes of `b` bits take `2b` bytes. One masked 64-byte load (bytes past the slice are
//! masked off, so nothing outside it is read) feeds `vpermb`, which gathers the four bytes holding
//! each code into its lane; `vpsrlvd` drops the code's bit offset and a mask keeps `b` bits
//! (`b <= 25`). The last step stores through a lane mask, so no padding is needed.
//!
//! ```text
//! bytes  [2b*g ............................... 2b*g + 64)    masked load
//!          | vpermb: bytes (j*b/8 .. +4) -> lane j |
//! lanes  [ c0 | c1 | ... | c15 ]  >> (j*b % 8), & mask, + add
//! ```

use core::arch::x86_64::*;

/// Widest code these kernels unpack.
pub const MAX_B: u32 = 25;

struct Tables {
    idx: [[u8; 64]; 26],
    shift: [[u32; 16]; 26],
}

const fn build() -> Tables {
    let mut idx = [[0u8; 64]; 26];
    let mut shift = [[0u32; 16]; 26];
    let mut b = 1;
    while b <= 25 {
        let mut j = 0;
        while j < 16 {
            let bit = j * b;
            shift[b][j] = (bit % 8) as u32;
            let mut t = 0;
            while t < 4 {
                idx[b][4 * j + t] = (bit / 8 + t) as u8;
                t += 1;
            }
            j += 1;
        }
        b += 1;
    }
    Tables { idx, shift }
}

static T: Tables = build();

/// Mask of the first `n` lanes/bytes (`n` may exceed the width).
#[inline]
fn first(n: usize) -> u64 {
    if n >= 64 {
        u64::MAX
    } else {
        (1u64 << n) - 1
    }
}

/// Unpacks `out.len()` codes of width `b` from `data` and adds `add` (wrapping). Returns the
/// number of values written: `out.len()`, or 0 (nothing written) when `b` is 0 or above
/// [`MAX_B`] or `data` is shorter than `ceil(out.len() * b / 8)` bytes.
///
/// # Safety
/// The CPU must support AVX-512 F, BW and VBMI. Every access is bounded by the slices.
#[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
pub unsafe fn unpack_add(data: &[u8], b: u32, add: u32, out: &mut [u32]) -> usize {
    let n = out.len();
    if b == 0 || b > MAX_B || (n * b as usize).div_ceil(8) > data.len() {
        return 0;
    }
    let bu = b as usize;
    // SAFETY: the tables hold 64 bytes / 16 u32 per width; unaligned loads.
    let (idx, shift) = unsafe {
        (
            _mm512_loadu_si512(T.idx[bu].as_ptr() as *const _),
            _mm512_loadu_si512(T.shift[bu].as_ptr() as *const _),
        )
    };
    let m = _mm512_set1_epi32(crate::bits::mask(b) as i32);
    let a = _mm512_set1_epi32(add as i32);
    let mut g = 0;
    while 16 * g < n {
        let at = 2 * bu * g; // < ceil(n*b/8) <= data.len() since 16g < n
        let k = first(data.len() - at);
        let lanes = (n - 16 * g).min(16);
        // SAFETY: `at` is inside `data`; the load mask enables only bytes below data.len()
        // (masked-off bytes are not accessed); the store mask enables only lanes below n.
        unsafe {
            let v = _mm512_maskz_loadu_epi8(k, data.as_ptr().add(at) as *const i8);
            let v = _mm512_permutexvar_epi8(idx, v);
            let v = _mm512_and_si512(_mm512_srlv_epi32(v, shift), m);
            let v = _mm512_add_epi32(v, a);
            let p = out.as_mut_ptr().add(16 * g) as *mut i32;
            if lanes == 16 {
                _mm512_storeu_si512(p as *mut _, v);
            } else {
                _mm512_mask_storeu_epi32(p, first(lanes) as u16, v);
            }
        }
        g += 1;
    }
    n
}

/// In place: `out[i] = out[i-1] + step + out[i]` for `i >= 1` (wrapping).
///
/// # Safety
/// The CPU must support AVX-512 F.
#[target_feature(enable = "avx512f")]
pub unsafe fn prefix_sum(step: u32, out: &mut [u32]) {
    if out.len() < 2 {
        return;
    }
    let s = _mm512_set1_epi32(step as i32);
    let z = _mm512_setzero_si512();
    let mut carry = _mm512_set1_epi32(out[0] as i32);
    let last = _mm512_set1_epi32(15);
    let vals = &mut out[1..];
    let n = vals.len();
    let mut c = 0;
    while c < n {
        let lanes = (n - c).min(16);
        let k = first(lanes) as u16;
        // SAFETY: masked load/store touch only lanes c..c+lanes < n of `vals`.
        unsafe {
            let p = vals.as_mut_ptr().add(c) as *mut i32;
            let mut v = _mm512_add_epi32(_mm512_maskz_loadu_epi32(k, p), s);
            v = _mm512_add_epi32(v, _mm512_alignr_epi32::<15>(v, z));
            v = _mm512_add_epi32(v, _mm512_alignr_epi32::<14>(v, z));
            v = _mm512_add_epi32(v, _mm512_alignr_epi32::<12>(v, z));
            v = _mm512_add_epi32(v, _mm512_alignr_epi32::<8>(v, z));
            v = _mm512_add_epi32(v, carry);
            _mm512_mask_storeu_epi32(p, k, v);
            carry = _mm512_permutexvar_epi32(last, v);
        }
        c += 16;
    }
}
