//! Compressed KeyLists for byte-string keys: the in-node layouts of seed 002's techniques.
//!
//! Tail compression (shortest separators) and the choice of the split point live in the tree
//! (`tree.rs`); they need no layout of their own. The layouts here:
//!
//! ```text
//! Head        [plen u16][prefix: plen bytes][slots::var layout of the keys without the prefix]
//!             prefix = common prefix of the node's fence keys (set when the node is built)
//! WiredTiger  slots::var layout; item = [p: LEB128][key[p..]], p = bytes shared with the
//!             previous key (p = 0: a fully instantiated key); at most `dist` keys from one
//!             full key to the next (roll-forward distance control); key 0 is full
//! MyIsam      the same items, p always exactly the common prefix with the previous key
//! Pkb         slots::var layout; item = [off u16][pl u8][partial: l bytes][the full key]
//!             off = where the key first differs from the previous key (key 0: from the empty
//!             key), partial = key[off..off + pl], pl = min(l, len - off), zero padded to l
//! ```
//!
//! Every read is bounds-checked: a damaged region is a [`Fault`], never a panic. Inserts never
//! need more than [`StrList::cost`] bytes; removes never need more room (for the prefix-delta
//! layouts the next key's prefix can only shrink by less than the removed item's size).

use super::db2;
pub(crate) use super::slots::var_image;
pub use super::slots::{ascending, lcp, KeyShare, TOO_LARGE};
use super::slots::{le_u16, put, var, Fault, SResult};
use std::cmp::Ordering;

/// A compressed byte-string KeyList.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StrList {
    Head,
    /// Roll-forward distance: at most this many keys per run starting at a full key (>= 1).
    WiredTiger(u8),
    MyIsam,
    /// Partial key length `l` (>= 1).
    Pkb(u8),
    /// DB2 prefix groups with at most this many bytes of group table and prefixes (see `db2`).
    Db2(u16),
}

/// `[p LEB128][suffix]`.
fn put_delta(out: &mut Vec<u8>, p: usize, suffix: &[u8]) {
    let mut v = p;
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
    out.extend_from_slice(suffix);
}

/// Splits a delta item into (p, suffix).
#[inline]
fn get_delta(item: &[u8]) -> SResult<(usize, &[u8])> {
    let mut p = 0usize;
    for (k, &b) in item.iter().enumerate().take(3) {
        p |= ((b & 0x7f) as usize) << (7 * k);
        if b < 0x80 {
            return Ok((p, item.get(k + 1..).unwrap_or_default()));
        }
    }
    Err(Fault("prefix length not terminated"))
}

const PKB_HDR: usize = 3;

/// Items of a slots::var list in order from item `i`, one offset read per item (the
/// sequential scans of MyISAM and roll-forward).
struct Items<'r> {
    offs: &'r [u8],
    data: &'r [u8],
    i: usize,
    start: usize,
}

impl<'r> Items<'r> {
    fn new(region: &'r [u8], n: usize, i: usize) -> SResult<Items<'r>> {
        let used = var::used(region, n)?;
        let start = if i == 0 {
            0
        } else {
            var::range(region, n, i - 1)?.end - 2 * n
        };
        let (offs, data) = region
            .get(..used)
            .and_then(|r| r.split_at_checked(2 * n))
            .ok_or(Fault("item offsets outside their region"))?;
        Ok(Items {
            offs,
            data,
            i,
            start,
        })
    }
    #[inline]
    fn next_item(&mut self) -> SResult<&'r [u8]> {
        let end = le_u16(
            self.offs
                .get(2 * self.i..2 * self.i + 2)
                .ok_or(Fault("item index out of range"))?,
        ) as usize;
        let it = self
            .data
            .get(self.start..end)
            .ok_or(Fault("offsets not ascending"))?;
        self.i += 1;
        self.start = end;
        Ok(it)
    }
}

impl StrList {
    /// Layout id in a node header.
    pub fn id(&self) -> u8 {
        match self {
            StrList::Head => 5,
            StrList::WiredTiger(_) => 6,
            StrList::MyIsam => 7,
            StrList::Pkb(_) => 8,
            StrList::Db2(_) => 9,
        }
    }

    /// Whether every key is stored whole (so `raw` can borrow it).
    pub fn contiguous(&self) -> bool {
        matches!(self, StrList::Pkb(_))
    }

    /// Makes `region` an empty list.
    pub fn init(&self, region: &mut [u8]) {
        if let StrList::Head | StrList::Db2(_) = self {
            put(region, 0, &[0, 0]);
        }
    }

    /// Bytes one more key of `len` bytes takes at most.
    pub fn cost(&self, len: usize) -> usize {
        match *self {
            StrList::Head => 2 + len,
            StrList::WiredTiger(_) | StrList::MyIsam => 2 + 2 + len,
            StrList::Pkb(l) => 2 + PKB_HDR + l as usize + len,
            StrList::Db2(_) => db2::cost(len),
        }
    }

