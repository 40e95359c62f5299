//! The 4-lane vertical bit layout of simdcomp and the `bitpacking` crate's `BitPacker4x`, shared
//! by BP128 (deltas) and SIMD FOR (offsets from the start key), plus the block logic both codecs
//! have in common.
//!
//! A *frame* is 128 values of `b` bits in `16 * b` bytes. Value `i` lives in lane `l = i % 4` at
//! position `j = i / 4`; each lane packs its 32 values horizontally (LSB first) into `b` 32-bit
//! words, and word `k` of lane `l` is stored at byte `16k + 4l` (little-endian):
//!
//! ```text
//! bytes:   0..4        4..8        8..12       12..16      16..20  ...  16(b-1)..16b
//!          lane0 w0    lane1 w0    lane2 w0    lane3 w0    lane0 w1     lane3 w(b-1)
//! lane 0 words: v0 | v4<<b | v8<<2b | ...   (v4j at bits j*b.. of the lane's 32b-bit stream)
//! lane 1 words: v1 | v5<<b | ...
//! ```
//!
//! So bytes `16k..16k+16` are one SIMD row and value vector `j` (values `4j..4j+4`) is rows
//! `j*b/32` and `j*b/32 + 1` shifted: unpacking is shifts, ORs and one mask per 4 values.
//! Width 0 stores nothing; width 32 is the 128 values in order.
//!
//! Blocks (both codecs): `count <= 129` keys; the payload is empty for `count <= 1` (then
//! `bits = 0`), else exactly one frame of `16 * bits` bytes holding the `n = count - 1` values for
//! `keys[1..]`, the frame's unused slots `n..128` zero (a zero delta / offset), and `bits` the
//! smallest width that holds every value.

use crate::bits::{mask, width};
use crate::isa::Isa;
use crate::{AppendOutcome, CodecError, Descriptor, Fold, InsertOutcome, RemoveOutcome, Result};

/// Values per frame.
pub const FRAME: usize = 128;
/// Most keys of a BP128 / SIMD FOR block: the start key plus one frame.
pub const MAX_KEYS: usize = FRAME + 1;

/// Bytes of a frame of width `b`.
#[inline]
pub fn frame_len(b: u32) -> usize {
    16 * b as usize
}

#[inline]
fn word(data: &[u8], k: usize, lane: usize) -> u32 {
    let at = 16 * k + 4 * lane;
    u32::from_le_bytes(data[at..at + 4].try_into().expect("4 bytes"))
}

#[inline]
fn put_word(data: &mut [u8], k: usize, lane: usize, w: u32) {
    let at = 16 * k + 4 * lane;
    data[at..at + 4].copy_from_slice(&w.to_le_bytes());
}

/// Value `i` (`< 128`) of a frame of width `b` (`<= 32`); `None` if `data` is shorter than the
/// frame or the arguments are out of range. O(1) and branch-free on the value's position.
#[inline]
pub fn get(data: &[u8], b: u32, i: usize) -> Option<u32> {
    if i >= FRAME || b > 32 || data.len() < frame_len(b) {
        return None;
    }
    if b == 0 {
        return Some(0);
    }
    let lane = i % 4;
    let bit = (i / 4) * b as usize;
    let (k, s) = (bit / 32, bit % 32);
    // Words k and k+1 of the lane as one 64-bit window. When the value does not straddle, the
    // second word is only needed as filler: row k+1 may not exist (k = b-1), so re-read row k;
    // its bits land at or above bit b of the result and are masked off.
    let k1 = (k + 1).min(b as usize - 1);
    let w = word(data, k, lane) as u64 | (word(data, k1, lane) as u64) << 32;
    Some((w >> s) as u32 & mask(b))
}

/// Overwrites value `i` of a frame of width `b` with `v & mask(b)`. Panics when out of range
/// (callers check lengths first).
pub fn set(data: &mut [u8], b: u32, i: usize, v: u32) {
    assert!(i < FRAME && b <= 32 && data.len() >= frame_len(b));
    if b == 0 {
        return;
    }
    let v = v & mask(b);
    let lane = i % 4;
    let bit = (i / 4) * b as usize;
    let (k, s) = (bit / 32, (bit % 32) as u32);
    let lo_mask = mask(b) << s;
    put_word(data, k, lane, (word(data, k, lane) & !lo_mask) | (v << s));
    if s + b > 32 {
        let hi_bits = s + b - 32;
        let w = word(data, k + 1, lane);
        put_word(data, k + 1, lane, (w & !mask(hi_bits)) | (v >> (32 - s)));
    }
}

