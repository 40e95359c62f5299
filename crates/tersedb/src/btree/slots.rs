//! The two plain array layouts that uncompressed KeyLists and RecordLists are made of. Both work
//! on a *region* (a byte slice of the node) and keep their bytes at its start.
//!
//! ```text
//! fixed, width w:  [item 0: w bytes][item 1: w bytes] ... [item n-1]            used = n * w
//! var:             [end 0 u16][end 1 u16] ... [end n-1 u16][bytes of item 0, 1, ... n-1]
//!                  item i = bytes[end[i-1] .. end[i]] (end[-1] = 0)            used = 2n + end[n-1]
//! ```
//!
//! Every read is bounds-checked against the region: a corrupt count or offset gives
//! [`Error::Corrupted`](crate::Error::Corrupted) (the caller names the page), never a panic.

/// A structural fault found in a region; the node layer turns it into `Error::Corrupted`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fault(pub &'static str);

pub type SResult<T> = std::result::Result<T, Fault>;

/// How a list's vacuum repacks it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Repack {
    /// As small as it goes (removes, record updates, regrouping).
    Tight,
    /// For an insert that found no room: compressed blocks keep a sixteenth of their keys free
    /// when that still frees room (see [`super::packed::Packed::vacuumize`]).
    Spare,
    /// For an insert past the list's last key that found no room: as `Spare`, except that a
    /// compressed list whose blocks before the last are all full repacks its last block only
    /// (an ascending load packs each block when the next one starts, so a full repack would
    /// re-encode the whole leaf for the same bytes).
    Append,
}

// The little-endian integers at the start of `b`. Callers bound their offsets before reading,
// so a short slice means a parser bug: it reads as 0 (never out of bounds, never a panic).
#[inline]
pub fn le_u16(b: &[u8]) -> u16 {
    b.first_chunk().map_or(0, |a| u16::from_le_bytes(*a))
}
#[inline]
pub fn le_u32(b: &[u8]) -> u32 {
    b.first_chunk().map_or(0, |a| u32::from_le_bytes(*a))
}
#[inline]
pub fn le_u64(b: &[u8]) -> u64 {
    b.first_chunk().map_or(0, |a| u64::from_le_bytes(*a))
}

/// The little-endian integers at byte `at` of `b` (0 past the end, as above).
#[inline]
pub fn le_u16_at(b: &[u8], at: usize) -> u16 {
    b.get(at..).map_or(0, le_u16)
}
#[inline]
pub fn le_u32_at(b: &[u8], at: usize) -> u32 {
    b.get(at..).map_or(0, le_u32)
}
#[inline]
pub fn le_u64_at(b: &[u8], at: usize) -> u64 {
    b.get(at..).map_or(0, le_u64)
}

/// Writes `bytes` at byte `at` of `b` when they fit (headers of whole pages always do).
#[inline]
pub fn put(b: &mut [u8], at: usize, bytes: &[u8]) {
    if let Some(d) = b.get_mut(at..at + bytes.len()) {
        d.copy_from_slice(bytes);
    }
}

/// A little-endian word of 1..=8 bytes (`b.len()` of them), zero-extended.
#[inline]
pub fn le_word(b: &[u8]) -> u64 {
    let mut a = [0u8; 8];
    let n = b.len().min(8);
    if let (Some(d), Some(s)) = (a.get_mut(..n), b.get(..n)) {
        d.copy_from_slice(s);
    }
    u64::from_le_bytes(a)
}

/// The little-endian words of `w` bytes each (1..=8) in `bytes`, zero-extended, into `out` (as
/// many as both hold): one plain load per word. Reading each through [`le_word`], whose length
/// is known only at run time, made a `memcpy` call per record: 15% of the instructions of a
/// SUM over raw records (callgrind, `examples/record_sums`).
#[inline]
pub fn le_words(bytes: &[u8], w: usize, out: &mut [u64]) {
    #[inline(always)]
    fn words<const W: usize>(bytes: &[u8], out: &mut [u64]) {
        for (dst, src) in out.iter_mut().zip(bytes.chunks_exact(W)) {
            let mut a = [0u8; 8];
            if let Some(head) = a.get_mut(..W) {
                head.copy_from_slice(src);
            }
            *dst = u64::from_le_bytes(a);
        }
    }
    match w {
        1 => words::<1>(bytes, out),
        2 => words::<2>(bytes, out),
        3 => words::<3>(bytes, out),
        4 => words::<4>(bytes, out),
        5 => words::<5>(bytes, out),
        6 => words::<6>(bytes, out),
        7 => words::<7>(bytes, out),
        8 => words::<8>(bytes, out),
        _ => {
            for (dst, src) in out.iter_mut().zip(bytes.chunks_exact(w.max(1))) {
                *dst = le_word(src);
            }
        }
    }
}