    /// The head prefix and the suffix list's region.
    #[inline]
    fn head(region: &[u8]) -> SResult<(&[u8], &[u8])> {
        let plen = le_u16(
            region
                .get(..2)
                .ok_or(Fault("head prefix outside its region"))?,
        ) as usize;
        region
            .get(2..)
            .and_then(|r| r.split_at_checked(plen))
            .ok_or(Fault("head prefix outside its region"))
    }

    /// The suffix list's region after a head prefix of `plen` bytes.
    fn suffixes_mut(region: &mut [u8], plen: usize) -> SResult<&mut [u8]> {
        region
            .get_mut(2 + plen..)
            .ok_or(Fault("head prefix outside its region"))
    }

    /// The node's head prefix (empty for the other layouts).
    pub fn prefix<'r>(&self, region: &'r [u8]) -> SResult<&'r [u8]> {
        match self {
            StrList::Head => Ok(Self::head(region)?.0),
            _ => Ok(&[]),
        }
    }

    pub fn used(&self, region: &[u8], n: usize) -> SResult<usize> {
        match self {
            StrList::Head => {
                let (p, sub) = Self::head(region)?;
                Ok(2 + p.len() + var::used(sub, n)?)
            }
            StrList::Db2(_) => db2::used(region, n),
            _ => var::used(region, n),
        }
    }

    /// The stored bytes of key `i` (`Pkb` only: the others do not store keys whole).
    #[inline]
    pub fn raw<'r>(&self, region: &'r [u8], n: usize, i: usize) -> SResult<&'r [u8]> {
        match *self {
            StrList::Pkb(l) => var::get(region, n, i)?
                .get(PKB_HDR + l as usize..)
                .ok_or(Fault("partial-key item too short")),
            _ => Err(Fault("compressed keys have no stored bytes")),
        }
    }

    /// Key `i` into `buf` (replacing its contents).
    pub fn key_into(&self, region: &[u8], n: usize, i: usize, buf: &mut Vec<u8>) -> SResult<()> {
        buf.clear();
        match self {
            StrList::Head => {
                let (p, sub) = Self::head(region)?;
                buf.extend_from_slice(p);
                buf.extend_from_slice(var::get(sub, n, i)?);
            }
            StrList::WiredTiger(_) | StrList::MyIsam => {
                if i >= n {
                    return Err(Fault("key index out of range"));
                }
                let mut j = i;
                while get_delta(var::get(region, n, j)?)?.0 != 0 {
                    if j == 0 {
                        return Err(Fault("first key of a prefix-delta list not full"));
                    }
                    j -= 1;
                }
                let mut items = Items::new(region, n, j)?;
                for _ in j..=i {
                    let (p, s) = get_delta(items.next_item()?)?;
                    if p > buf.len() {
                        return Err(Fault("prefix longer than the previous key"));
                    }
                    buf.truncate(p);
                    buf.extend_from_slice(s);
                }
            }
            StrList::Pkb(_) => buf.extend_from_slice(self.raw(region, n, i)?),
            StrList::Db2(_) => db2::key_into(region, n, i, buf)?,
        }
        Ok(())
    }

    /// Calls `f` with every key in order (one pass; O(n) for the prefix-delta layouts).
    pub fn for_each(
        &self,
        region: &[u8],
        n: usize,
        mut f: impl FnMut(&[u8]) -> SResult<()>,
    ) -> SResult<()> {
        match self {
            StrList::Head => {
                let (p, sub) = Self::head(region)?;
                let mut buf = p.to_vec();
                for i in 0..n {
                    buf.truncate(p.len());
                    buf.extend_from_slice(var::get(sub, n, i)?);
                    f(&buf)?;
                }
            }
            StrList::WiredTiger(_) | StrList::MyIsam => {
                let mut buf = Vec::new();
                let mut items = Items::new(region, n, 0)?;
                for i in 0..n {
                    let (p, s) = get_delta(items.next_item()?)?;
                    if p > buf.len() || (i == 0 && p != 0) {
                        return Err(Fault("prefix longer than the previous key"));
                    }
                    buf.truncate(p);
                    buf.extend_from_slice(s);
                    f(&buf)?;
                }
            }
            StrList::Pkb(_) => {
                for i in 0..n {
                    f(self.raw(region, n, i)?)?;
                }
            }
            StrList::Db2(_) => db2::for_each(region, n, f)?,
        }
        Ok(())
    }

    /// After key `i - 1` is in `buf`, puts key `i` there (a cursor stepping forward): O(1) for
    /// the prefix-delta layouts.
    pub fn next_into(&self, region: &[u8], n: usize, i: usize, buf: &mut Vec<u8>) -> SResult<()> {
        match self {
            StrList::WiredTiger(_) | StrList::MyIsam if i > 0 => {
                let (p, s) = get_delta(var::get(region, n, i)?)?;
                if p > buf.len() {
                    return Err(Fault("prefix longer than the previous key"));
                }
                buf.truncate(p);
                buf.extend_from_slice(s);
                Ok(())
            }
            _ => self.key_into(region, n, i, buf),
        }
    }

    /// Binary (or, for MyISAM and PkB, sequential) search: `Ok(i)` when key `i` equals `probe`,
    /// `Err(i)` for the insert position.
    pub fn search(&self, region: &[u8], n: usize, probe: &[u8]) -> SResult<Result<usize, usize>> {
        match *self {
            StrList::Head => {
                let (p, sub) = Self::head(region)?;
                let m = lcp(p, probe);
                if m < p.len() {
                    // The probe leaves the prefix: below every key or above every key.
                    // (A probe that ends at `m` is below: `None` orders first.)
                    return Ok(if probe.get(m) < p.get(m) {
                        Err(0)
                    } else {
                        Err(n)
                    });
                }
                let rest = probe.get(p.len()..).unwrap_or_default();
                var::used(sub, n)?;
                let (mut lo, mut hi) = (0usize, n);
                while lo < hi {
                    let mid = lo + (hi - lo) / 2;
                    match var::get(sub, n, mid)?.cmp(rest) {
                        Ordering::Less => lo = mid + 1,
                        Ordering::Greater => hi = mid,
                        Ordering::Equal => return Ok(Ok(mid)),
                    }
                }
                Ok(Err(lo))
            }
            StrList::WiredTiger(_) => {
                var::used(region, n)?;
                let mut buf = Vec::with_capacity(probe.len() + 16);
                let (mut lo, mut hi) = (0usize, n);
                while lo < hi {
                    let mid = lo + (hi - lo) / 2;
                    self.key_into(region, n, mid, &mut buf)?;
                    match buf.as_slice().cmp(probe) {
                        Ordering::Less => lo = mid + 1,
                        Ordering::Greater => hi = mid,
                        Ordering::Equal => return Ok(Ok(mid)),
                    }
                }
                Ok(Err(lo))
            }
            StrList::MyIsam => Self::search_myisam(region, n, probe),
            StrList::Pkb(l) => Self::search_pkb_blind(region, n, probe, l as usize, &mut 0),
            StrList::Db2(_) => db2::search(region, n, probe),
        }
    }

    /// MyISAM's sequential search. Invariant before item `i`: key `i - 1` < probe and `m` is
    /// their common prefix length. An item sharing more than `m` bytes with key `i - 1` is also
    /// below the probe; one sharing fewer is above it (it differs from key `i - 1`, which equals
    /// the probe there, upwards); only items sharing exactly `m` bytes compare their suffix.
    fn search_myisam(region: &[u8], n: usize, probe: &[u8]) -> SResult<Result<usize, usize>> {
        let mut m = 0usize;
        let mut len = 0usize; // length of key i - 1
        let mut items = Items::new(region, n, 0)?;
        for i in 0..n {
            let (p, s) = get_delta(items.next_item()?)?;
            if p > len || (i == 0 && p != 0) {
                return Err(Fault("prefix longer than the previous key"));
            }
            len = p + s.len();
            if p > m {
                continue;
            }
            if p < m {
                return Ok(Err(i));
            }
            // `m` is a common prefix of the probe and key i - 1: within both.
            let rest = probe.get(m..).unwrap_or_default();
            let k = lcp(s, rest);
            match s.get(k..).cmp(&rest.get(k..)) {
                Ordering::Equal => return Ok(Ok(i)),
                Ordering::Greater => return Ok(Err(i)),
                Ordering::Less => m += k,
            }
        }
        Ok(Err(n))
    }

    /// PkB's search with at most one full key read in nearly every node: a blind pass over the
    /// offsets and partial keys picks the key `c` sharing the longest prefix with the probe
    /// (String B-tree style: at each position where keys branch, follow the probe's byte when a
    /// key has it); reading key `c` gives the probe's common prefix `L` with it and their order;
    /// then every key's order against the probe follows from its common prefix with key `c`
    /// (from the offsets): longer than `L`: as key `c`; shorter: by position; equal: by its byte
    /// at `L`, which the partial keys give unless the probe falls before the first of keys that
    /// branch at `L` and that key's partial key does not reach `L` (then that key is read too).
    fn search_pkb_blind(
        region: &[u8],
        n: usize,
        probe: &[u8],
        l: usize,
        derefs: &mut usize,
    ) -> SResult<Result<usize, usize>> {
        if n == 0 {
            return Ok(Err(0));
        }
        // (off, partial, key) of item i.
        let item = |i: usize| -> SResult<(usize, &[u8], &[u8])> {
            let short = || Fault("partial-key item too short");
            let (&[o0, o1, pl], rest) = var::get(region, n, i)?
                .split_first_chunk::<PKB_HDR>()
                .ok_or_else(short)?;
            let (partials, key) = rest.split_at_checked(l).ok_or_else(short)?;
            let (off, pl) = (u16::from_le_bytes([o0, o1]) as usize, pl as usize);
            let part = partials.get(..pl);
            match part {
                Some(part)
                    if off + pl <= key.len() && (i == 0 || pl > 0) && (i > 0 || off == 0) =>
                {
                    Ok((off, part, key))
                }
                _ => Err(Fault("partial key outside its key")),
            }
        };
        // Blind pass. `h` = common prefix of key c and key i - 1, `hb` = byte of key i - 1 at h.
        let mut c = 0;
        let (mut h, mut hb) = (usize::MAX, 0u8);
        for i in 1..n {
            let (off, part, _) = item(i)?;
            // Items after the first have a partial key of at least one byte (`item`).
            let first = part.first().copied().unwrap_or_default();
            let (p, byte) = if off <= h { (off, first) } else { (h, hb) };
            if probe.get(p) == Some(&byte) {
                c = i;
                h = usize::MAX;
            } else if off <= h {
                h = off;
                hb = first;
            }
        }
        // The one read.
        let kc = item(c)?.2;
        *derefs += 1;
        let big_l = lcp(kc, probe);
        let c_vs_probe = kc.get(big_l..).cmp(&probe.get(big_l..));
        if c_vs_probe == Ordering::Equal {
            return Ok(Ok(c));
        }
        // Order of key j, whose common prefix with key c is exactly `big_l`, against the probe:
        // by its byte there (from a partial key: its own, or that of the key where the run of
        // keys agreeing with it at that position starts; else the key itself is read).
        let at_l = |j: usize, derefs: &mut usize| -> SResult<Ordering> {
            let mut k = j;
            let byte = loop {
                let (off, part, _) = item(k)?;
                if off <= big_l && big_l < off + part.len() {
                    break part.get(big_l - off).copied();
                }
                if off > big_l && k > 0 {
                    k -= 1;
                    continue;
                }
                *derefs += 1;
                break item(j)?.2.get(big_l).copied();
            };
            Ok(match (byte, probe.get(big_l)) {
                (None, None) => Ordering::Equal,
                (None, Some(_)) => Ordering::Less,
                (Some(_), None) => Ordering::Greater,
                (Some(a), Some(b)) if a != *b => a.cmp(b),
                // Key j shares more with the probe than key c: not when key c is the blind
                // search's (it shares the longest prefix), but a damaged node must still get a
                // right answer or a fault, never a wrong one: read key j.
                _ => {
                    *derefs += 1;
                    item(j)?.2.cmp(probe)
                }
            })
        };
        // Keys sharing more than `big_l` bytes with key c compare like it; fewer: like their
        // position; exactly `big_l`: by their byte there. Walk from c towards the probe.
        if c_vs_probe == Ordering::Greater {
            let mut lc = usize::MAX; // common prefix of key j and key c
            for j in (0..c).rev() {
                lc = lc.min(item(j + 1)?.0);
                let ord = if lc > big_l {
                    Ordering::Greater
                } else if lc < big_l {
                    Ordering::Less
                } else {
                    at_l(j, derefs)?
                };
                match ord {
                    Ordering::Greater => {}
                    Ordering::Equal => return Ok(Ok(j)),
                    Ordering::Less => return Ok(Err(j + 1)),
                }
            }
            Ok(Err(0))
        } else {
            let mut lc = usize::MAX;
            for j in c + 1..n {
                lc = lc.min(item(j)?.0);
                let ord = if lc > big_l {
                    Ordering::Less
                } else if lc < big_l {
                    Ordering::Greater
                } else {
                    at_l(j, derefs)?
                };
                match ord {
                    Ordering::Less => {}
                    Ordering::Equal => return Ok(Ok(j)),
                    Ordering::Greater => return Ok(Err(j)),
                }
            }
            Ok(Err(n))
        }
    }

    fn pkb_item(out: &mut Vec<u8>, prev: &[u8], key: &[u8], l: usize) {
        let off = lcp(prev, key);
        let pl = l.min(key.len() - off);
        out.extend_from_slice(&(off as u16).to_le_bytes());
        out.push(pl as u8);
        out.extend_from_slice(key.get(off..off + pl).unwrap_or_default());
        out.resize(out.len() + l - pl, 0);
        out.extend_from_slice(key);
    }

    /// Inserts `key` at `i`; the caller made room (`used + cost(key.len()) <= region.len()`)
    /// and checked the order.
    pub fn insert(&self, region: &mut [u8], n: usize, i: usize, key: &[u8]) -> SResult<()> {
        if i > n {
            return Err(Fault("insert position out of range"));
        }
        match *self {
            StrList::Head => {
                let (prefix, _) = Self::head(region)?;
                let plen = prefix.len();
                let suffix = key
                    .strip_prefix(prefix)
                    .ok_or(Fault("key outside the node's head prefix"))?;
                var::insert(Self::suffixes_mut(region, plen)?, n, i, suffix)
            }
            StrList::WiredTiger(_) | StrList::MyIsam => {
                // Keys i - 1 and i (the new key's neighbours) in one roll-forward pass.
                let mut win = Vec::new();
                let j = if n > 0 {
                    Self::window(region, n, i.saturating_sub(1), i.min(n - 1), &mut win)?
                } else {
                    0
                };
                let missing = Fault("roll-forward window shorter than asked");
                let prev: &[u8] = match win.first() {
                    Some(k) if i > 0 => k,
                    _ => &[],
                };
                let mut p = if i == 0 { 0 } else { lcp(prev, key) };
                if i < n {
                    let next = win.get(i - i.saturating_sub(1)).ok_or(missing)?;
                    let old_p = get_delta(var::get(region, n, i)?)?.0;
                    if let StrList::WiredTiger(dist) = *self {
                        // The run that gets the new key: from the full key at or before i - 1
                        // to the next full key at or after i (old indices).
                        if i > 0 && p > 0 {
                            let mut e = i;
                            while e < n && get_delta(var::get(region, n, e)?)?.0 != 0 {
                                e += 1;
                            }
                            if e - j + 1 > dist as usize {
                                p = 0;
                            }
                        }
                    }
                    let np = match *self {
                        StrList::WiredTiger(_) if old_p == 0 => 0,
                        _ => lcp(key, next),
                    };
                    let mut item = Vec::with_capacity(next.len() + 3);
                    put_delta(&mut item, np, next.get(np..).unwrap_or_default());
                    var::remove(region, n, i)?;
                    var::insert(region, n - 1, i, &item)?;
                } else if let StrList::WiredTiger(dist) = *self {
                    if i > 0 && p > 0 && i - j + 1 > dist as usize {
                        p = 0;
                    }
                }
                let mut item = Vec::with_capacity(key.len() + 3);
                put_delta(&mut item, p, key.get(p..).unwrap_or_default());
                var::insert(region, n, i, &item)
            }
            StrList::Pkb(l) => {
                let l = l as usize;
                let mut item = Vec::with_capacity(PKB_HDR + l + key.len());
                let prev: &[u8] = if i > 0 {
                    self.raw(region, n, i - 1)?
                } else {
                    &[]
                };
                Self::pkb_item(&mut item, prev, key, l);
                var::insert(region, n, i, &item)?;
                if i < n {
                    self.pkb_rebase(region, n + 1, i + 1, l)?;
                }
                Ok(())
            }
            StrList::Db2(_) => db2::insert(region, n, i, key),
        }
    }

    /// Keys `a..=b` of a prefix-delta list into `out`, rolling forward once from the last full
    /// key at or before `a`; returns that key's index.
    fn window(
        region: &[u8],
        n: usize,
        a: usize,
        b: usize,
        out: &mut Vec<Vec<u8>>,
    ) -> SResult<usize> {
        if b >= n || a > b {
            return Err(Fault("key index out of range"));
        }
        let mut j = a;
        while get_delta(var::get(region, n, j)?)?.0 != 0 {
            if j == 0 {
                return Err(Fault("first key of a prefix-delta list not full"));
            }
            j -= 1;
        }
        out.clear();
        let mut buf = Vec::new();
        let mut items = Items::new(region, n, j)?;
        for k in j..=b {
            let (p, s) = get_delta(items.next_item()?)?;
            if p > buf.len() {
                return Err(Fault("prefix longer than the previous key"));
            }
            buf.truncate(p);
            buf.extend_from_slice(s);
            if k >= a {
                out.push(buf.clone());
            }
        }
        Ok(j)
    }

    /// Recomputes the partial key of item `i` against key `i - 1` (same size, in place).
    fn pkb_rebase(&self, region: &mut [u8], n: usize, i: usize, l: usize) -> SResult<()> {
        let mut item = Vec::new();
        {
            let prev: &[u8] = if i > 0 {
                self.raw(region, n, i - 1)?
            } else {
                &[]
            };
            let key = self.raw(region, n, i)?;
            Self::pkb_item(&mut item, prev, key, l);
        }
        let r = var::range(region, n, i)?;
        if r.len() != item.len() {
            return Err(Fault("partial-key item changed size"));
        }
        region
            .get_mut(r)
            .ok_or(Fault("partial-key item outside its region"))?
            .copy_from_slice(&item);
        Ok(())
    }

    /// Removes key `i`. Never needs more room.
    pub fn remove(&self, region: &mut [u8], n: usize, i: usize) -> SResult<()> {
        if i >= n {
            return Err(Fault("remove position out of range"));
        }
        match *self {
            StrList::Head => {
                let plen = Self::head(region)?.0.len();
                var::remove(Self::suffixes_mut(region, plen)?, n, i)
            }
            StrList::WiredTiger(_) | StrList::MyIsam => {
                if i + 1 < n {
                    // Keys i - 1 ..= i + 1 in one roll-forward pass.
                    let mut win = Vec::new();
                    Self::window(region, n, i.saturating_sub(1), i + 1, &mut win)?;
                    let next = win
                        .last()
                        .ok_or(Fault("roll-forward window shorter than asked"))?;
                    let next_p = get_delta(var::get(region, n, i + 1)?)?.0;
                    let removed_p = get_delta(var::get(region, n, i)?)?.0;
                    let np = if i == 0 {
                        0
                    } else {
                        match *self {
                            StrList::WiredTiger(_) if next_p == 0 || removed_p == 0 => 0,
                            _ => lcp(win.first().unwrap_or(next), next),
                        }
                    };
                    let mut item = Vec::with_capacity(next.len() + 3);
                    put_delta(&mut item, np, next.get(np..).unwrap_or_default());
                    var::remove(region, n, i)?;
                    var::remove(region, n - 1, i)?;
                    var::insert(region, n - 2, i, &item)
                } else {
                    var::remove(region, n, i)
                }
            }
            StrList::Pkb(l) => {
                var::remove(region, n, i)?;
                if i + 1 < n {
                    self.pkb_rebase(region, n - 1, i, l as usize)?;
                }
                Ok(())
            }
            StrList::Db2(_) => db2::remove(region, n, i),
        }
    }

    /// Appends each key's [`KeyShare`] to `out`; DB2 group numbers start at `next_group`.
    pub fn shares(
        &self,
        region: &[u8],
        n: usize,
        next_group: u32,
        out: &mut Vec<KeyShare>,
    ) -> SResult<()> {
        let (sub, head) = match self {
            StrList::Db2(_) => return db2::shares(region, n, next_group, out),
            StrList::Head => {
                let (p, sub) = Self::head(region)?;
                (sub, 2 + p.len())
            }
            _ => (region, 0),
        };
        for i in 0..n {
            let r = var::range(sub, n, i)?;
            let bytes = 2 + r.len() + if i == 0 { head } else { 0 };
            out.push(KeyShare {
                bytes: bytes as u32,
                group: next_group.wrapping_add(i as u32),
                plen: 0,
            });
        }
        Ok(())
    }

    /// Writes the image of a list holding `keys` (ascending) into `out`. `prefix` is the
    /// common prefix of the node's fences (Head; it is cut further to one every key has).
    pub fn build(&self, keys: &[&[u8]], prefix: &[u8], out: &mut Vec<u8>) -> SResult<()> {
        self.build_keeping(keys, &[], prefix, out)
    }

    /// `build` for keys copied out of nodes with their [`KeyShare`]s (one per key, or none):
    /// DB2 keeps their groups where regrouping would not be smaller.
    pub fn build_keeping(
        &self,
        keys: &[&[u8]],
        old: &[KeyShare],
        prefix: &[u8],
        out: &mut Vec<u8>,
    ) -> SResult<()> {
        out.clear();
        ascending(keys)?;
        match *self {
            StrList::Head => {
                let mut plen = prefix.len();
                if let (Some(a), Some(b)) = (keys.first(), keys.last()) {
                    plen = plen.min(lcp(a, prefix)).min(lcp(b, prefix));
                }
                out.extend_from_slice(&(plen as u16).to_le_bytes());
                // `plen` is a common prefix of `prefix` and every key (they ascend: the first
                // and the last key's is every key's).
                out.extend_from_slice(prefix.get(..plen).unwrap_or_default());
                var_image(keys.iter().map(|k| k.get(plen..).unwrap_or_default()), out)
            }
            StrList::WiredTiger(_) | StrList::MyIsam => {
                let dist = match *self {
                    StrList::WiredTiger(d) => d.max(1) as usize,
                    _ => usize::MAX,
                };
                let mut items = Vec::with_capacity(keys.len());
                let mut prev: &[u8] = &[];
                for (i, k) in keys.iter().enumerate() {
                    let p = if i % dist == 0 { 0 } else { lcp(prev, k) };
                    let suffix = k.get(p..).unwrap_or_default();
                    let mut it = Vec::with_capacity(suffix.len() + 3);
                    put_delta(&mut it, p, suffix);
                    items.push(it);
                    prev = k;
                }
                var_image(items.iter().map(|v| v.as_slice()), out)
            }
            StrList::Pkb(l) => {
                let mut items = Vec::with_capacity(keys.len());
                let mut prev: &[u8] = &[];
                for k in keys {
                    let mut it = Vec::new();
                    Self::pkb_item(&mut it, prev, k, l as usize);
                    items.push(it);
                    prev = k;
                }
                var_image(items.iter().map(|v| v.as_slice()), out)
            }
            StrList::Db2(cap) => db2::build(keys, cap as usize, old, out),
        }
    }

    /// Checks the layout's own invariants beyond readability (for `check`): MyISAM's exact
    /// prefix lengths, WiredTiger's run lengths, PkB's partial keys.
    pub fn validate(&self, region: &[u8], n: usize) -> SResult<()> {
        match *self {
            StrList::Head => Ok(()),
            StrList::Db2(_) => db2::validate(region, n),
            StrList::WiredTiger(_) | StrList::MyIsam => {
                let mut prev: Vec<u8> = Vec::new();
                let mut run = 0usize;
                for i in 0..n {
                    let (p, s) = get_delta(var::get(region, n, i)?)?;
                    if p > prev.len() || (i == 0 && p != 0) {
                        return Err(Fault("prefix longer than the previous key"));
                    }
                    let mut key = prev.get(..p).unwrap_or_default().to_vec();
                    key.extend_from_slice(s);
                    match *self {
                        StrList::MyIsam if i > 0 && p != lcp(&prev, &key) => {
                            return Err(Fault("MyISAM prefix length is not exact"));
                        }
                        StrList::WiredTiger(dist) => {
                            run = if p == 0 { 1 } else { run + 1 };
                            if run > dist.max(1) as usize {
                                return Err(Fault("roll-forward run longer than the distance"));
                            }
                        }
                        _ => {}
                    }
                    prev = key;
                }
                Ok(())
            }
            StrList::Pkb(l) => {
                let mut item = Vec::new();
                for i in 0..n {
                    item.clear();
                    let prev: &[u8] = if i > 0 {
                        self.raw(region, n, i - 1)?
                    } else {
                        &[]
                    };
                    Self::pkb_item(&mut item, prev, self.raw(region, n, i)?, l as usize);
                    if var::get(region, n, i)? != item.as_slice() {
                        return Err(Fault("partial key does not match its key"));
                    }
                }
                Ok(())
            }
        }
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
    use super::*;

    fn lists() -> Vec<StrList> {
        vec![
            StrList::Head,
            StrList::WiredTiger(1),
            StrList::WiredTiger(3),
            StrList::WiredTiger(10),
            StrList::MyIsam,
            StrList::Pkb(1),
            StrList::Pkb(2),
            StrList::Pkb(5),
            StrList::Db2(1000),
            StrList::Db2(40),
        ]
    }

    fn gen_key(rng: &mut fastrand::Rng, style: u8) -> Vec<u8> {
        match style {
            0 => (0..rng.usize(0..12)).map(|_| rng.u8(..)).collect(),
            1 => {
                let mut k = b"shared/prefix/".to_vec();
                k.extend((0..rng.usize(0..6)).map(|_| rng.u8(b'a'..b'e')));
                k
            }
            _ => {
                let len = [0, 1, 2, 40, 90][rng.usize(0..5)];
                (0..len)
                    .map(|_| [0u8, 0x80, 0xff, b'a'][rng.usize(0..4)])
                    .collect()
            }
        }
    }

    fn check_all(s: StrList, region: &[u8], model: &[Vec<u8>], prefix: &[u8]) {
        let n = model.len();
        let mut buf = Vec::new();
        for (i, m) in model.iter().enumerate() {
            s.key_into(region, n, i, &mut buf).unwrap();
            assert_eq!(&buf, m, "{s:?} key {i}");
        }
        let mut all = Vec::new();
        s.for_each(region, n, |k| {
            all.push(k.to_vec());
            Ok(())
        })
        .unwrap();
        assert_eq!(all, model);
        s.validate(region, n).unwrap();
        assert_eq!(
            s.prefix(region).unwrap(),
            &prefix[..s.prefix(region).unwrap().len()]
        );
    }

    /// Random inserts and removes against a sorted Vec, for every layout; searches for present
    /// and absent probes, including probes outside a head prefix.
    #[test]
    fn ops_match_a_sorted_vec() {
        for s in lists() {
            for style in 0..3u8 {
                let mut rng = fastrand::Rng::with_seed(style as u64 * 31 + s.id() as u64);
                let prefix: &[u8] = if style == 1 && s == StrList::Head {
                    b"shared/pre"
                } else {
                    b""
                };
                let mut region = vec![0xa5u8; 4000];
                let mut img = Vec::new();
                s.build(&[], prefix, &mut img).unwrap();
                region[..img.len()].copy_from_slice(&img);
                let mut model: Vec<Vec<u8>> = Vec::new();
                for step in 0..1500 {
                    let n = model.len();
                    if rng.u8(0..3) > 0 || n == 0 {
                        let mut k = gen_key(&mut rng, style);
                        if !k.starts_with(s.prefix(&region).unwrap()) {
                            k = [s.prefix(&region).unwrap(), &k].concat();
                        }
                        let pos = model.binary_search(&k);
                        assert_eq!(s.search(&region, n, &k).unwrap(), pos, "{s:?} step {step}");
                        if let Err(i) = pos {
                            if s.used(&region, n).unwrap() + s.cost(k.len()) <= region.len() {
                                s.insert(&mut region, n, i, &k).unwrap();
                                model.insert(i, k);
                            }
                        }
                    } else {
                        let i = rng.usize(0..n);
                        let before = s.used(&region, n).unwrap();
                        s.remove(&mut region, n, i).unwrap();
                        model.remove(i);
                        assert!(s.used(&region, n - 1).unwrap() < before);
                    }
                    if step % 50 == 0 {
                        check_all(s, &region, &model, prefix);
                        // Probes anywhere, also outside the prefix.
                        for _ in 0..20 {
                            let st = rng.u8(0..3);
                            let p = gen_key(&mut rng, st);
                            assert_eq!(
                                s.search(&region, model.len(), &p).unwrap(),
                                model.binary_search(&p),
                                "{s:?} probe {p:?}"
                            );
                        }
                    }
                }
                check_all(s, &region, &model, prefix);
                // A rebuilt image holds the same keys and is no larger than cost says.
                let keys: Vec<&[u8]> = model.iter().map(|k| k.as_slice()).collect();
                s.build(&keys, prefix, &mut img).unwrap();
                let cost: usize = model.iter().map(|k| s.cost(k.len())).sum::<usize>() + 2;
                assert!(img.len() <= cost);
                check_all(s, &img, &model, prefix);
            }
        }
    }

    #[test]
    fn damaged_regions_are_faults() {
        let mut rng = fastrand::Rng::with_seed(5);
        for s in lists() {
            let keys: Vec<Vec<u8>> = {
                let mut v: Vec<Vec<u8>> = (0..40).map(|_| gen_key(&mut rng, 1)).collect();
                v.sort();
                v.dedup();
                v
            };
            let refs: Vec<&[u8]> = keys.iter().map(|k| k.as_slice()).collect();
            let mut img = Vec::new();
            s.build(&refs, b"", &mut img).unwrap();
            for _ in 0..300 {
                let mut bad = img.clone();
                let at = rng.usize(0..bad.len());
                bad[at] = rng.u8(..);
                let n = keys.len();
                let mut buf = Vec::new();
                // Any answer or a fault; never a panic.
                let _ = s.used(&bad, n);
                let _ = s.search(&bad, n, &keys[rng.usize(0..n)]);
                let _ = s.key_into(&bad, n, rng.usize(0..n), &mut buf);
                let _ = s.for_each(&bad, n, |_| Ok(()));
                let _ = s.validate(&bad, n);
                let mut r2 = bad.clone();
                r2.resize(bad.len() + 200, 0);
                if s.used(&r2, n).is_ok() {
                    let _ = s.remove(&mut r2, n, rng.usize(0..n));
                }
            }
        }
    }

    /// PkB's blind search reads one full key per node search on TPC-H-like date|order|line keys
    /// with 2-byte partial keys (where the sequential partial-key scan read 2.3, worst 5), and
    /// agrees with binary search.
    #[test]
    fn pkb_reads_few_full_keys() {
        let mut rng = fastrand::Rng::with_seed(3);
        let (mut searches, mut derefs, mut worst) = (0usize, 0usize, 0usize);
        for _ in 0..200 {
            let mut keys: Vec<Vec<u8>> = (0..rng.usize(5..60))
                .map(|_| {
                    format!(
                        "1995-0{}-{:02}|{:07}|{}",
                        rng.u8(1..4),
                        rng.u8(1..29),
                        rng.u32(..1_000_000),
                        rng.u8(1..8)
                    )
                    .into_bytes()
                })
                .collect();
            keys.sort();
            keys.dedup();
            let refs: Vec<&[u8]> = keys.iter().map(|k| k.as_slice()).collect();
            let mut img = Vec::new();
            StrList::Pkb(2).build(&refs, b"", &mut img).unwrap();
            for _ in 0..50 {
                let probe = if rng.bool() {
                    keys[rng.usize(0..keys.len())].clone()
                } else {
                    let mut p = keys[rng.usize(0..keys.len())].clone();
                    let at = rng.usize(0..p.len());
                    p[at] = rng.u8(b'0'..=b'9');
                    p
                };
                let mut c = 0;
                let got = StrList::search_pkb_blind(&img, keys.len(), &probe, 2, &mut c).unwrap();
                assert_eq!(got, keys.binary_search(&probe));
                searches += 1;
                derefs += c;
                worst = worst.max(c);
            }
        }
        let avg = derefs as f64 / searches as f64;
        eprintln!("pkb: {avg:.3} full keys read per node search, worst {worst}");
        assert!(
            avg <= 3.0,
            "{avg} full keys read per node search (worst {worst})"
        );
    }

    #[test]
    fn lcp_counts_common_bytes() {
        assert_eq!(lcp(b"", b"abc"), 0);
        assert_eq!(lcp(b"abcdefghij", b"abcdefghiX"), 9);
        assert_eq!(lcp(b"abcdefgh", b"abcdefgh"), 8);
        assert_eq!(lcp(b"abcdefghijklmnopq", b"abcdefghijklmnopz"), 16);
        assert_eq!(lcp(&[0x80, 0], &[0x80, 1]), 1);
    }
}
