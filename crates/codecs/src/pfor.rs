//! PFOR and PFOR-DELTA: patched frame of reference (Zukowski et al., seed 004), one frame of up to
//! 128 values after the start key.
//!
//! The frame codes `n = count - 1` values `v[0..n]`: for [`Pfor`] the offsets
//! `v[i] = keys[i+1] - start`, for [`PforDelta`] the deltas `v[i] = keys[i+1] - keys[i]`. A value
//! in the frame's window `[base, base + 2^b)` is a *code* `v - base` of `b` bits; any other value is
//! an *exception*, stored in full at the end. The code slot of an exception holds the distance to
//! the next exception minus one, so the exceptions form a linked list through the code section.
//!
//! ```text
//! Descriptor { start, count <= 129, last, bits = b (0..=32), size }
//! payload:
//!   [x: u8]            number of exceptions, 0..=n
//!   [f: u8]            position of the first exception, < n     (present only when x > 0)
//!   [base: LEB128]     frame of reference, 1..=5 bytes, shortest form
//!   [codes]            n codes of b bits, value i at bits i*b.. (LSB first, see crate::bits),
//!                      ceil(n*b/8) bytes, zero bits after the last code
//!   [exceptions]       x full values v[p] as u32 LE, in list (= ascending position) order
//! size = 1 + (x > 0) + len(base) + ceil(n*b/8) + 4x, exactly; blocks of 0 or 1 key: no payload, b = 0.
//! code[p] = v[p] - base                    p not an exception
//! code[p] = next(p) - p - 1                p an exception with a successor (so next - p <= 2^b)
//! code[p] = 0                              p the last exception
//! ```
//!
//! When two exceptions are more than `2^b` positions apart the encoder inserts *compulsory*
//! exceptions (values that would fit but are stored in full to keep the list connected).
//!
//! **Choosing b** (seed 004, "Choosing Compression Schemes"): for each `b` from the frame's FOR
//! width down to 0, the window is the longest stretch of the sorted values whose range fits in
//! `b` bits (`base` = its smallest value); the block takes the `b` whose exact payload size,
//! compulsory exceptions included, is smallest (ties go to the wider `b`: fewer exceptions).
//!
//! **Decoding** runs the paper's two loops: a branch-free unpack of all codes (SIMD, see
//! `simd::pfor_avx2` / `simd::pfor_avx512`), then a walk of the exception list that patches the
//! wrong values. PFOR adds `start + base` while unpacking and patches keys; PFOR-DELTA patches the
//! deltas first and then prefix-sums (footnote 3: the loops swap, otherwise the bogus codes of the
//! exceptions would enter the running sum).
//!
//! `select(i)` of PFOR reads one code (O(1)) unless `i` is reached by the exception list, which it
//! walks; PFOR-DELTA sums the first `i` deltas. `lower_bound` and `fold` decode the frame into a
//! stack buffer. `append` writes one code in place when the new value falls in the window (the
//! exception section moves up when the code section grows by a byte); PFOR-DELTA also appends an
//! exception in place, linked from the last one (compulsory ones bridging a gap); otherwise, and
//! for insert/remove, the block is decoded, changed and re-encoded with a freshly chosen `b`.

use crate::bits::{self, mask, packed_len, width};
use crate::vbyte::{get_varint, put_varint, varint_len};
pub mod column;
pub mod sum;

use crate::{
    AppendOutcome, BlockCodec, CodecError, CodecId, Descriptor, Fold, InsertOutcome, Isa,
    RemoveOutcome, Result,
};

/// The PFOR codec: patched offsets from the start key (see the module docs for the format).
#[derive(Clone, Copy, Debug, Default)]
pub struct Pfor;

/// The PFOR-DELTA codec: patched deltas, prefix-summed after patching (module docs).
#[derive(Clone, Copy, Debug, Default)]
pub struct PforDelta;

/// Values of one frame.
pub const FRAME: usize = 128;
/// Most keys of a block: the start key plus one frame.
pub const MAX_KEYS: usize = FRAME + 1;
/// Largest header: exception count, first exception, 5-byte base.
const MAX_HEADER: usize = 7;

fn corrupt(what: &'static str) -> CodecError {
    CodecError::Corrupt { what }
}

fn invalid(what: &'static str) -> CodecError {
    CodecError::InvalidInput { what }
}

/// `isa` when this CPU runs it, else scalar.
#[inline]
fn usable(isa: Isa) -> Isa {
    if isa <= Isa::detect() || isa.is_supported() {
        isa
    } else {
        Isa::Scalar
    }
}

// ---------------------------------------------------------------------------------------------
// Kernels: unpack (+ constant) and prefix sum, SIMD with scalar twins.

/// Unpacks `out.len()` codes of width `b` from `data` and adds `add` to each (wrapping).
/// `None` if `data` is shorter than `ceil(out.len() * b / 8)` or `b > 32`.
#[doc(hidden)]
#[inline]
pub fn unpack_add(isa: Isa, data: &[u8], b: u32, add: u32, out: &mut [u32]) -> Option<()> {
    if b > 32 || packed_len(out.len(), b) > data.len() {
        return None;
    }
    let isa = usable(isa);
    #[cfg(target_arch = "x86_64")]
    {
        let done = match isa {
            // SAFETY: this CPU supports AVX-512 F/BW/VBMI (`usable`); the kernel checks every
            // access against the slices' lengths itself.
            Isa::Avx512 => unsafe { crate::simd::pfor_avx512::unpack_add(data, b, add, out) },
            // SAFETY: this CPU supports AVX2 (`usable`); the kernel bounds its own accesses.
            Isa::Avx2 => unsafe { crate::simd::pfor_avx2::unpack_add(data, b, add, out) },
            _ => 0,
        };
        if done == out.len() {
            return Some(());
        }
        if done > 0 {
            // `done` is a multiple of 8 values, so the rest starts on a byte boundary.
            let byte = done * b as usize / 8;
            return unpack_add_scalar(&data[byte..], b, add, &mut out[done..]);
        }
    }
    unpack_add_scalar(data, b, add, out)
}

/// Scalar twin of [`unpack_add`].
#[doc(hidden)]
pub fn unpack_add_scalar(data: &[u8], b: u32, add: u32, out: &mut [u32]) -> Option<()> {
    bits::unpack(data, b, out)?;
    if add != 0 {
        for v in out.iter_mut() {
            *v = v.wrapping_add(add);
        }
    }
    Some(())
}

/// In place: `out[i] = out[i-1] + step + out[i]` for `i >= 1` (wrapping); `out[0]` is kept.
#[doc(hidden)]
#[inline]
pub fn prefix_sum(isa: Isa, step: u32, out: &mut [u32]) {
    if out.len() < 2 {
        return;
    }
    let isa = usable(isa);
    #[cfg(target_arch = "x86_64")]
    {
        match isa {
            // SAFETY: AVX-512 F is supported (`usable`); the kernel stays inside `out`.
            Isa::Avx512 => unsafe { crate::simd::pfor_avx512::prefix_sum(step, out) },
            // SAFETY: AVX2 is supported (`usable`); the kernel stays inside `out`.
            Isa::Avx2 => unsafe { crate::simd::pfor_avx2::prefix_sum(step, out) },
            _ => prefix_sum_scalar(step, out),
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = isa;
        prefix_sum_scalar(step, out)
    }
}

/// Scalar twin of [`prefix_sum`].
#[doc(hidden)]
pub fn prefix_sum_scalar(step: u32, out: &mut [u32]) {
    let mut acc = out[0];
    for v in out[1..].iter_mut() {
        acc = acc.wrapping_add(step).wrapping_add(*v);
        *v = acc;
    }
}

// ---------------------------------------------------------------------------------------------
// The frame: parsing and checks.

/// A parsed, size-checked frame (`n >= 1`).
#[derive(Clone, Copy, Debug)]
struct Frame<'a> {
    n: usize,
    b: u32,
    base: u32,
    /// Number of exceptions.
    x: usize,
    /// Position of the first exception (0 when `x == 0`).
    first: usize,
    /// Exactly `packed_len(n, b)` bytes.
    codes: &'a [u8],
    /// Exactly `4x` bytes.
    exc: &'a [u8],
    /// Offset of the code section in the payload.
    codes_at: usize,
}

