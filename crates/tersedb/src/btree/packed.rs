//! The compressed KeyList of integer leaves (Upscaledb paper, section 3): a block index followed
//! by codec blocks, all inside the node's KeyList region. u32 keys are coded as they are; u64
//! keys as 32-bit offsets, so every u32 codec serves both: from one base per leaf (the *based*
//! form, while the leaf's keys span at most 2^32 - 1) or from a base per block (the *wide*
//! form), told apart by [`BASED_FLAG`] in the block count.
//!
//! ```text
//! region: [0..2 nblocks u16][2..4 data_end u16][descriptor 0] .. [descriptor nb-1][payload ..]
//! based:  [0..2 nblocks | BASED_FLAG][2..4 data_end][4..12 base u64][descriptors] [payload ..]
//! descriptor (12 bytes; 16 in the wide form):
//!   [0..2 offset u16]  payload offset of the block, relative to the payload area's start
//!   [2..4 count:9 | bits:6 << 9]  keys in the block (start key included), codec bit width
//!   [4..8 first u32]   the block's start key (the codec's start value, kept out of the payload);
//!                      in a based list, first key - base
//!   [8..12 last u32]   the block's last key (the zone map's upper bound, the append fast path);
//!                      in a based list, last key - base
//! wide descriptor (u64 keys spread wider than 2^32 - 1):
//!   [0..4] as above
//!   [4..12 first u64]  the block's first key, also its base: the codec codes key - first
//!   [12..16 last u32]  the block's last key minus its first
//! payload area: starts at header + DESC * nblocks; block b occupies [offset b, offset b+1) and
//!   the last block [offset nb-1, data_end); blocks are tight and in key order
//! ```
//!
//! A block's size is implicit (the next block's offset), so a descriptor costs 12 (16) bytes and
//! every byte after `data_end` is free space of the node. Blocks change by *splicing*: the new
//! encoding of a block (or of several) is built in a buffer and the bytes after it move by the
//! difference. Appending to the last block is done in place with the codec's O(1) append.
//!
//! A codec payload codes its values relative to the block's start value, so one payload serves
//! any base and a u64 list changes form by rewriting descriptors. A list written whole (build,
//! repack, extract) is based at its first key when its keys span at most 2^32 - 1, else wide.
//! An insert outside a based list's frame re-bases it in place (new base: the smallest key)
//! when the keys with the new one still fit 32 bits, and otherwise turns it wide (in a copy:
//! on `NoRoom` nothing changed). A wide block's base is its first key (the codec's start value
//! is 0), every key of it within 2^32 - 1 above; an insert below its first key or too far
//! above it, and a remove of its first key, re-encode the block (cut into several where the
//! keys span more than 32 bits).
//!
//! A block whose last key is removed stays in the index as an empty *gap* (count 0, first = last
//! = the removed key, so the index stays ordered) until [`Packed::vacuumize`] repacks the list;
//! an insert that lands in a gap refills it. Every read is bounds-checked; a malformed region
//! gives a [`Fault`], never a panic.

use super::slots::{
    le_u16, le_u16_at, le_u32, le_u32_at, le_u64, le_u64_at, put, Fault, Repack, SResult,
};
use super::zone::{BlockKeys, FoldSpec, KeyBuffer, KeyFold, ScanBlock};
use super::Key;
use std::ops::Range;
use tersedb_codecs::sum::{BlockSum, RunBlock, RunTotal};
use tersedb_codecs::{
    AppendOutcome, BlockCodec, Codec, CodecError, CodecId, Descriptor, InsertOutcome, RemoveOutcome,
};

/// Bytes of the KeyList header (block count, payload end).
pub const HEADER: usize = 4;
/// Bytes of a based list's header: the block count (with [`BASED_FLAG`]), payload end, base.
pub const HEADER_BASED: usize = 12;
/// Set in the block count of a u64 list in the based form. Block counts stay far below it
/// (a 64 KiB page holds fewer than 5,500 descriptors), so lists written before the based
/// form, which never set it, read as the wide form they are.
pub const BASED_FLAG: u16 = 0x8000;
/// Bytes of one block descriptor of a u32 list.
pub const DESC: usize = 12;
/// Bytes of one block descriptor of a wide (u64) list.
pub const DESC_WIDE: usize = 16;
/// Most keys a block of any codec may hold, start key included (Rice's limit; each block is
/// held to its own codec's, [`Packed::cap`]).
pub const MAX_BLOCK_KEYS: usize = super::zone::MAX_KEYS;
/// Most keys of a StreamVByte, VarIntGB or Masked VByte block (their lookups decode into a
/// stack buffer of this many).
const BYTE_CODEC_KEYS: usize = <tersedb_codecs::streamvbyte::StreamVByte as BlockCodec>::MAX_KEYS;
/// Room for one block's payload: the worst case of every codec at its own key limit (Rice's
/// 33 bits per gap at 511 keys, 2,104 bytes; VByte's 5 bytes per delta at 257, 1,280).
const SCRATCH: usize = 2104;

/// The descriptors' key counts do not add up to the node's.
const COUNTS_DISAGREE: Fault = Fault("block index key counts disagree with the node's");

/// Maps a codec error to a fault (the node layer names the page).
fn cfault(e: CodecError) -> Fault {
    match e {
        CodecError::Corrupt { what } | CodecError::InvalidInput { what } => Fault(what),
        CodecError::NoRoom { .. } => Fault("compressed block does not fit its buffer"),
        _ => Fault("codec error"),
    }
}

/// The bytes `at` of `region`: a block's payload, whose range [`block_at`] checked against the
/// payload area (a fault for a range past the region all the same).
#[inline(always)]
fn bytes_at<'a>(region: &'a [u8], at: &Range<usize>) -> SResult<&'a [u8]> {
    region
        .get(at.clone())
        .ok_or(Fault("compressed block outside its region"))
}

/// `s[..n]`, or a fault when a decoded count exceeds the buffer.
#[inline(always)]
fn head<T>(s: &[T], n: usize) -> SResult<&[T]> {
    s.get(..n)
        .ok_or(Fault("compressed block count beyond its buffer"))
}

/// `s[r]` for writing, or a fault when it lies past the buffer.
#[inline(always)]
fn part_mut<T>(s: &mut [T], r: Range<usize>) -> SResult<&mut [T]> {
    s.get_mut(r)
        .ok_or(Fault("compressed block count beyond its buffer"))
}

/// Whether `keys` ascend strictly.
#[inline]
fn ascending(keys: &[u64]) -> bool {
    keys.iter().zip(keys.iter().skip(1)).all(|(a, b)| a < b)
}

/// A compressed KeyList: the codec, the most keys per block, and the key width.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Packed {
    /// The codec of every block; with `auto`, the codec whose block limit applies.
    pub codec: CodecId,
    /// Most keys per block, start key included (`2..=codec max`).
    pub block_keys: u16,
    /// u64 keys (offsets from a 64-bit base per block); u32 keys otherwise.
    pub wide: bool,
    /// Each block's codec is chosen when it is encoded (the smallest of [`AUTO_CODECS`]) and
    /// recorded in one more descriptor byte.
    pub auto: bool,
}

/// The candidates of `auto`, fastest decoder first: a later (slower) codec wins a block only
/// when it saves at least a tenth of the bytes of the best faster one.
pub const AUTO_CODECS: [CodecId; 5] = [
    CodecId::Bp128,
    CodecId::SimdFor,
    CodecId::StreamVByte,
    CodecId::For,
    CodecId::PforDelta,
];

/// Outcome of [`Packed::insert`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ins {
    Inserted(usize),
    Exists(usize),
    /// The list would need this many bytes in total; nothing changed.
    NoRoom(usize),
}

/// A key-only lookup's answer ([`Packed::lookup`], `KeyList::lookup`): present, or absent
/// with the list's first and last keys (`None`: an empty list, or one of byte strings).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lookup {
    Hit,
    Miss(Option<(u64, u64)>),
}

/// One block as read from the index.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Block {
    /// Descriptor in the codec's terms, values relative to `base` (all zero for a gap).
    pub desc: Descriptor,
    /// The payload's byte range within the region.
    pub at: Range<usize>,
    /// First and last key (kept for a gap, for ordering).
    pub first: u64,
    pub last: u64,
    /// What the codec's values are added to (0 in a u32 list).
    pub base: u64,
    /// The block's codec.
    pub codec: CodecId,
}

/// A block to write: its descriptor (values relative to `base`), base, codec and payload.
type NewBlock<'a> = (Descriptor, u64, CodecId, &'a [u8]);

#[derive(Clone, Copy, Debug)]
struct Hdr {
    nb: usize,
    data_end: usize,
    /// Descriptor length (12 or 16, one more with a codec byte per block).
    dl: usize,
    /// Header length: [`HEADER`], or [`HEADER_BASED`] for a based list.
    hs: usize,
    /// 16-byte descriptors (a u64 list in the wide form).
    wide: bool,
    /// What every descriptor's first and last are offsets from: the leaf's base in a based
    /// list, 0 in a u32 list and in the wide form (whose descriptors hold their own base).
    base: u64,
    /// The list's codec, or `None` when each descriptor ends with its block's codec id.
    codec: Option<CodecId>,
}

impl Hdr {
    #[inline]
    fn pstart(&self) -> usize {
        self.hs + self.dl * self.nb
    }
    #[inline]
    fn used(&self) -> usize {
        self.pstart() + self.data_end
    }
    #[inline(always)]
    fn wide(&self) -> bool {
        self.wide
    }
    /// A u64 list in the based form (a leaf base in the header, 12-byte descriptors).
    #[inline(always)]
    fn based(&self) -> bool {
        self.hs != HEADER
    }

    /// This header with the list's layout as constants (`W`: wide form, `B`: based form, `A`:
    /// auto), so that the descriptor reads of a hot path compile without layout branches (and
    /// a u32 list's zero base folds away).
    #[inline(always)]
    fn fixed<const W: bool, const B: bool, const A: bool>(self) -> Hdr {
        Hdr {
            dl: if W { DESC_WIDE } else { DESC } + usize::from(A),
            hs: if B { HEADER_BASED } else { HEADER },
            wide: W,
            base: if B { self.base } else { 0 },
            codec: if A { None } else { self.codec },
            ..self
        }
    }
}

#[inline(always)]
fn write_hdr(region: &mut [u8], h: Hdr) {
    let flag = if h.based() { BASED_FLAG } else { 0 };
    put(region, 0, &(h.nb as u16 | flag).to_le_bytes());
    put(region, 2, &(h.data_end as u16).to_le_bytes());
    if h.based() {
        put(region, HEADER, &h.base.to_le_bytes());
    }
}

#[inline(always)]
fn d_off(region: &[u8], h: Hdr, b: usize) -> usize {
    le_u16_at(region, h.hs + h.dl * b) as usize
}

#[inline(always)]
fn d_count(region: &[u8], h: Hdr, b: usize) -> usize {
    (le_u16_at(region, h.hs + h.dl * b + 2) & 0x1ff) as usize
}

/// What block `b`'s codec values are added to: its own first key in the wide form, the list's
/// base otherwise.
#[inline(always)]
fn d_base(region: &[u8], h: Hdr, b: usize) -> u64 {
    if h.wide() {
        le_u64_at(region, h.hs + h.dl * b + 4)
    } else {
        h.base
    }
}

/// The codec's start and last values of block `b`.
#[inline(always)]
fn d_vals(region: &[u8], h: Hdr, b: usize) -> (u32, u32) {
    let at = h.hs + h.dl * b;
    if h.wide() {
        (0, le_u32_at(region, at + 12))
    } else {
        (le_u32_at(region, at + 4), le_u32_at(region, at + 8))
    }
}

/// First key of block `b` (key space).
#[inline(always)]
fn d_first(region: &[u8], h: Hdr, b: usize) -> u64 {
    if h.wide() {
        d_base(region, h, b)
    } else {
        h.base
            .wrapping_add(le_u32_at(region, h.hs + h.dl * b + 4) as u64)
    }
}

/// Last key of block `b` (key space).
#[inline(always)]
fn d_last(region: &[u8], h: Hdr, b: usize) -> u64 {
    d_base(region, h, b).wrapping_add(d_vals(region, h, b).1 as u64)
}

/// The codec of block `b`.
#[inline(always)]
fn d_codec(region: &[u8], h: Hdr, b: usize) -> SResult<CodecId> {
    match h.codec {
        Some(c) => Ok(c),
        None => region
            .get(h.hs + h.dl * (b + 1) - 1)
            .and_then(|&c| CodecId::from_u8(c))
            .ok_or(Fault("unknown codec id in a block descriptor")),
    }
}

/// Whether a block whose codec values `d` are relative to `base` lies in the frame of a based
/// list (`[h.base, h.base + 2^32 - 1]`); always true for the other forms.
#[inline]
fn in_frame(h: Hdr, d: &Descriptor, base: u64) -> bool {
    if !h.based() {
        return true;
    }
    let (first, last) = (
        base.wrapping_add(d.start as u64),
        base.wrapping_add(d.last as u64),
    );
    first >= h.base && last >= first && last - h.base <= u32::MAX as u64
}

/// Writes descriptor `b` of a block whose codec values `d` are relative to `base`. Codec
/// payloads code every value relative to the block's start value, so the same payload serves
/// any base: the wide form stores the first key (`base + d.start`) and a start value of 0, a
/// based list values relative to its base (the block lies in its frame: [`in_frame`]), a u32
/// list the values (`base` is 0).
fn write_desc(
    region: &mut [u8],
    h: Hdr,
    b: usize,
    off: usize,
    d: &Descriptor,
    base: u64,
    codec: CodecId,
) {
    let at = h.hs + h.dl * b;
    if h.codec.is_none() {
        put(region, at + h.dl - 1, &[codec as u8]);
    }
    let cb = (d.count as u16 & 0x1ff) | ((d.bits as u16 & 0x3f) << 9);
    put(region, at, &(off as u16).to_le_bytes());
    put(region, at + 2, &cb.to_le_bytes());
    if h.wide() {
        let first = base.wrapping_add(d.start as u64);
        put(region, at + 4, &first.to_le_bytes());
        put(region, at + 12, &d.last.wrapping_sub(d.start).to_le_bytes());
    } else {
        let shift = base.wrapping_sub(h.base);
        let (s, l) = (
            shift.wrapping_add(d.start as u64) as u32,
            shift.wrapping_add(d.last as u64) as u32,
        );
        put(region, at + 4, &s.to_le_bytes());
        put(region, at + 8, &l.to_le_bytes());
    }
}

/// [`write_desc`] after an append in place: only the count, the width and the last key
/// change (the offset, the first key and the codec stay).
#[inline(always)]
fn write_desc_appended(region: &mut [u8], h: Hdr, b: usize, d: &Descriptor, base: u64) {
    let at = h.hs + h.dl * b;
    let cb = (d.count as u16 & 0x1ff) | ((d.bits as u16 & 0x3f) << 9);
    put(region, at + 2, &cb.to_le_bytes());
    if h.wide() {
        put(region, at + 12, &d.last.wrapping_sub(d.start).to_le_bytes());
    } else {
        let l = base.wrapping_sub(h.base).wrapping_add(d.last as u64) as u32;
        put(region, at + 8, &l.to_le_bytes());
    }
}

/// A descriptor's first 12 bytes as its fields: payload offset, count and width bits, and the
/// two 32-bit words (first and last key, or a wide block's base). Each field as one
/// little-endian load (an array destructured into bytes was read byte by byte and shifted
/// together: ~10 instructions per block in the SUM loop).
#[inline(always)]
fn desc_fields(d: &[u8; 12]) -> (u16, u16, u32, u32) {
    (
        le_u16_at(d, 0),
        le_u16_at(d, 2),
        le_u32_at(d, 4),
        le_u32_at(d, 8),
    )
}

/// Block `b` of a list with header `h` (`b < h.nb`). Always inlined: returned through memory,
/// the block was stored in 4- and 8-byte pieces and read back in 16-byte ones, a
/// store-forwarding stall per block that was a quarter of a full BP128 SUM.
#[inline(always)]
fn block_at(region: &[u8], h: Hdr, b: usize) -> SResult<Block> {
    // The descriptor as one fixed-size chunk and the next one's offset: one bounds check
    // each (a checked read per field cost the scan paths ~5% of their instructions).
    let at = h.hs + h.dl * b;
    let Some(d) = region.get(at..).and_then(|d| d.first_chunk::<12>()) else {
        return Err(Fault("compressed key list longer than its region"));
    };
    let (o, cb, v, w) = desc_fields(d);
    let off = usize::from(o);
    let end = if b + 1 < h.nb {
        le_u16_at(region, at + h.dl) as usize
    } else {
        h.data_end
    };
    if off > end || end > h.data_end {
        return Err(Fault("compressed block offsets out of order"));
    }
    let count = (cb & 0x1ff) as u32;
    let (base, start, last) = if h.wide() {
        (
            u64::from(v) | u64::from(w) << 32,
            0,
            le_u32_at(region, at + 12),
        )
    } else {
        (h.base, v, w)
    };
    let (kfirst, klast) = (
        base.checked_add(start as u64),
        base.checked_add(last as u64),
    );
    let (Some(kfirst), Some(klast)) = (kfirst, klast) else {
        return Err(Fault("compressed block keys beyond the key range"));
    };
    let ps = h.pstart();
    let codec = d_codec(region, h, b)?;
    let desc = if count == 0 {
        if off != end {
            return Err(Fault("empty compressed block with a payload"));
        }
        Descriptor::default()
    } else {
        Descriptor {
            start,
            count,
            last,
            size: (end - off) as u32,
            bits: (cb >> 9) as u8,
        }
    };
    Ok(Block {
        desc,
        at: ps + off..ps + end,
        first: kfirst,
        last: klast,
        base,
        codec,
    })
}

