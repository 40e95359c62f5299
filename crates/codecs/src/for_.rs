//! FOR: frame of reference, offsets from the start key packed horizontally at `b` bits each.
//!
//! ```text
//! Descriptor { start, count <= 257, last, bits = b = width(last - start), size = ceil(n*b / 8) }
//! payload:  [frame 0: o0..o31, 4b bytes][frame 1: o32..o63]...[last frame: only its values]
//! o[i] = keys[i+1] - start, i < n = count - 1; value i at bits i*b.. (LSB first, see crate::bits)
//! ```
//!
//! Full 32-value frames take `4b` bytes each (`b` little-endian words); the last frame packs only
//! the values it has, so the payload is exactly `ceil(n*b/8)` bytes, and the unused high bits of
//! its last byte are zero. Blocks of 0 or 1 key have no payload and `b = 0`.
//!
//! `select(i)` reads one value straight from the bits (O(1)); `lower_bound` compares the eight
//! offsets around the position interpolated from the first and last key and, when they do not
//! bracket the key, binary-searches the packed offsets (no decode either way); `fold`'s SUM is
//! `count * start + sum of offsets`, unpacked one 32-value frame at a time. `append` writes one
//! offset in place while it fits in `b`; insert and remove decode, modify and re-encode (remove
//! never grows the block).

use crate::bits::{self, packed_len, width};
use crate::rewrite;
use crate::{
    AppendOutcome, BlockCodec, CodecError, CodecId, Descriptor, Fold, InsertOutcome, RemoveOutcome,
    Result,
};

/// The FOR codec (zero-sized; see the module docs for the format).
#[derive(Clone, Copy, Debug, Default)]
pub struct For;

/// Most keys of a block: the start key plus 256 offsets (8 frames of 32).
const MAX: usize = 257;
const FRAME: usize = 32;

fn corrupt(what: &'static str) -> CodecError {
    CodecError::Corrupt { what }
}

fn invalid(what: &'static str) -> CodecError {
    CodecError::InvalidInput { what }
}

/// Cheap descriptor checks; returns `(b, n)`.
#[inline]
fn check(d: &Descriptor, payload: &[u8]) -> Result<(u32, usize)> {
    if !crate::check_head(d, MAX, "count exceeds 257")? {
        return Ok((0, 0));
    }
    let count = d.count as usize;
    let b = d.bits as u32;
    if b != width(d.last - d.start) {
        return Err(corrupt("bit width is not width(last - start)"));
    }
    let n = count - 1;
    if d.size as usize != packed_len(n, b) {
        return Err(corrupt("size is not ceil(n * bits / 8)"));
    }
    if d.size as usize > payload.len() {
        return Err(corrupt("size exceeds payload"));
    }
    Ok((b, n))
}

/// Unpacks offsets `first..first + out.len()` (within one or more frames) into `out`.
fn offsets(payload: &[u8], b: u32, first: usize, out: &mut [u32]) -> Result<()> {
    for (k, o) in out.iter_mut().enumerate() {
        *o = bits::get(payload, b, first + k).ok_or(corrupt("offsets"))?;
    }
    Ok(())
}

/// Inserts offset `insert` at position `at` (or removes the offset at `at` when `None`) of the
/// `n` packed offsets, repacking from `at`'s 32-value frame on; earlier frames are untouched. The
/// caller has checked that the new length fits `payload`.
fn shift_tail(payload: &mut [u8], b: u32, n: usize, at: usize, insert: Option<u32>) -> Result<()> {
    let first = at / FRAME * FRAME;
    let from = first * b as usize / 8; // byte-aligned: 32 values take 4b bytes
    let mut buf = [0u32; MAX];
    let old = n - first;
    bits::unpack(&payload[from..], b, &mut buf[..old]).ok_or(corrupt("offsets"))?;
    let rel = at - first;
    let new = match insert {
        Some(o) => {
            buf.copy_within(rel..old, rel + 1);
            buf[rel] = o;
            old + 1
        }
        None => {
            buf.copy_within(rel + 1..old, rel);
            old - 1
        }
    };
    bits::pack(&buf[..new], b, &mut payload[from..]);
    Ok(())
}

impl BlockCodec for For {
    const ID: CodecId = CodecId::For;
    const MAX_KEYS: usize = MAX;

    fn max_payload_len(count: usize) -> usize {
        packed_len(count.saturating_sub(1), 32)
    }

    /// The offsets after the start key, packed at the widest one's width.
    fn encoded_len(keys: &[u32]) -> Option<usize> {
        let n = keys.len().saturating_sub(1);
        let b = match (keys.first(), keys.last()) {
            (Some(&start), Some(&last)) if n > 0 => crate::bits::width(last.wrapping_sub(start)),
            _ => 0,
        };
        Some(crate::bits::packed_len(n, b))
    }

