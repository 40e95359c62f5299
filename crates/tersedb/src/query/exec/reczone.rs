//! The zone map on records: an aggregate query whose condition reads `record`
//! (`WHERE record > 100`, `key BETWEEN a AND b AND record >= 20`) asks each leaf for its
//! record chunks' bounds ([`LeafScan::record_zones`], read from the chunk headers) and judges
//! the condition on each chunk before reading a record:
//!
//! ```text
//! never   false for every value in the bounds     the chunk's records are not read; a key
//!                                                 block whose slots all lie in such chunks
//!                                                 is not decoded either
//! keys    the record atoms true for every value   what is left is a condition on keys: the
//!                                                 rows are folded as with no condition on
//!                                                 the record (keys in bulk, records through
//!                                                 `fold_records`, whole chunks from their
//!                                                 stored sums)
//! test    undecided, or no bounds (RAW chunks)    every row read and tested, as before
//! ```
//!
//! A leaf whose record list keeps no zone map (plain records) takes the executor's row path.

use super::{overlapping, rec_num, Acc};
use crate::btree::scan::{KeyBuffer, LeafScan, RecBounds, RecNum, RecZone, ScanBlock};
use crate::db::ValueType;
use crate::error::{Error, Result};
use crate::query::ast::{AggFunc, CmpOp, Column, Query};
use crate::query::plan::{self, Bound, Ivs};
use crate::query::value::QueryStats;
use std::ops::Range;

/// What a chunk's bounds make of the condition.
#[derive(Clone, Debug, PartialEq)]
enum Verdict {
    /// False for every record of the chunk.
    Never,
    /// True exactly for the rows whose keys lie in these intervals.
    Keys(Ivs),
    /// Every row tested.
    Test,
}

/// The state of the record zone map over one query's leaves.
pub(super) struct RecZones {
    zones: Vec<RecZone>,
    verdicts: Vec<Verdict>,
    /// Every aggregate adds up in bulk (COUNT, SUM, AVG, MIN, MAX): `keys` chunks are folded.
    /// Otherwise (TOP, BOTTOM, COUNT DISTINCT) they are tested row by row like `test` ones.
    bulk: bool,
    /// How records are folded, when a record aggregate is asked for.
    rn: Option<RecNum>,
    /// The keys' sum or extremes are asked for (otherwise a key block needs no decode to be
    /// counted).
    keys_needed: bool,
}

/// A key block's slots are not covered by the leaf's record chunks.
fn uncovered(leaf: &LeafScan<'_>) -> Error {
    Error::Corrupted {
        page: leaf.page_id(),
        what: "key block slots outside the leaf's record chunks".into(),
    }
}

impl RecZones {
    /// The zone map's state for `q`, or `None` when its condition does not read the record.
    pub(super) fn new(q: &Query, acc: &Acc, vt: ValueType) -> Option<RecZones> {
        if !acc.residual.as_ref().is_some_and(plan::uses_record) {
            return None;
        }
        let asks = |f: fn(&AggFunc) -> bool| q.aggregates.iter().any(|a| f(&a.func));
        Some(RecZones {
            zones: Vec::new(),
            verdicts: Vec::new(),
            bulk: acc.key_top_k == 0
                && acc.key_bottom_k == 0
                && acc.rec_distinct.is_none()
                && acc.rec_top_k == 0
                && acc.rec_bottom_k == 0,
            rn: asks(|f| {
                matches!(
                    f,
                    AggFunc::Sum(Column::Record)
                        | AggFunc::Avg(Column::Record)
                        | AggFunc::Min(Column::Record)
                        | AggFunc::Max(Column::Record)
                )
            })
            .then(|| rec_num(vt))
            .flatten(),
            keys_needed: acc.key_sum_needed
                || asks(|f| matches!(f, AggFunc::Min(Column::Key) | AggFunc::Max(Column::Key))),
        })
    }

