//! PDICT chunks of compressed numeric records: the patched dictionary of Zukowski et al.,
//! "Super-Scalar RAM-CPU Cache Compression", section 3.1. The `2^b` most frequent values of a
//! chunk are coded in `b` bits each (`b` = 0 for one dominant value: no codes at all); the
//! others are *exceptions*, patched over the codes once those are unpacked.
//!
//! ```text
//! [count u8][kind u8: s << 4 | 4][b u8, <= 7][entries - 1 u8, >= 2^b][exceptions x u8, <= count]
//! [entries x w bytes: the 2^b coded values ascending, then the others ascending]
//! [count codes of b bits][x positions u8, ascending][x exception codes of xb bits][sum: s bytes]
//!   xb = the bits of entries - 2^b - 1; an exception is entry[2^b + its exception code], every
//!   other record entry[its b-bit code] (an exception's b-bit code is 0 and unread)
//! ```
//!
//! The paper links the exceptions through the code slots, so a gap between two exceptions wider
//! than `2^b` costs a *compulsory* exception (and `b` = 0 leaves no slot to link through), and it
//! keeps an entry point every 128 values for random access. A chunk here lists the positions of
//! its exceptions instead, one byte each (a chunk holds at most 255 records): no exception is
//! compulsory, a point read finds its record among them by halving (8 comparisons at most), and a
//! bulk decode unpacks the codes and then patches the listed positions. The choice of `b` is the
//! paper's ("Choosing Compression Schemes"): a histogram of the chunk's values sorted by
//! frequency, the first `2^b` coded, every `b` tried, the smallest chunk kept.
//!
//! The sum (integer records) is that of every record's distance above the smallest entry, the
//! first of the coded entries or the first of the others, as DICT's is above its entry 0.

use super::{
    bits_for, extract, pack, packed_len, push_le, put_bits, unpack, word_in, write_sum, Chunk,
    NumRecs, RecHint, CHUNK_OUT,
};
use crate::btree::slots::{le_word, Fault, SResult};

/// The layout's number: the low four bits of the chunk's kind byte.
pub(super) const PDICT: u8 = 4;
/// Bytes before the entries: count, kind, b, entries - 1, exceptions.
pub(super) const HEAD: usize = 5;
/// Widest code of the frequent values: with 2^b < entries <= 256.
const MAX_BITS: u32 = 7;

/// Whether a PDICT header holds: `b` at most 7, more entries than `b` bits code, at most one
/// exception per record.
#[inline]
pub(super) fn valid(bits: usize, entries: usize, exc: usize, count: usize) -> bool {
    bits <= MAX_BITS as usize && entries > 1 << bits && exc <= count
}

/// Where the parts of a PDICT chunk start, as offsets from the chunk's first byte.
#[derive(Clone, Copy, Debug)]
pub(super) struct Parts {
    /// Entries the `b`-bit codes name (`2^b`); the exception codes name the ones after them.
    pub k: usize,
    /// Bits of an exception code.
    pub xbits: u32,
    /// The `b`-bit codes.
    pub codes: usize,
    /// The exceptions' positions.
    pub pos: usize,
    /// The exception codes.
    pub xcodes: usize,
    /// The byte after the exception codes (the sum follows).
    pub end: usize,
}

impl Parts {
    pub fn new(count: usize, bits: u32, entries: usize, exc: usize, w: usize) -> Parts {
        let k = 1usize << bits.min(MAX_BITS);
        let xbits = bits_for(entries.saturating_sub(k + 1) as u64);
        let codes = HEAD + entries * w;
        let pos = codes + packed_len(count, bits);
        let xcodes = pos + exc;
        Parts {
            k,
            xbits,
            codes,
            pos,
            xcodes,
            end: xcodes + packed_len(exc, xbits),
        }
    }

    #[inline]
    pub fn of(c: &Chunk, w: usize) -> Parts {
        Parts::new(c.count, c.bits, c.param, c.exc, w)
    }
}

/// The PDICT layout chosen for a chunk's records.
#[derive(Clone, Copy, Debug)]
pub(super) struct Plan {
    pub bits: u32,
    /// Records that are exceptions.
    pub exc: usize,
    /// Bytes of the chunk without its sum.
    pub len: usize,
}

