//! The compressed KeyList of u32 leaves (seed 000, section 3): a block index followed by codec
//! blocks, all inside the node's KeyList region.
//!
//! ```text
//! region: [0..2 nblocks u16][2..4 data_end u16][descriptor 0] .. [descriptor nb-1][payload ..]
//! descriptor (12 bytes):
//!   [0..2 offset u16]  payload offset of the block, relative to the payload area's start
//!   [2..4 count:9 | bits:6 << 9]  keys in the block (start key included), codec bit width
//!   [4..8 first u32]   the block's start key (the codec's start value, kept out of the payload)
//!   [8..12 last u32]   the block's last key (the zone map's upper bound, the append fast path)
//! payload area: starts at 4 + 12 * nblocks; block b occupies [offset b, offset b+1) and the last
//!   block [offset nb-1, data_end); blocks are tight and in key order
//! ```
//!
//! A block's size is implicit (the next block's offset), so a descriptor costs 12 bytes and
//! every byte after `data_end` is free space of the node. Blocks change by *splicing*: the new
//! encoding of a block (or of several) is built in a stack buffer and the bytes after it move by
//! the difference. Appending to the last block is done in place with the codec's O(1) append.
//!
//! A block whose last key is removed stays in the index as an empty *gap* (count 0, first = last
//! = the removed key, so the index stays ordered) until [`Packed::vacuumize`] repacks the list;
//! an insert that lands in a gap refills it. Every read is bounds-checked; a malformed region
//! gives a [`Fault`], never a panic.

use super::slots::{le_u16, le_u32, Fault, SResult};
use tersedb_codecs::{
    AppendOutcome, Codec, CodecError, CodecId, Descriptor, Fold, InsertOutcome, RemoveOutcome,
};

/// Bytes of the KeyList header (block count, payload end).
pub const HEADER: usize = 4;
/// Bytes of one block descriptor.
pub const DESC: usize = 12;
/// Most keys a block may hold, start key included (the byte-oriented codecs' limit).
pub const MAX_BLOCK_KEYS: usize = 257;
/// Room for one block's payload: the worst case of every codec (VByte: 5 bytes per delta).
const SCRATCH: usize = 1344;

/// Maps a codec error to a fault (the node layer names the page).
fn cfault(e: CodecError) -> Fault {
    match e {
        CodecError::Corrupt { what } | CodecError::InvalidInput { what } => Fault(what),
        CodecError::NoRoom { .. } => Fault("compressed block does not fit its buffer"),
        _ => Fault("codec error"),
    }
}

/// A compressed KeyList: the codec and the most keys per block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Packed {
    pub codec: CodecId,
    /// Most keys per block, start key included (`2..=codec max`).
    pub block_keys: u16,
}

/// Outcome of [`Packed::insert`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ins {
    Inserted(usize),
    Exists(usize),
    /// The list would need this many bytes in total; nothing changed.
    NoRoom(usize),
}

/// One block as read from the index.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Block {
    /// Descriptor in the codec's terms (all zero for a gap).
    pub desc: Descriptor,
    /// The payload's byte range within the region.
    pub at: std::ops::Range<usize>,
    /// Stored first and last key (kept for a gap, for ordering).
    pub first: u32,
    pub last: u32,
}

#[derive(Clone, Copy, Debug)]
struct Hdr {
    nb: usize,
    data_end: usize,
}

impl Hdr {
    #[inline]
    fn pstart(&self) -> usize {
        HEADER + DESC * self.nb
    }
    #[inline]
    fn used(&self) -> usize {
        self.pstart() + self.data_end
    }
}

#[inline]
fn hdr(region: &[u8]) -> SResult<Hdr> {
    if region.len() < HEADER {
        return Err(Fault("key list region smaller than its header"));
    }
    let h = Hdr {
        nb: le_u16(region) as usize,
        data_end: le_u16(&region[2..]) as usize,
    };
    if h.used() > region.len() {
        return Err(Fault("compressed key list longer than its region"));
    }
    Ok(h)
}

fn write_hdr(region: &mut [u8], h: Hdr) {
    region[0..2].copy_from_slice(&(h.nb as u16).to_le_bytes());
    region[2..4].copy_from_slice(&(h.data_end as u16).to_le_bytes());
}

#[inline]
fn d_off(region: &[u8], b: usize) -> usize {
    le_u16(&region[HEADER + DESC * b..]) as usize
}

#[inline]
fn d_count(region: &[u8], b: usize) -> usize {
    (le_u16(&region[HEADER + DESC * b + 2..]) & 0x1ff) as usize
}

#[inline]
fn d_first(region: &[u8], b: usize) -> u32 {
    le_u32(&region[HEADER + DESC * b + 4..])
}

#[inline]
fn d_last(region: &[u8], b: usize) -> u32 {
    le_u32(&region[HEADER + DESC * b + 8..])
}

fn write_desc(region: &mut [u8], b: usize, off: usize, d: &Descriptor, first: u32, last: u32) {
    let at = HEADER + DESC * b;
    let cb = (d.count as u16 & 0x1ff) | ((d.bits as u16 & 0x3f) << 9);
    region[at..at + 2].copy_from_slice(&(off as u16).to_le_bytes());
    region[at + 2..at + 4].copy_from_slice(&cb.to_le_bytes());
    region[at + 4..at + 8].copy_from_slice(&first.to_le_bytes());
    region[at + 8..at + 12].copy_from_slice(&last.to_le_bytes());
}