/// Fixed-width items.
pub mod fixed {
    use super::{Fault, SResult};

    pub fn used(region: &[u8], w: usize, n: usize) -> SResult<usize> {
        let u = n.checked_mul(w).ok_or(Fault("item count overflows"))?;
        if u > region.len() {
            return Err(Fault("fixed-width list longer than its region"));
        }
        Ok(u)
    }

    #[inline]
    pub fn get(region: &[u8], w: usize, i: usize) -> SResult<&[u8]> {
        region
            .get(i * w..i * w + w)
            .ok_or(Fault("fixed-width item outside its region"))
    }

    /// Inserts at `i`; the caller checked `(n + 1) * w <= region.len()`.
    pub fn insert(region: &mut [u8], w: usize, n: usize, i: usize, item: &[u8]) -> SResult<()> {
        if i > n || (n + 1) * w > region.len() || item.len() != w {
            return Err(Fault("fixed-width insert out of range"));
        }
        region.copy_within(i * w..n * w, i * w + w);
        region
            .get_mut(i * w..i * w + w)
            .ok_or(Fault("fixed-width insert out of range"))?
            .copy_from_slice(item);
        Ok(())
    }

    pub fn remove(region: &mut [u8], w: usize, n: usize, i: usize) -> SResult<()> {
        if i >= n || n * w > region.len() {
            return Err(Fault("fixed-width remove out of range"));
        }
        region.copy_within(i * w + w..n * w, i * w);
        Ok(())
    }

    /// Overwrites item `i` in place.
    pub fn set(region: &mut [u8], w: usize, i: usize, item: &[u8]) -> SResult<()> {
        let dst = region
            .get_mut(i * w..i * w + w)
            .ok_or(Fault("fixed-width set out of range"))?;
        if item.len() != w {
            return Err(Fault("fixed-width set of wrong width"));
        }
        dst.copy_from_slice(item);
        Ok(())
    }
}

/// Variable-length items behind a table of u16 end offsets.
pub mod var {
    use super::{le_u16, Fault, SResult};

    #[inline]
    fn end(region: &[u8], i: usize) -> SResult<usize> {
        region
            .get(2 * i..2 * i + 2)
            .map(|b| le_u16(b) as usize)
            .ok_or(Fault("offset table outside its region"))
    }

    fn set_end(region: &mut [u8], i: usize, v: usize) -> SResult<()> {
        region
            .get_mut(2 * i..2 * i + 2)
            .ok_or(Fault("offset table outside its region"))?
            .copy_from_slice(&(v as u16).to_le_bytes());
        Ok(())
    }

    /// Total bytes of the items (the last end offset).
    fn total(region: &[u8], n: usize) -> SResult<usize> {
        if n == 0 {
            Ok(0)
        } else {
            end(region, n - 1)
        }
    }

    pub fn used(region: &[u8], n: usize) -> SResult<usize> {
        let t = 2usize
            .checked_mul(n)
            .ok_or(Fault("item count overflows"))?
            .checked_add(total(region, n)?)
            .ok_or(Fault("item count overflows"))?;
        if t > region.len() {
            return Err(Fault("variable-length list longer than its region"));
        }
        Ok(t)
    }

    #[inline]
    pub fn get(region: &[u8], n: usize, i: usize) -> SResult<&[u8]> {
        if i >= n {
            return Err(Fault("item index out of range"));
        }
        let start = if i == 0 { 0 } else { end(region, i - 1)? };
        let stop = end(region, i)?;
        if start > stop {
            return Err(Fault("offsets not ascending"));
        }
        region
            .get(2 * n + start..2 * n + stop)
            .ok_or(Fault("item outside its region"))
    }

    /// Where item `i` lies in the region (for in-place rewrites of the same size).
    pub fn range(region: &[u8], n: usize, i: usize) -> SResult<std::ops::Range<usize>> {
        if i >= n {
            return Err(Fault("item index out of range"));
        }
        let start = if i == 0 { 0 } else { end(region, i - 1)? };
        let stop = end(region, i)?;
        if start > stop || 2 * n + stop > region.len() {
            return Err(Fault("item outside its region"));
        }
        Ok(2 * n + start..2 * n + stop)
    }

