//! Rice: Golomb-Rice coding of a block's *minority gaps*, either the gaps between its keys or,
//! where the keys are dense, the gaps between the values the block lacks.
//!
//! ```text
//! Descriptor { start, count <= 511, last, bits = k | mode << 5, size = ceil(coded bits / 8) }
//! R = last - start + 1 values in [start, last]; M = R - count of them are missing
//! present mode (mode 0):     n - 1 = count - 1 gaps g_i = key_i - key_{i-1}   (i = 1 .. count-1)
//! complement mode (mode 1):  M gaps g_1 = m_1 - start, g_j = m_j - m_{j-1}, where
//!                            start < m_1 < .. < m_M < last are the values missing from the block
//! each gap g >= 1 as v = g - 1: the k low bits of v, then q = v >> k zero bits and a one bit;
//! a bit stream LSB first (bit i of the payload is bit i % 8 of byte i / 8), zero after the end
//! ```
//!
//! The remainder comes before the unary quotient so that every code ends in its one bit: the
//! highest set bit of the last byte ends the stream, and `append` writes after it without a
//! decode.
//!
//! Golomb-Rice coding is Golomb's code ("Run-length encodings", S. W. Golomb, IEEE Trans. Inf.
//! Theory 12(3), 1966) with a power-of-two divisor 2^k (R. F. Rice, "Some practical universal
//! noiseless coding techniques", JPL Publication 79-22, 1979). It is not one of the codecs of
//! the papers tersedb follows ("Upscaledb: Efficient Integer-Key Compression in a Key-Value
//! Store using SIMD Instructions", section 3; "Stream VByte: Faster Byte-Oriented Integer
//! Compression"; "Super-Scalar RAM-CPU Cache Compression"): it exists for issue 21, keys that
//! are clustered and dense. There a bit-packed block pays its 12-byte descriptor (at most 257
//! keys per block) plus at least one bit per key, while a Roaring bitmap pays about one bit per
//! *possible* value, under a bit per key once more than half the values are present. Coding the
//! gaps between the missing values instead of the present ones makes a block of nearly
//! consecutive keys cost a few bits per *missing* value, and a Rice block holds up to 511 keys
//! (all that the engine's 9-bit count field holds), so its descriptor costs half as much per key.
//!
//! Both modes follow from `count`, `start` and `last` (in the descriptor) plus the mode flag and
//! `k` in `bits` (bit 5 and bits 0..5; the engine's block index keeps 6 bits of it). The encoder
//! takes the mode and `k` (0..=31) of fewest bits; with `k = 31` a gap costs at most 33 bits, so
//! a block of `count` keys needs at most `ceil(33 * (count - 1) / 8)` bytes. The cost of `k` is
//! `sum(v >> k) + c * (1 + k)` over `c` values, a convex function of `k` (its step
//! `c - sum(ceil((v >> k) / 2))` never decreases), so the best `k` is found by walking from an
//! estimate. Complement mode is costed from the runs of missing values without listing them.
//!
//! Decoding reads 64 bits at a time and takes the unary part with `trailing_zeros`. Complement
//! mode emits the runs between missing values as sequential fills; `select` and `lower_bound`
//! there walk only the missing values (the key at slot `i` is `start + i` plus the missing
//! values below it), and `fold` is arithmetic: the sum of `[min, max]` minus the missing values
//! in it. Insert, append and remove decode into a stack buffer, change it and re-encode (the
//! mode and `k` may change); `NoRoom` leaves the block unchanged. `append` keeps the block's
//! mode and `k` while the new codes are short (a quotient of at most 16, at most 5 new missing
//! values): a key one past `last` in complement mode changes only the descriptor; other short
//! appends write their codes after the stream's end (the complement's one walk of the missing
//! values finds the last of them). Where the block's count becomes a power of two or a multiple
//! of 32, and whenever the codes would be long, append re-encodes with the best mode and `k`.

use crate::rewrite;
use crate::{
    AppendOutcome, BlockCodec, CodecError, CodecId, Descriptor, Fold, InsertOutcome, RemoveOutcome,
    Result,
};

/// The Golomb-Rice codec (zero-sized; see the module docs for the format).
#[derive(Clone, Copy, Debug, Default)]
pub struct Rice;

/// Most keys of a block, start key included: the most the engine's 9-bit descriptor count
/// holds. Twice the other codecs' 257 halves the descriptors' share of a dense block's bytes
/// (12 bytes per block, 0.047 bytes/key at 257 keys), the bulk of Rice's gap to Roaring on
/// clustered keys (issue 21).
pub const MAX_KEYS: usize = 511;
const MAX: usize = MAX_KEYS;
/// Most bits a gap takes with the best `k` (`k = 31`: a quotient of at most 1).
const WORST_BITS: usize = 33;
/// Bit of `Descriptor::bits` that selects complement mode.
pub const COMPLEMENT: u8 = 1 << 5;
/// Bits of `Descriptor::bits` holding `k`.
const K_MASK: u8 = COMPLEMENT - 1;

fn corrupt(what: &'static str) -> CodecError {
    CodecError::Corrupt { what }
}

fn invalid(what: &'static str) -> CodecError {
    CodecError::InvalidInput { what }
}

/// Which gaps a block codes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// The gaps between consecutive keys.
    Present,
    /// The gaps between the values missing from `[start, last]`.
    Complement,
}

/// What the descriptor says about a block of at least two keys.
#[derive(Clone, Copy, Debug)]
struct Shape {
    mode: Mode,
    k: u32,
    /// Values coded: `count - 1` (present) or `M` (complement).
    coded: usize,
}

/// Cheap descriptor checks; `None` for blocks of at most one key (no payload).
#[inline]
fn check(d: &Descriptor, payload: &[u8]) -> Result<Option<Shape>> {
    if !crate::check_head(d, MAX, "count exceeds 511")? {
        return Ok(None);
    }
    let count = d.count as usize;
    if d.bits > COMPLEMENT | K_MASK {
        return Err(corrupt("Rice bits beyond the mode flag and k"));
    }
    let size = d.size as usize;
    if size > payload.len() {
        return Err(corrupt("size exceeds payload"));
    }
    let k = (d.bits & K_MASK) as u32;
    let (mode, coded) = if d.bits & COMPLEMENT == 0 {
        (Mode::Present, count - 1)
    } else {
        let range = (d.last - d.start) as u64 + 1;
        if range < count as u64 {
            return Err(corrupt("more keys than values in [start, last]"));
        }
        (Mode::Complement, (range - count as u64) as usize)
    };
    // Every coded value takes at least one bit: bounds the work of every walk by `size`.
    if coded > size * 8 {
        return Err(corrupt("more coded gaps than payload bits"));
    }
    Ok(Some(Shape { mode, k, coded }))
}

