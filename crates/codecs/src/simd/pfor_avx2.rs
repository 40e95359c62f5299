//! AVX2 kernels of PFOR / PFOR-DELTA: unpacking of horizontally packed codes (crate::bits
//! layout), eight per step, an in-place prefix sum, and the codes' moments for the block sum.
//! Scalar twins: `pfor::unpack_add_scalar`, `pfor::prefix_sum_scalar`,
//! `pfor::sum::moments_scalar`.
//!
//! Eight codes of `b` bits take exactly `b` bytes. Codes 0..3 are read from a 16-byte load at
//! the group's first byte, codes 4..7 from one at byte `4b / 8`; `vpshufb` moves the four bytes
//! that hold each code into its lane, `vpsrlvd` drops the code's bit offset (`(j*b) % 8 <= 7`,
//! so `b <= 25` keeps a code inside those 32 bits), and a mask keeps `b` bits:
//!
//! ```text
//! bytes  [g*b ...................... g*b + 16)      [g*b + 4b/8 ......... + 16)
//!          | pshufb: bytes of c0..c3 |                 | pshufb: bytes of c4..c7 |
//! lanes  [ c0 | c1 | c2 | c3 ]                       [ c4 | c5 | c6 | c7 ]        >> shift, & mask
//! ```

use core::arch::x86_64::*;

/// Widest code these kernels unpack.
pub const MAX_B: u32 = 25;

struct Tables {
    shuf: [[u8; 32]; 26],
    shift: [[u32; 8]; 26],
}

const fn build() -> Tables {
    let mut shuf = [[0u8; 32]; 26];
    let mut shift = [[0u32; 8]; 26];
    let mut b = 1;
    while b <= 25 {
        let mut h = 0;
        while h < 2 {
            let half_byte = 4 * h * b / 8;
            let mut j = 0;
            while j < 4 {
                let bit = (4 * h + j) * b;
                shift[b][4 * h + j] = (bit % 8) as u32;
                let mut t = 0;
                while t < 4 {
                    shuf[b][16 * h + 4 * j + t] = (bit / 8 - half_byte + t) as u8;
                    t += 1;
                }
                j += 1;
            }
            h += 1;
        }
        b += 1;
    }
    Tables { shuf, shift }
}

static T: Tables = build();

/// Codes `8g..8g+8` from the group starting at `p`.
///
/// # Safety
/// AVX2; `p .. p + 4b/8 + 16` is readable.
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn group(
    p: *const u8,
    half: usize,
    shuf: __m256i,
    shift: __m256i,
    m: __m256i,
    add: __m256i,
) -> __m256i {
    // SAFETY: the caller guarantees both 16-byte loads are in bounds (unaligned loads).
    let (lo, hi) = unsafe {
        (
            _mm_loadu_si128(p as *const __m128i),
            _mm_loadu_si128(p.add(half) as *const __m128i),
        )
    };
    let v = _mm256_shuffle_epi8(_mm256_set_m128i(hi, lo), shuf);
    let v = _mm256_and_si256(_mm256_srlv_epi32(v, shift), m);
    _mm256_add_epi32(v, add)
}

