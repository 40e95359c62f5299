//! Compressed numeric records: a leaf's fixed-size records (u32, u64, i16, i32, i64, f64 or opaque
//! little-endian words of 1..=8 bytes) kept as a run of small *chunks*, each coded with whichever
//! of five layouts is smallest for its values.
//!
//! ```text
//! region:  [used u16][directory?][chunk 0][chunk 1] ...  records in key order; `used` counts
//!                                             every byte of the region in use, itself included
//!                                             (no records: nothing, 0)
//! directory: [0][0x0f][entries u8][entries x (first record u32, offset u16)]   optional: the
//!           start of every chunk (every 4th in regions written before), so a point
//!           read walks one chunk header (or a few), not all
//! chunk:   [count u8, 1..=255][kind u8: sum bytes << 4 | layout][body][sum]
//!   0 RAW   count x w bytes, little-endian
//!   1 FOR   [bits u8][base: w bytes][count offsets of `bits` bits]
//!   2 DICT  [bits u8][entries - 1 u8][entries x w bytes, ascending][count codes of `bits` bits]
//!   3 DEC   [exponent u8][bits u8][base u64][exceptions u8][count offsets of `bits` bits]
//!           [exception positions u8, ascending][exception values u64]      (f64 records only)
//!   4 PDICT [b u8, <= 7][entries - 1 u8][exceptions x u8][entries x w bytes][count codes of b
//!           bits][x positions u8, ascending][x codes of xb bits]   (`pdict.rs`)
//!   sum     FOR, DICT and PDICT chunks of integer records: the sum of the offsets (DICT: of
//!           each record's distance above entry 0; PDICT: above its smallest entry), 1..=9 bytes
//!           little-endian, sized for 255 offsets; chunks written before sums existed have
//!           none (kind byte 1 or 2)
//! ```
//!
//! The sum makes a SUM or AVG over whole chunks `count * base + sum`, read from the chunk's
//! last bytes instead of its records (a chunk spans key blocks: the executor folds runs of
//! whole key blocks at once). Edits in place keep it; `check` holds it against the records.
//!
//! The region is untrusted: every header is checked against the region before its chunk is
//! read, and reads prove the counts they walk past (`NumRecs::prove`): from the chunk read to
//! the next live directory entry, or the region's end, the headers must land exactly on its
//! offset with its first record (on `used` with the node's count), so a forged count is a
//! fault, never a record of another key.
//!
//! FOR is the frame of reference of the patched-FOR paper (Zukowski et al., "Super-Scalar
//! RAM-CPU Cache Compression", section 3): every value is `base + offset`, offsets bit-packed
//! least significant bit first. DICT is that paper's PDICT without exceptions: the chunk's
//! distinct values, and one code per record. PDICT is the paper's patched dictionary: the
//! `2^b` most frequent values coded in `b` bits (0 for one dominant value), the others
//! exceptions listed by position (`pdict.rs`). DEC is the decimal idea of ALP (Afroozeh et al.,
//! "ALP: Adaptive Lossless floating-Point Compression", as DuckDB uses it): an f64 that is a
//! short decimal (21.35) is stored as the integer `21.35 * 10^e` (FOR-coded), and decoded as
//! `integer / 10^e`; a value that does not come back bit for bit (NaN, -0.0, full-precision
//! doubles) is an exception kept whole.
//!
//! Signed records are ordered by flipping their sign bit (FOR's base is the minimum in that
//! order); every layout gives O(1) access to one record (PDICT after at most 8 steps of halving
//! its exception positions). A chunk holds at most
//! [`NumRecs::chunk`] records (255, fewer on small pages); inserts that overflow a chunk split it
//! in two, removes never make a chunk bigger, `vacuumize` repacks the chunks full.

use super::slots::{le_u16_at, le_u32_at, le_u64_at, le_word, le_words, put, Fault, SResult};
use super::zone::{RecFold, RecNum, POW10};

mod bounds;
mod chunk_codec;
mod pdict;
pub use chunk_codec::{ChunkCodec, ChunkInfo};
use pdict::PDICT;

const RAW: u8 = 0;
const FOR: u8 = 1;
const DICT: u8 = 2;
const DEC: u8 = 3;
/// The names of the layouts, by number (`DbStats::record_chunks`).
pub const RECORD_LAYOUTS: [&str; 5] = ["raw", "for", "dict", "dec", "pdict"];
/// The kind byte's layout bits; its high four bits count the bytes of the chunk's sum.
const KIND: u8 = 0x0f;
/// The directory before the chunks: a header `[0][DIR][entries u8]` (a chunk of no records).
const DIR: u8 = 0x0f;
/// A region of at least three chunks gets a directory entry every this many chunks. Every
/// chunk: a point read then parses one chunk header and proves it against the next entry
/// without a walk (every 4th chunk, as written before, cost a lookup of series c ~220 more
/// instructions, every 2nd ~80; an entry is 6 bytes per chunk of up to 255 records, ~0.02
/// bytes per record; docs/BENCHMARKS.md, "Point reads and whole-chunk sums"). Readers take
/// any spacing.
const DIR_EVERY: usize = 1;
/// Bytes of a directory entry: the chunk's first record u32, its offset in the region u16.
const DIR_ENTRY: usize = 6;

/// The fault of a chunk part outside the region (`header` checks every chunk's length first).
const CHUNK_OUT: &str = "compressed record chunk outside its region";

/// `10^e` for a DEC chunk's exponent (`header` checked it).
#[inline]
fn pow10(e: usize) -> SResult<f64> {
    POW10
        .get(e)
        .copied()
        .ok_or(Fault("bad decimal record chunk"))
}

/// Integers up to this magnitude are exact in an f64.
const DEC_LIMIT: f64 = 9_007_199_254_740_992.0;

pub use super::zone::Num;

/// A compressed numeric record list: records of `width` bytes read as `num`, at most `chunk`
/// per chunk.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct NumRecs {
    pub width: u8,
    pub num: Num,
    pub chunk: u8,
}

/// Chunk capacity for a page: a quarter of a leaf's bytes holds a raw chunk, at most 255 (the
/// header's count byte): fewer chunks per leaf to walk for a point read, and a smaller share
/// of chunk headers and frames (docs/BENCHMARKS.md, session 11).
pub fn chunk_for(page_size: usize, width: usize) -> u8 {
    (page_size / (4 * width.max(1))).clamp(8, 255) as u8
}

#[inline]
fn mask(bits: u32) -> u64 {
    if bits >= 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    }
}

#[inline]
fn bits_for(range: u64) -> u32 {
    64 - range.leading_zeros()
}

#[inline]
fn packed_len(count: usize, bits: u32) -> usize {
    (count * bits as usize).div_ceil(8)
}

/// Appends `vals`, `bits` bits each, least significant bit first.
fn pack(vals: impl Iterator<Item = u64>, bits: u32, out: &mut Vec<u8>) {
    if bits == 0 {
        return;
    }
    let (mut acc, mut n) = (0u128, 0u32);
    for v in vals {
        acc |= u128::from(v & mask(bits)) << n;
        n += bits;
        while n >= 8 {
            out.push(acc as u8);
            acc >>= 8;
            n -= 8;
        }
    }
    if n > 0 {
        out.push(acc as u8);
    }
}

/// Sets value `j` of a bit-packed run (`bits` bits each, least significant bit first) to `v`;
/// `None` when the run is too short.
fn put_bits(data: &mut [u8], j: usize, bits: u32, v: u64) -> Option<()> {
    let p = j * bits as usize;
    let (mut byte, mut shift) = (p / 8, (p % 8) as u32);
    let (mut left, mut v) = (bits, v & mask(bits));
    while left > 0 {
        let take = (8 - shift).min(left);
        let m = ((((1u16 << take) - 1) as u8) as u16) << shift;
        let b = data.get_mut(byte)?;
        *b = (*b & !(m as u8)) | ((((v as u16) << shift) & m) as u8);
        v = v.checked_shr(take).unwrap_or(0);
        left -= take;
        byte += 1;
        shift = 0;
    }
    Some(())
}

/// Values `j0..j0 + out.len()` of a bit-packed run into `out`. Eight values of `b` bits take
/// exactly `b` bytes, so from a value index that is a multiple of 8 on, the values go eight at a
/// time through a loop compiled for each width (shifts and load offsets constant, one bounds
/// check per eight values: [`unpack_groups`]); the values before and after, and widths above
/// 56 bits, one at a time. The loop of one value at a time with run-time shifts was most of a
/// SUM over FOR records, which made it 1.5-3.5x slower than the same SUM over raw records
/// (`examples/record_sums`).
fn unpack(data: &[u8], bits: u32, j0: usize, out: &mut [u64]) -> SResult<()> {
    if bits == 0 {
        out.fill(0);
        return Ok(());
    }
    let head = ((8 - j0 % 8) % 8).min(out.len());
    let (first, rest) = out.split_at_mut(head);
    unpack_each(data, bits, j0, first)?;
    let j = j0 + head;
    macro_rules! widths {
        ($($b:literal)*) => {
            match bits {
                $($b => unpack_groups::<$b>(data, j, rest),)*
                _ => 0,
            }
        };
    }
    let done = widths!(1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27
        28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56);
    let tail = rest
        .get_mut(done..)
        .ok_or(Fault("record decode buffer too small"))?;
    unpack_each(data, bits, j + done, tail)
}

/// Values `j..` of a run of `B`-bit values into a prefix of `out`, eight at a time (`j` a
/// multiple of 8; a last group short of eight through a scratch group): returns how many it
/// wrote, stopping where a group's bytes (and the 8 after them that its last read may touch)
/// pass the end of `data`.
#[inline(always)]
fn unpack_groups<const B: usize>(data: &[u8], j: usize, out: &mut [u64]) -> usize {
    let mut done = 0;
    let mut groups = out.chunks_exact_mut(8);
    for o in &mut groups {
        let at = (j + done) / 8 * B;
        let Some(win) = data.get(at..at + B + 8) else {
            return done;
        };
        unpack_group::<B>(win, o);
        done += 8;
    }
    let rest = groups.into_remainder();
    if !rest.is_empty() {
        let at = (j + done) / 8 * B;
        if let Some(win) = data.get(at..at + B + 8) {
            let mut g = [0u64; 8];
            unpack_group::<B>(win, &mut g);
            for (r, v) in rest.iter_mut().zip(g) {
                *r = v;
            }
            done += rest.len();
        }
    }
    done
}

/// Eight `B`-bit values from the `B` bytes at the start of `win` (which holds 8 more: every
/// read below is inside it, and as `win`'s length and the offsets are constants once this is
/// inlined, the checked reads compile to plain loads).
#[inline(always)]
fn unpack_group<const B: usize>(win: &[u8], o: &mut [u64]) {
    let m = mask(B as u32);
    for (i, v) in o.iter_mut().enumerate().take(8) {
        let bit = i * B;
        let w = win
            .get(bit / 8..)
            .and_then(|s| s.first_chunk::<8>())
            .map_or(0, |w| u64::from_le_bytes(*w));
        *v = (w >> (bit % 8)) & m;
    }
}

/// `unpack` (widths above 0), one value at a time: an unaligned 8-byte read per value while 8
/// bytes remain, `extract` for the tail and for widths above 56 bits.
fn unpack_each(data: &[u8], bits: u32, j0: usize, out: &mut [u64]) -> SResult<()> {
    let m = mask(bits);
    let b = bits as usize;
    for (k, o) in out.iter_mut().enumerate() {
        let p = (j0 + k) * b;
        let byte = p / 8;
        *o = match data.get(byte..).and_then(|s| s.first_chunk::<8>()) {
            Some(src) if bits <= 56 => (u64::from_le_bytes(*src) >> (p % 8)) & m,
            _ => extract(data, j0 + k, bits)?,
        };
    }
    Ok(())
}

/// Value `j` of a bit-packed run: one unaligned 8-byte read while 8 bytes remain (bits past
/// the value are masked off), else byte by byte.
#[inline]
fn extract(data: &[u8], j: usize, bits: u32) -> SResult<u64> {
    if bits == 0 {
        return Ok(0);
    }
    let p = j * bits as usize;
    let (byte, shift) = (p / 8, p % 8);
    if bits <= 56 {
        if let Some(w) = data.get(byte..).and_then(|s| s.first_chunk::<8>()) {
            return Ok((u64::from_le_bytes(*w) >> shift) & mask(bits));
        }
    }
    extract_tail(data, byte, shift, bits)
}

/// `extract` near the end of `data`, or of more than 56 bits.
#[cold]
fn extract_tail(data: &[u8], byte: usize, shift: usize, bits: u32) -> SResult<u64> {
    let need = (shift + bits as usize).div_ceil(8);
    let src = data
        .get(byte..byte + need)
        .ok_or(Fault("packed record outside its chunk"))?;
    let mut b = [0u8; 16];
    b.get_mut(..need)
        .ok_or(Fault("record bit width above 64"))?
        .copy_from_slice(src);
    Ok((u128::from_le_bytes(b) >> shift) as u64 & mask(bits))
}

/// The `w`-byte little-endian word at `at` of `bytes` (`w` 1..=8), `None` when it passes the
/// end: one 8-byte read masked to `w` bytes while 8 bytes remain. `le_word` of a length known
/// only at run time is a `memcpy` call: two of them per whole PDICT chunk were a fifth of a
/// range SUM's record fold (`examples/series_c`).
#[inline(always)]
fn word_in(bytes: &[u8], at: usize, w: usize) -> Option<u64> {
    match bytes.get(at..).and_then(|s| s.first_chunk::<8>()) {
        Some(b) if w <= 8 => Some(u64::from_le_bytes(*b) & mask(8 * w as u32)),
        _ => bytes.get(at..at.checked_add(w)?).map(le_word),
    }
}

/// A directory entry (`DIR_ENTRY` bytes): the chunk's first record and its offset (a short
/// slice reads as 0s: callers pass whole entries).
fn read_entry(e: &[u8]) -> (usize, usize) {
    (le_u32_at(e, 0) as usize, usize::from(le_u16_at(e, 4)))
}

/// Writes a directory entry (`DIR_ENTRY` bytes; callers pass whole entries).
fn write_entry(e: &mut [u8], first: usize, off: usize) {
    put(e, 0, &(first as u32).to_le_bytes());
    put(e, 4, &(off as u16).to_le_bytes());
}

/// Bytes of a chunk's sum of offsets each below `2^bits`: 255 of them sum below `2^(bits + 8)`.
fn sum_len(bits: u32) -> usize {
    (bits as usize + 8).div_ceil(8)
}