/// LSB-first bit reader over a block's `size` payload bytes; reads past the end see zeros and
/// are caught by the position check. `buf` holds the `nbuf` bits from `pos` (zeros above them),
/// refilled from the bytes when fewer than 40 are left: a value then costs a shift, a
/// `trailing_zeros` and a shift on a register, not a load from `pos` (the dependency chain of
/// a variable-length code).
struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
    end: usize,
    buf: u64,
    nbuf: u32,
}

impl<'a> Reader<'a> {
    #[inline]
    fn new(data: &'a [u8]) -> Self {
        Reader {
            data,
            pos: 0,
            end: data.len() * 8,
            buf: 0,
            nbuf: 0,
        }
    }

    /// The 64 bits from `pos` (at least 57 of them meaningful), zero past the data.
    #[inline(always)]
    fn peek(&self) -> u64 {
        let b = self.pos >> 3;
        let w = match self.data.get(b..).and_then(|s| s.first_chunk::<8>()) {
            Some(c) => u64::from_le_bytes(*c),
            None => {
                let mut t = [0u8; 8];
                let tail = self.data.get(b..).unwrap_or_default();
                t[..tail.len()].copy_from_slice(tail);
                u64::from_le_bytes(t)
            }
        };
        w >> (self.pos & 7)
    }

    /// One value `v = (q << k) | low` (k <= 31): `low` first, then `q` in unary.
    #[inline(always)]
    fn read(&mut self, k: u32) -> Result<u32> {
        if self.nbuf < 40 {
            self.buf = self.peek();
            self.nbuf = 64 - (self.pos & 7) as u32;
        }
        let low = self.buf & ((1u64 << k) - 1);
        let t = self.buf >> k;
        let tz = t.trailing_zeros();
        let n = k + tz + 1;
        if n <= self.nbuf {
            // Remainder, quotient and stop bit all in the buffer (the common case); tz < 64.
            self.buf = (t >> tz) >> 1;
            self.nbuf -= n;
            self.pos += n as usize;
            if self.pos > self.end {
                return Err(corrupt("Rice code past the end of the payload"));
            }
            let v = ((tz as u64) << k) | low;
            return u32::try_from(v).map_err(|_| corrupt("Rice value beyond 32 bits"));
        }
        self.nbuf = 0;
        self.read_slow(k, low)
    }

    /// The unary part of a value that crosses a 64-bit window (its `low` bits already read).
    #[cold]
    fn read_slow(&mut self, k: u32, low: u64) -> Result<u32> {
        self.pos += k as usize;
        let mut q = 0u64;
        loop {
            if self.pos >= self.end {
                return Err(corrupt("unary run past the end of the payload"));
            }
            let avail = 64 - (self.pos & 7) as u32;
            let w = self.peek();
            if w == 0 {
                q += avail as u64;
                self.pos += avail as usize;
            } else {
                let tz = w.trailing_zeros();
                q += tz as u64;
                self.pos += tz as usize + 1;
                break;
            }
        }
        if self.pos > self.end {
            return Err(corrupt("Rice code past the end of the payload"));
        }
        if q > (u32::MAX >> k) as u64 {
            return Err(corrupt("Rice value beyond 32 bits"));
        }
        Ok(((q << k) | low) as u32)
    }
}

/// LSB-first bit writer; the caller has checked that the bits fit `out`.
struct Writer<'a> {
    out: &'a mut [u8],
    acc: u64,
    nacc: u32,
    at: usize,
}

impl<'a> Writer<'a> {
    fn new(out: &'a mut [u8]) -> Self {
        Writer {
            out,
            acc: 0,
            nacc: 0,
            at: 0,
        }
    }

    /// The low `n <= 32` bits of `v`.
    #[inline(always)]
    fn put(&mut self, v: u64, n: u32) {
        self.acc |= v << self.nacc;
        self.nacc += n;
        while self.nacc >= 8 {
            if let Some(b) = self.out.get_mut(self.at) {
                *b = self.acc as u8;
            }
            self.at += 1;
            self.acc >>= 8;
            self.nacc -= 8;
        }
    }

    #[inline(always)]
    fn value(&mut self, v: u32, k: u32) {
        self.put(v as u64 & ((1u64 << k) - 1), k);
        let mut q = (v >> k) as u64;
        while q >= 32 {
            self.put(0, 32);
            q -= 32;
        }
        self.put(1 << q, q as u32 + 1);
    }

    /// Flushes the partial last byte (zero above the last bit); returns the bytes written.
    fn finish(mut self) -> usize {
        if self.nacc > 0 {
            if let Some(b) = self.out.get_mut(self.at) {
                *b = self.acc as u8;
            }
            self.at += 1;
        }
        self.at
    }
}

/// Bits of `vals` plus `zeros` values of 0 at `k`: `sum(v >> k)` unary zeros, and a stop bit
/// and `k` remainder bits per value.
#[inline]
fn cost(vals: &[u32], zeros: u64, k: u32) -> u64 {
    let q: u64 = vals.iter().map(|&v| (v >> k) as u64).sum();
    q + (vals.len() as u64 + zeros) * (1 + k as u64)
}

/// The `k` of fewest bits for `vals` plus `zeros` more values of 0, and those bits. The cost is
/// convex in `k` (module docs): walk from the mean's width to the minimum.
fn best_k(vals: &[u32], zeros: u64) -> (u32, u64) {
    let c = vals.len() as u64 + zeros;
    if c == 0 {
        return (0, 0);
    }
    let sum: u64 = vals.iter().map(|&v| v as u64).sum();
    let mean = sum / c;
    let mut k = (64 - mean.leading_zeros()).saturating_sub(1).min(31);
    let mut best = cost(vals, zeros, k);
    while k > 0 {
        let down = cost(vals, zeros, k - 1);
        if down >= best {
            break;
        }
        (k, best) = (k - 1, down);
    }
    while k < 31 {
        let up = cost(vals, zeros, k + 1);
        if up >= best {
            break;
        }
        (k, best) = (k + 1, up);
    }
    (k, best)
}

/// The gaps of a block, as values `g - 1`: the present gaps, and the complement's runs (the
/// first gap of each run of missing values; the rest of a run are gaps of 1, value 0).
struct Gaps {
    present: [u32; MAX - 1],
    n: usize,
    firsts: [u32; MAX - 1],
    runs: usize,
    /// Missing values after the first of their run (each a value 0).
    ones: u64,
}

