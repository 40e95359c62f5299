//! The zone map on records: a query whose condition reads `record` (`WHERE record > 100`,
//! `key BETWEEN a AND b AND record >= 20`) asks each leaf for its record chunks' bounds
//! ([`LeafScan::record_zones`], read from the chunk headers) and judges the condition on each
//! chunk before reading a record ([`Judge`]); aggregates (here), rows (`recrows.rs`) and
//! groups (`groups` in the executor) act on the same verdicts:
//!
//! ```text
//! never   false for every value in the bounds     the chunk's records are not read; a key
//!                                                 block whose slots all lie in such chunks
//!                                                 is not decoded either
//! keys    the record atoms true for every value   what is left is a condition on keys: the
//!                                                 rows are taken untested; aggregates and
//!                                                 key buckets fold them as with no condition
//!                                                 on the record (keys in bulk, records
//!                                                 through `fold_records`, whole chunks from
//!                                                 their stored sums)
//! test    undecided, or no bounds (RAW chunks)    every row read and tested, as before
//! ```
//!
//! A leaf whose record list keeps no zone map (plain records) is one `test` zone: aggregates
//! take the executor's row path for it.

use super::{overlapping, rec_num, Acc};
use crate::btree::scan::{BlockKeys, KeyBuffer, LeafScan, RecBounds, RecNum, RecZone, ScanBlock};
use crate::db::ValueType;
use crate::error::{Error, Result};
use crate::query::ast::{AggFunc, CmpOp, Column, Query};
use crate::query::plan::{self, Bound, Ivs};
use crate::query::value::QueryStats;
use smallvec::SmallVec;
use std::ops::Range;

/// What a chunk's bounds make of the condition.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Verdict {
    /// False for every record of the chunk.
    Never,
    /// True exactly for the rows whose keys lie in these intervals.
    Keys(Ivs),
    /// Every row tested.
    Test,
}

/// The verdicts of one condition on the record chunks of one leaf, shared by aggregates, rows
/// and groups. Invariant: `zones`, `verdicts` and `counted` have one entry per chunk, the
/// chunks ascend and follow each other without a gap (the zone walk proves it); a leaf
/// without a zone map (or a condition that does not read the record) is one `Test` zone.
#[derive(Default)]
pub(super) struct Judge {
    zones: Vec<RecZone>,
    verdicts: Vec<Verdict>,
    /// Chunks already in the statistics (a walk may meet a chunk from two key blocks).
    counted: Vec<bool>,
}

impl Judge {
    /// Judges `residual` on each record chunk of `leaf`; `false` when there is nothing to
    /// judge (no condition on the record, or a record list without a zone map): the leaf is
    /// then one zone that tests every row.
    pub(super) fn leaf(&mut self, leaf: &LeafScan<'_>, residual: Option<&Bound>) -> Result<bool> {
        self.verdicts.clear();
        self.counted.clear();
        let residual = match residual {
            Some(r) if plan::uses_record(r) && leaf.record_zones(&mut self.zones)? => r,
            _ => {
                self.zones.clear();
                self.zones.push(RecZone {
                    start: 0,
                    count: leaf.len(),
                    bounds: None,
                });
                self.verdicts.push(Verdict::Test);
                self.counted.push(true);
                return Ok(false);
            }
        };
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
        self.counted.resize(self.zones.len(), false);
        Ok(true)
    }

    /// The chunks holding `slots` (a key block's, which the walk reads), checked to cover
    /// them without a gap. The chunks not yet counted go into the statistics: `never` ones
    /// as skipped, `keys` ones as folded when `taken` (their rows are not tested).
    pub(super) fn block(
        &mut self,
        leaf: &LeafScan<'_>,
        slots: &Range<usize>,
        taken: bool,
        stats: &mut QueryStats,
    ) -> Result<Range<usize>> {
        let z = self
            .zones
            .partition_point(|zn| zn.slots().end <= slots.start);
        let e = z + self
            .zones
            .get(z..)
            .unwrap_or_default()
            .partition_point(|zn| zn.start < slots.end);
        let mut at = slots.start;
        for zn in self.zones.get(z..e).unwrap_or_default() {
            if zn.start.max(slots.start) != at {
                return Err(uncovered(leaf));
            }
            at = zn.slots().end;
        }
        if z >= e || at < slots.end {
            return Err(uncovered(leaf));
        }
        for k in z..e {
            if let (Some(c @ false), Some(v)) = (self.counted.get_mut(k), self.verdicts.get(k)) {
                *c = true;
                match v {
                    Verdict::Never => stats.record_chunks_skipped += 1,
                    Verdict::Keys(_) if taken => stats.record_chunks_folded += 1,
                    _ => {}
                }
            }
        }
        Ok(z..e)
    }

    /// Whether every verdict of the chunks `zs` satisfies `f`.
    pub(super) fn all(&self, zs: Range<usize>, f: impl Fn(&Verdict) -> bool) -> bool {
        self.verdicts.get(zs).unwrap_or_default().iter().all(f)
    }

    /// The slots of `slots` in each of the chunks `zs` (from [`Judge::block`]), with their
    /// verdicts, in key order.
    pub(super) fn pieces(
        &self,
        zs: Range<usize>,
        slots: &Range<usize>,
    ) -> impl DoubleEndedIterator<Item = (Range<usize>, &Verdict)> + '_ {
        let s = slots.clone();
        self.zones
            .get(zs.clone())
            .unwrap_or_default()
            .iter()
            .zip(self.verdicts.get(zs).unwrap_or_default())
            .map(move |(zn, v)| (zn.start.max(s.start)..zn.slots().end.min(s.end), v))
    }
}