/// Appends the low `k` bytes of `v` (at most 16), little-endian.
#[inline]
fn push_le(out: &mut Vec<u8>, v: u128, k: usize) {
    out.extend_from_slice(v.to_le_bytes().get(..k).unwrap_or_default());
}

/// A chunk's stored sum: 1..=9 bytes, little-endian.
fn read_sum(b: &[u8]) -> u128 {
    let mut a = [0u8; 16];
    for (d, s) in a.iter_mut().zip(b) {
        *d = *s;
    }
    u128::from_le_bytes(a)
}

/// Stores `v` in the sum bytes `b`; `None` when it does not fit them.
fn write_sum(b: &mut [u8], v: u128) -> Option<()> {
    if b.len() < 16 && v >> (8 * b.len()) != 0 {
        return None;
    }
    b.copy_from_slice(v.to_le_bytes().get(..b.len())?);
    Some(())
}

/// The sum of values `js` of a bit-packed run, unpacked through `buf` (one chunk's worth).
fn sum_packed(
    data: &[u8],
    bits: u32,
    js: std::ops::Range<usize>,
    buf: &mut [u64],
) -> SResult<u128> {
    let vals = buf
        .get_mut(..js.len())
        .ok_or(Fault("record decode buffer too small"))?;
    unpack(data, bits, js.start, vals)?;
    Ok(if bits <= 55 {
        // At most 255 values below 2^55: the sum stays below 2^63.
        u128::from(vals.iter().sum::<u64>())
    } else {
        vals.iter().map(|&v| u128::from(v)).sum()
    })
}

thread_local! {
    /// One chunk's records as words, for folds: kept per thread, as zeroing 2 KB on the stack
    /// for every leaf a fold visits was 7% of a range SUM's instructions.
    static FOLD_WORDS: std::cell::RefCell<[u64; 255]> = const { std::cell::RefCell::new([0; 255]) };
}

/// The parsed header of one chunk at some offset of the region.
#[derive(Clone, Copy, Debug)]
struct Chunk {
    count: usize,
    kind: u8,
    /// Bytes of the whole chunk, header included.
    len: usize,
    bits: u32,
    /// DEC: the decimal exponent; DICT: the number of entries.
    param: usize,
    /// DEC: exceptions.
    exc: usize,
    /// Bytes of the chunk's stored sum of offsets at its end (0: none).
    sum: usize,
}

impl NumRecs {
    #[inline]
    fn w(&self) -> usize {
        self.width as usize
    }

    /// The record's bytes as an unsigned word.
    #[inline]
    fn word(&self, raw: &[u8]) -> SResult<u64> {
        if raw.len() != self.w() {
            return Err(Fault("record of the wrong size"));
        }
        Ok(le_word(raw))
    }

    /// An integer record's word as its number (signed: sign-extended from the record's width).
    #[inline]
    fn number(&self, word: u64) -> i128 {
        match self.num {
            Num::Signed => {
                let s = 64 - 8 * self.w() as u32;
                i128::from(((word << s) as i64) >> s)
            }
            _ => i128::from(word),
        }
    }

    /// Whether a chunk of layout `kind` may carry a sum of `bytes`: FOR, DICT and DEC chunks,
    /// at most 9 bytes (255 offsets below 2^64). Writers give FOR and DICT one for integer
    /// records only (f64 records never fold from theirs), DEC always.
    #[inline]
    fn may_sum(&self, kind: u8, bytes: usize) -> bool {
        matches!(kind, FOR | DICT | DEC | PDICT) && bytes <= 9
    }

    /// The chunk's stored sum of offsets (FOR: the offsets; DICT: each record's distance
    /// above the first entry, in the records' order); `None` without one.
    #[inline]
    fn stored_sum(&self, chunk: &[u8], c: &Chunk) -> Option<u128> {
        let from = c.len.checked_sub(c.sum)?;
        // Up to 8 bytes: the chunk's last 8 bytes in one read, shifted down (a byte loop of
        // run-time length is a `memcpy` call per chunk).
        if let (1..=8, Some(from8)) = (c.sum, c.len.checked_sub(8)) {
            let b = chunk.get(from8..c.len)?.first_chunk::<8>()?;
            return Some(u128::from(u64::from_le_bytes(*b) >> (8 * (8 - c.sum))));
        }
        let b = chunk.get(from..c.len)?;
        (c.sum > 0).then(|| read_sum(b))
    }

    /// The sum of every record of a chunk with a stored sum: `count * base + offsets`, the
    /// base being FOR's frame or DICT's first entry; `None` without a stored sum.
    #[inline]
    fn records_sum(&self, chunk: &[u8], c: &Chunk) -> SResult<Option<i128>> {
        if self.num == Num::Float || c.kind == DEC {
            return Ok(None);
        }
        let Some(offs) = self.stored_sum(chunk, c) else {
            return Ok(None);
        };
        let w = self.w();
        let base = match c.kind {
            FOR => word_in(chunk, 3, w),
            PDICT => self.pdict_base(chunk, c),
            _ => word_in(chunk, 4, w),
        };
        let base = base.ok_or(Fault("record chunk too short"))?;
        Ok(Some(c.count as i128 * self.number(base) + offs as i128))
    }

    /// `records_sum` for a fold's whole chunks, read in place from the region: the stored
    /// sum (up to 8 bytes: the last 8 bytes of the chunk in one read, shifted down) and the
    /// base (one 8-byte read masked to the record's width). `None` where those reads pass the
    /// region or the chunk has no sum of up to 8 bytes: `fold_chunk` then takes the chunk.
    /// The checks of a general read per chunk were most of a range SUM's record fold.
    #[inline(always)]
    fn whole_sum(&self, region: &[u8], at: usize, c: &Chunk) -> Option<i128> {
        if !(1..=8).contains(&c.sum) {
            return None;
        }
        let w = self.w();
        let end = at + c.len;
        // The bytes before the sum (there are at least 8 before a chunk's end once past the
        // region's first chunk) are shifted out.
        let tail = region.get(end.checked_sub(8)?..end)?.first_chunk::<8>()?;
        let offs = u64::from_le_bytes(*tail) >> (8 * (8 - c.sum));
        let wm = mask(8 * w as u32);
        let word = |o: usize| {
            region
                .get(at + o..)?
                .first_chunk::<8>()
                .map(|b| u64::from_le_bytes(*b) & wm)
        };
        // The bases lie in the chunk (`chunk_at` sized it past its entries).
        let base = match c.kind {
            FOR => word(3)?,
            DICT => word(4)?,
            PDICT => {
                let k = 1usize << c.bits.min(7);
                let (a, b) = (word(pdict::HEAD)?, word(pdict::HEAD + k * w)?);
                if self.ordered(a) <= self.ordered(b) {
                    a
                } else {
                    b
                }
            }
            _ => return None,
        };
        Some(c.count as i128 * self.number(base) + i128::from(offs))
    }

    /// The offset a DICT chunk's `code` stands for: its entry's distance above entry 0.
    fn dict_offset(&self, entries: &[u8], code: u64) -> Option<u64> {
        let w = self.w();
        let e = |k: usize| entries.get(k * w..k * w + w).map(le_word);
        Some(self.ordered(e(code as usize)?) - self.ordered(e(0)?))
    }

    /// A word in the order of its numbers (signed: sign bit flipped).
    #[inline]
    fn ordered(&self, word: u64) -> u64 {
        match self.num {
            Num::Signed => {
                let s = 64 - 8 * self.w() as u32;
                (((word << s) as i64 >> s) as u64) ^ (1 << 63)
            }
            _ => word,
        }
    }

    #[inline]
    fn unordered(&self, o: u64) -> u64 {
        match self.num {
            Num::Signed => (o ^ (1 << 63)) & mask(8 * self.w() as u32),
            _ => o,
        }
    }

    fn header(&self, region: &[u8], at: usize) -> SResult<Chunk> {
        let bad = Fault("compressed record chunk outside its region");
        let Some(&[count, kind]) = region.get(at..).and_then(|h| h.first_chunk::<2>()) else {
            return Err(bad);
        };
        let (count, kind, sum) = (usize::from(count), kind & KIND, usize::from(kind >> 4));
        if count == 0 {
            return Err(Fault("empty compressed record chunk"));
        }
        if sum > 0 && !self.may_sum(kind, sum) {
            return Err(Fault("record chunk with a sum where none can be"));
        }
        let w = self.w();
        let byte = |k: usize| region.get(at + k).copied().ok_or(bad.clone());
        let mut c = Chunk {
            count,
            kind,
            len: 0,
            bits: 0,
            param: 0,
            exc: 0,
            sum,
        };
        c.len = sum
            + match kind {
                RAW => 2 + count * w,
                FOR => {
                    c.bits = byte(2)? as u32;
                    if c.bits > 8 * w as u32 {
                        return Err(Fault("record chunk bit width above the record size"));
                    }
                    3 + w + packed_len(count, c.bits)
                }
                DICT => {
                    c.bits = byte(2)? as u32;
                    c.param = byte(3)? as usize + 1;
                    if c.bits > 8 {
                        return Err(Fault("record dictionary code wider than 8 bits"));
                    }
                    4 + c.param * w + packed_len(count, c.bits)
                }
                PDICT => {
                    c.bits = byte(2)? as u32;
                    c.param = byte(3)? as usize + 1;
                    c.exc = byte(4)? as usize;
                    if !pdict::valid(c.bits as usize, c.param, c.exc, count) {
                        return Err(Fault("bad patched record dictionary"));
                    }
                    pdict::Parts::of(&c, w).end
                }
                DEC if self.num == Num::Float => {
                    c.param = byte(2)? as usize;
                    c.bits = byte(3)? as u32;
                    c.exc = byte(12)? as usize;
                    if c.param >= POW10.len() || c.bits > 64 || c.exc > count {
                        return Err(Fault("bad decimal record chunk"));
                    }
                    13 + packed_len(count, c.bits) + 9 * c.exc
                }
                _ => return Err(Fault("unknown record chunk kind")),
            };
        if at + c.len > region.len() {
            return Err(bad);
        }
        Ok(c)
    }

    /// Records and bytes of the chunk at `at`, read from one fixed-size window: the walk of
    /// `locate` over the chunks before the one it wants (a leaf holds up to a hundred). `None`
    /// when the window passes the region's end or the header is not a valid one; `header`
    /// then parses the chunk byte by byte and names the fault.
    #[inline(always)]
    fn skip(&self, region: &[u8], at: usize) -> Option<(usize, usize)> {
        self.chunk_at(region, at).map(|c| (c.count, c.len))
    }

    /// `skip` with the whole header: the same checks as `header`, from the same window (the
    /// chunk a walk stops at is parsed once; `header` then only names the fault of one that
    /// fails here).
    #[inline(always)]
    fn chunk_at(&self, region: &[u8], at: usize) -> Option<Chunk> {
        let &[count, kind, b2, b3] = region.get(at..at + 4)? else {
            return None;
        };
        let (count, w, sum) = (count as usize, self.w(), (kind >> 4) as usize);
        let kind = kind & KIND;
        if count == 0 || (sum > 0 && !self.may_sum(kind, sum)) {
            return None;
        }
        let (b2, b3) = (usize::from(b2), usize::from(b3));
        let mut c = Chunk {
            count,
            kind,
            len: 0,
            bits: 0,
            param: 0,
            exc: 0,
            sum,
        };
        c.len = sum
            + match kind {
                RAW => 2 + count * w,
                FOR if b2 <= 8 * w => {
                    c.bits = b2 as u32;
                    3 + w + packed_len(count, c.bits)
                }
                DICT if b2 <= 8 => {
                    (c.bits, c.param) = (b2 as u32, b3 + 1);
                    4 + c.param * w + packed_len(count, c.bits)
                }
                PDICT => {
                    c.exc = usize::from(*region.get(at + 4)?);
                    if !pdict::valid(b2, b3 + 1, c.exc, count) {
                        return None;
                    }
                    (c.bits, c.param) = (b2 as u32, b3 + 1);
                    pdict::Parts::of(&c, w).end
                }
                DEC if self.num == Num::Float && b2 < POW10.len() && b3 <= 64 => {
                    c.exc = usize::from(*region.get(at + 12)?);
                    if c.exc > count {
                        return None;
                    }
                    (c.param, c.bits) = (b2, b3 as u32);
                    13 + packed_len(count, c.bits) + 9 * c.exc
                }
                _ => return None,
            };
        (at + c.len <= region.len()).then_some(c)
    }

