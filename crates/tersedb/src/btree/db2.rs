//! DB2-style prefix groups (seed 002 §2.4): a node's keys are cut into groups of consecutive
//! slots; each group stores its prefix once and its keys without it.
//!
//! ```text
//! [g u16][end of group 0 u16] ... [end of group g-1 u16]     group j = slots end[j-1]..end[j]
//! [slots::var layout of the g prefixes]
//! [slots::var layout of the n suffixes]                       key i = prefix(group of i) + suffix i
//! ```
//!
//! Inserts go into the group around the slot (a key between two keys of a group has the group's
//! prefix); a key at a group boundary that has neither neighbour's prefix starts a group of its
//! own with an empty prefix. Prefixes are chosen when a node is built (splits, merges) and when
//! it is nearly full (`optimize`, called before a split): greedily (the longest common prefix of
//! two consecutive keys, extended over the keys that have it), then improved by Prefix Merge
//! (merge neighbouring groups under their common prefix while that saves bytes) and, separately,
//! Prefix Expand (split a group where both parts get longer prefixes and that saves bytes); the
//! smaller result is kept. The prefix area (group table and prefixes) stays within `cap` bytes
//! (a quarter of the page).

use super::slots::{ascending, lcp, var_image, KeyShare};
use super::slots::{le_u16, le_u16_at, put, var, Fault, SResult};
use std::cmp::Ordering;

/// Bytes one more key of `len` bytes takes at most (a group of its own).
pub fn cost(len: usize) -> usize {
    6 + len
}

/// The parsed sections of a region.
struct Parts<'r> {
    g: usize,
    ends: &'r [u8],
    pre: &'r [u8],
    suf_base: usize,
    suf: &'r [u8],
}

impl<'r> Parts<'r> {
    fn read(region: &'r [u8], n: usize) -> SResult<Parts<'r>> {
        let g = le_u16(
            region
                .get(..2)
                .ok_or(Fault("group count outside its region"))?,
        ) as usize;
        let ends = region
            .get(2..2 + 2 * g)
            .ok_or(Fault("group table outside its region"))?;
        let pre = region
            .get(2 + 2 * g..)
            .ok_or(Fault("group table outside its region"))?;
        let pu = var::used(pre, g)?;
        let suf_base = 2 + 2 * g + pu;
        let suf = region
            .get(suf_base..)
            .ok_or(Fault("prefixes outside their region"))?;
        var::used(suf, n)?;
        let p = Parts {
            g,
            ends,
            pre,
            suf_base,
            suf,
        };
        if (g == 0) != (n == 0) || (g > 0 && p.end(g - 1) != n) {
            return Err(Fault("prefix groups do not cover the keys"));
        }
        Ok(p)
    }
    /// End of group `j < g` (`read` checked the table's length).
    #[inline]
    fn end(&self, j: usize) -> usize {
        le_u16_at(self.ends, 2 * j) as usize
    }
    #[inline]
    fn start(&self, j: usize) -> usize {
        if j == 0 {
            0
        } else {
            self.end(j - 1)
        }
    }
    #[inline]
    fn prefix(&self, j: usize) -> SResult<&'r [u8]> {
        var::get(self.pre, self.g, j)
    }
    #[inline]
    fn suffix(&self, n: usize, i: usize) -> SResult<&'r [u8]> {
        var::get(self.suf, n, i)
    }
    /// The group holding slot `i < n`.
    fn group_of(&self, i: usize) -> SResult<usize> {
        let (mut lo, mut hi) = (0, self.g);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.end(mid) <= i {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        if lo >= self.g || self.start(lo) > i {
            return Err(Fault("prefix group table not ascending"));
        }
        Ok(lo)
    }
    /// All groups as (prefix, end) pairs.
    fn groups(&self) -> SResult<Vec<(Vec<u8>, usize)>> {
        (0..self.g)
            .map(|j| Ok((self.prefix(j)?.to_vec(), self.end(j))))
            .collect()
    }
    fn suffixes(&self, n: usize) -> SResult<Vec<Vec<u8>>> {
        (0..n).map(|i| Ok(self.suffix(n, i)?.to_vec())).collect()
    }
}