/// Block `b` of a list with header `h` (`b < h.nb`). Always inlined: returned through memory,
/// the block was stored in 4- and 8-byte pieces and read back in 16-byte ones, a
/// store-forwarding stall per block that was a quarter of a full BP128 SUM.
#[inline(always)]
fn block_at(region: &[u8], h: Hdr, b: usize) -> SResult<Block> {
    let off = d_off(region, b);
    let end = if b + 1 < h.nb {
        d_off(region, b + 1)
    } else {
        h.data_end
    };
    if off > end || end > h.data_end {
        return Err(Fault("compressed block offsets out of order"));
    }
    let cb = le_u16(&region[HEADER + DESC * b + 2..]);
    let count = (cb & 0x1ff) as u32;
    let (first, last) = (d_first(region, b), d_last(region, b));
    let ps = h.pstart();
    let desc = if count == 0 {
        if off != end {
            return Err(Fault("empty compressed block with a payload"));
        }
        Descriptor::default()
    } else {
        Descriptor {
            start: first,
            count,
            last,
            size: (end - off) as u32,
            bits: (cb >> 9) as u8,
        }
    };
    Ok(Block {
        desc,
        at: ps + off..ps + end,
        first,
        last,
    })
}

/// The block a key belongs to: the last one whose first key is `<= key` (0 when none is).
/// First keys are searched like a plain u32 list: an interpolation guess, galloping, then
/// binary search (dense or clustered keys touch one or two descriptors, not ~10).
#[inline]
fn find_block(region: &[u8], h: Hdr, key: u32) -> usize {
    let first = |i: usize| d_first(region, i) as u64;
    let mut b = match super::slots::search_int(h.nb, first, key as u64, None) {
        Ok(i) => i,
        Err(i) => i.saturating_sub(1),
    };
    // First keys only repeat in a damaged or gap-heavy index: keep "the last such block".
    while b + 1 < h.nb && d_first(region, b + 1) <= key {
        b += 1;
    }
    b
}

/// Sum of the key counts of blocks `0..b`.
#[inline]
fn slot_base(region: &[u8], b: usize) -> usize {
    (0..b).map(|i| d_count(region, i)).sum()
}

/// Replaces blocks `b..b + r` by `new` (descriptor, first, last, payload bytes), moving the
/// rest. Returns false, changing nothing, when the result would not fit the region.
fn splice(
    region: &mut [u8],
    h: Hdr,
    b: usize,
    r: usize,
    new: &[(Descriptor, u32, u32, &[u8])],
) -> SResult<bool> {
    if b + r > h.nb {
        return Err(Fault("block range out of range"));
    }
    // The offsets that move must be in order (a corrupt index must not make them wrap).
    let mut prev = if b < h.nb {
        d_off(region, b)
    } else {
        h.data_end
    };
    for j in b..h.nb {
        let o = d_off(region, j);
        if o < prev || o > h.data_end {
            return Err(Fault("compressed block offsets out of order"));
        }
        prev = o;
    }
    let k = new.len();
    let nb_new = h.nb - r + k;
    let (po, pn) = (h.pstart(), HEADER + DESC * nb_new);
    let o0 = if b < h.nb {
        d_off(region, b)
    } else {
        h.data_end
    };
    let o1 = if b + r < h.nb {
        d_off(region, b + r)
    } else {
        h.data_end
    };
    let ns: usize = new.iter().map(|n| n.3.len()).sum();
    let data_end = h.data_end - (o1 - o0) + ns;
    if pn + data_end > region.len() || data_end > u16::MAX as usize {
        return Ok(false);
    }
    let grow_desc = nb_new > h.nb;
    let move_descs = |region: &mut [u8]| {
        let (from, to) = (HEADER + DESC * (b + r), HEADER + DESC * (b + k));
        region.copy_within(from..HEADER + DESC * h.nb, to);
    };
    if !grow_desc {
        // The payload moves left into the descriptors' old space: move those first.
        move_descs(region);
    }
    // Payload: head [0, o0) and tail [o1, data_end) (relative); see the module docs.
    if pn + ns < po {
        region.copy_within(po..po + o0, pn);
        region.copy_within(po + o1..po + h.data_end, pn + o0 + ns);
    } else {
        region.copy_within(po + o1..po + h.data_end, pn + o0 + ns);
        region.copy_within(po..po + o0, pn);
    }
    if grow_desc {
        move_descs(region);
    }
    let mut off = o0;
    for (i, (d, first, last, bytes)) in new.iter().enumerate() {
        write_desc(region, b + i, off, d, *first, *last);
        region[pn + off..pn + off + bytes.len()].copy_from_slice(bytes);
        off += bytes.len();
    }
    // Later blocks moved by ns - (o1 - o0).
    for j in b + k..nb_new {
        let at = HEADER + DESC * j;
        let o = le_u16(&region[at..]) as usize + ns - (o1 - o0);
        region[at..at + 2].copy_from_slice(&(o as u16).to_le_bytes());
    }
    write_hdr(
        region,
        Hdr {
            nb: nb_new,
            data_end,
        },
    );
    Ok(true)
}

/// Encodes `keys` (sorted, unique, `1..=257`) into `out`; returns (descriptor, size).
fn encode(codec: Codec, keys: &[u32], out: &mut [u8]) -> SResult<(Descriptor, usize)> {
    let d = codec.encode(keys, out).map_err(cfault)?;
    Ok((d, d.size as usize))
}

impl Packed {
    /// The KeyList id stored in a node header: 16 + codec id.
    pub fn id(&self) -> u8 {
        16 + self.codec as u8
    }