    /// Adds the rows of `blocks` (the leaf's blocks the intervals `ivs` may touch) that the
    /// condition selects to `acc`, judging each record chunk by its bounds first. `false`
    /// (nothing added) when the leaf's record list keeps no zone map.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn leaf(
        &mut self,
        acc: &mut Acc,
        leaf: &LeafScan<'_>,
        blocks: &[ScanBlock],
        ivs: &[(u64, u64)],
        buf: &mut KeyBuffer,
        stats: &mut QueryStats,
    ) -> Result<bool> {
        if !leaf.record_zones(&mut self.zones)? {
            return Ok(false);
        }
        let Some(residual) = &acc.residual else {
            return Ok(false);
        };
        self.verdicts.clear();
        // Neighbouring chunks often have the same bounds (a dictionary of the same codes):
        // judged once.
        let mut last: Option<(RecBounds, usize)> = None;
        for (i, zn) in self.zones.iter().enumerate() {
            let v = match (zn.bounds, last) {
                (None, _) => Verdict::Test,
                (Some(b), Some((lb, k))) if b == lb => {
                    self.verdicts.get(k).cloned().unwrap_or(Verdict::Test)
                }
                (Some(b), _) => {
                    last = Some((b, i));
                    verdict(residual, &b)
                }
            };
            self.verdicts.push(v);
        }
        // Zones before `z` end before the current block; those before `counted` are in the
        // statistics. `run`: slots whose keys are added and whose records wait to be folded.
        let (mut z, mut counted) = (0usize, 0usize);
        let mut run: Option<Range<usize>> = None;
        for b in blocks {
            let (hit, inside) = overlapping(ivs, b.first, b.last);
            if hit.is_empty() {
                stats.blocks_skipped += 1;
                continue;
            }
            let slots = b.slots();
            while self
                .zones
                .get(z)
                .is_some_and(|zn| zn.slots().end <= slots.start)
            {
                z += 1;
            }
            let mut end = z;
            while self.zones.get(end).is_some_and(|zn| zn.start < slots.end) {
                end += 1;
            }
            let verdicts = self.verdicts.get(z..end).unwrap_or_default();
            for v in self.verdicts.get(counted.max(z)..end).unwrap_or_default() {
                match v {
                    Verdict::Never => stats.record_chunks_skipped += 1,
                    Verdict::Keys(_) if self.bulk => stats.record_chunks_folded += 1,
                    _ => {}
                }
            }
            counted = counted.max(end);
            if verdicts.iter().all(|v| *v == Verdict::Never) {
                stats.blocks_skipped += 1;
                continue;
            }
            if verdicts.iter().all(|v| *v == Verdict::Test) {
                // Nothing decided: the block as the row path takes it, in one piece.
                flush(&mut run, acc, leaf, self.rn)?;
                acc.block(leaf, b, ivs, buf, stats)?;
                continue;
            }
            // A block inside one interval whose chunks select all of it or none: counted from
            // its zone map entry, its keys not decoded.
            let whole = |v: &Verdict| match v {
                Verdict::Never => true,
                Verdict::Keys(k) => k
                    .iter()
                    .any(|iv| iv.0 <= i128::from(b.first) && i128::from(b.last) <= iv.1),
                Verdict::Test => false,
            };
            let all_keys = verdicts.iter().all(|v| matches!(v, Verdict::Keys(_)));
            if self.bulk
                && inside
                && verdicts.iter().all(whole)
                && (!self.keys_needed || (all_keys && !acc.key_sum_needed))
            {
                stats.blocks_from_index += 1;
                self.pieces(z..end, &slots, leaf, |piece, v| {
                    if matches!(v, Verdict::Keys(_)) {
                        acc.add_summary(piece.len() as u64, 0, b.first, b.last);
                        extend(&mut run, piece, acc, leaf, self.rn)?;
                    }
                    Ok(())
                })?;
                continue;
            }
            let keys = leaf.decode_keys(b, buf)?;
            stats.blocks_decoded += 1;
            let (bulk, rn) = (self.bulk, self.rn);
            self.pieces(z..end, &slots, leaf, |piece, v| {
                let (p0, p1) = (piece.start - slots.start, piece.end - slots.start);
                match v {
                    Verdict::Never => {}
                    Verdict::Keys(k) if bulk => {
                        let hit: Ivs = hit
                            .iter()
                            .map(|&(lo, hi)| (i128::from(lo), i128::from(hi)))
                            .collect();
                        for (lo, hi) in plan::intersect(k, &hit) {
                            let a = keys.lower_bound(lo.max(0) as u64).max(p0);
                            let e = keys.upper_bound(hi.min(u64::MAX as i128) as u64).min(p1);
                            if a < e {
                                let ks = keys.slice(a..e);
                                let sum = if acc.key_sum_needed { ks.sum() } else { 0 };
                                acc.add_summary(
                                    e as u64 - a as u64,
                                    sum,
                                    ks.at(0),
                                    ks.at(e - a - 1),
                                );
                                extend(&mut run, slots.start + a..slots.start + e, acc, leaf, rn)?;
                            }
                        }
                    }
                    _ => {
                        // Rows tested in key order: the records waiting are folded first.
                        flush(&mut run, acc, leaf, rn)?;
                        for &(lo, hi) in hit {
                            let a = keys.lower_bound(lo).max(p0);
                            let e = keys.upper_bound(hi).min(p1);
                            if a < e {
                                acc.add_keys(leaf, keys.slice(a..e), slots.start + a)?;
                            }
                        }
                    }
                }
                Ok(())
            })?;
        }
        flush(&mut run, acc, leaf, self.rn)?;
        Ok(true)
    }

    /// Calls `each(piece, verdict)` for the slots of `slots` in each of the zones `zs`, in
    /// order; the zones must cover `slots` without a gap.
    fn pieces(
        &self,
        zs: Range<usize>,
        slots: &Range<usize>,
        leaf: &LeafScan<'_>,
        mut each: impl FnMut(Range<usize>, &Verdict) -> Result<()>,
    ) -> Result<()> {
        let mut at = slots.start;
        for k in zs {
            let (Some(zn), Some(v)) = (self.zones.get(k), self.verdicts.get(k)) else {
                return Err(uncovered(leaf));
            };
            let piece = zn.start.max(slots.start)..zn.slots().end.min(slots.end);
            if piece.start != at {
                return Err(uncovered(leaf));
            }
            at = piece.end;
            each(piece, v)?;
        }
        if at != slots.end {
            return Err(uncovered(leaf));
        }
        Ok(())
    }
}

