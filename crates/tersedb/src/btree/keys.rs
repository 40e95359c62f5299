//! KeyLists: how a node stores its keys inside the KeyList region.
//!
//! A KeyList is an enum, not a trait object, so the hot paths (binary search on fixed-width keys
//! directly in the page bytes) stay monomorphic. Every variant answers the same questions: bytes
//! used, bytes an insert costs, search, key at, insert at, remove at. A compressed KeyList for u32
//! keys (block index + codec blocks) is one more variant; it alone will implement `vacuumize` and
//! may report that an insert or remove needs more room, which the node answers by moving the
//! KeyList/RecordList boundary and, as a last resort, splitting.
//!
//! ```text
//! id 1  U32        [key 0 u32 LE][key 1] ...           binary search on u32 values in place
//! id 2  U64        [key 0 u64 LE][key 1] ...
//! id 3  Fixed(w)   [key 0: w bytes][key 1] ...          memcmp order
//! id 4  Var        slots::var layout (u16 end offsets, then the key bytes)
//! ids 5..8 Str     compressed byte strings: head prefix, prefix delta, partial keys (strkeys)
//! ids 16.. reserved for compressed KeyLists
//! ```

use super::packed::Packed;
use super::slots::{fixed, le_u32, le_u64, var, Fault, SResult};
use super::strkeys::StrList;
use super::Key;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyList {
    U32,
    U64,
    Fixed(usize),
    Var,
    /// u32 keys in codec blocks (leaves only; see `packed`).
    Packed(Packed),
    /// Compressed byte strings (see `strkeys`).
    Str(StrList),
}

impl KeyList {
    /// The id stored in a node's header (byte 9).
    pub fn id(&self) -> u8 {
        match self {
            KeyList::U32 => 1,
            KeyList::U64 => 2,
            KeyList::Fixed(_) => 3,
            KeyList::Var => 4,
            KeyList::Packed(p) => p.id(),
            KeyList::Str(s) => s.id(),
        }
    }

    /// The compressed string list, if this is one.
    #[inline]
    pub fn str_list(&self) -> Option<StrList> {
        match *self {
            KeyList::Str(s) => Some(s),
            _ => None,
        }
    }

    /// Whether `key`/`raw` can borrow every key from the region (else use `key_into`).
    #[inline]
    pub fn contiguous(&self) -> bool {
        match self {
            KeyList::Str(s) => s.contiguous(),
            _ => true,
        }
    }

    /// Key `i` as bytes into `buf` (any byte-string list).
    pub fn key_into(&self, region: &[u8], n: usize, i: usize, buf: &mut Vec<u8>) -> SResult<()> {
        match self {
            KeyList::Str(s) => s.key_into(region, n, i, buf),
            _ => {
                let raw = self.raw(region, n, i)?;
                buf.clear();
                buf.extend_from_slice(raw);
                Ok(())
            }
        }
    }

    /// The compressed list, if this is one.
    #[inline]
    pub fn packed(&self) -> Option<Packed> {
        match *self {
            KeyList::Packed(p) => Some(p),
            _ => None,
        }
    }

    fn width(&self) -> Option<usize> {
        match *self {
            KeyList::U32 => Some(4),
            KeyList::U64 => Some(8),
            KeyList::Fixed(w) => Some(w),
            KeyList::Var | KeyList::Packed(_) | KeyList::Str(_) => None,
        }
    }

    /// Bytes used by `n` keys in `region`.
    #[inline]
    pub fn used(&self, region: &[u8], n: usize) -> SResult<usize> {
        if let KeyList::Packed(_) = self {
            return Packed::used(region);
        }
        if let KeyList::Str(s) = self {
            return s.used(region, n);
        }
        match self.width() {
            Some(w) => fixed::used(region, w, n),
            None => var::used(region, n),
        }
    }

    /// Bytes one more key of `key_len` bytes takes.
    #[inline]
    pub fn cost(&self, key_len: usize) -> usize {
        if let KeyList::Packed(_) = self {
            // A nominal share: the real cost depends on the block (see `packed`).
            return 2;
        }
        if let KeyList::Str(s) = self {
            return s.cost(key_len);
        }
        match self.width() {
            Some(w) => w,
            None => 2 + key_len,
        }
    }