impl Gaps {
    fn of(keys: &[u32]) -> Gaps {
        let mut g = Gaps {
            present: [0; MAX - 1],
            n: keys.len() - 1,
            firsts: [0; MAX - 1],
            runs: 0,
            ones: 0,
        };
        let mut prev_missing = keys[0];
        for (i, w) in keys.windows(2).enumerate() {
            let d = w[1] - w[0];
            g.present[i] = d - 1;
            if d >= 2 {
                // First missing value w[0] + 1; its gap from the previous missing value.
                g.firsts[g.runs] = w[0] - prev_missing;
                g.runs += 1;
                g.ones += (d - 2) as u64;
                prev_missing = w[1] - 1;
            }
        }
        g
    }
}

/// Bits of `keys` coded in `mode` at `k`.
fn bits_for(g: &Gaps, mode: Mode, k: u32) -> u64 {
    match mode {
        Mode::Present => cost(&g.present[..g.n], 0, k),
        Mode::Complement => cost(&g.firsts[..g.runs], g.ones, k),
    }
}

/// Checks `keys` for [`BlockCodec::encode`].
fn check_keys(keys: &[u32]) -> Result<()> {
    if keys.len() > MAX {
        return Err(invalid("more than 511 keys"));
    }
    if keys.windows(2).fold(false, |bad, w| bad | (w[1] <= w[0])) {
        return Err(invalid("keys not strictly increasing"));
    }
    Ok(())
}

/// Writes `keys` (at least two) in `mode` at `k`, `bits` of them, into `out`.
fn write(
    keys: &[u32],
    g: &Gaps,
    mode: Mode,
    k: u32,
    bits: u64,
    out: &mut [u8],
) -> Result<Descriptor> {
    let size = bits.div_ceil(8);
    if size > out.len() as u64 {
        return Err(CodecError::NoRoom {
            needed: usize::try_from(size).unwrap_or(usize::MAX),
            available: out.len(),
        });
    }
    let mut w = Writer::new(out);
    match mode {
        Mode::Present => {
            for &v in &g.present[..g.n] {
                w.value(v, k);
            }
        }
        Mode::Complement => {
            let mut run = 0;
            for win in keys.windows(2) {
                let d = win[1] - win[0];
                if d >= 2 {
                    w.value(g.firsts[run], k);
                    run += 1;
                    for _ in 0..d - 2 {
                        w.value(0, k);
                    }
                }
            }
        }
    }
    let written = w.finish();
    debug_assert_eq!(written as u64, size);
    let (Some(&start), Some(&last)) = (keys.first(), keys.last()) else {
        return Ok(Descriptor::default());
    };
    Ok(Descriptor {
        start,
        count: keys.len() as u32,
        last,
        size: size as u32,
        bits: k as u8
            | if mode == Mode::Complement {
                COMPLEMENT
            } else {
                0
            },
    })
}

/// Descriptor of zero or one key.
fn tiny(keys: &[u32]) -> Descriptor {
    match keys.first() {
        Some(&k) => Descriptor {
            start: k,
            count: 1,
            last: k,
            size: 0,
            bits: 0,
        },
        None => Descriptor::default(),
    }
}

impl Rice {
    /// [`BlockCodec::encode`] in the given mode and `k` (`<= 31`) instead of the best ones:
    /// `NoRoom` when that takes more than `out` (complement mode of a sparse block takes about a
    /// bit per missing value). For tests and format comparisons.
    pub fn encode_as(keys: &[u32], out: &mut [u8], mode: Mode, k: u32) -> Result<Descriptor> {
        check_keys(keys)?;
        if k > 31 {
            return Err(invalid("Rice k above 31"));
        }
        if keys.len() <= 1 {
            return Ok(tiny(keys));
        }
        let g = Gaps::of(keys);
        write(keys, &g, mode, k, bits_for(&g, mode, k), out)
    }

    /// The mode a descriptor says (present for blocks of at most one key).
    pub fn mode(d: &Descriptor) -> Mode {
        if d.count > 1 && d.bits & COMPLEMENT != 0 {
            Mode::Complement
        } else {
            Mode::Present
        }
    }

    /// SUM of a whole block: arithmetic in complement mode, a decode otherwise. `None` when the
    /// block does not parse (the caller decodes and reports).
    pub fn block_sum(d: &Descriptor, payload: &[u8]) -> Option<u64> {
        Self::fold(d, payload, 0..d.count as usize)
            .ok()
            .map(|f| f.sum)
    }
}

/// Decodes a block of at least two keys into `out[..count]`; returns the bit position after the
/// last code.
fn decode_into(d: &Descriptor, s: Shape, payload: &[u8], out: &mut [u32]) -> Result<usize> {
    let count = d.count as usize;
    let out = out
        .get_mut(..count)
        .ok_or(invalid("output shorter than count"))?;
    let mut r = Reader::new(&payload[..d.size as usize]);
    let (start, last) = (d.start as u64, d.last as u64);
    out[0] = d.start;
    match s.mode {
        Mode::Present => {
            let mut key = start;
            for o in out[1..].iter_mut() {
                key += r.read(s.k)? as u64 + 1;
                if key > last {
                    return Err(corrupt("key beyond last"));
                }
                *o = key as u32;
            }
            if key != last {
                return Err(corrupt("last key mismatch"));
            }
        }
        Mode::Complement => {
            let (mut at, mut next) = (1usize, start + 1);
            for _ in 0..s.coded {
                // The missing value: one past the previous (next - 1) plus the code.
                let m = next + r.read(s.k)? as u64;
                if m >= last {
                    return Err(corrupt("missing value not inside (start, last)"));
                }
                let run = (m - next) as usize;
                let dst = out
                    .get_mut(at..at + run)
                    .ok_or(corrupt("more keys than count"))?;
                for (j, o) in dst.iter_mut().enumerate() {
                    *o = (next + j as u64) as u32;
                }
                at += run;
                next = m + 1;
            }
            let run = (last + 1 - next) as usize;
            if at + run != count {
                return Err(corrupt("keys disagree with count"));
            }
            for (j, o) in out[at..].iter_mut().enumerate() {
                *o = (next + j as u64) as u32;
            }
        }
    }
    Ok(r.pos)
}

/// Walks the missing values of a complement block in order, calling `f(m)` until it says stop.
#[inline]
fn walk_missing(
    d: &Descriptor,
    s: Shape,
    payload: &[u8],
    mut f: impl FnMut(u64) -> bool,
) -> Result<()> {
    let mut r = Reader::new(&payload[..d.size as usize]);
    let mut next = d.start as u64 + 1;
    for _ in 0..s.coded {
        let m = next + r.read(s.k)? as u64;
        if m >= d.last as u64 {
            return Err(corrupt("missing value not inside (start, last)"));
        }
        if !f(m) {
            break;
        }
        next = m + 1;
    }
    Ok(())
}