/// Scalar reference: packs 128 values (masked to `b` bits) into `out[..16 * b]`.
pub fn pack_scalar(values: &[u32; FRAME], b: u32, out: &mut [u8]) {
    assert!(b <= 32 && out.len() >= frame_len(b));
    if b == 0 {
        return;
    }
    for lane in 0..4 {
        let mut acc: u64 = 0;
        let mut nbits = 0u32;
        let mut k = 0;
        for j in 0..32 {
            acc |= ((values[4 * j + lane] & mask(b)) as u64) << nbits;
            nbits += b;
            if nbits >= 32 {
                put_word(out, k, lane, acc as u32);
                k += 1;
                acc >>= 32;
                nbits -= 32;
            }
        }
    }
}

/// Scalar reference: unpacks the 128 values of a frame. `None` if `data` is too short.
pub fn unpack_scalar(data: &[u8], b: u32, out: &mut [u32; FRAME]) -> Option<()> {
    if b > 32 || data.len() < frame_len(b) {
        return None;
    }
    if b == 0 {
        out.fill(0);
        return Some(());
    }
    for lane in 0..4 {
        let mut acc: u64 = 0;
        let mut nbits = 0u32;
        let mut k = 0;
        for j in 0..32 {
            if nbits < b {
                acc |= (word(data, k, lane) as u64) << nbits;
                k += 1;
                nbits += 32;
            }
            out[4 * j + lane] = (acc as u32) & mask(b);
            acc >>= b;
            nbits -= b;
        }
    }
    Some(())
}

/// The level actually used for `isa`: itself when this CPU supports it, else scalar.
#[inline]
pub fn effective(isa: Isa) -> Isa {
    if isa == Isa::Scalar || isa.is_supported() {
        isa
    } else {
        Isa::Scalar
    }
}

/// `isa` if this CPU runs it (cheap when `isa <= Isa::detect()`), else scalar.
#[inline]
pub(crate) fn usable(isa: Isa) -> Isa {
    if isa <= Isa::detect() {
        isa
    } else {
        effective(isa)
    }
}

/// The kernel of `$table` for width `$b` on level `$isa` (`None` for scalar).
#[cfg(target_arch = "x86_64")]
macro_rules! pick {
    ($isa:expr, $table:ident, $b:expr) => {
        match $isa {
            Isa::Scalar => None,
            Isa::Sse41 => Some(crate::simd::vertical_sse41::$table[$b as usize]),
            // 512-bit kernels were measured no faster here; decode has an AVX-512 VL build of
            // the 256-bit kernels (the four-argument form below, see simd::vertical_avx2).
            Isa::Avx2 | Isa::Avx512 => Some(crate::simd::vertical_avx2::$table[$b as usize]),
        }
    };
    // A table with its own AVX-512 build.
    ($isa:expr, $table:ident, $table512:ident, $b:expr) => {
        match $isa {
            Isa::Avx512 => Some(crate::simd::vertical_avx2::$table512[$b as usize]),
            _ => pick!($isa, $table, $b),
        }
    };
}

/// The unpack kernel of level `isa` for width `b` (`b <= 32`): prefix-summed deltas when
/// `delta`, else offsets from the base; `None` for scalar.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn unpack_kernel(isa: Isa, delta: bool, b: u32) -> Option<crate::simd::vertical_sse41::UnpackFn> {
    if delta {
        pick!(isa, UNPACK_D1, UNPACK_D1_V2, b)
    } else {
        pick!(isa, UNPACK_FOR, UNPACK_FOR_V2, b)
    }
}

