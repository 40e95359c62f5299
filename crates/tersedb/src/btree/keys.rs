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

use super::packed::{Ins, Lookup, Packed};
use super::slots::{
    fixed, le_u32, le_u32_at, le_u64, le_u64_at, search_fixed, search_int, var, Fault, Repack,
    SResult,
};
use super::strkeys::{KeyShare, StrList};
use super::zone::{BlockKeys, FoldSpec, KeyBuffer, KeyFold, ScanBlock, PLAIN_BLOCK};
use super::{Key, KeyBuf};

/// Outcome of a change to a list that may need more room: done, or the bytes the whole list
/// would need (nothing changed). Compressed lists may need room even to remove a key (a BP128
/// block that loses a key can grow).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fit {
    Done,
    NoRoom(usize),
}

/// A list cut in two images by [`KeyList::split_images`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SplitImages {
    /// Keys in the left image (the first `left_keys` entries of the node).
    pub left_keys: usize,
    pub left: Vec<u8>,
    pub right: Vec<u8>,
}

/// What a cursor keeps of the leaf it is on, for lists whose keys cannot be read in place: the
/// decoded block of a compressed list (served while the cursor stays in it, Upscaledb paper,
/// section 3.4) or the current key of a prefix-compressed byte-string list (stepping forward
/// applies one item to it). Filled by [`KeyList::cache_key`].
/// Slots of a plain u32/u64 list that a cursor checks and caches at once (see
/// [`KeyList::cache_key`]).
const PLAIN_WINDOW: usize = 64;

#[derive(Clone, Debug, Default)]
pub struct KeyCache {
    valid: bool,
    /// Block index in the leaf.
    b: usize,
    /// Slot of the block's first key.
    base: usize,
    /// The codec's values; key = `kbase` + value.
    keys: Vec<u32>,
    kbase: u64,
    /// The current byte-string key and the (page, slot) it belongs to.
    skey: Vec<u8>,
    skey_at: Option<(u64, usize)>,
}

impl KeyCache {
    /// Forgets everything (the cursor moved to another leaf or was cleared).
    pub fn clear(&mut self) {
        self.valid = false;
        self.skey_at = None;
    }

    /// Integer key of slot `i` when the cached block holds it.
    #[inline]
    pub fn int(&self, i: usize) -> Option<u64> {
        if self.valid {
            self.keys
                .get(i.wrapping_sub(self.base))
                .map(|&v| self.kbase + v as u64)
        } else {
            None
        }
    }

    /// Whether slot `i` is in the cached block (no work to do for a step to it).
    #[inline]
    pub fn holds(&self, i: usize) -> bool {
        self.valid && i.wrapping_sub(self.base) < self.keys.len()
    }

    /// The cached block's index in the leaf and its first and last keys, when it holds one.
    #[inline]
    pub fn block_edges(&self) -> Option<(usize, u64, u64)> {
        if !self.valid {
            return None;
        }
        let first = *self.keys.first()?;
        let last = *self.keys.last()?;
        Some((self.b, self.kbase + first as u64, self.kbase + last as u64))
    }
}

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

