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
        let mut dir = Self::dir_entries(region).filter(|e| e.1 != 0).peekable();
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

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::unwrap_used)]
mod tests {
    use super::super::tests::{list, rng};
    use super::*;

    /// Whether the record `word` (read as `nr.num`) lies inside `b`.
    fn inside(nr: NumRecs, b: &RecBounds, word: u64) -> bool {
        match *b {
            RecBounds::Int { lo, hi } => {
                let v = nr.number(word);
                lo <= v && v <= hi
            }
            RecBounds::Float { range, nan } => {
                let v = f64::from_bits(word);
                if v.is_nan() {
                    nan
                } else {
                    range.is_some_and(|(lo, hi)| lo <= v && v <= hi)
                }
            }
        }
    }

    /// Every record `decode_all` gives lies inside its zone's bounds; the zones cover the
    /// records in order. Returns how many zones had bounds.
    fn holds(nr: NumRecs, region: &[u8], n: usize) -> Option<usize> {
        let mut zones = Vec::new();
        nr.zones(region, n, &mut zones).ok()?;
        let mut vals = Vec::new();
        nr.decode_all(region, n, &mut vals).ok()?;
        let mut next = 0;
        let mut bounded = 0;
        for z in &zones {
            assert_eq!(z.start, next, "zones out of order: {zones:?}");
            next += z.count;
            if let Some(b) = &z.bounds {
                bounded += 1;
                for &v in &vals[z.slots()] {
                    assert!(inside(nr, b, v), "{v:#x} outside {b:?} ({:?})", nr.num);
                }
            }
        }
        assert_eq!(next, n);
        Some(bounded)
    }

    fn shapes(w: u8, num: Num, seed: u64) -> Vec<Vec<u64>> {
        let mut r = rng(seed);
        let m = mask(8 * u32::from(w));
        let n = 700;
        let signed = |v: i64| (v as u64) & m;
        let mut walk = 0i64;
        let mut out: Vec<Vec<u64>> = vec![
            (0..n).map(|_| r() % 1000).collect(),
            (0..n).map(|_| r() & m).collect(),
            (0..n)
                .map(|_| [3, 1 << 40, 99][(r() % 3) as usize] & m)
                .collect(),
            // One value nine times in ten: PDICT chunks with exceptions.
            (0..n)
                .map(|_| if r() % 10 == 0 { r() % 50 } else { 7 })
                .collect(),
            // Steps of one value each: single-value chunks.
            (0..n).map(|i| (i as u64 / 200) * 1000).collect(),
            // The type's extremes.
            (0..n)
                .map(|i| match num {
                    Num::Unsigned => [m, m - 1, 0][i / 250],
                    _ => [signed(i64::MIN >> (64 - 8 * w as u32)), m >> 1, 0][i / 250],
                })
                .collect(),
        ];
        match num {
            Num::Signed => {
                out.push(
                    (0..n)
                        .map(|_| {
                            walk += (r() % 101) as i64 - 50;
                            signed(walk)
                        })
                        .collect(),
                );
            }
            Num::Float => {
                let f = |x: f64| x.to_bits();
                out.clear();
                out.push(
                    (0..n)
                        .map(|_| f((r() % 5000) as f64 / 100.0 - 20.0))
                        .collect(),
                );
                out.push(
                    (0..n)
                        .map(|i| match r() % 40 {
                            0 => f(f64::NAN),
                            1 => f(f64::INFINITY),
                            2 => f(f64::NEG_INFINITY),
                            3 => f(-0.0),
                            _ => f(i as f64 / 4.0 - 50.0),
                        })
                        .collect(),
                );
                out.push(
                    (0..n)
                        .map(|_| f([1.5, -2.25, 1e300][(r() % 3) as usize]))
                        .collect(),
                );
                out.push((0..n).map(|i| f(-((i / 100) as f64))).collect());
                out.push((0..n).map(|_| r()).collect());
            }
            Num::Unsigned => {}
        }
        for v in &mut out {
            v.iter_mut().for_each(|x| *x &= m);
        }
        out
    }

    const TYPES: [(u8, Num); 7] = [
        (4, Num::Unsigned),
        (8, Num::Unsigned),
        (2, Num::Signed),
        (4, Num::Signed),
        (8, Num::Signed),
        (8, Num::Float),
        (1, Num::Unsigned),
    ];