    #[inline]
    fn codec(&self) -> Codec {
        Codec(self.codec)
    }

    #[inline]
    fn cap(&self) -> usize {
        (self.block_keys as usize).min(self.codec().max_keys())
    }

    /// Makes `region` an empty list.
    pub fn init(region: &mut [u8]) {
        if region.len() >= HEADER {
            write_hdr(region, Hdr { nb: 0, data_end: 0 });
        }
    }

    /// Bytes the list uses (header, index, payload).
    #[inline]
    pub fn used(region: &[u8]) -> SResult<usize> {
        Ok(hdr(region)?.used())
    }

    /// Number of blocks (gaps included).
    pub fn blocks(region: &[u8]) -> SResult<usize> {
        Ok(hdr(region)?.nb)
    }

    /// Calls `f(b, block)` for every block from `from` on, in order, until it returns `false`:
    /// one header parse for the whole walk (the scan paths).
    #[inline]
    pub fn walk_blocks(
        region: &[u8],
        from: usize,
        mut f: impl FnMut(usize, Block) -> SResult<bool>,
    ) -> SResult<()> {
        let h = hdr(region)?;
        for b in from..h.nb {
            if !f(b, block_at(region, h, b)?)? {
                break;
            }
        }
        Ok(())
    }

    /// The first block that may hold keys `>= key`: the block `key` belongs to, or the next
    /// one when every key of that block is below `key` (`blocks()` when there is none).
    pub fn seek_block(region: &[u8], key: u32) -> SResult<usize> {
        let h = hdr(region)?;
        if h.nb == 0 {
            return Ok(0);
        }
        let b = find_block(region, h, key);
        Ok(if d_count(region, b) > 0 && d_last(region, b) < key {
            b + 1
        } else {
            b
        })
    }

    /// Block `b`.
    pub fn block(region: &[u8], b: usize) -> SResult<Block> {
        let h = hdr(region)?;
        if b >= h.nb {
            return Err(Fault("block index out of range"));
        }
        block_at(region, h, b)
    }

    /// Decodes block `b` into `out` (at least 257 long); returns its key count.
    pub fn decode_block(&self, region: &[u8], b: usize, out: &mut [u32]) -> SResult<usize> {
        let blk = Self::block(region, b)?;
        if blk.desc.count == 0 {
            return Ok(0);
        }
        self.codec()
            .decode(&blk.desc, &region[blk.at.clone()], out)
            .map_err(cfault)
    }

    /// Decodes the block `blk` (as returned by [`Packed::block`] for this region) into `out`.
    #[inline]
    pub fn decode_block_at(&self, region: &[u8], blk: &Block, out: &mut [u32]) -> SResult<usize> {
        if blk.desc.count == 0 {
            return Ok(0);
        }
        let payload = region
            .get(blk.at.clone())
            .ok_or(Fault("compressed block outside its region"))?;
        self.codec().decode(&blk.desc, payload, out).map_err(cfault)
    }

    /// SUM/COUNT/MIN/MAX of slots `slots` of block `b`.
    pub fn fold_block(
        &self,
        region: &[u8],
        b: usize,
        slots: std::ops::Range<usize>,
    ) -> SResult<Fold> {
        let blk = Self::block(region, b)?;
        if blk.desc.count == 0 || slots.is_empty() {
            return Ok(Fold::default());
        }
        self.codec()
            .fold(&blk.desc, &region[blk.at.clone()], slots)
            .map_err(cfault)
    }

    /// Full check of block `b` (the payload decodes and matches its descriptor).
    pub fn validate_block(&self, region: &[u8], b: usize) -> SResult<()> {
        let blk = Self::block(region, b)?;
        if blk.desc.count == 0 {
            if blk.first != blk.last {
                return Err(Fault("gap block with different first and last keys"));
            }
            return Ok(());
        }
        if blk.desc.count as usize > self.cap() {
            return Err(Fault(
                "compressed block holds more keys than the block size",
            ));
        }
        self.codec()
            .validate(&blk.desc, &region[blk.at.clone()])
            .map_err(cfault)
    }

    /// Block and position of slot `i`.
    fn locate(region: &[u8], h: Hdr, i: usize) -> SResult<(usize, usize)> {
        let mut base = 0;
        for b in 0..h.nb {
            let c = d_count(region, b);
            if i < base + c {
                return Ok((b, i - base));
            }
            base += c;
        }
        Err(Fault("key index out of range"))
    }

    /// Key at slot `i` (walks the index: O(blocks)).
    pub fn key(&self, region: &[u8], i: usize) -> SResult<u32> {
        let h = hdr(region)?;
        let (b, j) = Self::locate(region, h, i)?;
        let blk = block_at(region, h, b)?;
        self.codec()
            .select(&blk.desc, &region[blk.at], j)
            .map_err(cfault)
    }