/// The smallest PDICT layout of `n` records whose distinct values (ordered words, ascending)
/// occur `runs` = (value, times) often; `None` for fewer than 2 or more than 256 values. The
/// histogram sorted by frequency: its first `2^b` values coded, every `b` tried.
pub(super) fn plan(runs: &[(u64, usize)], n: usize, w: usize) -> Option<Plan> {
    let d = runs.len();
    if !(2..=256).contains(&d) {
        return None;
    }
    let mut times = [0usize; 256];
    for (t, r) in times.iter_mut().zip(runs) {
        *t = r.1;
    }
    let times = times.get_mut(..d)?;
    times.sort_unstable_by(|a, b| b.cmp(a));
    let (mut best, mut covered): (Option<Plan>, usize) = (None, 0);
    for bits in 0..=MAX_BITS {
        let k = 1usize << bits;
        if k >= d {
            break;
        }
        let from = if bits == 0 { 0 } else { k / 2 };
        covered += times.get(from..k)?.iter().sum::<usize>();
        let exc = n.checked_sub(covered)?;
        let len = Parts::new(n, bits, d, exc, w).end;
        if best.is_none_or(|b| len < b.len) {
            best = Some(Plan { bits, exc, len });
        }
    }
    best
}

/// [`plan`]'s layout at width `bits` alone, as the paper's Fig. 4 fixes one width for every
/// exception rate: `None` where the chunk has fewer than 2 or more than 256 values, `bits` is
/// above 7, or `2^bits` codes every value (the layout keeps at least one other entry).
pub(super) fn plan_at(runs: &[(u64, usize)], n: usize, w: usize, bits: u32) -> Option<Plan> {
    let d = runs.len();
    if !(2..=256).contains(&d) || bits > MAX_BITS || 1usize << bits >= d {
        return None;
    }
    let mut times: Vec<usize> = runs.iter().map(|r| r.1).collect();
    times.sort_unstable_by(|a, b| b.cmp(a));
    let exc = n.checked_sub(times.iter().take(1 << bits).sum())?;
    Some(Plan {
        bits,
        exc,
        len: Parts::new(n, bits, d, exc, w).end,
    })
}

/// A lower bound of [`plan`]'s size for `n` records of `d` distinct values, none more than
/// `most` times: for each `b`, the dictionary, the codes and a byte per exception beyond what
/// `2^b` values of `most` records could cover. Cheap, and above DICT for evenly spread values
/// (seven values alike: at least 159 bytes of codes and positions against DICT's 96), so the
/// histogram is sorted only for skewed chunks.
pub(super) fn floor(n: usize, d: usize, most: usize, w: usize) -> usize {
    let mut least = usize::MAX;
    for bits in 0..=MAX_BITS {
        let k = 1usize << bits;
        if k >= d {
            break;
        }
        least = least.min(packed_len(n, bits) + n.saturating_sub(k * most));
    }
    least.saturating_add(HEAD + d * w)
}

/// Splits the distinct values `runs` into the `k` most frequent (ties: the smaller values) and
/// the others, each ascending, into `coded` and `rest`; returns how many of each.
fn split(
    runs: &[(u64, usize)],
    k: usize,
    coded: &mut [u64; 128],
    rest: &mut [u64; 256],
) -> (usize, usize) {
    let mut times = [0usize; 256];
    for (t, r) in times.iter_mut().zip(runs) {
        *t = r.1;
    }
    let d = runs.len().min(256);
    let times = times.get_mut(..d).unwrap_or_default();
    times.sort_unstable_by(|a, b| b.cmp(a));
    // The k-th largest count: every value above it is coded, and values at it while room is left.
    let edge = times.get(k.wrapping_sub(1)).copied().unwrap_or(usize::MAX);
    let mut room = k - runs.iter().filter(|r| r.1 > edge).count().min(k);
    let (mut a, mut b) = (0, 0);
    for &(v, t) in runs {
        let take = t > edge || (t == edge && room > 0);
        if t == edge && take {
            room -= 1;
        }
        let slot = if take && a < k {
            a += 1;
            coded.get_mut(a - 1)
        } else {
            b += 1;
            rest.get_mut(b - 1)
        };
        if let Some(s) = slot {
            *s = v;
        }
    }
    (a, b)
}