/// The block a key belongs to: the last one whose first key is `<= key` (0 when none is).
/// First keys are searched like a plain integer list: an interpolation guess, galloping, then
/// binary search (dense or clustered keys touch one or two descriptors, not ~10).
#[inline(always)]
fn find_block(region: &[u8], h: Hdr, key: u64) -> usize {
    let auto = h.codec.is_none();
    match (h.wide, h.based(), auto) {
        (false, false, false) => find_block_fixed::<false, false, false>(region, h.nb, 0, key),
        (false, true, false) => find_block_fixed::<false, true, false>(region, h.nb, h.base, key),
        (true, _, false) => find_block_fixed::<true, false, false>(region, h.nb, 0, key),
        (false, false, true) => find_block_fixed::<false, false, true>(region, h.nb, 0, key),
        (false, true, true) => find_block_fixed::<false, true, true>(region, h.nb, h.base, key),
        (true, _, true) => find_block_fixed::<true, false, true>(region, h.nb, 0, key),
    }
}

/// [`find_block`] for a list whose layout is known at compile time (`W` wide, `B` based, `A`
/// auto): the search calls the probe out of line, so the probe computes the descriptor offsets
/// from the constants itself rather than from a captured header (a u32 list's base is the
/// constant 0). A lookup in a u32 list costs what it cost before the based form.
#[inline(always)]
fn find_block_fixed<const W: bool, const B: bool, const A: bool>(
    region: &[u8],
    nb: usize,
    base: u64,
    key: u64,
) -> usize {
    let first = move |i: usize| -> u64 {
        let hs = if B { HEADER_BASED } else { HEADER };
        let dl = if W { DESC_WIDE } else { DESC } + usize::from(A);
        let at = hs + dl * i + 4;
        if W {
            le_u64_at(region, at)
        } else if B {
            base.wrapping_add(le_u32_at(region, at) as u64)
        } else {
            le_u32_at(region, at) as u64
        }
    };
    let mut b = match super::slots::search_int(nb, first, key, None) {
        Ok(i) => i,
        Err(i) => i.saturating_sub(1),
    };
    // First keys only repeat in a damaged or gap-heavy index: keep "the last such block".
    while b + 1 < nb && first(b + 1) <= key {
        b += 1;
    }
    b
}

/// What a read relies on in a block it decoded, checked against the descriptor it was decoded
/// with: as many values as the descriptor counts, from its start to its last value, strictly
/// ascending. A page whose checksum was forged after damage then gives a fault, never keys out
/// of order or outside the block's zone map entry. One branch-free pass (it vectorises): a few
/// percent of a decode. Not inlined: it runs once per decoded block, and the cursor's cache
/// fill, which every cursor step passes through, stays small.
#[inline(never)]
fn check_decoded(d: &Descriptor, vals: &[u32]) -> SResult<()> {
    let Some((&first, rest)) = vals.split_first() else {
        return if d.count == 0 {
            Ok(())
        } else {
            Err(Fault("compressed block decodes to a different key count"))
        };
    };
    let last = rest.last().copied().unwrap_or(first);
    // A word accumulator, not a bool, so that the loop vectorises.
    let mut unordered = 0u32;
    for (a, b) in vals.iter().zip(rest) {
        unordered |= u32::from(b <= a);
    }
    if vals.len() != d.count as usize || first != d.start || last != d.last || unordered != 0 {
        return Err(Fault(
            "compressed block decodes to keys other than its descriptor's",
        ));
    }
    Ok(())
}

/// Proves the order a search of the index relies on, over every descriptor: each non-empty
/// block's first key is at most its last and above the previous non-empty block's last; a gap
/// (count 0) has first = last and lies between its neighbours (not below what came before);
/// payload offsets ascend within the payload area; the key counts add up to the node's `n`.
/// Then first keys never descend, so [`find_block`] finds the block a key belongs to, and
/// no key sits in a block the search does not look at.
///
/// A walk over the descriptors (a few instructions per block), so it is taken where a read
/// relies on blocks it does not look at (a miss, a range's start and end, a whole-leaf fold's
/// edges, a cursor entering the leaf), never by a hit: the key found is the probe.
#[inline(never)]
fn prove_order(region: &[u8], h: Hdr, n: usize) -> SResult<usize> {
    match (h.wide, h.based(), h.codec.is_none()) {
        (false, false, false) => prove_order_fixed::<false, false, false>(region, h, n),
        (false, true, false) => prove_order_fixed::<false, true, false>(region, h, n),
        (true, _, false) => prove_order_fixed::<true, false, false>(region, h, n),
        (false, false, true) => prove_order_fixed::<false, false, true>(region, h, n),
        (false, true, true) => prove_order_fixed::<false, true, true>(region, h, n),
        (true, _, true) => prove_order_fixed::<true, false, true>(region, h, n),
    }
}

/// The key limits of `auto`'s candidate codecs: the fewest, which every block of an `auto`
/// list is written to fit ([`Packed::cap`]), and the most, beyond which no block of one is read
/// ([`prove_order`]).
fn auto_key_limits() -> (usize, usize) {
    AUTO_CODECS
        .iter()
        .map(|&c| Codec(c).max_keys())
        .fold((usize::MAX, 0), |(fewest, most), m| {
            (fewest.min(m), most.max(m))
        })
}

/// [`prove_order`] for a layout known at compile time: each descriptor is read as one chunk
/// of its constant length and every condition is or-ed into one flag (no branch per block),
/// so the walk costs a few instructions per block (callgrind: 24.7k instructions per call
/// on 16 KiB BP128 leaves with runtime layout reads and a branch per condition).
#[inline(always)]
fn prove_order_fixed<const W: bool, const B: bool, const A: bool>(
    region: &[u8],
    h: Hdr,
    n: usize,
) -> SResult<usize> {
    let h = h.fixed::<W, B, A>();
    let dl = if W { DESC_WIDE } else { DESC } + usize::from(A);
    let descs = region
        .get(h.hs..h.hs + dl * h.nb)
        .ok_or(Fault("compressed key list longer than its region"))?;
    // The most keys a block of the list's codec holds (of any `auto` candidate): the 9-bit
    // count field reaches 511, Rice's limit, and a COUNT over whole blocks trusts the counts.
    let most = h
        .codec
        .map_or_else(|| auto_key_limits().1, |c| Codec(c).max_keys());
    // `floor`: the least first key the next block may have (above a non-empty block's last
    // key, at least a gap's key).
    let (mut floor, mut off, mut keys, mut blocks, mut bad) = (0u64, 0usize, 0usize, 0, false);
    let mut over = false;
    for d in descs.chunks_exact(dl) {
        let (o, count, first, last) = if W {
            let Some(d) = d.first_chunk::<DESC_WIDE>() else {
                return Err(Fault("compressed key list longer than its region"));
            };
            let first = u64::from_le_bytes([d[4], d[5], d[6], d[7], d[8], d[9], d[10], d[11]]);
            let delta = u32::from_le_bytes([d[12], d[13], d[14], d[15]]);
            (
                u16::from_le_bytes([d[0], d[1]]),
                u16::from_le_bytes([d[2], d[3]]),
                first,
                first.wrapping_add(u64::from(delta)),
            )
        } else {
            let Some(d) = d.first_chunk::<DESC>() else {
                return Err(Fault("compressed key list longer than its region"));
            };
            let v1 = u32::from_le_bytes([d[4], d[5], d[6], d[7]]);
            let v2 = u32::from_le_bytes([d[8], d[9], d[10], d[11]]);
            (
                u16::from_le_bytes([d[0], d[1]]),
                u16::from_le_bytes([d[2], d[3]]),
                h.base.wrapping_add(u64::from(v1)),
                h.base.wrapping_add(u64::from(v2)),
            )
        };
        let (o, count) = (usize::from(o), usize::from(count & 0x1ff));
        let full = count > 0;
        // `|`, not `||`: one flag, no branch per block.
        bad |= (first < floor) | (first > last) | (!full & (first != last)) | (o < off);
        over |= count > most;
        floor = if full { last.saturating_add(1) } else { last };
        off = o;
        keys += count;
        blocks += usize::from(full);
    }
    if bad || off > h.data_end {
        return Err(Fault("compressed block index out of key order"));
    }
    if over {
        return Err(Fault(
            "compressed block holds more keys than its codec allows",
        ));
    }
    if keys != n {
        return Err(COUNTS_DISAGREE);
    }
    Ok(blocks)
}

/// Sum of the key counts of every block: the count fields read straight from the descriptor
/// area (half the instructions of a [`slot_base`] over all blocks); 0 when the index lies
/// past the region, which [`Packed::hdr`] refuses.
#[inline]
fn count_all(region: &[u8], h: Hdr) -> usize {
    count_sum(region.get(h.hs..h.pstart()).unwrap_or_default(), h.dl)
}

/// Sum of the key counts of the descriptors in `descs` (whole descriptors of `dl` bytes).
#[inline]
fn count_sum(descs: &[u8], dl: usize) -> usize {
    // The descriptor length as a constant: fixed-size arrays, no bounds check per block
    // (callgrind: 3.7k instructions per 16 KiB BP128 leaf with a checked chunk per block).
    // The count as bits 16..25 of one 4-byte load (two byte loads, a mask and a shift per
    // block before), four blocks at a time into four sums: a lookup in a leaf of compressed
    // records (~140 blocks) spent ~560 instructions here (`examples/series_c`).
    fn sum<const DL: usize>(descs: &[u8]) -> usize {
        #[inline(always)]
        fn count<const DL: usize>(d: &[u8; DL]) -> u32 {
            d.first_chunk::<4>()
                .map_or(0, |b| (u32::from_le_bytes(*b) >> 16) & 0x1ff)
        }
        let (blocks, _) = descs.as_chunks::<DL>();
        let (quads, rest) = blocks.as_chunks::<4>();
        let mut s = [0u32; 4];
        for [a, b, c, d] in quads {
            s[0] += count(a);
            s[1] += count(b);
            s[2] += count(c);
            s[3] += count(d);
        }
        let tail: u32 = rest.iter().map(count).sum();
        (s.iter().sum::<u32>() + tail) as usize
    }
    match dl {
        DESC => sum::<DESC>(descs),
        13 => sum::<13>(descs),
        DESC_WIDE => sum::<DESC_WIDE>(descs),
        _ => sum::<17>(descs),
    }
}

/// The sum of a block's codec values for a codec (or block) without a block sum: decoded
/// (SIMD, prefix sum fused) into an L1-resident buffer and added up. Unchecked, as folds
/// decode: they return no keys. Out of line, with its buffer: inlined into the run loop it
/// cost the BP128 blocks' sums 6% more instructions (spills).
#[inline(never)]
fn decoded_sum(codec: CodecId, d: Descriptor, payload: &[u8]) -> SResult<u64> {
    let mut buf = [0u32; MAX_BLOCK_KEYS];
    let n = Codec(codec).decode(&d, payload, &mut buf).map_err(cfault)?;
    Ok(tersedb_codecs::sum::sum_u32(head(&buf, n)?))
}

/// What [`Packed::sum_blocks`] adds up over a run of blocks.
#[derive(Clone, Copy, Debug)]
struct RunSum {
    keys: u64,
    sum: u128,
    blocks: u64,
    /// The last key of the run's last non-empty block.
    last: u64,
    /// The first block not summed (past the run's end), or the list's block count.
    end: usize,
}

/// The walk of [`Packed::sum_blocks`] over a run's descriptors: each non-empty block from the
/// run's start on whose keys are all at most `hi`, with its payload. Its cursor is the
/// descriptors not yet read (kept in registers by the loops). For one layout
/// ([`Hdr::fixed`]): its constants stay constants in a codec's own loop.
struct SumWalk<'r, const W: bool, const B: bool, const A: bool> {
    h: Hdr,
    /// The list's payload area (from the first block's payload to the region's end).
    payloads: &'r [u8],
    hi: u64,
}

impl<'r, const W: bool, const B: bool, const A: bool> SumWalk<'r, W, B, A> {
    /// The walk and its cursor at block `start`.
    #[inline(always)]
    fn new(region: &'r [u8], h: Hdr, (start, hi): (usize, u64)) -> SResult<(Self, &'r [u8])> {
        let h = h.fixed::<W, B, A>();
        let descs = region
            .get(h.hs..h.pstart())
            .ok_or(Fault("compressed key list longer than its region"))?;
        let at = descs
            .get(h.dl * start..)
            .ok_or(Fault("block range out of range"))?;
        let payloads = region
            .get(h.pstart()..)
            .ok_or(Fault("compressed key list longer than its region"))?;
        Ok((SumWalk { h, payloads, hi }, at))
    }

    /// The block the cursor `at` stands at (the list's block count at its end).
    #[inline(always)]
    fn block(&self, at: &[u8]) -> usize {
        self.h.nb - at.len() / self.h.dl
    }

    /// The run's totals and the block it stopped at.
    #[inline(always)]
    fn finish(&self, region: &[u8], start: usize, t: RunTotal, at: &[u8]) -> RunSum {
        let (h, stop) = (self.h, self.block(at));
        // The last key read from the index after the loop (tracked in it, it was one more
        // value spilled around the kernel's call on every block).
        let last = (start..stop)
            .rev()
            .find(|&b| d_count(region, h, b) > 0)
            .map_or(0, |b| d_last(region, h, b));
        RunSum {
            keys: t.keys,
            sum: t.sum,
            blocks: t.blocks,
            last,
            end: stop,
        }
    }
}