    /// Lower bound of `p` within the list: `(block, position in block, key)`, where the key is
    /// `None` when every key is smaller. Gaps are skipped.
    #[inline]
    fn lower_bound(&self, region: &[u8], h: Hdr, p: u32) -> SResult<(usize, usize, Option<u32>)> {
        if h.nb == 0 {
            return Ok((0, 0, None));
        }
        let b = find_block(region, h, p);
        let blk = block_at(region, h, b)?;
        if blk.desc.count > 0 && p <= blk.desc.last {
            let span = blk
                .desc
                .last
                .checked_sub(blk.desc.start)
                .map(|s| s as usize);
            let (j, v) = if p <= blk.desc.start {
                (0, Some(blk.desc.start))
            } else if span.is_some_and(|s| s + 1 == blk.desc.count as usize) {
                // A dense block (as many keys as its range has values: dense ids, row numbers)
                // holds every value of [first, last]: no decode.
                ((p - blk.desc.start) as usize, Some(p))
            } else if matches!(
                self.codec,
                CodecId::StreamVByte | CodecId::VarIntGb | CodecId::MaskedVByte
            ) {
                // Their SIMD decoders beat the codecs' sequential lower_bound on a 257-key
                // block (in-process A/B, `tersedb-codecs` example `lower_bound_ab`: StreamVByte
                // 76 vs 118 ns, VarIntGB 100 vs 134, Masked VByte 109 vs 121; VByte loses):
                // decode into the stack, then binary search.
                let mut keys = [0u32; MAX_BLOCK_KEYS];
                let n = self
                    .codec()
                    .decode(&blk.desc, &region[blk.at], &mut keys)
                    .map_err(cfault)?;
                let j = keys[..n].partition_point(|&k| k < p);
                (j, keys[..n].get(j).copied())
            } else {
                self.codec()
                    .lower_bound(&blk.desc, &region[blk.at], p)
                    .map_err(cfault)?
            };
            if v.is_some() {
                return Ok((b, j, v));
            }
        }
        // Every key of block b is below p: the answer is the next non-empty block's first key.
        for nb in b + 1..h.nb {
            if d_count(region, nb) > 0 {
                return Ok((nb, 0, Some(d_first(region, nb))));
            }
        }
        Ok((h.nb, 0, None))
    }

    /// Binary search: `Ok(slot)` when `p` is present, `Err(slot)` for its insert position.
    pub fn search(&self, region: &[u8], p: u32) -> SResult<Result<usize, usize>> {
        let h = hdr(region)?;
        let (b, j, v) = self.lower_bound(region, h, p)?;
        let slot = slot_base(region, b.min(h.nb)) + j;
        Ok(if v == Some(p) { Ok(slot) } else { Err(slot) })
    }

    /// Whether `p` is present (no slot arithmetic: the key-only lookup path).
    #[inline]
    pub fn contains(&self, region: &[u8], p: u32) -> SResult<bool> {
        let h = hdr(region)?;
        Ok(self.lower_bound(region, h, p)?.2 == Some(p))
    }

    /// Inserts `key` into a list of `n` keys. On `NoRoom` nothing changed.
    pub fn insert(&self, region: &mut [u8], n: usize, key: u32) -> SResult<Ins> {
        let h = hdr(region)?;
        let codec = self.codec();
        if h.nb == 0 {
            let d = Descriptor {
                start: key,
                count: 1,
                last: key,
                size: 0,
                bits: 0,
            };
            return Ok(if splice(region, h, 0, 0, &[(d, key, key, &[])])? {
                Ins::Inserted(0)
            } else {
                Ins::NoRoom(h.used() + DESC)
            });
        }
        // Ascending inserts go to the last block: no search, no slot arithmetic.
        let b = if d_first(region, h.nb - 1) <= key {
            h.nb - 1
        } else {
            find_block(region, h, key)
        };
        let blk = block_at(region, h, b)?;
        let last_block = b + 1 == h.nb;
        let count = blk.desc.count as usize;
        // The append fast path: the last block, a key above its last, in place.
        if last_block && count > 0 && key > blk.desc.last && count < self.cap() {
            let mut d = blk.desc;
            let ps = h.pstart();
            let off = blk.at.start - ps;
            match codec
                .append(&mut d, &mut region[blk.at.start..], key)
                .map_err(cfault)?
            {
                AppendOutcome::Appended => {
                    write_desc(region, b, off, &d, d.start, d.last);
                    write_hdr(
                        region,
                        Hdr {
                            nb: h.nb,
                            data_end: off + d.size as usize,
                        },
                    );
                    return Ok(Ins::Inserted(n));
                }
                AppendOutcome::NoRoom => {}
            }
        }
        let base = if last_block {
            n.checked_sub(count)
                .ok_or(Fault("block counts exceed the node's key count"))?
        } else {
            slot_base(region, b)
        };
        let mut buf = [0u8; SCRATCH];
        if count < self.cap() {
            // In the block: copy it out, let the codec insert (in place for the byte codecs,
            // decode-modify-encode for the packed ones), splice it back.
            let mut d = blk.desc;
            let size = d.size as usize;
            buf[..size].copy_from_slice(&region[blk.at.clone()]);
            let room = codec.max_payload_len(count + 1).max(size).min(SCRATCH);
            match codec
                .insert(&mut d, &mut buf[..room], key)
                .map_err(cfault)?
            {
                InsertOutcome::Exists { slot } => return Ok(Ins::Exists(base + slot)),
                InsertOutcome::Inserted { slot } => {
                    let bytes = &buf[..d.size as usize];
                    if splice(region, h, b, 1, &[(d, d.start, d.last, bytes)])? {
                        return Ok(Ins::Inserted(base + slot));
                    }
                    return Ok(Ins::NoRoom(h.used() + d.size as usize - size));
                }
                InsertOutcome::NoRoom => {}
            }
        }
        // The block is full: split it (an append past the last block starts a new block).
        let mut keys = [0u32; MAX_BLOCK_KEYS + 1];
        let n = if count == 0 {
            0
        } else {
            codec
                .decode(&blk.desc, &region[blk.at.clone()], &mut keys)
                .map_err(cfault)?
        };
        let pos = keys[..n].partition_point(|&k| k < key);
        if pos < n && keys[pos] == key {
            return Ok(Ins::Exists(base + pos));
        }
        keys.copy_within(pos..n, pos + 1);
        keys[pos] = key;
        let keys = &keys[..n + 1];
        if !(last_block && pos == n) {
            if let Some(r) = self.share_with_neighbour(region, h, b, keys, base, pos)? {
                return Ok(r);
            }
        }
        let at = if last_block && pos == n {
            n
        } else {
            keys.len() / 2
        };
        let mut buf2 = [0u8; SCRATCH];
        let (d1, s1) = encode(codec, &keys[..at], &mut buf)?;
        let (d2, s2) = encode(codec, &keys[at..], &mut buf2)?;
        let new = [
            (d1, d1.start, d1.last, &buf[..s1]),
            (d2, d2.start, d2.last, &buf2[..s2]),
        ];
        if splice(region, h, b, 1, &new)? {
            Ok(Ins::Inserted(base + pos))
        } else {
            Ok(Ins::NoRoom(h.used() + DESC + s1 + s2 - blk.at.len()))
        }
    }