impl NumRecs {
    /// Appends the PDICT chunk of `vals` (whose distinct values are `runs`, as for [`plan`])
    /// under `p` after its count byte, with a sum of `sum` bytes (0: none).
    pub(super) fn encode_pdict(
        &self,
        vals: &[u64],
        runs: &[(u64, usize)],
        p: &Plan,
        sum: usize,
        out: &mut Vec<u8>,
    ) {
        let w = self.w();
        let (mut coded, mut rest) = ([0u64; 128], [0u64; 256]);
        let (a, b) = split(runs, 1 << p.bits, &mut coded, &mut rest);
        let (coded, rest) = (
            coded.get(..a).unwrap_or_default(),
            rest.get(..b).unwrap_or_default(),
        );
        let parts = Parts::new(vals.len(), p.bits, a + b, p.exc, w);
        out.push(PDICT | (sum as u8) << 4);
        out.extend_from_slice(&[p.bits as u8, (a + b - 1) as u8, p.exc as u8]);
        for &o in coded.iter().chain(rest) {
            push_le(out, self.unordered(o).into(), w);
        }
        let main = |v: u64| coded.binary_search(&self.ordered(v)).ok();
        pack(
            vals.iter().map(|&v| main(v).unwrap_or(0) as u64),
            p.bits,
            out,
        );
        // Every value is an entry: one not coded is among the others.
        let exceptions = || vals.iter().enumerate().filter(|&(_, &v)| main(v).is_none());
        out.extend(exceptions().map(|(j, _)| j as u8));
        pack(
            exceptions().map(|(_, &v)| rest.binary_search(&self.ordered(v)).unwrap_or(0) as u64),
            parts.xbits,
            out,
        );
        if sum > 0 {
            let lo = runs.first().map_or(0, |r| r.0);
            let s: u128 = vals.iter().map(|&v| u128::from(self.ordered(v) - lo)).sum();
            push_le(out, s, sum);
        }
    }

    /// The entry (index into the dictionary) of record `j` of the PDICT chunk at `at`. A read in
    /// order (`hint`: the exception at or after the record read before) finds its place among
    /// the exceptions at the hint's or the one after it; others search by halving.
    #[inline(always)]
    pub(super) fn pdict_code(
        &self,
        region: &[u8],
        at: usize,
        c: &Chunk,
        j: usize,
        hint: Option<&RecHint>,
    ) -> SResult<usize> {
        let p = Parts::of(c, self.w());
        let run = |a: usize| region.get(at + a..).ok_or(Fault(CHUNK_OUT));
        let pos = region
            .get(at + p.pos..at + p.xcodes)
            .ok_or(Fault(CHUNK_OUT))?;
        // The first exception at or after `j`: where `i` is when the one before it is before `j`
        // and it is not.
        let fits = |i: usize| {
            i.checked_sub(1)
                .is_none_or(|b| pos.get(b).is_some_and(|&q| usize::from(q) < j))
                && pos.get(i).is_none_or(|&q| usize::from(q) >= j)
        };
        let i = match hint.map(|h| h.exc.get()) {
            Some((a, i)) if a == at + 1 && fits(i) => i,
            Some((a, i)) if a == at + 1 && fits(i + 1) => i + 1,
            _ => pos.partition_point(|&q| usize::from(q) < j),
        };
        if let Some(h) = hint {
            h.exc.set((at + 1, i));
        }
        Ok(match pos.get(i) {
            Some(&q) if usize::from(q) == j => p.k + extract(run(p.xcodes)?, i, p.xbits)? as usize,
            _ => extract(run(p.codes)?, j, c.bits)? as usize,
        })
    }

    /// The entries of records `j0..j0 + out.len()` of the PDICT chunk at `at` into `out`: the
    /// codes unpacked, then the exceptions among them patched.
    pub(super) fn pdict_codes(
        &self,
        region: &[u8],
        at: usize,
        c: &Chunk,
        j0: usize,
        out: &mut [u64],
    ) -> SResult<()> {
        let p = Parts::of(c, self.w());
        let run = |a: usize| region.get(at + a..).ok_or(Fault(CHUNK_OUT));
        unpack(run(p.codes)?, c.bits, j0, out)?;
        let pos = region
            .get(at + p.pos..at + p.xcodes)
            .ok_or(Fault(CHUNK_OUT))?;
        let xcodes = run(p.xcodes)?;
        let j1 = j0 + out.len();
        let first = pos.partition_point(|&q| usize::from(q) < j0);
        for (i, &q) in pos.iter().enumerate().skip(first) {
            let q = usize::from(q);
            if q >= j1 {
                break;
            }
            if let Some(o) = q.checked_sub(j0).and_then(|r| out.get_mut(r)) {
                *o = p.k as u64 + extract(xcodes, i, p.xbits)?;
            }
        }
        Ok(())
    }

