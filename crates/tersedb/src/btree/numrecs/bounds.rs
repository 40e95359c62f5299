//! A zone map on compressed records: each chunk's conservative bounds (min, max), read from
//! its header without decoding its records, so that a query whose condition on `record` is
//! false (or true) for every value in them skips the chunk (or folds it as if there were no
//! condition). These are the min/max of Moerkotte's "Small Materialized Aggregates: A Light
//! Weight Index Structure for Data Warehousing" (VLDB 1998) kept per bucket of records; here
//! the buckets are the chunks, and the aggregates cost no bytes: the layouts already hold them.
//!
//! ```text
//! FOR     [base, base + 2^bits - 1]           in the value's order; no bounds when that range
//!                                             passes the record's type (a decode would wrap)
//! DICT    [min entry, max entry]              every entry read (at most 256): the order of a
//! PDICT   [min entry, max entry]              forged dictionary is not trusted
//! DEC     [base / 10^e, (base + 2^bits - 1) / 10^e] and the exceptions' values (NaN noted)
//! RAW     none (bounding it reads every record: the decode the zone map saves)
//! ```
//!
//! Every bound is derived from the same fields the chunk's decode reads (base, bit width,
//! entries, exception values), so a record a decode returns always lies inside its chunk's
//! bounds; a header forged so that a decode would wrap around gives no bounds.

use super::{mask, pdict, pow10, word_in, Chunk, NumRecs, DEC, DICT, FOR};
use crate::btree::slots::{le_word, Fault, SResult};
use crate::btree::zone::{f64_key, Num, RecBounds, RecZone};

/// The f64 bit pattern of +infinity: non-negative patterns up to it are numbers, above it NaNs.
const POS_INF: u64 = 0x7ff0_0000_0000_0000;
/// The f64 bit pattern of -infinity.
const NEG_INF: u64 = 0xfff0_0000_0000_0000;
const SIGN: u64 = 1 << 63;

/// Smallest and largest non-NaN f64, and whether a NaN was seen.
#[derive(Default)]
struct FloatRange {
    lo: Option<(i128, f64)>,
    hi: Option<(i128, f64)>,
    nan: bool,
}

impl FloatRange {
    fn add(&mut self, v: f64) {
        if v.is_nan() {
            self.nan = true;
            return;
        }
        let k = f64_key(v);
        if self.lo.is_none_or(|(m, _)| k < m) {
            self.lo = Some((k, v));
        }
        if self.hi.is_none_or(|(m, _)| k > m) {
            self.hi = Some((k, v));
        }
    }

    fn bounds(&self) -> RecBounds {
        RecBounds::Float {
            range: self.lo.zip(self.hi).map(|(a, b)| (a.1, b.1)),
            nan: self.nan,
        }
    }
}

impl NumRecs {
    /// The zone map of a region of `n` records, replacing `out`: one entry per chunk, its
    /// slots and its bounds (`chunk_bounds`). Walks every chunk header from the first and
    /// proves the walk as reads do (`prove`): it must end at `used` with exactly `n` records,
    /// and every live directory entry must name a chunk's start and first record, so the slots
    /// given here are the ones point reads find.
    pub fn zones(&self, region: &[u8], n: usize, out: &mut Vec<RecZone>) -> SResult<()> {
        out.clear();
        if n == 0 {
            return Ok(());
        }
        let used = self.used(region, n)?;
        let disagree = || Fault("record chunks disagree with their directory or the node's count");
        let mut dir = Self::dir_entries(region)
            .filter(|e| e.1 != 0)
            .peekable();
        let (mut at, mut seen) = (Self::chunks_at(region), 0usize);
        while at < used {
            while let Some(&(first, off)) = dir.peek() {
                if off > at {
                    break;
                }
                if (off, first) != (at, seen) {
                    return Err(disagree());
                }
                dir.next();
            }
            let c = match self.chunk_at(region, at) {
                Some(c) => c,
                None => self.header(region, at)?,
            };
            out.push(RecZone {
                start: seen,
                count: c.count,
                bounds: self.chunk_bounds(region, at, &c),
            });
            seen += c.count;
            at += c.len;
        }
        if (at, seen) != (used, n) || dir.next().is_some() {
            return Err(disagree());
        }
        Ok(())
    }

    /// The bounds of the chunk `c` at `at` (see the module's table); `None` for RAW chunks and
    /// wherever a decode of the header's fields could leave them.
    fn chunk_bounds(&self, region: &[u8], at: usize, c: &Chunk) -> Option<RecBounds> {
        let w = self.w();
        let chunk = region.get(at..at.checked_add(c.len)?)?;
        let entries = |from: usize| chunk.get(from..from + c.param * w);
        match c.kind {
            FOR if self.num == Num::Float => {
                // Offsets added to the bit pattern: bounded while the patterns stay on one
                // side of zero and short of the NaNs.
                let lo = word_in(chunk, 3, w)?;
                let hi = lo.checked_add(mask(c.bits))?;
                let f = f64::from_bits;
                let range = if hi <= POS_INF {
                    (f(lo), f(hi))
                } else if lo >= SIGN && hi <= NEG_INF {
                    (f(hi), f(lo))
                } else {
                    return None;
                };
                Some(RecBounds::Float {
                    range: Some(range),
                    nan: false,
                })
            }
            FOR => {
                let lo = self.ordered(word_in(chunk, 3, w)?);
                let hi = lo.checked_add(mask(c.bits))?;
                // The ordered form of the type's largest value (signed: 0x7f.. sign-extended).
                let top = match self.num {
                    Num::Signed => self.ordered(mask(8 * w as u32 - 1)),
                    _ => mask(8 * w as u32),
                };
                (hi <= top).then(|| RecBounds::Int {
                    lo: self.number(self.unordered(lo)),
                    hi: self.number(self.unordered(hi)),
                })
            }
            DICT => self.entry_bounds(entries(4)?, w),
            pdict::PDICT => self.entry_bounds(entries(pdict::HEAD)?, w),
            DEC if self.num == Num::Float => {
                let base = word_in(chunk, 4, 8)?;
                let top = base.checked_add(mask(c.bits))?;
                let scale = pow10(c.param).ok()?;
                // The decode's own expression: i64 -> f64 and a division by 10^e are both
                // monotone, so the records lie between the ends'.
                let dec = |o: u64| ((o ^ SIGN) as i64 as f64) / scale;
                let mut r = FloatRange::default();
                r.add(dec(base));
                r.add(dec(top));
                let plen = super::packed_len(c.count, c.bits);
                let from = 13 + plen + c.exc;
                let vals = chunk.get(from..from + 8 * c.exc)?;
                for v in vals.chunks_exact(8) {
                    r.add(f64::from_bits(le_word(v)));
                }
                Some(r.bounds())
            }
            _ => None,
        }
    }

    /// The bounds of a dictionary's entries: every one read, in whatever order it is stored.
    fn entry_bounds(&self, entries: &[u8], w: usize) -> Option<RecBounds> {
        let each = entries.chunks_exact(w).map(le_word);
        if self.num == Num::Float {
            let mut r = FloatRange::default();
            each.for_each(|e| r.add(f64::from_bits(e)));
            return Some(r.bounds());
        }
        let (mut lo, mut hi) = (i128::MAX, i128::MIN);
        for e in each {
            let v = self.number(e);
            lo = lo.min(v);
            hi = hi.max(v);
        }
        (lo <= hi).then_some(RecBounds::Int { lo, hi })
    }
}