    /// An insert into the full block `b` (its keys with the new one: `keys`, the block's first
    /// slot `base`, the new key's position `pos`): instead of two half-full blocks, the keys are
    /// shared with a neighbouring block, two blocks into two when the pair keeps an eighth of a
    /// block free and into three otherwise (the B*-tree's rule, applied to blocks), so random
    /// inserts leave blocks two-thirds to fully packed. `None` when there is no neighbour
    /// block to share with.
    fn share_with_neighbour(
        &self,
        region: &mut [u8],
        h: Hdr,
        b: usize,
        keys: &[u32],
        base: usize,
        pos: usize,
    ) -> SResult<Option<Ins>> {
        let cap = self.cap();
        let codec = self.codec();
        let usable = |j: usize| j < h.nb && d_count(region, j) > 0;
        let (lo, right) = if usable(b + 1) {
            (b, true)
        } else if b > 0 && usable(b - 1) {
            (b - 1, false)
        } else {
            return Ok(None);
        };
        let nbr = block_at(region, h, if right { b + 1 } else { b - 1 })?;
        let mut other = [0u32; MAX_BLOCK_KEYS];
        let m = codec
            .decode(&nbr.desc, &region[nbr.at.clone()], &mut other)
            .map_err(cfault)?;
        let mut all = [0u32; 2 * MAX_BLOCK_KEYS + 1];
        let total = keys.len() + m;
        // Slots do not move: the neighbour's keys keep theirs, the new key takes `base + pos`.
        if right {
            all[..keys.len()].copy_from_slice(keys);
            all[keys.len()..total].copy_from_slice(&other[..m]);
        } else {
            all[..m].copy_from_slice(&other[..m]);
            all[m..total].copy_from_slice(keys);
        }
        let slot = base + pos;
        let all = &all[..total];
        if all.windows(2).any(|w| w[0] >= w[1]) {
            return Err(Fault("neighbouring compressed blocks overlap"));
        }
        // Two blocks when the pair keeps an eighth of a block free, else three.
        let parts = if total + cap / 8 <= 2 * cap { 2 } else { 3 };
        let mut bufs = [[0u8; SCRATCH]; 3];
        let mut descs = [Descriptor::default(); 3];
        let mut start = 0;
        for (k, (buf, desc)) in bufs
            .iter_mut()
            .zip(descs.iter_mut())
            .take(parts)
            .enumerate()
        {
            let end = total * (k + 1) / parts;
            *desc = encode(codec, &all[start..end], buf)?.0;
            start = end;
        }
        let new: Vec<(Descriptor, u32, u32, &[u8])> = descs[..parts]
            .iter()
            .zip(bufs.iter())
            .map(|(d, buf)| (*d, d.start, d.last, &buf[..d.size as usize]))
            .collect();
        let (o0, o1) = (block_at(region, h, lo)?.at, block_at(region, h, lo + 1)?.at);
        let old = o1.end - o0.start;
        let ns: usize = new.iter().map(|n| n.3.len()).sum();
        if splice(region, h, lo, 2, &new)? {
            Ok(Some(Ins::Inserted(slot)))
        } else {
            Ok(Some(Ins::NoRoom(h.used() + DESC * (parts - 2) + ns - old)))
        }
    }

    /// After a remove left block `b` at most half full: merges it with a neighbouring block
    /// when both fit one block and the merged encoding takes no more bytes than the two did
    /// (so a remove never needs room for this). Slots do not change.
    fn merge_small_block(&self, region: &mut [u8], b: usize) -> SResult<()> {
        let h = hdr(region)?;
        let cap = self.cap();
        if b >= h.nb || d_count(region, b) * 2 > cap {
            return Ok(());
        }
        let c = d_count(region, b);
        let fits = |j: usize| j < h.nb && d_count(region, j) > 0 && d_count(region, j) + c <= cap;
        let lo = if fits(b + 1) {
            b
        } else if b > 0 && fits(b - 1) {
            b - 1
        } else {
            return Ok(());
        };
        let codec = self.codec();
        let (x, y) = (block_at(region, h, lo)?, block_at(region, h, lo + 1)?);
        let mut all = [0u32; 2 * MAX_BLOCK_KEYS];
        let n1 = codec
            .decode(&x.desc, &region[x.at.clone()], &mut all)
            .map_err(cfault)?;
        let n2 = codec
            .decode(&y.desc, &region[y.at.clone()], &mut all[n1..])
            .map_err(cfault)?;
        let all = &all[..n1 + n2];
        if n1 > 0 && n2 > 0 && all[n1 - 1] >= all[n1] {
            return Err(Fault("neighbouring compressed blocks overlap"));
        }
        let mut buf = [0u8; SCRATCH];
        let (d, size) = encode(codec, all, &mut buf)?;
        if size > x.at.len() + y.at.len() + DESC {
            return Ok(());
        }
        if !splice(region, h, lo, 2, &[(d, d.start, d.last, &buf[..size])])? {
            return Err(Fault("merging two blocks grew the key list"));
        }
        Ok(())
    }