    /// The bytes of the chunk `c` at `at` (`header` checked that they lie in the region).
    #[inline]
    fn body<'r>(region: &'r [u8], at: usize, c: &Chunk) -> SResult<&'r [u8]> {
        region.get(at..at + c.len).ok_or(Fault(CHUNK_OUT))
    }

    /// Record `j` of the chunk at `at` as a word (a point read; `chunk_words` is the bulk
    /// one). Packed values are read from a run that goes on to the region's end, so that the
    /// 8-byte read of `extract` reaches a chunk's last values (bits past them are masked).
    #[inline(always)]
    fn chunk_get(
        &self,
        region: &[u8],
        at: usize,
        c: &Chunk,
        j: usize,
        hint: Option<&RecHint>,
    ) -> SResult<u64> {
        let w = self.w();
        let bad = || Fault(CHUNK_OUT);
        let body = Self::body(region, at, c)?;
        let run = |a: usize| region.get(at + a..).ok_or_else(bad);
        match c.kind {
            RAW => word_in(body, 2 + j * w, w).ok_or_else(bad),
            FOR => {
                let base = self.ordered(word_in(body, 3, w).ok_or_else(bad)?);
                let off = extract(run(3 + w)?, j, c.bits)?;
                Ok(self.unordered(base.wrapping_add(off)))
            }
            DICT => {
                let code = extract(run(4 + c.param * w)?, j, c.bits)? as usize;
                if code >= c.param {
                    return Err(Fault("record dictionary code out of range"));
                }
                word_in(body, 4 + code * w, w).ok_or_else(bad)
            }
            PDICT => {
                let code = self.pdict_code(region, at, c, j, hint)?;
                if code >= c.param {
                    return Err(Fault("record dictionary code out of range"));
                }
                word_in(body, pdict::HEAD + code * w, w).ok_or_else(bad)
            }
            _ => {
                let plen = packed_len(c.count, c.bits);
                let pos = body.get(13 + plen..13 + plen + c.exc).ok_or_else(bad)?;
                if let Ok(k) = pos.binary_search(&(j as u8)) {
                    let v = 13 + plen + c.exc + 8 * k;
                    return Ok(le_word(body.get(v..v + 8).ok_or_else(bad)?));
                }
                let base = le_u64_at(body, 4);
                let i = base.wrapping_add(extract(run(13)?, j, c.bits)?) ^ (1 << 63);
                Ok(((i as i64 as f64) / pow10(c.param)?).to_bits())
            }
        }
    }

    /// Every record of the chunk at `at`, appended to `out` as words.
    fn chunk_decode(&self, region: &[u8], at: usize, c: &Chunk, out: &mut Vec<u64>) -> SResult<()> {
        let mut words = [0u64; 255];
        self.chunk_words(region, at, c, 0, c.count, &mut words)?;
        out.extend_from_slice(words.get(..c.count).ok_or(Fault(CHUNK_OUT))?);
        Ok(())
    }

    /// Records `j0..j1` of the chunk at `at` as words into `out[..j1 - j0]`: the bulk twin of
    /// `chunk_get` (a unit test holds them equal), one pass over the packed bits.
    fn chunk_words(
        &self,
        region: &[u8],
        at: usize,
        c: &Chunk,
        j0: usize,
        j1: usize,
        out: &mut [u64],
    ) -> SResult<()> {
        let w = self.w();
        let body = Self::body(region, at, c)?;
        let part = |a: usize, b: usize| body.get(a..b).ok_or(Fault(CHUNK_OUT));
        // The packed run read on to the region's end: whole groups of eight then reach the
        // chunk's last values (bytes past the chunk are masked off).
        let run = |a: usize| region.get(at + a..).ok_or(Fault(CHUNK_OUT));
        if j0 > j1 || j1 > c.count {
            return Err(Fault("record index out of range"));
        }
        let out = out
            .get_mut(..j1 - j0)
            .ok_or(Fault("record decode buffer too small"))?;
        match c.kind {
            RAW => le_words(part(2 + j0 * w, 2 + j1 * w)?, w, out),
            FOR => {
                let base = self.ordered(self.word(part(3, 3 + w)?)?);
                unpack(run(3 + w)?, c.bits, j0, out)?;
                for o in out.iter_mut() {
                    *o = self.unordered(base.wrapping_add(*o));
                }
            }
            DICT => {
                // The entries as words once, then one table read per record.
                let mut entries = [0u64; 256];
                let dict = part(4, 4 + c.param * w)?;
                for (e, src) in entries.iter_mut().zip(dict.chunks_exact(w)) {
                    *e = le_word(src);
                }
                unpack(run(4 + c.param * w)?, c.bits, j0, out)?;
                let entries = entries.get(..c.param).ok_or(Fault(CHUNK_OUT))?;
                for o in out.iter_mut() {
                    *o = *entries
                        .get(*o as usize)
                        .ok_or(Fault("record dictionary code out of range"))?;
                }
            }
            PDICT => {
                let mut entries = [0u64; 256];
                let dict = part(pdict::HEAD, pdict::HEAD + c.param * w)?;
                for (e, src) in entries.iter_mut().zip(dict.chunks_exact(w)) {
                    *e = le_word(src);
                }
                self.pdict_codes(region, at, c, j0, out)?;
                let entries = entries.get(..c.param).ok_or(Fault(CHUNK_OUT))?;
                for o in out.iter_mut() {
                    *o = *entries
                        .get(*o as usize)
                        .ok_or(Fault("record dictionary code out of range"))?;
                }
            }
            _ => {
                let plen = packed_len(c.count, c.bits);
                let pos = part(13 + plen, 13 + plen + c.exc)?;
                let vals = part(13 + plen + c.exc, 13 + plen + 9 * c.exc)?;
                let base = self.word(part(4, 12)?)?;
                let scale = pow10(c.param)?;
                unpack(run(13)?, c.bits, j0, out)?;
                for o in out.iter_mut() {
                    let i = base.wrapping_add(*o) ^ (1 << 63);
                    *o = ((i as i64 as f64) / scale).to_bits();
                }
                for (&p, v) in pos.iter().zip(vals.chunks_exact(8)) {
                    if let Some(o) = usize::from(p).checked_sub(j0).and_then(|k| out.get_mut(k)) {
                        *o = le_word(v);
                    }
                }
            }
        }
        Ok(())
    }

    /// The sum of the dictionary `entries` (integer records) named by `codes`, every code
    /// below `N` (a power of two at least the codes' range); `None` when a code passes the
    /// entries. Each entry is split into its high (signed for signed records) and low 32 bits,
    /// so the sum runs in two 64-bit lanes, exact for a chunk's 255 codes.
    fn dict_sum<const N: usize>(&self, entries: &[u8], codes: &[u64]) -> Option<i128> {
        let (mut hi, mut lo) = ([0i64; N], [0u64; N]);
        let each = entries.chunks_exact(self.w());
        let param = each.len();
        for ((h, l), src) in hi.iter_mut().zip(lo.iter_mut()).zip(each) {
            let v = self.number(le_word(src));
            *h = (v >> 32) as i64;
            *l = v as u64 & 0xffff_ffff;
        }
        let (mut sh, mut sl, mut any) = (0i64, 0u64, 0usize);
        for &k in codes {
            // Masked to the arrays' length: the checked reads compile to plain loads.
            let k = k as usize & (N - 1);
            sh = sh.wrapping_add(hi.get(k).copied().unwrap_or(0));
            sl += lo.get(k).copied().unwrap_or(0);
            any |= k;
        }
        // `any` bounds every code; only when it reaches past the entries is the largest code
        // needed.
        if any >= param && codes.iter().any(|&k| k as usize >= param) {
            return None;
        }
        Some(((sh as i128) << 32) + sl as i128)
    }

    /// Folds records `js` of the DEC chunk at `at` into `acc`'s sum: the decimals as the
    /// integers they are (`count * base + offsets`, the offsets from the stored sum when the
    /// chunk is whole), exactly; the exceptions as floats. No record is divided by `10^e`.
    fn fold_decimals(
        &self,
        region: &[u8],
        at: usize,
        c: &Chunk,
        js: std::ops::Range<usize>,
        acc: &mut RecFold,
        words: &mut [u64; 255],
    ) -> SResult<()> {
        let bad = || Fault("compressed record chunk outside its region");
        let chunk = region.get(at..at + c.len).ok_or_else(bad)?;
        let base = self.word(chunk.get(4..12).ok_or_else(bad)?)?;
        let plen = packed_len(c.count, c.bits);
        let pos = chunk.get(13 + plen..13 + plen + c.exc).ok_or_else(bad)?;
        let vals = chunk
            .get(13 + plen + c.exc..13 + plen + 9 * c.exc)
            .ok_or_else(bad)?;
        let offsets = region.get(at + 13..).ok_or_else(bad)?;
        let mut offs = match self.stored_sum(chunk, c) {
            Some(s) if js.len() == c.count => s,
            _ => sum_packed(offsets, c.bits, js.clone(), words)?,
        };
        // The exceptions in range: out of the integers (their offsets, 0 when written, taken
        // back out), into the floats.
        let mut exc = 0u64;
        for (k, &p) in pos.iter().enumerate() {
            let p = p as usize;
            if js.contains(&p) {
                exc += 1;
                offs = offs.wrapping_sub(u128::from(extract(offsets, p, c.bits)?));
                let v = vals.get(8 * k..8 * k + 8).ok_or_else(bad)?;
                acc.add_floats(std::iter::once(f64::from_bits(le_word(v))));
            }
        }
        // Positions ascend, so at most one exception per record (repeated ones are damage).
        let ints = (js.len() as u64)
            .checked_sub(exc)
            .ok_or(Fault("decimal record exceptions out of order"))?;
        // Decimal integer i is stored as the order-flipped word `base + offset`.
        let first = (base ^ (1 << 63)) as i64;
        let sum = i128::from(first) * i128::from(ints) + offs as i128;
        acc.add_decimal(ints, sum, c.param as u8);
        Ok(())
    }

    /// Folds records `js` of the chunk at `at` into `acc`. For COUNT and SUM of integers a FOR
    /// chunk is `count * base + the sum of its offsets` and a DICT chunk the sum of its entries
    /// looked up by code, so neither is decoded into records first (the patched-FOR paper's
    /// point: work on the compressed form, one vector at a time); every other case decodes the
    /// records into `words` and folds them.
    #[allow(clippy::too_many_arguments)]
    fn fold_chunk(
        &self,
        region: &[u8],
        at: usize,
        c: &Chunk,
        js: std::ops::Range<usize>,
        rn: RecNum,
        acc: &mut RecFold,
        words: &mut [u64; 255],
    ) -> SResult<()> {
        let (w, n) = (self.w(), js.len());
        if acc.skip_extremes && c.kind == DEC && n > 0 {
            return self.fold_decimals(region, at, c, js, acc, words);
        }
        if acc.skip_extremes && self.num != Num::Float && n > 0 {
            let bad = || Fault("compressed record chunk outside its region");
            let chunk = region.get(at..at + c.len).ok_or_else(bad)?;
            if n == c.count {
                // The whole chunk: its stored sum, no record read.
                if let Some(sum) = self.records_sum(chunk, c)? {
                    acc.count += n as u64;
                    acc.isum += sum;
                    return Ok(());
                }
            }
            match c.kind {
                FOR => {
                    let base = self.word(region.get(at + 3..at + 3 + w).ok_or_else(bad)?)?;
                    let data = region.get(at + 3 + w..).ok_or_else(bad)?;
                    let offs = sum_packed(data, c.bits, js, words)?;
                    acc.count += n as u64;
                    acc.isum += n as i128 * self.number(base) + offs as i128;
                    return Ok(());
                }
                DICT => {
                    let entries = region.get(at + 4..at + 4 + c.param * w).ok_or_else(bad)?;
                    let data = region.get(at + 4 + c.param * w..).ok_or_else(bad)?;
                    let codes = words.get_mut(..n).ok_or(Fault(CHUNK_OUT))?;
                    unpack(data, c.bits, js.start, codes)?;
                    let sum = if c.bits <= 4 {
                        self.dict_sum::<16>(entries, codes)
                    } else {
                        self.dict_sum::<256>(entries, codes)
                    };
                    acc.count += n as u64;
                    acc.isum += sum.ok_or(Fault("record dictionary code out of range"))?;
                    return Ok(());
                }
                PDICT => {
                    if let Some(sum) = self.pdict_sum0(region, at, c, js.clone())? {
                        acc.count += n as u64;
                        acc.isum += sum;
                        return Ok(());
                    }
                    let dict = at + pdict::HEAD;
                    let entries = region.get(dict..dict + c.param * w).ok_or_else(bad)?;
                    let codes = words.get_mut(..n).ok_or(Fault(CHUNK_OUT))?;
                    self.pdict_codes(region, at, c, js.start, codes)?;
                    let sum = if c.param <= 16 {
                        self.dict_sum::<16>(entries, codes)
                    } else {
                        self.dict_sum::<256>(entries, codes)
                    };
                    acc.count += n as u64;
                    acc.isum += sum.ok_or(Fault("record dictionary code out of range"))?;
                    return Ok(());
                }
                _ => {}
            }
        }
        self.chunk_words(region, at, c, js.start, js.end, words)?;
        acc.add_words(rn, words.get(..n).ok_or(Fault(CHUNK_OUT))?);
        Ok(())
    }

    /// Folds records `range` of a region of `n` records into `acc` (see `RecordList::fold`):
    /// every chunk the range touches is decoded once, in bulk, and folded.
    pub fn fold(
        &self,
        region: &[u8],
        n: usize,
        range: std::ops::Range<usize>,
        rn: RecNum,
        acc: &mut RecFold,
        hint: &RecHint,
    ) -> SResult<()> {
        FOLD_WORDS.with(|w| {
            let words = &mut *w.borrow_mut();
            // Folds of consecutive ranges (GROUP BY buckets) start at the chunk the last one
            // ended in.
            let (start, past) = Self::walk_from(region, n, range.start, hint.at.get());
            let (mut at, mut seen) = start;
            // COUNT and SUM of integers: whole chunks from their stored sums.
            let whole = acc.skip_extremes && self.num != Num::Float;
            while seen < range.end {
                if seen >= n {
                    return Err(Fault("record index out of range"));
                }
                // Parsed from one window (`chunk_at`); `header` names the fault of one that
                // fails there.
                let c = match self.chunk_at(region, at) {
                    Some(c) => c,
                    None => self.header(region, at)?,
                };
                let (j0, j1) = (
                    range.start.max(seen) - seen,
                    range.end.min(seen + c.count) - seen,
                );
                if j0 == 0 && j1 == c.count && whole {
                    match self.whole_sum(region, at, &c) {
                        Some(s) => {
                            acc.count += c.count as u64;
                            acc.isum += s;
                        }
                        None => self.fold_chunk(region, at, &c, j0..j1, rn, acc, words)?,
                    }
                } else if j0 < j1 {
                    self.fold_chunk(region, at, &c, j0..j1, rn, acc, words)?;
                }
                if range.end <= seen + c.count {
                    self.prove_walk(region, n, (start, past), (at, seen), &c, hint)?;
                    break;
                }
                seen += c.count;
                at += c.len;
            }
            Ok(())
        })
    }

    /// Bytes used by `n` records; checks every chunk header and the record count.
    ///
    /// O(1): the region's first two bytes. The chunks themselves are checked as they are read
    /// (every header is bounds-checked, and a walk that runs out of chunks before `n` records is
    /// a fault), and in full by `check` (`decode_all`).
    pub fn used(&self, region: &[u8], n: usize) -> SResult<usize> {
        if n == 0 {
            return Ok(0);
        }
        let u = match region.first_chunk::<2>() {
            Some(b) => usize::from(u16::from_le_bytes(*b)),
            None => return Err(Fault("record region shorter than its header")),
        };
        // At least one chunk per 255 records, of at least 3 bytes (one raw byte).
        if u < Self::chunks_at(region) + 3 * n.div_ceil(255) || u > region.len() {
            return Err(Fault("compressed record region of a bad length"));
        }
        Ok(u)
    }

    /// The chunk holding record `i` (for inserts, position `i` may be one past a chunk's end):
    /// `(offset, header, index in the chunk)`.
    fn locate(
        &self,
        region: &[u8],
        n: usize,
        i: usize,
        insert: bool,
    ) -> SResult<(usize, Chunk, usize)> {
        self.locate_from(region, n, i, insert, &RecHint::default())
    }

    /// `locate` for a write: the chunks walked are not proven (`prove`). Writes trust the
    /// counts as they trust decoded keys (they return nothing read); a chunk count forged
    /// behind a valid checksum stays in the page, where reads and `check` find it.
    fn locate_to_write(
        &self,
        region: &[u8],
        n: usize,
        i: usize,
        insert: bool,
    ) -> SResult<(usize, Chunk, usize)> {
        let (start, _) = Self::walk_from(region, n, i, (0, 0));
        self.find(region, n, i, insert, start)
    }

    /// `locate`, walking from the hint's chunk when that is at or before record `i`, and
    /// proving the chunks from the one found on (`prove`) unless the hint has; the hint is
    /// left at the chunk found.
    fn locate_from(
        &self,
        region: &[u8],
        n: usize,
        i: usize,
        insert: bool,
        hint: &RecHint,
    ) -> SResult<(usize, Chunk, usize)> {
        let (start, past) = Self::walk_from(region, n, i, hint.at.get());
        let (at, c, j) = self.find(region, n, i, insert, start)?;
        self.prove_walk(region, n, (start, past), (at, i - j), &c, hint)?;
        Ok((at, c, j))
    }

    /// After a walk from `start` (and `past`, its first directory entry beyond the record
    /// walked to: `walk_from`) reached the chunk `(at, first record)` of `count` records:
    /// proves the chunks from there on (`prove`) unless the hint's proven stretch holds both
    /// the start and that chunk, and leaves the hint at the chunk. The stretch proven is then
    /// the walk's: from its start to where the proof stopped.
    ///
    /// A start counts as inside the stretch only when it is the stretch's own start (offset
    /// and first record) or the hint's chunk (found by a walk inside it): a directory entry
    /// forged to the offset where the stretch begins, with another first record, is proven
    /// (with an entry for every chunk, a forged offset is always some stretch's start).
    #[inline(always)]
    fn prove_walk(
        &self,
        region: &[u8],
        n: usize,
        (start, past): ((usize, usize), usize),
        (at, seen): (usize, usize),
        c: &Chunk,
        hint: &RecHint,
    ) -> SResult<()> {
        let (lo, first, hi) = hint.proven.get();
        let known = start == (lo, first) || start == hint.at.get();
        if !(known && lo <= start.0 && at < hi) {
            // The chunk itself was parsed by the walk: the proof starts after it.
            let to = self.prove_after(region, n, past, (at + c.len, seen + c.count))?;
            hint.proven.set((start.0, start.1, to));
        }
        hint.at.set((at, seen));
        Ok(())
    }

    /// `prove` from the chunk at `end`, whose first record is `next`, to the stop after it (a
    /// call of its own: the check of `prove_walk` that skips it stays small where inlined).
    #[inline(never)]
    fn prove_after(
        &self,
        region: &[u8],
        n: usize,
        past: usize,
        (end, next): (usize, usize),
    ) -> SResult<usize> {
        let stop = Self::stop_after(region, n, next, past);
        self.prove(region, end, next, stop)
    }

    /// Where the chunks from record `next` on are known to start: the first live directory
    /// entry at or after `next`, `(offset, first record)`, else the end of the region,
    /// `(used, n)` (`used` as stored: a proof that reaches it has checked it). The entries
    /// ascend in record order; the search starts at entry `from`, none before which names a
    /// record at or after `next` (a read's walk found the first past where it started).
    #[inline]
    fn stop_after(region: &[u8], n: usize, next: usize, from: usize) -> (usize, usize) {
        let end = (usize::from(le_u16_at(region, 0)), n);
        let Some(k) = Self::dir_size(region).filter(|_| next < n) else {
            return end;
        };
        let entries = region.get(5..5 + DIR_ENTRY * k).unwrap_or_default();
        for e in entries.chunks_exact(DIR_ENTRY).skip(from) {
            let (r, off) = read_entry(e);
            if r >= next && off != 0 {
                return (off, r);
            }
        }
        end
    }

    /// Walks the chunk headers from the chunk at `at`, whose first record is `seen`, to `stop`
    /// (`stop_after`): they must reach its offset exactly, with its first record (at the
    /// region's end: `used` and the node's count). A read trusts where it starts (the first
    /// chunk, a directory entry or a hint) and the counts of the chunks it walks: a forged
    /// count, length or entry shows here as a fault. Returns the offset proven up to.
    #[inline(always)]
    fn prove(
        &self,
        region: &[u8],
        mut at: usize,
        mut seen: usize,
        stop: (usize, usize),
    ) -> SResult<usize> {
        while at < stop.0 {
            let (count, len) = match self.skip(region, at) {
                Some(s) => s,
                None => {
                    let c = self.header(region, at)?;
                    (c.count, c.len)
                }
            };
            seen += count;
            at += len;
        }
        if (at, seen) != stop {
            return Err(Fault(
                "record chunks disagree with their directory or the node's count",
            ));
        }
        Ok(at)
    }

    /// The chunk holding record `i` (see `locate`), walking from `start` = (offset, index of
    /// its first record), a chunk at or before record `i` (`walk_from`).
    #[inline(always)]
    fn find(
        &self,
        region: &[u8],
        n: usize,
        i: usize,
        insert: bool,
        start: (usize, usize),
    ) -> SResult<(usize, Chunk, usize)> {
        let (mut at, mut seen) = start;
        while seen < n {
            // Each chunk is parsed from one window (`chunk_at`); `header` names the fault of
            // one that fails there.
            let c = match self.chunk_at(region, at) {
                Some(c) => c,
                None => self.header(region, at)?,
            };
            let last = seen + c.count >= n;
            if i < seen + c.count || (insert && i == seen + c.count && last) {
                return Ok((at, c, i - seen));
            }
            seen += c.count;
            at += c.len;
        }
        Err(Fault("record index out of range"))
    }

    /// Record `i` as its little-endian bytes (`width` of them): a point read. `locate` with
    /// nothing to remember (no hint), in one body: the walk from the directory, the proof of
    /// the chunks from the one found to the next directory entry, one record decoded.
    pub fn get(&self, region: &[u8], n: usize, i: usize) -> SResult<[u8; 8]> {
        let (start, past) = Self::walk_from(region, n, i, (0, 0));
        let (at, c, j) = self.find(region, n, i, false, start)?;
        let next = i - j + c.count;
        let stop = Self::stop_after(region, n, next, past);
        self.prove(region, at + c.len, next, stop)?;
        Ok(self.chunk_get(region, at, &c, j, None)?.to_le_bytes())
    }

    /// `get` starting from the chunk of an earlier read of the same region (scans read records
    /// in order: each read then walks at most one chunk header).
    pub fn get_hinted(
        &self,
        region: &[u8],
        n: usize,
        i: usize,
        hint: &RecHint,
    ) -> SResult<[u8; 8]> {
        let (at, c, j) = self.locate_from(region, n, i, false, hint)?;
        Ok(self.chunk_get(region, at, &c, j, Some(hint))?.to_le_bytes())
    }

    /// Encodes `vals` as chunks of at most `self.chunk` records, appended to `out`.
    pub fn encode_all(&self, vals: &[u64], out: &mut Vec<u8>) {
        self.encode_spaced(vals, DIR_EVERY, out);
    }

    /// `encode_all` with a directory entry every `every` chunks (tests write the spacing of
    /// older files with it).
    fn encode_spaced(&self, vals: &[u64], every: usize, out: &mut Vec<u8>) {
        let start = out.len();
        let cap = self.chunk.max(1) as usize;
        let mut chunks = Vec::with_capacity(vals.len().div_ceil(cap) * (3 + cap * self.w()));
        // (first record, offset in `chunks`) of every `every`-th chunk after the first.
        let mut marks = Vec::new();
        for (k, part) in vals.chunks(cap).enumerate() {
            if k > 0 && k % every.max(1) == 0 {
                marks.push((k * cap, chunks.len()));
            }
            self.encode_chunk(part, &mut chunks);
        }
        let entries = if marks.len() >= 2 {
            marks.len().min(255)
        } else {
            0
        };
        let dir = if entries > 0 {
            3 + DIR_ENTRY * entries
        } else {
            0
        };
        out.extend_from_slice(&[0, 0]);
        if entries > 0 {
            out.extend_from_slice(&[0, DIR, entries as u8]);
            for &(first, off) in marks.iter().take(entries) {
                let mut e = [0u8; DIR_ENTRY];
                write_entry(&mut e, first, 2 + dir + off);
                out.extend_from_slice(&e);
            }
        }
        out.extend_from_slice(&chunks);
        let used = (out.len() - start) as u16;
        put(out, start, &used.to_le_bytes());
    }

    /// Where the region's chunks start: after its `used` and, when it has one, its directory.
    #[inline]
    fn chunks_at(region: &[u8]) -> usize {
        Self::dir_size(region).map_or(2, |k| 5 + DIR_ENTRY * k)
    }

    /// The directory's number of entries, `None` without a directory.
    #[inline]
    fn dir_size(region: &[u8]) -> Option<usize> {
        match region.get(2..5) {
            Some(&[0, DIR, k]) => Some(k as usize),
            _ => None,
        }
    }

    /// Bytes a new directory entry adds to the region (with the directory's header when there
    /// is none yet).
    fn dir_growth(region: &[u8]) -> usize {
        match Self::dir_size(region) {
            Some(_) => DIR_ENTRY,
            None => 3 + DIR_ENTRY,
        }
    }

    /// The directory's entries, `(first record, offset)` each (none without a directory).
    fn dir_entries(region: &[u8]) -> impl Iterator<Item = (usize, usize)> + '_ {
        let k = Self::dir_size(region).unwrap_or(0);
        region
            .get(5..5 + DIR_ENTRY * k)
            .unwrap_or(&[])
            .chunks_exact(DIR_ENTRY)
            .map(read_entry)
    }

    /// Where a walk to record `i` of `n` starts: the chunk of `from` (an earlier read's
    /// `(offset, first record)`) or of the last directory entry at or before `i`, whichever is
    /// later, else the first chunk. Entries that no longer point into the chunks (offset 0,
    /// or past the region's end) are passed over.
    /// Also returns the index of the first directory entry past record `i` (where `stop_after`
    /// looks for the end of the stretch a read proves).
    #[inline]
    fn walk_from(
        region: &[u8],
        n: usize,
        i: usize,
        from: (usize, usize),
    ) -> ((usize, usize), usize) {
        let first = Self::chunks_at(region);
        let mut best = (first, 0);
        let k = Self::dir_size(region).unwrap_or(0);
        let entry = |j: usize| {
            region
                .get(5 + DIR_ENTRY * j..5 + DIR_ENTRY * (j + 1))
                .map_or((0, 0), read_entry)
        };
        // The entries are in record order: the last at or before `i`, by halving, then back
        // over any cleared ones.
        let (mut lo, mut hi) = (0, k);
        while lo < hi {
            let mid = (lo + hi) / 2;
            if entry(mid).0 <= i.min(n) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        for j in (0..lo).rev() {
            let (r, off) = entry(j);
            if off >= first && off < region.len() {
                best = (off, r);
                break;
            }
        }
        if from.0 >= first && from.1 <= i && from.1 >= best.1 {
            best = from;
        }
        (best, lo)
    }

    /// Adds a directory entry for the chunk at `chunk_at` whose first record is `first` (the
    /// last chunk of a region of `used` bytes), creating the directory when there is none: the
    /// chunks move up by the entry's bytes.
    fn grow_dir(region: &mut [u8], used: usize, first: usize, chunk_at: usize) -> SResult<()> {
        let had = Self::chunks_at(region);
        let add = Self::dir_growth(region);
        let end = used + add;
        if end > region.len() || end > usize::from(u16::MAX) || chunk_at < had || chunk_at >= used {
            return Err(Fault("record region too small for a directory entry"));
        }
        let full = Fault("record directory full");
        let k = Self::dir_size(region).unwrap_or(0);
        if k >= 255 {
            return Err(full);
        }
        region.copy_within(had..used, had + add);
        put(region, 2, &[0, DIR, (k + 1) as u8]);
        let dir = region.get_mut(5..5 + DIR_ENTRY * (k + 1)).ok_or(full)?;
        let (old, new) = dir.split_at_mut(DIR_ENTRY * k);
        for e in old.chunks_exact_mut(DIR_ENTRY) {
            let (r, off) = read_entry(e);
            if off != 0 {
                write_entry(e, r, off + add);
            }
        }
        write_entry(new, first, chunk_at + add);
        put(region, 0, &(end as u16).to_le_bytes());
        Ok(())
    }

    /// After `old` bytes at `at` became `new_len` bytes and the records after them moved by
    /// `moved` (an insert 1, a remove -1): every directory entry past `at` moves with its
    /// chunk; an entry left past the chunks' end (`end`) is cleared.
    fn shift_dir(
        region: &mut [u8],
        at: usize,
        old: usize,
        new_len: usize,
        moved: isize,
        end: usize,
    ) {
        let Some(k) = Self::dir_size(region) else {
            return;
        };
        let Some(dir) = region.get_mut(5..5 + DIR_ENTRY * k) else {
            return;
        };
        for e in dir.chunks_exact_mut(DIR_ENTRY) {
            let (first, off) = read_entry(e);
            let (first, off) = if off > at {
                (
                    first.saturating_add_signed(moved),
                    (off + new_len).saturating_sub(old),
                )
            } else {
                (first, off)
            };
            write_entry(e, first, if off >= end { 0 } else { off });
        }
    }

    /// Encodes 1..=255 records as one chunk, the smallest layout (ties: FOR, DEC, DICT, PDICT, RAW).
    fn encode_chunk(&self, vals: &[u64], out: &mut Vec<u8>) {
        self.encode_with(vals, None, true, out)
    }

    /// `encode_chunk`, or with `force` the layout `(kind, DEC exponent)` of an earlier chunk of a
    /// superset of `vals` (which then takes no more bytes than that chunk did when `sums` is
    /// whether that chunk had a sum). Without `sums`, no chunk carries a sum.
    fn encode_with(&self, vals: &[u64], force: Option<(u8, usize)>, sums: bool, out: &mut Vec<u8>) {
        let (n, w) = (vals.len(), self.w());
        debug_assert!((1..=255).contains(&n));
        let allow = |k: u8| force.is_none_or(|(f, _)| f == k);
        let or_max = |ok: bool, len: usize| if ok { len } else { usize::MAX };
        let raw_len = or_max(allow(RAW), 2 + n * w);
        let (mut lo, mut hi) = (u64::MAX, 0u64);
        for &v in vals {
            let o = self.ordered(v);
            lo = lo.min(o);
            hi = hi.max(o);
        }
        let for_bits = bits_for(hi - lo);
        // Integer chunks carry the sum of their offsets (FOR, DICT): a SUM over whole chunks
        // reads it instead of the records.
        let int_sums = sums && self.num != Num::Float;
        let for_sum = if int_sums { sum_len(for_bits) } else { 0 };
        let for_len = or_max(allow(FOR), 3 + w + packed_len(n, for_bits) + for_sum);
        let dec = match force {
            _ if self.num != Num::Float => None,
            Some((DEC, e)) => Some(dec_at(vals, e)),
            Some(_) => None,
            None => dec_plan(vals),
        };
        let dec_sum = match &dec {
            Some(d) if sums => sum_len(d.bits),
            _ => 0,
        };
        let dec_len = dec.as_ref().map_or(usize::MAX, |d| d.len(n) + dec_sum);
        let others = for_len.min(dec_len).min(raw_len);
        // A dictionary holds at least the distinct values of a sample: when even that many
        // entries cost as much as the best other layout, the values are not sorted at all.
        let dict_len_at = |d: usize| 4 + d * w + packed_len(n, bits_for(d.max(1) as u64 - 1));
        // (The estimate leaves out the sum's bytes, which the chosen dictionary adds.)
        let mut sample = [0u64; 16];
        let k = n.min(16);
        for (s, &v) in sample.iter_mut().zip(vals) {
            *s = v;
        }
        let sample = sample.get_mut(..k).unwrap_or_default();
        sample.sort_unstable();
        let seen = 1 + sample.windows(2).filter(|p| p.first() != p.last()).count();
        // A patched dictionary holds them too, and needs no codes for a dominant value.
        let pdict_floor = pdict::HEAD + seen * w;
        // The distinct values in the values' order, how often each occurs (a chunk holds at
        // most 255 records: a byte each) and the most occurrences of one.
        let mut sorted: Vec<u64> = Vec::new();
        let mut times = [0u8; 256];
        let (mut run, mut most, mut at) = (1usize, 0usize, 0usize);
        if (allow(DICT) && dict_len_at(seen) < others) || (allow(PDICT) && pdict_floor < others) {
            sorted.extend(vals.iter().map(|&v| self.ordered(v)));
            sorted.sort_unstable();
            sorted.dedup_by(|a, b| {
                let same = a == b;
                if same {
                    run += 1;
                } else {
                    if let Some(t) = times.get_mut(at) {
                        *t = run as u8;
                    }
                    (run, most, at) = (1, most.max(run), at + 1);
                }
                same
            });
            if let Some(t) = times.get_mut(at) {
                *t = run as u8;
            }
            most = most.max(run);
        }
        let distinct = sorted.len();
        let dict_bits = bits_for(distinct.max(1) as u64 - 1);
        let dict_sum = match (sorted.first(), sorted.last()) {
            (Some(lo), Some(hi)) if int_sums => sum_len(bits_for(hi - lo)),
            _ => 0,
        };
        let dict_len = if allow(DICT) && distinct > 0 && distinct <= 256 {
            dict_len_at(distinct) + dict_sum
        } else {
            usize::MAX
        };
        let pd = if allow(PDICT) && pdict::floor(n, distinct, most, w) < others.min(dict_len) {
            // (value, occurrences) of each distinct value, ascending.
            let counts: Vec<(u64, usize)> = sorted
                .iter()
                .zip(times)
                .map(|(&v, t)| (v, usize::from(t)))
                .collect();
            pdict::plan(&counts, n, w).map(|p| (p, counts))
        } else {
            None
        };
        // (The same range as the dictionary's: a patched one holds every value too.)
        let pd_len = pd.as_ref().map_or(usize::MAX, |p| p.0.len + dict_sum);
        let best = others.min(dict_len).min(pd_len);
        out.push(n as u8);
        if best == for_len {
            out.push(FOR | (for_sum as u8) << 4);
            out.push(for_bits as u8);
            push_le(out, self.unordered(lo).into(), w);
            pack(vals.iter().map(|&v| self.ordered(v) - lo), for_bits, out);
            if for_sum > 0 {
                let sum: u128 = vals.iter().map(|&v| u128::from(self.ordered(v) - lo)).sum();
                push_le(out, sum, for_sum);
            }
        } else if let Some(d) = dec.as_ref().filter(|_| best == dec_len) {
            out.push(DEC | (dec_sum as u8) << 4);
            out.push(d.e as u8);
            out.push(d.bits as u8);
            out.extend_from_slice(&d.base.to_le_bytes());
            out.push(d.exc.len() as u8);
            pack(d.offsets.iter().copied(), d.bits, out);
            out.extend(d.exc.iter().map(|&j| j as u8));
            for v in d.exc.iter().filter_map(|&j| vals.get(j)) {
                out.extend_from_slice(&v.to_le_bytes());
            }
            if dec_sum > 0 {
                // Exceptions have offset 0: the sum is that of the decimals' offsets.
                let sum: u128 = d.offsets.iter().map(|&o| u128::from(o)).sum();
                push_le(out, sum, dec_sum);
            }
        } else if best == dict_len {
            out.push(DICT | (dict_sum as u8) << 4);
            out.push(dict_bits as u8);
            out.push((sorted.len() - 1) as u8);
            for &o in &sorted {
                push_le(out, self.unordered(o).into(), w);
            }
            let code = |v: u64| sorted.binary_search(&self.ordered(v)).unwrap_or(0) as u64;
            pack(vals.iter().map(|&v| code(v)), dict_bits, out);
            if dict_sum > 0 {
                let lo = sorted.first().copied().unwrap_or(0);
                let sum: u128 = vals.iter().map(|&v| u128::from(self.ordered(v) - lo)).sum();
                push_le(out, sum, dict_sum);
            }
        } else if let Some((p, counts)) = pd.as_ref().filter(|_| best == pd_len) {
            self.encode_pdict(vals, counts, p, dict_sum, out);
        } else {
            out.push(RAW);
            for &v in vals {
                push_le(out, v.into(), w);
            }
        }
    }

    /// The bytes of the chunk at `at` after `edit` changes its records (re-encoded, split in
    /// two when it grew past the chunk size; nothing when it became empty).
    fn rewrite(
        &self,
        region: &[u8],
        at: usize,
        c: &Chunk,
        edit: impl FnOnce(&mut Vec<u64>),
        out: &mut Vec<u8>,
    ) -> SResult<()> {
        let mut vals = Vec::with_capacity(c.count + 1);
        self.chunk_decode(region, at, c, &mut vals)?;
        edit(&mut vals);
        if vals.len() > self.chunk as usize {
            let (a, b) = vals.split_at(vals.len() / 2);
            self.encode_chunk(a, out);
            self.encode_chunk(b, out);
        } else if !vals.is_empty() {
            // A chunk growing between a quarter and one short of full keeps its layout (as
            // `extend` does; its frame, dictionary or exponent re-fitted): choosing among every
            // layout on every random insert was most of a random load's time. The full chunk
            // chooses again.
            let cap = self.chunk as usize;
            let keep = vals.len() > c.count && c.count >= cap.div_ceil(4) && vals.len() < cap;
            let force = (keep && c.kind != RAW).then_some((c.kind, c.param));
            self.encode_with(&vals, force, true, out);
        }
        Ok(())
    }

    /// The chunk edit for inserting `raw` at `i`, or setting it (`set`): the chunk's offset, old
    /// length and new bytes.
    fn plan(&self, region: &[u8], n: usize, i: usize, raw: &[u8], set: bool) -> SResult<Edit> {
        let v = self.word(raw)?;
        let mut out = Vec::new();
        if n == 0 {
            if set || i != 0 {
                return Err(Fault("record index out of range"));
            }
            self.encode_chunk(&[v], &mut out);
            return Ok(Edit::new(2, 0, out, set));
        }
        let (at, c, j) = self.locate_to_write(region, n, i, !set)?;
        if !set && j == c.count && c.count >= self.chunk as usize {
            // Past the end of a full chunk (ascending loads): a new chunk after it, so the full
            // one stays full instead of splitting in halves.
            self.encode_chunk(&[v], &mut out);
            let mut e = Edit::new(at + c.len, 0, out, set);
            // Every DIR_EVERY full chunks appended, a directory entry for the new one.
            let (entries, last) =
                Self::dir_entries(region).fold((0, 0), |(k, _), (r, _)| (k + 1, r));
            if entries < 255 && i >= last + DIR_EVERY * self.chunk as usize {
                e.entry = Some(i);
            }
            return Ok(e);
        }
        let old = Self::body(region, at, &c)?;
        if !set && j == c.count {
            if let Some(ext) = self.extend(old, &c, v) {
                return Ok(Edit::new(at, c.len, ext, set));
            }
        }
        if set {
            if let Some(new) = self.set_in_layout(old, &c, j, v) {
                return Ok(Edit::new(at, c.len, new, set));
            }
        }
        self.rewrite(
            region,
            at,
            &c,
            |vals| {
                // `locate` put `j` inside the chunk (one past its end for an insert).
                if set {
                    if let Some(x) = vals.get_mut(j) {
                        *x = v;
                    }
                } else {
                    vals.insert(j.min(vals.len()), v);
                }
            },
            &mut out,
        )?;
        Ok(Edit::new(at, c.len, out, set))
    }

    /// The chunk `old` with `v` appended, when `v` fits its layout as it is (the common case
    /// of ascending loads): its bytes are copied, not decoded and chosen again.
    /// Only between a quarter of a chunk (a layout chosen on fewer records may suit the rest
    /// badly: one record is smallest raw) and its last record (the full chunk chooses again).
    fn extend(&self, old: &[u8], c: &Chunk, v: u64) -> Option<Vec<u8>> {
        let cap = self.chunk as usize;
        if c.count < cap.div_ceil(4) || c.count + 1 >= cap {
            return None;
        }
        if c.kind == RAW {
            let mut out = old.to_vec();
            *out.first_mut()? += 1;
            push_le(&mut out, v.into(), self.w());
            return Some(out);
        }
        if c.kind == PDICT {
            return self.pdict_extend(old, c, v);
        }
        let (body, x) = self.code_in_layout(old, c, v)?;
        // DEC keeps its exception positions and values after the codes.
        // FOR and DICT keep their sum there.
        let tail_at = if c.kind == DEC {
            13 + packed_len(c.count, c.bits)
        } else {
            old.len().checked_sub(c.sum)?
        };
        let (head, tail) = (old.get(..tail_at)?, old.get(tail_at..)?);
        let mut out = Vec::with_capacity(old.len() + 9);
        out.extend_from_slice(head);
        *out.first_mut()? += 1;
        out.resize(body + packed_len(c.count + 1, c.bits), 0);
        if c.bits > 0 {
            let p = c.count * c.bits as usize;
            let mut acc = u128::from(x) << (p % 8);
            for b in out.get_mut(body + p / 8..)? {
                *b |= acc as u8;
                acc >>= 8;
            }
        }
        out.extend_from_slice(tail);
        if let Some(sum) = self.stored_sum(old, c) {
            let sum = sum + u128::from(self.code_offset(old, c, x)?);
            let end = out.len();
            write_sum(out.get_mut(end - c.sum..)?, sum)?;
        }
        Some(out)
    }

    /// The offset that code `x` of the FOR, DICT or PDICT chunk `old` adds to its sum.
    fn code_offset(&self, old: &[u8], c: &Chunk, x: u64) -> Option<u64> {
        match c.kind {
            DICT => self.dict_offset(old.get(4..4 + c.param * self.w())?, x),
            PDICT => self.pdict_offset(old, c, x),
            _ => Some(x),
        }
    }

    /// Where the codes of the FOR, DICT or DEC chunk `old` start, and `v`'s code in its layout
    /// as it is (inside the frame, in the dictionary, a decimal of the exponent; a DEC chunk
    /// with exceptions takes none): `None` when `v` does not fit.
    fn code_in_layout(&self, old: &[u8], c: &Chunk, v: u64) -> Option<(usize, u64)> {
        let w = self.w();
        let (body, x) = match c.kind {
            FOR => {
                let base = self.ordered(self.word(old.get(3..3 + w)?).ok()?);
                (3 + w, self.ordered(v).checked_sub(base)?)
            }
            DICT => {
                let dict = old.get(4..4 + c.param * w)?;
                let code = dict
                    .chunks_exact(w)
                    .position(|d| Some(d) == v.to_le_bytes().get(..w))?;
                (4 + c.param * w, code as u64)
            }
            DEC if c.exc == 0 => {
                let i = dec_int(v, c.param)?;
                let base = u64::from_le_bytes(old.get(4..12)?.try_into().ok()?);
                (13, ((i as u64) ^ (1 << 63)).checked_sub(base)?)
            }
            _ => return None,
        };
        (x <= mask(c.bits)).then_some((body, x))
    }

    /// The chunk `old` with record `j` set to `v`, when `v` fits its layout as it is (inside the
    /// frame, in the dictionary, a decimal of the exponent): the one code is rewritten in a
    /// copy, not the chunk decoded and chosen again (random overwrites of compressed records).
    /// The layout may then no longer be the smallest, as after removes.
    fn set_in_layout(&self, old: &[u8], c: &Chunk, j: usize, v: u64) -> Option<Vec<u8>> {
        if c.kind == RAW {
            let w = self.w();
            let mut out = old.to_vec();
            out.get_mut(2 + j * w..2 + j * w + w)?
                .copy_from_slice(v.to_le_bytes().get(..w)?);
            return Some(out);
        }
        if c.kind == PDICT {
            return self.pdict_set(old, c, j, v);
        }
        let (body, x) = self.code_in_layout(old, c, v)?;
        if j >= c.count {
            return None;
        }
        let mut out = old.to_vec();
        if let Some(sum) = self.stored_sum(old, c) {
            let was = extract(old.get(body..)?, j, c.bits).ok()?;
            let sum = (sum + u128::from(self.code_offset(old, c, x)?))
                .checked_sub(u128::from(self.code_offset(old, c, was)?))?;
            write_sum(out.get_mut(c.len - c.sum..c.len)?, sum)?;
        }
        put_bits(out.get_mut(body..)?, j, c.bits, x)?;
        Some(out)
    }

    /// Replaces `old` bytes at `at` by `new`, moving the chunks after it; the region has room.
    /// `moved`: how the records after the chunk moved (an insert 1, a remove -1), for the
    /// directory.
    fn splice(
        region: &mut [u8],
        used: usize,
        at: usize,
        old: usize,
        new: &[u8],
        moved: isize,
    ) -> SResult<()> {
        let bad = Fault("record region too small for a chunk");
        if at + old > used {
            return Err(bad);
        }
        let end = used - old + new.len();
        if end > region.len() || end > usize::from(u16::MAX) {
            return Err(bad);
        }
        region.copy_within(at + old..used, at + new.len());
        region
            .get_mut(at..at + new.len())
            .ok_or(bad)?
            .copy_from_slice(new);
        put(region, 0, &(end as u16).to_le_bytes());
        Self::shift_dir(region, at, old, new.len(), moved, end);
        Ok(())
    }

    /// `used`, counting the region's header when it has no records yet (an insert adds it).
    fn used_for_write(&self, region: &[u8], n: usize) -> SResult<usize> {
        if n == 0 {
            return Ok(2);
        }
        self.used(region, n)
    }

    /// Bytes the list uses after inserting (or with `set`, replacing) record `i`.
    pub fn used_after(
        &self,
        region: &[u8],
        n: usize,
        i: usize,
        raw: &[u8],
        set: bool,
    ) -> SResult<usize> {
        let used = self.used_for_write(region, n)?;
        let e = self.plan(region, n, i, raw, set)?;
        e.used_after(region, used)
    }

    /// Plans inserting (or with `set`, replacing) record `i`: the bytes the list uses after
    /// it, and the chunk edit for [`NumRecs::apply`]. A node asks for the size of a change and
    /// then makes it; the plan carries the chunk found and re-encoded between the two, so the
    /// chunks are walked and the chunk encoded once per change.
    pub fn plan_edit(
        &self,
        region: &[u8],
        n: usize,
        i: usize,
        raw: &[u8],
        set: bool,
    ) -> SResult<(usize, Edit)> {
        let used = self.used_for_write(region, n)?;
        let e = self.plan(region, n, i, raw, set)?;
        Ok((e.used_after(region, used)?, e))
    }

    /// Makes a change planned by [`NumRecs::plan_edit`] on the same records (the region may
    /// have moved in the page since, not changed); the caller made room.
    pub fn apply(&self, region: &mut [u8], n: usize, e: &Edit) -> SResult<()> {
        let used = self.used_for_write(region, n)?;
        Self::splice(region, used, e.at, e.old, &e.new, e.moved)?;
        match e.entry {
            Some(first) => Self::grow_dir(region, used - e.old + e.new.len(), first, e.at),
            None => Ok(()),
        }
    }

    /// Inserts (or with `set`, replaces) record `i`; the caller made room (`used_after`).
    pub fn write(
        &self,
        region: &mut [u8],
        n: usize,
        i: usize,
        raw: &[u8],
        set: bool,
    ) -> SResult<()> {
        let e = self.plan(region, n, i, raw, set)?;
        self.apply(region, n, &e)
    }

    /// Removes record `i` (never needs more bytes).
    pub fn remove(&self, region: &mut [u8], n: usize, i: usize) -> SResult<()> {
        let used = self.used(region, n)?;
        let (at, c, j) = self.locate_to_write(region, n, i, false)?;
        let mut vals = Vec::with_capacity(c.count);
        self.chunk_decode(region, at, &c, &mut vals)?;
        vals.remove(j);
        let mut out = Vec::new();
        if !vals.is_empty() {
            self.encode_chunk(&vals, &mut out);
            if out.len() > c.len {
                // The best layout of fewer records is not always smaller (DEC's search): the
                // chunk's own layout is.
                out.clear();
                self.encode_with(&vals, Some((c.kind, c.param)), c.sum > 0, &mut out);
            }
        }
        if out.len() > c.len {
            return Err(Fault("removing a record grew its chunk"));
        }
        Self::splice(region, used, at, c.len, &out, -1)
    }

    /// Adds the region's chunks to `out`, one count per layout ([`RECORD_LAYOUTS`]).
    pub fn chunk_layouts(&self, region: &[u8], n: usize, out: &mut [u64; 5]) -> SResult<()> {
        let (mut at, mut seen) = (Self::chunks_at(region), 0);
        while seen < n {
            let c = self.header(region, at)?;
            if let Some(k) = out.get_mut(usize::from(c.kind)) {
                *k += 1;
            }
            (at, seen) = (at + c.len, seen + c.count);
        }
        Ok(())
    }

    /// Every record, as words.
    pub fn decode_all(&self, region: &[u8], n: usize, out: &mut Vec<u64>) -> SResult<()> {
        if n == 0 {
            return Ok(());
        }
        let end = self.used(region, n)?;
        let (mut seen, mut at) = (0, Self::chunks_at(region));
        let mut dir = Self::dir_entries(region)
            .filter(|&(_, off)| off != 0)
            .peekable();
        while seen < n {
            // Every live directory entry names a chunk's start and first record.
            while let Some(&(r, off)) = dir.peek() {
                if off > at {
                    break;
                }
                if (r, off) != (seen, at) {
                    return Err(Fault("record directory entry off its chunk"));
                }
                dir.next();
            }
            let c = self.header(region, at)?;
            self.chunk_decode(region, at, &c, out)?;
            let vals = out.get(out.len() - c.count..).unwrap_or_default();
            let chunk = Self::body(region, at, &c)?;
            if c.kind == PDICT {
                self.pdict_check(chunk, &c)?;
            }
            self.check_sum(chunk, &c, vals)?;
            seen += c.count;
            at += c.len;
        }
        if seen != n || at != end || dir.next().is_some() {
            return Err(Fault("record chunks disagree with the node's count"));
        }
        Ok(())
    }

    /// A chunk's stored sum against its decoded records `vals` (`check`: a SUM reads the sum,
    /// a row read the records, and the two must agree).
    fn check_sum(&self, chunk: &[u8], c: &Chunk, vals: &[u64]) -> SResult<()> {
        if let (DEC, Some(sum)) = (c.kind, self.stored_sum(chunk, c)) {
            let offsets = chunk.get(13..).ok_or(Fault("record chunk too short"))?;
            let mut all = 0u128;
            for j in 0..c.count {
                all += u128::from(extract(offsets, j, c.bits)?);
            }
            if all != sum {
                return Err(Fault("record chunk sum disagrees with its records"));
            }
            return Ok(());
        }
        let Some(sum) = self.records_sum(chunk, c)? else {
            return Ok(());
        };
        if vals.iter().map(|&v| self.number(v)).sum::<i128>() != sum {
            return Err(Fault("record chunk sum disagrees with its records"));
        }
        Ok(())
    }

    /// Repacks the chunks full; returns the bytes freed.
    pub fn vacuumize(&self, region: &mut [u8], n: usize) -> SResult<usize> {
        let used = self.used(region, n)?;
        // Worth it only when many chunks are part empty (after removes): a full node asks for
        // room on every insert, and re-encoding the whole list each time would make random
        // loads quadratic. Random inserts leave chunks about 3/4 full: not enough.
        let (mut chunks, mut at, mut seen) = (0usize, Self::chunks_at(region), 0usize);
        while seen < n {
            let c = self.header(region, at)?;
            (chunks, at, seen) = (chunks + 1, at + c.len, seen + c.count);
        }
        let least = n.div_ceil(self.chunk.max(1) as usize);
        if chunks * 2 <= least * 3 {
            return Ok(0);
        }
        let mut vals = Vec::with_capacity(n);
        self.decode_all(region, n, &mut vals)?;
        let mut out = Vec::with_capacity(used);
        self.encode_all(&vals, &mut out);
        if out.len() >= used {
            return Ok(0);
        }
        region
            .get_mut(..out.len())
            .ok_or(Fault("record region too small for its records"))?
            .copy_from_slice(&out);
        Ok(used - out.len())
    }

    /// The record words of `raws`, checked.
    pub fn words<'r>(&self, raws: impl Iterator<Item = &'r [u8]>) -> SResult<Vec<u64>> {
        raws.map(|r| self.word(r)).collect()
    }
}