/// Decodes a whole frame into `out`: `out[i] = base + v[0] + .. + v[i]` when `delta`, else
/// `base + v[i]` (wrapping). Levels this CPU lacks fall back. `None` if `data` is
/// shorter than the frame or `b > 32`.
#[inline(always)]
pub fn unpack(
    isa: Isa,
    data: &[u8],
    b: u32,
    base: u32,
    delta: bool,
    out: &mut [u32; FRAME],
) -> Option<()> {
    let isa = usable(isa);
    if b > 32 || data.len() < frame_len(b) {
        return None;
    }
    #[cfg(target_arch = "x86_64")]
    {
        if let Some(f) = unpack_kernel(isa, delta, b) {
            // SAFETY: the kernel reads 16*b bytes (checked above) and writes 128 u32 (`out`'s
            // type); `isa` is supported by this CPU (`usable`).
            unsafe { f(data.as_ptr(), base, out.as_mut_ptr()) };
            return Some(());
        }
    }
    let _ = isa;
    unpack_scalar_keys(data, b, base, delta, out)
}

/// Scalar [`unpack`] (kept out of line so the SIMD dispatch stays small).
#[inline(never)]
fn unpack_scalar_keys(
    data: &[u8],
    b: u32,
    base: u32,
    delta: bool,
    out: &mut [u32; FRAME],
) -> Option<()> {
    unpack_scalar(data, b, out)?;
    let mut acc = base;
    for v in out.iter_mut() {
        acc = if delta {
            acc.wrapping_add(*v)
        } else {
            base.wrapping_add(*v)
        };
        *v = acc;
    }
    Some(())
}

/// Encodes 128 keys into `out[..16 * b]` as deltas (from `base`, then from each predecessor) or
/// offsets `key - base`; every value must fit in `b` bits. Panics if
/// `out` is short or `b > 32` (callers check first).
#[inline]
pub fn pack(isa: Isa, keys: &[u32; FRAME], base: u32, delta: bool, b: u32, out: &mut [u8]) {
    let isa = usable(isa);
    assert!(b <= 32 && out.len() >= frame_len(b));
    #[cfg(target_arch = "x86_64")]
    {
        let f = if delta {
            pick!(isa, PACK_D1, b)
        } else {
            pick!(isa, PACK_FOR, b)
        };
        if let Some(f) = f {
            // SAFETY: reads 128 u32 from `keys`, writes 16*b bytes (asserted above); `isa` is
            // supported (`usable`).
            unsafe { f(keys.as_ptr(), base, out.as_mut_ptr()) };
            return;
        }
    }
    let _ = isa;
    let mut vals = [0u32; FRAME];
    let mut prev = base;
    for (v, &k) in vals.iter_mut().zip(keys) {
        *v = k.wrapping_sub(prev);
        if delta {
            prev = k;
        }
    }
    pack_scalar(&vals, b, out);
}

/// Wrapping sum of the first `n` values of a frame (BP128 select). `None` if out of range.
#[inline]
pub fn sum_prefix(isa: Isa, data: &[u8], b: u32, n: usize) -> Option<u32> {
    let isa = usable(isa);
    if b > 32 || n > FRAME || data.len() < frame_len(b) {
        return None;
    }
    #[cfg(target_arch = "x86_64")]
    if let Some(f) = pick!(isa, SUM, b) {
        // SAFETY: reads 16*b bytes (checked); `isa` supported (`usable`).
        return Some(unsafe { f(data.as_ptr(), n as u32) });
    }
    let _ = isa;
    let mut s = 0u32;
    for i in 0..n {
        s = s.wrapping_add(get(data, b, i)?);
    }
    Some(s)
}

/// For a delta frame from `base`: the first `i < n` whose key `base + v[0] + .. + v[i]` is
/// `>= key`, with that key, or `(n, None)`. Sequential, in registers. `key >= 1`.
#[inline]
pub fn seek_delta(
    isa: Isa,
    data: &[u8],
    b: u32,
    base: u32,
    n: usize,
    key: u32,
) -> Option<(usize, Option<u32>)> {
    let isa = usable(isa);
    if b > 32 || n > FRAME || data.len() < frame_len(b) || key == 0 {
        return None;
    }
    #[cfg(target_arch = "x86_64")]
    if let Some(f) = pick!(isa, SEEK_D1, b) {
        // SAFETY: reads 16*b bytes (checked); `isa` supported (`usable`).
        let (i, v) = unsafe { f(data.as_ptr(), base, n as u32, key) };
        let i = (i as usize).min(n);
        return Some((i, (i < n).then_some(v)));
    }
    let _ = isa;
    let mut acc = base;
    for i in 0..n {
        acc = acc.wrapping_add(get(data, b, i)?);
        if acc >= key {
            return Some((i, Some(acc)));
        }
    }
    Some((n, None))
}