    /// Inserts `item` at `i`; the caller checked `used + 2 + item.len() <= region.len()`.
    pub fn insert(region: &mut [u8], n: usize, i: usize, item: &[u8]) -> SResult<()> {
        let used = used(region, n)?;
        let len = item.len();
        if i > n || used + 2 + len > region.len() || 2 * (n + 1) + total(region, n)? + len > 0xffff
        {
            return Err(Fault("variable-length insert out of range"));
        }
        let b = 2 * n;
        let tot = total(region, n)?;
        let split = if i == 0 { 0 } else { end(region, i - 1)? };
        if split > tot {
            return Err(Fault("offsets not ascending"));
        }
        region.copy_within(b + split..b + tot, b + 2 + split + len);
        region.copy_within(b..b + split, b + 2);
        region
            .get_mut(b + 2 + split..b + 2 + split + len)
            .ok_or(Fault("variable-length insert out of range"))?
            .copy_from_slice(item);
        region.copy_within(2 * i..2 * n, 2 * i + 2);
        set_end(region, i, split + len)?;
        for j in i + 1..=n {
            let e = end(region, j)?;
            set_end(region, j, e + len)?;
        }
        Ok(())
    }

    pub fn remove(region: &mut [u8], n: usize, i: usize) -> SResult<()> {
        if i >= n {
            return Err(Fault("item index out of range"));
        }
        used(region, n)?;
        let tot = total(region, n)?;
        let start = if i == 0 { 0 } else { end(region, i - 1)? };
        let stop = end(region, i)?;
        if start > stop || stop > tot {
            return Err(Fault("offsets not ascending"));
        }
        let len = stop - start;
        for j in i + 1..n {
            let e = end(region, j)?;
            if e < len {
                return Err(Fault("offsets not ascending"));
            }
            set_end(region, j, e - len)?;
        }
        region.copy_within(2 * i + 2..2 * n, 2 * i);
        let b = 2 * n;
        region.copy_within(b..b + start, b - 2);
        region.copy_within(b + stop..b + tot, b - 2 + start);
        Ok(())
    }
}

/// Search over `n` ascending integers: one interpolation guess, then galloping from the guess
/// to bracket the position, then binary search inside the bracket. Dense or uniform keys are
/// found touching two or three cache lines instead of the ~12 of a binary search over a 16 KiB
/// page; skewed keys cost at most about twice a binary search.
///
/// `est` is an estimate of the key range (the separators around this node in its parent,
/// inclusive): it saves reading the last key (one cache line). Any value is correct — it only
/// steers the first guess.
#[inline]
pub fn search_int(
    n: usize,
    key: impl Fn(usize) -> u64,
    p: u64,
    est: Option<(u64, u64)>,
) -> Result<usize, usize> {
    use std::cmp::Ordering::*;
    if n < 16 {
        return search_fixed(n, |i| key(i).cmp(&p));
    }
    let (a, b) = match est {
        Some((a, b)) if a < b => (a, b),
        _ => (key(0), key(n - 1)),
    };
    let guess = if p <= a {
        0
    } else if p >= b {
        n - 1
    } else if b - a <= u32::MAX as u64 && n <= u32::MAX as usize {
        // a < p < b: the product fits 64 bits and the guess is below n - 1. One integer
        // divide; the float guess below took ~25 instructions more (unsigned conversions).
        ((p - a) * (n as u64 - 1) / (b - a)) as usize
    } else {
        // A float guess is exact enough (it is only a starting point) and avoids a 128-bit
        // divide.
        (((p - a) as f64 / (b - a) as f64 * (n - 1) as f64) as usize).min(n - 1)
    };
    let (lo, hi) = match key(guess).cmp(&p) {
        Equal => return Ok(guess),
        Less => {
            // Every key up to `guess` is below p: gallop right.
            let mut lo = guess + 1;
            let mut step = 1;
            loop {
                let probe = guess + step;
                if probe >= n {
                    break (lo, n);
                }
                match key(probe).cmp(&p) {
                    Equal => return Ok(probe),
                    Less => {
                        lo = probe + 1;
                        step *= 2;
                    }
                    Greater => break (lo, probe),
                }
            }
        }
        Greater => {
            // The answer is at or before `guess`: gallop left.
            let mut hi = guess;
            let mut step = 1;
            loop {
                if step > guess {
                    break (0, hi);
                }
                let probe = guess - step;
                match key(probe).cmp(&p) {
                    Equal => return Ok(probe),
                    Greater => {
                        hi = probe;
                        step *= 2;
                    }
                    Less => break (probe + 1, hi),
                }
            }
        }
    };
    // The lower bound lies in [lo, hi]: key(hi) > p, or hi = n.
    match search_fixed(hi - lo, |i| key(lo + i).cmp(&p)) {
        Ok(i) => Ok(lo + i),
        Err(i) => Err(lo + i),
    }
}