/// A planned chunk edit: `old` bytes at offset `at` of the region become `new`.
#[derive(Debug)]
pub struct Edit {
    at: usize,
    old: usize,
    new: Vec<u8>,
    /// How the records after the chunk move: 1 for an insert, 0 for a set.
    moved: isize,
    /// A chunk appended after a full one that gets a directory entry: its first record.
    entry: Option<usize>,
}

impl Edit {
    fn new(at: usize, old: usize, new: Vec<u8>, set: bool) -> Edit {
        Edit {
            at,
            old,
            new,
            moved: if set { 0 } else { 1 },
            entry: None,
        }
    }

    /// The bytes a region of `used` bytes uses after the edit (a directory entry included); a
    /// fault when the chunk replaced runs past them (writes walk without proving the chunks).
    fn used_after(&self, region: &[u8], used: usize) -> SResult<usize> {
        let entry = self.entry.map_or(0, |_| NumRecs::dir_growth(region));
        let rest = used
            .checked_sub(self.at + self.old)
            .ok_or(Fault("record chunk past the region's used bytes"))?;
        Ok(self.at + rest + self.new.len() + entry)
    }
}

/// Where the last record read from a region was: (chunk offset, index of its first record),
/// and the stretch of chunks last proven to agree with the directory and the node's count,
/// `(from, its first record, to)` (`NumRecs::prove`: once per stretch between directory
/// entries, not per read). Belongs to one region (one leaf page); scans and cursors keep one
/// per leaf.
#[derive(Clone, Debug, Default)]
pub struct RecHint {
    at: std::cell::Cell<(usize, usize)>,
    proven: std::cell::Cell<(usize, usize, usize)>,
    /// In a PDICT chunk: (its offset + 1, the index of the first exception at or after the
    /// record last read), so reads in order find their record among the exceptions in O(1).
    exc: std::cell::Cell<(usize, usize)>,
}