/// Count of the first `n` values of a frame that are `< target`: for sorted values (SIMD FOR
/// offsets) the position of the first one `>= target`. AVX2 scans the frame in registers; the
/// scalar twin binary-searches the packed bits. `None` if out of range.
#[inline]
pub fn rank(isa: Isa, data: &[u8], b: u32, n: usize, target: u32) -> Option<usize> {
    let isa = usable(isa);
    if b > 32 || n > FRAME || data.len() < frame_len(b) {
        return None;
    }
    #[cfg(target_arch = "x86_64")]
    if isa >= Isa::Avx2 {
        let f = crate::simd::vertical_avx2::RANK_FOR[b as usize];
        // SAFETY: reads 16*b bytes (checked); AVX2 supported (`usable`).
        return Some(unsafe { f(data.as_ptr(), n as u32, target) } as usize);
    }
    let _ = isa;
    rank_scalar(data, b, n, target)
}

/// Where [`rank_near`] puts its window for a guessed position: `(j, valid)`, the window being
/// values `4j..4j + 8` (`j <= 30`, `4j < n`) and bit `t` of `valid` set when `4j + t < n`. The
/// rank is expected near `guess - 1` (see `SimdFor::lower_bound`): it goes to the middle.
#[inline(always)]
pub(crate) fn near_window(n: usize, guess: usize) -> (usize, u32) {
    let j = (guess.saturating_sub(3) / 4)
        .min(30)
        .min(n.saturating_sub(1) / 4);
    let w = (n.saturating_sub(4 * j)).min(8);
    (j, (1u32 << w) - 1)
}

/// The rank of `target` among the first `n` sorted values of a frame (SIMD FOR offsets), read
/// from the eight values `4j..4j + 8` around `guess` (an interpolated position: `lower_bound`
/// computes it from the block's first and last key) with one compare: `(rank, value at rank)`
/// (the value is 0 when the rank is `n`). `None` when those eight do not bracket the rank (the
/// caller then runs [`rank`]) or when out of range. Touches two or four 16-byte rows.
#[inline]
pub fn rank_near(
    isa: Isa,
    data: &[u8],
    b: u32,
    n: usize,
    target: u32,
    guess: usize,
) -> Option<(usize, u32)> {
    let isa = usable(isa);
    if b == 0 || b > 32 || n == 0 || n > FRAME || data.len() < frame_len(b) {
        return None;
    }
    let (j, valid) = near_window(n, guess);
    #[cfg(target_arch = "x86_64")]
    if isa >= Isa::Avx2 {
        // SAFETY: AVX2 supported (`usable`); 1 <= b <= 32, j <= 30 and the frame's 16*b bytes
        // are readable (checked above).
        let (c, v) = unsafe {
            crate::simd::vertical_avx2::rank_window(data.as_ptr(), b, j as u32, valid, target)
        };
        return near_result(n, j, valid, c, v);
    }
    let _ = isa;
    let (c, v) = rank_window_scalar(data, b, j, valid, target)?;
    near_result(n, j, valid, c, v)
}

/// [`rank_near`]'s answer from its window's count `c` of values below the target and the value
/// `v` after them: `None` when all valid ones are below (and more values follow) or none are
/// (and some precede), i.e. when the rank lies outside the window.
#[inline(always)]
pub(crate) fn near_result(n: usize, j: usize, valid: u32, c: u32, v: u32) -> Option<(usize, u32)> {
    let (c, w) = (c as usize, valid.count_ones() as usize);
    if (c == 0 && j > 0) || (c == w && 4 * j + w < n) {
        return None;
    }
    Some((4 * j + c, if c < w { v } else { 0 }))
}

/// Scalar [`rank_near`] window: how many of the valid values `4j..4j + 8` (bit t of `valid`) are
/// below `target`, and the value after them (0 when all are).
pub fn rank_window_scalar(
    data: &[u8],
    b: u32,
    j: usize,
    valid: u32,
    target: u32,
) -> Option<(u32, u32)> {
    let mut vals = [0u32; 8];
    let mut below = 0u32;
    for (t, v) in vals.iter_mut().enumerate() {
        *v = get(data, b, 4 * j + t)?;
        below |= ((*v < target) as u32) << t;
    }
    let c = (below & valid).count_ones();
    Some((c, vals.get(c as usize).copied().unwrap_or(0)))
}

