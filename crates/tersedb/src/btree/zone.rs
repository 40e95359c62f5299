//! What a leaf's key list shows of itself to scans and folds: its keys as *blocks*, each with a
//! zone map entry (first, last, count), decoded one block at a time into a buffer that stays in
//! L1 (the patched-FOR paper's vector-at-a-time decompression, section 4), and the fold of a key
//! range. Plain lists show blocks of [`PLAIN_BLOCK`] slots; compressed lists their codec blocks.

use std::ops::Range;
use tersedb_codecs::Descriptor;

/// Slots per block of a plain (uncompressed) leaf, as scans and folds count blocks.
pub const PLAIN_BLOCK: usize = 256;
/// Keys a block may hold at most, start key included: the largest codec limit (Rice's 511,
/// all that a descriptor's 9-bit count holds; the other codecs stop at 257 or 129), the size of
/// a decode buffer, and `packed::MAX_BLOCK_KEYS`. A block's own limit is its codec's.
pub const MAX_KEYS: usize = 511;

/// COUNT, SUM, MIN and MAX of the keys in a range. SUM is exact (128 bits).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KeyFold {
    pub count: u64,
    /// Exact sum of the keys; only meaningful when the fold was asked for it.
    pub sum: u128,
    pub min: Option<u64>,
    pub max: Option<u64>,
    /// Blocks whose keys were decoded, summed or searched (plain leaves count in 256-slot
    /// blocks, as the block scan lists them).
    pub blocks_decoded: u64,
    /// Blocks answered from the index alone (COUNT/MIN/MAX only).
    pub blocks_skipped: u64,
}

impl KeyFold {
    /// Adds `count` keys from `min` to `max` summing to `sum`.
    pub(crate) fn add(&mut self, count: u64, sum: u128, min: u64, max: u64) {
        if count == 0 {
            return;
        }
        self.count += count;
        self.sum += sum;
        self.min = Some(self.min.map_or(min, |m| m.min(min)));
        self.max = Some(self.max.map_or(max, |m| m.max(max)));
    }
}

/// How the record bytes are read as numbers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Num {
    /// Unsigned little-endian (u32, u64 and opaque words).
    Unsigned,
    /// Two's complement little-endian (i64).
    Signed,
    /// IEEE 754 binary64 (f64; `width` 8).
    Float,
}

/// How a fold reads numeric records: the record's width in bytes and what its bytes mean.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecNum {
    pub width: usize,
    pub num: Num,
}

/// Running COUNT, SUM, MIN and MAX of numeric records, folded a slot range at a time
/// ([`super::RecordList::fold`]). It is the query's own accumulator, carried from range to
/// range, so that an f64 sum adds the records in key order exactly as a row-by-row loop does.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RecFold {
    pub count: u64,
    /// Exact sum of integer records (u32, u64 and opaque words unsigned, i64 signed).
    pub isum: i128,
    /// Sum of f64 records, added in key order, except those of decimal chunks (`dsum`).
    pub fsum: f64,
    /// f64 records of compressed decimal chunks, summed exactly as the integers they are at
    /// scale `10^-dexp`; [`RecFold::float_sum`] joins them to `fsum`.
    pub dsum: i128,
    pub dexp: u8,
    /// Smallest and largest record as ordered keys: the integer itself, or for f64 the IEEE
    /// total order (`f64_key`); NaN never counts.
    pub min: Option<i128>,
    pub max: Option<i128>,
    /// MIN and MAX are not asked for: only COUNT and SUM are kept (an f64 sum then runs
    /// without the ordered-key work per record).
    pub skip_extremes: bool,
}

/// Exact powers of ten (every one up to 10^22 is an f64 without rounding): the scales of
/// decimal record chunks.
pub(crate) const POW10: [f64; 19] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
    1e17, 1e18,
];

/// An f64 as a key in the IEEE total order (-0.0 before 0.0, NaNs outside the numbers).
#[inline]
pub fn f64_key(v: f64) -> i128 {
    let b = v.to_bits() as i64;
    (b ^ (((b >> 63) as u64) >> 1) as i64) as i128
}

impl RecFold {
    /// The sum of the f64 records: those added one by one in key order, plus the exact sum
    /// of decimal chunks rounded once.
    pub fn float_sum(&self) -> f64 {
        if self.dsum == 0 {
            self.fsum
        } else {
            // (`dexp` comes from a checked chunk header: always a valid index.)
            let scale = POW10.get(usize::from(self.dexp)).copied().unwrap_or(1.0);
            self.fsum + self.dsum as f64 / scale
        }
    }