/// A DEC layout for a chunk of f64 words.
struct DecPlan {
    e: usize,
    bits: u32,
    /// Smallest integer, sign bit flipped.
    base: u64,
    offsets: Vec<u64>,
    /// Positions of the records kept whole.
    exc: Vec<usize>,
}

impl DecPlan {
    fn len(&self, n: usize) -> usize {
        13 + packed_len(n, self.bits) + 9 * self.exc.len()
    }
}

/// The integer an f64 word is at decimal exponent `e`, when it comes back bit for bit.
#[inline]
fn dec_int(word: u64, e: usize) -> Option<i64> {
    let f = f64::from_bits(word);
    let p = *POW10.get(e)?;
    let x = f * p;
    if x.is_nan() || x.abs() >= DEC_LIMIT {
        return None;
    }
    // `x.round()` (halves away from zero) without the libm call: below 2^53 the fraction
    // `x - trunc(x)` is exact.
    let t = x as i64;
    let r = x - t as f64;
    let i = if r >= 0.5 {
        t + 1
    } else if r <= -0.5 {
        t - 1
    } else {
        t
    };
    ((i as f64 / p).to_bits() == word).then_some(i)
}

/// The DEC layout at exponent `e`.
fn dec_at(vals: &[u64], e: usize) -> DecPlan {
    let mut ints = Vec::with_capacity(vals.len());
    let mut exc = Vec::new();
    let (mut lo, mut hi) = (u64::MAX, 0u64);
    for (j, &v) in vals.iter().enumerate() {
        match dec_int(v, e) {
            Some(i) => {
                let o = (i as u64) ^ (1 << 63);
                lo = lo.min(o);
                hi = hi.max(o);
                ints.push(Some(o));
            }
            None => {
                exc.push(j);
                ints.push(None);
            }
        }
    }
    if lo > hi {
        (lo, hi) = (0, 0);
    }
    DecPlan {
        e,
        bits: bits_for(hi - lo),
        base: lo,
        offsets: ints.iter().map(|o| o.map_or(0, |o| o - lo)).collect(),
        exc,
    }
}