/// Scalar [`rank`] for sorted values: branchless binary search on the packed bits.
pub fn rank_scalar(data: &[u8], b: u32, n: usize, target: u32) -> Option<usize> {
    if n == 0 {
        return Some(0);
    }
    if b > 32 || n > FRAME || data.len() < frame_len(b) {
        return None;
    }
    // Every probe is < n <= 128 and the frame is long enough: `get` never fails here.
    let off = |i: usize| get(data, b, i).unwrap_or(u32::MAX);
    let (mut lo, mut len) = (0usize, n);
    while len > 1 {
        let half = len / 2;
        if off(lo + half) < target {
            lo += half;
        }
        len -= half;
    }
    Some(lo + (off(lo) < target) as usize)
}

// ---------------------------------------------------------------------------------------------
// Block logic shared by BP128 (`delta = true`) and SIMD FOR (`delta = false`).

fn corrupt(what: &'static str) -> CodecError {
    CodecError::Corrupt { what }
}

fn invalid(what: &'static str) -> CodecError {
    CodecError::InvalidInput { what }
}

/// Cheap descriptor checks; returns `(b, n)` with `n = count - 1` values in the frame.
#[inline(always)]
pub(crate) fn check(d: &Descriptor, payload: &[u8]) -> Result<(u32, usize)> {
    if !crate::check_head(d, MAX_KEYS, "count exceeds 129")? {
        return Ok((0, 0));
    }
    let count = d.count as usize;
    let b = d.bits as u32;
    if b == 0 || b > 32 {
        return Err(corrupt("bit width not in 1..=32"));
    }
    if d.size as usize != frame_len(b) {
        return Err(corrupt("size is not 16 * bits"));
    }
    if d.size as usize > payload.len() {
        return Err(corrupt("size exceeds payload"));
    }
    Ok((b, count - 1))
}

/// Decodes the frame's keys (`keys[1..]`, padded) into `out`.
#[inline]
fn frame_keys(
    isa: Isa,
    d: &Descriptor,
    payload: &[u8],
    b: u32,
    delta: bool,
) -> Result<[u32; FRAME]> {
    let mut out = [0u32; FRAME];
    unpack(isa, payload, b, d.start, delta, &mut out).ok_or(corrupt("frame"))?;
    Ok(out)
}

pub(crate) fn encode(isa: Isa, delta: bool, keys: &[u32], out: &mut [u8]) -> Result<Descriptor> {
    if keys.len() > MAX_KEYS {
        return Err(invalid("more than 129 keys"));
    }
    let (Some(&start), Some(&last)) = (keys.first(), keys.last()) else {
        return Ok(Descriptor::default());
    };
    let rest = &keys[1..];
    // One branch-free pass: order check and the OR of all deltas.
    let (mut or, mut unsorted) = (0u32, false);
    for w in keys.windows(2) {
        or |= w[1].wrapping_sub(w[0]);
        unsorted |= w[1] <= w[0];
    }
    if unsorted {
        return Err(invalid("keys not strictly increasing"));
    }
    if rest.is_empty() {
        return Ok(Descriptor {
            start,
            count: 1,
            last: start,
            size: 0,
            bits: 0,
        });
    }
    let b = if delta {
        width(or)
    } else {
        width(last - start)
    };
    let size = frame_len(b);
    if out.len() < size {
        return Err(CodecError::NoRoom {
            needed: size,
            available: out.len(),
        });
    }
    let mut frame = [if delta { last } else { start }; FRAME];
    frame[..rest.len()].copy_from_slice(rest);
    pack(isa, &frame, start, delta, b, &mut out[..size]);
    Ok(Descriptor {
        start,
        count: keys.len() as u32,
        last,
        size: size as u32,
        bits: b as u8,
    })
}

/// `BlockCodec::decode` on level `isa` (levels this CPU lacks fall back).
#[inline(always)]
pub(crate) fn decode(
    isa: Isa,
    delta: bool,
    d: &Descriptor,
    payload: &[u8],
    out: &mut [u32],
) -> Result<usize> {
    decode_on(usable(isa), delta, d, payload, out)
}

