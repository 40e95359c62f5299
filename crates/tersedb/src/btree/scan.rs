//! Zone-map access to the leaves of an integer-key tree, for the query executor: a descent by
//! key to the leaves that overlap a sorted list of key intervals, and, for each leaf, its keys
//! as *blocks* with a zone map entry each.
//!
//! ```text
//! ScanBlock { first, last, count, slots: start .. start + count }
//!   plain leaf (U32 / U64 KeyList):  block i = slots [256 i, min(256 (i + 1), count))
//!                                    first/last read from the slot array
//!   compressed leaf (Packed):        block i = codec block i of the block index (gaps skipped);
//!                                    first/last/count straight from its descriptor
//! ```
//!
//! Without per-row work, [`LeafScan::fold_range`] folds a key range of the leaf as
//! [`crate::btree::fold`] does (COUNT/SUM/MIN/MAX; inner blocks from their descriptors or packed
//! values). For rows, a block wholly outside every range is skipped by its zone map entry,
//! [`LeafScan::decode_keys`] puts the keys of the others into a buffer that stays in L1, and
//! [`LeafScan::record`] gives the record of a slot. This is the executor's only window into
//! leaves, so compressed and plain leaves look the same to it.

use super::fold::{FoldSpec, KeyFold};
use super::node::{corrupt, Layout};
use super::{Key, KeyType, Spec, MAX_DEPTH};
use crate::error::{PageId, Result};
use crate::storage::PageSource;

pub use super::numrecs::Num;
pub use super::zone::{
    f64_key, BlockKeys, KeyBuffer, RecBounds, RecFold, RecNum, RecZone, ScanBlock, MAX_KEYS,
    PLAIN_BLOCK,
};

/// The keys a node may hold, from the separators on its path: `lo..=hi`, empty when `lo > hi`.
/// Each child's fence is its separators' range cut to its parent's, so a separator forged out of
/// its parent's range narrows the fence instead of widening it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Fence {
    lo: u64,
    hi: u64,
}

impl Fence {
    const ALL: Fence = Fence {
        lo: 0,
        hi: u64::MAX,
    };

    /// This fence cut to keys `>= lo` (when there is a separator below) and `< hi`.
    fn cut(self, lo: Option<u64>, hi: Option<u64>) -> Fence {
        let lo = lo.map_or(self.lo, |s| self.lo.max(s));
        match hi.map(|s| s.checked_sub(1)) {
            None => Fence { lo, hi: self.hi },
            Some(Some(h)) => Fence {
                lo,
                hi: self.hi.min(h),
            },
            // Keys below 0: none.
            Some(None) => Fence { lo: 1, hi: 0 },
        }
    }

    #[inline]
    fn holds(&self, first: u64, last: u64) -> bool {
        self.lo <= first && last <= self.hi
    }
}

/// A leaf seen through its blocks.
#[derive(Debug)]
pub struct LeafScan<'p> {
    page: &'p [u8],
    l: Layout,
    /// The keys the separators above the leaf allow; every block listed and every fold is
    /// checked against it.
    fence: Fence,
    /// Where the last record read was (compressed records are read in order).
    rhint: super::records::RecHint,
}

impl<'p> LeafScan<'p> {
    fn new(page: &'p [u8], l: Layout, fence: Fence) -> Result<Self> {
        if !l.leaf {
            return Err(corrupt(l.id, "block scan of a branch"));
        }
        Ok(LeafScan {
            page,
            l,
            fence,
            rhint: Default::default(),
        })
    }

    /// The leaf's page id.
    pub fn page_id(&self) -> PageId {
        self.l.id
    }

    /// Keys in the leaf.
    pub fn len(&self) -> usize {
        self.l.count
    }

    pub fn is_empty(&self) -> bool {
        self.l.count == 0
    }

    /// The leaf's blocks in key order, replacing the contents of `out`.
    pub fn blocks(&self, out: &mut Vec<ScanBlock>) -> Result<()> {
        self.blocks_in(out, 0, u64::MAX)
    }