    /// The sum of records `js` of the PDICT chunk at `at` (integer records) when its codes
    /// take 0 bits (one dominant value): `js.len()` times entry 0, plus for each exception in
    /// range its entry's distance above entry 0. The exceptions are a tenth of the records
    /// or fewer, where unpacking every code and looking each up (`pdict_codes`, `dict_sum`)
    /// took most of a range SUM's partial chunks. `None` for codes of more bits.
    pub(super) fn pdict_sum0(
        &self,
        region: &[u8],
        at: usize,
        c: &Chunk,
        js: std::ops::Range<usize>,
    ) -> SResult<Option<i128>> {
        if c.bits != 0 {
            return Ok(None);
        }
        let (w, p) = (self.w(), Parts::of(c, self.w()));
        let bad = || Fault(CHUNK_OUT);
        let entry = |k: usize| word_in(region, at + HEAD + k * w, w).ok_or_else(bad);
        let pos = region.get(at + p.pos..at + p.xcodes).ok_or_else(bad)?;
        let xcodes = region.get(at + p.xcodes..).ok_or_else(bad)?;
        let e0 = self.number(entry(0)?);
        let mut sum = js.len() as i128 * e0;
        // The exceptions in range as `pdict_codes` patches them.
        let first = pos.partition_point(|&q| usize::from(q) < js.start);
        for (i, &q) in pos.iter().enumerate().skip(first) {
            if usize::from(q) >= js.end {
                break;
            }
            let code = p.k + extract(xcodes, i, p.xbits)? as usize;
            if code >= c.param {
                return Err(Fault("record dictionary code out of range"));
            }
            sum += self.number(entry(code)?) - e0;
        }
        Ok(Some(sum))
    }

    /// The smallest entry of the PDICT chunk `chunk` as a word (the base of its sum): the first
    /// coded entry or the first of the others.
    #[inline]
    pub(super) fn pdict_base(&self, chunk: &[u8], c: &Chunk) -> Option<u64> {
        let (w, k) = (self.w(), 1usize << c.bits.min(MAX_BITS));
        let a = word_in(chunk, HEAD, w)?;
        let b = word_in(chunk, HEAD + k * w, w)?;
        Some(if self.ordered(a) <= self.ordered(b) {
            a
        } else {
            b
        })
    }

    /// The offset entry `code` of the PDICT chunk `chunk` adds to its sum: its distance above
    /// the smallest entry.
    pub(super) fn pdict_offset(&self, chunk: &[u8], c: &Chunk, code: u64) -> Option<u64> {
        let w = self.w();
        let at = HEAD + usize::try_from(code).ok()? * w;
        let e = word_in(chunk, at, w)?;
        self.ordered(e)
            .checked_sub(self.ordered(self.pdict_base(chunk, c)?))
    }

    /// The PDICT chunk `old` with `v` appended, when `v` is one of its entries: a coded one
    /// adds its code, another one a code of 0 and an exception at the end of the list (its
    /// position is past every other). Its bytes are copied, not decoded and chosen again.
    pub(super) fn pdict_extend(&self, old: &[u8], c: &Chunk, v: u64) -> Option<Vec<u8>> {
        let (w, p) = (self.w(), Parts::of(c, self.w()));
        let want = v.to_le_bytes();
        let want = want.get(..w)?;
        let code = old
            .get(HEAD..HEAD + c.param * w)?
            .chunks_exact(w)
            .position(|d| d == want)?;
        let exc = code >= p.k;
        let q = Parts::new(c.count + 1, c.bits, c.param, c.exc + usize::from(exc), w);
        if c.count >= 255 {
            return None;
        }
        let mut out = Vec::with_capacity(q.end + c.sum);
        out.extend_from_slice(old.get(..p.pos)?);
        out.resize(q.pos, 0);
        if !exc {
            put_bits(out.get_mut(q.codes..)?, c.count, c.bits, code as u64)?;
        }
        out.extend_from_slice(old.get(p.pos..p.xcodes)?);
        if exc {
            out.push(c.count as u8);
        }
        out.extend_from_slice(old.get(p.xcodes..p.end)?);
        out.resize(q.end, 0);
        if exc {
            let x = (code - p.k) as u64;
            put_bits(out.get_mut(q.xcodes..)?, c.exc, p.xbits, x)?;
        }
        out.extend_from_slice(old.get(p.end..c.len)?);
        *out.first_mut()? += 1;
        *out.get_mut(4)? = (c.exc + usize::from(exc)) as u8;
        if let Some(sum) = self.stored_sum(old, c) {
            let sum = sum + u128::from(self.pdict_offset(old, c, code as u64)?);
            let end = out.len();
            write_sum(out.get_mut(end.checked_sub(c.sum)?..)?, sum)?;
        }
        Some(out)
    }