/// Adds `slots` (their keys already added) to the run of records waiting to be folded.
fn extend(
    run: &mut Option<Range<usize>>,
    slots: Range<usize>,
    acc: &mut Acc,
    leaf: &LeafScan<'_>,
    rn: Option<RecNum>,
) -> Result<()> {
    if rn.is_none() {
        return Ok(());
    }
    match run {
        Some(r) if r.end == slots.start => r.end = slots.end,
        _ => {
            flush(run, acc, leaf, rn)?;
            *run = Some(slots);
        }
    }
    Ok(())
}

/// Folds the run of records waiting (whole chunks from their stored sums).
fn flush(
    run: &mut Option<Range<usize>>,
    acc: &mut Acc,
    leaf: &LeafScan<'_>,
    rn: Option<RecNum>,
) -> Result<()> {
    if let (Some(r), Some(rn)) = (run.take(), rn) {
        acc.fold_records(leaf, r, rn)?;
    }
    Ok(())
}

/// The verdict of condition `p` on a chunk whose records lie in `b`.
fn verdict(p: &Bound, b: &RecBounds) -> Verdict {
    let r = plan::simplify(decide(p, b));
    match r {
        Bound::Const(false) => Verdict::Never,
        r if !plan::uses_record(&r) => Verdict::Keys(plan::cover(&r, (0, u64::MAX as i128)).0),
        _ => Verdict::Test,
    }
}

/// `p` with each atom on the record replaced by its truth where `b` decides it.
fn decide(p: &Bound, b: &RecBounds) -> Bound {
    let known = |t: Option<bool>, p: &Bound| t.map_or_else(|| p.clone(), Bound::Const);
    match (p, b) {
        (Bound::RecInt(s), RecBounds::Int { lo, hi }) => {
            let i = s.partition_point(|iv| iv.1 < *lo);
            let t = match s.get(i) {
                None => Some(false),
                Some(iv) if iv.0 > *hi => Some(false),
                Some(iv) if iv.0 <= *lo && *hi <= iv.1 => Some(true),
                Some(_) => None,
            };
            known(t, p)
        }
        (Bound::RecF64 { op, c, negated }, RecBounds::Float { range, nan }) => {
            // The numbers' part and the NaNs' part must agree (a NaN compares false, but
            // `!=`); NOT then flips the answer, NaNs included.
            let num = range.map(|(lo, hi)| all_cmp(*op, *c, lo, hi));
            let nan = nan.then_some(Some(*op == CmpOp::Ne));
            let t = match (num, nan) {
                (Some(a), Some(b)) if a == b => a,
                (Some(a), None) | (None, Some(a)) => a,
                _ => None,
            };
            known(t.map(|t| t != *negated), p)
        }
        (Bound::And(items), _) => Bound::And(items.iter().map(|i| decide(i, b)).collect()),
        (Bound::Or(items), _) => Bound::Or(items.iter().map(|i| decide(i, b)).collect()),
        _ => p.clone(),
    }
}