/// Unpacks `out.len()` codes of width `b` from `data` and adds `add` (wrapping). Returns the
/// number of values written: `out.len()`, or 0 (nothing written) when `b` is 0 or above
/// [`MAX_B`] or `data` is shorter than `ceil(out.len() * b / 8)` bytes.
///
/// # Safety
/// The CPU must support AVX2. Every access is bounded by the slices.
#[target_feature(enable = "avx2")]
pub unsafe fn unpack_add(data: &[u8], b: u32, add: u32, out: &mut [u32]) -> usize {
    if b == 0 || b > MAX_B || (out.len() * b as usize).div_ceil(8) > data.len() {
        return 0;
    }
    let bu = b as usize;
    let half = 4 * bu / 8;
    // SAFETY: the tables are 32 bytes / 8 u32 per width; unaligned loads.
    let (shuf, shift) = unsafe {
        (
            _mm256_loadu_si256(T.shuf[bu].as_ptr() as *const __m256i),
            _mm256_loadu_si256(T.shift[bu].as_ptr() as *const __m256i),
        )
    };
    let m = _mm256_set1_epi32(crate::bits::mask(b) as i32);
    let a = _mm256_set1_epi32(add as i32);
    // Group g reads data[g*b .. g*b + half + 16].
    let by_data = if data.len() >= half + 16 {
        (data.len() - half - 16) / bu + 1
    } else {
        0
    };
    let groups = (out.len() / 8).min(by_data);
    for g in 0..groups {
        // SAFETY: g < by_data bounds the loads (see above); 8g + 8 <= out.len() bounds the store.
        unsafe {
            let v = group(data.as_ptr().add(g * bu), half, shuf, shift, m, a);
            _mm256_storeu_si256(out.as_mut_ptr().add(8 * g) as *mut __m256i, v);
        }
    }
    // Tail: the remaining codes' bytes (fewer than half + 16 + b <= 53, or under 8 codes) go
    // through a zero-padded copy so that the loads stay inside it.
    let done = 8 * groups;
    let r = out.len() - done;
    if r == 0 {
        return done;
    }
    let from = groups * bu;
    let rest = &data[from..from + (r * bu).div_ceil(8)];
    let mut pad = [0u8; 128];
    pad[..rest.len()].copy_from_slice(rest);
    let tail = &mut out[done..];
    for k in 0..r.div_ceil(8) {
        // SAFETY: k*b < rest.len() <= 53 (see above), so k*b + half + 16 <= 53 + 12 + 16 < 128.
        let v = unsafe { group(pad.as_ptr().add(k * bu), half, shuf, shift, m, a) };
        let mut tmp = [0u32; 8];
        // SAFETY: `tmp` holds 8 u32.
        unsafe { _mm256_storeu_si256(tmp.as_mut_ptr() as *mut __m256i, v) };
        let take = (r - 8 * k).min(8);
        tail[8 * k..8 * k + take].copy_from_slice(&tmp[..take]);
    }
    out.len()
}

/// Widest code [`moments`] takes: 16 groups of codes below `2^24` keep every lane's running
/// sums below `2^32` (see there).
pub const MOMENTS_MAX_B: u32 = 24;