    /// The PDICT chunk `old` with record `j` set to `v`, when `v` keeps the record's kind: a
    /// coded record to another coded entry, an exception to another uncoded one (one code
    /// rewritten, the sum kept). `None` otherwise: the chunk is then re-encoded.
    pub(super) fn pdict_set(&self, old: &[u8], c: &Chunk, j: usize, v: u64) -> Option<Vec<u8>> {
        let (w, p) = (self.w(), Parts::of(c, self.w()));
        if j >= c.count {
            return None;
        }
        let entries = old.get(HEAD..HEAD + c.param * w)?;
        let want = v.to_le_bytes();
        let want = want.get(..w)?;
        let find = |from: usize, to: usize| {
            entries
                .get(from * w..to * w)?
                .chunks_exact(w)
                .position(|d| d == want)
                .map(|i| i + from)
        };
        let pos = old.get(p.pos..p.xcodes)?;
        let mut out = old.to_vec();
        let (was, now) = match pos.binary_search(&(j as u8)) {
            Ok(i) => {
                let now = find(p.k, c.param)?;
                let was = p.k + extract(old.get(p.xcodes..)?, i, p.xbits).ok()? as usize;
                put_bits(out.get_mut(p.xcodes..)?, i, p.xbits, (now - p.k) as u64)?;
                (was, now)
            }
            Err(_) => {
                let now = find(0, p.k)?;
                let was = extract(old.get(p.codes..)?, j, c.bits).ok()? as usize;
                put_bits(out.get_mut(p.codes..)?, j, c.bits, now as u64)?;
                (was, now)
            }
        };
        if let Some(sum) = self.stored_sum(old, c) {
            let sum = (sum + u128::from(self.pdict_offset(old, c, now as u64)?))
                .checked_sub(u128::from(self.pdict_offset(old, c, was as u64)?))?;
            write_sum(out.get_mut(c.len.checked_sub(c.sum)?..c.len)?, sum)?;
        }
        Some(out)
    }

    /// `check` of a PDICT chunk beyond its records: the exception positions ascend strictly and
    /// name records of the chunk (point reads search them by halving, bulk decodes patch them
    /// in order: both must find the same).
    pub(super) fn pdict_check(&self, chunk: &[u8], c: &Chunk) -> SResult<()> {
        let p = Parts::of(c, self.w());
        let pos = chunk.get(p.pos..p.xcodes).ok_or(Fault(CHUNK_OUT))?;
        let ascending = pos.windows(2).all(|q| q.first() < q.last());
        if !ascending || pos.last().is_some_and(|&q| usize::from(q) >= c.count) {
            return Err(Fault("record dictionary exceptions out of order"));
        }
        Ok(())
    }
}

#[cfg(test)]
#[allow(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic
)]
mod tests {
    use super::super::tests::{fold_model, list, model_check, rng};
    use super::super::{mask, Num, RecFold};
    use super::*;

    const KINDS: [(u8, Num); 8] = [
        (4, Num::Unsigned),
        (8, Num::Unsigned),
        (8, Num::Signed),
        (4, Num::Signed),
        (2, Num::Signed),
        (1, Num::Unsigned),
        (8, Num::Float),
        (2, Num::Unsigned),
    ];

    /// A region of one chunk of `vals`; with `force` its layout is PDICT whenever the values
    /// allow one (2..=256 distinct).
    fn region_of(nr: NumRecs, vals: &[u64], force: bool) -> Vec<u8> {
        let mut out = vec![0u8, 0];
        nr.encode_with(vals, force.then_some((PDICT, 0)), true, &mut out);
        let used = out.len() as u16;
        out[..2].copy_from_slice(&used.to_le_bytes());
        out
    }

    /// Distinct values of the record width, the extremes first (0, the largest word, the
    /// signed extremes and -1 in the width), then random ones.
    fn pool(nr: NumRecs, r: &mut impl FnMut() -> u64, k: usize) -> Vec<u64> {
        let bits = 8 * u32::from(nr.width);
        let m = mask(bits);
        let mut p = vec![200 & m, 0, m, 1 << (bits - 1), (1 << (bits - 1)) - 1, 1];
        while p.len() < k + 40 {
            p.push(r() & m);
        }
        let mut seen = std::collections::HashSet::new();
        p.retain(|v| seen.insert(*v));
        p.truncate(k);
        p
    }