impl Frame<'_> {
    #[inline]
    fn exception(&self, j: usize) -> u32 {
        let e = &self.exc[4 * j..4 * j + 4];
        u32::from_le_bytes([e[0], e[1], e[2], e[3]])
    }

    /// Code `p` (`p < n`, so in bounds by the size check).
    #[inline]
    fn code(&self, p: usize) -> u32 {
        bits::get(self.codes, self.b, p).unwrap_or(0)
    }
}

/// Checks the descriptor and parses the header; `None` for blocks of 0 or 1 key.
#[inline]
fn parse<'a>(d: &Descriptor, payload: &'a [u8]) -> Result<Option<Frame<'a>>> {
    if !crate::check_head(d, MAX_KEYS, "count exceeds 129")? {
        return Ok(None);
    }
    let count = d.count as usize;
    let b = d.bits as u32;
    if b > 32 {
        return Err(corrupt("bit width above 32"));
    }
    let size = d.size as usize;
    if size > payload.len() {
        return Err(corrupt("size exceeds payload"));
    }
    parse_frame(count - 1, b, &payload[..size]).map(Some)
}

/// Parses the payload `p` (exactly the frame's bytes) of a frame of `n >= 1` values of width
/// `b <= 32`.
#[inline]
fn parse_frame(n: usize, b: u32, p: &[u8]) -> Result<Frame<'_>> {
    let size = p.len();
    let x = *p.first().ok_or(corrupt("missing header"))? as usize;
    if x > n {
        return Err(corrupt("more exceptions than values"));
    }
    let mut at = 1;
    let mut first = 0;
    if x > 0 {
        first = *p.get(1).ok_or(corrupt("missing first exception"))? as usize;
        if first >= n {
            return Err(corrupt("first exception out of the frame"));
        }
        at = 2;
    }
    let (base, len) = get_varint(p, at)?;
    if len != varint_len(base) {
        return Err(corrupt("base varint not in shortest form"));
    }
    at += len;
    let clen = packed_len(n, b);
    if size != at + clen + 4 * x {
        return Err(corrupt("size is not header + codes + exceptions"));
    }
    Ok(Frame {
        n,
        b,
        base,
        x,
        first,
        codes: &p[at..at + clen],
        exc: &p[at + clen..],
        codes_at: at,
    })
}

// ---------------------------------------------------------------------------------------------
// Encoding.

/// Exceptions of `v` for the window `[base, base + 2^b)`, compulsory ones included.
#[inline(always)]
fn count_exceptions(v: &[u32], b: u32, base: u32) -> usize {
    let m = mask(b);
    let natural = v.iter().filter(|&&x| x.wrapping_sub(base) > m).count();
    // Compulsory exceptions only arise when 2^b < 128, the longest possible gap.
    if natural < 2 || b >= 7 {
        return natural;
    }
    let reach = 1usize << b;
    let mut prev: Option<usize> = None;
    let mut x = 0;
    for (i, &val) in v.iter().enumerate() {
        if val.wrapping_sub(base) > m {
            if let Some(p) = prev {
                x += (i - p - 1) / reach;
            }
            x += 1;
            prev = Some(i);
        }
    }
    x
}

/// Payload bytes of a frame.
#[inline]
fn frame_size(n: usize, b: u32, base: u32, x: usize) -> usize {
    1 + (x > 0) as usize + varint_len(base) + packed_len(n, b) + 4 * x
}

/// The smallest range of `len` consecutive values of the sorted `s` (`1 <= len <= s.len()`):
/// `min(s[i + len - 1] - s[i])`. A stretch of `len` values fits in `b` bits iff this is at most
/// `mask(b)`, and it grows with `len`, so the longest stretch for `b` is found by bisection.
#[inline(always)]
pub(crate) fn min_range_body(s: &[u32], len: usize) -> u32 {
    let k = s.len() + 1 - len;
    // Branch-free reduction (no early exit), so it vectorises.
    s[len - 1..]
        .iter()
        .zip(&s[..k])
        .map(|(a, b)| a.wrapping_sub(*b))
        .fold(u32::MAX, u32::min)
}

/// [`min_range_body`] built for the widest vector unit of `isa` (the portable build has no
/// unsigned vector minimum). `len` must be in `1..=s.len()`.
#[doc(hidden)]
#[inline]
pub fn min_range(isa: Isa, s: &[u32], len: usize) -> u32 {
    assert!(1 <= len && len <= s.len());
    #[cfg(target_arch = "x86_64")]
    if usable(isa) >= Isa::Avx2 {
        // SAFETY: AVX2 is supported (`usable`); the body is safe code.
        return unsafe { crate::simd::pfor_avx2::min_range(s, len) };
    }
    let _ = isa;
    min_range_body(s, len)
}