impl<'r, const W: bool, const B: bool, const A: bool> SumWalk<'r, W, B, A> {
    /// The block at the cursor `at`, `at` moved past it; `None` at the run's end (the index's
    /// or the first block with a key above `hi`).
    /// The descriptor fields read directly (`block_at`'s checks and empty-block handling cost
    /// as much as the BP128 kernel here), each descriptor as one fixed-size chunk (a checked
    /// read per field cost 10M instructions more over `bench --queries`' folds); the block's
    /// end is the next descriptor's offset, or the payload's end after the last; an offset out
    /// of order fails the `get`.
    #[inline(always)]
    fn next(&self, at: &mut &'r [u8]) -> SResult<Option<RunBlock<'r>>> {
        let h = self.h.fixed::<W, B, A>();
        loop {
            let (Some(chunk), Some(rest)) = (at.get(..h.dl), at.get(h.dl..)) else {
                return Ok(None);
            };
            let Some(d) = chunk.first_chunk::<12>() else {
                return Err(Fault("compressed key list longer than its region"));
            };
            let (o, cb, v, w) = desc_fields(d);
            let count = (cb & 0x1ff) as u32;
            if count == 0 {
                *at = rest;
                continue;
            }
            let end = rest
                .first_chunk::<2>()
                .map_or(h.data_end, |&o| usize::from(u16::from_le_bytes(o)));
            let payload = self
                .payloads
                .get(usize::from(o)..end)
                .ok_or(Fault("compressed block offsets out of order"))?;
            let (base, start, last) = if h.wide {
                let Some(&[.., l0, l1, l2, l3]) = chunk.first_chunk::<DESC_WIDE>() else {
                    return Err(Fault("compressed key list longer than its region"));
                };
                let base = u64::from(v) | u64::from(w) << 32;
                (base, 0, u32::from_le_bytes([l0, l1, l2, l3]))
            } else {
                (h.base, v, w)
            };
            if base.wrapping_add(last as u64) > self.hi {
                return Ok(None);
            }
            *at = rest;
            let desc = Descriptor {
                start,
                count,
                last,
                size: payload.len() as u32,
                bits: (cb >> 9) as u8,
            };
            return Ok(Some(RunBlock {
                desc,
                payload,
                base,
            }));
        }
    }
}

/// A run of one codec's blocks for its block sums' own loop ([`BlockSum::run`]).
struct OneCodec<'w, 'r, const W: bool, const B: bool, const A: bool>(
    &'w SumWalk<'r, W, B, A>,
    CodecId,
);

impl<'r, const W: bool, const B: bool, const A: bool> tersedb_codecs::sum::BlockRun<'r>
    for OneCodec<'_, 'r, W, B, A>
{
    type Error = Fault;
    type Cursor = &'r [u8];
    #[inline(always)]
    fn next(&self, at: &mut &'r [u8]) -> SResult<Option<RunBlock<'r>>> {
        self.0.next(at)
    }
    /// Out of line (inlined, the decode's buffer and call cost the BP128 sums 6% more
    /// instructions).
    #[inline(never)]
    fn decline(&self, d: Descriptor, payload: &[u8]) -> SResult<u64> {
        decoded_sum(self.1, d, payload)
    }
}

/// Sum of the key counts of blocks `0..b`: a record lookup's slot walks half the index on
/// average, so the counts are read as [`count_all`] reads them (a checked read per block
/// took ~490 instructions per lookup in leaves of compressed records, `examples/record_reads`).
#[inline]
fn slot_base(region: &[u8], h: Hdr, b: usize) -> usize {
    let end = h.hs + h.dl * b.min(h.nb);
    count_sum(region.get(h.hs..end).unwrap_or_default(), h.dl)
}

/// Replaces blocks `b..b + r` by `new` (descriptor, base, payload bytes), moving the rest.
/// Returns false, changing nothing, when the result would not fit the region.
fn splice(region: &mut [u8], h: Hdr, b: usize, r: usize, new: &[NewBlock<'_>]) -> SResult<bool> {
    if b + r > h.nb {
        return Err(Fault("block range out of range"));
    }
    if h.based() && !new.iter().all(|(d, base, _, _)| in_frame(h, d, *base)) {
        return Err(Fault("compressed block outside its leaf's frame"));
    }
    if let ([(d, base, codec, bytes)], 1) = (new, r) {
        // One block rewritten at its own size (an insert into a BP128 block that kept its bit
        // width): nothing moves, no later offset changes. Moving the tail onto itself and
        // checking and rewriting every later descriptor was 12% of a random BP128 load.
        let blk = block_at(region, h, b)?;
        if blk.at.len() == bytes.len() {
            write_desc(region, h, b, blk.at.start - h.pstart(), d, *base, *codec);
            put(region, blk.at.start, bytes);
            return Ok(true);
        }
    }
    // The offsets that move must be in order (a corrupt index must not make them wrap).
    let mut prev = if b < h.nb {
        d_off(region, h, b)
    } else {
        h.data_end
    };
    for j in b..h.nb {
        let o = d_off(region, h, j);
        if o < prev || o > h.data_end {
            return Err(Fault("compressed block offsets out of order"));
        }
        prev = o;
    }
    let k = new.len();
    let nb_new = h.nb - r + k;
    let (po, pn) = (h.pstart(), h.hs + h.dl * nb_new);
    let o0 = if b < h.nb {
        d_off(region, h, b)
    } else {
        h.data_end
    };
    let o1 = if b + r < h.nb {
        d_off(region, h, b + r)
    } else {
        h.data_end
    };
    let ns: usize = new.iter().map(|n| n.3.len()).sum();
    let data_end = h.data_end - (o1 - o0) + ns;
    if pn + data_end > region.len() || data_end > u16::MAX as usize || nb_new >= BASED_FLAG as usize
    {
        return Ok(false);
    }
    let grow_desc = nb_new > h.nb;
    let move_descs = |region: &mut [u8]| {
        let (from, to) = (h.hs + h.dl * (b + r), h.hs + h.dl * (b + k));
        region.copy_within(from..h.hs + h.dl * h.nb, to);
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
    let hn = Hdr {
        nb: nb_new,
        data_end,
        ..h
    };
    let mut off = o0;
    for (i, (d, base, codec, bytes)) in new.iter().enumerate() {
        write_desc(region, hn, b + i, off, d, *base, *codec);
        put(region, pn + off, bytes);
        off += bytes.len();
    }
    // Later blocks moved by ns - (o1 - o0).
    for j in b + k..nb_new {
        let at = h.hs + h.dl * j;
        let o = le_u16_at(region, at) as usize + ns - (o1 - o0);
        put(region, at, &(o as u16).to_le_bytes());
    }
    write_hdr(region, hn);
    Ok(true)
}

/// Blocks encoded into one buffer: descriptor, base and the payload's range in the buffer.
struct Encoded {
    bytes: Vec<u8>,
    blocks: Vec<(Descriptor, u64, CodecId, Range<usize>)>,
}

/// The codec's input values and output buffer for one block, zeroed once per thread: a random
/// load encodes a block every few inserts, and zeroing 2.4 KB each time was 3% of its
/// instructions (callgrind, `examples/packed_ops`).
struct Scratch {
    offs: [u32; MAX_BLOCK_KEYS],
    out: [u8; SCRATCH],
    /// `auto`'s second output: the best candidate so far stays in one buffer while the next
    /// encodes into the other.
    alt: [u8; SCRATCH],
}

thread_local! {
    static SCRATCH_BUF: std::cell::RefCell<Box<Scratch>> = std::cell::RefCell::new(Box::new(Scratch {
        offs: [0; MAX_BLOCK_KEYS],
        out: [0; SCRATCH],
        alt: [0; SCRATCH],
    }));
}

/// Buffers of one insert that splits or shares a block, kept per thread: zeroing them on the
/// stack for every such insert (about 7 KB) was 5% of the instructions of a random BP128 load
/// (callgrind, `examples/space`).
struct Work {
    /// The codec's values of one block.
    vals: [u32; MAX_BLOCK_KEYS],
    /// A full block's keys with the new one.
    keys: [u64; MAX_BLOCK_KEYS + 1],
    /// Those and a neighbouring block's keys.
    all: [u64; 2 * MAX_BLOCK_KEYS + 1],
    /// One block's payload, for the codec's insert.
    buf: [u8; SCRATCH],
}

thread_local! {
    static WORK: std::cell::RefCell<Box<Work>> = std::cell::RefCell::new(Box::new(Work {
        vals: [0; MAX_BLOCK_KEYS],
        keys: [0; MAX_BLOCK_KEYS + 1],
        all: [0; 2 * MAX_BLOCK_KEYS + 1],
        buf: [0; SCRATCH],
    }));
}

/// Where a block of `keys` might better be cut in two: before the key after its widest gap,
/// when that gap is at least 4 bits wider than every other (deltas) or the block's span without
/// it is at least 4 bits narrower (offsets). `None` for blocks without such an outlier.
fn outlier_cut(keys: &[u64]) -> Option<usize> {
    let bw = |x: u64| 64 - x.leading_zeros();
    let (mut g, mut m, mut g2) = (0u64, 0usize, 0u64);
    for (i, (a, b)) in keys.iter().zip(keys.iter().skip(1)).enumerate() {
        let d = b.wrapping_sub(*a);
        if d > g {
            (g2, g, m) = (g, d, i + 1);
        } else if d > g2 {
            g2 = d;
        }
    }
    let span = keys.last()?.wrapping_sub(*keys.first()?);
    (m > 0 && (bw(g) >= bw(g2) + 4 || bw(span) >= bw(span.saturating_sub(g)) + 4)).then_some(m)
}

impl Encoded {
    /// Room for about `parts` blocks.
    fn with_parts(parts: usize) -> Encoded {
        Encoded {
            bytes: Vec::with_capacity(parts * 512),
            blocks: Vec::with_capacity(parts),
        }
    }
    fn new_blocks(&self) -> Vec<NewBlock<'_>> {
        self.blocks
            .iter()
            .map(|(d, base, c, r)| (*d, *base, *c, self.bytes.get(r.clone()).unwrap_or_default()))
            .collect()
    }
    fn payload(&self) -> usize {
        self.bytes.len()
    }
}

impl Packed {
    /// The KeyList id stored in a node header: 16 + codec id (u32 keys), 32 + codec id (u64).
    pub fn id(&self) -> u8 {
        match (self.auto, self.wide) {
            (true, w) => 48 + w as u8,
            (false, true) => 32 + self.codec as u8,
            (false, false) => 16 + self.codec as u8,
        }
    }

    #[inline]
    fn cap(&self) -> usize {
        let max = if self.auto {
            auto_key_limits().0
        } else {
            Codec(self.codec).max_keys()
        };
        (self.block_keys as usize).min(max)
    }

    /// Bytes of one descriptor of a u32 list, or of a u64 list in the wide form (a based list's
    /// are the u32 ones: [`Packed::desc_bytes`]).
    #[inline]
    pub fn desc_len(&self) -> usize {
        (if self.wide { DESC_WIDE } else { DESC }) + usize::from(self.auto)
    }

    #[inline]
    fn hdr(&self, region: &[u8]) -> SResult<Hdr> {
        if region.len() < HEADER {
            return Err(Fault("key list region smaller than its header"));
        }
        let raw = le_u16(region);
        let h = Hdr {
            nb: raw as usize,
            data_end: le_u16_at(region, 2) as usize,
            dl: self.desc_len(),
            hs: HEADER,
            wide: self.wide,
            base: 0,
            codec: (!self.auto).then_some(self.codec),
        };
        let h = if self.wide && raw & BASED_FLAG != 0 {
            let Some(base) = region.get(HEADER..HEADER_BASED) else {
                return Err(Fault("key list region smaller than its header"));
            };
            self.based_hdr(
                Hdr {
                    nb: h.nb & !(BASED_FLAG as usize),
                    ..h
                },
                le_u64(base),
            )
        } else {
            h
        };
        if h.used() > region.len() {
            return Err(Fault("compressed key list longer than its region"));
        }
        Ok(h)
    }

    /// The header of a list of `nb` blocks and `data_end` payload bytes in the form that keys
    /// from `lo` to `hi` take: a u64 list is based (at `lo`) when they lie within 2^32 - 1 of
    /// each other and wide otherwise; an empty u64 list (`None`) is wide, as `init` makes it.
    /// A list of one block stays wide: based it would take 4 bytes more (12 + 12 against
    /// 4 + 16), and a split must never make a half larger than the blocks it copies. An empty
    /// list given a span (the first insert) is based, so that ascending loads fill based
    /// leaves.
    fn hdr_for(&self, nb: usize, data_end: usize, span: Option<(u64, u64)>) -> Hdr {
        let h = Hdr {
            nb,
            data_end,
            dl: self.desc_len(),
            hs: HEADER,
            wide: self.wide,
            base: 0,
            codec: (!self.auto).then_some(self.codec),
        };
        match span {
            Some((lo, hi))
                if self.wide && nb != 1 && hi.wrapping_sub(lo) <= u32::MAX as u64 && lo <= hi =>
            {
                self.based_hdr(h, lo)
            }
            _ => h,
        }
    }

    /// `h` in the based form at `base`.
    fn based_hdr(&self, h: Hdr, base: u64) -> Hdr {
        Hdr {
            dl: DESC + usize::from(self.auto),
            hs: HEADER_BASED,
            wide: false,
            base,
            ..h
        }
    }

    /// The key type's largest value.
    #[inline]
    fn max_key(&self) -> u64 {
        if self.wide {
            u64::MAX
        } else {
            u32::MAX as u64
        }
    }

    /// A key as the tree's key type.
    #[inline]
    pub fn key_of(&self, k: u64) -> Key<'static> {
        if self.wide {
            Key::U64(k)
        } else {
            Key::U32(k as u32)
        }
    }

    /// A probe of the list's key type as a u64 (`None` for another type).
    #[inline]
    pub fn probe(&self, k: &Key<'_>) -> Option<u64> {
        match (*k, self.wide) {
            (Key::U32(v), false) => Some(v as u64),
            (Key::U64(v), true) => Some(v),
            _ => None,
        }
    }

    /// Stored key bytes (little-endian, 4 or 8 bytes) as a key of the list.
    pub fn stored_key(&self, raw: &[u8]) -> SResult<u64> {
        match (raw.len(), self.wide) {
            (4, false) => Ok(le_u32(raw) as u64),
            (8, true) => Ok(le_u64(raw)),
            _ => Err(Fault("compressed key list given a key of another width")),
        }
    }

    /// Appends the stored bytes of key `k` to `out`.
    fn put_key(&self, k: u64, out: &mut Vec<u8>) {
        if self.wide {
            out.extend_from_slice(&k.to_le_bytes());
        } else {
            out.extend_from_slice(&(k as u32).to_le_bytes());
        }
    }

    /// Encodes `keys` (sorted, unique, `1..=` the codec's block limit, within 2^32 - 1 of the
    /// first in a wide list) as one block appended to `e`.
    fn encode_one(&self, keys: &[u64], e: &mut Encoded) -> SResult<()> {
        let (Some(&first), Some(&last)) = (keys.first(), keys.last()) else {
            return Err(Fault("empty block"));
        };
        if keys.len() > MAX_BLOCK_KEYS {
            return Err(Fault("keys beyond one block's range"));
        }
        let base = if self.wide { first } else { 0 };
        SCRATCH_BUF.with(|cell| {
            let mut guard = cell.borrow_mut();
            let sc = &mut **guard;
            // Keys decoded from a damaged page may be out of order: refused, not wrapped
            // around. A narrow list's keys are its codec's values, whose encode refuses them
            // out of order (the `BlockCodec::encode` contract), once none is wider than 32
            // bits; a wide list's offsets from the first key could wrap into order, so its keys
            // are checked here, in the same pass (a pass of its own over every block was 3.5%
            // of a random BP128 load's instructions).
            if self.wide {
                let mut unsorted = false;
                sc.offs[0] = 0;
                let pairs = sc
                    .offs
                    .iter_mut()
                    .skip(1)
                    .zip(keys.iter().skip(1))
                    .zip(keys);
                for ((o, &k), &p) in pairs {
                    unsorted |= k <= p;
                    *o = k.wrapping_sub(base) as u32;
                }
                if unsorted {
                    return Err(Fault("block keys out of order"));
                }
            } else {
                let mut high = 0u64;
                for (o, &k) in sc.offs.iter_mut().zip(keys) {
                    high |= k;
                    *o = k as u32;
                }
                if high > u32::MAX as u64 {
                    return Err(Fault("keys beyond one block's range"));
                }
            }
            // Sorted: every key lies in [base, last]; each offset fits when the span does.
            if last - base > u32::MAX as u64 {
                return Err(Fault("keys beyond one block's range"));
            }
            let offs = head(&sc.offs, keys.len())?;
            let (codec, d, bytes) = if self.auto {
                // Every candidate sizes the block; the smallest wins unless a faster one is
                // within a tenth of it. Codecs whose size follows from the keys' widths
                // (`Codec::encoded_len`) are not encoded to be sized; the others encode into
                // one buffer while the best encoded so far stays in the other, so the winner
                // is encoded at most once more (encoding all five and the winner again was
                // most of an `auto` ascending load's codec work, issue 21).
                let (mut best_buf, mut next_buf) = (&mut sc.out, &mut sc.alt);
                let mut best: Option<(CodecId, usize, Option<Descriptor>)> = None;
                for c in AUTO_CODECS {
                    let (size, d) = match Codec(c).encoded_len(offs) {
                        Some(size) => (size, None),
                        None => {
                            // Only a size under nine tenths of the best's can win: a codec
                            // that tells it cannot get there is not encoded (PFOR-DELTA on
                            // spread keys, issue 21). `size * 10 < b * 9` iff `size <
                            // ceil(9b / 10)`.
                            let limit = best.map_or(usize::MAX, |(_, b, _)| (9 * b).div_ceil(10));
                            let Some(d) = Codec(c)
                                .encode_below(offs, &mut next_buf[..], limit)
                                .map_err(cfault)?
                            else {
                                continue;
                            };
                            (d.size as usize, Some(d))
                        }
                    };
                    if best.is_none_or(|(_, b, _)| size * 10 < b * 9) {
                        if d.is_some() {
                            std::mem::swap(&mut best_buf, &mut next_buf);
                        }
                        best = Some((c, size, d));
                    }
                }
                let (c, _, d) = best.ok_or(Fault("no candidate codec"))?;
                let d = match d {
                    Some(d) => d,
                    None => Codec(c).encode(offs, &mut best_buf[..]).map_err(cfault)?,
                };
                (c, d, &best_buf[..])
            } else {
                let d = Codec(self.codec)
                    .encode(offs, &mut sc.out[..])
                    .map_err(cfault)?;
                (self.codec, d, &sc.out[..])
            };
            let at = e.bytes.len();
            e.bytes.extend_from_slice(head(bytes, d.size as usize)?);
            e.blocks.push((d, base, codec, at..e.bytes.len()));
            Ok(())
        })
    }

    /// Encodes `keys` (sorted, unique) as `parts` blocks of about equal key counts, each cut
    /// further where a wide block's keys would span more than 32 bits (and into blocks of at
    /// most the block size).
    fn encode_parts(&self, keys: &[u64], parts: usize, e: &mut Encoded) -> SResult<()> {
        self.encode_parts_with(keys, parts, e, false)
    }

    /// `encode_parts`; with `cut`, blocks are also cut at outlier gaps (`encode_split`): for
    /// rebuilds, which must fit where the keys came from, not for the block moves of inserts,
    /// which fall back to a split when they do not fit.
    fn encode_parts_with(
        &self,
        keys: &[u64],
        parts: usize,
        e: &mut Encoded,
        cut: bool,
    ) -> SResult<()> {
        let parts = parts.max(keys.len().div_ceil(self.cap())).max(1);
        let mut start = 0;
        for k in 0..parts {
            let end = keys.len() * (k + 1) / parts;
            let mut a = start;
            while a < end {
                let run = keys.get(a..end).ok_or(Fault("key range out of range"))?;
                let mut z = run.len();
                if let (true, Some(&k0)) = (self.wide, run.first()) {
                    let lim = k0.saturating_add(u32::MAX as u64);
                    z = run.partition_point(|&x| x <= lim);
                }
                let part = run.get(..z).unwrap_or_default();
                if cut {
                    self.encode_split(part, e)?;
                } else {
                    self.encode_one(part, e)?;
                }
                a += z;
            }
            start = end;
        }
        Ok(())
    }

    /// Encodes `keys` as one block, or as two (each again split or not) at an outlier gap when
    /// that is smaller: a frame codec sizes a block by its widest offset or delta, and a block
    /// of BP128 or SIMD FOR keys takes a whole frame (16 bytes per bit), so one key far from
    /// the others could make a rebuilt block of a few keys take 512 bytes where the node had
    /// kept it in a block of its own.
    fn encode_split(&self, keys: &[u64], e: &mut Encoded) -> SResult<()> {
        if let Some(m) = outlier_cut(keys) {
            let (b0, n0) = (e.bytes.len(), e.blocks.len());
            self.encode_one(keys, e)?;
            let whole = e.bytes.len() - b0;
            e.bytes.truncate(b0);
            e.blocks.truncate(n0);
            let (left, right) = keys
                .split_at_checked(m)
                .ok_or(Fault("cut outside a block"))?;
            self.encode_split(left, e)?;
            self.encode_split(right, e)?;
            // Descriptors as the based form has them (the wide form's are 4 bytes longer).
            let extra = (e.blocks.len() - n0 - 1) * (DESC + usize::from(self.auto));
            if e.bytes.len() - b0 + extra < whole {
                return Ok(());
            }
            e.bytes.truncate(b0);
            e.blocks.truncate(n0);
        }
        self.encode_one(keys, e)
    }

    /// The gap left by removing the last key `k` of a block: (descriptor, base); its codec is
    /// the list's.
    fn gap(&self, k: u64) -> (Descriptor, u64) {
        let (base, v) = if self.wide { (k, 0) } else { (0, k as u32) };
        (
            Descriptor {
                start: v,
                last: v,
                ..Descriptor::default()
            },
            base,
        )
    }

    /// Makes `region` an empty list.
    pub fn init(region: &mut [u8]) {
        if let Some(h) = region.get_mut(..HEADER) {
            h.fill(0);
        }
    }

    /// Bytes the list uses (header, index, payload).
    ///
    /// Every node read asks this: the header words are read directly (no header parse), so
    /// that the check stays a few instructions.
    #[inline(always)]
    pub fn used(&self, region: &[u8]) -> SResult<usize> {
        let Some(&[n0, n1, e0, e1]) = region.first_chunk::<HEADER>() else {
            return Err(Fault("key list region smaller than its header"));
        };
        let raw = u16::from_le_bytes([n0, n1]);
        let (hs, dl, nb) = if self.wide && raw & BASED_FLAG != 0 {
            (
                HEADER_BASED,
                DESC + usize::from(self.auto),
                raw & !BASED_FLAG,
            )
        } else {
            (HEADER, self.desc_len(), raw)
        };
        let used = hs + dl * nb as usize + u16::from_le_bytes([e0, e1]) as usize;
        if used > region.len() {
            return Err(Fault("compressed key list longer than its region"));
        }
        Ok(used)
    }

    /// Bytes of one descriptor of this list (its form's).
    pub fn desc_bytes(&self, region: &[u8]) -> SResult<usize> {
        Ok(self.hdr(region)?.dl)
    }

    /// The base of a u64 list in the based form; `None` in the wide form and for u32 lists.
    pub fn frame_base(&self, region: &[u8]) -> SResult<Option<u64>> {
        let h = self.hdr(region)?;
        Ok(h.based().then_some(h.base))
    }

    /// Number of blocks (gaps included).
    pub fn blocks(&self, region: &[u8]) -> SResult<usize> {
        Ok(self.hdr(region)?.nb)
    }

    /// The first block that may hold keys `>= key`: the block `key` belongs to, or the next
    /// one when every key of that block is below `key` (`blocks()` when there is none).
    pub fn seek_block(&self, region: &[u8], key: u64) -> SResult<usize> {
        let h = self.hdr(region)?;
        if h.nb == 0 {
            return Ok(0);
        }
        let b = find_block(region, h, key);
        Ok(if d_count(region, h, b) > 0 && d_last(region, h, b) < key {
            b + 1
        } else {
            b
        })
    }

    /// Block `b`.
    pub fn block(&self, region: &[u8], b: usize) -> SResult<Block> {
        let h = self.hdr(region)?;
        if b >= h.nb {
            return Err(Fault("block index out of range"));
        }
        block_at(region, h, b)
    }

    /// Decodes the codec's values of block `blk` (keys minus `blk.base`) into `out`.
    #[inline]
    pub fn decode_block_at(&self, region: &[u8], blk: &Block, out: &mut [u32]) -> SResult<usize> {
        if blk.desc.count == 0 {
            return Ok(0);
        }
        let payload = region
            .get(blk.at.clone())
            .ok_or(Fault("compressed block outside its region"))?;
        Codec(blk.codec)
            .decode(&blk.desc, payload, out)
            .map_err(cfault)
    }

    /// [`Packed::decode_block_at`] for the paths that return keys (cursors, block scans): the
    /// values are checked against the descriptor (count, first, last, strictly ascending), so
    /// a payload forged behind a valid checksum gives a fault instead of keys out of order.
    /// Folds and writes decode unchecked: they return no keys.
    #[inline]
    pub fn decode_block_checked(
        &self,
        region: &[u8],
        blk: &Block,
        out: &mut [u32],
    ) -> SResult<usize> {
        let n = self.decode_block_at(region, blk, out)?;
        check_decoded(&blk.desc, out.get(..n).unwrap_or_default())?;
        Ok(n)
    }

    /// Decodes the keys of block `blk` into `out` (at least [`MAX_BLOCK_KEYS`] long).
    fn decode_keys_at(&self, region: &[u8], blk: &Block, out: &mut [u64]) -> SResult<usize> {
        self.decode_keys_with(region, blk, out, &mut [0u32; MAX_BLOCK_KEYS])
    }

    /// `decode_keys_at` with the codec's values decoded into `vals` first.
    fn decode_keys_with(
        &self,
        region: &[u8],
        blk: &Block,
        out: &mut [u64],
        vals: &mut [u32; MAX_BLOCK_KEYS],
    ) -> SResult<usize> {
        let n = self.decode_block_at(region, blk, vals)?;
        for (o, &v) in out.iter_mut().zip(head(vals, n)?) {
            *o = blk.base + v as u64;
        }
        Ok(n)
    }

    /// Full check of block `b` (the payload decodes and matches its descriptor).
    pub fn validate_block(&self, region: &[u8], b: usize) -> SResult<()> {
        let blk = self.block(region, b)?;
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
        if blk.last > self.max_key() {
            return Err(Fault("compressed block keys beyond the key type"));
        }
        if self.auto && !AUTO_CODECS.contains(&blk.codec) {
            return Err(Fault("block codec is not an automatic choice"));
        }
        Codec(blk.codec)
            .validate(&blk.desc, bytes_at(region, &blk.at)?)
            .map_err(cfault)
    }

    /// Block and position of slot `i`.
    fn locate(region: &[u8], h: Hdr, i: usize) -> SResult<(usize, usize)> {
        let mut base = 0;
        for b in 0..h.nb {
            let c = d_count(region, h, b);
            if i < base + c {
                return Ok((b, i - base));
            }
            base += c;
        }
        Err(Fault("key index out of range"))
    }

    /// Key at slot `i` (walks the index: O(blocks)).
    pub fn key(&self, region: &[u8], i: usize) -> SResult<u64> {
        let h = self.hdr(region)?;
        let (b, j) = Self::locate(region, h, i)?;
        let blk = block_at(region, h, b)?;
        let v = Codec(blk.codec)
            .select(&blk.desc, bytes_at(region, &blk.at)?, j)
            .map_err(cfault)?;
        Ok(blk.base + v as u64)
    }

    /// Lower bound of `p` within the list: `(block, position in block, key)`, where the key is
    /// `None` when every key is smaller. Gaps are skipped.
    #[inline]
    fn lower_bound(&self, region: &[u8], h: Hdr, p: u64) -> SResult<(usize, usize, Option<u64>)> {
        match (h.wide, h.based(), self.auto) {
            (false, false, false) => self.lower_bound_in::<false, false, false>(region, h, p),
            (false, true, false) => self.lower_bound_in::<false, true, false>(region, h, p),
            (true, _, false) => self.lower_bound_in::<true, false, false>(region, h, p),
            (false, false, true) => self.lower_bound_in::<false, false, true>(region, h, p),
            (false, true, true) => self.lower_bound_in::<false, true, true>(region, h, p),
            (true, _, true) => self.lower_bound_in::<true, false, true>(region, h, p),
        }
    }

    #[inline(always)]
    fn lower_bound_in<const W: bool, const B: bool, const A: bool>(
        &self,
        region: &[u8],
        h: Hdr,
        p: u64,
    ) -> SResult<(usize, usize, Option<u64>)> {
        let h = h.fixed::<W, B, A>();
        if h.nb == 0 {
            return Ok((0, 0, None));
        }
        let b = find_block_fixed::<W, B, A>(region, h.nb, h.base, p);
        let blk = block_at(region, h, b)?;
        if blk.desc.count > 0 && p <= blk.last {
            let span = blk.last.checked_sub(blk.first);
            let (j, v) = if p <= blk.first {
                (0, Some(blk.first))
            } else if span == Some(blk.desc.count as u64 - 1) {
                // A dense block (as many keys as its range has values: dense ids, row numbers)
                // holds every value of [first, last]: no decode.
                ((p - blk.first) as usize, Some(p))
            } else {
                // first < p <= last: the offset fits the codec's values.
                let q = (p - blk.base) as u32;
                let codec = Codec(blk.codec);
                let (j, v) = if matches!(
                    blk.codec,
                    CodecId::StreamVByte | CodecId::VarIntGb | CodecId::MaskedVByte
                ) {
                    // Their SIMD decoders beat the codecs' sequential lower_bound on a 257-key
                    // block (in-process A/B, `tersedb-codecs` example `lower_bound_ab`:
                    // StreamVByte 76 vs 118 ns, VarIntGB 100 vs 134, Masked VByte 109 vs 121;
                    // VByte loses): decode into the stack, then binary search. The buffer is
                    // their limit, not MAX_BLOCK_KEYS: zeroing Rice's 511 would cost each
                    // lookup another kilobyte (a longer block is refused by the decoder).
                    let mut keys = [0u32; BYTE_CODEC_KEYS];
                    let n = codec
                        .decode(&blk.desc, bytes_at(region, &blk.at)?, &mut keys)
                        .map_err(cfault)?;
                    let keys = head(&keys, n)?;
                    let j = keys.partition_point(|&k| k < q);
                    (j, keys.get(j).copied())
                } else {
                    codec
                        .lower_bound(&blk.desc, bytes_at(region, &blk.at)?, q)
                        .map_err(cfault)?
                };
                (j, v.map(|v| blk.base.wrapping_add(v as u64)))
            };
            if v.is_some() {
                return Ok((b, j, v));
            }
        }
        // Every key of block b is below p: the answer is the next non-empty block's first key.
        for nb in b + 1..h.nb {
            if d_count(region, h, nb) > 0 {
                return Ok((nb, 0, Some(d_first(region, h, nb))));
            }
        }
        Ok((h.nb, 0, None))
    }

    /// Binary search: `Ok(slot)` when `p` is present, `Err(slot)` for its insert position.
    pub fn search(&self, region: &[u8], p: u64) -> SResult<Result<usize, usize>> {
        let h = self.hdr(region)?;
        match (h.wide, h.based(), self.auto) {
            (false, false, false) => self.search_in::<false, false, false>(region, h, p),
            (false, true, false) => self.search_in::<false, true, false>(region, h, p),
            (true, _, false) => self.search_in::<true, false, false>(region, h, p),
            (false, false, true) => self.search_in::<false, false, true>(region, h, p),
            (false, true, true) => self.search_in::<false, true, true>(region, h, p),
            (true, _, true) => self.search_in::<true, false, true>(region, h, p),
        }
    }

    /// `search` with the list's layout as constants (the slot sum walks the descriptors).
    ///
    /// The slot is the counts of the blocks before the key's plus its position, trusted as a
    /// record's bytes are: a count forged in an earlier descriptor gives the record at the
    /// slot the page says. Checking that all counts add up to `n` here cost record lookups
    /// +9.6% instructions (`examples/record_reads`: the walk runs on every branch level too);
    /// misses, cursors, scans, folds and `check` see the forged count.
    #[inline(always)]
    fn search_in<const W: bool, const B: bool, const A: bool>(
        &self,
        region: &[u8],
        h: Hdr,
        p: u64,
    ) -> SResult<Result<usize, usize>> {
        let (b, j, v) = self.lower_bound_in::<W, B, A>(region, h, p)?;
        let h = h.fixed::<W, B, A>();
        let slot = slot_base(region, h, b.min(h.nb)) + j;
        Ok(if v == Some(p) { Ok(slot) } else { Err(slot) })
    }

    /// Whether `p` is present (no slot arithmetic: the key-only lookup path), and on a miss
    /// the list's edges with what the miss relied on proven ([`Packed::miss_edges`]), from
    /// one read of the header.
    #[inline]
    pub fn lookup(&self, region: &[u8], p: u64) -> SResult<Lookup> {
        let h = self.hdr(region)?;
        if self.lower_bound(region, h, p)?.2 == Some(p) {
            return Ok(Lookup::Hit);
        }
        self.miss_edges_in(region, h, p).map(Lookup::Miss)
    }

    /// Appends `key` to the last block in place when it lies above every key of the list and
    /// the block's codec takes it there (`insert`'s first step for such a key, without its
    /// other cases): `Some(true)` done, `Some(false)` the key is not above the last block's
    /// last key, `None` (nothing changed) when only [`Packed::insert`] can tell. One header
    /// and one descriptor read: the append path of ascending loads (issue 21), where reading
    /// the last key first and then inserting read both twice.
    pub fn append_in_place(&self, region: &mut [u8], key: u64) -> SResult<Option<bool>> {
        let h = self.hdr(region)?;
        let Some(b) = h.nb.checked_sub(1) else {
            return Ok(None);
        };
        let blk = block_at(region, h, b)?;
        if key <= blk.last {
            return Ok(Some(false));
        }
        let count = blk.desc.count as usize;
        if key > self.max_key() || count == 0 || count >= self.cap() {
            return Ok(None);
        }
        let Some(v) = key
            .checked_sub(blk.base)
            .and_then(|v| u32::try_from(v).ok())
        else {
            return Ok(None);
        };
        let mut d = blk.desc;
        let off = blk.at.start - h.pstart();
        let payload = region.get_mut(blk.at.start..).unwrap_or_default();
        match Codec(blk.codec)
            .append(&mut d, payload, v)
            .map_err(cfault)?
        {
            AppendOutcome::Appended => {
                write_desc_appended(region, h, b, &d, blk.base);
                // Of the header only the end of the data changes (`write_hdr`'s bytes 2..4).
                put(region, 2, &((off + d.size as usize) as u16).to_le_bytes());
                Ok(Some(true))
            }
            AppendOutcome::NoRoom => Ok(None),
        }
    }

    /// Inserts `key` into a list of `n` keys. On `NoRoom` nothing changed.
    pub fn insert(&self, region: &mut [u8], n: usize, key: u64) -> SResult<Ins> {
        WORK.with(|w| self.insert_in(region, n, key, &mut w.borrow_mut()))
    }

    /// `insert` with the thread's work area.
    fn insert_in(&self, region: &mut [u8], n: usize, key: u64, w: &mut Work) -> SResult<Ins> {
        if key > self.max_key() {
            return Err(Fault("key wider than the list's key type"));
        }
        let mut h = self.hdr(region)?;
        if h.nb == 0 {
            // A u64 list starts based at its first key (a list emptied in the wide form too).
            let hn = self.hdr_for(0, 0, Some((key, key)));
            if hn.used() + hn.dl > region.len() {
                return Ok(Ins::NoRoom(hn.used() + hn.dl));
            }
            write_hdr(region, hn);
            let mut e = Encoded::with_parts(1);
            self.encode_one(&[key], &mut e)?;
            return Ok(if splice(region, hn, 0, 0, &e.new_blocks())? {
                Ins::Inserted(0)
            } else {
                Ins::NoRoom(hn.used() + hn.dl)
            });
        }
        if h.based() && (key < h.base || key - h.base > u32::MAX as u64) {
            // Outside the leaf's frame: re-based in place when the keys with it still span at
            // most 2^32 - 1, else the list takes the wide form.
            match self.rebase(region, h, key)? {
                Some(hn) => h = hn,
                None => return self.insert_wide(region, h, n, key, w),
            }
        }
        // Ascending inserts go to the last block: no search, no slot arithmetic.
        let b = if d_first(region, h, h.nb - 1) <= key {
            h.nb - 1
        } else {
            find_block(region, h, key)
        };
        let blk = block_at(region, h, b)?;
        let codec = Codec(blk.codec);
        let last_block = b + 1 == h.nb;
        let count = blk.desc.count as usize;
        // The key as the codec's value, when it falls within the block's frame.
        let val = key
            .checked_sub(blk.base)
            .and_then(|v| u32::try_from(v).ok())
            .filter(|_| count > 0 || !h.wide);
        // The append fast path: the last block, a key above its last, in place.
        if let (true, Some(v)) = (
            last_block && count > 0 && key > blk.last && count < self.cap(),
            val,
        ) {
            let mut d = blk.desc;
            let ps = h.pstart();
            let off = blk.at.start - ps;
            match codec
                .append(
                    &mut d,
                    region.get_mut(blk.at.start..).unwrap_or_default(),
                    v,
                )
                .map_err(cfault)?
            {
                AppendOutcome::Appended => {
                    write_desc(region, h, b, off, &d, blk.base, blk.codec);
                    write_hdr(
                        region,
                        Hdr {
                            data_end: off + d.size as usize,
                            ..h
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
            slot_base(region, h, b)
        };
        if let (true, Some(v)) = (count < self.cap(), val) {
            // In the block: copy it out, let the codec insert (in place for the byte codecs,
            // decode-modify-encode for the packed ones), splice it back.
            let buf = &mut w.buf;
            let mut d = blk.desc;
            let size = d.size as usize;
            if size > SCRATCH {
                return Err(Fault("compressed block larger than any codec writes"));
            }
            let room = codec.max_payload_len(count + 1).max(size).min(SCRATCH);
            // The codec sees the block and zeros up to the room it may grow into, as before
            // the buffer was kept per thread.
            let buf = buf
                .get_mut(..room)
                .ok_or(Fault("compressed block larger than any codec writes"))?;
            let (old, zeros) = buf.split_at_mut_checked(size).unwrap_or_default();
            old.copy_from_slice(bytes_at(region, &blk.at)?);
            zeros.fill(0);
            match codec.insert(&mut d, buf, v).map_err(cfault)? {
                InsertOutcome::Exists { slot } => return Ok(Ins::Exists(base + slot)),
                InsertOutcome::Inserted { slot } => {
                    let bytes = head(buf, d.size as usize)?;
                    if splice(region, h, b, 1, &[(d, blk.base, blk.codec, bytes)])? {
                        return Ok(Ins::Inserted(base + slot));
                    }
                    return Ok(Ins::NoRoom(h.used() + d.size as usize - size));
                }
                InsertOutcome::NoRoom => {}
            }
        }
        // The block is full (or the key lies outside a wide block's frame): split it (an
        // append past the last block starts a new block).
        let Work {
            vals, keys, all, ..
        } = w;
        let n = self.decode_keys_with(region, &blk, keys, vals)?;
        let pos = head(keys, n)?.partition_point(|&k| k < key);
        if keys.get(pos) == Some(&key) && pos < n {
            return Ok(Ins::Exists(base + pos));
        }
        let keys = keys
            .get_mut(..n + 1)
            .ok_or(Fault("compressed block count beyond its buffer"))?;
        keys.copy_within(pos..n, pos + 1);
        if let Some(k) = keys.get_mut(pos) {
            *k = key;
        }
        let keys = &*keys;
        // Full, or the codec had no room for it in the block: two blocks (or shared).
        let full = n + 1 > self.cap() || val.is_some();
        if full && !(last_block && pos == n) {
            if let Some(r) = self.share_with_neighbour(region, h, b, keys, base, pos, all, vals)? {
                return Ok(r);
            }
        }
        let mut e = Encoded::with_parts(2);
        if !full {
            self.encode_parts(keys, 1, &mut e)?;
        } else if last_block && pos == n {
            let (old, new) = keys.split_at_checked(n).unwrap_or_default();
            self.encode_parts(old, 1, &mut e)?;
            self.encode_one(new, &mut e)?;
        } else {
            self.encode_parts(keys, 2, &mut e)?;
        }
        if splice(region, h, b, 1, &e.new_blocks())? {
            Ok(Ins::Inserted(base + pos))
        } else {
            Ok(Ins::NoRoom(
                h.used() + h.dl * (e.blocks.len() - 1) + e.payload() - blk.at.len(),
            ))
        }
    }

    /// Moves a based list's frame to hold `key` (below the base, or beyond it by more than
    /// 2^32 - 1) when the list's keys with `key` span at most 2^32 - 1: the new base is the
    /// smallest of them and every descriptor's first and last are rewritten (codec payloads are
    /// relative to their block's start value, so no block is re-encoded). The list keeps its
    /// size. `None`, nothing changed, when the keys do not fit one frame.
    fn rebase(&self, region: &mut [u8], h: Hdr, key: u64) -> SResult<Option<Hdr>> {
        if h.nb == 0 {
            let hn = Hdr { base: key, ..h };
            write_hdr(region, hn);
            return Ok(Some(hn));
        }
        // Gaps keep their keys in order too: the first descriptor's first key is the list's
        // smallest, the last one's last the largest.
        let lo = key.min(d_first(region, h, 0));
        let hi = key.max(d_last(region, h, h.nb - 1));
        if hi < lo || hi - lo > u32::MAX as u64 {
            return Ok(None);
        }
        let hn = Hdr { base: lo, ..h };
        let moved = |v: u32| {
            h.base
                .checked_add(v as u64)
                .and_then(|k| k.checked_sub(lo))
                .and_then(|x| u32::try_from(x).ok())
                .ok_or(Fault("compressed block index out of key order"))
        };
        for b in 0..h.nb {
            let at = h.hs + h.dl * b;
            let (s, l) = (
                moved(le_u32_at(region, at + 4))?,
                moved(le_u32_at(region, at + 8))?,
            );
            put(region, at + 4, &s.to_le_bytes());
            put(region, at + 8, &l.to_le_bytes());
        }
        write_hdr(region, hn);
        Ok(Some(hn))
    }

    /// Inserts `key`, which a based list (header `h`, `n` keys) cannot frame, after turning the
    /// list into the wide form (16-byte descriptors, each block its own base; the payloads are
    /// copied as they are). The two steps run on a copy, so on `NoRoom` the list is unchanged.
    fn insert_wide(
        &self,
        region: &mut [u8],
        h: Hdr,
        n: usize,
        key: u64,
        w: &mut Work,
    ) -> SResult<Ins> {
        let mut img = Vec::with_capacity(region.len() + 4 * SCRATCH);
        self.image(region, h, 0..h.nb, true, &mut img)?;
        // Room for the insert's worst case: a block split in two (or three when shared).
        img.resize(img.len().max(region.len()) + 3 * SCRATCH, 0);
        match self.insert_in(&mut img, n, key, w)? {
            Ins::Inserted(slot) => {
                let used = self.used(&img)?;
                match (region.get_mut(..used), img.get(..used)) {
                    (Some(to), Some(from)) => {
                        to.copy_from_slice(from);
                        Ok(Ins::Inserted(slot))
                    }
                    _ => Ok(Ins::NoRoom(used)),
                }
            }
            other => Ok(other),
        }
    }

    /// An insert into the full block `b` (its keys with the new one: `keys`, the block's first
    /// slot `base`, the new key's position `pos`): instead of two half-full blocks, the keys are
    /// shared with a neighbouring block, two blocks into two when the pair keeps an eighth of a
    /// block free and into three otherwise (the B*-tree's rule, applied to blocks), so random
    /// inserts leave blocks two-thirds to fully packed. `None` when there is no neighbour
    /// block to share with.
    // The block, its keys and where the new one went, and the two work buffers.
    #[allow(clippy::too_many_arguments)]
    fn share_with_neighbour(
        &self,
        region: &mut [u8],
        h: Hdr,
        b: usize,
        keys: &[u64],
        base: usize,
        pos: usize,
        all: &mut [u64; 2 * MAX_BLOCK_KEYS + 1],
        vals: &mut [u32; MAX_BLOCK_KEYS],
    ) -> SResult<Option<Ins>> {
        let cap = self.cap();
        let usable = |j: usize| j < h.nb && d_count(region, h, j) > 0;
        let (lo, right) = if usable(b + 1) {
            (b, true)
        } else if b > 0 && usable(b - 1) {
            (b - 1, false)
        } else {
            return Ok(None);
        };
        let nbr = block_at(region, h, if right { b + 1 } else { b - 1 })?;
        // Slots do not move: the neighbour's keys keep theirs, the new key takes `base + pos`.
        let total = if right {
            part_mut(all, 0..keys.len())?.copy_from_slice(keys);
            let len = all.len();
            let rest = part_mut(all, keys.len()..len)?;
            keys.len() + self.decode_keys_with(region, &nbr, rest, vals)?
        } else {
            let m = self.decode_keys_with(region, &nbr, &mut all[..], vals)?;
            part_mut(all, m..m + keys.len())?.copy_from_slice(keys);
            keys.len() + m
        };
        let slot = base + pos;
        let all = head(all, total)?;
        if !ascending(all) {
            return Err(Fault("neighbouring compressed blocks overlap"));
        }
        // Two blocks when the pair keeps an eighth of a block free, else three.
        let parts = if total + cap / 8 <= 2 * cap { 2 } else { 3 };
        let mut e = Encoded::with_parts(parts);
        self.encode_parts(all, parts, &mut e)?;
        let (o0, o1) = (block_at(region, h, lo)?.at, block_at(region, h, lo + 1)?.at);
        let old = o1.end - o0.start;
        if splice(region, h, lo, 2, &e.new_blocks())? {
            Ok(Some(Ins::Inserted(slot)))
        } else {
            Ok(Some(Ins::NoRoom(
                h.used() + h.dl * e.blocks.len() + e.payload() - h.dl * 2 - old,
            )))
        }
    }

    /// After a remove left block `b` at most half full: merges it with a neighbouring block
    /// when both fit one block and the merged encoding takes no more bytes than the two did
    /// (so a remove never needs room for this). Slots do not change.
    fn merge_small_block(&self, region: &mut [u8], b: usize) -> SResult<()> {
        let h = self.hdr(region)?;
        let cap = self.cap();
        if b >= h.nb || d_count(region, h, b) * 2 > cap {
            return Ok(());
        }
        let c = d_count(region, h, b);
        let fits =
            |j: usize| j < h.nb && d_count(region, h, j) > 0 && d_count(region, h, j) + c <= cap;
        let lo = if fits(b + 1) {
            b
        } else if b > 0 && fits(b - 1) {
            b - 1
        } else {
            return Ok(());
        };
        let (x, y) = (block_at(region, h, lo)?, block_at(region, h, lo + 1)?);
        let mut all = [0u64; 2 * MAX_BLOCK_KEYS];
        let n1 = self.decode_keys_at(region, &x, &mut all)?;
        let n2 = self.decode_keys_at(region, &y, part_mut(&mut all, n1..2 * MAX_BLOCK_KEYS)?)?;
        let all = head(&all, n1 + n2)?;
        if let (Some(a), Some(b)) = (n1.checked_sub(1).and_then(|i| all.get(i)), all.get(n1)) {
            if n2 > 0 && a >= b {
                return Err(Fault("neighbouring compressed blocks overlap"));
            }
        }
        let (Some(&first), Some(&last)) = (all.first(), all.last()) else {
            return Ok(());
        };
        if self.wide && last - first > u32::MAX as u64 {
            return Ok(());
        }
        let mut e = Encoded::with_parts(1);
        self.encode_one(all, &mut e)?;
        if e.payload() > x.at.len() + y.at.len() + h.dl {
            return Ok(());
        }
        if !splice(region, h, lo, 2, &e.new_blocks())? {
            return Err(Fault("merging two blocks grew the key list"));
        }
        Ok(())
    }

    /// Removes the key at slot `i`. `Ok(None)` when done; `Ok(Some(need))` when the block would
    /// grow beyond the region (BP128 and the other packed codecs), nothing changed.
    pub fn remove(&self, region: &mut [u8], i: usize) -> SResult<Option<usize>> {
        let h = self.hdr(region)?;
        let (b, j) = Self::locate(region, h, i)?;
        let blk = block_at(region, h, b)?;
        let mut d = blk.desc;
        let size = d.size as usize;
        if d.count == 1 {
            // The block becomes a gap (keeping its key as first = last for the ordering).
            let (gap, gb) = self.gap(blk.first);
            if splice(region, h, b, 1, &[(gap, gb, self.codec, &[])])? {
                return Ok(None);
            }
            return Err(Fault("removing a key grew the key list"));
        }
        if h.wide && j == 0 {
            // The first key of a wide block is its base: re-encode the rest from the next key.
            let mut keys = [0u64; MAX_BLOCK_KEYS];
            let n = self.decode_keys_at(region, &blk, &mut keys)?;
            let mut e = Encoded::with_parts(1);
            let rest = keys
                .get(1..n)
                .ok_or(Fault("compressed block count beyond its buffer"))?;
            self.encode_one(rest, &mut e)?;
            if splice(region, h, b, 1, &e.new_blocks())? {
                self.merge_small_block(region, b)?;
                return Ok(None);
            }
            return Ok(Some(h.used() + e.payload() - size));
        }
        if size > SCRATCH {
            return Err(Fault("compressed block larger than any codec writes"));
        }
        let mut buf = [0u8; SCRATCH];
        part_mut(&mut buf, 0..size)?.copy_from_slice(bytes_at(region, &blk.at)?);
        let codec = Codec(blk.codec);
        let room = codec.max_payload_len(d.count as usize).min(SCRATCH);
        match codec
            .remove(&mut d, part_mut(&mut buf, 0..room.max(size))?, j)
            .map_err(cfault)?
        {
            RemoveOutcome::Removed { .. } => {
                if splice(
                    region,
                    h,
                    b,
                    1,
                    &[(d, blk.base, blk.codec, head(&buf, d.size as usize)?)],
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
    pub fn key_range(&self, region: &[u8]) -> SResult<Option<(u64, u64)>> {
        Ok(Self::key_range_in(region, self.hdr(region)?))
    }

    /// [`Packed::key_range`] of the list whose header is `h`.
    #[inline]
    fn key_range_in(region: &[u8], h: Hdr) -> Option<(u64, u64)> {
        let a = (0..h.nb).find(|&b| d_count(region, h, b) > 0)?;
        let z = (a..h.nb)
            .rev()
            .find(|&b| d_count(region, h, b) > 0)
            .unwrap_or(a);
        Some((d_first(region, h, a), d_last(region, h, z)))
    }

    /// [`Packed::key_range`] after a lookup of `p` missed, with what the miss relied on proven.
    /// The index is in order ([`Packed::prove`], once per page), so only the block `p` falls in
    /// or after (and, when `p` lies above its keys, the next one, whose first key the search
    /// answered with) could hold it: a probe inside the list's keys decodes those and checks
    /// them against their descriptors ([`check_decoded`]), so that a forged payload gives
    /// `Corrupted`, never a miss. A probe outside the list needs nothing more: no key lies
    /// below the first block's first key (its descriptor's, the codec's start value), and the
    /// last non-empty block's payload was checked with the index. (The absent keys of `bench
    /// --peers` mostly lie above the largest key; each decoded and checked the last block here,
    /// ~40% of the lookup.) A hit needs none of it (the key found is the probe). Costs one or
    /// two block decodes, on misses inside the list only.
    pub fn miss_edges(&self, region: &[u8], p: u64) -> SResult<Option<(u64, u64)>> {
        self.miss_edges_in(region, self.hdr(region)?, p)
    }

    /// [`Packed::miss_edges`] of the list whose header is `h` (out of line: the lookup's
    /// miss path).
    #[inline(never)]
    fn miss_edges_in(&self, region: &[u8], h: Hdr, p: u64) -> SResult<Option<(u64, u64)>> {
        let edges = Self::key_range_in(region, h);
        if edges.is_some_and(|(a, z)| a <= p && p <= z) {
            let mut vals = [0u32; MAX_BLOCK_KEYS];
            for b in find_block(region, h, p)..h.nb {
                let blk = block_at(region, h, b)?;
                self.decode_block_checked(region, &blk, &mut vals)?;
                if blk.desc.count > 0 && (p <= blk.last || blk.first > p) {
                    break;
                }
            }
        }
        Ok(edges)
    }

    /// Proves the block index in order, its offsets ascending and its counts adding up to `n`
    /// ([`prove_order`]): what every read trusts in the blocks it does not decode (a miss, a
    /// range's folds and scans, a cursor going on to the next block); and the last non-empty
    /// block's payload decoding to its descriptor's keys, which a miss above the list trusts
    /// ([`Packed::miss_edges`]). Taken once per page buffer ([`KeyList::prove`] through
    /// `Layout::open`), before any of those reads.
    pub fn prove(&self, region: &[u8], n: usize) -> SResult<()> {
        let h = self.hdr(region)?;
        prove_order(region, h, n)?;
        if let Some(b) = (0..h.nb).rev().find(|&b| d_count(region, h, b) > 0) {
            let blk = block_at(region, h, b)?;
            self.decode_block_checked(region, &blk, &mut [0u32; MAX_BLOCK_KEYS])?;
        }
        Ok(())
    }

    /// Keys, exact sum, non-empty blocks and last key of the blocks from `start` on whose
    /// keys are all at most `hi` (every block for a leaf wholly inside a SUM's range; the
    /// whole blocks after a range's first block), each summed in registers by `summer`
    /// straight from its descriptor (or, for codecs without one, decoded into a buffer and
    /// added up), and the block it stopped at. The caller knows the blocks from `start` on
    /// hold no key below the range (the index is proven in order). Out of line: inlined into
    /// `fold_range` its loop spilled more (folds 3% more instructions).
    #[inline(never)]
    fn sum_blocks(
        &self,
        region: &[u8],
        start: usize,
        hi: u64,
        summer: impl Fn(CodecId) -> Option<BlockSum>,
    ) -> SResult<RunSum> {
        let h = self.hdr(region)?;
        let run = (start, hi);
        match (h.wide, h.based(), self.auto) {
            (false, false, false) => Self::sum_in::<false, false, false>(region, h, run, summer),
            (false, true, false) => Self::sum_in::<false, true, false>(region, h, run, summer),
            (true, _, false) => Self::sum_in::<true, false, false>(region, h, run, summer),
            (false, false, true) => Self::sum_in::<false, false, true>(region, h, run, summer),
            (false, true, true) => Self::sum_in::<false, true, true>(region, h, run, summer),
            (true, _, true) => Self::sum_in::<true, false, true>(region, h, run, summer),
        }
    }

    /// [`Packed::sum_blocks`] for one layout (see [`Hdr::fixed`]): a list of one codec
    /// chooses its block sum once.
    #[inline(always)]
    fn sum_in<const W: bool, const B: bool, const A: bool>(
        region: &[u8],
        h: Hdr,
        run: (usize, u64),
        summer: impl Fn(CodecId) -> Option<BlockSum>,
    ) -> SResult<RunSum> {
        let (walk, mut at) = SumWalk::<W, B, A>::new(region, h, run)?;
        let mut t = RunTotal::default();
        match walk.h.codec.filter(|_| !A).map(|c| (c, summer(c))) {
            // A list of a codec without a block sum: every block decoded, in the loop (out of
            // line, the decode call cost PFOR-DELTA's folds 7%).
            Some((c, None)) => {
                let mut buf = [0u32; MAX_BLOCK_KEYS];
                while let Some(blk) = walk.next(&mut at)? {
                    let n = Codec(c)
                        .decode(&blk.desc, blk.payload, &mut buf)
                        .map_err(cfault)?;
                    t.add(&blk, tersedb_codecs::sum::sum_u32(head(&buf, n)?));
                }
            }
            // One codec's block sums over the whole run, in the codec's own loop (BP128's
            // kernels inlined into it); the rare block they decline decoded out of line.
            Some((c, Some(sm))) => (t, at) = sm.run(&OneCodec(&walk, c), at)?,
            // An `auto` list: each block's codec from its descriptor.
            None => {
                while let Some(blk) = walk.next(&mut at)? {
                    // The block just read: the one before the cursor.
                    let c = d_codec(region, walk.h, walk.block(at) - 1)?;
                    let s = match summer(c).and_then(|sm| sm.sum(&blk.desc, blk.payload)) {
                        Some(s) => s,
                        None => decoded_sum(c, blk.desc, blk.payload)?,
                    };
                    t.add(&blk, s);
                }
            }
        }
        Ok(walk.finish(region, run.0, t, at))
    }

    /// Adds the list's non-empty blocks to `out`, one count per codec (`CodecId as usize`).
    pub fn codec_blocks(&self, region: &[u8], out: &mut [u64; CodecId::TABLE_LEN]) -> SResult<()> {
        let h = self.hdr(region)?;
        for b in 0..h.nb {
            let blk = block_at(region, h, b)?;
            if blk.desc.count > 0 {
                if let Some(c) = out.get_mut(blk.codec as usize) {
                    *c += 1;
                }
            }
        }
        Ok(())
    }

    /// Keys and non-empty blocks, from the descriptors' counts alone.
    pub fn counts(&self, region: &[u8]) -> SResult<(usize, usize)> {
        let h = self.hdr(region)?;
        Ok((0..h.nb).fold((0, 0), |(keys, blocks), b| {
            let c = d_count(region, h, b);
            (keys + c, blocks + usize::from(c > 0))
        }))
    }

    /// The largest key (the last non-empty block's last key), `None` when empty. Inlined: the
    /// append path asks it for every insert.
    #[inline]
    pub fn last_key(&self, region: &[u8]) -> SResult<Option<u64>> {
        let h = self.hdr(region)?;
        Ok((0..h.nb)
            .rev()
            .find(|&b| d_count(region, h, b) > 0)
            .map(|b| d_last(region, h, b)))
    }

    /// Key count of block `b` and the sum of the counts before it: `(base slot, count)`.
    pub fn block_slots(&self, region: &[u8], b: usize) -> SResult<(usize, usize)> {
        let h = self.hdr(region)?;
        if b > h.nb {
            return Err(Fault("block index out of range"));
        }
        let c = if b < h.nb { d_count(region, h, b) } else { 0 };
        Ok((slot_base(region, h, b), c))
    }

    /// A stand-alone list holding blocks `range` of this one (gaps dropped), appended to `out`:
    /// the blocks' payloads as they are, a u64 list in the based form when its keys allow.
    pub fn extract(&self, region: &[u8], range: Range<usize>, out: &mut Vec<u8>) -> SResult<()> {
        let h = self.hdr(region)?;
        self.image(region, h, range, false, out)
    }

    /// [`Packed::extract`] with the list's header `h`; with `wide`, a u64 list is written in
    /// the wide form whatever its keys.
    fn image(
        &self,
        region: &[u8],
        h: Hdr,
        range: Range<usize>,
        wide: bool,
        out: &mut Vec<u8>,
    ) -> SResult<()> {
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
        let span = match (blocks.first(), blocks.last(), wide) {
            (Some(a), Some(z), false) => Some((a.first, z.last)),
            _ => None,
        };
        let hn = self.hdr_for(blocks.len(), 0, span);
        let start = out.len();
        out.resize(start + hn.pstart(), 0);
        let mut off = 0;
        for (i, blk) in blocks.iter().enumerate() {
            if !in_frame(hn, &blk.desc, blk.base) {
                return Err(Fault("compressed block index out of key order"));
            }
            out.extend_from_slice(bytes_at(region, &blk.at)?);
            write_desc(
                out.get_mut(start..).unwrap_or_default(),
                hn,
                i,
                off,
                &blk.desc,
                blk.base,
                blk.codec,
            );
            off += blk.at.len();
        }
        if off > u16::MAX as usize {
            return Err(Fault("compressed key list longer than a page"));
        }
        write_hdr(
            out.get_mut(start..).unwrap_or_default(),
            Hdr {
                data_end: off,
                ..hn
            },
        );
        Ok(())
    }

    /// Appends every key to `out`.
    pub fn decode_all(&self, region: &[u8], out: &mut Vec<u64>) -> SResult<()> {
        let h = self.hdr(region)?;
        let mut vals = [0u32; MAX_BLOCK_KEYS];
        for b in 0..h.nb {
            let blk = block_at(region, h, b)?;
            let n = self.decode_block_at(region, &blk, &mut vals)?;
            out.extend(head(&vals, n)?.iter().map(|&v| blk.base + v as u64));
        }
        Ok(())
    }

    /// Calls `f` with the stored bytes (little-endian) of every key in order.
    pub fn for_each_stored(
        &self,
        region: &[u8],
        n: usize,
        mut f: impl FnMut(&[u8]) -> SResult<()>,
    ) -> SResult<()> {
        // Bounded by the region: `n` is read from the page.
        let mut keys = Vec::with_capacity(n.min(region.len()));
        self.decode_all(region, &mut keys)?;
        if keys.len() != n {
            return Err(Fault("block key counts disagree with the node's"));
        }
        let mut raw = Vec::with_capacity(8);
        keys.iter().try_for_each(|&k| {
            raw.clear();
            self.put_key(k, &mut raw);
            f(&raw)
        })
    }

    /// Encodes `keys` in full blocks (cut further where a wide block would span over 32 bits,
    /// and with `cut` at outlier gaps: see `encode_split`).
    fn encode_full_with(&self, keys: &[u64], cut: bool) -> SResult<Encoded> {
        let mut e = Encoded::with_parts(keys.len().div_ceil(self.cap()));
        for chunk in keys.chunks(self.cap()) {
            self.encode_parts_with(chunk, 1, &mut e, cut)?;
        }
        Ok(e)
    }

    /// `encode_full_with` without outlier cuts: a repack that comes out no smaller is not used.
    fn encode_full(&self, keys: &[u64]) -> SResult<Encoded> {
        self.encode_full_with(keys, false)
    }

    /// Bytes a list holding exactly `keys` (sorted, unique) takes when built by [`Packed::build`].
    pub fn built_len(&self, keys: &[u64]) -> SResult<usize> {
        Ok(self.encoded_len(&self.encode_full_with(keys, true)?))
    }

    /// Bytes `vacuumize` makes a list holding exactly `keys` take (full blocks, no outlier
    /// cuts).
    #[cfg(test)]
    fn repacked_len(&self, keys: &[u64]) -> SResult<usize> {
        Ok(self.encoded_len(&self.encode_full(keys)?))
    }

    /// Rewrites `region` as a list of `keys` (sorted, unique) in full blocks. Returns false,
    /// with the region unspecified, when they do not fit.
    pub fn build(&self, region: &mut [u8], keys: &[u64]) -> SResult<bool> {
        if keys.last().is_some_and(|&k| k > self.max_key()) {
            return Err(Fault("key wider than the list's key type"));
        }
        let e = self.encode_full_with(keys, true)?;
        Ok(self.write_encoded(region, &e))
    }

    /// The header of a list of the blocks `e`: a u64 list's form follows the span of its keys.
    fn encoded_hdr(&self, e: &Encoded) -> Hdr {
        let span = match (e.blocks.first(), e.blocks.last()) {
            (Some((d0, b0, ..)), Some((d1, b1, ..))) => Some((
                b0.wrapping_add(d0.start as u64),
                b1.wrapping_add(d1.last as u64),
            )),
            _ => None,
        };
        self.hdr_for(e.blocks.len(), e.payload(), span)
    }

    /// Bytes a list of the blocks `e` takes.
    fn encoded_len(&self, e: &Encoded) -> usize {
        self.encoded_hdr(e).used()
    }

    /// Writes the blocks `e` as the whole list; false, with the region unspecified, when they
    /// do not fit.
    fn write_encoded(&self, region: &mut [u8], e: &Encoded) -> bool {
        let h = self.encoded_hdr(e);
        if h.used() > region.len() || h.data_end > u16::MAX as usize || h.nb >= BASED_FLAG as usize
        {
            return false;
        }
        let pstart = h.pstart();
        for (b, (d, base, c, r)) in e.blocks.iter().enumerate() {
            write_desc(region, h, b, r.start, d, *base, *c);
        }
        put(region, pstart, &e.bytes);
        write_hdr(region, h);
        true
    }

    /// Builds from stored key bytes (4 or 8 bytes each, ascending).
    pub fn build_stored(&self, region: &mut [u8], keys: &[&[u8]]) -> SResult<bool> {
        let ks = keys
            .iter()
            .map(|k| self.stored_key(k))
            .collect::<SResult<Vec<u64>>>()?;
        self.build(region, &ks)
    }

    /// Repacks the list: drops gaps and re-encodes the keys in full blocks, when that makes it
    /// smaller. Returns the bytes freed.
    ///
    /// With [`Repack::Spare`] (an insert found no room) the blocks are first packed a sixteenth
    /// short of full, and that is kept when it frees at least 1/256 of the region. A list
    /// repacked full leaves no slot free in any block, so nearly every random insert after it
    /// shares a full block with a neighbour (two blocks become three, one more frame) and the
    /// freed room is gone after a few dozen inserts: a 16 KiB BP128 leaf was repacked every ~50
    /// inserts, a quarter of a random load's instructions. Packed a sixteenth short, each block
    /// takes eight more keys in place first. `examples/space` 400000 bp128 (callgrind): 20%
    /// fewer instructions, the same leaf count; 2M keys: 126 leaves instead of 125.
    ///
    /// With [`Repack::Append`] (an insert past the last key found no room) a list whose blocks
    /// before the last are all full and that is not in the wide form repacks its last block
    /// only. In an ascending load every earlier block was encoded alone when it filled up (the
    /// next key started a block: `insert_in`), so a full repack cuts the keys into the same
    /// blocks and encodes them into the same bytes, and frees only what the last block does:
    /// repacking every block of the leaf each time it filled was 22% of an `auto` load's
    /// instructions and 6% of a PFOR-DELTA one's (`examples/append_load`, issue 21).
    pub fn vacuumize(&self, region: &mut [u8], how: Repack) -> SResult<usize> {
        if how == Repack::Append {
            if let Some(freed) = self.repack_last_block(region)? {
                return Ok(freed);
            }
        }
        let before = self.used(region)?;
        let mut keys = Vec::with_capacity(self.counts(region)?.0);
        self.decode_all(region, &mut keys)?;
        let cap = self.cap();
        let floor = region.len() / 256;
        let spare = matches!(how, Repack::Spare | Repack::Append);
        if spare && cap >= 16 && self.spare_may_free(region, keys.len(), floor)? {
            let per = cap - cap / 16;
            let mut e = Encoded::with_parts(keys.len().div_ceil(per));
            for chunk in keys.chunks(per) {
                self.encode_parts_with(chunk, 1, &mut e, false)?;
            }
            let after = self.encoded_len(&e);
            if after + floor <= before {
                if !self.write_encoded(region, &e) {
                    return Err(Fault(
                        "repacked key list does not fit where the old one did",
                    ));
                }
                return Ok(before - after);
            }
        }
        let e = self.encode_full(&keys)?;
        let after = self.encoded_len(&e);
        if after >= before {
            return Ok(0);
        }
        if !self.write_encoded(region, &e) {
            return Err(Fault(
                "repacked key list does not fit where the old one did",
            ));
        }
        Ok(before - after)
    }

    /// [`Repack::Append`]'s repack: when every block before the last is full and the list is
    /// not wide (a wide list may become based, which a full repack would do), the last block
    /// is encoded again alone, and written back when smaller. `None`, nothing done, otherwise;
    /// else the bytes freed.
    fn repack_last_block(&self, region: &mut [u8]) -> SResult<Option<usize>> {
        let h = self.hdr(region)?;
        let cap = self.cap();
        if h.wide() || h.nb == 0 || (0..h.nb - 1).any(|b| d_count(region, h, b) != cap) {
            return Ok(None);
        }
        let b = h.nb - 1;
        let blk = block_at(region, h, b)?;
        let mut keys = [0u64; MAX_BLOCK_KEYS];
        let n = self.decode_keys_at(region, &blk, &mut keys)?;
        if n == 0 {
            return Ok(None);
        }
        let mut e = Encoded::with_parts(1);
        self.encode_parts_with(head(&keys, n)?, 1, &mut e, false)?;
        let old = blk.at.len();
        let new = e.payload();
        if e.blocks.len() != 1 || new >= old {
            return Ok(Some(0));
        }
        if !splice(region, h, b, 1, &e.new_blocks())? {
            return Err(Fault("repacked block does not fit where the old one did"));
        }
        Ok(Some(old - new))
    }

    /// Whether packing `n` keys a sixteenth short of full could free `floor` bytes, estimated
    /// from the index alone: every block as large as the average non-empty one (a frame codec's
    /// blocks take a frame whatever their count). Once a leaf has been packed full, its blocks
    /// are fuller than that on average and the spare packing cannot free anything: on dense
    /// keys (`tersedb bench --order random`, ClusterData) it was encoded in vain before nearly
    /// every full repack, half of their cost.
    fn spare_may_free(&self, region: &[u8], n: usize, floor: usize) -> SResult<bool> {
        let h = self.hdr(region)?;
        let filled = (0..h.nb).filter(|&b| d_count(region, h, b) > 0).count();
        if filled == 0 {
            return Ok(false);
        }
        let cap = self.cap();
        let blocks = n.div_ceil(cap - cap / 16);
        let per_block = h.data_end / filled + h.dl;
        Ok(h.nb.saturating_sub(blocks) * per_block >= floor)
    }

    /// The list's blocks that may hold keys in `[lo, hi]`, in key order, replacing the
    /// contents of `out`: the block index is searched for `lo`. With the full range, the
    /// block counts are also checked against the node's `n`.
    pub fn scan_blocks(
        &self,
        region: &[u8],
        n: usize,
        lo: u64,
        hi: u64,
        out: &mut Vec<ScanBlock>,
    ) -> SResult<()> {
        out.clear();
        let full = lo == 0 && hi == u64::MAX;
        let h = self.hdr(region)?;
        let b0 = if full || h.nb == 0 {
            0
        } else {
            self.seek_block(region, lo)?
        };
        let mut start = slot_base(region, h, b0.min(h.nb));
        for b in b0..h.nb {
            let blk = block_at(region, h, b)?;
            let count = blk.desc.count as usize;
            if count == 0 {
                continue;
            }
            if blk.first > blk.last || out.last().is_some_and(|p| p.last >= blk.first) {
                return Err(Fault("block index out of key order"));
            }
            if blk.first > hi {
                break;
            }
            out.push(ScanBlock {
                first: blk.first,
                last: blk.last,
                count,
                start,
                index: b,
                desc: blk.desc,
                at: (blk.at.start, blk.at.end),
                base: blk.base,
                codec: blk.codec,
            });
            start += count;
        }
        if full && start != n {
            return Err(Fault("block index key counts disagree with the node's"));
        }
        Ok(())
    }

    /// Decodes the keys of `b` (listed by [`Packed::scan_blocks`] for this region) into `buf`.
    pub fn decode_scan_block<'b>(
        &self,
        region: &[u8],
        b: &ScanBlock,
        buf: &'b mut KeyBuffer,
    ) -> SResult<BlockKeys<'b>> {
        let blk = Block {
            desc: b.desc,
            at: b.at.0..b.at.1,
            first: b.first,
            last: b.last,
            base: b.base,
            codec: b.codec,
        };
        let n = self.decode_block_checked(region, &blk, &mut buf.u32s)?;
        if n != b.count {
            return Err(Fault("block decodes to a different key count"));
        }
        if !self.wide {
            return Ok(BlockKeys::U32(head(&buf.u32s, n)?));
        }
        for (o, &v) in buf.u64s.iter_mut().zip(head(&buf.u32s, n)?) {
            *o = b.base + v as u64;
        }
        Ok(BlockKeys::U64(head(&buf.u64s, n)?))
    }

    /// COUNT/MIN/MAX of the keys in `[fs.lo, fs.hi]` from two lower bounds (an index search
    /// and the codec's `lower_bound` in each boundary block, no decode) and the descriptors'
    /// counts between them: a range inside one leaf costs two block searches and a loop over
    /// the count fields, not a visit of every block. Blocks partly in the range count as
    /// decoded (searched), the others overlapping it as answered from the index.
    fn count_range(&self, region: &[u8], fs: FoldSpec, out: &mut KeyFold) -> SResult<()> {
        let h = self.hdr(region)?;
        let (b0, j0, v0) = self.lower_bound(region, h, fs.lo)?;
        // The count between the two bounds trusts the descriptors between them, which
        // `prove` proved in order with counts adding up to `n`.
        let Some(min) = v0.filter(|&v| v <= fs.hi) else {
            return Ok(());
        };
        // The end position: the lower bound of hi + 1 (the list's end past the key type).
        let (b1, j1) = match fs.hi.checked_add(1).filter(|&x| x <= self.max_key()) {
            Some(x) => {
                let (b, j, _) = self.lower_bound(region, h, x)?;
                (b, j)
            }
            None => (h.nb, 0),
        };
        if b1 < b0 || (b1 == b0 && j1 <= j0) {
            return Err(Fault("compressed block index out of order"));
        }
        // The last block holding a key in range: b1 when the end is inside it, else the
        // last non-empty block before b1 (one exists: `min` is in range).
        let last_b = if b1 < h.nb && j1 > 0 {
            b1
        } else {
            (b0..b1.min(h.nb))
                .rev()
                .find(|&b| d_count(region, h, b) > 0)
                .ok_or(Fault("compressed block index out of order"))?
        };
        let (mut count, mut blocks) = (0usize, 0u64);
        for b in b0..last_b {
            let c = d_count(region, h, b);
            count += c;
            blocks += u64::from(c > 0);
        }
        let last_count = d_count(region, h, last_b);
        let end = if last_b == b1 { j1 } else { last_count };
        count = (count + end)
            .checked_sub(j0)
            .ok_or(Fault("compressed block index out of order"))?;
        blocks += 1;
        let max = if end == last_count {
            d_last(region, h, last_b)
        } else {
            let blk = block_at(region, h, last_b)?;
            let v = Codec(blk.codec)
                .select(&blk.desc, bytes_at(region, &blk.at)?, end - 1)
                .map_err(cfault)?;
            blk.base.wrapping_add(v as u64)
        };
        // Partial boundary blocks were searched; every other overlapping block was not.
        let decoded = if b0 == last_b {
            u64::from(j0 > 0 || end < last_count)
        } else {
            u64::from(j0 > 0) + u64::from(end < last_count)
        };
        out.blocks_decoded += decoded;
        out.blocks_skipped += blocks - decoded;
        out.add(count as u64, 0, min, max);
        Ok(())
    }

    /// Folds the keys in `[fs.lo, fs.hi]` into `out` (Upscaledb paper, section 3.5: the block
    /// index is a zone map): a list wholly in the range answers COUNT/MIN/MAX from the ends of
    /// its index and the descriptors' counts and SUM in one loop over the descriptors; else
    /// the index is searched for `lo`, inner blocks are answered from their descriptors (SUM
    /// by the codec's in-register block sum or a decode into an L1 buffer) and only the
    /// boundary blocks are decoded and searched. Without SUM, [`Packed::count_range`].
    ///
    /// `n` is the node's key count: a whole-leaf fold, which takes the counts from the
    /// descriptors, checks they add up to it.
    pub fn fold_range(
        &self,
        region: &[u8],
        n: usize,
        fs: FoldSpec,
        out: &mut KeyFold,
    ) -> SResult<()> {
        // The codecs' block sums (BP128, SIMD FOR, PFOR, PFOR-DELTA, Rice), chosen once for
        // the leaf; an `auto` list asks per block.
        let isa = tersedb_codecs::Isa::detect();
        let sums = [
            BlockSum::new(isa, CodecId::Bp128),
            BlockSum::new(isa, CodecId::SimdFor),
            BlockSum::new(isa, CodecId::PforDelta),
            BlockSum::new(isa, CodecId::Pfor),
            BlockSum::new(isa, CodecId::Rice),
        ];
        let summer = |c: CodecId| match c {
            CodecId::Bp128 => sums[0],
            CodecId::SimdFor => sums[1],
            CodecId::PforDelta => sums[2],
            CodecId::Pfor => sums[3],
            CodecId::Rice => sums[4],
            _ => None,
        };
        if let Some((first, last)) = self.key_range(region)? {
            if first >= fs.lo && last <= fs.hi {
                if !fs.sum {
                    // The index is proven in order with counts adding up to `n`: MIN and MAX
                    // are the first and last blocks' edges.
                    let (_, blocks) = self.counts(region)?;
                    out.blocks_skipped += blocks as u64;
                    out.add(n as u64, 0, first, last);
                    return Ok(());
                }
                let r = self.sum_blocks(region, 0, u64::MAX, summer)?;
                out.blocks_decoded += r.blocks;
                out.add(r.keys, r.sum, first, last);
                return Ok(());
            }
        }
        if !fs.sum {
            return self.count_range(region, fs, out);
        }
        let mut buf = [0u32; MAX_BLOCK_KEYS];
        // Start at the block holding `lo` (the index is searched, not walked).
        let from = if fs.lo == 0 {
            0
        } else {
            self.seek_block(region, fs.lo)?
        };
        // The blocks before `lo`'s and after `hi`'s are skipped on the index's word (proven
        // in order by `prove`: the minimum and maximum are the first and last keys added).
        // This list's part, added to `out` once at the end: keys arrive in ascending order, so
        // the first key added is the minimum and the last the maximum.
        let mut part = KeyFold::default();
        let (mut min, mut max) = (0u64, 0u64);
        let mut add = |n: u64, sum: u128, first: u64, last: u64| {
            if part.count == 0 {
                min = first;
            }
            part.count += n;
            part.sum += sum;
            max = last;
        };
        // From the first whole block on, the blocks up to `hi` are summed as one run (the loop
        // of a whole leaf's SUM).
        let h = self.hdr(region)?;
        let mut b = from;
        while b < h.nb {
            let blk = block_at(region, h, b)?;
            let d = &blk.desc;
            b += 1;
            if d.count == 0 {
                continue;
            }
            let (first, last) = (blk.first, blk.last);
            if last < fs.lo {
                continue;
            }
            if first > fs.hi {
                break;
            }
            let based = |n: u64, s: u128| {
                if blk.base == 0 {
                    s
                } else {
                    s + blk.base as u128 * n as u128
                }
            };
            if first >= fs.lo && last <= fs.hi {
                let r = self.sum_blocks(region, b - 1, fs.hi, summer)?;
                part.blocks_decoded += r.blocks;
                add(r.keys, r.sum, first, r.last);
                b = r.end;
                continue;
            }
            // A boundary block: decode it and take the keys in range.
            let n = self.decode_block_at(region, &blk, &mut buf)?;
            part.blocks_decoded += 1;
            let vals = head(&buf, n)?;
            let key = |v: u32| blk.base + v as u64;
            // The bounds in the codec's values (first >= base, so hi >= base here).
            let lo = fs.lo.saturating_sub(blk.base).min(u32::MAX as u64 + 1);
            let hi = (fs.hi - blk.base).min(u32::MAX as u64);
            let a = vals.partition_point(|&v| (v as u64) < lo);
            let e = vals.partition_point(|&v| (v as u64) <= hi);
            if let Some(run @ [lo, .., hi] | run @ [lo @ hi]) = vals.get(a..e) {
                let s = tersedb_codecs::sum::sum_u32(run) as u128;
                let c = run.len() as u64;
                add(c, based(c, s), key(*lo), key(*hi));
            }
        }
        out.blocks_decoded += part.blocks_decoded;
        out.blocks_skipped += part.blocks_skipped;
        if part.count > 0 {
            out.add(part.count, part.sum, min, max);
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
    use super::*;

    /// The engine's buffers cover every codec: a block of the codec's most keys fits the key
    /// buffers, its worst payload the scratch buffers, and the byte codecs whose lookups decode
    /// into a buffer of `BYTE_CODEC_KEYS` hold no more.
    #[test]
    fn buffers_cover_every_codec() {
        let mut most = 0;
        for c in CodecId::ALL {
            let max = Codec(c).max_keys();
            assert!(max <= MAX_BLOCK_KEYS, "{c}: {max} keys");
            assert!(Codec(c).max_payload_len(max) <= SCRATCH, "{c}");
            most = most.max(max);
        }
        assert_eq!(most, MAX_BLOCK_KEYS);
        assert_eq!(MAX_BLOCK_KEYS, 511);
        for c in [
            CodecId::StreamVByte,
            CodecId::VarIntGb,
            CodecId::MaskedVByte,
        ] {
            assert!(Codec(c).max_keys() <= BYTE_CODEC_KEYS, "{c}");
        }
    }

    fn check(p: &Packed, region: &[u8], model: &[u64]) {
        let mut all = Vec::new();
        p.decode_all(region, &mut all).unwrap();
        assert_eq!(all, model);
        let nb = p.blocks(region).unwrap();
        let mut prev_last: Option<u64> = None;
        for b in 0..nb {
            p.validate_block(region, b).unwrap();
            let blk = p.block(region, b).unwrap();
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
        let nb = p.blocks(region).unwrap();
        let (mut keys, mut blocks) = (0usize, 0usize);
        for b in 0..nb {
            let c = p.block(region, b).unwrap().desc.count as usize;
            if c > 0 {
                keys += c;
                blocks += 1;
            }
        }
        keys as f64 / (blocks * p.cap()).max(1) as f64
    }

    /// `append_in_place` is `insert`'s append step: where it appends, the region is the one
    /// `insert` of the same key makes, byte for byte; where it declines, nothing changed; keys
    /// not above the last are told apart. Every codec and `auto`, u32, based and wide lists,
    /// after random inserts (gaps, partly full blocks) and ascending runs.
    #[test]
    fn append_in_place_is_inserts_append() {
        let mut cases: Vec<(Option<CodecId>, bool)> = Vec::new();
        for c in CodecId::ALL {
            cases.push((Some(c), false));
            cases.push((Some(c), true));
        }
        cases.push((None, false));
        cases.push((None, true));
        for (codec, wide) in cases {
            let mut rng = fastrand::Rng::with_seed(21 + codec.map_or(99, |c| c as u64));
            let p = Packed {
                codec: codec.unwrap_or(CodecId::Bp128),
                block_keys: if codec.is_none() { 129 } else { 257 },
                wide,
                auto: codec.is_none(),
            };
            let mut region = vec![0u8; 40_000];
            Packed::init(&mut region);
            let mut model: Vec<u64> = Vec::new();
            let off = if wide { 3u64 << 33 } else { 0 };
            let mut next = off;
            let mut appended = 0;
            for round in 0..6000 {
                let w = rng.u32(1..20);
                let key = if round % 3 == 0 {
                    off + rng.u64(..next - off + 50)
                } else {
                    next + rng.u64(1..1 << w)
                };
                let mut fast = region.clone();
                let got = p.append_in_place(&mut fast, key).unwrap();
                if got != Some(true) {
                    assert!(fast == region, "{codec:?}: declined, yet changed");
                }
                let pos = model.partition_point(|&k| k < key);
                let above = model.last().is_none_or(|&l| key > l);
                match p.insert(&mut region, model.len(), key).unwrap() {
                    Ins::Inserted(s) => {
                        assert_eq!(s, pos);
                        model.insert(pos, key);
                    }
                    Ins::Exists(_) => {}
                    Ins::NoRoom(_) => break,
                }
                next = next.max(key);
                if got == Some(true) {
                    assert!(above, "{codec:?} appended {key} below the last key");
                    assert!(fast == region, "{codec:?} wide {wide} round {round}");
                    appended += 1;
                } else if got == Some(false) {
                    assert!(
                        !above || round == 0,
                        "{codec:?}: {key} is above the last key"
                    );
                }
            }
            assert!(
                appended > 1000,
                "{codec:?} wide {wide}: {appended} appends in place"
            );
            check(&p, &region, &model);
        }
    }

    /// Random inserts share a full block's keys with a neighbour (blocks stay at least about
    /// two-thirds full, not half); removes merge half-empty blocks with a neighbour, so the list
    /// stays close to the size of a fresh build of its keys.
    #[test]
    fn random_inserts_fill_blocks_and_removes_merge_them() {
        for codec in CodecId::ALL {
            for wide in [false, true] {
                let mut rng = fastrand::Rng::with_seed(5 + codec as u64);
                let p = Packed {
                    codec,
                    block_keys: 257,
                    wide,
                    auto: false,
                };
                // Wide keys: the same deltas far above 2^32.
                let off = if wide { 7u64 << 40 } else { 0 };
                let mut region = vec![0u8; 60_000];
                Packed::init(&mut region);
                let mut model: Vec<u64> = Vec::new();
                while model.len() < 4000 {
                    let key = off + rng.u32(0..4_000_000) as u64;
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
                let size = p.used(&region).unwrap() as f64 / p.built_len(&model).unwrap() as f64;
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
                // Blocks merged where that is no larger (FOR keeps small blocks of narrow ranges; a
                // BP128 pair whose merge would widen the bit width stays two blocks: 1.25x here).
                let size = p.used(&region).unwrap() as f64 / p.built_len(&model).unwrap() as f64;
                assert!(
                    size <= 1.3,
                    "{codec:?} wide {wide}: {size:.2}x a fresh build after removes"
                );
            }
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
            for (block_keys, wide) in [(4u16, false), (257, false), (4, true), (257, true)] {
                // The auto list once per width and block size (its codec is per block).
                let auto = codec == CodecId::Bp128;
                let p = Packed {
                    codec,
                    block_keys,
                    wide,
                    auto,
                };
                let mut region = vec![0xA5u8; 3000];
                Packed::init(&mut region);
                let mut model: Vec<u64> = Vec::new();
                // Wide lists also take keys more than 2^32 apart (blocks cut by span) and keys
                // near the top of the range.
                let spreads: &[u64] = if wide {
                    &[3, 1000, u32::MAX as u64 * 3, u64::MAX]
                } else {
                    &[3, 1000, u32::MAX as u64]
                };
                let spread = spreads[rng.usize(0..spreads.len())];
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
                                .map_or(0, |&l| l.saturating_add(rng.u64(1..=spread.min(99))))
                        } else {
                            rng.u64(0..=spread)
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
                                let how = [Repack::Tight, Repack::Spare][rng.usize(..2)];
                                let freed = p.vacuumize(&mut region, how).unwrap();
                                let _ = freed;
                            }
                        }
                    }
                    if step % 97 == 0 {
                        let used = p.used(&region).unwrap();
                        region[used..].fill(0x5A);
                        check(&p, &region, &model);
                    }
                    for probe in [rng.u64(0..=spread), model.first().copied().unwrap_or(0)] {
                        let want = model.binary_search(&probe);
                        assert_eq!(
                            p.search(&region, probe).unwrap(),
                            want,
                            "{codec:?} probe {probe}"
                        );
                        let found = p.lookup(&region, probe).unwrap();
                        let range = p.key_range(&region).unwrap();
                        assert_eq!(
                            found,
                            if want.is_ok() {
                                Lookup::Hit
                            } else {
                                Lookup::Miss(range)
                            }
                        );
                    }
                }
                check(&p, &region, &model);
                let used = p.used(&region).unwrap();
                p.vacuumize(&mut region, Repack::Tight).unwrap();
                assert!(p.used(&region).unwrap() <= used);
                check(&p, &region, &model);
                assert_eq!(
                    p.repacked_len(&model).unwrap().min(used),
                    p.used(&region).unwrap().min(used)
                );
                // A rebuild may cut blocks at outlier gaps; never larger than the repack.
                assert!(p.built_len(&model).unwrap() <= p.repacked_len(&model).unwrap());
            }
        }
    }

    /// A block whose payload (its offsets say) is longer than any codec writes: inserts and
    /// removes into it fault instead of overrunning their one-block buffer.
    #[test]
    fn an_oversized_block_faults() {
        let p = Packed {
            codec: CodecId::VByte,
            block_keys: 257,
            wide: false,
            auto: false,
        };
        let mut region = vec![0u8; 4096];
        Packed::init(&mut region);
        let keys: Vec<u64> = (0..100).map(|i| i * 2).collect();
        assert!(p.build(&mut region, &keys).unwrap());
        assert_eq!(p.blocks(&region).unwrap(), 1);
        // The list's payload end moved past `SCRATCH` bytes: the one block now spans them.
        region[2..4].copy_from_slice(&(SCRATCH as u16 + 100).to_le_bytes());
        assert!(p.insert(&mut region.clone(), 100, 51).is_err());
        assert!(p.remove(&mut region.clone(), 50).is_err());
    }

    /// A payload forged behind a valid checksum decodes, but never into keys the read paths
    /// return: every byte of a block's payload changed in turn, a decode (cursor, scan) either
    /// faults or gives the descriptor's count of strictly ascending keys from its first to its
    /// last, for every codec.
    #[test]
    fn forged_payloads_decode_to_ordered_keys_or_fault() {
        for codec in CodecId::ALL {
            let p = Packed {
                codec,
                block_keys: 129,
                wide: false,
                auto: false,
            };
            let mut region = vec![0u8; 2048];
            Packed::init(&mut region);
            let keys: Vec<u64> = (0..100).map(|i| 1000 + i * 37 + (i * i) % 11).collect();
            assert!(p.build(&mut region, &keys).unwrap());
            let blk = p.block(&region, 0).unwrap();
            let mut faults = 0;
            for at in blk.at.clone() {
                for mask in [0x01u8, 0x10, 0x80, 0xff] {
                    let mut r = region.clone();
                    r[at] ^= mask;
                    let mut out = [0u32; MAX_BLOCK_KEYS];
                    match p.decode_block_checked(&r, &blk, &mut out) {
                        Ok(n) => {
                            let v = &out[..n];
                            assert_eq!(n, blk.desc.count as usize, "{codec:?} byte {at}");
                            assert_eq!((v[0], v[n - 1]), (blk.desc.start, blk.desc.last));
                            assert!(v.windows(2).all(|w| w[0] < w[1]), "{codec:?} byte {at}");
                        }
                        Err(_) => faults += 1,
                    }
                }
            }
            // Most changes to a payload move a key: they are caught, not passed on.
            assert!(faults > 0, "{codec:?}: no forged payload faulted");
        }
    }

    #[test]
    fn malformed_regions_fault_without_panic() {
        for wide in [false, true] {
            let p = Packed {
                codec: CodecId::Bp128,
                block_keys: 129,
                wide,
                auto: wide,
            };
            let mut rng = fastrand::Rng::with_seed(11);
            let mut region = vec![0u8; 600];
            Packed::init(&mut region);
            let keys: Vec<u64> = (0..300).map(|i| i * 3).collect();
            assert!(p.build(&mut region, &keys).unwrap());
            for _ in 0..3000 {
                let mut r = region.clone();
                for _ in 0..rng.usize(1..4) {
                    let i = rng.usize(0..r.len());
                    r[i] = rng.u8(..);
                }
                let mut out = Vec::new();
                let _ = p.decode_all(&r, &mut out);
                let _ = p.search(&r, rng.u64(0..1000));
                let _ = p.key(&r, rng.usize(0..400));
                let _ = p.insert(&mut r.clone(), 300, rng.u64(0..1000));
                let _ = p.remove(&mut r.clone(), rng.usize(0..400));
                let _ = p.vacuumize(&mut r.clone(), Repack::Spare);
            }
        }
    }

    /// Folds and block scans of random ranges match the model, for u32 and u64 lists (u64 keys
    /// near 2^64, and spread wider than 2^32 so blocks are cut by span), every codec.
    #[test]
    fn folds_and_block_scans_match_the_model() {
        let mut rng = fastrand::Rng::with_seed(17);
        for codec in CodecId::ALL {
            for (wide, auto) in [(false, false), (true, false), (true, codec == CodecId::For)] {
                let p = Packed {
                    codec,
                    block_keys: 257,
                    wide,
                    auto,
                };
                let mut model: Vec<u64> = (0..3000)
                    .map(|_| match (wide, rng.u8(0..3)) {
                        (false, _) => rng.u64(0..=u32::MAX as u64),
                        (true, 0) => u64::MAX - rng.u64(0..100_000),
                        (true, 1) => rng.u64(..),
                        (true, _) => (1u64 << 50) + rng.u64(0..1_000_000),
                    })
                    .collect();
                model.sort_unstable();
                model.dedup();
                let mut region = vec![0u8; 60_000];
                Packed::init(&mut region);
                // Built from random-order inserts, then a few removes.
                let mut order = model.clone();
                rng.shuffle(&mut order);
                let mut have: Vec<u64> = Vec::new();
                for &k in &order {
                    let pos = have.partition_point(|&x| x < k);
                    assert_eq!(
                        p.insert(&mut region, have.len(), k).unwrap(),
                        Ins::Inserted(pos)
                    );
                    have.insert(pos, k);
                }
                for _ in 0..300 {
                    let i = rng.usize(0..have.len());
                    assert_eq!(p.remove(&mut region, i).unwrap(), None);
                    have.remove(i);
                }
                check(&p, &region, &have);
                let mut blocks = Vec::new();
                let mut buf = KeyBuffer::default();
                for round in 0..200 {
                    let (mut lo, mut hi) = (
                        have[rng.usize(0..have.len())],
                        have[rng.usize(0..have.len())],
                    );
                    if lo > hi {
                        std::mem::swap(&mut lo, &mut hi);
                    }
                    if round == 0 {
                        (lo, hi) = (0, u64::MAX);
                    }
                    lo = lo.saturating_sub(rng.u64(0..3));
                    // Upper ends between keys, and ranges between two keys (often empty).
                    hi = hi.saturating_add(rng.u64(0..3));
                    if round % 10 == 5 {
                        (lo, hi) = (hi.saturating_add(1), hi.saturating_add(2));
                    }
                    let want: Vec<u64> = have
                        .iter()
                        .copied()
                        .filter(|&k| k >= lo && k <= hi)
                        .collect();
                    for sum in [false, true] {
                        let mut f = KeyFold::default();
                        p.fold_range(&region, have.len(), FoldSpec { lo, hi, sum }, &mut f)
                            .unwrap();
                        assert_eq!(f.count, want.len() as u64, "{codec:?} wide {wide}");
                        assert_eq!(f.min, want.first().copied());
                        assert_eq!(f.max, want.last().copied());
                        if sum {
                            assert_eq!(f.sum, want.iter().map(|&k| k as u128).sum::<u128>());
                        }
                    }
                    p.scan_blocks(&region, have.len(), lo, hi, &mut blocks)
                        .unwrap();
                    let mut got = Vec::new();
                    for b in &blocks {
                        let keys = p.decode_scan_block(&region, b, &mut buf).unwrap();
                        assert_eq!(keys.len(), b.count);
                        assert_eq!((keys.at(0), keys.at(b.count - 1)), (b.first, b.last));
                        for i in 0..keys.len() {
                            assert_eq!(have[b.start + i], keys.at(i));
                            got.push(keys.at(i));
                        }
                    }
                    got.retain(|&k| k >= lo && k <= hi);
                    assert_eq!(got, want, "{codec:?} wide {wide} [{lo}, {hi}]");
                }
            }
        }
    }

    /// Range SUMs over clustered keys (runs of steps 1-3 with rare gaps: PFOR-DELTA's narrow
    /// codes with exceptions, the blocks `auto` gives to PFOR-DELTA) match the model, for every
    /// codec with a block sum, single-codec and `auto` lists, u32 and u64 keys, appended in
    /// order (full blocks) and inserted at random (partial ones).
    #[test]
    fn block_sums_in_folds_match_the_model() {
        let mut rng = fastrand::Rng::with_seed(21);
        for codec in [
            CodecId::PforDelta,
            CodecId::Pfor,
            CodecId::Bp128,
            CodecId::SimdFor,
        ] {
            for (wide, auto, ascending) in [
                (false, false, true),
                (false, false, false),
                (true, false, true),
                (false, true, true),
                (true, true, false),
            ] {
                let p = Packed {
                    codec,
                    block_keys: 129,
                    wide,
                    auto,
                };
                let mut k: u64 = if wide { 1 << 40 } else { rng.u64(0..1000) };
                let model: Vec<u64> = (0..2500)
                    .map(|_| {
                        k += match rng.u8(0..40) {
                            0 => rng.u64(4..5000),
                            1..=4 => rng.u64(2..4),
                            _ => 1,
                        };
                        k
                    })
                    .collect();
                let mut region = vec![0u8; 60_000];
                Packed::init(&mut region);
                if ascending {
                    assert!(p.build(&mut region, &model).unwrap());
                } else {
                    let mut order = model.clone();
                    rng.shuffle(&mut order);
                    let mut have: Vec<u64> = Vec::new();
                    for &k in &order {
                        let pos = have.partition_point(|&x| x < k);
                        p.insert(&mut region, have.len(), k).unwrap();
                        have.insert(pos, k);
                    }
                }
                check(&p, &region, &model);
                if auto {
                    let nb = p.blocks(&region).unwrap();
                    let pd = (0..nb)
                        .filter(|&b| p.block(&region, b).unwrap().codec == CodecId::PforDelta)
                        .count();
                    assert!(pd > 0, "auto chose PFOR-DELTA for none of {nb} blocks");
                }
                for round in 0..100 {
                    let (mut lo, mut hi) = (
                        model[rng.usize(0..model.len())],
                        model[rng.usize(0..model.len())],
                    );
                    if lo > hi {
                        std::mem::swap(&mut lo, &mut hi);
                    }
                    if round == 0 {
                        (lo, hi) = (0, u64::MAX);
                    }
                    let want = model.iter().filter(|&&k| k >= lo && k <= hi);
                    let (count, sum) =
                        want.fold((0u64, 0u128), |(c, s), &k| (c + 1, s + k as u128));
                    let mut f = KeyFold::default();
                    p.fold_range(&region, model.len(), FoldSpec { lo, hi, sum: true }, &mut f)
                        .unwrap();
                    let what = format!("{codec:?} wide {wide} auto {auto} [{lo}, {hi}]");
                    assert_eq!((f.count, f.sum), (count, sum), "{what}");
                }
            }
        }
    }

    /// What lets a list change form by rewriting descriptors alone (re-basing a based list,
    /// turning it wide, extracting a wide list's blocks into a based one): every codec's
    /// payload, bit width and size depend only on the values minus the block's start value.
    #[test]
    fn codec_payloads_do_not_depend_on_the_start_value() {
        let mut rng = fastrand::Rng::with_seed(29);
        for codec in CodecId::ALL {
            let c = Codec(codec);
            for _ in 0..200 {
                let n = rng.usize(1..=c.max_keys());
                let mut v = 0u32;
                let gap = [3, 300, 70_000][rng.usize(0..3)];
                let vals: Vec<u32> = (0..n)
                    .map(|_| {
                        v += rng.u32(1..gap);
                        v
                    })
                    .collect();
                let shift = rng.u32(0..=u32::MAX - v);
                let moved: Vec<u32> = vals.iter().map(|&x| x + shift).collect();
                let (mut a, mut b) = ([0u8; SCRATCH], [0u8; SCRATCH]);
                let da = c.encode(&vals, &mut a).unwrap();
                let db = c.encode(&moved, &mut b).unwrap();
                assert_eq!((da.size, da.bits, da.count), (db.size, db.bits, db.count));
                assert_eq!(a[..da.size as usize], b[..db.size as usize], "{codec:?}");
                // And the moved descriptor decodes the first payload to the moved values.
                let mut out = [0u32; MAX_BLOCK_KEYS];
                let k = c.decode(&db, &a[..da.size as usize], &mut out).unwrap();
                assert_eq!(&out[..k], &moved[..], "{codec:?}");
            }
        }
    }

    /// A u64 list is based (one base, 12-byte descriptors) while its keys span at most
    /// 2^32 - 1: it re-bases in place for a key below its base, turns wide for a key beyond
    /// its frame (and on `NoRoom` stays as it was), and comes back based when a repack or an
    /// extract finds its keys within one frame again. A list in the wide form as files before
    /// the based form hold it (no flag) reads and takes inserts and removes.
    #[test]
    fn u64_lists_change_form_with_their_key_span() {
        for codec in CodecId::ALL {
            for auto in [false, true] {
                let p = Packed {
                    codec,
                    block_keys: 129,
                    wide: true,
                    auto,
                };
                let top = 5u64 << 40;
                let mut region = vec![0u8; 16_000];
                Packed::init(&mut region);
                let mut model: Vec<u64> = (0..2000).map(|i| top + i * 7).collect();
                for (i, &k) in model.iter().enumerate() {
                    assert_eq!(p.insert(&mut region, i, k).unwrap(), Ins::Inserted(i));
                }
                assert_eq!(p.frame_base(&region).unwrap(), Some(top));
                assert_eq!(p.desc_bytes(&region).unwrap(), DESC + usize::from(auto));
                // Below the base: re-based in place, still based.
                assert_eq!(
                    p.insert(&mut region, 2000, top - 5).unwrap(),
                    Ins::Inserted(0)
                );
                model.insert(0, top - 5);
                assert_eq!(p.frame_base(&region).unwrap(), Some(top - 5));
                assert_eq!(p.desc_bytes(&region).unwrap(), DESC + usize::from(auto));
                check(&p, &region, &model);
                // The first key removed in place; the base stays.
                assert_eq!(p.remove(&mut region, 0).unwrap(), None);
                model.remove(0);
                assert_eq!(p.frame_base(&region).unwrap(), Some(top - 5));
                check(&p, &region, &model);
                // A key beyond the frame: no room in a tight region, room in a large one.
                let far = top + (1 << 33);
                let used = p.used(&region).unwrap();
                let mut tight = region[..used + 8].to_vec();
                match p.insert(&mut tight, model.len(), far).unwrap() {
                    Ins::NoRoom(need) => assert!(need > tight.len()),
                    other => panic!("{codec:?}: {other:?} in a tight region"),
                }
                assert_eq!(tight[..], region[..used + 8]);
                let n = model.len();
                assert_eq!(p.insert(&mut region, n, far).unwrap(), Ins::Inserted(n));
                model.push(far);
                assert_eq!(p.frame_base(&region).unwrap(), None);
                assert_eq!(
                    p.desc_bytes(&region).unwrap(),
                    DESC_WIDE + usize::from(auto)
                );
                check(&p, &region, &model);
                for probe in [top - 5, top, top + 7, far, far - 1, far + 1] {
                    assert_eq!(
                        p.search(&region, probe).unwrap(),
                        model.binary_search(&probe)
                    );
                }
                // Its blocks split off without the far key are based again.
                let nb = p.blocks(&region).unwrap();
                let mut left = Vec::new();
                p.extract(&region, 0..nb - 1, &mut left).unwrap();
                assert_eq!(p.frame_base(&left).unwrap(), Some(model[0]));
                check(&p, &left, &model[..n]);
                let mut right = Vec::new();
                p.extract(&region, nb - 1..nb, &mut right).unwrap();
                // One block stays wide: based it would take 4 bytes more.
                assert_eq!(p.frame_base(&right).unwrap(), None);
                check(&p, &right, &[far]);
                // Removed again, a repack brings the list back to the based form.
                assert_eq!(p.remove(&mut region, n).unwrap(), None);
                model.pop();
                assert!(p.vacuumize(&mut region, Repack::Tight).unwrap() > 0);
                assert_eq!(p.frame_base(&region).unwrap(), Some(model[0]));
                check(&p, &region, &model);
                // The wide form of an older file: the same blocks without the flag.
                let h = p.hdr(&region).unwrap();
                let mut old = Vec::new();
                p.image(&region, h, 0..h.nb, true, &mut old).unwrap();
                assert_eq!(le_u16(&old) & BASED_FLAG, 0);
                old.resize(16_000, 0xA5);
                assert_eq!(p.frame_base(&old).unwrap(), None);
                check(&p, &old, &model);
                assert_eq!(
                    p.insert(&mut old, model.len(), top + 3).unwrap(),
                    Ins::Inserted(1)
                );
                model.insert(1, top + 3);
                assert_eq!(p.remove(&mut old, 0).unwrap(), None);
                model.remove(0);
                check(&p, &old, &model);
                p.vacuumize(&mut old, Repack::Tight).unwrap();
                assert_eq!(p.frame_base(&old).unwrap(), Some(model[0]));
                check(&p, &old, &model);
            }
        }
    }

    /// The time-series issue's target at the list level: u64 keys of small deltas take within
    /// 5% of the bytes the same keys take as u32 (the based form's descriptors are the u32
    /// ones; the wide form's 4 bytes more per block were 5.3% with BP128).
    #[test]
    fn based_u64_lists_cost_what_u32_lists_cost() {
        let mut rng = fastrand::Rng::with_seed(31);
        let mut k = 1_764_000_000u64;
        let keys: Vec<u64> = (0..3000)
            .map(|_| {
                k += rng.u64(1..=10);
                k
            })
            .collect();
        for codec in CodecId::ALL {
            let list = |wide| Packed {
                codec,
                block_keys: 257,
                wide,
                auto: false,
            };
            let narrow = list(false).built_len(&keys).unwrap();
            let far: Vec<u64> = keys.iter().map(|&k| k + (1 << 40)).collect();
            let wide = list(true).built_len(&far).unwrap();
            assert_eq!(wide, narrow + HEADER_BASED - HEADER, "{codec:?}");
        }
    }

    /// `auto` picks per block: a list of it is within a ninth of the smallest single candidate
    /// (a faster codec may win a block by up to a tenth), and mixes codecs where the keys
    /// change character (dense runs, clustered ids, uniform gaps with outliers).
    #[test]
    fn auto_is_near_the_best_single_codec_and_mixes() {
        let mut rng = fastrand::Rng::with_seed(23);
        let mut keys: Vec<u64> = Vec::new();
        let mut k = 1_000u64;
        for part in 0..12 {
            for _ in 0..700 {
                k += match part % 3 {
                    0 => 1,
                    1 => rng.u64(1..40),
                    _ => {
                        if rng.u8(0..20) == 0 {
                            rng.u64(1..1 << 24)
                        } else {
                            rng.u64(1..8)
                        }
                    }
                };
                keys.push(k);
            }
        }
        for wide in [false, true] {
            let off = if wide { 1u64 << 45 } else { 0 };
            let keys: Vec<u64> = keys.iter().map(|&k| k + off).collect();
            let list = |codec, auto| Packed {
                codec,
                block_keys: 129,
                wide,
                auto,
            };
            let auto = list(CodecId::Bp128, true);
            let best = AUTO_CODECS
                .iter()
                .map(|&c| list(c, false).built_len(&keys).unwrap())
                .min()
                .unwrap();
            let got = auto.built_len(&keys).unwrap();
            assert!(
                (got as f64) <= best as f64 * 1.12,
                "auto {got} bytes, best single codec {best}"
            );
            let mut region = vec![0u8; 64 * 1024];
            Packed::init(&mut region);
            assert!(auto.build(&mut region, &keys).unwrap());
            check(&auto, &region, &keys);
            let mut used = std::collections::BTreeSet::new();
            for b in 0..auto.blocks(&region).unwrap() {
                used.insert(auto.block(&region, b).unwrap().codec as u8);
            }
            assert!(used.len() >= 2, "one codec for every block: {used:?}");
            // A damaged codec byte is a fault, not a panic or a wrong decode.
            let mut bad = region.clone();
            let hs = if wide { HEADER_BASED } else { HEADER };
            assert_eq!(auto.frame_base(&region).unwrap(), wide.then_some(keys[0]));
            bad[hs + auto.desc_bytes(&region).unwrap() - 1] = 200;
            assert!(auto.validate_block(&bad, 0).is_err());
            let mut out = Vec::new();
            assert!(auto.decode_all(&bad, &mut out).is_err());
        }
    }
}