    /// Adds `count` f64 records of a decimal chunk whose integers (the records times 10^`exp`,
    /// `exp` below `POW10.len()`) sum to `sum`. A run of another exponent first joins the exact
    /// sum so far to `fsum`.
    pub(crate) fn add_decimal(&mut self, count: u64, sum: i128, exp: u8) {
        if count == 0 {
            return;
        }
        if self.dsum != 0 && self.dexp != exp {
            self.fsum = self.float_sum();
            self.dsum = 0;
        }
        self.count += count;
        self.dexp = exp;
        self.dsum += sum;
    }

    #[inline]
    fn extremes(&mut self, lo: i128, hi: i128) {
        self.min = Some(self.min.map_or(lo, |m| m.min(lo)));
        self.max = Some(self.max.map_or(hi, |m| m.max(hi)));
    }

    /// Adds `count` integer records summing to `sum`, the smallest `lo`, the largest `hi`.
    #[inline]
    pub(crate) fn add_ints(&mut self, count: u64, sum: i128, lo: i128, hi: i128) {
        if count == 0 {
            return;
        }
        self.count += count;
        self.isum += sum;
        self.extremes(lo, hi);
    }

    /// Adds f64 records in order.
    #[inline]
    pub(crate) fn add_floats(&mut self, vals: impl Iterator<Item = f64>) {
        if self.skip_extremes {
            let mut fsum = self.fsum;
            let mut count = 0u64;
            for v in vals {
                count += 1;
                fsum += v;
            }
            self.count += count;
            self.fsum = fsum;
            return;
        }
        let (mut lo, mut hi) = (i128::MAX, i128::MIN);
        let mut fsum = self.fsum;
        let mut count = 0u64;
        for v in vals {
            count += 1;
            fsum += v;
            if !v.is_nan() {
                let k = f64_key(v);
                lo = lo.min(k);
                hi = hi.max(k);
            }
        }
        self.count += count;
        self.fsum = fsum;
        if lo <= hi {
            self.extremes(lo, hi);
        }
    }

    /// Adds words read as `num` (signed words sign-extended from `width` bytes).
    pub(crate) fn add_words(&mut self, rn: RecNum, words: &[u64]) {
        match rn.num {
            Num::Float => self.add_floats(words.iter().map(|&w| f64::from_bits(w))),
            // Sums of the high and low 32 bits in 64-bit lanes, exact for fewer than 2^31
            // words (a fold hands over at most a chunk or a run of them), joined once: the
            // compiler vectorizes these, where a 128-bit add per word took twice as long.
            Num::Unsigned if self.skip_extremes => {
                let (mut hi, mut lo) = (0u64, 0u64);
                for &w in words {
                    hi += w >> 32;
                    lo += w & 0xffff_ffff;
                }
                self.count += words.len() as u64;
                self.isum += ((hi as i128) << 32) + lo as i128;
            }
            Num::Signed if self.skip_extremes => {
                let sh = 64 - 8 * rn.width.clamp(1, 8) as u32;
                let (mut hi, mut lo) = (0i64, 0u64);
                for &w in words {
                    let v = ((w << sh) as i64) >> sh;
                    hi += v >> 32;
                    lo += v as u64 & 0xffff_ffff;
                }
                self.count += words.len() as u64;
                self.isum += ((hi as i128) << 32) + lo as i128;
            }
            Num::Unsigned => {
                let (mut s, mut lo, mut hi) = (0u128, u64::MAX, 0u64);
                for &w in words {
                    s += w as u128;
                    lo = lo.min(w);
                    hi = hi.max(w);
                }
                self.add_ints(words.len() as u64, s as i128, lo as i128, hi as i128);
            }
            Num::Signed => {
                let sh = 64 - 8 * rn.width.clamp(1, 8) as u32;
                let (mut s, mut lo, mut hi) = (0i128, i64::MAX, i64::MIN);
                for &w in words {
                    let v = ((w << sh) as i64) >> sh;
                    s += v as i128;
                    lo = lo.min(v);
                    hi = hi.max(v);
                }
                self.add_ints(words.len() as u64, s, lo as i128, hi as i128);
            }
        }
    }
}

/// What to compute: with `sum == false`, blocks wholly in the range are not decoded.
#[derive(Clone, Copy, Debug)]
pub struct FoldSpec {
    pub lo: u64,
    /// Inclusive upper bound.
    pub hi: u64,
    pub sum: bool,
}