    /// Removes the key at slot `i`. `Ok(None)` when done; `Ok(Some(need))` when the block would
    /// grow beyond the region (BP128 and the other packed codecs), nothing changed.
    pub fn remove(&self, region: &mut [u8], i: usize) -> SResult<Option<usize>> {
        let h = hdr(region)?;
        let (b, j) = Self::locate(region, h, i)?;
        let blk = block_at(region, h, b)?;
        let mut d = blk.desc;
        let size = d.size as usize;
        if d.count == 1 {
            // The block becomes a gap (keeping its key as first = last for the ordering).
            let gap = Descriptor::default();
            let k = blk.desc.start;
            if splice(region, h, b, 1, &[(gap, k, k, &[])])? {
                return Ok(None);
            }
            return Err(Fault("removing a key grew the key list"));
        }
        let mut buf = [0u8; SCRATCH];
        buf[..size].copy_from_slice(&region[blk.at.clone()]);
        let room = self.codec().max_payload_len(d.count as usize).min(SCRATCH);
        match self
            .codec()
            .remove(&mut d, &mut buf[..room.max(size)], j)
            .map_err(cfault)?
        {
            RemoveOutcome::Removed { .. } => {
                if splice(
                    region,
                    h,
                    b,
                    1,
                    &[(d, d.start, d.last, &buf[..d.size as usize])],
                )? {
                    self.merge_small_block(region, b)?;
                    Ok(None)
                } else {
                    Ok(Some(h.used() + d.size as usize - size))
                }
            }
            RemoveOutcome::NoRoom => Err(Fault("codec found no room in a worst-case buffer")),
        }
    }

    /// The smallest and largest key, from the first and last non-empty blocks' descriptors;
    /// `None` when empty.
    pub fn key_range(region: &[u8]) -> SResult<Option<(u32, u32)>> {
        let h = hdr(region)?;
        let Some(a) = (0..h.nb).find(|&b| d_count(region, b) > 0) else {
            return Ok(None);
        };
        let z = (a..h.nb)
            .rev()
            .find(|&b| d_count(region, b) > 0)
            .unwrap_or(a);
        Ok(Some((d_first(region, a), d_last(region, z))))
    }

    /// Keys, exact sum and non-empty blocks of a whole list, each block summed in registers
    /// by `summer` straight from its descriptor: the SUM of a leaf wholly inside the range.
    /// `None` when `summer` declines a block (then the caller takes the general path).
    pub fn sum_all(
        region: &[u8],
        summer: &tersedb_codecs::sum::BlockSum,
    ) -> SResult<Option<(u64, u128, u64)>> {
        let h = hdr(region)?;
        let ps = h.pstart();
        let (mut keys, mut sum, mut blocks) = (0u64, 0u128, 0u64);
        // The descriptor fields read directly (`block_at`'s checks and empty-block handling
        // cost as much as the BP128 kernel here); an offset out of order fails the `get`.
        for b in 0..h.nb {
            let cb = le_u16(&region[HEADER + DESC * b + 2..]);
            let count = (cb & 0x1ff) as u32;
            if count == 0 {
                continue;
            }
            let off = d_off(region, b);
            let end = if b + 1 < h.nb {
                d_off(region, b + 1)
            } else {
                h.data_end
            };
            let payload = region
                .get(ps + off..ps + end)
                .ok_or(Fault("compressed block offsets out of order"))?;
            let d = Descriptor {
                start: d_first(region, b),
                count,
                last: d_last(region, b),
                size: payload.len() as u32,
                bits: (cb >> 9) as u8,
            };
            let Some(s) = summer.sum(&d, payload) else {
                return Ok(None);
            };
            keys += count as u64;
            sum += s as u128;
            blocks += 1;
        }
        Ok(Some((keys, sum, blocks)))
    }

    /// Keys and non-empty blocks, from the descriptors' counts alone.
    pub fn counts(region: &[u8]) -> SResult<(usize, usize)> {
        let h = hdr(region)?;
        Ok((0..h.nb).fold((0, 0), |(keys, blocks), b| {
            let c = d_count(region, b);
            (keys + c, blocks + usize::from(c > 0))
        }))
    }

    /// The largest key (the last non-empty block's last key), `None` when empty.
    pub fn last_key(region: &[u8]) -> SResult<Option<u32>> {
        let h = hdr(region)?;
        Ok((0..h.nb)
            .rev()
            .find(|&b| d_count(region, b) > 0)
            .map(|b| d_last(region, b)))
    }

    /// Key count of block `b` and the sum of the counts before it: `(base slot, count)`.
    pub fn block_slots(region: &[u8], b: usize) -> SResult<(usize, usize)> {
        let h = hdr(region)?;
        if b > h.nb {
            return Err(Fault("block index out of range"));
        }
        let c = if b < h.nb { d_count(region, b) } else { 0 };
        Ok((slot_base(region, b), c))
    }