/// The moments of the first `n` codes of width `b` at the start of `data`: `(S, J)` with
/// `S = sum(c[i])` and `J = sum(i * c[i])`, exact. `data` may run on past the codes (the
/// exceptions follow them in a frame); bits past code `n - 1` are ignored. `None` (nothing
/// read) when `b` is 0 or above [`MOMENTS_MAX_B`], `n > 128`, or `data` is shorter than
/// `ceil(n * b / 8)` bytes.
///
/// No multiplication per group: lane sums `A += V_g` and `T += A` give, after `G` groups,
/// `T = sum((G - g) * V_g)`, so `sum(g * V_g) = G*A - T` per lane, and
/// `J = sum over lanes l of 8 * (G*A_l - T_l) + l * A_l`. With `G <= 16` and codes below
/// `2^24`, `T_l <= 136 * (2^24 - 1) < 2^32`; `G*A - T` is at most `120 * (2^24 - 1)`, so
/// its wrapping 32-bit value is exact.
///
/// # Safety
/// The CPU must support AVX2. Every access is bounded by `data` (checked here).
#[target_feature(enable = "avx2")]
pub unsafe fn moments(data: &[u8], b: u32, n: usize) -> Option<(u64, u64)> {
    if b == 0 || b > MOMENTS_MAX_B || n > 128 || (n * b as usize).div_ceil(8) > data.len() {
        return None;
    }
    let bu = b as usize;
    let half = 4 * bu / 8;
    // SAFETY: the tables are 32 bytes / 8 u32 per width; unaligned loads.
    let (shuf, shift) = unsafe {
        (
            _mm256_loadu_si256(T.shuf[bu].as_ptr() as *const __m256i),
            _mm256_loadu_si256(T.shift[bu].as_ptr() as *const __m256i),
        )
    };
    let m = _mm256_set1_epi32(crate::bits::mask(b) as i32);
    let zero = _mm256_setzero_si256();
    let (mut a, mut t) = (zero, zero);
    // Whole groups whose two 16-byte loads (data[g*b .. g*b + half + 16]) lie inside `data`.
    let by_data = if data.len() >= half + 16 {
        (data.len() - half - 16) / bu + 1
    } else {
        0
    };
    let full = n / 8;
    let direct = full.min(by_data);
    for g in 0..direct {
        // SAFETY: g < by_data bounds both loads (see above).
        let v = unsafe { group(data.as_ptr().add(g * bu), half, shuf, shift, m, zero) };
        a = _mm256_add_epi32(a, v);
        t = _mm256_add_epi32(t, a);
    }
    let groups = n.div_ceil(8);
    if direct < groups {
        // The rest through a zero-padded copy of a 64-byte window (the whole of a shorter
        // `data`): when the loads ran out, the codes left end fewer than half + 16 + b <= 52
        // bytes before the data's end; a partial group alone takes fewer than b bytes.
        let from = direct * bu;
        let ws = if data.len() >= 64 {
            from.min(data.len() - 64)
        } else {
            0
        };
        let mut pad = [0u8; 128];
        copy_window(&mut pad, data.get(ws..).unwrap_or_default());
        let off = from - ws;
        // Every remaining group's loads inside `pad` (always so; checked once).
        if off + (groups - 1 - direct) * bu + half + 16 > pad.len() {
            return None;
        }
        for g in direct..full {
            // SAFETY: off + (g - direct)*b + half + 16 <= pad.len() (checked above).
            let v = unsafe {
                group(
                    pad.as_ptr().add(off + (g - direct) * bu),
                    half,
                    shuf,
                    shift,
                    m,
                    zero,
                )
            };
            a = _mm256_add_epi32(a, v);
            t = _mm256_add_epi32(t, a);
        }
        if full < groups {
            // SAFETY: as above, g = full < groups.
            let v = unsafe {
                group(
                    pad.as_ptr().add(off + (full - direct) * bu),
                    half,
                    shuf,
                    shift,
                    m,
                    zero,
                )
            };
            // Lanes past code n - 1 (other codes' padding bits, exception bytes) cleared.
            let lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
            let live = _mm256_cmpgt_epi32(_mm256_set1_epi32((n - 8 * full) as i32), lane);
            a = _mm256_add_epi32(a, _mm256_and_si256(v, live));
            t = _mm256_add_epi32(t, a);
        }
    }
    // Per lane l: x = G*A - T = sum(g * V_g) (exact in 32 bits, see above), y = l * A
    // (below 7 * 2^28); J = sum(8x + y) and S = sum(A) in 64-bit lanes.
    let x = _mm256_sub_epi32(_mm256_mullo_epi32(_mm256_set1_epi32(groups as i32), a), t);
    let y = _mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), a);
    let wide = |v: __m256i| {
        (
            _mm256_cvtepu32_epi64(_mm256_castsi256_si128(v)),
            _mm256_cvtepu32_epi64(_mm256_extracti128_si256::<1>(v)),
        )
    };
    let ((x0, x1), (y0, y1), (a0, a1)) = (wide(x), wide(y), wide(a));
    let jv = _mm256_add_epi64(
        _mm256_slli_epi64::<3>(_mm256_add_epi64(x0, x1)),
        _mm256_add_epi64(y0, y1),
    );
    Some((hsum_u64(_mm256_add_epi64(a0, a1)), hsum_u64(jv)))
}

/// Widest code [`moments_narrow`] takes.
pub const NARROW_MAX_B: u32 = 8;

/// Shuffle and shift tables of [`moments_narrow`]: for width `b`, 16-bit lane `l` (code `l`
/// of a group of 16, at bit `l*b` of the group's `2b` bytes) gets the code's first byte low
/// and its second byte high (`0x80`, zero, when the code ends in the first byte), and the
/// multiplier `2^(8 - (l*b) % 8)` that moves the code's lowest bit to bit 8.
struct Narrow {
    shuf: [[u8; 32]; 9],
    mul: [[u16; 16]; 9],
}

const fn build_narrow() -> Narrow {
    let mut shuf = [[0u8; 32]; 9];
    let mut mul = [[0u16; 16]; 9];
    let mut b = 1;
    while b <= 8 {
        let mut l = 0;
        while l < 16 {
            let bit = l * b;
            let (byte, off) = (bit / 8, bit % 8);
            shuf[b][2 * l] = byte as u8;
            shuf[b][2 * l + 1] = if off + b > 8 { (byte + 1) as u8 } else { 0x80 };
            mul[b][l] = 1 << (8 - off);
            l += 1;
        }
        b += 1;
    }
    Narrow { shuf, mul }
}