    fn encode(keys: &[u32], out: &mut [u8]) -> Result<Descriptor> {
        if keys.len() > MAX {
            return Err(invalid("more than 257 keys"));
        }
        // Branch-free order check (no early exit, so it vectorises).
        if keys.windows(2).fold(false, |bad, w| bad | (w[1] <= w[0])) {
            return Err(invalid("keys not strictly increasing"));
        }
        let (Some(&start), Some(&last)) = (keys.first(), keys.last()) else {
            return Ok(Descriptor::default());
        };
        let n = keys.len() - 1;
        let b = if n == 0 { 0 } else { width(last - start) };
        let size = packed_len(n, b);
        if out.len() < size {
            return Err(CodecError::NoRoom {
                needed: size,
                available: out.len(),
            });
        }
        let mut buf = [0u32; MAX - 1];
        for (o, &k) in buf.iter_mut().zip(&keys[1..]) {
            *o = k - start;
        }
        bits::pack(&buf[..n], b, out);
        Ok(Descriptor {
            start,
            count: keys.len() as u32,
            last,
            size: size as u32,
            bits: b as u8,
        })
    }

    fn decode(desc: &Descriptor, payload: &[u8], out: &mut [u32]) -> Result<usize> {
        let (b, n) = check(desc, payload)?;
        let count = desc.count as usize;
        if out.len() < count {
            return Err(invalid("output shorter than count"));
        }
        if count == 0 {
            return Ok(0);
        }
        out[0] = desc.start;
        let rest = &mut out[1..count];
        bits::unpack(&payload[..desc.size as usize], b, rest).ok_or(corrupt("offsets"))?;
        let start = desc.start;
        for k in rest.iter_mut().take(n) {
            *k = k.wrapping_add(start);
        }
        Ok(count)
    }

    #[inline]
    fn select(desc: &Descriptor, payload: &[u8], i: usize) -> Result<u32> {
        let (b, _) = check(desc, payload)?;
        if i >= desc.count as usize {
            return Err(invalid("slot out of range"));
        }
        if i == 0 {
            return Ok(desc.start);
        }
        let o = bits::get(payload, b, i - 1).ok_or(corrupt("offsets"))?;
        Ok(desc.start.wrapping_add(o))
    }

    #[inline]
    fn lower_bound(desc: &Descriptor, payload: &[u8], key: u32) -> Result<(usize, Option<u32>)> {
        let (b, n) = check(desc, payload)?;
        let count = desc.count as usize;
        if count == 0 || key > desc.last {
            return Ok((count, None));
        }
        if key <= desc.start {
            return Ok((0, Some(desc.start)));
        }
        let target = key - desc.start;
        // Every probe below is in range (checked above), so the fallback value is never used.
        let off = |i: usize| bits::get(payload, b, i).unwrap_or(u32::MAX);
        // First the eight offsets around the interpolated position (offsets run from o[0] > 0
        // to o[n-1] = last - start): one compare of eight independent reads.
        let range = desc.last - desc.start;
        let guess = (target as u64 * n as u64 / range.max(1) as u64) as usize;
        let s = guess.saturating_sub(4).min(n.saturating_sub(8));
        let w = (n - s).min(8);
        let mut vals = [0u32; 8];
        let mut c = 0;
        for (t, v) in vals.iter_mut().enumerate().take(w) {
            *v = off(s + t);
            c += (*v < target) as usize;
        }
        if (c > 0 || s == 0) && (c < w || s + w == n) {
            let lo = s + c;
            if lo >= n {
                return Ok((count, None));
            }
            return Ok((lo + 1, Some(desc.start.wrapping_add(vals[c]))));
        }
        // Branchless binary search: `lo` only moves while the probed offset is below the target.
        let (mut lo, mut len) = (0usize, n);
        while len > 1 {
            let half = len / 2;
            if off(lo + half) < target {
                lo += half;
            }
            len -= half;
        }
        let lo = lo + (off(lo) < target) as usize;
        if lo >= n {
            return Ok((count, None));
        }
        let o = bits::get(payload, b, lo).ok_or(corrupt("offsets"))?;
        Ok((lo + 1, Some(desc.start.wrapping_add(o))))
    }

    fn insert(desc: &mut Descriptor, payload: &mut [u8], key: u32) -> Result<InsertOutcome> {
        let (b, n) = check(desc, payload)?;
        let count = desc.count as usize;
        if count >= 2 && desc.start < key && key < desc.last {
            // Between the first and last key: b = width(last - start) stays, offsets before the
            // slot's frame stay; found and shifted on the packed bits.
            let (slot, at) = Self::lower_bound(desc, payload, key)?;
            if at == Some(key) {
                return Ok(InsertOutcome::Exists { slot });
            }
            if count == MAX {
                return Ok(InsertOutcome::NoRoom);
            }
            let new_size = packed_len(n + 1, b);
            if new_size > payload.len() {
                return Ok(InsertOutcome::NoRoom);
            }
            shift_tail(payload, b, n, slot - 1, Some(key - desc.start))?;
            desc.count += 1;
            desc.size = new_size as u32;
            return Ok(InsertOutcome::Inserted { slot });
        }
        rewrite::insert::<For, MAX>(desc, payload, key)
    }