    #[test]
    fn every_record_lies_inside_its_chunk_bounds() {
        for (k, (w, num)) in TYPES.into_iter().enumerate() {
            let nr = list(w, num);
            for vals in shapes(w, num, k as u64 + 3) {
                let mut region = Vec::new();
                nr.encode_all(&vals, &mut region);
                let mut layouts = [0u64; 5];
                nr.chunk_layouts(&region, vals.len(), &mut layouts).unwrap();
                let bounded = holds(nr, &region, vals.len()).unwrap();
                // Every chunk but the raw ones has bounds (f64 FOR chunks may not: their
                // bit patterns may straddle zero).
                if num != Num::Float {
                    assert_eq!(bounded as u64, layouts[1..].iter().sum::<u64>());
                }
            }
        }
    }

    #[test]
    fn bounds_are_tight_for_single_values_and_disjoint_steps() {
        let nr = list(8, Num::Signed);
        let vals: Vec<u64> = (0..512)
            .map(|i| ((i / 128) as i64 * 1000 - 2000) as u64)
            .collect();
        let mut region = Vec::new();
        nr.encode_all(&vals, &mut region);
        let mut zones = Vec::new();
        nr.zones(&region, vals.len(), &mut zones).unwrap();
        assert_eq!(zones.len(), 4);
        for (i, z) in zones.iter().enumerate() {
            let v = i as i128 * 1000 - 2000;
            assert_eq!(z.bounds, Some(RecBounds::Int { lo: v, hi: v }));
        }
        let nr = list(8, Num::Unsigned);
        let vals = vec![u64::MAX; 20];
        let mut region = Vec::new();
        nr.encode_all(&vals, &mut region);
        nr.zones(&region, 20, &mut zones).unwrap();
        let m = u64::MAX as i128;
        assert_eq!(zones[0].bounds, Some(RecBounds::Int { lo: m, hi: m }));
        // No records: no zones.
        nr.zones(&[], 0, &mut zones).unwrap();
        assert!(zones.is_empty());
    }

    /// A FOR frame whose offsets could carry a record past its type's largest value (a
    /// decode would wrap) gives no bounds.
    #[test]
    fn a_frame_that_could_wrap_has_no_bounds() {
        let nr = list(4, Num::Unsigned);
        let vals: Vec<u64> = (0..8).map(|i| 0xffff_fff0 + i).collect();
        let mut region = Vec::new();
        nr.encode_all(&vals, &mut region);
        let mut layouts = [0u64; 5];
        nr.chunk_layouts(&region, 8, &mut layouts).unwrap();
        assert_eq!(layouts[1], 1, "a FOR chunk");
        let mut zones = Vec::new();
        nr.zones(&region, 8, &mut zones).unwrap();
        assert!(zones[0].bounds.is_some());
        // [used u16][count][kind][bits][base 4 bytes]: a base that leaves the frame's top
        // offsets past 2^32 - 1.
        region[5..9].copy_from_slice(&[0xff; 4]);
        nr.zones(&region, 8, &mut zones).unwrap();
        assert_eq!(zones[0].bounds, None);
    }

    /// Damaged regions: `zones` gives a fault or bounds that hold every record a decode of the
    /// same bytes gives, never a panic; a count or directory entry out of step is a fault.
    #[test]
    fn damaged_regions_never_break_the_bounds() {
        // Damaged regions that still read, with bounds: the containment was checked on them.
        let mut checked = 0;
        for (k, (w, num)) in TYPES.into_iter().enumerate() {
            let nr = list(w, num);
            for vals in shapes(w, num, k as u64 + 11).into_iter().take(4) {
                let vals = &vals[..300];
                let mut good = Vec::new();
                nr.encode_all(vals, &mut good);
                good.resize(good.len() + 16, 0);
                let mut r = rng(k as u64 + 1);
                for _ in 0..400 {
                    let mut bad = good.clone();
                    let at = (r() as usize) % good.len();
                    bad[at] ^= 1 << (r() % 8);
                    if holds(nr, &bad, vals.len()).is_some_and(|b| b > 0) {
                        checked += 1;
                    }
                }
                let mut zones = Vec::new();
                assert!(nr.zones(&good, vals.len() + 1, &mut zones).is_err());
                assert!(nr.zones(&good, vals.len() - 1, &mut zones).is_err());
            }
        }
        assert!(checked > 1000, "{checked}");
    }
}