/// A little-endian integer of 4 or 8 bytes (the plain integer lists' slots).
#[inline]
fn le_u64_of(b: &[u8]) -> u64 {
    let mut a = [0u8; 8];
    for (d, s) in a.iter_mut().zip(b) {
        *d = *s;
    }
    u64::from_le_bytes(a)
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

    /// Bytes of an integer key (4 or 8), `None` for byte strings.
    #[inline]
    pub fn int_width(&self) -> Option<usize> {
        match self {
            KeyList::U32 => Some(4),
            KeyList::U64 => Some(8),
            KeyList::Packed(p) => Some(if p.wide { 8 } else { 4 }),
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

    /// Bytes used by `n` keys in `region`. Always inlined: every node read asks it (measured
    /// with callgrind, out of line it cost a u32 BP128 random load 1%).
    #[inline(always)]
    pub fn used(&self, region: &[u8], n: usize) -> SResult<usize> {
        if let KeyList::Packed(p) = self {
            return p.used(region);
        }
        if let KeyList::Str(s) = self {
            return s.used(region, n);
        }
        match self.width() {
            Some(w) => fixed::used(region, w, n),
            None => var::used(region, n),
        }
    }

    /// Proves what reads of the list of `n` keys rely on beyond the block or key they look
    /// at: a compressed list's block index in key order, its offsets ascending and its counts
    /// adding up to `n` ([`Packed::prove`]); any other list's keys strictly ascending (the
    /// separators of every tree's branches: a descent takes the child its search finds; a
    /// byte-string leaf's keys, which a binary search compares only some of, so that a forged
    /// order could hide a key from a lookup). Run once per page buffer by `Layout::open`
    /// (`super::node`); the reads after it (misses, range folds and scans, cursors entering the
    /// leaf, descents) trust the order and check only the blocks they decode. A byte-string
    /// list is decoded whole for it (one pass, every key: a prefix-compressed list decodes each
    /// key from the one before).
    pub fn prove(&self, region: &[u8], n: usize) -> SResult<()> {
        fn ascending<const W: usize>(region: &[u8], n: usize, at: fn([u8; W]) -> u64) -> bool {
            let keys = region.get(..W * n).unwrap_or_default().as_chunks::<W>().0;
            // `|`-folded, no branch per key.
            !keys
                .iter()
                .zip(keys.iter().skip(1))
                .fold(false, |bad, (&a, &b)| bad | (at(a) >= at(b)))
        }
        let ok = match self {
            KeyList::Packed(p) => return p.prove(region, n),
            KeyList::U32 => ascending::<4>(region, n, |b| u32::from_le_bytes(b) as u64),
            KeyList::U64 => ascending::<8>(region, n, u64::from_le_bytes),
            // Byte keys order as `Key::Bytes` does: lexicographically.
            _ => {
                let (mut prev, mut first, mut ok) = (Vec::new(), true, true);
                self.for_each_key(region, n, |k| {
                    ok &= first || k > prev.as_slice();
                    first = false;
                    prev.clear();
                    prev.extend_from_slice(k);
                    Ok(())
                })?;
                ok
            }
        };
        if ok {
            Ok(())
        } else {
            Err(Fault("keys out of order"))
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
            return Ok(p.key_of(p.key(region, i)?));
        }
        let raw = self.raw(region, n, i)?;
        Ok(match self {
            KeyList::U32 => Key::U32(le_u32(raw)),
            KeyList::U64 => Key::U64(le_u64(raw)),
            _ => Key::Bytes(raw),
        })
    }

    /// Integer key `i` of a u32 or u64 list (plain or compressed), without building a [`Key`]:
    /// the separators a range descent reads. A fault for other lists.
    #[inline]
    pub fn int_key(&self, region: &[u8], n: usize, i: usize) -> SResult<u64> {
        match self {
            KeyList::Packed(p) if i < n => p.key(region, i),
            _ => self
                .int_at(region, n, i)
                .ok_or(Fault("no integer key at this index")),
        }
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
                    |i| le_u32_at(keys, i * 4) as u64,
                    p as u64,
                    est,
                ))
            }
            (KeyList::U64, Key::U64(p)) => {
                let keys = region
                    .get(..n * 8)
                    .ok_or(Fault("key list longer than its region"))?;
                Ok(search_int(n, |i| le_u64_at(keys, i * 8), p, est))
            }
            (KeyList::Fixed(w), Key::Bytes(p)) => {
                let keys = region
                    .get(..n * w)
                    .ok_or(Fault("key list longer than its region"))?;
                Ok(search_fixed(n, |i| {
                    keys.get(i * w..i * w + w).unwrap_or_default().cmp(p)
                }))
            }
            (KeyList::Packed(pk), p) => match pk.probe(&p) {
                Some(p) => pk.search(region, p),
                None => Err(Fault("probe key of the wrong type")),
            },
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

    /// Makes `region` an empty list.
    pub fn init(&self, region: &mut [u8]) {
        match self {
            KeyList::Packed(_) => Packed::init(region),
            KeyList::Str(s) => s.init(region),
            _ => {}
        }
    }

    /// Whether `cost` is what an insert really takes, so a node can be split before an insert on
    /// the way down. A compressed list's cost depends on the block the key lands in: its node is
    /// split only when an insert reports no room.
    pub fn cost_is_exact(&self) -> bool {
        !matches!(self, KeyList::Packed(_))
    }

    /// Whether the list holds `probe`, for lookups that need no slot (key-only databases):
    /// compressed lists then skip counting the keys of the blocks before the hit. A miss
    /// comes with the list's first and last keys as [`KeyList::int_edges`] gives them, from
    /// the same read of a compressed list's header.
    #[inline]
    pub fn lookup(
        &self,
        region: &[u8],
        n: usize,
        probe: &Key<'_>,
        est: Option<(u64, u64)>,
    ) -> SResult<Lookup> {
        match (self, probe) {
            (KeyList::Packed(p), k) => match p.probe(k) {
                Some(v) => p.lookup(region, v),
                None => Err(Fault("probe key of the wrong type")),
            },
            _ => Ok(if self.search_est(region, n, probe, est)?.is_ok() {
                Lookup::Hit
            } else {
                Lookup::Miss(match probe.as_u64() {
                    Some(p) => self.int_edges(region, n, p)?,
                    None => None,
                })
            }),
        }
    }

    /// Whether key `i < n` is read straight from the region with no decoding that could fail
    /// (fixed-width plain lists; `Layout::read` checked the region's length).
    #[inline]
    pub fn reads_in_place(&self) -> bool {
        self.width().is_some()
    }

    /// Key `i` of a plain u32 or u64 list, read in place; `None` for the other kinds (or `i`
    /// out of range).
    #[inline]
    pub fn int_at(&self, region: &[u8], n: usize, i: usize) -> Option<u64> {
        if i >= n {
            return None;
        }
        match self {
            KeyList::U32 => region.get(4 * i..4 * i + 4).map(|b| le_u32(b) as u64),
            KeyList::U64 => region.get(8 * i..8 * i + 8).map(le_u64),
            _ => None,
        }
    }

    /// The first and last key of an integer list of `n` keys in which a lookup of `miss`
    /// missed: read in place (plain lists) or from the first and last non-empty blocks'
    /// descriptors (compressed ones, after proving what the miss relied on:
    /// [`Packed::miss_edges`]). `None` when empty and for byte-string lists.
    pub fn int_edges(&self, region: &[u8], n: usize, miss: u64) -> SResult<Option<(u64, u64)>> {
        match self {
            KeyList::U32 | KeyList::U64 => {
                let last = n.checked_sub(1).and_then(|z| self.int_at(region, n, z));
                Ok(self.int_at(region, n, 0).zip(last))
            }
            KeyList::Packed(p) => p.miss_edges(region, miss),
            _ => Ok(None),
        }
    }

    /// Makes `c` hold key `i` of the list of `n` keys on page `page`, for the kinds that need
    /// it: a compressed list decodes the block of slot `i` (the next or previous block when the
    /// cursor just left the cached one, else found by walking the block index); a
    /// prefix-compressed byte-string list decodes the key (one item past the cached key when
    /// stepping forward). Nothing for the other kinds.
    pub fn cache_key(
        &self,
        region: &[u8],
        n: usize,
        i: usize,
        page: u64,
        c: &mut KeyCache,
    ) -> SResult<()> {
        match self {
            KeyList::Str(s) if !s.contiguous() => {
                if i >= n {
                    c.skey_at = None;
                    return Ok(());
                }
                let r = match c.skey_at {
                    Some((id, j)) if id == page && j + 1 == i => {
                        s.next_into(region, n, i, &mut c.skey)
                    }
                    _ => s.key_into(region, n, i, &mut c.skey),
                };
                c.skey_at = None;
                r?;
                c.skey_at = Some((page, i));
                Ok(())
            }
            KeyList::Packed(p) => {
                if i >= n || c.int(i).is_some() {
                    return Ok(());
                }
                let nb = p.blocks(region)?;
                let (mut b, mut base) = if c.valid && i >= c.base + c.keys.len() {
                    (c.b + 1, c.base + c.keys.len())
                } else if c.valid && i < c.base {
                    // Walk back over gaps to the previous non-empty block.
                    let (mut b, mut base) = (c.b, c.base);
                    loop {
                        if b == 0 {
                            return Err(Fault("cursor slot before the first block"));
                        }
                        b -= 1;
                        let k = p.block_slots(region, b)?.1;
                        if k > 0 {
                            base -= k;
                            break (b, base);
                        }
                    }
                } else {
                    // Entering the leaf (or the cache was dropped): the cursor goes on to
                    // blocks the search did not look at, in the order `prove` proved.
                    (0, 0)
                };
                c.keys.resize(super::packed::MAX_BLOCK_KEYS, 0);
                while b < nb {
                    let blk = p.block(region, b)?;
                    let k = p.decode_block_checked(region, &blk, &mut c.keys)?;
                    if i < base + k {
                        c.keys.truncate(k);
                        c.kbase = blk.base;
                        c.b = b;
                        c.base = base;
                        c.valid = true;
                        return Ok(());
                    }
                    base += k;
                    b += 1;
                }
                c.valid = false;
                Err(Fault("cursor slot beyond the blocks"))
            }
            KeyList::U32 | KeyList::U64 => {
                // A window of plain keys around `i` (aligned to `PLAIN_WINDOW`), checked
                // strictly ascending once, so that steps inside it are as cheap as inside a
                // decoded codec block and the cursor checks the window's edges as a block's.
                // u64 windows spreading wider than 32 bits are read in place step by step.
                if i >= n || c.holds(i) {
                    return Ok(());
                }
                let Some((keys, w)) = self.plain_ints(region, n)? else {
                    return Ok(());
                };
                let at = |j: usize| {
                    if w == 4 {
                        le_u32_at(keys, 4 * j) as u64
                    } else {
                        le_u64_at(keys, 8 * j)
                    }
                };
                let base = i / PLAIN_WINDOW * PLAIN_WINDOW;
                let end = (base + PLAIN_WINDOW).min(n);
                let first = at(base);
                if at(end - 1).wrapping_sub(first) > u64::from(u32::MAX) {
                    c.valid = false;
                    return Ok(());
                }
                c.keys.clear();
                let mut prev = None;
                for j in base..end {
                    let k = at(j);
                    match (prev, u32::try_from(k.wrapping_sub(first))) {
                        (Some(p), Ok(v)) if v > p => c.keys.push(v),
                        (None, Ok(v)) => c.keys.push(v),
                        _ => {
                            c.valid = false;
                            return Err(Fault("keys out of order in a leaf"));
                        }
                    }
                    prev = c.keys.last().copied();
                }
                c.kbase = first;
                c.b = base / PLAIN_WINDOW;
                c.base = base;
                c.valid = true;
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// Key `i` from the cache filled by [`KeyList::cache_key`] on page `page`, if it holds it.
    #[inline]
    pub fn cached_key<'c>(&self, c: &'c KeyCache, page: u64, i: usize) -> Option<Key<'c>> {
        match self {
            KeyList::Packed(p) => c.int(i).map(|k| p.key_of(k)),
            KeyList::Str(_) => match c.skey_at {
                Some((id, j)) if id == page && j == i => Some(Key::Bytes(&c.skey)),
                _ => None,
            },
            _ => None,
        }
    }

    /// The stored integer keys of a plain u32 or u64 list of `n` keys and their width.
    fn plain_ints<'r>(&self, region: &'r [u8], n: usize) -> SResult<Option<(&'r [u8], usize)>> {
        let w = match self {
            KeyList::U32 => 4,
            KeyList::U64 => 8,
            _ => return Ok(None),
        };
        let keys = region
            .get(..n * w)
            .ok_or(Fault("key list longer than its region"))?;
        Ok(Some((keys, w)))
    }

    /// The list's blocks that may hold keys in `[lo, hi]` as zone map entries, in key order,
    /// replacing the contents of `out` (integer keys only): a plain list in chunks of
    /// [`PLAIN_BLOCK`] slots found by binary search, a compressed list its codec blocks found
    /// through its block index. With the full range a compressed list's block counts are
    /// checked against `n`.
    pub fn scan_blocks(
        &self,
        region: &[u8],
        n: usize,
        lo: u64,
        hi: u64,
        out: &mut Vec<ScanBlock>,
    ) -> SResult<()> {
        if let KeyList::Packed(p) = self {
            return p.scan_blocks(region, n, lo, hi, out);
        }
        out.clear();
        let Some((keys, w)) = self.plain_ints(region, n)? else {
            return Err(Fault("block scan of a leaf without integer keys"));
        };
        let at = |i: usize| {
            if w == 4 {
                le_u32_at(keys, 4 * i) as u64
            } else {
                le_u64_at(keys, 8 * i)
            }
        };
        let full = lo == 0 && hi == u64::MAX;
        let part = |pred: &dyn Fn(u64) -> bool| partition(n, |i| pred(at(i)));
        let (first, end) = if full {
            (0, n)
        } else {
            (part(&|k| k < lo), part(&|k| k <= hi))
        };
        // Chunks stay aligned to PLAIN_BLOCK.
        let mut start = first / PLAIN_BLOCK * PLAIN_BLOCK;
        while start < end {
            let count = PLAIN_BLOCK.min(n - start);
            out.push(ScanBlock {
                first: at(start),
                last: at(start + count - 1),
                count,
                start,
                index: start / PLAIN_BLOCK,
                desc: Default::default(),
                at: (0, 0),
                base: 0,
                codec: tersedb_codecs::CodecId::VByte,
            });
            start += count;
        }
        Ok(())
    }

    /// Decodes the keys of block `b` (listed by [`KeyList::scan_blocks`] for this region).
    pub fn decode_block<'b>(
        &self,
        region: &[u8],
        b: &ScanBlock,
        buf: &'b mut KeyBuffer,
    ) -> SResult<BlockKeys<'b>> {
        if let KeyList::Packed(p) = self {
            return p.decode_scan_block(region, b, buf);
        }
        let w = match self {
            KeyList::U32 => 4,
            KeyList::U64 => 8,
            _ => return Err(Fault("block scan of a leaf without integer keys")),
        };
        let bytes = region
            .get(w * b.start..w * (b.start + b.count))
            .ok_or(Fault("key list longer than its region"))?;
        // The chunk's keys must ascend (its zone map entry is its first and last slot), so a
        // page damaged behind a forged checksum gives a fault, not unordered rows.
        if w == 4 {
            for (o, c) in buf.u32s.iter_mut().zip(bytes.chunks_exact(4)) {
                *o = le_u32(c);
            }
            let keys = buf
                .u32s
                .get(..b.count)
                .ok_or(Fault("block longer than the key buffer"))?;
            if !ascending(keys) {
                return Err(Fault("keys out of order"));
            }
            Ok(BlockKeys::U32(keys))
        } else {
            for (o, c) in buf.u64s.iter_mut().zip(bytes.chunks_exact(8)) {
                *o = le_u64(c);
            }
            let keys = buf
                .u64s
                .get(..b.count)
                .ok_or(Fault("block longer than the key buffer"))?;
            if !ascending(keys) {
                return Err(Fault("keys out of order"));
            }
            Ok(BlockKeys::U64(keys))
        }
    }

    /// Folds the integer keys in `[fs.lo, fs.hi]` of a list of `n` keys into `out`: a plain
    /// list by two binary searches and one vectorised pass over the slot array, a compressed
    /// one through its block index (see [`Packed::fold_range`]); byte-string lists add
    /// nothing.
    pub fn fold_range(
        &self,
        region: &[u8],
        n: usize,
        fs: FoldSpec,
        out: &mut KeyFold,
    ) -> SResult<()> {
        if let KeyList::Packed(p) = self {
            return p.fold_range(region, n, fs, out);
        }
        let Some((keys, w)) = self.plain_ints(region, n)? else {
            return Ok(());
        };
        let at = |i: usize| {
            if w == 4 {
                le_u32_at(keys, 4 * i) as u64
            } else {
                le_u64_at(keys, 8 * i)
            }
        };
        // A leaf whose ends lie in the range (every inner leaf of a long range) needs no
        // search.
        let a = if n == 0 || at(0) >= fs.lo {
            0
        } else {
            partition(n, |i| at(i) < fs.lo)
        };
        let b = if n == 0 || at(n - 1) <= fs.hi {
            n
        } else {
            partition(n, |i| at(i) <= fs.hi)
        };
        if a >= b {
            return Ok(());
        }
        let bytes = keys
            .get(w * a..w * b)
            .ok_or(Fault("key list longer than its region"))?;
        let sum: u128 = if !fs.sum {
            0
        } else if w == 4 {
            // A leaf holds far fewer than 2^32 keys: the sum fits a u64.
            tersedb_codecs::sum::sum_le_u32(bytes) as u128
        } else {
            bytes.chunks_exact(8).map(|c| le_u64(c) as u128).sum()
        };
        out.add((b - a) as u64, sum, at(a), at(b - 1));
        // In 256-slot blocks: the partly covered ones are searched; whole ones are summed, or
        // answered from the slot array's ends.
        let (c0, c1) = (a / PLAIN_BLOCK, (b - 1) / PLAIN_BLOCK);
        let whole = |c: usize| c * PLAIN_BLOCK >= a && ((c + 1) * PLAIN_BLOCK).min(n) <= b;
        let chunks = (c1 - c0 + 1) as u64;
        let partial = if c0 == c1 {
            u64::from(!whole(c0))
        } else {
            u64::from(!whole(c0)) + u64::from(!whole(c1))
        };
        if fs.sum {
            out.blocks_decoded += chunks;
        } else {
            out.blocks_decoded += partial;
            out.blocks_skipped += chunks - partial;
        }
        Ok(())
    }

    /// A split of the list that copies its pieces as they are, where the kind has one: for a
    /// compressed list, the block boundary nearest the middle of the node's bytes (`rec_cost(i)`
    /// is what entry `i`'s record takes) with keys on both sides, or before the first block when
    /// `below_first` (the new key goes below every key: descending loads). Re-encoding blocks
    /// could make them larger, so they are copied. Returns the number of keys going left and the
    /// two images; `None` when the kind has no such split (plain and byte-string lists, or a
    /// compressed list with one non-empty block), and the caller rebuilds from the entries.
    pub fn split_images(
        &self,
        region: &[u8],
        n: usize,
        below_first: bool,
        rec_cost: impl Fn(usize) -> SResult<usize>,
    ) -> SResult<Option<SplitImages>> {
        let KeyList::Packed(p) = self else {
            return Ok(None);
        };
        let nb = p.blocks(region)?;
        let dl = p.desc_bytes(region)?;
        // Bytes and key count of each block, records included.
        let mut blocks = Vec::with_capacity(nb.min(region.len()));
        let mut slot = 0;
        for b in 0..nb {
            let blk = p.block(region, b)?;
            let c = blk.desc.count as usize;
            let mut bytes = dl + blk.at.len();
            for i in slot..slot + c {
                bytes += rec_cost(i)?;
            }
            blocks.push((bytes, c));
            slot += c;
        }
        if slot != n {
            return Err(Fault("block key counts disagree with the node's"));
        }
        let total: usize = blocks.iter().map(|b| b.0).sum();
        let mut best: Option<(usize, usize)> = None;
        if below_first {
            best = Some((0, 0));
        } else {
            let (mut acc, mut keys_left) = (0usize, 0usize);
            for (s, &(bytes, c)) in blocks.iter().enumerate() {
                if keys_left > 0 && keys_left < n {
                    let dist = (2 * acc).abs_diff(total);
                    if best.is_none_or(|(_, d)| dist < d) {
                        best = Some((s, dist));
                    }
                }
                acc += bytes;
                keys_left += c;
            }
        }
        let Some((s, _)) = best else {
            return Ok(None);
        };
        let left: usize = blocks.iter().take(s).map(|b| b.1).sum();
        let (mut limg, mut rimg) = (Vec::new(), Vec::new());
        p.extract(region, 0..s, &mut limg)?;
        p.extract(region, s..nb, &mut rimg)?;
        Ok(Some(SplitImages {
            left_keys: left,
            left: limg,
            right: rimg,
        }))
    }

    /// The number of keys the list itself records, where it records one (compressed lists:
    /// the blocks' counts), to check against the node's count.
    pub fn own_count(&self, region: &[u8]) -> SResult<Option<usize>> {
        match self {
            KeyList::Packed(p) => {
                let nb = p.blocks(region)?;
                Ok(Some(p.block_slots(region, nb)?.0))
            }
            _ => Ok(None),
        }
    }

    /// Adds the list's compressed blocks to `out`, one count per codec (`CodecId as usize`);
    /// nothing for lists that are not blocks of codecs.
    pub fn codec_blocks(
        &self,
        region: &[u8],
        out: &mut [u64; tersedb_codecs::CodecId::TABLE_LEN],
    ) -> SResult<()> {
        match self {
            KeyList::Packed(p) => p.codec_blocks(region, out),
            _ => Ok(()),
        }
    }

    /// A nominal share of the node's bytes a key takes beside its record, for dividing free
    /// space between the two lists.
    pub fn weight(&self) -> usize {
        match *self {
            KeyList::U32 => 4,
            KeyList::U64 => 8,
            KeyList::Fixed(w) => w,
            KeyList::Var | KeyList::Str(_) => 18,
            KeyList::Packed(_) => 1,
        }
    }

    /// The largest key, `None` for an empty list (O(1) for compressed lists too).
    pub fn last_key<'r>(&self, region: &'r [u8], n: usize) -> SResult<Option<Key<'r>>> {
        if let KeyList::Packed(p) = self {
            return Ok(p.last_key(region)?.map(|k| p.key_of(k)));
        }
        if n == 0 {
            return Ok(None);
        }
        self.key(region, n, n - 1).map(Some)
    }

    /// Appends the key with stored bytes `raw` to a list of `n` keys in place when the list
    /// can tell cheaply that it lies above every key and has room for it: `Some(true)` done,
    /// `Some(false)` not above the last key, `None` (nothing changed) when
    /// [`KeyList::insert_at`] must decide. The plain integer lists compare with their last
    /// slot and write the next one; the compressed list's last block's codec appends; the
    /// other lists always answer `None`.
    pub fn append_in_place(
        &self,
        region: &mut [u8],
        n: usize,
        raw: &[u8],
    ) -> SResult<Option<bool>> {
        let w = match self {
            KeyList::Packed(p) => return p.append_in_place(region, p.stored_key(raw)?),
            KeyList::U32 => 4,
            KeyList::U64 => 8,
            _ => return Ok(None),
        };
        let Some(last) = n.checked_sub(1) else {
            return Ok(None);
        };
        if raw.len() != w {
            return Err(Fault("appended key of the wrong width"));
        }
        let prev = fixed::get(region, w, last)?;
        if le_u64_of(raw) <= le_u64_of(prev) {
            return Ok(Some(false));
        }
        match region.get_mut(n * w..n * w + w) {
            Some(slot) => {
                slot.copy_from_slice(raw);
                Ok(Some(true))
            }
            None => Ok(None),
        }
    }

    /// Inserts the key with stored bytes `raw` at slot `i` of a list of `n` keys, or says how
    /// many bytes the list would need (nothing changed).
    pub fn insert_at(&self, region: &mut [u8], n: usize, i: usize, raw: &[u8]) -> SResult<Fit> {
        if let KeyList::Packed(p) = self {
            return match p.insert(region, n, p.stored_key(raw)?)? {
                Ins::Inserted(slot) if slot == i => Ok(Fit::Done),
                Ins::Inserted(_) => Err(Fault("compressed key list disagrees on a slot")),
                Ins::Exists(_) => Err(Fault("inserting a key that is present")),
                Ins::NoRoom(need) => Ok(Fit::NoRoom(need)),
            };
        }
        let need = self.used(region, n)? + self.cost(raw.len());
        if need > region.len() {
            return Ok(Fit::NoRoom(need));
        }
        self.insert(region, n, i, raw)?;
        Ok(Fit::Done)
    }

    /// Removes key `i` of a list of `n` keys, or says how many bytes the list would need.
    pub fn remove_at(&self, region: &mut [u8], n: usize, i: usize) -> SResult<Fit> {
        if i >= n {
            return Err(Fault("remove position out of range"));
        }
        if let KeyList::Packed(p) = self {
            return Ok(match p.remove(region, i)? {
                None => Fit::Done,
                Some(need) => Fit::NoRoom(need),
            });
        }
        self.remove(region, n, i)?;
        Ok(Fit::Done)
    }

    /// Rewrites the list smaller when it can (compressed lists repack their blocks; DB2
    /// regroups its prefixes, as DB2 does when a page is nearly full). Returns the bytes freed.
    pub fn vacuumize(&self, region: &mut [u8], n: usize, how: Repack) -> SResult<usize> {
        match self {
            KeyList::Packed(p) => p.vacuumize(region, how),
            KeyList::Str(StrList::Db2(cap)) => {
                let before = self.used(region, n)?;
                match super::db2::optimize(region, n, *cap as usize)? {
                    Some(img) if img.len() < before => {
                        region
                            .get_mut(..img.len())
                            .ok_or(Fault("regrouped key list larger than its region"))?
                            .copy_from_slice(&img);
                        Ok(before - img.len())
                    }
                    _ => Ok(0),
                }
            }
            _ => Ok(0),
        }
    }

    /// Checks the list's own structure for `check` and appends every key, decoded, to `out`:
    /// a byte-string list's layout; a compressed list block by block (each block decodes and
    /// matches its descriptor, the block index is in key order, the block counts add up to
    /// `n`). Key order across the node and the fences are the caller's. `out` grows by at most
    /// `n` keys.
    pub fn validate(&self, region: &[u8], n: usize, out: &mut Vec<KeyBuf>) -> Result<(), String> {
        let f = |f: Fault| f.0.to_string();
        match self {
            KeyList::Packed(p) => {
                let nb = p.blocks(region).map_err(f)?;
                let start = out.len();
                let mut buf = [0u32; super::packed::MAX_BLOCK_KEYS];
                let mut prev_last: Option<u64> = None;
                for b in 0..nb {
                    p.validate_block(region, b)
                        .map_err(|e| format!("block {b}: {}", e.0))?;
                    let blk = p.block(region, b).map_err(f)?;
                    if prev_last.is_some_and(|pl| blk.first < pl) {
                        return Err(format!("block {b} starts below the previous block's end"));
                    }
                    prev_last = Some(blk.last);
                    let k = p.decode_block_at(region, &blk, &mut buf).map_err(f)?;
                    out.extend(
                        buf.iter()
                            .take(k)
                            .map(|&v| p.key_of(blk.base + v as u64).to_owned()),
                    );
                    if out.len() - start > n {
                        break;
                    }
                }
                if out.len() - start != n {
                    return Err(format!(
                        "blocks hold {} keys, the node header says {n}",
                        out.len() - start
                    ));
                }
                Ok(())
            }
            KeyList::Str(s) => {
                s.validate(region, n).map_err(f)?;
                if s.contiguous() {
                    for i in 0..n {
                        out.push(self.key(region, n, i).map_err(f)?.to_owned());
                    }
                    Ok(())
                } else {
                    s.for_each(region, n, |k| {
                        out.push(KeyBuf::Bytes(k.to_vec()));
                        Ok(())
                    })
                    .map_err(f)
                }
            }
            _ => {
                for i in 0..n {
                    out.push(self.key(region, n, i).map_err(f)?.to_owned());
                }
                Ok(())
            }
        }
    }

    /// The prefix every key of the node shares and stores once (head compression): both fences
    /// of the node must have it. `None` for lists without one.
    pub fn head_prefix<'r>(&self, region: &'r [u8]) -> SResult<Option<&'r [u8]>> {
        match self {
            KeyList::Str(s) => s.prefix(region).map(Some),
            _ => Ok(None),
        }
    }

    /// Appends what each key takes in the list (`KeyShare`, DB2 group numbers from
    /// `next_group`) to `out`, for lists whose `cost` is only an upper bound (byte strings with
    /// shared prefixes): splits then measure real bytes. False (nothing appended) for the
    /// other kinds.
    pub fn shares(
        &self,
        region: &[u8],
        n: usize,
        next_group: u32,
        out: &mut Vec<KeyShare>,
    ) -> SResult<bool> {
        match self {
            KeyList::Str(s) => {
                s.shares(region, n, next_group, out)?;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    /// Calls `f` with the stored bytes of every key in order (u32 keys of compressed lists as 4
    /// little-endian bytes).
    pub fn for_each_key(
        &self,
        region: &[u8],
        n: usize,
        mut f: impl FnMut(&[u8]) -> SResult<()>,
    ) -> SResult<()> {
        match self {
            KeyList::Packed(p) => p.for_each_stored(region, n, f),
            KeyList::Str(s) if !s.contiguous() => s.for_each(region, n, f),
            _ => (0..n).try_for_each(|i| f(self.raw(region, n, i)?)),
        }
    }

    /// Builds the image of a list holding `keys` (stored bytes, ascending) into `out`, for a
    /// node whose fences share `prefix` (head compression), with what each key took in the node
    /// it was copied from (`shares`, one per key, or none: DB2 keeps its groups where
    /// regrouping is not smaller). False when it would take more than `cap` bytes.
    pub fn build(
        &self,
        keys: &[&[u8]],
        shares: &[KeyShare],
        prefix: &[u8],
        cap: usize,
        out: &mut Vec<u8>,
    ) -> SResult<bool> {
        out.clear();
        match self {
            KeyList::Str(s) => match s.build_keeping(keys, shares, prefix, out) {
                Err(f) if f == super::strkeys::TOO_LARGE => Ok(false),
                r => {
                    r?;
                    Ok(out.len() <= cap)
                }
            },
            KeyList::Packed(p) => {
                out.resize(cap, 0);
                if !p.build_stored(out, keys)? {
                    return Ok(false);
                }
                let used = p.used(out)?;
                out.truncate(used);
                Ok(true)
            }
            _ => {
                let need: usize = keys.iter().map(|k| self.cost(k.len())).sum();
                if need > cap {
                    return Ok(false);
                }
                out.resize(need, 0);
                for (i, k) in keys.iter().enumerate() {
                    self.insert(out, i, i, k)?;
                }
                let used = self.used(out, keys.len())?;
                out.truncate(used);
                Ok(true)
            }
        }
    }

    /// Lines describing the list's structure for `tersedb dump` (blocks, prefixes), at most
    /// `max` detail lines.
    pub fn describe(&self, region: &[u8], n: usize, max: usize) -> SResult<Vec<String>> {
        let mut lines = Vec::new();
        match self {
            KeyList::Packed(p) => {
                let nb = p.blocks(region)?;
                let form = match (p.wide, p.frame_base(region)?) {
                    (false, _) => String::new(),
                    (true, Some(base)) => format!(" (u64, based at {base})"),
                    (true, None) => " (u64, wide)".to_string(),
                };
                lines.push(format!(
                    "{} key list{form}: {nb} blocks of up to {} keys, {} bytes",
                    if p.auto { "auto" } else { p.codec.name() },
                    p.block_keys,
                    p.used(region)?
                ));
                for b in 0..nb.min(max) {
                    let blk = p.block(region, b)?;
                    lines.push(format!(
                        "block {b}: {} keys {}..={} in {} bytes, b = {}",
                        blk.desc.count,
                        blk.first,
                        blk.last,
                        blk.at.len(),
                        blk.desc.bits
                    ));
                }
                if nb > max {
                    lines.push(format!("... {} more blocks", nb - max));
                }
            }
            KeyList::Str(s) => {
                let p = s.prefix(region)?;
                lines.push(format!(
                    "{s:?} key list, {} bytes, head prefix {}",
                    self.used(region, n)?,
                    super::KeyBuf::Bytes(p.to_vec())
                ));
                if let StrList::Db2(_) = s {
                    lines.push(format!("{} prefix groups", super::db2::groups(region, n)?));
                }
            }
            _ => {}
        }
        Ok(lines)
    }

    /// Inserts stored key bytes at `i`; the caller made room (`used + cost <= region.len()`).
    /// Not for compressed lists (see `insert_at`).
    fn insert(&self, region: &mut [u8], n: usize, i: usize, raw: &[u8]) -> SResult<()> {
        match (self, self.width()) {
            (KeyList::Packed(_), _) => Err(Fault("plain insert into a compressed key list")),
            (KeyList::Str(s), _) => s.insert(region, n, i, raw),
            (_, Some(w)) => fixed::insert(region, w, n, i, raw),
            (_, None) => var::insert(region, n, i, raw),
        }
    }

    /// Not for compressed lists (see `remove_at`).
    fn remove(&self, region: &mut [u8], n: usize, i: usize) -> SResult<()> {
        match (self, self.width()) {
            (KeyList::Packed(_), _) => Err(Fault("plain remove from a compressed key list")),
            (KeyList::Str(s), _) => s.remove(region, n, i),
            (_, Some(w)) => fixed::remove(region, w, n, i),
            (_, None) => var::remove(region, n, i),
        }
    }
}

/// Whether `keys` strictly ascend; branch-free so that it vectorises.
#[inline]
fn ascending<T: PartialOrd + Copy>(keys: &[T]) -> bool {
    let rest = keys.get(1..).unwrap_or_default();
    let mut unordered = 0u32;
    for (a, b) in keys.iter().zip(rest) {
        unordered |= u32::from(b <= a);
    }
    unordered == 0
}

/// The first index in `0..n` where `pred` turns false (`pred` is true then false).
fn partition(n: usize, pred: impl Fn(usize) -> bool) -> usize {
    let (mut lo, mut hi) = (0, n);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if pred(mid) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
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