/// Branch-light binary search over `n` fixed-width items; `cmp(i)` orders item `i` against the
/// probe.
#[inline]
pub fn search_fixed(n: usize, cmp: impl Fn(usize) -> std::cmp::Ordering) -> Result<usize, usize> {
    let mut lo = 0usize;
    let mut len = n;
    while len > 1 {
        let half = len / 2;
        if cmp(lo + half - 1) == std::cmp::Ordering::Less {
            lo += half;
        }
        len -= half;
    }
    // `lo` is now the only candidate for the lower bound in [lo, lo + len).
    if len == 1 {
        match cmp(lo) {
            std::cmp::Ordering::Less => Err(lo + 1),
            std::cmp::Ordering::Equal => Ok(lo),
            std::cmp::Ordering::Greater => Err(lo),
        }
    } else {
        Err(lo)
    }
}

// Byte-string list helpers shared by the string schemes (`strkeys`, `db2`).

/// What one key takes in its list, recorded when a node's entries are copied out for a split
/// or merge: a split is measured in these bytes (the costs of `StrList::cost` are upper bounds
/// that can exceed the real bytes many times over), and a DB2 rebuild can keep the groups.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KeyShare {
    /// Bytes of the key's item and offset, plus the list's header (key 0) and a DB2 group's
    /// table entry and prefix (its first key); 0 when unknown.
    pub bytes: u32,
    /// DB2 group number: consecutive keys with the same number were one group.
    pub group: u32,
    /// DB2 prefix length of the key's group.
    pub plen: u16,
}

/// Checks that keys to build a list from ascend strictly: the layouts rely on it (a key
/// between two others has their common prefix), and keys read from a damaged page behind a
/// valid checksum need not.
pub fn ascending(keys: &[&[u8]]) -> SResult<()> {
    if keys.iter().zip(keys.iter().skip(1)).any(|(a, b)| a >= b) {
        return Err(Fault("keys out of order"));
    }
    Ok(())
}

/// Length of the common prefix of two byte strings.
#[inline]
pub fn lcp(a: &[u8], b: &[u8]) -> usize {
    let n = a.len().min(b.len());
    let mut i = 0;
    // Eight bytes at a time, then byte by byte.
    while i + 8 <= n {
        let (x, y) = (le_u64_at(a, i), le_u64_at(b, i));
        if x != y {
            return i + ((x ^ y).trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while i < n && a.get(i) == b.get(i) {
        i += 1;
    }
    i
}

/// The fault of an image that cannot be written because it exceeds the largest page (its
/// offsets are u16): a node of those keys would not fit any page, so callers measuring a
/// rebuild treat it as "does not fit".
pub const TOO_LARGE: Fault = Fault("key list larger than a page");

/// Writes a slots::var image of `items` into `out`.
pub(crate) fn var_image<'a>(
    items: impl Iterator<Item = &'a [u8]> + Clone,
    out: &mut Vec<u8>,
) -> SResult<()> {
    let base = out.len();
    let n = items.clone().count();
    let mut end = 0usize;
    for it in items.clone() {
        end += it.len();
        if 2 * n + end > 0xffff {
            return Err(TOO_LARGE);
        }
        out.extend_from_slice(&(end as u16).to_le_bytes());
    }
    for it in items {
        out.extend_from_slice(it);
    }
    debug_assert_eq!(out.len() - base, 2 * n + end);
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

    #[test]
    fn var_list_matches_a_vec_model() {
        let mut rng = fastrand::Rng::with_seed(7);
        let mut region = vec![0u8; 600];
        let mut model: Vec<Vec<u8>> = Vec::new();
        for _ in 0..3000 {
            let n = model.len();
            if rng.bool() || n == 0 {
                let len = rng.usize(0..20);
                let item: Vec<u8> = (0..len).map(|_| rng.u8(..)).collect();
                if var::used(&region, n).unwrap() + 2 + len <= region.len() {
                    let i = rng.usize(0..=n);
                    var::insert(&mut region, n, i, &item).unwrap();
                    model.insert(i, item);
                }
            } else {
                let i = rng.usize(0..n);
                var::remove(&mut region, n, i).unwrap();
                model.remove(i);
            }
            for (i, m) in model.iter().enumerate() {
                assert_eq!(var::get(&region, model.len(), i).unwrap(), &m[..]);
            }
        }
    }

    #[test]
    fn corrupt_offsets_are_faults_not_panics() {
        let mut region = vec![0xffu8; 64];
        assert!(var::get(&region, 3, 1).is_err());
        assert!(var::used(&region, 3).is_err());
        assert!(var::remove(&mut region, 3, 1).is_err());
        assert!(fixed::used(&region, 8, 9).is_err());
        assert!(fixed::get(&region, 8, 8).is_err());
    }
}