    /// The leaf's blocks that may hold keys in `[lo, hi]`, in key order, replacing the contents
    /// of `out` (see [`super::KeyList::scan_blocks`]). The blocks must ascend and lie inside
    /// the leaf's fence (the decode of each checks its keys against its entry), so no scan
    /// returns keys out of order or outside their leaf, whatever a forged page says.
    pub fn blocks_in(&self, out: &mut Vec<ScanBlock>, lo: u64, hi: u64) -> Result<()> {
        self.l
            .keys
            .scan_blocks(self.l.kregion(self.page), self.l.count, lo, hi, out)
            .map_err(|f| self.l.err(f))?;
        let mut floor = self.fence.lo;
        for (i, b) in out.iter().enumerate() {
            if b.first < floor || b.first > b.last || b.last > self.fence.hi {
                return Err(corrupt(
                    self.l.id,
                    format!(
                        "key block {i} ({}..={}) out of order or outside the leaf's fence {}..={}",
                        b.first, b.last, self.fence.lo, self.fence.hi
                    ),
                ));
            }
            floor = b.last.saturating_add(1);
            if b.last == u64::MAX && i + 1 < out.len() {
                return Err(corrupt(self.l.id, "key blocks out of order"));
            }
        }
        Ok(())
    }

    /// COUNT, SUM (with `sum`), MIN and MAX of the leaf's keys in `[lo, hi]`, the way
    /// [`crate::btree::fold`] folds a leaf (see [`super::KeyList::fold_range`]). No slot numbers are
    /// computed; for per-row work list the blocks instead.
    pub fn fold_range(&self, lo: u64, hi: u64, sum: bool) -> Result<KeyFold> {
        let mut out = KeyFold::default();
        if lo <= hi {
            super::fold::leaf(self.page, &self.l, FoldSpec { lo, hi, sum }, &mut out)?;
        }
        if let (Some(min), Some(max)) = (out.min, out.max) {
            if !self.fence.holds(min, max) {
                return Err(corrupt(self.l.id, "leaf keys outside the leaf's fence"));
            }
        }
        Ok(out)
    }

    /// The slots of the leaf's keys in `[lo, hi]` and their fold ([`LeafScan::fold_range`]):
    /// one search for the first slot, the count from the fold. A SUM of records over a key
    /// range folds exactly these slots, with no block listed or decoded between the ends.
    pub fn slots_in(
        &self,
        lo: u64,
        hi: u64,
        sum: bool,
    ) -> Result<(std::ops::Range<usize>, KeyFold)> {
        let f = self.fold_range(lo, hi, sum)?;
        if f.count == 0 {
            return Ok((0..0, f));
        }
        let probe = match self.l.keys.int_width() {
            Some(4) => Key::U32(lo.min(u64::from(u32::MAX)) as u32),
            Some(8) => Key::U64(lo),
            _ => return Err(corrupt(self.l.id, "slot range over non-integer keys")),
        };
        let (Ok(a) | Err(a)) = self.l.search(self.page, &probe)?;
        let z = a + f.count as usize;
        if z > self.l.count {
            return Err(corrupt(self.l.id, "key fold counts past the leaf's keys"));
        }
        Ok((a..z, f))
    }

    /// Decodes the block's keys into `buf`.
    pub fn decode_keys<'b>(&self, b: &ScanBlock, buf: &'b mut KeyBuffer) -> Result<BlockKeys<'b>> {
        self.l
            .keys
            .decode_block(self.l.kregion(self.page), b, buf)
            .map_err(|f| self.l.err(f))
    }

    /// Folds the records of `slots` into `acc`, read as `rn`, without a per-row call: plain
    /// records straight from the page, compressed ones a chunk at a time
    /// (see [`super::RecordList::fold`]).
    pub fn fold_records(
        &self,
        slots: std::ops::Range<usize>,
        rn: RecNum,
        acc: &mut RecFold,
    ) -> Result<()> {
        self.l
            .recs
            .fold(
                self.l.rregion(self.page),
                self.l.count,
                slots,
                rn,
                acc,
                &self.rhint,
            )
            .map_err(|f| self.l.err(f))
    }

    /// The zone map of the leaf's records, replacing `out` (see
    /// [`super::RecordList::zones`]): `false` when its record list keeps none.
    pub fn record_zones(&self, out: &mut Vec<RecZone>) -> Result<bool> {
        self.l
            .recs
            .zones(self.l.rregion(self.page), self.l.count, out)
            .map_err(|f| self.l.err(f))
    }

    /// The stored record of slot `slot` (fixed-size records: the record's bytes).
    pub fn record(&self, slot: usize) -> Result<super::records::Rec<'p>> {
        self.l.record_hinted(self.page, slot, &self.rhint)
    }
}