/// Orders `a ++ b` against `probe`.
#[inline]
fn cmp_concat(a: &[u8], b: &[u8], probe: &[u8]) -> Ordering {
    let k = a.len().min(probe.len());
    let (head, rest) = probe.split_at_checked(k).unwrap_or((probe, &[]));
    match a.get(..k).unwrap_or(a).cmp(head) {
        Ordering::Equal if k < a.len() => Ordering::Greater,
        Ordering::Equal => b.cmp(rest),
        o => o,
    }
}

pub fn used(region: &[u8], n: usize) -> SResult<usize> {
    let p = Parts::read(region, n)?;
    Ok(p.suf_base + var::used(p.suf, n)?)
}

/// Number of prefix groups.
pub fn groups(region: &[u8], n: usize) -> SResult<usize> {
    Ok(Parts::read(region, n)?.g)
}

pub fn key_into(region: &[u8], n: usize, i: usize, buf: &mut Vec<u8>) -> SResult<()> {
    let p = Parts::read(region, n)?;
    if i >= n {
        return Err(Fault("key index out of range"));
    }
    let j = p.group_of(i)?;
    buf.clear();
    buf.extend_from_slice(p.prefix(j)?);
    buf.extend_from_slice(p.suffix(n, i)?);
    Ok(())
}

pub fn for_each(region: &[u8], n: usize, mut f: impl FnMut(&[u8]) -> SResult<()>) -> SResult<()> {
    let p = Parts::read(region, n)?;
    let mut buf = Vec::new();
    let mut i = 0;
    for j in 0..p.g {
        let pre = p.prefix(j)?;
        if p.end(j) < i || p.end(j) > n {
            return Err(Fault("prefix group table not ascending"));
        }
        while i < p.end(j) {
            buf.clear();
            buf.extend_from_slice(pre);
            buf.extend_from_slice(p.suffix(n, i)?);
            f(&buf)?;
            i += 1;
        }
    }
    Ok(())
}

/// Two-level search: the last group whose first key is `<= probe`, then the suffixes in it.
pub fn search(region: &[u8], n: usize, probe: &[u8]) -> SResult<Result<usize, usize>> {
    let p = Parts::read(region, n)?;
    let (mut lo, mut hi) = (0usize, p.g);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        let first = p.suffix(n, p.start(mid))?;
        if cmp_concat(p.prefix(mid)?, first, probe) != Ordering::Greater {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    if lo == 0 {
        return Ok(Err(0));
    }
    let j = lo - 1;
    let pre = p.prefix(j)?;
    let (a, b) = (p.start(j), p.end(j));
    let Some(rest) = probe.strip_prefix(pre) else {
        // The group's first key is <= probe and has the prefix, the probe does not: the probe
        // is above every key with the prefix.
        return Ok(Err(b));
    };
    if a > b {
        return Err(Fault("prefix group table not ascending"));
    }
    let (mut lo, mut hi) = (a, b);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        match p.suffix(n, mid)?.cmp(rest) {
            Ordering::Less => lo = mid + 1,
            Ordering::Greater => hi = mid,
            Ordering::Equal => return Ok(Ok(mid)),
        }
    }
    Ok(Err(lo))
}

/// Writes a region image: groups (prefix, end) and the suffixes.
fn encode(groups: &[(Vec<u8>, usize)], suffixes: &[Vec<u8>], out: &mut Vec<u8>) -> SResult<()> {
    out.clear();
    out.extend_from_slice(&(groups.len() as u16).to_le_bytes());
    for (_, e) in groups {
        out.extend_from_slice(&(*e as u16).to_le_bytes());
    }
    var_image(groups.iter().map(|g| g.0.as_slice()), out)?;
    var_image(suffixes.iter().map(|s| s.as_slice()), out)
}

/// Replaces the region's contents by `img` (which the caller knows fits).
fn install(region: &mut [u8], img: &[u8]) -> SResult<()> {
    region
        .get_mut(..img.len())
        .ok_or(Fault("rebuilt key list larger than its region"))?
        .copy_from_slice(img);
    Ok(())
}