    /// The stored bytes of key `i`.
    #[inline]
    pub fn raw<'r>(&self, region: &'r [u8], n: usize, i: usize) -> SResult<&'r [u8]> {
        if i >= n {
            return Err(Fault("key index out of range"));
        }
        match (self, self.width()) {
            (KeyList::Packed(_), _) => Err(Fault("compressed keys have no stored bytes")),
            (KeyList::Str(s), _) => s.raw(region, n, i),
            (_, Some(w)) => fixed::get(region, w, i),
            (_, None) => var::get(region, n, i),
        }
    }

    /// Key `i`, decoded.
    #[inline]
    pub fn key<'r>(&self, region: &'r [u8], n: usize, i: usize) -> SResult<Key<'r>> {
        if let KeyList::Packed(p) = self {
            if i >= n {
                return Err(Fault("key index out of range"));
            }
            return Ok(Key::U32(p.key(region, i)?));
        }
        let raw = self.raw(region, n, i)?;
        Ok(match self {
            KeyList::U32 => Key::U32(le_u32(raw)),
            KeyList::U64 => Key::U64(le_u64(raw)),
            _ => Key::Bytes(raw),
        })
    }

    /// Binary search: `Ok(i)` when key `i` equals `probe`, `Err(i)` for the insert position.
    /// The probe has the list's key type (checked by the caller).
    pub fn search(
        &self,
        region: &[u8],
        n: usize,
        probe: &Key<'_>,
    ) -> SResult<Result<usize, usize>> {
        self.search_est(region, n, probe, None)
    }

    /// `search` with an estimate of an integer key range (see `search_int`).
    pub fn search_est(
        &self,
        region: &[u8],
        n: usize,
        probe: &Key<'_>,
        est: Option<(u64, u64)>,
    ) -> SResult<Result<usize, usize>> {
        match (*self, *probe) {
            (KeyList::U32, Key::U32(p)) => {
                let keys = region
                    .get(..n * 4)
                    .ok_or(Fault("key list longer than its region"))?;
                Ok(search_int(
                    n,
                    |i| le_u32(&keys[i * 4..]) as u64,
                    p as u64,
                    est,
                ))
            }
            (KeyList::U64, Key::U64(p)) => {
                let keys = region
                    .get(..n * 8)
                    .ok_or(Fault("key list longer than its region"))?;
                Ok(search_int(n, |i| le_u64(&keys[i * 8..]), p, est))
            }
            (KeyList::Fixed(w), Key::Bytes(p)) => {
                let keys = region
                    .get(..n * w)
                    .ok_or(Fault("key list longer than its region"))?;
                Ok(search_fixed(n, |i| keys[i * w..i * w + w].cmp(p)))
            }
            (KeyList::Packed(pk), Key::U32(p)) => pk.search(region, p),
            (KeyList::Str(s), Key::Bytes(p)) => s.search(region, n, p),
            (KeyList::Var, Key::Bytes(p)) => {
                var::used(region, n)?;
                let (mut lo, mut hi) = (0usize, n);
                while lo < hi {
                    let mid = lo + (hi - lo) / 2;
                    match var::get(region, n, mid)?.cmp(p) {
                        std::cmp::Ordering::Less => lo = mid + 1,
                        std::cmp::Ordering::Greater => hi = mid,
                        std::cmp::Ordering::Equal => return Ok(Ok(mid)),
                    }
                }
                Ok(Err(lo))
            }
            _ => Err(Fault("probe key of the wrong type")),
        }
    }

    /// Inserts stored key bytes at `i`; the caller made room (`used + cost <= region.len()`).
    /// Not for compressed lists (the node layer calls `Packed::insert`).
    pub fn insert(&self, region: &mut [u8], n: usize, i: usize, raw: &[u8]) -> SResult<()> {
        match (self, self.width()) {
            (KeyList::Packed(_), _) => Err(Fault("plain insert into a compressed key list")),
            (KeyList::Str(s), _) => s.insert(region, n, i, raw),
            (_, Some(w)) => fixed::insert(region, w, n, i, raw),
            (_, None) => var::insert(region, n, i, raw),
        }
    }

    /// Not for compressed lists (the node layer calls `Packed::remove`).
    pub fn remove(&self, region: &mut [u8], n: usize, i: usize) -> SResult<()> {
        match (self, self.width()) {
            (KeyList::Packed(_), _) => Err(Fault("plain remove from a compressed key list")),
            (KeyList::Str(s), _) => s.remove(region, n, i),
            (_, Some(w)) => fixed::remove(region, w, n, i),
            (_, None) => var::remove(region, n, i),
        }
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
pub(crate) fn search_int(
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
fn search_fixed(n: usize, cmp: impl Fn(usize) -> std::cmp::Ordering) -> Result<usize, usize> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn search_int_matches_binary_search() {
        let mut rng = fastrand::Rng::with_seed(3);
        for n in 0..300usize {
            for dist in 0..4 {
                let mut v: Vec<u64> = (0..n)
                    .map(|i| match dist {
                        0 => i as u64 * 3,
                        1 => rng.u64(0..1000),
                        2 => (i as u64).pow(3),
                        _ => {
                            if i < n / 2 {
                                i as u64
                            } else {
                                u64::MAX - n as u64 + i as u64
                            }
                        }
                    })
                    .collect();
                v.sort();
                v.dedup();
                for _ in 0..50 {
                    let p = if rng.bool() && !v.is_empty() {
                        v[rng.usize(0..v.len())]
                    } else {
                        rng.u64(0..(v.last().copied().unwrap_or(10).saturating_add(5)))
                    };
                    // The estimate never changes the answer: none, right, or arbitrary.
                    let top = v.last().copied().unwrap_or(0);
                    let est = match rng.u8(0..3) {
                        0 => None,
                        1 => v.first().map(|&f| (f, top)),
                        _ => Some((rng.u64(0..top.saturating_add(2)), rng.u64(..))),
                    };
                    assert_eq!(
                        search_int(v.len(), |i| v[i], p, est),
                        v.binary_search(&p),
                        "{v:?} {p}"
                    );
                }
                for p in [0, u64::MAX] {
                    assert_eq!(search_int(v.len(), |i| v[i], p, None), v.binary_search(&p));
                }
            }
        }
    }

    #[test]
    fn search_fixed_finds_lower_bound() {
        for n in 0..40usize {
            let v: Vec<u32> = (0..n as u32).map(|x| x * 2 + 1).collect();
            for p in 0..(2 * n as u32 + 3) {
                let got = search_fixed(n, |i| v[i].cmp(&p));
                assert_eq!(got, v.binary_search(&p), "n={n} p={p}");
            }
        }
    }
}