/// A callback for every leaf: the leaf and the intervals that overlap it.
/// Visits one leaf with the intervals overlapping it; returns false to stop the walk.
pub type LeafVisitor<'a> = dyn FnMut(&LeafScan<'_>, &[(u64, u64)]) -> Result<bool> + 'a;

/// Calls `visit(leaf, intervals)` for every leaf whose key range overlaps one of `ivs` (sorted,
/// disjoint, inclusive `[lo, hi]` pairs), in key order (descending leaf order with `rev`), with
/// the intervals that overlap it, until `visit` returns false. Whole subtrees outside every
/// interval are never read.
pub fn leaves_overlapping<S: PageSource + ?Sized>(
    src: &S,
    spec: &Spec,
    root: PageId,
    ivs: &[(u64, u64)],
    rev: bool,
    visit: &mut LeafVisitor<'_>,
) -> Result<()> {
    if root == 0 || ivs.is_empty() {
        return Ok(());
    }
    if !matches!(spec.key_type, KeyType::U32 | KeyType::U64) {
        return Err(crate::Error::InvalidArgument(
            "block scans need integer keys".into(),
        ));
    }
    let mut walk = Walk { rev, prev: None };
    node(src, spec, root, 0, Fence::ALL, ivs, &mut walk, visit).map(|_| ())
}

/// The walk's direction and the fence of the leaf it visited last: the next leaf's fence must
/// lie wholly after it (before it, descending), so leaves come in key order even when forged
/// separators disagree between levels.
struct Walk {
    rev: bool,
    prev: Option<Fence>,
}

impl Walk {
    fn enter(&mut self, id: PageId, f: Fence) -> Result<()> {
        // A sound tree's separators lie strictly inside their node's fence and ascend, so
        // no leaf's fence is empty.
        if f.lo > f.hi {
            return Err(corrupt(id, "separators above the leaf out of order"));
        }
        if let Some(p) = self.prev {
            let ordered = if self.rev { f.hi < p.lo } else { p.hi < f.lo };
            if !ordered {
                return Err(corrupt(id, "leaf fences out of order (separators damaged)"));
            }
        }
        self.prev = Some(f);
        Ok(())
    }
}

fn probe(spec: &Spec, v: u64) -> Key<'static> {
    match spec.key_type {
        KeyType::U32 => Key::U32(v.min(u32::MAX as u64) as u32),
        _ => Key::U64(v),
    }
}