/// One block of a leaf: its zone map entry and where its keys sit among the leaf's slots.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScanBlock {
    /// Smallest and largest key of the block.
    pub first: u64,
    pub last: u64,
    /// Keys in the block (at least 1).
    pub count: usize,
    /// Slot of the block's first key within the leaf.
    pub start: usize,
    /// Block number within the KeyList (codec block index; 0.. for plain leaves).
    pub(crate) index: usize,
    /// Compressed blocks: the codec descriptor, the payload's byte range in the region and
    /// the base the codec's values are added to.
    pub(crate) desc: Descriptor,
    pub(crate) at: (usize, usize),
    pub(crate) base: u64,
    pub(crate) codec: tersedb_codecs::CodecId,
}

impl ScanBlock {
    /// The block's slots within the leaf.
    pub fn slots(&self) -> Range<usize> {
        self.start..self.start + self.count
    }
}

/// A decode buffer for one block's keys (u32 keys in `u32s`, u64 keys in `u64s`).
#[derive(Clone, Debug)]
pub struct KeyBuffer {
    pub(crate) u32s: [u32; MAX_KEYS],
    pub(crate) u64s: [u64; MAX_KEYS],
}

impl Default for KeyBuffer {
    fn default() -> Self {
        KeyBuffer {
            u32s: [0; MAX_KEYS],
            u64s: [0; MAX_KEYS],
        }
    }
}

/// The decoded keys of a block, ascending: what a block of a leaf's key list decodes to
/// (public as `tersedb::scan::BlockKeys`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlockKeys<'a> {
    /// Keys of a `KeyType::U32` database.
    U32(&'a [u32]),
    /// Keys of a `KeyType::U64` database.
    U64(&'a [u64]),
}

impl BlockKeys<'_> {
    /// Number of keys.
    pub fn len(&self) -> usize {
        match self {
            BlockKeys::U32(k) => k.len(),
            BlockKeys::U64(k) => k.len(),
        }
    }

    /// Whether there is no key.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Key `i`, `None` past the end.
    pub fn get(&self, i: usize) -> Option<u64> {
        match self {
            BlockKeys::U32(k) => k.get(i).map(|&x| x as u64),
            BlockKeys::U64(k) => k.get(i).copied(),
        }
    }

    /// Key `i` of a block the caller has bounds (0 past the end).
    #[inline]
    pub(crate) fn at(&self, i: usize) -> u64 {
        match self {
            BlockKeys::U32(k) => k.get(i).map_or(0, |&v| v as u64),
            BlockKeys::U64(k) => k.get(i).copied().unwrap_or(0),
        }
    }

    /// The index of the first key `>= v` (the number of keys below `v`).
    pub fn lower_bound(&self, v: u64) -> usize {
        match self {
            BlockKeys::U32(k) => k.partition_point(|&x| (x as u64) < v),
            BlockKeys::U64(k) => k.partition_point(|&x| x < v),
        }
    }
    /// The index of the first key `> v` (the number of keys up to `v`).
    pub fn upper_bound(&self, v: u64) -> usize {
        match self {
            BlockKeys::U32(k) => k.partition_point(|&x| (x as u64) <= v),
            BlockKeys::U64(k) => k.partition_point(|&x| x <= v),
        }
    }
    /// The keys at indexes `r` (none when `r` reaches past the end).
    pub fn slice(&self, r: Range<usize>) -> Self {
        match self {
            BlockKeys::U32(k) => BlockKeys::U32(k.get(r).unwrap_or_default()),
            BlockKeys::U64(k) => BlockKeys::U64(k.get(r).unwrap_or_default()),
        }
    }
    /// The exact sum of the keys.
    pub fn sum(&self) -> u128 {
        match self {
            // Blocks hold at most 511 u32 keys: the sum fits a u64.
            BlockKeys::U32(k) => tersedb_codecs::sum::sum_u32(k) as u128,
            BlockKeys::U64(k) => k.iter().map(|&x| x as u128).sum(),
        }
    }
}

/// Conservative bounds of a record chunk's values, read from its header without decoding its
/// records (a zone map on records, [`super::RecordList::zones`]): every record of the chunk
/// lies inside them (they may be wider than the records).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum RecBounds {
    /// Integer records (u32, u64, i16, i32, i64): every record in `lo..=hi`.
    Int { lo: i128, hi: i128 },
    /// f64 records: every record that is not a NaN in `range` (IEEE order, `None` when every
    /// record is a NaN); `nan` when a record may be a NaN.
    Float {
        range: Option<(f64, f64)>,
        nan: bool,
    },
}

/// One record chunk of a leaf as a zone map entry: its slots `start..start + count` and its
/// bounds (`None` when its layout cannot bound its values cheaply: it is decoded as before).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RecZone {
    pub start: usize,
    pub count: usize,
    pub bounds: Option<RecBounds>,
}

impl RecZone {
    /// The chunk's slots within the leaf.
    pub fn slots(&self) -> Range<usize> {
        self.start..self.start + self.count
    }
}