/// `BlockCodec::decode` on the detected level (one detection read per block, not two).
#[inline(always)]
pub(crate) fn decode_detected(
    delta: bool,
    d: &Descriptor,
    payload: &[u8],
    out: &mut [u32],
) -> Result<usize> {
    decode_on(Isa::detect(), delta, d, payload, out)
}

/// [`decode`] on a level this CPU supports. The usual block (2..=129 keys, `1 <= b <= 32`,
/// `size = 16b` inside the payload, `last > start`, an output with room for 129 keys) is
/// recognised with a few branch-free compares and goes straight to the kernel; every other shape,
/// well-formed or not, takes the general path, which checks it field by field.
#[inline(always)]
fn decode_on(
    isa: Isa,
    delta: bool,
    d: &Descriptor,
    payload: &[u8],
    out: &mut [u32],
) -> Result<usize> {
    let (count, b) = (d.count, d.bits as u32);
    let usual = (count.wrapping_sub(2) < MAX_KEYS as u32 - 1)
        & (b.wrapping_sub(1) < 32)
        & (d.size == 16 * b)
        & (payload.len() >= 16 * b as usize)
        & (d.last > d.start)
        & (out.len() >= MAX_KEYS);
    if usual {
        #[cfg(target_arch = "x86_64")]
        {
            if let Some(f) = unpack_kernel(isa, delta, b) {
                // SAFETY: the kernel reads 16*b bytes (inside `payload`, checked above) and
                // writes 128 u32 at out[1..129] (`out.len() >= 129`, checked above); `isa` is
                // supported by this CPU (callers pass a usable level).
                unsafe { f(payload.as_ptr(), d.start, out.as_mut_ptr().add(1)) };
                out[0] = d.start;
                return Ok(count as usize);
            }
        }
    }
    decode_general(isa, delta, d, payload, out)
}

/// [`decode_on`] for every shape: checks the descriptor and decodes or says what is wrong.
#[inline(never)]
fn decode_general(
    isa: Isa,
    delta: bool,
    d: &Descriptor,
    payload: &[u8],
    out: &mut [u32],
) -> Result<usize> {
    let (b, n) = check(d, payload)?;
    let count = d.count as usize;
    if out.len() < count {
        return Err(invalid("output shorter than count"));
    }
    if count == 0 {
        return Ok(0);
    }
    out[0] = d.start;
    if n == 0 {
        return Ok(1);
    }
    if let Some(full) = out.get_mut(1..1 + FRAME) {
        let full: &mut [u32; FRAME] = full.try_into().expect("128 slots");
        unpack(isa, payload, b, d.start, delta, full).ok_or(corrupt("frame"))?;
    } else {
        decode_short(isa, delta, d, payload, b, &mut out[1..count])?;
    }
    Ok(count)
}

/// Decode into an output with fewer than 128 slots after the start key: through a stack frame
/// (out of line, so the common path stays small).
#[inline(never)]
fn decode_short(
    isa: Isa,
    delta: bool,
    d: &Descriptor,
    payload: &[u8],
    b: u32,
    out: &mut [u32],
) -> Result<()> {
    let keys = frame_keys(isa, d, payload, b, delta)?;
    out.copy_from_slice(&keys[..out.len()]);
    Ok(())
}

/// All `count` keys into a stack buffer.
fn all_keys(
    isa: Isa,
    delta: bool,
    d: &Descriptor,
    payload: &[u8],
) -> Result<([u32; MAX_KEYS], usize)> {
    let mut buf = [0u32; MAX_KEYS];
    let n = decode(isa, delta, d, payload, &mut buf)?;
    Ok((buf, n))
}

/// Re-encodes `keys` into `payload` if the result fits its capacity; the block is untouched
/// otherwise (returns `None`): `encode` checks the size before writing.
fn reencode(isa: Isa, delta: bool, keys: &[u32], payload: &mut [u8]) -> Result<Option<Descriptor>> {
    match encode(isa, delta, keys, payload) {
        Ok(nd) => Ok(Some(nd)),
        Err(CodecError::NoRoom { .. }) => Ok(None),
        Err(e) => Err(e),
    }
}