static NARROW: Narrow = build_narrow();

/// [`moments`] for `1 <= b <= 8`: sixteen codes per step in 16-bit lanes. A group of 16 codes
/// takes exactly `2b <= 16` bytes, so one 16-byte load (broadcast to both halves) holds it;
/// `vpshufb` moves each code's one or two bytes into its lane, `vpmullw` by `2^(8 - offset)`
/// and a shift right by 8 drop the bits below it, a mask those above. The codes are first
/// copied into a zeroed buffer (at most 128 bytes), so every load is inside it and codes past
/// `n` are zero. Lane sums as in [`moments`], in 16 bits: after `G <= 8` groups of codes below
/// `2^8`, `T <= 36 * 255`.
///
/// # Safety
/// The CPU must support AVX2. Every access is bounded by `data` (checked here).
#[target_feature(enable = "avx2")]
pub unsafe fn moments_narrow(data: &[u8], b: u32, n: usize) -> Option<(u64, u64)> {
    let len = (n * b as usize).div_ceil(8);
    if b == 0 || b > NARROW_MAX_B || n > 128 || len > data.len() {
        return None;
    }
    let bu = b as usize;
    // Codes at 0..len <= 128; group g loads [2bg, 2bg + 16) with g < 8: inside 144 bytes.
    let mut buf = [0u8; 144];
    copy_prefix(&mut buf, data.get(..len).unwrap_or_default());
    let tail = n * bu % 8;
    if tail != 0 {
        // Bits after code n - 1 in its last byte (zero in a valid frame) cleared.
        if let Some(last) = buf.get_mut(len.wrapping_sub(1)) {
            *last &= (1u8 << tail) - 1;
        }
    }
    // SAFETY: the tables are 32 bytes / 16 u16 per width; unaligned loads.
    let (shuf, mul) = unsafe {
        (
            _mm256_loadu_si256(NARROW.shuf[bu].as_ptr() as *const __m256i),
            _mm256_loadu_si256(NARROW.mul[bu].as_ptr() as *const __m256i),
        )
    };
    let m = _mm256_set1_epi16(crate::bits::mask(b) as i16);
    let zero = _mm256_setzero_si256();
    let (mut a, mut t) = (zero, zero);
    let groups = n.div_ceil(16);
    for g in 0..groups {
        // SAFETY: g < 8, so 2*b*g + 16 <= 2*8*7 + 16 = 128 <= buf.len().
        let x = unsafe { _mm_loadu_si128(buf.as_ptr().add(2 * bu * g) as *const __m128i) };
        let v = _mm256_shuffle_epi8(_mm256_broadcastsi128_si256(x), shuf);
        let v = _mm256_and_si256(_mm256_srli_epi16::<8>(_mm256_mullo_epi16(v, mul)), m);
        a = _mm256_add_epi16(a, v);
        t = _mm256_add_epi16(t, a);
    }
    // Per lane l: x = G*A - T = sum(g * V_g) <= 28 * 255; J = sum(16x + l*A), S = sum(A).
    let x = _mm256_sub_epi16(_mm256_mullo_epi16(_mm256_set1_epi16(groups as i16), a), t);
    let lane = _mm256_setr_epi16(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    let j = _mm256_add_epi32(
        _mm256_madd_epi16(x, _mm256_set1_epi16(16)),
        _mm256_madd_epi16(a, lane),
    );
    let s = _mm256_madd_epi16(a, _mm256_set1_epi16(1));
    Some((hsum_u32(s), hsum_u32(j)))
}

/// The sum of the eight 32-bit lanes of `v` (each below `2^31`), widened.
#[inline]
#[target_feature(enable = "avx2")]
fn hsum_u32(v: __m256i) -> u64 {
    let lo = _mm256_cvtepu32_epi64(_mm256_castsi256_si128(v));
    let hi = _mm256_cvtepu32_epi64(_mm256_extracti128_si256::<1>(v));
    hsum_u64(_mm256_add_epi64(lo, hi))
}

/// Copies `src` (at most 128 bytes) to the start of `buf` in fixed-size 16-byte pieces (the
/// last one overlapping; byte by byte under 16 bytes), no `memcpy` call.
#[inline(always)]
fn copy_prefix(buf: &mut [u8; 144], src: &[u8]) {
    let take = src.len().min(128);
    if take >= 16 {
        for c in 0..take / 16 {
            buf[16 * c..16 * c + 16].copy_from_slice(&src[16 * c..16 * c + 16]);
        }
        buf[take - 16..take].copy_from_slice(&src[take - 16..take]);
    } else {
        for (p, &r) in buf.iter_mut().zip(&src[..take]) {
            *p = r;
        }
    }
}

/// The sum of the four 64-bit lanes of `v`.
#[inline]
#[target_feature(enable = "avx2")]
fn hsum_u64(v: __m256i) -> u64 {
    let s = _mm_add_epi64(_mm256_castsi256_si128(v), _mm256_extracti128_si256::<1>(v));
    let s = _mm_add_epi64(s, _mm_unpackhi_epi64(s, s));
    _mm_cvtsi128_si64(s) as u64
}

/// Copies the first `min(src.len(), 64)` bytes of `src` to the start of `pad` in fixed-size
/// 16-byte pieces (the last one overlapping; byte by byte under 16 bytes), no `memcpy` call.
#[inline(always)]
fn copy_window(pad: &mut [u8; 128], src: &[u8]) {
    let take = src.len().min(64);
    if take >= 16 {
        for c in 0..take / 16 {
            pad[16 * c..16 * c + 16].copy_from_slice(&src[16 * c..16 * c + 16]);
        }
        pad[take - 16..take].copy_from_slice(&src[take - 16..take]);
    } else {
        for (p, &r) in pad.iter_mut().zip(&src[..take]) {
            *p = r;
        }
    }
}

/// In place: `out[i] = out[i-1] + step + out[i]` for `i >= 1` (wrapping).
///
/// # Safety
/// The CPU must support AVX2.
#[target_feature(enable = "avx2")]
pub unsafe fn prefix_sum(step: u32, out: &mut [u32]) {
    if out.len() < 2 {
        return;
    }
    let s = _mm256_set1_epi32(step as i32);
    let mut carry = _mm256_set1_epi32(out[0] as i32);
    let last = _mm256_set1_epi32(7);
    let vals = &mut out[1..];
    let chunks = vals.len() / 8;
    for c in 0..chunks {
        // SAFETY: 8c + 8 <= vals.len(); unaligned load and store.
        unsafe {
            let p = vals.as_mut_ptr().add(8 * c) as *mut __m256i;
            let mut v = _mm256_add_epi32(_mm256_loadu_si256(p), s);
            v = _mm256_add_epi32(v, _mm256_slli_si256::<4>(v));
            v = _mm256_add_epi32(v, _mm256_slli_si256::<8>(v));
            let t = _mm256_shuffle_epi32::<0xFF>(v);
            v = _mm256_add_epi32(v, _mm256_permute2x128_si256::<0x08>(t, t));
            v = _mm256_add_epi32(v, carry);
            _mm256_storeu_si256(p, v);
            carry = _mm256_permutevar8x32_epi32(v, last);
        }
    }
    let mut acc = _mm256_cvtsi256_si32(carry) as u32;
    for v in vals[8 * chunks..].iter_mut() {
        acc = acc.wrapping_add(step).wrapping_add(*v);
        *v = acc;
    }
}

/// `pfor::min_range_body` with AVX2 enabled: the minimum of differences runs eight lanes at a
/// time (`vpminud`).
///
/// # Safety
/// The CPU must support AVX2. (`1 <= len <= s.len()`, else the body panics.)
#[target_feature(enable = "avx2")]
pub unsafe fn min_range(s: &[u32], len: usize) -> u32 {
    crate::pfor::min_range_body(s, len)
}

/// `pfor::write_frame_body` (the b choice and the frame, unless it would take `limit` bytes or
/// more) with AVX2 enabled, so that its loops over the values vectorise with unsigned minimum /
/// maximum.
///
/// # Safety
/// The CPU must support AVX2.
#[target_feature(enable = "avx2,bmi1,bmi2,popcnt")]
pub unsafe fn write_frame(
    v: &[u32],
    sorted: bool,
    out: &mut [u8],
    limit: usize,
) -> crate::Result<Option<(u32, usize)>> {
    crate::pfor::write_frame_body(v, sorted, out, limit)
}