    /// A stand-alone list holding blocks `range` of this one (gaps dropped), appended to `out`.
    pub fn extract(region: &[u8], range: std::ops::Range<usize>, out: &mut Vec<u8>) -> SResult<()> {
        let h = hdr(region)?;
        if range.end > h.nb || range.start > range.end {
            return Err(Fault("block range out of range"));
        }
        let mut blocks = Vec::with_capacity(range.len());
        for b in range {
            let blk = block_at(region, h, b)?;
            if blk.desc.count > 0 {
                blocks.push(blk);
            }
        }
        let base = out.len();
        let pstart = HEADER + DESC * blocks.len();
        out.resize(base + pstart, 0);
        let mut off = 0;
        for (i, blk) in blocks.iter().enumerate() {
            out.extend_from_slice(&region[blk.at.clone()]);
            write_desc(&mut out[base..], i, off, &blk.desc, blk.first, blk.last);
            off += blk.at.len();
        }
        if off > u16::MAX as usize {
            return Err(Fault("compressed key list longer than a page"));
        }
        write_hdr(
            &mut out[base..],
            Hdr {
                nb: blocks.len(),
                data_end: off,
            },
        );
        Ok(())
    }

    /// Appends every key to `out`.
    pub fn decode_all(&self, region: &[u8], out: &mut Vec<u32>) -> SResult<()> {
        let h = hdr(region)?;
        let mut keys = [0u32; MAX_BLOCK_KEYS];
        for b in 0..h.nb {
            let blk = block_at(region, h, b)?;
            if blk.desc.count == 0 {
                continue;
            }
            let n = self
                .codec()
                .decode(&blk.desc, &region[blk.at], &mut keys)
                .map_err(cfault)?;
            out.extend_from_slice(&keys[..n]);
        }
        Ok(())
    }

    /// Bytes a list holding exactly `keys` (sorted, unique) takes when built by [`Packed::build`].
    pub fn built_len(&self, keys: &[u32]) -> SResult<usize> {
        let mut buf = [0u8; SCRATCH];
        let mut total = HEADER;
        for chunk in keys.chunks(self.cap()) {
            total += DESC + encode(self.codec(), chunk, &mut buf)?.1;
        }
        Ok(total)
    }

    /// Rewrites `region` as a list of `keys` (sorted, unique) in full blocks. Returns false,
    /// with the region unspecified, when they do not fit.
    pub fn build(&self, region: &mut [u8], keys: &[u32]) -> SResult<bool> {
        let nb = keys.len().div_ceil(self.cap());
        let pstart = HEADER + DESC * nb;
        if pstart > region.len() {
            return Ok(false);
        }
        let mut buf = [0u8; SCRATCH];
        let mut off = 0;
        for (b, chunk) in keys.chunks(self.cap()).enumerate() {
            let (d, s) = encode(self.codec(), chunk, &mut buf)?;
            if pstart + off + s > region.len() || off + s > u16::MAX as usize {
                return Ok(false);
            }
            write_desc(region, b, off, &d, d.start, d.last);
            region[pstart + off..pstart + off + s].copy_from_slice(&buf[..s]);
            off += s;
        }
        write_hdr(region, Hdr { nb, data_end: off });
        Ok(true)
    }