/// Inserts `key` at slot `i`; the caller made room (`used + cost(key.len()) <= region.len()`).
pub fn insert(region: &mut [u8], n: usize, i: usize, key: &[u8]) -> SResult<()> {
    if i > n {
        return Err(Fault("insert position out of range"));
    }
    let p = Parts::read(region, n)?;
    // The group that takes the key: the one around slot i, else a neighbour whose prefix the key
    // has, else a new group with an empty prefix.
    let mut target = None;
    if i > 0 {
        let j = p.group_of(i - 1)?;
        if i < p.end(j) || key.starts_with(p.prefix(j)?) {
            target = Some(j);
        }
    }
    if target.is_none() && i < n {
        let j = p.group_of(i)?;
        if key.starts_with(p.prefix(j)?) {
            target = Some(j);
        }
    }
    let Some(j) = target else {
        let mut groups = p.groups()?;
        let mut suffixes = p.suffixes(n)?;
        let at = if i == 0 { 0 } else { p.group_of(i - 1)? + 1 };
        for g in groups.iter_mut().skip(at) {
            g.1 += 1;
        }
        groups.insert(at, (Vec::new(), i + 1));
        suffixes.insert(i, key.to_vec());
        let mut img = Vec::new();
        encode(&groups, &suffixes, &mut img)?;
        return install(region, &img);
    };
    let suffix = key
        .strip_prefix(p.prefix(j)?)
        .ok_or(Fault("key outside its prefix group"))?;
    let (g, base) = (p.g, p.suf_base);
    var::insert(suffixes_of(region, base)?, n, i, suffix)?;
    shift_ends(region, j, g, true)
}

/// Removes slot `i`; an emptied group is dropped. Never needs more room.
pub fn remove(region: &mut [u8], n: usize, i: usize) -> SResult<()> {
    if i >= n {
        return Err(Fault("remove position out of range"));
    }
    let p = Parts::read(region, n)?;
    let j = p.group_of(i)?;
    if p.end(j) - p.start(j) == 1 {
        let mut groups = p.groups()?;
        let mut suffixes = p.suffixes(n)?;
        groups.remove(j);
        for g in groups.iter_mut().skip(j) {
            g.1 =
                g.1.checked_sub(1)
                    .ok_or(Fault("prefix group table not ascending"))?;
        }
        suffixes.remove(i);
        let mut img = Vec::new();
        encode(&groups, &suffixes, &mut img)?;
        return install(region, &img);
    }
    let (g, base) = (p.g, p.suf_base);
    var::remove(suffixes_of(region, base)?, n, i)?;
    shift_ends(region, j, g, false)
}

/// The suffix section of a region whose `Parts` put it at `base`.
fn suffixes_of(region: &mut [u8], base: usize) -> SResult<&mut [u8]> {
    region
        .get_mut(base..)
        .ok_or(Fault("suffixes outside their region"))
}

/// Adds one to (`up`) or takes one from the ends of groups `j..g`: a key was inserted into or
/// removed from group `j`.
fn shift_ends(region: &mut [u8], j: usize, g: usize, up: bool) -> SResult<()> {
    for k in j..g {
        let at = 2 + 2 * k;
        let e = le_u16(
            region
                .get(at..)
                .ok_or(Fault("group table outside its region"))?,
        );
        let e = if up {
            e.checked_add(1)
                .ok_or(Fault("prefix group table overflows"))?
        } else {
            e.checked_sub(1)
                .ok_or(Fault("prefix group table not ascending"))?
        };
        put(region, at, &e.to_le_bytes());
    }
    Ok(())
}

/// A grouping of sorted keys: (start, end, prefix length) per group.
type Plan = Vec<(usize, usize, usize)>;

struct Sizer<'k> {
    keys: &'k [&'k [u8]],
    /// Prefix sums of key lengths.
    sum: Vec<usize>,
}

impl Sizer<'_> {
    /// Key `i` (empty past the end: the planners only ask for `i < keys.len()`).
    #[inline]
    fn key(&self, i: usize) -> &[u8] {
        self.keys.get(i).copied().unwrap_or_default()
    }
    /// Bytes of keys `a..b`.
    #[inline]
    fn bytes(&self, a: usize, b: usize) -> usize {
        let at = |i: usize| self.sum.get(i).copied().unwrap_or(0);
        at(b).saturating_sub(at(a))
    }
    /// Bytes of a group: table entry, prefix offset and bytes, and its keys' suffixes.
    fn size(&self, a: usize, b: usize, plen: usize) -> usize {
        let c = b - a;
        4 + plen + 2 * c + self.bytes(a, b) - c * plen
    }
    /// The longest prefix of slots a..b (the first and last key's).
    fn plen(&self, a: usize, b: usize) -> usize {
        lcp(self.key(a), self.key(b - 1))
    }
    fn total(&self, plan: &Plan) -> usize {
        plan.iter().map(|&(a, b, l)| self.size(a, b, l)).sum()
    }
    fn area(plan: &Plan) -> usize {
        plan.iter().map(|&(_, _, l)| 4 + l).sum()
    }
}