/// The key at slot `i` (`0 < i < count`) of a block of at least two keys.
fn select_in(d: &Descriptor, s: Shape, payload: &[u8], i: usize) -> Result<u32> {
    match s.mode {
        Mode::Present => {
            let mut r = Reader::new(&payload[..d.size as usize]);
            let mut key = d.start as u64;
            for _ in 0..i {
                key += r.read(s.k)? as u64 + 1;
            }
            if key > d.last as u64 {
                return Err(corrupt("key beyond last"));
            }
            Ok(key as u32)
        }
        Mode::Complement => {
            // The key at slot i is start + i plus the missing values below it.
            let mut v = d.start as u64 + i as u64;
            walk_missing(d, s, payload, |m| {
                if m <= v {
                    v += 1;
                    true
                } else {
                    false
                }
            })?;
            if v > d.last as u64 {
                return Err(corrupt("key beyond last"));
            }
            Ok(v as u32)
        }
    }
}

/// The bit position after the last code of a block's `size` bytes: after the highest set bit
/// (every code ends in a one bit).
fn end_bit(payload: &[u8], size: usize) -> Result<usize> {
    if size == 0 {
        return Ok(0);
    }
    match payload.get(size - 1) {
        Some(&b) if b != 0 => Ok(8 * size - b.leading_zeros() as usize),
        _ => Err(corrupt("last payload byte is zero")),
    }
}

/// ORs the low `n <= 48` bits of `code` into `payload` at bit `pos` (the caller zeroed them).
fn or_bits(payload: &mut [u8], pos: usize, code: u64, n: u32) {
    let sh = (pos & 7) as u32;
    let c = code << sh;
    for (i, b) in payload[pos >> 3..(pos + n as usize).div_ceil(8)]
        .iter_mut()
        .enumerate()
    {
        *b |= (c >> (8 * i)) as u8;
    }
}

/// Longest quotient `append` writes without re-choosing `k`: the code is the one the encoder
/// writes at this `k`; only a `k` far too small for the new gaps makes quotients long.
const APPEND_MAX_Q: u32 = 16;

/// The code of `v` at `k` as bits (LSB first) and its length, if the quotient is at most
/// [`APPEND_MAX_Q`].
fn short_code(v: u32, k: u32) -> Option<(u64, u32)> {
    let q = v >> k;
    (q <= APPEND_MAX_Q).then(|| {
        let low = v as u64 & ((1u64 << k) - 1);
        (low | 1u64 << (k + q), k + q + 1)
    })
}

/// `append`'s fast path for a block of at least two keys in mode `s`: writes the new codes
/// after the stream (mode and `k` unchanged) when they are short and fit. `false`: nothing
/// changed, re-encode instead.
fn append_fast(desc: &mut Descriptor, s: Shape, payload: &mut [u8], key: u32) -> Result<bool> {
    let size = desc.size as usize;
    let mut codes = [(0u64, 0u32); 5];
    let ncodes;
    let end;
    match s.mode {
        Mode::Present => {
            let Some(c) = short_code(key - desc.last - 1, s.k) else {
                return Ok(false);
            };
            codes[0] = c;
            ncodes = 1;
            end = end_bit(payload, size)?;
        }
        Mode::Complement => {
            let new_missing = key - desc.last - 1;
            if new_missing == 0 {
                desc.count += 1;
                desc.last = key;
                return Ok(true);
            }
            if new_missing as usize > codes.len() {
                return Ok(false);
            }
            // The last missing value (start when there is none), and where the stream ends.
            let mut prev = desc.start as u64;
            walk_missing(desc, s, payload, |m| {
                prev = m;
                true
            })?;
            // The first new missing value is last + 1: value (last + 1) - prev - 1.
            let Some(c) = short_code((desc.last as u64 - prev) as u32, s.k) else {
                return Ok(false);
            };
            codes[0] = c;
            for c in &mut codes[1..new_missing as usize] {
                *c = (1u64 << s.k, s.k + 1);
            }
            ncodes = new_missing as usize;
            end = end_bit(payload, size)?;
        }
    }
    let bits: usize = codes[..ncodes].iter().map(|c| c.1 as usize).sum();
    let new_size = (end + bits).div_ceil(8);
    if new_size > payload.len() || end.div_ceil(8) != size {
        return Ok(false);
    }
    payload[size..new_size].fill(0);
    let mut at = end;
    for &(c, n) in &codes[..ncodes] {
        or_bits(payload, at, c, n);
        at += n as usize;
    }
    desc.count += 1;
    desc.last = key;
    desc.size = new_size as u32;
    Ok(true)
}

impl BlockCodec for Rice {
    const ID: CodecId = CodecId::Rice;
    const MAX_KEYS: usize = MAX;

    fn max_payload_len(count: usize) -> usize {
        (WORST_BITS * count.saturating_sub(1)).div_ceil(8)
    }

    fn encode(keys: &[u32], out: &mut [u8]) -> Result<Descriptor> {
        check_keys(keys)?;
        if keys.len() <= 1 {
            return Ok(tiny(keys));
        }
        let g = Gaps::of(keys);
        // Every code takes at least a bit: a mode whose best is below the other's code count
        // wins without costing the other (the choice stays: complement only when strictly
        // fewer bits). Dense blocks skip the present gaps' passes, sparse ones the complement's.
        let (present, missing) = (g.n as u64, g.runs as u64 + g.ones);
        let (mode, k, bits) = if missing <= present {
            let (kc, bc) = best_k(&g.firsts[..g.runs], g.ones);
            if bc < present {
                (Mode::Complement, kc, bc)
            } else {
                let (kp, bp) = best_k(&g.present[..g.n], 0);
                if bc < bp {
                    (Mode::Complement, kc, bc)
                } else {
                    (Mode::Present, kp, bp)
                }
            }
        } else {
            let (kp, bp) = best_k(&g.present[..g.n], 0);
            if missing >= bp {
                (Mode::Present, kp, bp)
            } else {
                let (kc, bc) = best_k(&g.firsts[..g.runs], g.ones);
                if bc < bp {
                    (Mode::Complement, kc, bc)
                } else {
                    (Mode::Present, kp, bp)
                }
            }
        };
        write(keys, &g, mode, k, bits, out)
    }

    fn decode(desc: &Descriptor, payload: &[u8], out: &mut [u32]) -> Result<usize> {
        let count = desc.count as usize;
        let Some(s) = check(desc, payload)? else {
            if out.len() < count {
                return Err(invalid("output shorter than count"));
            }
            if count == 1 {
                out[0] = desc.start;
            }
            return Ok(count);
        };
        decode_into(desc, s, payload, out)?;
        Ok(count)
    }