#[allow(clippy::too_many_arguments)]
fn node<S: PageSource + ?Sized>(
    src: &S,
    spec: &Spec,
    id: PageId,
    depth: usize,
    fence: Fence,
    ivs: &[(u64, u64)],
    walk: &mut Walk,
    visit: &mut LeafVisitor<'_>,
) -> Result<bool> {
    let rev = walk.rev;
    if depth >= MAX_DEPTH {
        return Err(corrupt(
            id,
            format!("tree deeper than {MAX_DEPTH} levels (a cycle?)"),
        ));
    }
    let page = src.page(id)?;
    let l = Layout::open(&page, id, spec)?;
    if l.leaf {
        walk.enter(id, fence)?;
        return visit(&LeafScan::new(&page, l, fence)?, ivs);
    }
    let sep = |i: usize| l.int_key(&page, i);
    // Child c holds keys in [sep(c - 1), sep(c)); the child of x is the number of separators
    // <= x.
    let child_of = |x: u64| -> Result<usize> {
        // A u32 tree clamps probes above u32::MAX to u32::MAX: every key is <= it anyway.
        Ok(match l.search(&page, &probe(spec, x))? {
            Ok(i) => i + 1,
            Err(i) => i,
        })
    };
    // Visits child c, whose keys lie in [lo_c, hi_c) (`None`: unbounded), with the intervals
    // overlapping its range; false when the walk stops.
    let mut child = |c: usize, lo_c: Option<u64>, hi_c: Option<u64>| -> Result<bool> {
        let s = lo_c.map_or(0, |lo_c| ivs.partition_point(|iv| iv.1 < lo_c));
        let e = hi_c.map_or(ivs.len(), |hi_c| ivs.partition_point(|iv| iv.0 < hi_c));
        if s < e {
            return node(
                src,
                spec,
                l.child(&page, c)?,
                depth + 1,
                fence.cut(lo_c, hi_c),
                ivs.get(s..e).unwrap_or_default(),
                walk,
                visit,
            );
        }
        Ok(true)
    };
    // The separators around child c: its keys are >= the one below, < the one above.
    let bound_below = |c: usize| -> Result<Option<u64>> {
        if c == 0 {
            Ok(None)
        } else {
            sep(c - 1).map(Some)
        }
    };
    let bound_above = |c: usize| -> Result<Option<u64>> {
        if c >= l.count {
            Ok(None)
        } else {
            sep(c).map(Some)
        }
    };
    // One search per interval and level: from the child holding one end of an interval, the
    // walk goes on while the next separator still lies inside it (the separators ascend: a
    // node's keys are proven strictly ascending when its page is first read).
    if rev {
        // Children at or below `limit` are still unvisited.
        let mut limit = Some(l.count);
        for &(lo, hi) in ivs.iter().rev() {
            let Some(lim) = limit else { break };
            let mut c = child_of(hi)?.min(lim);
            let mut hi_c = bound_above(c)?;
            if hi_c.is_some_and(|h| h <= lo) {
                // Every child this interval touches was visited for the one after.
                continue;
            }
            loop {
                let lo_c = bound_below(c)?;
                if !child(c, lo_c, hi_c)? {
                    return Ok(false);
                }
                limit = c.checked_sub(1);
                // Child c - 1 holds keys below `lo_c`: on while some of them are `>= lo`.
                match lo_c {
                    Some(s) if s > lo => {
                        hi_c = lo_c;
                        c -= 1;
                    }
                    _ => break,
                }
            }
        }
        return Ok(true);
    }
    let mut next = 0usize;
    for &(lo, hi) in ivs {
        let mut c = child_of(lo)?.max(next);
        if c > l.count {
            break;
        }
        let mut lo_c = bound_below(c)?;
        if lo_c.is_some_and(|s| s > hi) {
            // Every child this interval touches was visited for the one before.
            continue;
        }
        loop {
            let hi_c = bound_above(c)?;
            if !child(c, lo_c, hi_c)? {
                return Ok(false);
            }
            next = c + 1;
            // Child c + 1 holds keys from `hi_c` on: on while that is `<= hi`.
            match hi_c {
                Some(s) if s <= hi => {
                    lo_c = hi_c;
                    c += 1;
                }
                _ => break,
            }
        }
    }
    Ok(true)
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
    use crate::btree::config::DbConfig;
    use crate::btree::tree::{self, PutMode};
    use crate::btree::RecordType;
    use crate::testing::mem_pages::MemSink;
    use tersedb_codecs::CodecId;

    /// Blocks of every leaf list each key once, in order; `fold_keys` agrees with
    /// `decode_keys`; records sit at the blocks' slots; the descent visits exactly the leaves
    /// overlapping the intervals.
    fn check(config: DbConfig, page_size: usize, seed: u64) {
        let spec = Spec::for_config(page_size, &config).unwrap();
        let mut sink = MemSink::new(page_size);
        let mut root = 0;
        let mut rng = fastrand::Rng::with_seed(seed);
        let mut keys = std::collections::BTreeSet::new();
        let big = config.key_type == KeyType::U64;
        for _ in 0..3000 {
            let k = rng.u64(0..20_000) * if big { 0x1_0000_0001 } else { 1 };
            let key = if big { Key::U64(k) } else { Key::U32(k as u32) };
            let rec = (k as u32).to_le_bytes();
            tree::put(
                &mut sink,
                &spec,
                &mut root,
                &key,
                &rec,
                PutMode::Upsert,
                &mut None,
            )
            .unwrap();
            keys.insert(k);
        }
        let all: Vec<u64> = keys.iter().copied().collect();
        let max = *all.last().unwrap();
        for ivs in [
            vec![(0, u64::MAX)],
            vec![(5, 5), (100, 4000 * max / 20_000), (max / 2, max / 2 + 3)],
            vec![(max + 1, u64::MAX)],
            // Many intervals per leaf (and per branch child), descending walks included.
            (0..400)
                .map(|i| (i * max / 400, i * max / 400 + 2))
                .collect(),
        ] {
            let mut seen = Vec::new();
            let mut leaves = 0;
            let mut blocks = Vec::new();
            let mut buf = KeyBuffer::default();
            // The reverse walk visits the same leaves in the opposite order.
            let mut firsts_rev = Vec::new();
            leaves_overlapping(&sink, &spec, root, &ivs, true, &mut |leaf, _| {
                leaf.blocks(&mut blocks)?;
                firsts_rev.push(blocks.first().map(|b| b.first));
                Ok(true)
            })
            .unwrap();
            let mut firsts = Vec::new();
            leaves_overlapping(&sink, &spec, root, &ivs, false, &mut |leaf, sub| {
                assert!(!sub.is_empty());
                leaves += 1;
                leaf.blocks(&mut blocks)?;
                firsts.push(blocks.first().map(|b| b.first));
                assert_eq!(blocks.iter().map(|b| b.count).sum::<usize>(), leaf.len());
                assert!(!leaf.is_empty());
                for b in &blocks {
                    let k = leaf.decode_keys(b, &mut buf)?;
                    let v: Vec<u64> = (0..k.len()).map(|i| k.at(i)).collect();
                    assert_eq!((v[0], v[v.len() - 1], v.len()), (b.first, b.last, b.count));
                    for (i, slot) in b.slots().enumerate() {
                        assert_eq!(&*leaf.record(slot)?, &(v[i] as u32).to_le_bytes());
                    }
                    seen.extend(v);
                }
                // fold_range over ranges starting and ending inside, at and between blocks,
                // with and without SUM, against the decoded keys.
                let lk: Vec<u64> = seen[seen.len() - leaf.len()..].to_vec();
                let (a, z) = (lk[0], lk[lk.len() - 1]);
                let mut bounds = vec![0, a, a + 1, z, z + 1, u64::MAX, (a + z) / 2];
                bounds.extend(blocks.iter().flat_map(|b| [b.first, b.last, b.last + 1]));
                for &lo in &bounds {
                    for &hi in &bounds {
                        let sel: Vec<u64> =
                            lk.iter().copied().filter(|&k| lo <= k && k <= hi).collect();
                        for sum in [false, true] {
                            let f = leaf.fold_range(lo, hi, sum)?;
                            assert_eq!(f.count as usize, sel.len(), "[{lo}, {hi}]");
                            assert_eq!((f.min, f.max), (sel.first().copied(), sel.last().copied()));
                            if sum {
                                let want: u128 = sel.iter().map(|&x| x as u128).sum();
                                assert_eq!(f.sum, want, "[{lo}, {hi}]");
                            }
                        }
                    }
                }
                Ok(true)
            })
            .unwrap();
            firsts_rev.reverse();
            assert_eq!(firsts, firsts_rev, "{ivs:?}");
            // Stopping after two leaves visits two leaves.
            let mut n = 0;
            leaves_overlapping(&sink, &spec, root, &ivs, true, &mut |_, _| {
                n += 1;
                Ok(n < 2)
            })
            .unwrap();
            assert_eq!(n, leaves.min(2));
            assert!(seen.windows(2).all(|w| w[0] < w[1]));
            // Every key in an interval was seen; leaves cover whole key ranges.
            for &k in &all {
                if ivs.iter().any(|&(lo, hi)| lo <= k && k <= hi) {
                    assert!(seen.binary_search(&k).is_ok(), "{k} missed for {ivs:?}");
                }
            }
            if ivs[0].0 > max {
                // Only the rightmost leaf (its range is open to the right) is read.
                assert_eq!(leaves, 1);
            }
        }
    }

    #[test]
    fn blocks_cover_every_key_plain_and_compressed() {
        for ps in [512, 4096] {
            check(DbConfig::raw(KeyType::U32, RecordType::Fixed(4)), ps, 1);
            check(DbConfig::raw(KeyType::U64, RecordType::Fixed(4)), ps, 2);
        }
        for c in CodecId::ALL {
            check(
                DbConfig::raw(KeyType::U32, RecordType::Fixed(4)).with_codec(Some(c)),
                1024,
                3,
            );
        }
    }
}