/// The greedy grouping: the longest common prefix of two consecutive keys, extended over the
/// keys that have it; a group that does not pay for its prefix gets none, and runs of such
/// groups are one.
fn greedy(s: &Sizer<'_>) -> Plan {
    let n = s.keys.len();
    let mut plan: Plan = Vec::new();
    let mut i = 0;
    while i < n {
        let (mut j, mut pl) = (i + 1, 0);
        if i + 1 < n {
            pl = lcp(s.key(i), s.key(i + 1));
            j = i + 2;
            while j < n && lcp(s.key(j), s.key(i)) >= pl {
                j += 1;
            }
        }
        if s.size(i, j, pl) >= s.size(i, j, 0) {
            pl = 0;
        }
        match plan.last_mut() {
            Some(last) if pl == 0 && last.2 == 0 => last.1 = j,
            _ => plan.push((i, j, pl)),
        }
        i = j;
    }
    plan
}

/// Merges neighbouring groups under their common prefix while the best merge saves bytes (or,
/// with `force`, while the prefix area exceeds `cap`).
fn merge(s: &Sizer<'_>, mut plan: Plan, cap: usize) -> Plan {
    loop {
        let over = Sizer::area(&plan) > cap;
        // (gain, index of the left group, its start, the right group's end)
        let mut best: Option<(isize, usize, usize, usize)> = None;
        for (k, w) in plan.windows(2).enumerate() {
            let &[(a, m, l1), (_, b, l2)] = w else {
                continue;
            };
            let merged = s.size(a, b, s.plen(a, b));
            let gain = (s.size(a, m, l1) + s.size(m, b, l2)) as isize - merged as isize;
            if best.is_none_or(|(g, ..)| gain > g) {
                best = Some((gain, k, a, b));
            }
        }
        match best {
            Some((gain, k, a, b)) if gain > 0 || over => {
                if let Some(g) = plan.get_mut(k) {
                    *g = (a, b, s.plen(a, b));
                }
                plan.remove(k + 1);
            }
            _ => return plan,
        }
    }
}

/// Splits groups where both parts get longer prefixes and that saves bytes.
fn expand(s: &Sizer<'_>, plan: Plan) -> Plan {
    let mut out = Vec::with_capacity(plan.len());
    let mut work: Vec<(usize, usize, usize)> = plan.into_iter().rev().collect();
    while let Some((a, b, l)) = work.pop() {
        let mut best: Option<(usize, usize, usize, usize)> = None;
        let here = s.size(a, b, l);
        for m in a + 1..b {
            let (l1, l2) = (s.plen(a, m), s.plen(m, b));
            let cost = s.size(a, m, l1) + s.size(m, b, l2);
            if cost < here && best.is_none_or(|(c, ..)| cost < c) {
                best = Some((cost, m, l1, l2));
            }
        }
        match best {
            Some((_, m, l1, l2)) => {
                work.push((m, b, l2));
                work.push((a, m, l1));
            }
            None => out.push((a, b, l)),
        }
    }
    out
}

/// The groups `old` gave the keys (runs of equal group numbers), each prefix cut to one its
/// keys share.
fn kept(s: &Sizer<'_>, old: &[KeyShare]) -> Plan {
    let mut plan: Plan = Vec::new();
    let mut a = 0;
    let group = |i: usize| old.get(i).map(|k| k.group);
    for b in 1..=s.keys.len() {
        if b == s.keys.len() || group(b) != group(a) {
            let plen = old.get(a).map_or(0, |k| k.plen as usize);
            plan.push((a, b, plen.min(s.plen(a, b))));
            a = b;
        }
    }
    plan
}