    /// `n` records: `pool[0]` (the dominant value) except where a draw below `rate` percent
    /// makes a record one of the others.
    fn skewed(r: &mut impl FnMut() -> u64, pool: &[u64], n: usize, rate: u64) -> Vec<u64> {
        (0..n)
            .map(|_| {
                if pool.len() > 1 && r() % 100 < rate {
                    pool[1 + (r() as usize) % (pool.len() - 1)]
                } else {
                    pool[0]
                }
            })
            .collect()
    }

    /// Every record of `region` by a point read, in bulk and by `check`; folds (full and sums
    /// only) of a few ranges against the model.
    fn agree(nr: NumRecs, region: &[u8], vals: &[u64], what: &str) {
        let n = vals.len();
        for (i, &v) in vals.iter().enumerate() {
            assert_eq!(
                nr.get(region, n, i).unwrap(),
                v.to_le_bytes(),
                "{what}: record {i}"
            );
        }
        // Reads in order through one hint, forwards, backwards and skipping.
        let hint = RecHint::default();
        let order = (0..n).chain((0..n).rev()).chain((0..n).step_by(3));
        for i in order.chain((0..n).rev().step_by(2)) {
            assert_eq!(
                nr.get_hinted(region, n, i, &hint).unwrap(),
                vals[i].to_le_bytes(),
                "{what}: record {i} through a hint"
            );
        }
        let mut all = Vec::new();
        nr.decode_all(region, n, &mut all).unwrap();
        assert_eq!(all, vals, "{what}");
        let bits = |f: &RecFold| (f.count, f.isum, f.fsum.to_bits(), f.min, f.max);
        for (a, z) in [(0, n), (1, n), (0, n - 1), (n / 3, n / 2 + 1), (n - 1, n)] {
            if a > z {
                continue;
            }
            let mut got = RecFold::default();
            nr.fold(region, n, a..z, nr.rec_num(), &mut got, &RecHint::default())
                .unwrap();
            let want = fold_model(nr, &vals[a..z]);
            assert_eq!(bits(&want), bits(&got), "{what}: fold of {a}..{z}");
            let mut sums = RecFold {
                skip_extremes: true,
                ..RecFold::default()
            };
            nr.fold(
                region,
                n,
                a..z,
                nr.rec_num(),
                &mut sums,
                &RecHint::default(),
            )
            .unwrap();
            assert_eq!((want.count, want.isum), (sums.count, sums.isum), "{what}");
            if nr.num == Num::Float {
                assert_eq!(want.fsum.to_bits(), sums.float_sum().to_bits(), "{what}");
            }
        }
    }

    /// Single chunks at exception rates 0..100%, with 1..254 values beside the dominant one, of
    /// 1..255 records, every record type: forced to PDICT they read, fold and check as the
    /// model says; chosen freely, never larger than PDICT.
    #[test]
    fn pdict_chunks_match_a_model() {
        let mut r = rng(16);
        let mut chosen = 0;
        for (w, num) in KINDS {
            let nr = list(w, num);
            for others in [1usize, 2, 5, 30, 254] {
                let pool = pool(nr, &mut r, others + 1);
                for rate in [0u64, 1, 5, 10, 25, 50, 75, 100] {
                    for n in [1usize, 2, 17, 128, 255] {
                        let vals = skewed(&mut r, &pool, n, rate);
                        let what = format!("w {w} {num:?} others {others} rate {rate} n {n}");
                        let forced = region_of(nr, &vals, true);
                        let c = nr.header(&forced, 2).unwrap();
                        let mut d = vals.clone();
                        d.sort_unstable();
                        d.dedup();
                        if d.len() >= 2 {
                            assert_eq!(c.kind, PDICT, "{what}");
                            let p = Parts::of(&c, w as usize);
                            assert_eq!(c.len, p.end + c.sum, "{what}");
                            assert_eq!(forced.len(), 2 + c.len, "{what}");
                        }
                        agree(nr, &forced, &vals, &what);
                        let free = region_of(nr, &vals, false);
                        let f = nr.header(&free, 2).unwrap();
                        chosen += usize::from(f.kind == PDICT);
                        if c.kind == PDICT {
                            assert!(free.len() <= forced.len(), "{what}");
                        }
                        agree(nr, &free, &vals, &what);
                        // Bytes past the chunk (left by earlier writes) are masked off.
                        let mut padded = forced.clone();
                        padded.extend((0..16).map(|_| r() as u8));
                        agree(nr, &padded, &vals, &what);
                    }
                }
            }
        }
        assert!(chosen > 100, "PDICT chosen for only {chosen} chunks");
    }