/// The frame's raw contents for an in-frame change: the keys `keys[1..]` (BP128, `delta`) or the
/// offsets `keys[1..] - start` (SIMD FOR), plus the value `key` is compared as.
fn frame_values(
    isa: Isa,
    delta: bool,
    d: &Descriptor,
    payload: &[u8],
    b: u32,
) -> Result<[u32; FRAME]> {
    let mut f = [0u32; FRAME];
    let base = if delta { d.start } else { 0 };
    unpack(isa, payload, b, base, delta, &mut f).ok_or(corrupt("frame"))?;
    Ok(f)
}

/// Packs `f[..n]` (as `frame_values` returns them) back at the smallest width, padding the rest;
/// `None` (nothing written) if that width does not fit the capacity. Returns the new width.
fn repack(
    isa: Isa,
    delta: bool,
    d: &Descriptor,
    f: &mut [u32; FRAME],
    n: usize,
    payload: &mut [u8],
) -> Option<u32> {
    let nb = if delta {
        let (mut prev, mut or) = (d.start, 0u32);
        for &k in &f[..n] {
            or |= k.wrapping_sub(prev);
            prev = k;
        }
        f[n..].fill(prev);
        width(or)
    } else {
        f[n..].fill(0);
        width(d.last.wrapping_sub(d.start))
    };
    if frame_len(nb) > payload.len() {
        return None;
    }
    let base = if delta { d.start } else { 0 };
    pack(isa, f, base, delta, nb, payload);
    Some(nb)
}

pub(crate) fn insert(
    isa: Isa,
    delta: bool,
    d: &mut Descriptor,
    payload: &mut [u8],
    key: u32,
) -> Result<InsertOutcome> {
    let (b, n) = check(d, payload)?;
    if n > 0 && d.start < key && key < d.last {
        // Strictly inside the block: start and last stay, so the change is one frame rewrite
        // (no key validation pass, no re-encode of the descriptor).
        let mut f = frame_values(isa, delta, d, payload, b)?;
        let probe = if delta { key } else { key - d.start };
        let at = f[..n].partition_point(|&v| v < probe);
        if at < n && f[at] == probe {
            return Ok(InsertOutcome::Exists { slot: at + 1 });
        }
        if n == FRAME {
            return Ok(InsertOutcome::NoRoom);
        }
        f.copy_within(at..n, at + 1);
        f[at] = probe;
        let Some(nb) = repack(isa, delta, d, &mut f, n + 1, payload) else {
            return Ok(InsertOutcome::NoRoom);
        };
        d.count += 1;
        d.bits = nb as u8;
        d.size = frame_len(nb) as u32;
        return Ok(InsertOutcome::Inserted { slot: at + 1 });
    }
    let (mut keys, count) = all_keys(isa, delta, d, payload)?;
    let slot = keys[..count].partition_point(|&k| k < key);
    if slot < count && keys[slot] == key {
        return Ok(InsertOutcome::Exists { slot });
    }
    if count == MAX_KEYS {
        return Ok(InsertOutcome::NoRoom);
    }
    keys.copy_within(slot..count, slot + 1);
    keys[slot] = key;
    match reencode(isa, delta, &keys[..count + 1], payload)? {
        Some(nd) => {
            *d = nd;
            Ok(InsertOutcome::Inserted { slot })
        }
        None => Ok(InsertOutcome::NoRoom),
    }
}

pub(crate) fn append(
    isa: Isa,
    delta: bool,
    d: &mut Descriptor,
    payload: &mut [u8],
    key: u32,
) -> Result<AppendOutcome> {
    let (b, n) = check(d, payload)?;
    if d.count == 0 {
        *d = Descriptor {
            start: key,
            count: 1,
            last: key,
            size: 0,
            bits: 0,
        };
        return Ok(AppendOutcome::Appended);
    }
    if key <= d.last {
        return Err(invalid("appended key not greater than last"));
    }
    if d.count as usize == MAX_KEYS {
        return Ok(AppendOutcome::NoRoom);
    }
    let v = if delta { key - d.last } else { key - d.start };
    if n > 0 && width(v) <= b {
        // O(1): one value into the frame; slot n held padding.
        set(payload, b, n, v);
        d.count += 1;
        d.last = key;
        return Ok(AppendOutcome::Appended);
    }
    // The value needs a wider frame: repack the raw values (no keys materialised).
    let nb = width(v);
    if frame_len(nb) > payload.len() {
        return Ok(AppendOutcome::NoRoom);
    }
    let mut raw = [0u32; FRAME];
    if n > 0 {
        unpack(isa, payload, b, 0, false, &mut raw).ok_or(corrupt("frame"))?;
    }
    raw[n] = v;
    pack(isa, &raw, 0, false, nb, payload);
    d.count += 1;
    d.last = key;
    d.bits = nb as u8;
    d.size = frame_len(nb) as u32;
    Ok(AppendOutcome::Appended)
}