    fn select(desc: &Descriptor, payload: &[u8], i: usize) -> Result<u32> {
        let s = check(desc, payload)?;
        let count = desc.count as usize;
        if i >= count {
            return Err(invalid("slot out of range"));
        }
        match s {
            _ if i == 0 => Ok(desc.start),
            _ if i == count - 1 => Ok(desc.last),
            None => Ok(desc.start),
            Some(s) => select_in(desc, s, payload, i),
        }
    }

    fn lower_bound(desc: &Descriptor, payload: &[u8], key: u32) -> Result<(usize, Option<u32>)> {
        let s = check(desc, payload)?;
        let count = desc.count as usize;
        if count == 0 || key > desc.last {
            return Ok((count, None));
        }
        if key <= desc.start {
            return Ok((0, Some(desc.start)));
        }
        if key == desc.last {
            return Ok((count - 1, Some(desc.last)));
        }
        let Some(s) = s else {
            return Err(corrupt("one-key block with start != last"));
        };
        match s.mode {
            Mode::Present => {
                let mut r = Reader::new(&payload[..desc.size as usize]);
                let mut cur = desc.start as u64;
                for slot in 1..count {
                    cur += r.read(s.k)? as u64 + 1;
                    if cur >= key as u64 {
                        if cur > desc.last as u64 {
                            return Err(corrupt("key beyond last"));
                        }
                        return Ok((slot, Some(cur as u32)));
                    }
                }
                Err(corrupt("last key mismatch"))
            }
            Mode::Complement => {
                // The first present value >= key: skip the missing values at and after it.
                let (mut v, mut below) = (key as u64, 0u64);
                walk_missing(desc, s, payload, |m| {
                    if m < v {
                        below += 1;
                        true
                    } else if m == v {
                        below += 1;
                        v += 1;
                        true
                    } else {
                        false
                    }
                })?;
                let slot = v - desc.start as u64 - below;
                if v > desc.last as u64 || slot >= count as u64 {
                    return Err(corrupt("keys disagree with count"));
                }
                Ok((slot as usize, Some(v as u32)))
            }
        }
    }

    fn insert(desc: &mut Descriptor, payload: &mut [u8], key: u32) -> Result<InsertOutcome> {
        rewrite::insert::<Rice, MAX>(desc, payload, key)
    }

    fn append(desc: &mut Descriptor, payload: &mut [u8], key: u32) -> Result<AppendOutcome> {
        let shape = check(desc, payload)?;
        if desc.count == 0 {
            *desc = tiny(&[key]);
            return Ok(AppendOutcome::Appended);
        }
        if key <= desc.last {
            return Err(invalid("appended key not greater than last"));
        }
        if desc.count as usize == MAX {
            return Ok(AppendOutcome::NoRoom);
        }
        let new_count = desc.count + 1;
        let rechoose = new_count.is_power_of_two() || new_count.is_multiple_of(32);
        if let (Some(s), false) = (shape, rechoose) {
            if append_fast(desc, s, payload, key)? {
                return Ok(AppendOutcome::Appended);
            }
        }
        let (mut keys, count) = rewrite::keys_of::<Rice, MAX>(desc, payload)?;
        keys[count] = key;
        match rewrite::encode_fitting::<Rice>(&keys[..count + 1], payload)? {
            Some(nd) => {
                *desc = nd;
                Ok(AppendOutcome::Appended)
            }
            None => Ok(AppendOutcome::NoRoom),
        }
    }

    fn remove(desc: &mut Descriptor, payload: &mut [u8], slot: usize) -> Result<RemoveOutcome> {
        check(desc, payload)?;
        rewrite::remove::<Rice, MAX>(desc, payload, slot)
    }

    fn fold(desc: &Descriptor, payload: &[u8], slots: std::ops::Range<usize>) -> Result<Fold> {
        let s = check(desc, payload)?;
        let count = desc.count as usize;
        if slots.start > slots.end || slots.end > count {
            return Err(invalid("slot range out of bounds"));
        }
        if slots.is_empty() {
            return Ok(Fold::default());
        }
        let Some(s) = s else {
            return Ok(Fold {
                count: 1,
                sum: desc.start as u64,
                min: Some(desc.start),
                max: Some(desc.start),
            });
        };
        let len = slots.len();
        let (lo, hi, sum) = match s.mode {
            Mode::Present => {
                let mut r = Reader::new(&payload[..desc.size as usize]);
                let mut key = desc.start as u64;
                let (mut lo, mut sum) = (key, 0u64);
                if slots.start == 0 {
                    sum = key;
                }
                for slot in 1..slots.end {
                    key += r.read(s.k)? as u64 + 1;
                    if slot == slots.start {
                        lo = key;
                    }
                    if slot >= slots.start {
                        sum += key;
                    }
                }
                if key > desc.last as u64 {
                    return Err(corrupt("key beyond last"));
                }
                (lo, key, sum)
            }
            Mode::Complement => {
                let lo = Self::select(desc, payload, slots.start)? as u64;
                let hi = Self::select(desc, payload, slots.end - 1)? as u64;
                if lo > hi {
                    return Err(corrupt("keys not increasing"));
                }
                let (mut msum, mut mcount) = (0u64, 0u64);
                walk_missing(desc, s, payload, |m| {
                    if m >= hi {
                        return false;
                    }
                    if m > lo {
                        msum += m;
                        mcount += 1;
                    }
                    true
                })?;
                // check() bounds the range by count + 8 * size values, but the payload may be
                // any length: u128 for the arithmetic series.
                let span = (hi - lo + 1) as u128;
                let total = ((lo + hi) as u128 * span / 2).saturating_sub(msum as u128);
                if span - mcount as u128 != len as u128 {
                    return Err(corrupt("keys disagree with count"));
                }
                let sum = u64::try_from(total).map_err(|_| corrupt("sum beyond 64 bits"))?;
                (lo, hi, sum)
            }
        };
        Ok(Fold {
            count: len as u64,
            sum,
            min: Some(lo as u32),
            max: Some(hi as u32),
        })
    }