/// Runs of a key block's rows: indexes into its decoded keys, and whether the rows must be
/// tested.
pub(super) type Runs = SmallVec<[(Range<usize>, bool); 4]>;

impl Judge {
    /// The runs of rows of a key block (`slots`, decoded into `keys`, meeting the chunks `zs`
    /// of [`Judge::block`]) that lie in the key intervals `hit` and that the chunks do not
    /// rule out, in key order, replacing `out`: a `keys` chunk's rows in its verdict's
    /// intervals untested, a `test` chunk's rows tested when `test` (a condition is left).
    pub(super) fn runs(
        &self,
        zs: Range<usize>,
        slots: &Range<usize>,
        keys: &BlockKeys<'_>,
        hit: &[(u64, u64)],
        test: bool,
        out: &mut Runs,
    ) {
        out.clear();
        let push = |r: Range<usize>, t: bool, out: &mut Runs| {
            if r.start >= r.end {
                return;
            }
            match out.last_mut() {
                Some((last, lt)) if last.end == r.start && *lt == t => last.end = r.end,
                _ => out.push((r, t)),
            }
        };
        if self.all(zs.clone(), |v| *v == Verdict::Test) {
            // Nothing decided: the block's rows in one piece per interval.
            for &(lo, hi) in hit {
                push(keys.lower_bound(lo)..keys.upper_bound(hi), test, out);
            }
            return;
        }
        for (piece, v) in self.pieces(zs, slots) {
            let (p0, p1) = (piece.start - slots.start, piece.end - slots.start);
            match v {
                Verdict::Never => {}
                Verdict::Keys(k) => {
                    for (lo, hi) in plan::intersect(k, &wide(hit)) {
                        let a = keys.lower_bound(lo.max(0) as u64).max(p0);
                        let e = keys.upper_bound(hi.min(u64::MAX as i128) as u64).min(p1);
                        push(a..e, false, out);
                    }
                }
                Verdict::Test => {
                    for &(lo, hi) in hit {
                        let a = keys.lower_bound(lo).max(p0);
                        let e = keys.upper_bound(hi).min(p1);
                        push(a..e, test, out);
                    }
                }
            }
        }
    }
}

/// The state of the record zone map over one aggregate query's leaves.
pub(super) struct RecZones {
    judge: Judge,
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
            judge: Judge::default(),
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
        if !self.judge.leaf(leaf, acc.residual.as_ref())? {
            return Ok(false);
        }
        let judge = &mut self.judge;
        // `run`: slots whose keys are added and whose records wait to be folded.
        let mut run: Option<Range<usize>> = None;
        for b in blocks {
            let (hit, inside) = overlapping(ivs, b.first, b.last);
            if hit.is_empty() {
                stats.blocks_skipped += 1;
                continue;
            }
            let slots = b.slots();
            let zs = judge.block(leaf, &slots, self.bulk, stats)?;
            if judge.all(zs.clone(), |v| *v == Verdict::Never) {
                stats.blocks_skipped += 1;
                continue;
            }
            if judge.all(zs.clone(), |v| *v == Verdict::Test) {
                // Nothing decided: the block as the row path takes it, in one piece.
                flush(&mut run, acc, leaf, self.rn)?;
                acc.block(leaf, b, ivs, buf, stats)?;
                continue;
            }
            // A block inside one interval whose chunks select all of it or none: counted from
            // its zone map entry, its keys not decoded.
            let whole = |v: &Verdict| match v {
                Verdict::Never => true,
                Verdict::Keys(k) => covers(k, b),
                Verdict::Test => false,
            };
            let all_keys = judge.all(zs.clone(), |v| matches!(v, Verdict::Keys(_)));
            if self.bulk
                && inside
                && judge.all(zs.clone(), whole)
                && (!self.keys_needed || (all_keys && !acc.key_sum_needed))
            {
                stats.blocks_from_index += 1;
                for (piece, v) in judge.pieces(zs, &slots) {
                    if matches!(v, Verdict::Keys(_)) {
                        acc.add_summary(piece.len() as u64, 0, b.first, b.last);
                        extend(&mut run, piece, acc, leaf, self.rn)?;
                    }
                }
                continue;
            }
            let keys = leaf.decode_keys(b, buf)?;
            stats.blocks_decoded += 1;
            let (bulk, rn) = (self.bulk, self.rn);
            for (piece, v) in judge.pieces(zs, &slots) {
                let (p0, p1) = (piece.start - slots.start, piece.end - slots.start);
                match v {
                    Verdict::Never => {}
                    Verdict::Keys(k) if bulk => {
                        for (lo, hi) in plan::intersect(k, &wide(hit)) {
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
            }
        }
        flush(&mut run, acc, leaf, self.rn)?;
        Ok(true)
    }
}

/// Key intervals as the planner's (i128) intervals.
pub(super) fn wide(ivs: &[(u64, u64)]) -> Ivs {
    ivs.iter()
        .map(|&(lo, hi)| (i128::from(lo), i128::from(hi)))
        .collect()
}

/// Whether one of the intervals `k` holds every key of block `b`.
pub(super) fn covers(k: &Ivs, b: &ScanBlock) -> bool {
    k.iter()
        .any(|iv| iv.0 <= i128::from(b.first) && i128::from(b.last) <= iv.1)
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