/// The length of the longest stretch of the sorted `s` whose range fits in `m`, if it is at least
/// `need` (`None` otherwise: one reduction decides that, the usual case for a width that cannot
/// beat the best so far).
#[inline(always)]
fn longest_window(isa: Isa, s: &[u32], m: u32, need: usize) -> Option<usize> {
    let n = s.len();
    if need > n || min_range(isa, s, need.max(1)) > m {
        return None;
    }
    let (mut lo, mut hi) = (need.max(1), n);
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        if min_range(isa, s, mid) <= m {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    Some(lo)
}

/// Upper bounds on the longest window of each width `b < full` of the (unsorted) values `v`
/// (`1 <= v.len() <= 128`, all in `[min, min + 2^full)`), at index `b`: a window of range
/// `< 2^b` lies in at most two adjacent buckets `(x - min) >> b`, so it holds at most the largest
/// count of two adjacent buckets. One histogram of 32 buckets (every `b <= full - 5` gets its
/// bound), halved per wider width. A bound below what a width needs to beat the best size rules
/// it out without sorting.
#[inline(always)]
fn window_bounds(v: &[u32], min: u32, full: u32) -> [u8; 33] {
    const LEVELS: u32 = 5;
    let shift = full.saturating_sub(LEVELS);
    let mut hist = [0u8; 1 << LEVELS];
    for &x in v {
        hist[(((x - min) >> shift) as usize) & ((1 << LEVELS) - 1)] += 1;
    }
    let mut bound = [0u8; 33];
    let mut len = hist.len();
    for t in 0..=LEVELS {
        let pairs = hist[..len]
            .windows(2)
            .map(|w| w[0] + w[1])
            .fold(hist[0], u8::max);
        // Widths whose buckets are this level's: b = shift + t (and every narrower one at t = 0).
        let lo = if t == 0 { 0 } else { shift + t };
        for b in lo..=(shift + t).min(32) {
            bound[b as usize] = pairs;
        }
        len /= 2;
        for j in 0..len {
            hist[j] = hist[2 * j] + hist[2 * j + 1];
        }
    }
    bound
}

/// The longest window of width `m` (its length and base) when it leaves out at most `most <
/// ENDS` values, from the smallest and largest values alone: such a window drops `i` of the
/// smallest and `k - i` of the largest values for some `k <= most`. `None` when no window
/// leaves out so few. The same answer as `longest_window` and `window_start` on the sorted
/// values (longest first, then the first start).
#[inline(always)]
fn window_from_ends(
    small: &[u32; ENDS],
    large: &[u32; ENDS],
    m: u32,
    most: usize,
) -> Option<(usize, u32)> {
    (0..=most.min(ENDS - 1)).find_map(|k| {
        (0..=k)
            .find(|&i| large[k - i].wrapping_sub(small[i]) <= m)
            .map(|i| (k, small[i]))
    })
}

/// How many of the smallest and largest values [`extremes`] keeps.
const ENDS: usize = 8;

/// The `ENDS` smallest values of `v` (ascending) and the `ENDS` largest (descending), for
/// `v.len() >= ENDS`: the order statistics that settle the widths just below the frame's own
/// (which may drop only a few values as exceptions) without sorting.
#[inline(always)]
fn extremes(v: &[u32]) -> ([u32; ENDS], [u32; ENDS]) {
    let mut small = [u32::MAX; ENDS];
    let mut large = [0u32; ENDS];
    for &x in v {
        if x < small[ENDS - 1] {
            let mut k = ENDS - 1;
            while k > 0 && small[k - 1] > x {
                small[k] = small[k - 1];
                k -= 1;
            }
            small[k] = x;
        }
        if x > large[ENDS - 1] {
            let mut k = ENDS - 1;
            while k > 0 && large[k - 1] < x {
                large[k] = large[k - 1];
                k -= 1;
            }
            large[k] = x;
        }
    }
    (small, large)
}

/// Sorts up to 128 values: a least-significant-digit radix sort on the bytes in which they
/// differ (one pass for deltas below 2^8 or of one width class, two for 16-bit ones), each pass
/// a counting sort. Much quicker than a comparison sort at this size.
#[inline(always)]
fn sort_small(s: &mut [u32]) {
    let n = s.len();
    if n <= 16 || n > FRAME {
        s.sort_unstable();
        return;
    }
    let (or, and) = s.iter().fold((0u32, u32::MAX), |(o, a), &v| (o | v, a & v));
    let varies = or ^ and;
    let mut bufs = [[0u32; FRAME]; 2];
    bufs[0][..n].copy_from_slice(s);
    let mut cur = 0;
    for shift in [0u32, 8, 16, 24] {
        if (varies >> shift) & 0xFF == 0 {
            continue;
        }
        let [p, q] = &mut bufs;
        let (src, dst) = if cur == 0 { (&*p, q) } else { (&*q, p) };
        counting_pass(&src[..n], shift, dst);
        cur ^= 1;
    }
    s.copy_from_slice(&bufs[cur][..n]);
}

/// One stable counting-sort pass of `src` (at most 128 values) by byte `shift / 8` into `dst`.
#[inline(always)]
fn counting_pass(src: &[u32], shift: u32, dst: &mut [u32; FRAME]) {
    // Counts of each byte value, four 16-bit counters per word (whole-word loads and stores
    // only, so store forwarding always works), then their exclusive prefix sum: within a word
    // by one multiplication (lane k gets lanes 0..=k; counts <= 128 do not carry), across words
    // by a running total (64 steps instead of 256). Positions are < 128: one byte each.
    let mut count = [0u64; 64];
    for &v in src {
        let d = ((v >> shift) & 0xFF) as usize;
        count[d / 4] += 1 << (16 * (d % 4));
    }
    let mut at = [0u32; 64];
    let mut total = 0u64;
    for (c, a) in count.iter().zip(at.iter_mut()) {
        let inclusive = c.wrapping_mul(0x0001_0001_0001_0001);
        let e = inclusive - c + total * 0x0001_0001_0001_0001;
        total += inclusive >> 48;
        *a = (e & 0xFF) as u32
            | (((e >> 16) & 0xFF) as u32) << 8
            | (((e >> 32) & 0xFF) as u32) << 16
            | (((e >> 48) & 0xFF) as u32) << 24;
    }
    let mut at: [u8; 256] = std::array::from_fn(|d| (at[d / 4] >> (8 * (d % 4))) as u8);
    for &v in src {
        let d = ((v >> shift) & 0xFF) as usize;
        dst[at[d] as usize % FRAME] = v;
        at[d] = at[d].wrapping_add(1);
    }
}

/// Start of the first stretch of `len` values of the sorted `s` whose range fits in `m`.
#[inline(always)]
fn window_start(s: &[u32], len: usize, m: u32) -> usize {
    (0..=s.len() - len)
        .find(|&lo| s[lo + len - 1] - s[lo] <= m)
        .unwrap_or(0)
}

/// The seed 004 choice of `(b, base)` for `v` (`1 <= v.len() <= 128`): smallest payload.
/// `sorted` values are also distinct (PFOR offsets), so a window of `b` bits holds at most
/// `2^b` of them, which bounds the exceptions before any counting.
#[inline(always)]
fn choose(v: &[u32], sorted: bool) -> (u32, u32) {
    // Nothing is ruled out below `usize::MAX`: always `Some`.
    choose_below(v, sorted, usize::MAX).unwrap_or((32, 0))
}

/// [`choose`], or `None` when the frame would take at least `limit` bytes, known from a lower
/// bound before any width is tried: at the frame's own width `full` its exact size; at a width
/// `b < full` at least one exception (no window of `b` bits holds every value), and at least
/// `n` minus the histogram's bound on its longest window ([`window_bounds`]), 4 bytes each, plus
/// the header, the first exception's byte, a base byte and `packed_len(n, b)`. `auto` asks
/// PFOR-DELTA for a frame under nine tenths of its best candidate's size; on spread keys
/// (uniform u32) the bound rules it out, where choosing `b` took most of the encode (issue 21).
#[inline(always)]
fn choose_below(v: &[u32], sorted: bool, limit: usize) -> Option<(u32, u32)> {
    let n = v.len();
    let mut buf = [0u32; FRAME];
    let s = &mut buf[..n];
    s.copy_from_slice(v);
    let (min, max) = if sorted {
        (s[0], s[n - 1])
    } else {
        s.iter()
            .fold((u32::MAX, 0), |(lo, hi), &x| (lo.min(x), hi.max(x)))
    };
    let full = width(max - min);
    let mut best = (full, min);
    let mut best_size = frame_size(n, full, min, 0);
    // Widths that could beat `full` even with no exceptions at all.
    let least = |b: u32| {
        let nat = if sorted && b < 7 {
            n.saturating_sub(1 << b)
        } else {
            0
        };
        frame_size(n, b, 0, nat)
    };
    let bs = (0..full)
        .rev()
        .find(|&b| least(b) < best_size)
        .map_or(0, |b| b + 1);
    let lo = (0..bs).find(|&b| least(b) < best_size).unwrap_or(bs);
    if lo >= bs {
        return (best_size < limit).then_some(best);
    }
    // The bound on the sizes below `limit`: the widths `lo..bs` are the only ones that can beat
    // `full` (`least`), each by at most what the histogram allows.
    let mut bound: Option<[u8; 33]> = None;
    if best_size >= limit {
        let bnd = window_bounds(v, min, full);
        let floor = (lo..bs)
            .map(|b| frame_size(n, b, 0, n.saturating_sub(bnd[b as usize] as usize).max(1)))
            .fold(best_size, usize::min);
        if floor >= limit {
            return None;
        }
        bound = Some(bnd);
    }
    // Widths just below `full` (which may drop only a few values as exceptions) are settled
    // from the smallest and largest values; for unsorted values (PFOR-DELTA) wider gaps are
    // bounded by a histogram first, and the values are sorted only when a width survives both.
    let ends = if n <= 2 * ENDS {
        None
    } else if sorted {
        let mut large: [u32; ENDS] = s[n - ENDS..].try_into().expect("ENDS values");
        large.reverse();
        Some((s[..ENDS].try_into().expect("ENDS values"), large))
    } else {
        Some(extremes(v))
    };
    let mut is_sorted = sorted;
    let isa = Isa::detect();
    for b in (lo..bs).rev() {
        // Lower bound before locating the window and counting: with a window of `len` values,
        // n - len natural exceptions, so frame_size(n, b, 0, n - len) < best_size needs
        // len >= need (the frame size grows by 4 bytes per exception, plus 1 for the first).
        let no_exc = frame_size(n, b, 0, 0);
        if no_exc >= best_size {
            continue;
        }
        let most = best_size.saturating_sub(no_exc + 2) / 4;
        let need = n.saturating_sub(most);
        let (len, base) = match &ends {
            Some((small, large)) if most < ENDS => {
                match window_from_ends(small, large, mask(b), most) {
                    Some((k, base)) => (n - k, base),
                    None => continue,
                }
            }
            _ => {
                if !sorted {
                    let bound = bound.get_or_insert_with(|| window_bounds(v, min, full));
                    if need > bound[b as usize] as usize {
                        continue;
                    }
                }
                if !is_sorted {
                    sort_small(s);
                    is_sorted = true;
                }
                let Some(len) = longest_window(isa, s, mask(b), need) else {
                    continue;
                };
                (len, s[window_start(s, len, mask(b))])
            }
        };
        if frame_size(n, b, 0, n - len) >= best_size {
            continue;
        }
        if frame_size(n, b, base, n - len) >= best_size {
            continue;
        }
        let size = frame_size(n, b, base, count_exceptions(v, b, base));
        if size < best_size {
            best_size = size;
            best = (b, base);
        }
    }
    Some(best)
}

/// Writes the frame of `v` (`1 <= n <= 128`) into `out`; returns `(b, size)`.
fn write_frame(v: &[u32], sorted: bool, out: &mut [u8]) -> Result<(u32, usize)> {
    write_frame_below(v, sorted, out, usize::MAX)?.ok_or(invalid("no frame below usize::MAX"))
}

/// [`write_frame`], or `None` (nothing written) when the frame would take at least `limit`
/// bytes ([`choose_below`]). Built for AVX2 where the CPU has it: the b choice and the frame
/// are many short loops over the values that the compiler vectorises (unsigned minimum and
/// maximum need SSE4.1 / AVX2).
fn write_frame_below(
    v: &[u32],
    sorted: bool,
    out: &mut [u8],
    limit: usize,
) -> Result<Option<(u32, usize)>> {
    #[cfg(target_arch = "x86_64")]
    if Isa::detect() >= Isa::Avx2 {
        // SAFETY: the AVX2 level and above have AVX2, BMI1/2 and POPCNT (`Isa::probe`), the
        // kernel's target features; the body is safe code (`limit` only bounds its output).
        return unsafe { crate::simd::pfor_avx2::write_frame(v, sorted, out, limit) };
    }
    write_frame_body(v, sorted, out, limit)
}

/// [`write_frame_below`]'s body, inlined into its AVX2 build.
#[inline(always)]
pub(crate) fn write_frame_body(
    v: &[u32],
    sorted: bool,
    out: &mut [u8],
    limit: usize,
) -> Result<Option<(u32, usize)>> {
    let Some((b, base)) = choose_below(v, sorted, limit) else {
        return Ok(None);
    };
    let size = write_coded(v, b, base, out)?;
    Ok(Some((b, size)))
}

/// Writes the frame of `v` (`1 <= n <= 128`) for the window `[base, base + 2^b)` (`b <= 32`);
/// returns its size. LOOP1 of the paper's compression finds the natural exceptions, branch-free:
/// codes and a bit set of the exceptions in one pass; [`finish`] does the rest.
#[inline(always)]
pub(crate) fn write_coded(v: &[u32], b: u32, base: u32, out: &mut [u8]) -> Result<usize> {
    let m = mask(b);
    let mut codes = [0u32; FRAME];
    let mut natural = [0u64; 2];
    for ((vals, out), word) in v.chunks(64).zip(codes.chunks_mut(64)).zip(&mut natural) {
        let mut bits = 0u64;
        for (k, (&val, code)) in vals.iter().zip(out.iter_mut()).enumerate() {
            let c = val.wrapping_sub(base);
            *code = c;
            bits |= ((c > m) as u64) << k;
        }
        *word = bits;
    }
    let mut miss = [0u8; FRAME];
    let mut k = 0;
    for (w, &word) in natural.iter().enumerate() {
        let mut rest = word;
        while rest != 0 {
            miss[k] = (64 * w + rest.trailing_zeros() as usize) as u8;
            k += 1;
            rest &= rest - 1;
        }
    }
    finish(v, b, base, &mut codes, &miss[..k], out)
}

/// The rest of a frame once LOOP1 has run: `codes[i] = v[i] - base` (wrapping) for `i < n` and
/// `natural` = the ascending positions whose code exceeds `mask(b)`. LOOP2 adds the compulsory
/// exceptions and links the list through the exceptions' codes; then the header, the bit-packed
/// codes and the exception values are written. Returns the frame's size; `NoRoom` (nothing
/// written) when `out` is too short.
#[doc(hidden)]
#[inline(always)]
pub fn finish(
    v: &[u32],
    b: u32,
    base: u32,
    codes: &mut [u32; FRAME],
    natural: &[u8],
    out: &mut [u8],
) -> Result<usize> {
    let n = v.len();
    if n == 0 || n > FRAME || b > 32 {
        return Err(invalid("a frame has 1..=128 values of at most 32 bits"));
    }
    let reach = 1usize << b.min(16);
    let mut pos = [0u8; FRAME];
    let mut x = 0usize;
    for &i in natural {
        let i = i as usize;
        if x > 0 {
            let mut cur = pos[x - 1] as usize;
            while i - cur > reach {
                cur += reach;
                pos[x] = cur as u8;
                x += 1;
            }
        }
        pos[x] = i as u8;
        x += 1;
    }
    for j in 0..x {
        let p = pos[j] as usize;
        codes[p] = if j + 1 < x {
            (pos[j + 1] as usize - p - 1) as u32
        } else {
            0
        };
    }
    let size = frame_size(n, b, base, x);
    if size > out.len() {
        return Err(CodecError::NoRoom {
            needed: size,
            available: out.len(),
        });
    }
    out[0] = x as u8;
    let mut at = 1;
    if x > 0 {
        out[1] = pos[0];
        at = 2;
    }
    at += put_varint(base, &mut out[at..]);
    let clen = packed_len(n, b);
    bits::pack(&codes[..n], b, &mut out[at..at + clen]);
    at += clen;
    for &p in &pos[..x] {
        out[at..at + 4].copy_from_slice(&v[p as usize].to_le_bytes());
        at += 4;
    }
    debug_assert_eq!(at, size);
    Ok(size)
}

fn encode_keys<const DELTA: bool>(keys: &[u32], out: &mut [u8]) -> Result<Descriptor> {
    encode_keys_below::<DELTA>(keys, out, usize::MAX)?.ok_or(invalid("no frame below usize::MAX"))
}

/// [`encode_keys`], or `None` (nothing written) when the frame would take at least `limit`
/// bytes, as [`choose_below`] tells before choosing `b` (`BlockCodec::encode_below`).
fn encode_keys_below<const DELTA: bool>(
    keys: &[u32],
    out: &mut [u8],
    limit: usize,
) -> Result<Option<Descriptor>> {
    if keys.len() > MAX_KEYS {
        return Err(invalid("more than 129 keys"));
    }
    if !keys.windows(2).all(|w| w[0] < w[1]) {
        return Err(invalid("keys not strictly increasing"));
    }
    let (start, last) = match (keys.first(), keys.last()) {
        (Some(&s), Some(&l)) => (s, l),
        _ => return Ok(Some(Descriptor::default())),
    };
    let mut d = Descriptor {
        start,
        count: keys.len() as u32,
        last,
        size: 0,
        bits: 0,
    };
    if keys.len() == 1 {
        return Ok(Some(d));
    }
    let n = keys.len() - 1;
    let mut v = [0u32; FRAME];
    for i in 0..n {
        v[i] = keys[i + 1] - if DELTA { keys[i] } else { start };
    }
    let Some((b, size)) = write_frame_below(&v[..n], !DELTA, out, limit)? else {
        return Ok(None);
    };
    d.bits = b as u8;
    d.size = size as u32;
    Ok(Some(d))
}

// ---------------------------------------------------------------------------------------------
// Decoding.

/// Decodes all keys of a parsed frame into `out[..=n]`.
#[inline]
fn decode_frame<const DELTA: bool>(isa: Isa, f: &Frame, start: u32, out: &mut [u32]) -> Result<()> {
    let out = &mut out[..=f.n];
    out[0] = start;
    decode_values::<DELTA>(isa, f, start, &mut out[1..])
}

/// Decodes the `n` values of a parsed frame into `vals` (exactly `n` long): PFOR gives
/// `start + v[i]`, PFOR-DELTA the running sum `start + v[0] + .. + v[i]`.
#[inline(always)]
fn decode_values<const DELTA: bool>(
    isa: Isa,
    f: &Frame,
    start: u32,
    vals: &mut [u32],
) -> Result<()> {
    // LOOP1: decode regardless (unpack, adding the frame of reference for PFOR).
    let add = if DELTA { 0 } else { start.wrapping_add(f.base) };
    unpack_add(isa, f.codes, f.b, add, vals).ok_or(corrupt("codes"))?;
    // LOOP2: patch by walking the exception list.
    let mut p = f.first;
    for j in 0..f.x {
        let slot = vals
            .get_mut(p)
            .ok_or(corrupt("exception list leaves the frame"))?;
        let code = slot.wrapping_sub(add);
        let e = f.exception(j);
        *slot = if DELTA {
            e.wrapping_sub(f.base)
        } else {
            start.wrapping_add(e)
        };
        p = p.saturating_add(code as usize).saturating_add(1);
    }
    if DELTA {
        // The running sum from `start`: out[i] = out[i-1] + base + delta code (footnote 3:
        // after patching, so the exceptions' link codes never enter it).
        vals[0] = vals[0].wrapping_add(start).wrapping_add(f.base);
        prefix_sum(isa, f.base, vals);
    }
    Ok(())
}

fn decode_with<const DELTA: bool>(
    isa: Isa,
    d: &Descriptor,
    payload: &[u8],
    out: &mut [u32],
) -> Result<usize> {
    let frame = parse(d, payload)?;
    let count = d.count as usize;
    if out.len() < count {
        return Err(invalid("output shorter than the block"));
    }
    match frame {
        None => {
            if count == 1 {
                out[0] = d.start;
            }
        }
        Some(f) => decode_frame::<DELTA>(isa, &f, d.start, out)?,
    }
    Ok(count)
}

/// Decodes into a stack buffer; returns the key count.
#[inline]
fn decode_buf<const DELTA: bool>(
    d: &Descriptor,
    payload: &[u8],
    buf: &mut [u32; MAX_KEYS],
) -> Result<usize> {
    decode_with::<DELTA>(Isa::detect(), d, payload, buf)
}

fn select<const DELTA: bool>(d: &Descriptor, payload: &[u8], i: usize) -> Result<u32> {
    let frame = parse(d, payload)?;
    if i >= d.count as usize {
        return Err(invalid("slot out of range"));
    }
    let f = match frame {
        Some(f) if i > 0 => f,
        _ => return Ok(d.start),
    };
    if DELTA {
        // Sum of the first i deltas: unpack, patch those exceptions, sum.
        let mut buf = [0u32; FRAME];
        let vals = &mut buf[..i];
        unpack_add(Isa::detect(), f.codes, f.b, 0, vals).ok_or(corrupt("codes"))?;
        let mut p = f.first;
        for j in 0..f.x {
            if p >= i {
                break;
            }
            let code = vals[p];
            vals[p] = f.exception(j).wrapping_sub(f.base);
            p = p.saturating_add(code as usize).saturating_add(1);
        }
        let sum = vals.iter().fold(0u32, |a, &v| a.wrapping_add(v));
        Ok(d.start
            .wrapping_add((i as u32).wrapping_mul(f.base))
            .wrapping_add(sum))
    } else {
        let target = i - 1;
        let mut p = f.first;
        for j in 0..f.x {
            if p > target {
                break;
            }
            if p == target {
                return Ok(d.start.wrapping_add(f.exception(j)));
            }
            p = p.saturating_add(f.code(p) as usize).saturating_add(1);
        }
        Ok(d.start.wrapping_add(f.base).wrapping_add(f.code(target)))
    }
}

fn lower_bound<const DELTA: bool>(
    d: &Descriptor,
    payload: &[u8],
    key: u32,
) -> Result<(usize, Option<u32>)> {
    let mut buf = [0u32; MAX_KEYS];
    let n = decode_buf::<DELTA>(d, payload, &mut buf)?;
    let keys = &buf[..n];
    let pos = keys.partition_point(|&k| k < key);
    Ok((pos, keys.get(pos).copied()))
}

fn fold<const DELTA: bool>(
    d: &Descriptor,
    payload: &[u8],
    slots: std::ops::Range<usize>,
) -> Result<Fold> {
    let mut buf = [0u32; MAX_KEYS];
    let n = decode_buf::<DELTA>(d, payload, &mut buf)?;
    if slots.start > slots.end || slots.end > n {
        return Err(invalid("slot range out of the block"));
    }
    let keys = &buf[slots];
    Ok(Fold {
        count: keys.len() as u64,
        sum: keys.iter().map(|&k| k as u64).sum(),
        min: keys.first().copied(),
        max: keys.last().copied(),
    })
}

fn validate<const DELTA: bool>(d: &Descriptor, payload: &[u8]) -> Result<()> {
    let Some(f) = parse(d, payload)? else {
        return Ok(());
    };
    // Bounded walk: x steps, each moving forward by at least one position.
    let mut p = f.first;
    for j in 0..f.x {
        if p >= f.n {
            return Err(corrupt("exception list leaves the frame"));
        }
        let code = f.code(p);
        if j + 1 == f.x {
            if code != 0 {
                return Err(corrupt("last exception's link is not 0"));
            }
        } else {
            p = p.saturating_add(code as usize).saturating_add(1);
        }
    }
    let last_bits = f.n * f.b as usize % 8;
    if last_bits != 0 && f.codes[f.codes.len() - 1] >> last_bits != 0 {
        return Err(corrupt("bits after the last code are not zero"));
    }
    let mut buf = [0u32; MAX_KEYS];
    decode_frame::<DELTA>(Isa::detect(), &f, d.start, &mut buf)?;
    let keys = &buf[..=f.n];
    if !keys.windows(2).all(|w| w[0] < w[1]) {
        return Err(corrupt("keys do not strictly increase"));
    }
    if keys[f.n] != d.last {
        return Err(corrupt("last key does not match the descriptor"));
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Updates.

/// Re-encodes `keys` and stores the block if it fits in `payload`; `false` (block unchanged)
/// when it does not.
fn store<const DELTA: bool>(d: &mut Descriptor, payload: &mut [u8], keys: &[u32]) -> Result<bool> {
    // `encode_keys` sizes the frame before writing a byte, so a frame that does not fit leaves
    // the payload as it was.
    match encode_keys::<DELTA>(keys, payload) {
        Ok(nd) => {
            *d = nd;
            Ok(true)
        }
        Err(CodecError::NoRoom { .. }) => Ok(false),
        Err(e) => Err(e),
    }
}

fn insert<const DELTA: bool>(
    d: &mut Descriptor,
    payload: &mut [u8],
    key: u32,
) -> Result<InsertOutcome> {
    let mut buf = [0u32; MAX_KEYS + 1];
    let n = decode_with::<DELTA>(Isa::detect(), d, payload, &mut buf)?;
    let pos = buf[..n].partition_point(|&k| k < key);
    if pos < n && buf[pos] == key {
        return Ok(InsertOutcome::Exists { slot: pos });
    }
    if n >= MAX_KEYS {
        return Ok(InsertOutcome::NoRoom);
    }
    buf.copy_within(pos..n, pos + 1);
    buf[pos] = key;
    Ok(if store::<DELTA>(d, payload, &buf[..=n])? {
        InsertOutcome::Inserted { slot: pos }
    } else {
        InsertOutcome::NoRoom
    })
}

/// What the in-place appends need of a frame's header, read and checked as [`parse`] checks it
/// (a block it refuses gets no `Head`, and the general path reports it).
#[derive(Clone, Copy, Debug)]
struct Head {
    /// Values in the frame (`count - 1 >= 1`).
    n: usize,
    b: u32,
    base: u32,
    /// Number of exceptions and the position of the first (0 when `x == 0`).
    x: usize,
    first: usize,
    /// Offset of the code section, and its length `packed_len(n, b)`; the `4x` bytes of
    /// exceptions follow it and end the frame.
    codes_at: usize,
    clen: usize,
}

/// The header of a frame of `count >= 2` keys, when the descriptor and the payload pass
/// [`parse`]'s checks; `None` otherwise. Inlined into the append path: `parse`'s call and its
/// 80-byte `Result` were a hundred instructions of each append (issue 21).
#[inline(always)]
fn head(d: &Descriptor, payload: &[u8]) -> Option<Head> {
    let count = d.count as usize;
    let (b, size) = (d.bits as u32, d.size as usize);
    if !(2..=MAX_KEYS).contains(&count) || d.last <= d.start || b > 32 {
        return None;
    }
    let n = count - 1;
    let p = payload.get(..size)?;
    let x = *p.first()? as usize;
    let (first, at) = if x > 0 {
        (*p.get(1)? as usize, 2)
    } else {
        (0, 1)
    };
    if x > n || (x > 0 && first >= n) {
        return None;
    }
    let (base, len) = get_varint(p, at).ok()?;
    let clen = packed_len(n, b);
    if len != varint_len(base) || size != at + len + clen + 4 * x {
        return None;
    }
    Some(Head {
        n,
        b,
        base,
        x,
        first,
        codes_at: at + len,
        clen,
    })
}

/// Position of the last exception of a frame with `x > 0`, from its codes (a walk of the
/// list); `None` if the list leaves the frame (a corrupt block: the general path reports it).
///
/// At `b = 0` every link is 0, so the exceptions are the `x` positions from the first one: the
/// walk's answer without the walk. An ascending load meets that case on every append of a block
/// of spread keys (uniform u32 keys): the block's second key frames the first delta alone, at
/// `b = 0`, and each later delta is an exception, so walking the list made appending a block
/// quadratic (390 instructions per key, a quarter of a PFOR-DELTA load's, issue 21).
#[inline]
fn last_exception(h: &Head, codes: &[u8]) -> Option<usize> {
    if h.x == 0 {
        return None;
    }
    if h.b == 0 {
        let p = h.first + h.x - 1;
        return (p < h.n).then_some(p);
    }
    let mut p = h.first;
    for _ in 1..h.x {
        p += bits::get(codes, h.b, p)? as usize + 1;
        if p >= h.n {
            return None;
        }
    }
    Some(p)
}

fn append<const DELTA: bool>(
    d: &mut Descriptor,
    payload: &mut [u8],
    key: u32,
) -> Result<AppendOutcome> {
    if key > d.last && (d.count as usize) < MAX_KEYS {
        if let Some(h) = head(d, payload) {
            if append_in_frame::<DELTA>(d, payload, key, &h)? {
                return Ok(AppendOutcome::Appended);
            }
        }
    }
    append_general::<DELTA>(d, payload, key)
}

/// [`append`] where no in-place append of a frame takes the key: a block's second key, a key
/// the frame cannot take (re-encoded with a freshly chosen `b`), and the errors. Out of line,
/// so that the in-place path stays a small function (inlined, this path cost each append 35
/// instructions of spills, issue 21).
#[inline(never)]
fn append_general<const DELTA: bool>(
    d: &mut Descriptor,
    payload: &mut [u8],
    key: u32,
) -> Result<AppendOutcome> {
    if key > d.last && d.count == 1 && d.size == 0 && d.bits == 0 && d.start == d.last {
        // The block's second key: the frame of the one value `v` is what the encoder writes
        // for it (`choose` gives `b = 0` and `base = v`: no codes, no exceptions), written
        // without decoding and encoding (once per block).
        let v = key - d.start;
        let size = 1 + varint_len(v);
        if size <= payload.len() {
            payload[0] = 0;
            put_varint(v, &mut payload[1..size]);
            d.count = 2;
            d.last = key;
            d.size = size as u32;
            return Ok(AppendOutcome::Appended);
        }
    }
    parse(d, payload)?;
    let count = d.count as usize;
    if count > 0 && key <= d.last {
        return Err(invalid("appended key not above the last key"));
    }
    if count >= MAX_KEYS {
        return Ok(AppendOutcome::NoRoom);
    }
    let mut buf = [0u32; MAX_KEYS];
    let n = decode_with::<DELTA>(Isa::detect(), d, payload, &mut buf)?;
    buf[n] = key;
    Ok(if store::<DELTA>(d, payload, &buf[..=n])? {
        AppendOutcome::Appended
    } else {
        AppendOutcome::NoRoom
    })
}

/// The in-place appends of `key` (above the last key, `count < MAX_KEYS`) to the frame with
/// header `h`: `true` when one of them took it, `false` (nothing changed) when the block must
/// be re-encoded.
#[inline(always)]
fn append_in_frame<const DELTA: bool>(
    d: &mut Descriptor,
    payload: &mut [u8],
    key: u32,
    h: &Head,
) -> Result<bool> {
    let count = d.count as usize;
    let Head {
        n,
        b,
        base,
        x,
        codes_at,
        clen: old_clen,
        ..
    } = *h;
    let exc_len = 4 * x;
    let v = key - if DELTA { d.last } else { d.start };
    let code = v.wrapping_sub(base);
    if n >= FRAME {
        return Ok(false);
    }
    // Fast path: the new value is a code of the current window; nothing else moves but the
    // exception section (by at most one byte).
    if code <= mask(b) {
        let new_clen = packed_len(n + 1, b);
        let exc_at = codes_at + old_clen;
        let grow = new_clen - old_clen;
        let size = d.size as usize + grow;
        if size > payload.len() {
            return Ok(false);
        }
        if grow > 0 {
            payload.copy_within(exc_at..exc_at + exc_len, exc_at + grow);
            payload[exc_at..exc_at + grow].fill(0);
        }
        // The whole tail of the payload, not only the codes: `bits::set` then writes one word
        // (it changes only the value's bits), where the codes' last bytes alone made it write
        // byte by byte on every append (issue 21).
        bits::set(&mut payload[codes_at..], b, n, code);
        d.count += 1;
        d.last = key;
        d.size = size as u32;
        return Ok(true);
    }
    // The value is an exception. Not for PFOR, whose offsets grow with every append: past the
    // window each of them would become an exception, where a re-encode picks a wider b.
    if !DELTA {
        return Ok(false);
    }
    if x == 0 {
        // The first exception: the header gains its `f` byte (everything after `x` moves up by
        // one), the value goes to the new exception section.
        let new_clen = packed_len(n + 1, b);
        let old_size = d.size as usize;
        let new_size = old_size + 1 + (new_clen - old_clen) + 4;
        // Stay within the worst case of a block this size (callers size buffers by it).
        if new_size > payload.len() || new_size > max_payload_len(count + 1) {
            return Ok(false);
        }
        payload.copy_within(1..old_size, 2);
        payload[0] = 1;
        payload[1] = n as u8;
        let cat = codes_at + 1;
        payload[cat + old_clen..cat + new_clen].fill(0);
        payload[cat + new_clen..cat + new_clen + 4].copy_from_slice(&v.to_le_bytes());
        d.count += 1;
        d.last = key;
        d.size = new_size as u32;
        return Ok(true);
    }
    let Some(le) = last_exception(h, &payload[codes_at..codes_at + old_clen]) else {
        return Ok(false);
    };
    // The list has an exception within reach (2^b positions): link it from the last exception
    // and store the value at the end. Otherwise compulsory exceptions bridge the gap (seed
    // 004): every 2^b positions after the last exception a code becomes a link and its value
    // moves to the end of the exception section, which stays in position order.
    let step = mask(b) as usize + 1;
    let comp = (n - le - 1) / step;
    if comp > 0 && b == 0 {
        return Ok(false);
    }
    let new_clen = packed_len(n + 1, b);
    let grow = new_clen - old_clen;
    let exc_at = codes_at + old_clen;
    let size = d.size as usize + grow + 4 * (comp + 1);
    if x + comp >= FRAME || size > payload.len() || size > max_payload_len(count + 1) {
        return Ok(false);
    }
    if grow > 0 {
        payload.copy_within(exc_at..exc_at + exc_len, exc_at + grow);
        payload[exc_at..exc_at + grow].fill(0);
    }
    let mut end = exc_at + grow + exc_len;
    let mut prev = le;
    for _ in 0..comp {
        let c = prev + step;
        let codes = &mut payload[codes_at..codes_at + new_clen];
        let val =
            base.wrapping_add(bits::get(codes, b, c).ok_or(corrupt("code outside the frame"))?);
        bits::set(codes, b, prev, mask(b));
        payload[end..end + 4].copy_from_slice(&val.to_le_bytes());
        end += 4;
        prev = c;
    }
    if b > 0 {
        // (At b = 0 there are no code bits to set: the uniform-key case, where the calls were
        // 30 instructions of each append.)
        let codes = &mut payload[codes_at..codes_at + new_clen];
        bits::set(codes, b, prev, (n - prev - 1) as u32);
        bits::set(codes, b, n, 0);
    }
    payload[end..end + 4].copy_from_slice(&v.to_le_bytes());
    payload[0] = (x + comp + 1) as u8;
    d.count += 1;
    d.last = key;
    d.size = size as u32;
    Ok(true)
}

fn remove<const DELTA: bool>(
    d: &mut Descriptor,
    payload: &mut [u8],
    slot: usize,
) -> Result<RemoveOutcome> {
    let mut buf = [0u32; MAX_KEYS];
    let n = decode_with::<DELTA>(Isa::detect(), d, payload, &mut buf)?;
    if slot >= n {
        return Err(invalid("slot out of range"));
    }
    buf.copy_within(slot + 1..n, slot);
    let old = d.size;
    Ok(if store::<DELTA>(d, payload, &buf[..n - 1])? {
        RemoveOutcome::Removed { grew: d.size > old }
    } else {
        RemoveOutcome::NoRoom
    })
}

fn max_payload_len(count: usize) -> usize {
    if count <= 1 {
        0
    } else {
        MAX_HEADER + 4 * (count - 1).min(FRAME)
    }
}

// ---------------------------------------------------------------------------------------------
// The two codecs.

macro_rules! pfor_codec {
    ($ty:ident, $id:expr, $delta:expr) => {
        impl $ty {
            /// [`BlockCodec::decode`] on an explicit instruction-set level (levels this CPU
            /// lacks fall back to scalar).
            #[doc(hidden)]
            #[inline]
            pub fn decode_with(
                isa: Isa,
                d: &Descriptor,
                payload: &[u8],
                out: &mut [u32],
            ) -> Result<usize> {
                decode_with::<$delta>(isa, d, payload, out)
            }
        }

        impl BlockCodec for $ty {
            const ID: CodecId = $id;
            const MAX_KEYS: usize = MAX_KEYS;

            fn max_payload_len(count: usize) -> usize {
                max_payload_len(count)
            }

            fn encode(keys: &[u32], out: &mut [u8]) -> Result<Descriptor> {
                encode_keys::<$delta>(keys, out)
            }

            fn encode_below(
                keys: &[u32],
                out: &mut [u8],
                limit: usize,
            ) -> Result<Option<Descriptor>> {
                encode_keys_below::<$delta>(keys, out, limit)
            }

            #[inline]
            fn decode(d: &Descriptor, payload: &[u8], out: &mut [u32]) -> Result<usize> {
                decode_with::<$delta>(Isa::detect(), d, payload, out)
            }

            fn select(d: &Descriptor, payload: &[u8], i: usize) -> Result<u32> {
                select::<$delta>(d, payload, i)
            }

            fn lower_bound(
                d: &Descriptor,
                payload: &[u8],
                key: u32,
            ) -> Result<(usize, Option<u32>)> {
                lower_bound::<$delta>(d, payload, key)
            }

            fn insert(d: &mut Descriptor, payload: &mut [u8], key: u32) -> Result<InsertOutcome> {
                insert::<$delta>(d, payload, key)
            }

            fn append(d: &mut Descriptor, payload: &mut [u8], key: u32) -> Result<AppendOutcome> {
                append::<$delta>(d, payload, key)
            }

            fn remove(
                d: &mut Descriptor,
                payload: &mut [u8],
                slot: usize,
            ) -> Result<RemoveOutcome> {
                remove::<$delta>(d, payload, slot)
            }

            fn fold(d: &Descriptor, payload: &[u8], slots: std::ops::Range<usize>) -> Result<Fold> {
                fold::<$delta>(d, payload, slots)
            }

            fn validate(d: &Descriptor, payload: &[u8]) -> Result<()> {
                validate::<$delta>(d, payload)
            }
        }
    };
}

pfor_codec!(Pfor, CodecId::Pfor, false);
pfor_codec!(PforDelta, CodecId::PforDelta, true);

#[cfg(test)]
mod tests {
    use super::*;

    /// A block of one key, as an append starts from.
    fn one_key(k: u32) -> Descriptor {
        Descriptor {
            start: k,
            count: 1,
            last: k,
            size: 0,
            bits: 0,
        }
    }

    /// Ascending appends of mostly small deltas with rare jumps (the B+-tree's loads) take the
    /// in-place paths, compulsory exceptions included; every step decodes to the model and
    /// validates, and stays within `max_payload_len`.
    #[test]
    fn appends_with_far_exceptions_match_the_model() {
        for seed in 0..300u64 {
            let mut rng = fastrand::Rng::with_seed(seed);
            let mut keys = vec![rng.u32(0..1000)];
            let mut d = one_key(keys[0]);
            let mut payload = vec![0u8; max_payload_len(MAX_KEYS)];
            let jump = 1 << rng.u32(3..20);
            let every = rng.usize(2..40);
            while keys.len() < MAX_KEYS {
                let delta = if rng.usize(0..every) == 0 {
                    rng.u32(jump..jump * 2)
                } else {
                    rng.u32(1..3)
                };
                let k = keys[keys.len() - 1] + delta;
                match append::<true>(&mut d, &mut payload, k).unwrap() {
                    AppendOutcome::Appended => keys.push(k),
                    AppendOutcome::NoRoom => break,
                }
                assert!(d.size as usize <= max_payload_len(keys.len()));
                let mut out = [0u32; MAX_KEYS];
                let n = decode_with::<true>(Isa::Scalar, &d, &payload, &mut out).unwrap();
                assert_eq!(&out[..n], &keys[..], "seed {seed}");
            }
            assert_eq!(keys.len(), MAX_KEYS, "seed {seed}: an append found no room");
        }
    }

    /// The seed of a random test: `SEED` from the environment, else a fresh one (printed).
    fn seed() -> u64 {
        let seed = std::env::var("SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| fastrand::u64(..));
        println!("SEED={seed}");
        seed
    }

    /// The next delta of one of the test's key families: spread (uniform keys: deltas up to
    /// twice a mean of 2^0..2^24), one fixed width `w` (0..=32; at 0 the same delta every
    /// time), small deltas with rare jumps, or one constant delta with a rare other one.
    fn next_delta(rng: &mut fastrand::Rng, family: u32, w: u32, at_end: bool) -> u32 {
        let jump = at_end && rng.bool();
        match family {
            0 => 1 + rng.u32(..2 << w.min(24)),
            1 if w == 0 => 7,
            1 => rng.u32(1 << (w - 1)..=mask(w)),
            2 if jump || rng.usize(..20) == 0 => rng.u32(1 << 16..1 << 28),
            2 => rng.u32(1..4),
            _ if jump || rng.usize(..30) == 0 => rng.u32(8..1 << 20),
            _ => 3,
        }
    }

    /// In-place appends against the plain encoder, PFOR and PFOR-DELTA: keys of every family
    /// and width (0..=32), from a block of one key to a full one (or until the next key leaves
    /// u32), jumps at the block's end included. After every append the block decodes to the
    /// keys the plain encoder is given, validates, stays within `max_payload_len`, and
    /// `last_exception` agrees with a walk of the list (its `b = 0` shortcut included).
    #[test]
    fn appends_match_the_plain_encoder() {
        fn run<const DELTA: bool>(rng: &mut fastrand::Rng, family: u32, w: u32) -> usize {
            let mut keys = vec![rng.u32(..1 << 20)];
            let mut d = one_key(keys[0]);
            let mut payload = vec![0u8; max_payload_len(MAX_KEYS)];
            while keys.len() < MAX_KEYS {
                let delta = next_delta(rng, family, w, keys.len() + 4 >= MAX_KEYS);
                let Some(k) = keys[keys.len() - 1].checked_add(delta) else {
                    break;
                };
                match append::<DELTA>(&mut d, &mut payload, k).unwrap() {
                    AppendOutcome::Appended => keys.push(k),
                    AppendOutcome::NoRoom => panic!("no room for key {} of a block", keys.len()),
                }
                let what = format!("delta {DELTA} family {family} width {w} keys {keys:?}");
                assert!(d.size as usize <= max_payload_len(keys.len()), "{what}");
                validate::<DELTA>(&d, &payload).unwrap_or_else(|e| panic!("{e} {what}"));
                let mut out = [0u32; MAX_KEYS];
                let n = decode_with::<DELTA>(Isa::Scalar, &d, &payload, &mut out).unwrap();
                let mut plain = vec![0u8; max_payload_len(MAX_KEYS)];
                let pd = encode_keys::<DELTA>(&keys, &mut plain).unwrap();
                let mut want = [0u32; MAX_KEYS];
                let m = decode_with::<DELTA>(Isa::Scalar, &pd, &plain, &mut want).unwrap();
                assert_eq!(&out[..n], &want[..m], "{what}");
                assert_eq!(&out[..n], &keys[..], "{what}");
                if keys.len() == 2 {
                    // The second key's frame is the encoder's, byte for byte.
                    assert_eq!(d, pd, "{what}");
                    assert_eq!(payload[..pd.size as usize], plain[..pd.size as usize]);
                }
                if let Some(h) = head(&d, &payload) {
                    let f = parse(&d, &payload).unwrap().unwrap();
                    let walked = (f.x > 0)
                        .then(|| {
                            let mut p = f.first;
                            for _ in 1..f.x {
                                p += f.code(p) as usize + 1;
                            }
                            p
                        })
                        .filter(|&p| p < f.n);
                    let codes = &payload[h.codes_at..h.codes_at + h.clen];
                    assert_eq!(last_exception(&h, codes), walked, "{what}");
                }
            }
            keys.len()
        }
        let mut rng = fastrand::Rng::with_seed(seed());
        let mut full = 0;
        for round in 0..400u32 {
            let family = round % 4;
            let w = rng.u32(0..=32);
            full += usize::from(run::<true>(&mut rng, family, w) == MAX_KEYS);
            full += usize::from(run::<false>(&mut rng, family, w) == MAX_KEYS);
        }
        assert!(full > 400, "only {full} of 800 blocks filled up");
    }

    /// `head` reads what `parse` reads, and refuses every block `parse` refuses: valid frames of
    /// every width, then each with one byte or descriptor field damaged.
    #[test]
    fn head_agrees_with_parse() {
        let mut rng = fastrand::Rng::with_seed(seed());
        for round in 0..3000 {
            let n = rng.usize(1..MAX_KEYS);
            let w = rng.u32(0..=32);
            let mut keys = vec![rng.u32(..1000)];
            while keys.len() < n {
                let delta = next_delta(&mut rng, round % 4, w, false);
                match keys[keys.len() - 1].checked_add(delta) {
                    Some(k) => keys.push(k),
                    None => break,
                }
            }
            let mut payload = vec![0u8; max_payload_len(MAX_KEYS) + 8];
            let mut d = encode_keys::<true>(&keys, &mut payload).unwrap();
            if round % 2 == 1 {
                match rng.usize(..6) {
                    0 => d.count = rng.u32(..=MAX_KEYS as u32 + 2),
                    1 => d.bits = rng.u8(..40),
                    2 => d.size = rng.u32(..=payload.len() as u32 + 2),
                    3 => d.last = rng.u32(..),
                    _ => {
                        let i = rng.usize(..(d.size as usize).max(1));
                        payload[i] = rng.u8(..);
                    }
                }
            }
            match (head(&d, &payload), parse(&d, &payload)) {
                (Some(h), Ok(Some(f))) => {
                    assert_eq!(
                        (h.n, h.b, h.base, h.x, h.first, h.codes_at, h.clen),
                        (f.n, f.b, f.base, f.x, f.first, f.codes_at, f.codes.len()),
                        "round {round}"
                    );
                }
                (None, Err(_) | Ok(None)) => {}
                (h, f) => panic!("round {round}: head {h:?}, parse {f:?}"),
            }
        }
    }

    #[test]
    fn compulsory_exceptions_keep_the_list_connected() {
        // b = 1 window {0, 1}; outliers 200 at positions 0 and 10 force compulsory exceptions
        // at 2, 4, 6, 8 (distance <= 2^1).
        let mut v = [1u32; 12];
        v[0] = 200;
        v[10] = 200;
        assert_eq!(count_exceptions(&v, 1, 0), 6);
        assert_eq!(count_exceptions(&v, 4, 0), 2);
        assert_eq!(count_exceptions(&v, 0, 1), 2 + 9);
    }

    /// The seed 004 rule by brute force: every width, its longest window (first one), the exact
    /// size with compulsory exceptions; the smallest wins, ties to the wider width.
    fn choose_reference(v: &[u32]) -> (u32, u32) {
        let n = v.len();
        let mut s = v.to_vec();
        s.sort_unstable();
        let full = width(s[n - 1] - s[0]);
        let (mut best, mut best_size) = ((full, s[0]), frame_size(n, full, s[0], 0));
        for b in (0..full).rev() {
            let m = mask(b);
            let len = (1..=n)
                .filter(|&l| (0..=n - l).any(|i| s[i + l - 1] - s[i] <= m))
                .max()
                .unwrap();
            let base = s[window_start(&s, len, m)];
            let size = frame_size(n, b, base, count_exceptions(v, b, base));
            if size < best_size {
                (best, best_size) = ((b, base), size);
            }
        }
        best
    }

    #[test]
    fn choose_follows_the_rule() {
        let mut rng = fastrand::Rng::with_seed(11);
        for round in 0..5000 {
            let n = rng.usize(1..=FRAME);
            let b = rng.u32(0..=24);
            let mut v: Vec<u32> = (0..n)
                .map(|_| match round % 5 {
                    0 => rng.u32(..1 << b),
                    4 => {
                        // one width class with a few small values (a split delta)
                        if rng.u8(..40) == 0 {
                            rng.u32(..1 << b)
                        } else {
                            (1 << b) | rng.u32(..1 << b)
                        }
                    }
                    1 => (1 << b) | rng.u32(..1 << b),
                    2 => rng.u32(..4),
                    _ => {
                        if rng.u8(..10) == 0 {
                            rng.u32(..)
                        } else {
                            rng.u32(..1 << b)
                        }
                    }
                })
                .collect();
            // PFOR-DELTA: deltas as they come.
            assert_eq!(choose(&v, false), choose_reference(&v), "deltas {v:?}");
            // PFOR: distinct sorted offsets.
            v.sort_unstable();
            v.dedup();
            assert_eq!(choose(&v, true), choose_reference(&v), "offsets {v:?}");
        }
    }

    #[test]
    fn min_range_matches_scalar_on_every_isa_and_sort_small_sorts() {
        let seed = std::env::var("SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| fastrand::u64(..));
        println!("SEED={seed}");
        let mut rng = fastrand::Rng::with_seed(seed);
        for round in 0..300 {
            let n = rng.usize(1..=FRAME);
            let top = 1u32 << rng.u32(0..=20);
            let mut s: Vec<u32> = (0..n)
                .map(|_| match round % 3 {
                    0 => rng.u32(..),
                    1 => rng.u32(..top),
                    _ => u32::MAX - rng.u32(..1000),
                })
                .collect();
            let mut want_sorted = s.clone();
            want_sorted.sort_unstable();
            sort_small(&mut s);
            assert_eq!(s, want_sorted);
            for len in 1..=n {
                let want = (0..=n - len).map(|i| s[i + len - 1] - s[i]).min().unwrap();
                assert_eq!(min_range_body(&s, len), want);
                for isa in Isa::available() {
                    assert_eq!(min_range(isa, &s, len), want, "isa={isa} len={len}");
                }
            }
        }
    }

    #[test]
    fn choose_prefers_exceptions_for_outliers() {
        // 127 small deltas and one huge one: PFOR-DELTA keeps b small with one exception.
        let mut v = [3u32; 128];
        for (i, x) in v.iter_mut().enumerate() {
            *x = 1 + (i as u32 % 7);
        }
        v[77] = 1 << 30;
        let (b, base) = choose(&v, false);
        assert_eq!((b, base), (3, 1));
        let mut out = [0u8; MAX_HEADER + 4 * FRAME];
        let (_, size) = write_frame(&v, false, &mut out).unwrap();
        assert_eq!(size, frame_size(128, 3, 1, 1));
    }
}