/// `x op c` for every number `x` in `[lo, hi]` (IEEE comparisons: -0.0 equals 0.0): `Some`
/// when it is the same for all of them.
fn all_cmp(op: CmpOp, c: f64, lo: f64, hi: f64) -> Option<bool> {
    let (t, f) = match op {
        CmpOp::Gt => (lo > c, hi <= c),
        CmpOp::Ge => (lo >= c, hi < c),
        CmpOp::Lt => (hi < c, lo >= c),
        CmpOp::Le => (hi <= c, lo > c),
        CmpOp::Eq => (lo == c && hi == c, c < lo || c > hi),
        CmpOp::Ne => (c < lo || c > hi, lo == c && hi == c),
    };
    if t {
        Some(true)
    } else if f {
        Some(false)
    } else {
        None
    }
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::unwrap_used)]
mod tests {
    use super::*;
    use smallvec::smallvec;

    fn f(op: CmpOp, c: f64, negated: bool) -> Bound {
        Bound::RecF64 { op, c, negated }
    }

    #[test]
    fn integer_atoms_are_decided_at_the_bounds() {
        let gt100 = Bound::RecInt(smallvec![(101, i64::MAX as i128)]);
        let b = |lo, hi| RecBounds::Int { lo, hi };
        assert_eq!(verdict(&gt100, &b(0, 100)), Verdict::Never);
        assert_eq!(
            verdict(&gt100, &b(101, 200)),
            Verdict::Keys(smallvec![(0, u64::MAX as i128)])
        );
        assert_eq!(verdict(&gt100, &b(100, 101)), Verdict::Test);
        // `record != 5` over a single-value chunk of 5, and of 6.
        let ne5 = Bound::RecInt(smallvec![(i64::MIN as i128, 4), (6, i64::MAX as i128)]);
        assert_eq!(verdict(&ne5, &b(5, 5)), Verdict::Never);
        assert!(matches!(verdict(&ne5, &b(6, 6)), Verdict::Keys(_)));
        assert_eq!(verdict(&ne5, &b(4, 6)), Verdict::Test);
        // With a key range: what is left is the key range.
        let and = Bound::And(vec![Bound::Key(smallvec![(10, 20)]), gt100.clone()]);
        assert_eq!(
            verdict(&and, &b(200, 300)),
            Verdict::Keys(smallvec![(10, 20)])
        );
        assert_eq!(verdict(&and, &b(0, 3)), Verdict::Never);
        let or = Bound::Or(vec![Bound::Key(smallvec![(10, 20)]), gt100]);
        assert_eq!(verdict(&or, &b(0, 3)), Verdict::Keys(smallvec![(10, 20)]));
        assert!(
            matches!(verdict(&or, &b(500, 600)), Verdict::Keys(k) if k[0] == (0, u64::MAX as i128))
        );
    }

    #[test]
    fn float_atoms_mind_nans_and_negation() {
        let fb = |range, nan| RecBounds::Float { range, nan };
        let gt = f(CmpOp::Gt, 1.5, false);
        assert_eq!(verdict(&gt, &fb(Some((-1.0, 1.5)), false)), Verdict::Never);
        assert!(matches!(
            verdict(&gt, &fb(Some((1.6, 9.0)), false)),
            Verdict::Keys(_)
        ));
        // A NaN fails `>`: all numbers above still leave it undecided.
        assert_eq!(verdict(&gt, &fb(Some((1.6, 9.0)), true)), Verdict::Test);
        assert_eq!(verdict(&gt, &fb(Some((0.0, 1.0)), true)), Verdict::Never);
        // NOT (record > 1.5) is true for a NaN.
        let not_gt = f(CmpOp::Gt, 1.5, true);
        assert!(matches!(
            verdict(&not_gt, &fb(None, true)),
            Verdict::Keys(_)
        ));
        assert_eq!(
            verdict(&not_gt, &fb(Some((2.0, 3.0)), false)),
            Verdict::Never
        );
        assert!(matches!(
            verdict(&f(CmpOp::Ne, 0.0, false), &fb(None, true)),
            Verdict::Keys(_)
        ));
        // -0.0 equals 0.0.
        assert!(matches!(
            verdict(&f(CmpOp::Eq, 0.0, false), &fb(Some((-0.0, 0.0)), false)),
            Verdict::Keys(_)
        ));
        assert_eq!(
            verdict(&f(CmpOp::Lt, 0.0, false), &fb(Some((-0.0, 0.0)), false)),
            Verdict::Never
        );
        assert!(matches!(
            verdict(
                &f(CmpOp::Ge, 1.0, false),
                &fb(Some((1.0, f64::INFINITY)), false)
            ),
            Verdict::Keys(_)
        ));
    }
}