pub(crate) fn remove(
    isa: Isa,
    delta: bool,
    d: &mut Descriptor,
    payload: &mut [u8],
    slot: usize,
) -> Result<RemoveOutcome> {
    let (b, n) = check(d, payload)?;
    let count = d.count as usize;
    if slot >= count {
        return Err(invalid("slot out of range"));
    }
    if 0 < slot && slot + 1 < count {
        // Neither start nor last: one frame rewrite. BP128 merges two deltas, which may need a
        // wider frame (`grew`); SIMD FOR keeps its width.
        let mut f = frame_values(isa, delta, d, payload, b)?;
        f.copy_within(slot..n, slot - 1);
        let Some(nb) = repack(isa, delta, d, &mut f, n - 1, payload) else {
            return Ok(RemoveOutcome::NoRoom);
        };
        let grew = frame_len(nb) > d.size as usize;
        d.count -= 1;
        d.bits = nb as u8;
        d.size = frame_len(nb) as u32;
        return Ok(RemoveOutcome::Removed { grew });
    }
    let (mut keys, count) = all_keys(isa, delta, d, payload)?;
    keys.copy_within(slot + 1..count, slot);
    match reencode(isa, delta, &keys[..count - 1], payload)? {
        Some(nd) => {
            let grew = nd.size > d.size;
            *d = nd;
            Ok(RemoveOutcome::Removed { grew })
        }
        None => Ok(RemoveOutcome::NoRoom),
    }
}

pub(crate) fn fold(
    isa: Isa,
    delta: bool,
    d: &Descriptor,
    payload: &[u8],
    slots: std::ops::Range<usize>,
) -> Result<Fold> {
    let (keys, count) = all_keys(isa, delta, d, payload)?;
    if slots.start > slots.end || slots.end > count {
        return Err(invalid("slot range out of bounds"));
    }
    let ks = &keys[slots];
    Ok(Fold {
        count: ks.len() as u64,
        sum: ks.iter().map(|&k| k as u64).sum(),
        min: ks.first().copied(),
        max: ks.last().copied(),
    })
}

pub(crate) fn validate(isa: Isa, delta: bool, d: &Descriptor, payload: &[u8]) -> Result<()> {
    let (b, n) = check(d, payload)?;
    if n == 0 {
        return Ok(());
    }
    let mut vals = [0u32; FRAME];
    unpack(isa, payload, b, 0, false, &mut vals).ok_or(corrupt("frame"))?;
    if vals[n..].iter().any(|&v| v != 0) {
        return Err(corrupt("nonzero padding after the last value"));
    }
    let vals = &vals[..n];
    let last = if delta {
        let mut acc = d.start as u64;
        let mut or = 0;
        for &v in vals {
            if v == 0 {
                return Err(corrupt("zero delta (duplicate key)"));
            }
            or |= v;
            acc += v as u64;
        }
        if width(or) != b {
            return Err(corrupt("bit width is not the widest delta's"));
        }
        acc
    } else {
        if vals[0] == 0 || !vals.windows(2).all(|w| w[0] < w[1]) {
            return Err(corrupt("offsets not strictly increasing from 1"));
        }
        if width(vals[n - 1]) != b {
            return Err(corrupt("bit width is not the largest offset's"));
        }
        d.start as u64 + vals[n - 1] as u64
    };
    if last > u32::MAX as u64 {
        return Err(corrupt("keys overflow u32"));
    }
    if last != d.last as u64 {
        return Err(corrupt("last key mismatch"));
    }
    Ok(())
}