    /// Repacks the list: drops gaps and re-encodes the keys in full blocks, when that makes it
    /// smaller. Returns the bytes freed.
    pub fn vacuumize(&self, region: &mut [u8]) -> SResult<usize> {
        let before = Self::used(region)?;
        let mut keys = Vec::new();
        self.decode_all(region, &mut keys)?;
        let after = self.built_len(&keys)?;
        if after >= before {
            return Ok(0);
        }
        if !self.build(region, &keys)? {
            return Err(Fault(
                "repacked key list does not fit where the old one did",
            ));
        }
        Ok(before - after)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(p: &Packed, region: &[u8], model: &[u32]) {
        let mut all = Vec::new();
        p.decode_all(region, &mut all).unwrap();
        assert_eq!(all, model);
        let nb = Packed::blocks(region).unwrap();
        let mut prev_last: Option<u32> = None;
        for b in 0..nb {
            p.validate_block(region, b).unwrap();
            let blk = Packed::block(region, b).unwrap();
            if let Some(l) = prev_last {
                assert!(blk.first >= l, "index out of order");
            }
            prev_last = Some(blk.last);
        }
        for (i, &k) in model.iter().enumerate().step_by(7) {
            assert_eq!(p.key(region, i).unwrap(), k);
        }
    }

    /// Random inserts, removes and appends against a sorted Vec, with the free space full of
    /// garbage, for every codec and a small and a default block size.
    /// Keys per block against the block capacity, over the non-empty blocks.
    fn block_fill(p: &Packed, region: &[u8]) -> f64 {
        let nb = Packed::blocks(region).unwrap();
        let (mut keys, mut blocks) = (0usize, 0usize);
        for b in 0..nb {
            let c = Packed::block(region, b).unwrap().desc.count as usize;
            if c > 0 {
                keys += c;
                blocks += 1;
            }
        }
        keys as f64 / (blocks * p.cap()).max(1) as f64
    }

    /// Random inserts share a full block's keys with a neighbour (blocks stay at least about
    /// two-thirds full, not half); removes merge half-empty blocks with a neighbour, so the list
    /// stays close to the size of a fresh build of its keys.
    #[test]
    fn random_inserts_fill_blocks_and_removes_merge_them() {
        let mut rng = fastrand::Rng::with_seed(5);
        for codec in CodecId::ALL {
            let p = Packed {
                codec,
                block_keys: 257,
            };
            let mut region = vec![0u8; 60_000];
            Packed::init(&mut region);
            let mut model: Vec<u32> = Vec::new();
            while model.len() < 4000 {
                let key = rng.u32(0..4_000_000);
                let pos = model.partition_point(|&k| k < key);
                match p.insert(&mut region, model.len(), key).unwrap() {
                    Ins::Inserted(s) => {
                        assert_eq!(s, pos);
                        model.insert(pos, key);
                    }
                    Ins::Exists(s) => assert_eq!(s, pos),
                    Ins::NoRoom(need) => panic!("{codec:?}: no room ({need} bytes)"),
                }
            }
            check(&p, &region, &model);
            let fill = block_fill(&p, &region);
            let size = Packed::used(&region).unwrap() as f64 / p.built_len(&model).unwrap() as f64;
            assert!(
                fill >= 0.7,
                "{codec:?}: blocks {fill:.2} full after random inserts"
            );
            assert!(
                size <= 1.3,
                "{codec:?}: {size:.2}x a fresh build after inserts"
            );
            while model.len() > 400 {
                let i = rng.usize(0..model.len());
                assert_eq!(p.remove(&mut region, i).unwrap(), None);
                model.remove(i);
            }
            check(&p, &region, &model);
            // Blocks merged where that is no larger (FOR keeps small blocks of narrow ranges).
            let size = Packed::used(&region).unwrap() as f64 / p.built_len(&model).unwrap() as f64;
            assert!(
                size <= 1.1,
                "{codec:?}: {size:.2}x a fresh build after removes"
            );
        }
    }

    #[test]
    fn ops_match_a_sorted_vec() {
        let seed = std::env::var("SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(7u64);
        eprintln!("SEED={seed}");
        let mut rng = fastrand::Rng::with_seed(seed);
        for codec in CodecId::ALL {
            for block_keys in [4u16, 257] {
                let p = Packed { codec, block_keys };
                let mut region = vec![0xA5u8; 3000];
                Packed::init(&mut region);
                let mut model: Vec<u32> = Vec::new();
                let spread = [3u32, 1000, u32::MAX][rng.usize(0..3)];
                for step in 0..1500 {
                    let op = rng.u8(0..10);
                    if op < 2 && !model.is_empty() {
                        let i = rng.usize(0..model.len());
                        match p.remove(&mut region, i).unwrap() {
                            None => {
                                model.remove(i);
                            }
                            Some(need) => assert!(need > region.len()),
                        }
                    } else {
                        let key = if op < 5 {
                            model
                                .last()
                                .map_or(0, |&l| l.saturating_add(rng.u32(1..=spread.min(99))))
                        } else {
                            rng.u32(0..=spread)
                        };
                        let pos = model.partition_point(|&k| k < key);
                        match p.insert(&mut region, model.len(), key).unwrap() {
                            Ins::Inserted(s) => {
                                assert_eq!(s, pos, "step {step}");
                                assert!(model.get(pos) != Some(&key));
                                model.insert(pos, key);
                            }
                            Ins::Exists(s) => {
                                assert_eq!(s, pos);
                                assert_eq!(model[pos], key);
                            }
                            Ins::NoRoom(need) => {
                                assert!(
                                    need > region.len(),
                                    "NoRoom({need}) but region has {}",
                                    region.len()
                                );
                                let freed = p.vacuumize(&mut region).unwrap();
                                let _ = freed;
                            }
                        }
                    }
                    if step % 97 == 0 {
                        let used = Packed::used(&region).unwrap();
                        region[used..].fill(0x5A);
                        check(&p, &region, &model);
                    }
                    for probe in [rng.u32(0..=spread), model.first().copied().unwrap_or(0)] {
                        let want = model.binary_search(&probe);
                        assert_eq!(
                            p.search(&region, probe).unwrap(),
                            want,
                            "{codec:?} probe {probe}"
                        );
                        assert_eq!(p.contains(&region, probe).unwrap(), want.is_ok());
                    }
                }
                check(&p, &region, &model);
                let used = Packed::used(&region).unwrap();
                p.vacuumize(&mut region).unwrap();
                assert!(Packed::used(&region).unwrap() <= used);
                check(&p, &region, &model);
                assert_eq!(
                    p.built_len(&model).unwrap().min(used),
                    Packed::used(&region).unwrap().min(used)
                );
            }
        }
    }

    #[test]
    fn malformed_regions_fault_without_panic() {
        let p = Packed {
            codec: CodecId::Bp128,
            block_keys: 129,
        };
        let mut rng = fastrand::Rng::with_seed(11);
        let mut region = vec![0u8; 600];
        Packed::init(&mut region);
        let keys: Vec<u32> = (0..300).map(|i| i * 3).collect();
        assert!(p.build(&mut region, &keys).unwrap());
        for _ in 0..3000 {
            let mut r = region.clone();
            for _ in 0..rng.usize(1..4) {
                let i = rng.usize(0..r.len());
                r[i] = rng.u8(..);
            }
            let mut out = Vec::new();
            let _ = p.decode_all(&r, &mut out);
            let _ = p.search(&r, rng.u32(0..1000));
            let _ = p.key(&r, rng.usize(0..400));
            let _ = p.insert(&mut r.clone(), 300, rng.u32(0..1000));
            let _ = p.remove(&mut r.clone(), rng.usize(0..400));
            let _ = p.vacuumize(&mut r.clone());
        }
    }
}