    /// `floor` never exceeds the size `plan` finds (it decides whether the plan is made).
    #[test]
    fn the_floor_is_a_lower_bound() {
        let mut r = rng(77);
        for _ in 0..20_000 {
            let d = 2 + (r() % 60) as usize;
            let skew = r() % 4;
            let mut runs: Vec<(u64, usize)> = (0..d)
                .map(|i| {
                    (
                        i as u64 * 3,
                        1 + (r() % (1 + 200 * (skew == 0) as u64 + 3)) as usize,
                    )
                })
                .collect();
            runs[(r() as usize) % d].1 += (r() % 200) as usize;
            let n: usize = runs.iter().map(|x| x.1).sum();
            if n > 255 {
                continue;
            }
            let most = runs.iter().map(|x| x.1).max().unwrap();
            for w in [1usize, 4, 8] {
                let p = plan(&runs, n, w).unwrap();
                assert!(floor(n, d, most, w) <= p.len, "{runs:?} w {w}");
            }
        }
    }

    /// What the issue measured: status codes, one nine times in ten, as series (c) of `tersedb
    /// bench timeseries` has them. DICT took 3 bits per record and its dictionary; PDICT codes
    /// the dominant value in 0 bits and lists the rest.
    #[test]
    fn skewed_codes_take_under_a_third_of_a_byte() {
        let mut r = rng(3);
        let codes = [
            (200u64, 90u64),
            (204, 3),
            (301, 2),
            (404, 3),
            (500, 1),
            (503, 1),
        ];
        let vals: Vec<u64> = (0..255 * 40)
            .map(|_| {
                let mut x = r() % 100;
                for (c, w) in codes {
                    if x < w {
                        return c;
                    }
                    x -= w;
                }
                200
            })
            .collect();
        let nr = NumRecs {
            width: 4,
            num: Num::Unsigned,
            chunk: 255,
        };
        let mut region = Vec::new();
        nr.encode_all(&vals, &mut region);
        let per = region.len() as f64 / vals.len() as f64;
        assert!(per < 0.33, "status codes take {per} bytes each");
        let mut at = NumRecs::chunks_at(&region);
        let mut kinds = Vec::new();
        while at < region.len() {
            let c = nr.header(&region, at).unwrap();
            kinds.push(c.kind);
            at += c.len;
        }
        assert!(kinds.iter().all(|&k| k == PDICT), "{kinds:?}");
        agree(nr, &region, &vals, "status codes");
    }

    /// Appends of coded values extend a PDICT chunk in place; overwrites that keep a record
    /// coded (or an exception) rewrite one code; both keep the sum, which `check` holds.
    #[test]
    fn pdict_edits_in_place() {
        let nr = list(8, Num::Signed);
        let mut vals: Vec<u64> = (0..100u64)
            .map(|k| match k % 20 {
                4 => (-7i64) as u64,
                9 => i64::MAX as u64,
                14 => 12,
                19 => 99,
                _ => (-3i64) as u64,
            })
            .collect();
        let region = region_of(nr, &vals, true);
        let c = nr.header(&region, 2).unwrap();
        assert_eq!(c.kind, PDICT);
        assert_eq!(
            (c.bits, c.exc),
            (0, 20),
            "one coded value, the others exceptions"
        );
        assert!(c.sum > 0);
        let old = &region[2..2 + c.len];
        // An append of the dominant value: the chunk grows by its code only.
        let ext = nr.extend(old, &c, (-3i64) as u64).unwrap();
        let mut grown = vec![0u8, 0];
        grown.extend_from_slice(&ext);
        let used = grown.len() as u16;
        grown[..2].copy_from_slice(&used.to_le_bytes());
        vals.push((-3i64) as u64);
        agree(nr, &grown, &vals, "extended");
        vals.pop();
        // An append of another entry: one more exception, in place.
        let ext = nr.extend(old, &c, 12).unwrap();
        let mut grown = vec![0u8, 0];
        grown.extend_from_slice(&ext);
        let used = grown.len() as u16;
        grown[..2].copy_from_slice(&used.to_le_bytes());
        vals.push(12);
        agree(nr, &grown, &vals, "extended by an exception");
        assert_eq!(nr.header(&grown, 2).unwrap().exc, c.exc + 1);
        vals.pop();
        // A value not in the dictionary: re-encoded.
        assert!(nr.extend(old, &c, 1234).is_none());
        // Exception to exception, coded to coded: in place; across: re-encoded.
        for (j, v, in_place) in [
            (4usize, 12u64, true),
            (9, (-7i64) as u64, true),
            (0, (-3i64) as u64, true),
            (4, (-3i64) as u64, false),
            (0, 12, false),
            (5, 1234, false),
        ] {
            let set = nr.set_in_layout(old, &c, j, v);
            assert_eq!(set.is_some(), in_place, "record {j} to {v}");
            if let Some(new) = set {
                let mut reg = vec![0u8, 0];
                reg.extend_from_slice(&new);
                let used = reg.len() as u16;
                reg[..2].copy_from_slice(&used.to_le_bytes());
                let mut model = vals.clone();
                model[j] = v;
                agree(nr, &reg, &model, "set in place");
            }
        }
    }