    fn validate(desc: &Descriptor, payload: &[u8]) -> Result<()> {
        let Some(s) = check(desc, payload)? else {
            return Ok(());
        };
        let mut buf = [0u32; MAX];
        let end = decode_into(desc, s, payload, &mut buf)?;
        let size = desc.size as usize;
        if end.div_ceil(8) != size {
            return Err(corrupt("size is not the coded bits' bytes"));
        }
        if !end.is_multiple_of(8) && payload[size - 1] >> (end % 8) != 0 {
            return Err(corrupt("nonzero bits after the last code"));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sorted unique keys of `n` (at most) in one of the shapes that matter.
    fn keys(rng: &mut fastrand::Rng, shape: u32, n: usize) -> Vec<u32> {
        let start = rng.u32(..1 << 30);
        let mut v: Vec<u32> = match shape {
            // consecutive: M = 0
            0 => (0..n as u32).map(|i| start + i).collect(),
            // ClusterData-like: about 89% of the values present
            1 => (start..).filter(|_| rng.u32(..100) < 89).take(n).collect(),
            // dense runs with short holes
            2 => {
                let mut out = Vec::with_capacity(n);
                let mut k = start;
                while out.len() < n {
                    for _ in 0..rng.usize(1..40) {
                        out.push(k);
                        k += 1;
                    }
                    k += rng.u32(1..4);
                }
                out.truncate(n);
                out
            }
            // sparse: gaps up to 1000
            3 => {
                let mut k = start;
                (0..n)
                    .map(|_| {
                        k += rng.u32(1..1000);
                        k
                    })
                    .collect()
            }
            // huge gaps: anywhere in u32, ends included sometimes
            _ => {
                let mut v: Vec<u32> = (0..n).map(|_| rng.u32(..)).collect();
                if rng.bool() {
                    v.push(0);
                    v.push(u32::MAX);
                }
                v
            }
        };
        v.sort_unstable();
        v.dedup();
        v.truncate(n);
        v
    }

    const SIZES: [usize; 12] = [1, 2, 3, 5, 17, 64, 100, 256, 257, 258, 510, MAX];

    fn encoded(keys: &[u32]) -> (Descriptor, Vec<u8>) {
        let mut buf = vec![0u8; Rice::max_payload_len(keys.len())];
        let d = Rice::encode(keys, &mut buf).unwrap();
        (d, buf)
    }

    /// Every read operation of the block `(d, p)` against the model `keys`.
    fn check_reads(d: &Descriptor, p: &[u8], keys: &[u32], rng: &mut fastrand::Rng) {
        Rice::validate(d, p).unwrap();
        let mut out = [0u32; MAX];
        assert_eq!(Rice::decode(d, p, &mut out).unwrap(), keys.len());
        assert_eq!(&out[..keys.len()], keys);
        for (i, &k) in keys.iter().enumerate() {
            assert_eq!(Rice::select(d, p, i).unwrap(), k);
        }
        let mut probes = vec![0, 1, u32::MAX - 1, u32::MAX];
        for &k in keys {
            probes.extend([k.wrapping_sub(1), k, k.wrapping_add(1)]);
        }
        for _ in 0..50 {
            probes.push(rng.u32(..));
        }
        for key in probes {
            let slot = keys.partition_point(|&k| k < key);
            let want = (slot, keys.get(slot).copied());
            assert_eq!(Rice::lower_bound(d, p, key).unwrap(), want, "key {key}");
        }
        let n = keys.len();
        let mut ranges: Vec<(usize, usize)> = if n <= 20 {
            (0..=n).flat_map(|a| (a..=n).map(move |b| (a, b))).collect()
        } else {
            (0..200)
                .map(|_| {
                    let a = rng.usize(..=n);
                    (a, rng.usize(a..=n))
                })
                .collect()
        };
        ranges.extend([(0, n), (0, 1), (n - 1, n), (1, n.max(1))]);
        for (a, b) in ranges {
            let part = &keys[a..b];
            let want = Fold {
                count: part.len() as u64,
                sum: part.iter().map(|&k| k as u64).sum(),
                min: part.first().copied(),
                max: part.last().copied(),
            };
            assert_eq!(Rice::fold(d, p, a..b).unwrap(), want, "slots {a}..{b}");
        }
        assert_eq!(
            Rice::block_sum(d, p),
            Some(keys.iter().map(|&k| k as u64).sum())
        );
    }

    /// Every shape and size, in the chosen mode and in both modes forced at several k: every
    /// read agrees with the model, and the chosen encoding is the smallest of all forced ones.
    #[test]
    fn reads_match_the_model_in_both_modes() {
        let mut rng = fastrand::Rng::with_seed(21);
        let mut big = vec![0u8; 1 << 16];
        for shape in 0..5 {
            for n in SIZES {
                let keys = keys(&mut rng, shape, n);
                let (d, p) = encoded(&keys);
                assert!(d.size as usize <= Rice::max_payload_len(keys.len()));
                check_reads(&d, &p, &keys, &mut rng);
                for mode in [Mode::Present, Mode::Complement] {
                    for k in 0..=31 {
                        let Ok(f) = Rice::encode_as(&keys, &mut big, mode, k) else {
                            continue;
                        };
                        assert!(d.size <= f.size, "shape {shape} n {n} {mode:?} k {k}");
                        if k % 5 == 0 || k == 31 {
                            check_reads(&f, &big[..f.size as usize], &keys, &mut rng);
                            if keys.len() > 1 {
                                assert_eq!(Rice::mode(&f), mode);
                            }
                        }
                    }
                }
            }
        }
    }

    /// Consecutive keys take no payload (complement mode, no missing value); ClusterData-like
    /// blocks choose complement mode; sparse blocks present mode.
    #[test]
    fn the_mode_follows_the_density() {
        let mut rng = fastrand::Rng::with_seed(5);
        let (d, _) = encoded(&keys(&mut rng, 0, MAX));
        assert_eq!((Rice::mode(&d), d.size), (Mode::Complement, 0));
        let (d, _) = encoded(&keys(&mut rng, 3, MAX));
        assert_eq!(Rice::mode(&d), Mode::Present);
        let mut total = 0;
        for _ in 0..100 {
            let (d, _) = encoded(&keys(&mut rng, 1, MAX));
            assert_eq!(Rice::mode(&d), Mode::Complement);
            total += d.size as usize;
        }
        // About 0.124 missing values per key at some 3.5 bits each: well under a byte per
        // eight keys (ClusterData is about 0.11 bytes/key with the descriptors).
        assert!(total < 100 * MAX / 8, "{total} bytes");
    }

    /// FORMAT.md's example, byte for byte.
    #[test]
    fn format_example() {
        let keys = [10, 11, 13, 14, 15, 18];
        let (d, p) = encoded(&keys);
        assert_eq!((d.bits, d.size, p[0]), (32, 1, 0x62));
        // Present mode at k = 0: values 0, 1, 0, 0, 2 = bits 1 01 1 1 001.
        let mut out = [0u8; 4];
        let d = Rice::encode_as(&keys, &mut out, Mode::Present, 0).unwrap();
        assert_eq!((d.bits, d.size, out[0], out[1]), (0, 1, 0b1001_1101, 0));
        Rice::validate(&d, &out).unwrap();
    }

    /// A gap of u32::MAX - 1 (keys 0 and u32::MAX) and the widest values at every k.
    #[test]
    fn extreme_gaps() {
        let mut big = vec![0u8; 1 << 16];
        let keys = [0, u32::MAX];
        let mut rng = fastrand::Rng::with_seed(1);
        let (d, p) = encoded(&keys);
        assert_eq!(d.size, 5); // k = 31: 31 bits, quotient 1, stop bit
        check_reads(&d, &p, &keys, &mut rng);
        for k in 0..=31 {
            match Rice::encode_as(&keys, &mut big, Mode::Present, k) {
                Ok(d) => check_reads(&d, &big[..d.size as usize], &keys, &mut rng),
                Err(CodecError::NoRoom { .. }) => assert!(k < 20),
                Err(e) => panic!("{e}"),
            }
        }
        assert!(matches!(
            Rice::encode_as(&keys, &mut big, Mode::Complement, 31),
            Err(CodecError::NoRoom { .. })
        ));
    }

    /// insert / append / remove against the model from every shape, with the block's buffer at
    /// its worst-case size, validated after every step.
    #[test]
    fn changes_match_the_model() {
        let mut rng = fastrand::Rng::with_seed(77);
        let mut buf = vec![0u8; Rice::max_payload_len(MAX)];
        for shape in 0..5 {
            for n in SIZES {
                let mut model = keys(&mut rng, shape, n);
                let mut d = Rice::encode(&model, &mut buf).unwrap();
                for _ in 0..300 {
                    match rng.u32(..3) {
                        0 => {
                            let key = match model.first() {
                                Some(&f) if rng.bool() => f.wrapping_add(rng.u32(..600)),
                                _ => rng.u32(..),
                            };
                            let slot = model.partition_point(|&k| k < key);
                            let out = Rice::insert(&mut d, &mut buf, key).unwrap();
                            if model.get(slot) == Some(&key) {
                                assert_eq!(out, InsertOutcome::Exists { slot });
                            } else if model.len() == MAX {
                                assert_eq!(out, InsertOutcome::NoRoom);
                            } else {
                                assert_eq!(out, InsertOutcome::Inserted { slot });
                                model.insert(slot, key);
                            }
                        }
                        1 => {
                            let last = model.last().copied().unwrap_or(0);
                            if last == u32::MAX {
                                continue;
                            }
                            let key = last.saturating_add(rng.u32(1..4)).max(1);
                            let out = Rice::append(&mut d, &mut buf, key).unwrap();
                            if model.len() == MAX {
                                assert_eq!(out, AppendOutcome::NoRoom);
                            } else {
                                assert_eq!(out, AppendOutcome::Appended);
                                model.push(key);
                            }
                        }
                        _ => {
                            if model.is_empty() {
                                continue;
                            }
                            let slot = rng.usize(..model.len());
                            let out = Rice::remove(&mut d, &mut buf, slot).unwrap();
                            assert!(matches!(out, RemoveOutcome::Removed { .. }));
                            model.remove(slot);
                        }
                    }
                    Rice::validate(&d, &buf).unwrap();
                    let mut out = [0u32; MAX];
                    let c = Rice::decode(&d, &buf, &mut out).unwrap();
                    assert_eq!(&out[..c], &model[..]);
                }
                if !model.is_empty() {
                    check_reads(&d, &buf, &model, &mut rng);
                }
            }
        }
    }

    /// A block without room: every change that does not fit says NoRoom and leaves the block
    /// (descriptor and bytes) unchanged.
    #[test]
    fn no_room_leaves_the_block_unchanged() {
        let mut rng = fastrand::Rng::with_seed(3);
        for shape in [1, 3, 4] {
            let keys = keys(&mut rng, shape, 200);
            let (d, p) = encoded(&keys);
            let mut tight = p[..d.size as usize].to_vec();
            let mut seen = 0;
            for _ in 0..200 {
                let mut d2 = d;
                let key = rng.u32(..);
                let out = Rice::insert(&mut d2, &mut tight, key).unwrap();
                if out == InsertOutcome::NoRoom {
                    seen += 1;
                    assert_eq!(d2, d);
                    assert_eq!(tight, &p[..d.size as usize]);
                }
            }
            let mut d2 = d;
            let far = keys.last().unwrap().saturating_add(1 << 20);
            if far > *keys.last().unwrap() {
                assert_eq!(
                    Rice::append(&mut d2, &mut tight, far).unwrap(),
                    AppendOutcome::NoRoom
                );
                assert_eq!(d2, d);
                assert_eq!(tight, &p[..d.size as usize]);
            }
            assert!(seen > 0, "shape {shape}: no insert needed more room");
        }
    }

    /// Blocks built key by key with `append` (the engine's sorted load) stay within a tenth of
    /// the encoder's best size on ClusterData-like and sparse keys, and decode to the keys.
    #[test]
    fn appended_blocks_stay_near_the_best_size() {
        let mut rng = fastrand::Rng::with_seed(9);
        for shape in [0, 1, 2, 3] {
            let (mut appended, mut best) = (0usize, 0usize);
            for _ in 0..40 {
                let keys = keys(&mut rng, shape, MAX);
                let mut buf = vec![0u8; Rice::max_payload_len(MAX)];
                let mut d = Descriptor::default();
                for &k in &keys {
                    assert_eq!(
                        Rice::append(&mut d, &mut buf, k).unwrap(),
                        AppendOutcome::Appended
                    );
                }
                Rice::validate(&d, &buf).unwrap();
                let mut out = [0u32; MAX];
                Rice::decode(&d, &buf, &mut out).unwrap();
                assert_eq!(&out[..], &keys[..]);
                appended += d.size as usize;
                best += encoded(&keys).0.size as usize;
            }
            assert!(
                appended * 10 <= best * 11,
                "shape {shape}: appended {appended} bytes, best {best}"
            );
        }
    }

    /// Every operation on the block `(d, p)` fails cleanly or answers; none panics.
    fn poke(d: &Descriptor, p: &[u8]) {
        let mut out = [0u32; MAX];
        let _ = Rice::decode(d, p, &mut out);
        for i in [
            0,
            1,
            2,
            d.count as usize / 2,
            (d.count as usize).saturating_sub(1),
        ] {
            let _ = Rice::select(d, p, i);
        }
        for key in [
            0,
            d.start,
            d.start.wrapping_add(3),
            d.last.wrapping_sub(1),
            d.last,
            u32::MAX,
        ] {
            let _ = Rice::lower_bound(d, p, key);
        }
        let c = (d.count as usize).min(MAX);
        for r in [0..c, 1..c, 0..c / 2, c / 2..c] {
            let _ = Rice::fold(d, p, r);
        }
        let mut buf = p.to_vec();
        buf.resize(p.len() + 64, 0);
        let _ = Rice::insert(&mut d.clone(), &mut buf.clone(), d.start.wrapping_add(1));
        let _ = Rice::append(&mut d.clone(), &mut buf.clone(), d.last.wrapping_add(1));
        let _ = Rice::append(&mut d.clone(), &mut buf.clone(), d.last.wrapping_add(9));
        let _ = Rice::remove(&mut d.clone(), &mut buf.clone(), 1);
        let _ = Rice::block_sum(d, p);
    }

    /// Forged blocks: each is rejected by `validate` and no operation panics on it.
    #[test]
    fn validate_rejects_forged_blocks() {
        let mut rng = fastrand::Rng::with_seed(13);
        for shape in 1..5 {
            let keys = keys(&mut rng, shape, 150);
            let (d, p) = encoded(&keys);
            let p = &p[..d.size as usize];
            Rice::validate(&d, p).unwrap();
            let mut forged: Vec<(&str, Descriptor, Vec<u8>)> = vec![
                ("truncated payload", d, p[..p.len() - 1].to_vec()),
                (
                    "size one short",
                    Descriptor {
                        size: d.size - 1,
                        ..d
                    },
                    p.to_vec(),
                ),
                (
                    "last + 1",
                    Descriptor {
                        last: d.last + 1,
                        ..d
                    },
                    p.to_vec(),
                ),
                (
                    "last - 1",
                    Descriptor {
                        last: d.last - 1,
                        ..d
                    },
                    p.to_vec(),
                ),
                (
                    "count + 1",
                    Descriptor {
                        count: d.count + 1,
                        ..d
                    },
                    p.to_vec(),
                ),
                (
                    "count - 1",
                    Descriptor {
                        count: d.count - 1,
                        ..d
                    },
                    p.to_vec(),
                ),
                ("k out of range", Descriptor { bits: 64, ..d }, p.to_vec()),
                ("bits 255", Descriptor { bits: 255, ..d }, p.to_vec()),
                (
                    "mode flipped",
                    Descriptor {
                        bits: d.bits ^ COMPLEMENT,
                        ..d
                    },
                    p.to_vec(),
                ),
                ("unary run past the end", d, vec![0u8; p.len()]),
                ("count 512", Descriptor { count: 512, ..d }, p.to_vec()),
                (
                    "last < start",
                    Descriptor {
                        last: d.start - 1,
                        ..d
                    },
                    p.to_vec(),
                ),
            ];
            let mut tail = p.to_vec();
            tail.push(1);
            forged.push((
                "a byte after the stream",
                Descriptor {
                    size: d.size + 1,
                    ..d
                },
                tail,
            ));
            // (A flipped remainder bit moves one missing value and those after it: the keys
            // still ascend to `last` with the same count, so no check can see it; pages carry
            // checksums for that.)
            for (what, fd, fp) in forged {
                assert!(
                    Rice::validate(&fd, &fp).is_err(),
                    "shape {shape}: {what} validated"
                );
                poke(&fd, &fp);
            }
            // Each k: the same block read at another k is rejected.
            for k in 0..=31u8 {
                let fd = Descriptor {
                    bits: (d.bits & COMPLEMENT) | k,
                    ..d
                };
                if fd != d {
                    assert!(
                        Rice::validate(&fd, p).is_err(),
                        "shape {shape} read at k {k}"
                    );
                }
                poke(&fd, p);
            }
        }
    }

    /// The count bound: 511 keys encode and validate (both modes); 512 keys are refused by
    /// `encode`, and a descriptor claiming 512 (or more) keys by every read, whatever its
    /// payload, before any buffer of `MAX` is indexed by it.
    #[test]
    fn count_511_accepted_512_refused() {
        let mut rng = fastrand::Rng::with_seed(511);
        let mut out = [0u32; MAX];
        let dense: Vec<u32> = (1000..1000 + MAX as u32).collect();
        for keys in [
            dense.clone(),
            keys(&mut rng, 1, MAX),
            keys(&mut rng, 3, MAX),
        ] {
            assert_eq!(keys.len(), MAX);
            let (d, p) = encoded(&keys);
            assert_eq!(d.count, 511);
            check_reads(&d, &p, &keys, &mut rng);
            for count in [512, 513, 1000, u32::MAX] {
                let fd = Descriptor { count, ..d };
                assert!(Rice::validate(&fd, &p).is_err(), "count {count} validated");
                assert!(Rice::decode(&fd, &p, &mut out).is_err());
                assert!(Rice::select(&fd, &p, 511).is_err());
                assert!(Rice::fold(&fd, &p, 0..512).is_err());
                poke(&fd, &p);
            }
        }
        // 512 consecutive keys: complement mode with nothing missing would need no payload.
        let d = Descriptor {
            start: 1000,
            count: 512,
            last: 1511,
            size: 0,
            bits: COMPLEMENT,
        };
        assert!(Rice::validate(&d, &[]).is_err());
        assert!(Rice::decode(&d, &[], &mut out).is_err());
        poke(&d, &[]);
        let mut keys = dense;
        keys.push(1000 + MAX as u32);
        let mut buf = vec![0u8; Rice::max_payload_len(keys.len())];
        assert!(matches!(
            Rice::encode(&keys, &mut buf),
            Err(CodecError::InvalidInput { .. })
        ));
        let full = Rice::encode(&keys[..MAX], &mut buf).unwrap();
        let (mut d2, mut b2) = (full, buf.clone());
        assert_eq!(
            Rice::append(&mut d2, &mut b2, 1000 + MAX as u32).unwrap(),
            AppendOutcome::NoRoom
        );
        assert_eq!(
            Rice::insert(&mut d2, &mut b2, 0).unwrap(),
            InsertOutcome::NoRoom
        );
        assert_eq!((d2, b2), (full, buf));
    }

    /// A one-bit-per-missing-value stream whose codes go past `last` or overflow u32, and random
    /// descriptors over random bytes: errors, never a panic.
    #[test]
    fn garbage_never_panics() {
        let mut rng = fastrand::Rng::with_seed(99);
        // Complement mode, k = 0, every code a gap of 1: missing values start+1 .. start+M
        // would reach last.
        let d = Descriptor {
            start: 10,
            count: 2,
            last: 20,
            size: 2,
            bits: COMPLEMENT,
        };
        assert!(Rice::validate(&d, &[0xff, 0xff]).is_err());
        poke(&d, &[0xff, 0xff]);
        for _ in 0..20_000 {
            let len = rng.usize(..200);
            let p: Vec<u8> = (0..len)
                .map(|_| if rng.bool() { rng.u8(..) } else { 0 })
                .collect();
            let start = rng.u32(..);
            let spread = 1u32 << rng.u32(..32);
            let d = Descriptor {
                start,
                count: rng.u32(..600),
                last: start.saturating_add(rng.u32(..spread)),
                size: rng.u32(..=len as u32 + 2),
                bits: rng.u8(..70),
            };
            poke(&d, &p);
        }
    }
}