    fn append(desc: &mut Descriptor, payload: &mut [u8], key: u32) -> Result<AppendOutcome> {
        let (b, n) = check(desc, payload)?;
        if desc.count == 0 {
            *desc = Descriptor {
                start: key,
                count: 1,
                last: key,
                size: 0,
                bits: 0,
            };
            return Ok(AppendOutcome::Appended);
        }
        if key <= desc.last {
            return Err(invalid("appended key not greater than last"));
        }
        if desc.count as usize == MAX {
            return Ok(AppendOutcome::NoRoom);
        }
        let o = key - desc.start;
        if n > 0 && width(o) <= b {
            // O(1): the offset goes right after the last one; the block's bit width stays.
            let (size, new_size) = (desc.size as usize, packed_len(n + 1, b));
            if new_size > payload.len() {
                return Ok(AppendOutcome::NoRoom);
            }
            payload[size..new_size].fill(0);
            bits::set(payload, b, n, o);
            desc.count += 1;
            desc.last = key;
            desc.size = new_size as u32;
            return Ok(AppendOutcome::Appended);
        }
        // The offset needs a wider b: repack the offsets (no keys materialised).
        let nb = width(o);
        let new_size = packed_len(n + 1, nb);
        if new_size > payload.len() {
            return Ok(AppendOutcome::NoRoom);
        }
        let mut buf = [0u32; MAX - 1];
        bits::unpack(&payload[..desc.size as usize], b, &mut buf[..n]).ok_or(corrupt("offsets"))?;
        buf[n] = o;
        bits::pack(&buf[..n + 1], nb, payload);
        desc.count += 1;
        desc.last = key;
        desc.bits = nb as u8;
        desc.size = new_size as u32;
        Ok(AppendOutcome::Appended)
    }

    fn remove(desc: &mut Descriptor, payload: &mut [u8], slot: usize) -> Result<RemoveOutcome> {
        let (b, n) = check(desc, payload)?;
        let count = desc.count as usize;
        if slot >= count {
            return Err(invalid("slot out of range"));
        }
        if 0 < slot && slot + 1 < count {
            // Neither the start nor the last key: b stays; only the slot's frame onwards moves.
            shift_tail(payload, b, n, slot - 1, None)?;
            desc.count -= 1;
            desc.size = packed_len(n - 1, b) as u32;
            return Ok(RemoveOutcome::Removed { grew: false });
        }
        rewrite::remove::<For, MAX>(desc, payload, slot)
    }

    fn fold(desc: &Descriptor, payload: &[u8], slots: std::ops::Range<usize>) -> Result<Fold> {
        let (b, _) = check(desc, payload)?;
        let count = desc.count as usize;
        if slots.start > slots.end || slots.end > count {
            return Err(invalid("slot range out of bounds"));
        }
        if slots.is_empty() {
            return Ok(Fold::default());
        }
        let min = Self::select(desc, payload, slots.start)?;
        let max = Self::select(desc, payload, slots.end - 1)?;
        // Slot s >= 1 is offset s - 1; SUM = len * start + the offsets' sum.
        let (lo, hi) = (slots.start.max(1) - 1, slots.end - 1);
        let mut sum_off = 0u64;
        let mut buf = [0u32; FRAME];
        let mut at = lo;
        while at < hi {
            let take = (hi - at).min(FRAME);
            offsets(payload, b, at, &mut buf[..take])?;
            sum_off += buf[..take].iter().map(|&o| o as u64).sum::<u64>();
            at += take;
        }
        let len = slots.len() as u64;
        Ok(Fold {
            count: len,
            sum: len * desc.start as u64 + sum_off,
            min: Some(min),
            max: Some(max),
        })
    }

    fn validate(desc: &Descriptor, payload: &[u8]) -> Result<()> {
        let (b, n) = check(desc, payload)?;
        if n == 0 {
            return Ok(());
        }
        let size = desc.size as usize;
        let used_bits = n * b as usize;
        if !used_bits.is_multiple_of(8) && payload[size - 1] >> (used_bits % 8) != 0 {
            return Err(corrupt("nonzero bits after the last offset"));
        }
        let mut buf = [0u32; MAX - 1];
        bits::unpack(&payload[..size], b, &mut buf[..n]).ok_or(corrupt("offsets"))?;
        if buf[0] == 0 || !buf[..n].windows(2).all(|w| w[0] < w[1]) {
            return Err(corrupt("offsets not strictly increasing from 1"));
        }
        if buf[n - 1] != desc.last - desc.start {
            return Err(corrupt("last key mismatch"));
        }
        Ok(())
    }
}