/// The smallest DEC layout: exponents from 0 up, stopping at the first without exceptions
/// (a larger one only widens the integers). `None` when most records are exceptions.
fn dec_plan(vals: &[u64]) -> Option<DecPlan> {
    let n = vals.len();
    let mut best: Option<DecPlan> = None;
    for e in 0..POW10.len() {
        // A cheap look at a few records first: most full-precision doubles fail at once.
        if vals
            .iter()
            .take(8)
            .filter(|&&v| dec_int(v, e).is_none())
            .count()
            > 4
        {
            continue;
        }
        let plan = dec_at(vals, e);
        if plan.exc.len() * 2 > n {
            continue;
        }
        let done = plan.exc.is_empty();
        if best.as_ref().is_none_or(|b| plan.len(n) < b.len(n)) {
            best = Some(plan);
        }
        if done {
            break;
        }
    }
    best
}

#[cfg(test)]
#[allow(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic
)]
mod tests {
    use super::*;

    pub(super) fn list(width: u8, num: Num) -> NumRecs {
        NumRecs {
            width,
            num,
            chunk: 128,
        }
    }

    pub(super) fn rng(seed: u64) -> impl FnMut() -> u64 {
        let mut s = seed;
        move || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        }
    }

    impl NumRecs {
        pub(super) fn rec_num(&self) -> RecNum {
            RecNum {
                width: self.w(),
                num: self.num,
            }
        }
    }

    /// The fold of `vals`, row by row as the query executor's row loop computes it.
    pub(super) fn fold_model(nr: NumRecs, vals: &[u64]) -> RecFold {
        let mut f = RecFold::default();
        let key = |k: i128, f: &mut RecFold| {
            f.min = Some(f.min.map_or(k, |m| m.min(k)));
            f.max = Some(f.max.map_or(k, |m| m.max(k)));
        };
        for &v in vals {
            f.count += 1;
            match nr.num {
                Num::Float => {
                    let x = f64::from_bits(v);
                    f.fsum += x;
                    if !x.is_nan() {
                        key(super::super::zone::f64_key(x), &mut f);
                    }
                }
                Num::Unsigned => {
                    f.isum += v as i128;
                    key(v as i128, &mut f);
                }
                Num::Signed => {
                    let bits = 8 * nr.w() as u32;
                    let x = if bits == 64 {
                        v as i64
                    } else if v >> (bits - 1) & 1 == 1 {
                        (v | !mask(bits)) as i64
                    } else {
                        v as i64
                    };
                    f.isum += x as i128;
                    key(x as i128, &mut f);
                }
            }
        }
        f
    }

    /// Builds a region from `vals` through inserts at random places, checks it against a Vec
    /// model after every step, then removes and overwrites.
    pub(super) fn model_check(nr: NumRecs, vals: &[u64], seed: u64) {
        let mut r = rng(seed);
        let mut region = vec![0u8; 64 * 1024];
        let mut model: Vec<u64> = Vec::new();
        let w = nr.width as usize;
        for &v in vals {
            let i = (r() as usize) % (model.len() + 1);
            let raw = &v.to_le_bytes()[..w];
            let need = nr.used_after(&region, model.len(), i, raw, false).unwrap();
            nr.write(&mut region, model.len(), i, raw, false).unwrap();
            model.insert(i, v);
            assert_eq!(nr.used(&region, model.len()).unwrap(), need);
        }
        let check = |region: &[u8], model: &[u64]| {
            for (i, &v) in model.iter().enumerate() {
                assert_eq!(
                    &nr.get(region, model.len(), i).unwrap()[..w],
                    &v.to_le_bytes()[..w],
                    "record {i}"
                );
            }
            let mut all = Vec::new();
            nr.decode_all(region, model.len(), &mut all).unwrap();
            assert_eq!(all, model);
            let n = model.len();
            let mut ranges = vec![(0, n), (0, 0), (n / 3, n / 3 + 1)];
            for k in 0..8 {
                let a = (k * 37 + n / 5) % (n + 1);
                ranges.push((a, (a + k * 61).min(n)));
            }
            // One hint across all ranges (in no order: some start before it, most after).
            let shared = RecHint::default();
            // The sums read the region cut where its chunks end (no bytes past the last chunk
            // for a group of eight to read on into); the full folds read the bytes left past
            // it by earlier writes, which the unpacking must mask off.
            let tight = &region[..nr.used(region, n).unwrap()];
            for (a, z) in ranges {
                let mut got = RecFold::default();
                nr.fold(region, n, a..z, nr.rec_num(), &mut got, &RecHint::default())
                    .unwrap();
                let want = fold_model(nr, &model[a..z]);
                let bits = |f: &RecFold| (f.count, f.isum, f.fsum.to_bits(), f.min, f.max);
                assert_eq!(bits(&want), bits(&got), "fold of {a}..{z} of {n}");
                let mut sums = RecFold {
                    skip_extremes: true,
                    ..RecFold::default()
                };
                nr.fold(tight, n, a..z, nr.rec_num(), &mut sums, &shared)
                    .unwrap();
                // The sums fold decimal chunks exactly, which may differ from adding the
                // floats one by one in the last bits.
                let ints = |f: &RecFold| (f.count, f.isum);
                assert_eq!(ints(&want), ints(&sums), "sums of {a}..{z} of {n}");
                let (x, y) = (want.fsum, sums.float_sum());
                let mag: f64 = model[a..z]
                    .iter()
                    .map(|&v| f64::from_bits(v).abs())
                    .filter(|v| v.is_finite())
                    .sum();
                assert!(
                    x.to_bits() == y.to_bits()
                        || (x.is_nan() && y.is_nan())
                        || (x - y).abs() <= 1e-12 * mag,
                    "float sums of {a}..{z} of {n}: {x} against {y}"
                );
                assert_eq!((sums.min, sums.max), (None, None));
            }
            // Consecutive runs through one hint (GROUP BY buckets) fold every record once.
            let (hint, mut runs) = (RecHint::default(), RecFold::default());
            for a in (0..n).step_by(7) {
                nr.fold(region, n, a..(a + 7).min(n), nr.rec_num(), &mut runs, &hint)
                    .unwrap();
            }
            let want = fold_model(nr, model);
            let bits = |f: &RecFold| (f.count, f.isum, f.fsum.to_bits(), f.min, f.max);
            assert_eq!(bits(&want), bits(&runs), "runs of 7 over {n}");
        };
        check(&region, &model);
        for _ in 0..model.len() / 3 {
            let i = (r() as usize) % model.len();
            let v = vals[(r() as usize) % vals.len()];
            nr.write(&mut region, model.len(), i, &v.to_le_bytes()[..w], true)
                .unwrap();
            model[i] = v;
        }
        check(&region, &model);
        let before = nr.used(&region, model.len()).unwrap();
        let freed = nr.vacuumize(&mut region, model.len()).unwrap();
        assert_eq!(nr.used(&region, model.len()).unwrap(), before - freed);
        check(&region, &model);
        while model.len() > 3 {
            let i = (r() as usize) % model.len();
            let used = nr.used(&region, model.len()).unwrap();
            nr.remove(&mut region, model.len(), i).unwrap();
            model.remove(i);
            assert!(nr.used(&region, model.len()).unwrap() <= used);
        }
        check(&region, &model);
    }

    #[test]
    fn every_kind_matches_a_vec_model() {
        let mut r = rng(7);
        let small: Vec<u64> = (0..600).map(|_| r() % 1000).collect();
        let wide: Vec<u64> = (0..600).map(|_| r()).collect();
        let few: Vec<u64> = (0..600)
            .map(|_| [3, 1 << 40, 99][(r() % 3) as usize])
            .collect();
        // Few values either side of zero: DICT chunks of signed records (sign-extended sums).
        let few_signed: Vec<u64> = (0..600)
            .map(|_| [-5i64, 7, -100_000, i64::MIN, i64::MAX][(r() % 5) as usize] as u64)
            .collect();
        for (w, num) in [
            (4, Num::Unsigned),
            (8, Num::Unsigned),
            (8, Num::Signed),
            (4, Num::Signed),
            (2, Num::Signed),
            (8, Num::Float),
            (2, Num::Unsigned),
            (1, Num::Unsigned),
        ] {
            let nr = list(w, num);
            let m = mask(8 * w as u32);
            for (k, vals) in [&small, &wide, &few, &few_signed].into_iter().enumerate() {
                let vals: Vec<u64> = vals.iter().map(|v| v & m).collect();
                model_check(nr, &vals, k as u64 + 1);
            }
        }
    }

    /// Chunks written before chunks carried sums (kind bytes 1 and 2 with a zero high half)
    /// still read, fold, shrink on removes and take overwrites; integer chunks written since
    /// carry a sum, which `decode_all` (`check`) holds against the records.
    #[test]
    fn chunks_without_sums_still_work() {
        let mut r = rng(5);
        for (w, num) in [(8usize, Num::Signed), (4, Num::Unsigned)] {
            let nr = list(w as u8, num);
            let m = mask(8 * w as u32);
            let for_vals: Vec<u64> = (0..700)
                .map(|_| (r() % 5000).wrapping_sub(2500) & m)
                .collect();
            let dict_vals: Vec<u64> = (0..700)
                .map(|_| [7u64, 90, 3][(r() % 3) as usize])
                .collect();
            for vals in [for_vals, dict_vals] {
                let mut region = vec![0u8, 0];
                for part in vals.chunks(nr.chunk as usize) {
                    nr.encode_with(part, None, false, &mut region);
                }
                let used = region.len() as u16;
                region[..2].copy_from_slice(&used.to_le_bytes());
                assert!(region[2 + 1] & !KIND == 0, "the old layout has no sum");
                region.resize(16 * 1024, 0);
                let mut model = vals.clone();
                let sums = |region: &[u8], model: &[u64]| {
                    let mut got = RecFold {
                        skip_extremes: true,
                        ..RecFold::default()
                    };
                    nr.fold(
                        region,
                        model.len(),
                        0..model.len(),
                        nr.rec_num(),
                        &mut got,
                        &RecHint::default(),
                    )
                    .unwrap();
                    assert_eq!(got.isum, fold_model(nr, model).isum);
                    let mut all = Vec::new();
                    nr.decode_all(region, model.len(), &mut all).unwrap();
                    assert_eq!(all, model);
                };
                sums(&region, &model);
                for _ in 0..200 {
                    let i = (r() as usize) % model.len();
                    let before = nr.used(&region, model.len()).unwrap();
                    nr.remove(&mut region, model.len(), i).unwrap();
                    model.remove(i);
                    assert!(nr.used(&region, model.len()).unwrap() <= before);
                }
                sums(&region, &model);
                for _ in 0..200 {
                    let i = (r() as usize) % model.len();
                    let v = model[(r() as usize) % model.len()];
                    nr.write(&mut region, model.len(), i, &v.to_le_bytes()[..w], true)
                        .unwrap();
                    model[i] = v;
                }
                sums(&region, &model);
            }
        }
    }

    /// Decimal chunks sum exactly: 0.1, 0.2, .. 1.0 a hundred times are 550, where adding the
    /// floats one by one gives 549.9999999999999; with exceptions (full-precision doubles)
    /// among them.
    #[test]
    fn decimal_sums_are_exact() {
        let nr = list(8, Num::Float);
        let mut vals: Vec<u64> = (0..1000)
            .map(|k| ((k % 10 + 1) as f64 / 10.0).to_bits())
            .collect();
        let mut region = Vec::new();
        nr.encode_all(&vals, &mut region);
        let sum = |region: &[u8], n: usize, range: std::ops::Range<usize>| {
            let mut f = RecFold {
                skip_extremes: true,
                ..RecFold::default()
            };
            nr.fold(region, n, range, nr.rec_num(), &mut f, &RecHint::default())
                .unwrap();
            (f.count, f.float_sum())
        };
        let first = NumRecs::chunks_at(&region);
        assert_eq!(nr.header(&region, first).unwrap().kind, DEC);
        let seq: f64 = vals.iter().map(|&v| f64::from_bits(v)).sum();
        assert_ne!(seq, 550.0);
        assert_eq!(sum(&region, 1000, 0..1000), (1000, 550.0));
        assert_eq!(sum(&region, 1000, 3..503), (500, 275.0));
        // A third of a decimal chunk's records kept whole (exceptions): still the right sum.
        vals[7] = std::f64::consts::PI.to_bits();
        vals[300] = (-std::f64::consts::E).to_bits();
        region.clear();
        nr.encode_all(&vals, &mut region);
        let (n, s) = sum(&region, 1000, 0..1000);
        assert_eq!(n, 1000);
        let want = 550.0 - 0.8 - 0.1 + std::f64::consts::PI - std::f64::consts::E;
        assert!((s - want).abs() < 1e-12, "{s} against {want}");
    }

    /// Regions of many small chunks: appends grow a directory, every later insert, overwrite
    /// and remove keeps it pointing at chunk starts (`decode_all` checks each entry), reads
    /// through it match the model, and a full encode builds one.
    #[test]
    fn the_directory_follows_every_edit() {
        let mut r = rng(9);
        for (w, num) in [(8usize, Num::Signed), (8, Num::Float), (4, Num::Unsigned)] {
            let nr = NumRecs {
                width: w as u8,
                num,
                chunk: 8,
            };
            let val = |r: &mut dyn FnMut() -> u64| match num {
                Num::Float => ((r() % 5000) as f64 / 100.0).to_bits(),
                _ => r() % 3000,
            };
            let mut region = vec![0u8; 64 * 1024];
            let mut model: Vec<u64> = Vec::new();
            for i in 0..600 {
                let v = val(&mut r);
                nr.write(&mut region, i, i, &v.to_le_bytes()[..w], false)
                    .unwrap();
                model.push(v);
            }
            assert!(
                NumRecs::chunks_at(&region) > 2,
                "appends built no directory"
            );
            let agree = |region: &[u8], model: &[u64]| {
                let mut all = Vec::new();
                nr.decode_all(region, model.len(), &mut all).unwrap();
                assert_eq!(all, model);
                for (i, &v) in model.iter().enumerate().step_by(7) {
                    let got = nr.get(region, model.len(), i).unwrap();
                    assert_eq!(&got[..w], &v.to_le_bytes()[..w], "record {i}");
                }
            };
            agree(&region, &model);
            for step in 0..900 {
                let n = model.len();
                let i = (r() as usize) % n;
                match step % 3 {
                    0 => {
                        let v = val(&mut r);
                        let at = (r() as usize) % (n + 1);
                        nr.write(&mut region, n, at, &v.to_le_bytes()[..w], false)
                            .unwrap();
                        model.insert(at, v);
                    }
                    1 => {
                        let v = val(&mut r);
                        nr.write(&mut region, n, i, &v.to_le_bytes()[..w], true)
                            .unwrap();
                        model[i] = v;
                    }
                    _ => {
                        nr.remove(&mut region, n, i).unwrap();
                        model.remove(i);
                    }
                }
                if step % 50 == 0 {
                    agree(&region, &model);
                }
            }
            agree(&region, &model);
            let mut img = Vec::new();
            nr.encode_all(&model, &mut img);
            assert!(
                NumRecs::chunks_at(&img) > 2,
                "a full encode built no directory"
            );
            agree(&img, &model);
            // A forged entry (off its chunk by a byte): check names it, reads never panic.
            let mut forged = img.clone();
            forged[5 + 4] = forged[5 + 4].wrapping_add(1);
            let mut all = Vec::new();
            assert!(nr.decode_all(&forged, model.len(), &mut all).is_err());
            for i in 0..model.len() {
                let _ = nr.get(&forged, model.len(), i);
            }
        }
    }

    /// Regions whose directory names every 2nd, 4th (as written before every chunk got an
    /// entry) or 7th chunk, or none, read, fold and check as the model says: readers take any
    /// spacing.
    #[test]
    fn any_directory_spacing_reads() {
        let mut r = rng(12);
        let codes: Vec<u64> = (0..3000)
            .map(|_| [200u64, 200, 200, 200, 200, 200, 200, 200, 404, 500][(r() % 10) as usize])
            .collect();
        let walk: Vec<u64> = (0..3000).map(|k| 1_000_000 + k * 3 + r() % 5).collect();
        for (w, num, vals) in [(4u8, Num::Unsigned, &codes), (8, Num::Signed, &walk)] {
            let nr = NumRecs {
                width: w,
                num,
                chunk: 64,
            };
            let n = vals.len();
            for every in [1, 2, 4, 7, 1000] {
                let mut region = Vec::new();
                nr.encode_spaced(vals, every, &mut region);
                let entries = NumRecs::dir_size(&region).unwrap_or(0);
                assert_eq!(entries, if every > 50 { 0 } else { (n / 64) / every });
                let mut all = Vec::new();
                nr.decode_all(&region, n, &mut all).unwrap();
                assert_eq!(&all, vals, "every {every}");
                for i in (0..n).step_by(13) {
                    let got = nr.get(&region, n, i).unwrap();
                    assert_eq!(&got[..w as usize], &vals[i].to_le_bytes()[..w as usize]);
                }
                for (a, z) in [(0, n), (5, 2000), (64, 128), (100, 101)] {
                    let mut f = RecFold {
                        skip_extremes: true,
                        ..RecFold::default()
                    };
                    nr.fold(&region, n, a..z, nr.rec_num(), &mut f, &RecHint::default())
                        .unwrap();
                    let want = fold_model(nr, &vals[a..z]);
                    assert_eq!((f.count, f.isum), (want.count, want.isum), "{a}..{z}");
                }
            }
        }
    }

    /// A directory entry forged to the offset of the next entry's chunk (the start of a
    /// stretch a read through the same hint proved): reads in either order, through one hint,
    /// give the model's record or a fault, never the record of the chunk the entry points at.
    #[test]
    fn an_entry_forged_to_a_proven_start_is_proven() {
        let nr = NumRecs {
            width: 8,
            num: Num::Unsigned,
            chunk: 16,
        };
        // Full chunks of equal counts, each of its own values.
        let vals: Vec<u64> = (0..160u64).map(|k| 1000 * (k / 16) + k % 16).collect();
        let mut region = Vec::new();
        nr.encode_all(&vals, &mut region);
        let entries: Vec<(usize, usize)> = NumRecs::dir_entries(&region).collect();
        assert_eq!(entries.len(), 9, "an entry for every chunk after the first");
        for e in 0..entries.len() - 1 {
            let mut forged = region.clone();
            let next = entries[e + 1].1 as u16;
            forged[5 + DIR_ENTRY * e + 4..5 + DIR_ENTRY * e + 6]
                .copy_from_slice(&next.to_le_bytes());
            let n = vals.len();
            for order in [false, true] {
                let hint = RecHint::default();
                let mut wrong = 0;
                for k in 0..n {
                    let i = if order { n - 1 - k } else { k };
                    if let Ok(got) = nr.get_hinted(&forged, n, i, &hint) {
                        wrong += usize::from(u64::from_le_bytes(got) != vals[i]);
                    }
                }
                assert_eq!(wrong, 0, "entry {e} forged, reads reversed: {order}");
            }
        }
    }

    #[test]
    fn a_forged_sum_fails_check() {
        let nr = list(8, Num::Signed);
        let vals: Vec<u64> = (0..300u64).map(|k| (k * 7) % 1000).collect();
        let mut region = Vec::new();
        nr.encode_all(&vals, &mut region);
        let first = NumRecs::chunks_at(&region);
        let c = nr.header(&region, first).unwrap();
        assert_eq!(c.kind, FOR);
        assert!(c.sum > 0, "integer FOR chunks carry a sum");
        let mut all = Vec::new();
        nr.decode_all(&region, vals.len(), &mut all).unwrap();
        region[first + c.len - c.sum] ^= 1;
        all.clear();
        let err = nr.decode_all(&region, vals.len(), &mut all).unwrap_err();
        assert_eq!(err, Fault("record chunk sum disagrees with its records"));
    }

    /// Every byte of small regions of every layout (a directory, DEC with exceptions, DICT, PDICT,
    /// FOR, RAW) set to a few values: reads, folds (sums and full folds), `decode_all` and the
    /// write plans give a value or a fault, never a panic (overflow checks are on in tests).
    #[test]
    fn damaged_regions_never_panic() {
        let f = |x: f64| x.to_bits();
        let cases: Vec<(NumRecs, Vec<u64>)> = vec![
            (
                list(8, Num::Float),
                (0..90)
                    .map(|k| match k % 9 {
                        0 => f(f64::NAN),
                        1 => f(1e300 / (k as f64 + 1.0)),
                        _ => f((2000 + k) as f64 / 100.0),
                    })
                    .collect(),
            ),
            (
                NumRecs {
                    width: 4,
                    num: Num::Unsigned,
                    chunk: 8,
                },
                (0..120u64).map(|k| [5, 900, 17][k as usize % 3]).collect(),
            ),
            (
                list(2, Num::Signed),
                (0..70u64).map(|k| (k * 37) as u16 as u64).collect(),
            ),
            // One value nine times in ten, four others: PDICT chunks with exceptions.
            (
                NumRecs {
                    width: 4,
                    num: Num::Signed,
                    chunk: 40,
                },
                (0..100u64)
                    .map(|k| match k % 10 {
                        3 => [404u64, 0xffff_fffe, 301, 7][(k / 10 % 4) as usize],
                        _ => 200,
                    })
                    .collect(),
            ),
            (
                list(8, Num::Unsigned),
                (0..40u64).map(|k| k * k * k).collect(),
            ),
        ];
        for (nr, vals) in cases {
            let mut region = Vec::new();
            nr.encode_all(&vals, &mut region);
            region.resize(region.len() + 16, 0);
            let n = vals.len();
            for at in 0..region.len() - 16 {
                for x in [0u8, 1, 0x80, 0xff, region[at] ^ 0x10] {
                    let mut bad = region.clone();
                    bad[at] = x;
                    for i in [0, n / 3, n / 2, n - 1] {
                        let _ = nr.get(&bad, n, i);
                        let _ = nr.get_hinted(&bad, n, i, &RecHint::default());
                    }
                    for (a, z) in [(0, n), (1, n - 1), (n / 3, n / 2)] {
                        for skip in [false, true] {
                            let mut acc = RecFold {
                                skip_extremes: skip,
                                ..RecFold::default()
                            };
                            let h = RecHint::default();
                            let _ = nr.fold(&bad, n, a..z, nr.rec_num(), &mut acc, &h);
                        }
                    }
                    let _ = nr.decode_all(&bad, n, &mut Vec::new());
                    let raw = vals[1].to_le_bytes();
                    let raw = &raw[..nr.width as usize];
                    let _ = nr.used_after(&bad, n, n / 2, raw, false);
                    let _ = nr.used_after(&bad, n, n / 2, raw, true);
                    let _ = nr.used_after(&bad, n, n, raw, false);
                    let _ = nr.remove(&mut bad.clone(), n, n / 2);
                    let _ = nr.vacuumize(&mut bad.clone(), n);
                    bad.resize(bad.len() + 64, 0);
                    let _ = nr.write(&mut bad.clone(), n, n / 2, raw, false);
                    let _ = nr.write(&mut bad, n, n - 1, raw, true);
                }
            }
        }
    }

    #[test]
    fn signed_and_float_edges() {
        let nr = list(8, Num::Signed);
        let vals: Vec<u64> = [i64::MIN, -1, 0, 1, i64::MAX, -5, 5, i64::MIN + 1]
            .iter()
            .map(|&v| v as u64)
            .collect();
        model_check(nr, &vals, 3);
        let nr = list(8, Num::Float);
        let vals: Vec<u64> = [
            0.0,
            -0.0,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            21.35,
            -21.35,
            1e300,
            f64::MIN_POSITIVE,
            5e-324,
            0.1 + 0.2,
            123456789.125,
        ]
        .iter()
        .map(|v| v.to_bits())
        .collect();
        model_check(nr, &vals, 4);
        // Decimals and full-precision doubles half and half: DEC with exceptions near its
        // limit, where removing a record changes the best exponent (removes must not grow).
        let mut r = rng(9);
        let mixed: Vec<u64> = (0..700)
            .map(|k| {
                if k % 2 == 0 {
                    ((r() % 100_000) as f64 / 100.0).to_bits()
                } else {
                    (f64::from_bits(0x3ff0_0000_0000_0000 | (r() >> 12)) * 1e6).to_bits()
                }
            })
            .collect();
        for seed in 1..6 {
            model_check(nr, &mixed, seed);
        }
        // A NaN with a payload comes back with its payload.
        model_check(nr, &[0x7ff8_0000_dead_beef, 1.5f64.to_bits()], 5);
    }

    #[test]
    fn sizes_follow_the_data() {
        let size = |nr: NumRecs, vals: &[u64]| {
            let mut out = Vec::new();
            nr.encode_all(vals, &mut out);
            out.len() as f64 / vals.len() as f64
        };
        let mut r = rng(11);
        // Sensor readings with two decimals: DEC, about 1.3 bytes each for a 10-bit range.
        let temps: Vec<u64> = (0..1280)
            .map(|_| ((2000 + (r() % 1000) as i64) as f64 / 100.0).to_bits())
            .collect();
        let f = size(list(8, Num::Float), &temps);
        assert!(f < 1.5, "decimal floats take {f} bytes each");
        // Eight distinct wide values: DICT, 3 bits each plus the dictionary and the chunk's
        // directory entry.
        let few: Vec<u64> = (0..1280).map(|_| (r() % 8) << 50).collect();
        let d = size(list(8, Num::Unsigned), &few);
        assert!(d < 1.05, "eight distinct values take {d} bytes each");
        // Small signed deltas around a large value: FOR in sign-flipped order.
        let near: Vec<u64> = (0..1280)
            .map(|_| (-1_000_000i64 + (r() % 200) as i64) as u64)
            .collect();
        let s = size(list(8, Num::Signed), &near);
        // (1.05 for the offsets and frames, plus 2 bytes of each chunk's sum and 6 of its
        // directory entry.)
        assert!(s < 1.17, "signed values within 200 take {s} bytes each");
        // Random 64-bit words cost what they are, plus the chunk header and directory entry.
        let wide: Vec<u64> = (0..1280).map(|_| r()).collect();
        let raw = size(list(8, Num::Unsigned), &wide);
        assert!((8.0..8.07).contains(&raw), "random words take {raw}");
    }

    /// The per-thread plan of the last chunk edit is for one list: the same chunk in an f64
    /// list would be re-encoded as decimals, which a u64 list cannot read.
    #[test]
    fn decimal_rounding_matches_round() {
        let mut r = rng(9);
        for k in 0..200_000u64 {
            let x = match k % 4 {
                0 => (r() % 2_000_001) as f64 / 2.0 - 500_000.0,
                1 => f64::from_bits(r()) % 1e15,
                2 => (r() % 100_000) as f64 / 100.0 - 500.0,
                _ => ((r() >> 11) as f64) * if k % 8 == 3 { -1.0 } else { 1.0 },
            };
            if !x.is_finite() || x.abs() >= DEC_LIMIT {
                continue;
            }
            for e in [0usize, 1, 2, 5] {
                let want = {
                    let y = x * POW10[e];
                    (y.abs() < DEC_LIMIT)
                        .then(|| y.round() as i64)
                        .filter(|&i| (i as f64 / POW10[e]).to_bits() == x.to_bits())
                };
                assert_eq!(dec_int(x.to_bits(), e), want, "{x} at 10^{e}");
            }
        }
    }

    #[test]
    fn a_plan_is_not_reused_across_lists() {
        let (f, u) = (list(8, Num::Float), list(8, Num::Unsigned));
        let vals: Vec<u64> = (0..40u64)
            .map(|k| (2000 + k) as f64 / 100.0)
            .map(f64::to_bits)
            .collect();
        let mut region = Vec::new();
        u.encode_all(&vals, &mut region);
        region.resize(4096, 0);
        let v = 20.005f64.to_bits();
        f.used_after(&region, vals.len(), 20, &v.to_le_bytes(), false)
            .unwrap();
        u.write(&mut region, vals.len(), 20, &v.to_le_bytes(), false)
            .unwrap();
        let mut model = vals.clone();
        model.insert(20, v);
        let mut got = Vec::new();
        u.decode_all(&region, model.len(), &mut got).unwrap();
        assert_eq!(got, model);
    }

    /// `put_bits` of one value leaves every other value of a packed run as it was, at every
    /// width and position (against a Vec model, read back with `unpack`).
    /// `unpack` (eight values at a time per width, one at a time around them) against
    /// `extract` of each value: every width, start and length, runs ending at the data's end.
    #[test]
    fn unpack_matches_extract_for_every_width() {
        let mut next = rng(41);
        for bits in 0..=64u32 {
            for count in [1usize, 7, 8, 9, 16, 17, 63, 64, 65, 200, 255] {
                let data: Vec<u8> = (0..packed_len(count, bits)).map(|_| next() as u8).collect();
                for _ in 0..12 {
                    let j0 = (next() as usize) % count;
                    let len = (next() as usize) % (count - j0) + 1;
                    let mut out = vec![u64::MAX; len];
                    unpack(&data, bits, j0, &mut out).unwrap();
                    for (k, &v) in out.iter().enumerate() {
                        assert_eq!(
                            v,
                            extract(&data, j0 + k, bits).unwrap(),
                            "bits {bits} count {count} value {}",
                            j0 + k
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn put_bits_sets_one_value() {
        let mut r = rng(5);
        for bits in 0..=64u32 {
            let n = 1 + (r() % 200) as usize;
            let mut model: Vec<u64> = (0..n).map(|_| r() & mask(bits)).collect();
            let mut data = Vec::new();
            pack(model.iter().copied(), bits, &mut data);
            for _ in 0..50 {
                let j = (r() as usize) % n;
                let v = r() & mask(bits);
                put_bits(&mut data, j, bits, v).unwrap();
                model[j] = v;
            }
            let mut out = vec![0u64; n];
            unpack(&data, bits, 0, &mut out).unwrap();
            assert_eq!(out, model, "bits {bits}");
        }
    }

    #[test]
    fn hostile_regions_fail_cleanly() {
        let nr = list(8, Num::Float);
        let mut r = rng(5);
        let vals: Vec<u64> = (0..300)
            .map(|_| ((r() % 5000) as f64 / 10.0).to_bits())
            .collect();
        let mut good = Vec::new();
        nr.encode_all(&vals, &mut good);
        good.resize(good.len() + 64, 0);
        for k in 0..good.len().min(400) {
            for flip in [1u8, 0x80, 0xff] {
                let mut bad = good.clone();
                bad[k] ^= flip;
                // Any answer or a Fault, never a panic.
                if let Ok(used) = nr.used(&bad, vals.len()) {
                    assert!(used <= bad.len());
                    for i in 0..vals.len() {
                        let _ = nr.get(&bad, vals.len(), i);
                    }
                    let mut out = Vec::new();
                    let _ = nr.decode_all(&bad, vals.len(), &mut out);
                }
            }
        }
        let mut out = Vec::new();
        assert!(nr.decode_all(&good, vals.len() + 1, &mut out).is_err());
        assert!(nr.decode_all(&good, vals.len() - 1, &mut out).is_err());
        assert!(nr.get(&good, vals.len() + 1, vals.len()).is_err());
    }
}