/// The image of a node holding `keys` (ascending), prefix area within `cap` bytes. `old`
/// (empty, or one per key) are the groups the keys had in the nodes they come from: when
/// regrouping does not make the image smaller, those groups are kept (cut where the keys
/// end). So the image of a range of a node's keys is never larger than the bytes the range
/// took in the node plus one prefix, and a split or merge that measured the node's bytes
/// cannot produce a node that overflows its page (the prefix-area cap makes regrouping worse
/// than the node's current groups when many long prefixes compete for the area).
pub fn build(keys: &[&[u8]], cap: usize, old: &[KeyShare], out: &mut Vec<u8>) -> SResult<()> {
    ascending(keys)?;
    let mut sum = Vec::with_capacity(keys.len() + 1);
    let mut total = 0;
    sum.push(0);
    for k in keys {
        total += k.len();
        sum.push(total);
    }
    let s = Sizer { keys, sum };
    let g = greedy(&s);
    let merged = merge(&s, g.clone(), cap);
    let expanded = merge(&s, expand(&s, g), cap);
    let mut plan = if s.total(&expanded) < s.total(&merged) {
        expanded
    } else {
        merged
    };
    if old.len() == keys.len() && !keys.is_empty() {
        let k = kept(&s, old);
        if s.total(&k) < s.total(&plan) {
            plan = k;
        }
    }
    let bad = || Fault("prefix plan outside the keys");
    let mut groups: Vec<(Vec<u8>, usize)> = Vec::with_capacity(plan.len());
    let mut suffixes = Vec::with_capacity(keys.len());
    for &(a, b, l) in &plan {
        let run = keys.get(a..b).ok_or_else(bad)?;
        let prefix = run.first().and_then(|k| k.get(..l)).ok_or_else(bad)?;
        groups.push((prefix.to_vec(), b));
        for k in run {
            suffixes.push(k.get(l..).ok_or_else(bad)?.to_vec());
        }
    }
    encode(&groups, &suffixes, out)
}

/// Each key's share of the region's bytes (suffix and its offset; the group's table entry,
/// prefix and offset with its first key, the group count with key 0), its group and prefix
/// length, appended to `out`; group numbers continue from `next_group`.
pub fn shares(region: &[u8], n: usize, next_group: u32, out: &mut Vec<KeyShare>) -> SResult<()> {
    let p = Parts::read(region, n)?;
    let mut i = 0;
    for j in 0..p.g {
        let plen = p.prefix(j)?.len();
        if p.end(j) < i || p.end(j) > n {
            return Err(Fault("prefix group table not ascending"));
        }
        let first = i;
        while i < p.end(j) {
            let mut bytes = 2 + p.suffix(n, i)?.len();
            if i == first {
                bytes += 4 + plen;
            }
            if i == 0 {
                bytes += 2;
            }
            out.push(KeyShare {
                bytes: bytes as u32,
                group: next_group.wrapping_add(j as u32),
                plen: plen as u16,
            });
            i += 1;
        }
    }
    Ok(())
}

/// A regrouped image of the region when it is smaller than the current one.
pub fn optimize(region: &[u8], n: usize, cap: usize) -> SResult<Option<Vec<u8>>> {
    let now = used(region, n)?;
    let mut keys = Vec::with_capacity(n);
    for_each(region, n, |k| {
        keys.push(k.to_vec());
        Ok(())
    })?;
    let refs: Vec<&[u8]> = keys.iter().map(|k| k.as_slice()).collect();
    // Regrouping starts from the current groups, so the image is never larger than the region.
    let mut old = Vec::with_capacity(n);
    shares(region, n, 0, &mut old)?;
    let mut img = Vec::new();
    build(&refs, cap, &old, &mut img)?;
    Ok((img.len() < now).then_some(img))
}