    /// Whole regions of skewed records through inserts at random places, overwrites, vacuum and
    /// removes (`model_check`), each region holding PDICT chunks.
    #[test]
    fn pdict_regions_match_a_vec_model() {
        let mut r = rng(23);
        for (w, num) in KINDS {
            let nr = list(w, num);
            for (others, rate) in [(1usize, 3u64), (5, 10), (12, 20), (40, 8)] {
                let pool = pool(nr, &mut r, others + 1);
                let vals = skewed(&mut r, &pool, 700, rate);
                let mut region = Vec::new();
                nr.encode_all(&vals, &mut region);
                let mut at = NumRecs::chunks_at(&region);
                let mut pdicts = 0;
                while at < region.len() {
                    let c = nr.header(&region, at).unwrap();
                    pdicts += usize::from(c.kind == PDICT);
                    at += c.len;
                }
                assert!(pdicts > 0, "w {w} {num:?} others {others} rate {rate}");
                model_check(nr, &vals, r());
            }
        }
    }

    /// Forged headers and positions: `header` refuses what the layout cannot hold, `check`
    /// refuses positions out of order; reads give a value or a fault.
    #[test]
    fn forged_pdict_chunks_fail_cleanly() {
        let nr = list(4, Num::Unsigned);
        let vals: Vec<u64> = (0..60u64)
            .map(|k| if k % 6 == 1 { 7 + k % 4 } else { 200 })
            .collect();
        let good = region_of(nr, &vals, false);
        let c = nr.header(&good, 2).unwrap();
        assert_eq!(c.kind, PDICT);
        assert!(c.exc >= 2);
        let n = vals.len();
        let refused = |bad: &[u8]| {
            assert!(nr.header(bad, 2).is_err());
            assert!(nr.get(bad, n, 0).is_err());
            assert!(nr.decode_all(bad, n, &mut Vec::new()).is_err());
        };
        // b = 8; as many entries as b codes (2^b >= entries); more exceptions than records.
        for (at, x) in [(2 + 2, 8u8), (2 + 3, (1u8 << c.bits) - 1), (2 + 4, 61)] {
            let mut bad = good.clone();
            bad[at] = x;
            refused(&bad);
        }
        // Two positions swapped: reads answer, `check` refuses.
        let p = Parts::of(&c, 4);
        let mut bad = good.clone();
        bad.swap(2 + p.pos, 2 + p.pos + 1);
        for i in 0..n {
            let _ = nr.get(&bad, n, i);
        }
        let err = nr.decode_all(&bad, n, &mut Vec::new()).unwrap_err();
        assert_eq!(err, Fault("record dictionary exceptions out of order"));
        // A position past the chunk's records.
        let mut bad = good.clone();
        bad[2 + p.pos + c.exc - 1] = 200;
        assert!(nr.decode_all(&bad, n, &mut Vec::new()).is_err());
        // An exception code past the entries (xb bits may name more than there are).
        let mut bad = good.clone();
        for b in &mut bad[2 + p.xcodes..2 + p.end] {
            *b = 0xff;
        }
        if c.param - p.k < 1 << p.xbits {
            assert!(nr.decode_all(&bad, n, &mut Vec::new()).is_err());
        }
        for i in 0..n {
            let _ = nr.get(&bad, n, i);
        }
    }
}