/// Checks the group table (ascending, no empty group).
pub fn validate(region: &[u8], n: usize) -> SResult<()> {
    let p = Parts::read(region, n)?;
    for j in 0..p.g {
        if p.end(j) <= p.start(j) {
            return Err(Fault("empty or descending prefix group"));
        }
        p.prefix(j)?;
    }
    Ok(())
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

    fn sorted(mut v: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
        v.sort();
        v.dedup();
        v
    }

    #[test]
    fn groups_pay_for_themselves() {
        let keys = sorted(
            (0..200u32)
                .map(|i| format!("customer/{:03}/order/{:05}", i / 10, i * 7).into_bytes())
                .collect(),
        );
        let refs: Vec<&[u8]> = keys.iter().map(|k| k.as_slice()).collect();
        let mut img = Vec::new();
        build(&refs, 4096, &[], &mut img).unwrap();
        let plain: usize = keys.iter().map(|k| 2 + k.len()).sum();
        assert!(img.len() < plain / 2, "{} vs {plain}", img.len());
        assert!(groups(&img, keys.len()).unwrap() > 1);
        // A small cap keeps the prefix area small.
        build(&refs, 64, &[], &mut img).unwrap();
        let p = Parts::read(&img, keys.len()).unwrap();
        let area: usize = (0..p.g).map(|j| 4 + p.prefix(j).unwrap().len()).sum();
        assert!(area <= 64, "{area}");
        let mut got = Vec::new();
        for_each(&img, keys.len(), |k| {
            got.push(k.to_vec());
            Ok(())
        })
        .unwrap();
        assert_eq!(got, keys);
    }

    #[test]
    fn ops_match_a_sorted_vec() {
        for seed in 0..6u64 {
            let mut rng = fastrand::Rng::with_seed(seed);
            let gen = |rng: &mut fastrand::Rng| -> Vec<u8> {
                match rng.u8(0..3) {
                    0 => format!("tenant/{}/k{}", rng.u8(0..4), rng.u16(0..300)).into_bytes(),
                    1 => (0..rng.usize(0..6)).map(|_| rng.u8(..)).collect(),
                    _ => [&[0x80u8, 0xff][..], &[rng.u8(..)]].concat(),
                }
            };
            let mut region = vec![0x5au8; 3000];
            let init_keys = sorted((0..rng.usize(0..60)).map(|_| gen(&mut rng)).collect());
            let refs: Vec<&[u8]> = init_keys.iter().map(|k| k.as_slice()).collect();
            let mut img = Vec::new();
            build(&refs, 750, &[], &mut img).unwrap();
            region[..img.len()].copy_from_slice(&img);
            let mut model = init_keys.clone();
            for step in 0..1500 {
                let n = model.len();
                if rng.u8(0..3) > 0 || n == 0 {
                    let k = gen(&mut rng);
                    let pos = model.binary_search(&k);
                    assert_eq!(
                        search(&region, n, &k).unwrap(),
                        pos,
                        "seed {seed} step {step}"
                    );
                    if let Err(i) = pos {
                        if used(&region, n).unwrap() + cost(k.len()) <= region.len() {
                            insert(&mut region, n, i, &k).unwrap();
                            model.insert(i, k);
                        }
                    }
                } else {
                    let i = rng.usize(0..n);
                    let before = used(&region, n).unwrap();
                    remove(&mut region, n, i).unwrap();
                    model.remove(i);
                    assert!(used(&region, n - 1).unwrap() < before);
                }
                if step % 100 == 0 {
                    if let Some(img) = optimize(&region, model.len(), 750).unwrap() {
                        region[..img.len()].copy_from_slice(&img);
                    }
                }
                if step % 25 == 0 {
                    let n = model.len();
                    validate(&region, n).unwrap();
                    let mut buf = Vec::new();
                    for (i, m) in model.iter().enumerate() {
                        key_into(&region, n, i, &mut buf).unwrap();
                        assert_eq!(&buf, m);
                    }
                    for _ in 0..20 {
                        let p = gen(&mut rng);
                        assert_eq!(search(&region, n, &p).unwrap(), model.binary_search(&p));
                    }
                }
            }
        }
    }

    #[test]
    fn damaged_regions_are_faults() {
        let keys = sorted(
            (0..80u32)
                .map(|i| format!("a/{:02}/{i}", i / 9).into_bytes())
                .collect(),
        );
        let refs: Vec<&[u8]> = keys.iter().map(|k| k.as_slice()).collect();
        let mut img = Vec::new();
        build(&refs, 400, &[], &mut img).unwrap();
        let mut rng = fastrand::Rng::with_seed(9);
        let n = keys.len();
        for _ in 0..3000 {
            let mut bad = img.clone();
            let at = rng.usize(0..bad.len());
            bad[at] = rng.u8(..);
            bad.resize(img.len() + 300, 0);
            let mut buf = Vec::new();
            let _ = search(&bad, n, &keys[rng.usize(0..n)]);
            let _ = key_into(&bad, n, rng.usize(0..n), &mut buf);
            let _ = for_each(&bad, n, |_| Ok(()));
            let _ = validate(&bad, n);
            let _ = optimize(&bad, n, 400);
            if used(&bad, n).is_ok() {
                let mut b2 = bad.clone();
                let _ = remove(&mut b2, n, rng.usize(0..n));
                let mut b3 = bad.clone();
                let _ = insert(&mut b3, n, rng.usize(0..=n), b"a/05/zz");
            }
        }
    }
}
