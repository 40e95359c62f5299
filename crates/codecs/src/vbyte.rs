//! VByte: LEB128 deltas from the block's start key.
//!
//! The payload holds the deltas `keys[i] - keys[i-1]` for `i in 1..count`, each as a LEB128
//! varint: seven value bits per byte, least significant group first, bit 7 set when more bytes
//! follow. These are exactly the bytes of protobuf varints and of the MaskedVByte library's
//! `vbyte_encode_delta(keys[1..], count - 1, out, keys[0])`.
//!
//! ```text
//! payload: [d1 ...][d2 ...] ... [d(count-1) ...]          1-5 bytes per delta, no header
//! varint:  1vvvvvvv 1vvvvvvv ... 0vvvvvvv                 v = value bits, lowest 7 first
//! e.g. d = 300 = 0b10_0101100 -> 0xAC 0x02
//! ```
//!
//! A fifth byte carries value bits 28..31 only (`<= 0x0F`, no continuation bit). Deltas are `>= 1`.
//! Insert, append and remove work in place by moving bytes inside the payload buffer: inserting
//! `k` between `a` and `b` replaces the varint of `b - a` by those of `k - a` and `b - k`.
//!
//! This module also holds what the byte-oriented codecs (VByte, Masked VByte, VarIntGB,
//! StreamVByte) share: descriptor checks, and select / lower_bound / fold / validate driven by a
//! chunked decoder ([`Chunks`]) that decodes into a small stack buffer. VByte and Masked VByte
//! select and search from the nearer end of the block ([`select_bidi`], [`lower_bound_bidi`]):
//! varints end at a byte with bit 7 clear, so the values from the end are found by counting
//! those bytes backwards, and `last` minus their sum gives the keys before them.

use crate::{
    AppendOutcome, BlockCodec, CodecError, CodecId, Descriptor, Fold, InsertOutcome, Isa,
    RemoveOutcome, Result,
};

/// Keys per block of the byte-oriented codecs (start key included; 256 payload values).
pub(crate) const BYTE_MAX_KEYS: usize = 257;
/// Keys decoded per chunk by [`Chunks`] (a multiple of 4, so group codecs stay aligned).
pub(crate) const CHUNK: usize = 64;

pub(crate) const fn corrupt(what: &'static str) -> CodecError {
    CodecError::Corrupt { what }
}
pub(crate) const fn invalid(what: &'static str) -> CodecError {
    CodecError::InvalidInput { what }
}

// ---------------------------------------------------------------------------------------------
// Shared by the byte-oriented codecs
// ---------------------------------------------------------------------------------------------

/// Cheap descriptor checks shared by every operation.
#[inline(always)]
pub(crate) fn check_desc(d: &Descriptor, payload: &[u8], max_keys: usize) -> Result<()> {
    if d.count as usize > max_keys {
        return Err(corrupt("key count above the codec's maximum"));
    }
    if d.size as usize > payload.len() {
        return Err(corrupt("payload size beyond the buffer"));
    }
    match d.count {
        0 if d.start != 0 || d.last != 0 || d.size != 0 => {
            Err(corrupt("empty block with non-zero fields"))
        }
        1 if d.start != d.last || d.size != 0 => Err(corrupt("one-key block with a payload")),
        c if c > 1 && d.start >= d.last => Err(corrupt("last key not above start key")),
        _ => Ok(()),
    }
}

/// Checks encode's input: sorted, unique, at most `max_keys`.
pub(crate) fn check_keys(keys: &[u32], max_keys: usize) -> Result<()> {
    if keys.len() > max_keys {
        return Err(invalid("too many keys for one block"));
    }
    if !keys.windows(2).all(|w| w[0] < w[1]) {
        return Err(invalid("keys not strictly increasing"));
    }
    Ok(())
}

/// The descriptor of an encoded block.
pub(crate) fn desc_of(keys: &[u32], size: usize) -> Descriptor {
    match (keys.first(), keys.last()) {
        (Some(&start), Some(&last)) => Descriptor {
            start,
            count: keys.len() as u32,
            last,
            size: size as u32,
            bits: 0,
        },
        _ => Descriptor::default(),
    }
}

/// A decoder of a block's payload keys (`keys[1..count]`), a chunk at a time.
pub(crate) trait Chunks {
    /// Decodes the next keys into `buf`: at least `want` (rounded up to a multiple of 4, at most
    /// `CHUNK`) unless the block ends first; returns how many (0 at the end).
    fn next_chunk(&mut self, buf: &mut [u32; CHUNK], want: usize) -> Result<usize>;
    /// After the last chunk: checks the payload was consumed exactly (all `size` bytes).
    fn finish(&self) -> Result<()>;
}

/// Keys to decode for a request of `want`: a multiple of 4 (group codecs stay aligned), at most
/// `CHUNK`.
#[inline]
pub(crate) fn chunk_len(want: usize) -> usize {
    want.next_multiple_of(4).clamp(4, CHUNK)
}

/// The key at slot `i` when the descriptor holds it (the first or the last slot), `None` for
/// an inner slot; an error for a slot out of range. The start of every byte codec's `select`.
#[inline]
pub(crate) fn select_from_desc(d: &Descriptor, i: usize) -> Result<Option<u32>> {
    let count = d.count as usize;
    if i >= count {
        return Err(invalid("slot out of range"));
    }
    Ok(if i == 0 {
        Some(d.start)
    } else if i + 1 == count {
        Some(d.last)
    } else {
        None
    })
}

/// The key at slot `i`.
pub(crate) fn select_in<S: Chunks>(d: &Descriptor, mut s: S, i: usize) -> Result<u32> {
    if let Some(k) = select_from_desc(d, i)? {
        return Ok(k);
    }
    let mut buf = [0u32; CHUNK];
    let mut seen = 1; // keys before buf[0]
    loop {
        let n = s.next_chunk(&mut buf, i + 1 - seen)?;
        if n == 0 {
            return Err(corrupt("payload ends early"));
        }
        if i < seen + n {
            return Ok(buf[i - seen]);
        }
        seen += n;
    }
}

/// Position and value of the first key `>= key`.
pub(crate) fn lower_bound_in<S: Chunks>(
    d: &Descriptor,
    mut s: S,
    key: u32,
) -> Result<(usize, Option<u32>)> {
    let count = d.count as usize;
    if count == 0 || key > d.last {
        return Ok((count, None));
    }
    if key <= d.start {
        return Ok((0, Some(d.start)));
    }
    let mut buf = [0u32; CHUNK];
    let mut seen = 1;
    loop {
        let n = s.next_chunk(&mut buf, CHUNK)?;
        if n == 0 {
            return Err(corrupt("payload ends before the last key"));
        }
        if buf[n - 1] >= key {
            // Branch-free count of the keys below `key` in this chunk (they are sorted).
            let below = buf[..n].iter().map(|&k| (k < key) as usize).sum::<usize>();
            return Ok((seen + below, Some(buf[below.min(n - 1)])));
        }
        seen += n;
    }
}

/// SUM / COUNT / MIN / MAX of the keys at `slots`.
pub(crate) fn fold_in<S: Chunks>(
    d: &Descriptor,
    mut s: S,
    slots: std::ops::Range<usize>,
) -> Result<Fold> {
    let (a, b) = (slots.start, slots.end);
    if a > b || b > d.count as usize {
        return Err(invalid("slot range out of bounds"));
    }
    let mut f = Fold::default();
    if a == b {
        return Ok(f);
    }
    let (mut sum, mut min, mut max) = (0u64, u32::MAX, 0u32);
    if a == 0 {
        sum = d.start as u64;
        min = d.start;
        max = d.start;
    }
    let mut buf = [0u32; CHUNK];
    let mut seen = 1; // slot of buf[0]
    while seen < b {
        let n = s.next_chunk(&mut buf, CHUNK)?;
        if n == 0 {
            return Err(corrupt("payload ends early"));
        }
        let lo = a.max(seen) - seen;
        let hi = b.min(seen + n).saturating_sub(seen);
        if lo < hi {
            for &k in &buf[lo..hi] {
                sum += k as u64;
                min = min.min(k);
                max = max.max(k);
            }
        }
        seen += n;
    }
    f.count = (b - a) as u64;
    f.sum = sum;
    f.min = Some(min);
    f.max = Some(max);
    Ok(f)
}

/// Full check: exactly `count - 1` keys in `size` bytes, strictly increasing from `start` without
/// wrapping past `u32::MAX`, the last one equal to `last`.
pub(crate) fn validate_in<S: Chunks>(d: &Descriptor, mut s: S) -> Result<()> {
    let mut buf = [0u32; CHUNK];
    let mut prev = d.start;
    let mut seen = 1usize;
    loop {
        let n = s.next_chunk(&mut buf, CHUNK)?;
        if n == 0 {
            break;
        }
        // Decoders add deltas with wrapping arithmetic; a zero delta or a wrap past u32::MAX
        // both show up as a key that is not above its predecessor.
        let mut ok = buf[0] > prev;
        for w in buf[..n].windows(2) {
            ok &= w[0] < w[1];
        }
        if !ok {
            return Err(corrupt("keys not strictly increasing"));
        }
        prev = buf[n - 1];
        seen += n;
    }
    s.finish()?;
    if d.count > 0 && seen != d.count as usize {
        return Err(corrupt("payload holds a different number of keys"));
    }
    if prev != d.last {
        return Err(corrupt("last decoded key differs from the descriptor"));
    }
    Ok(())
}

/// Checks `out` can take the block and stores the start key; returns the payload key count.
#[inline(always)]
pub(crate) fn decode_prelude(d: &Descriptor, out: &mut [u32]) -> Result<usize> {
    let count = d.count as usize;
    if out.len() < count {
        return Err(invalid("output buffer shorter than the block"));
    }
    if count > 0 {
        out[0] = d.start;
    }
    Ok(count.saturating_sub(1))
}

/// Where a key goes in a block, found by a scan: returned by the codecs' `locate` functions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Place {
    /// The key is at this slot.
    Exists(usize),
    /// Below the start key: it becomes the new start.
    Front,
    /// Above the last key.
    Back,
    /// Between `keys[slot-1] = prev` and `keys[slot]`; the delta of `keys[slot]` is payload
    /// value `slot - 1`, at byte `at` (codec-specific meaning) with `len` bytes and value `delta`.
    Between {
        slot: usize,
        prev: u32,
        delta: u32,
        at: usize,
        len: usize,
    },
}

// ---------------------------------------------------------------------------------------------
// LEB128 primitives
// ---------------------------------------------------------------------------------------------

/// Bytes of the varint of `v` (1..=5).
#[inline]
pub(crate) fn varint_len(v: u32) -> usize {
    // 1 + floor(bits / 7), with bits = 0 treated as 1.
    let bits = 32 - (v | 1).leading_zeros() as usize;
    bits.div_ceil(7)
}

/// Writes the varint of `v` to `out[..varint_len(v)]`; returns its length.
#[inline]
pub(crate) fn put_varint(mut v: u32, out: &mut [u8]) -> usize {
    let mut i = 0;
    while v >= 0x80 {
        out[i] = (v as u8) | 0x80;
        v >>= 7;
        i += 1;
    }
    out[i] = v as u8;
    i + 1
}

/// Reads the varint at `data[pos..]`: `(value, length)`. Errors on truncation and on varints
/// longer than 5 bytes or above `u32::MAX`.
#[inline]
pub(crate) fn get_varint(data: &[u8], pos: usize) -> Result<(u32, usize)> {
    let mut v = 0u32;
    for i in 0..5 {
        let b = *data
            .get(pos + i)
            .ok_or(corrupt("varint runs past the payload"))?;
        if i == 4 && b > 0x0F {
            return Err(corrupt("varint above u32::MAX or longer than 5 bytes"));
        }
        v |= ((b & 0x7F) as u32) << (7 * i);
        if b < 0x80 {
            return Ok((v, i + 1));
        }
    }
    unreachable!("the fifth byte either ends the varint or is rejected")
}

/// Scalar decoder: `out.len()` deltas from `data[pos..]`, prefix-summed from `prev`; returns the
/// new position. Never reads outside `data`.
pub(crate) fn decode_scalar(
    data: &[u8],
    mut pos: usize,
    mut prev: u32,
    out: &mut [u32],
) -> Result<usize> {
    let mut i = 0;
    while i < out.len() {
        // Eight one-byte varints at once (the common case for small deltas).
        if i + 8 <= out.len() && pos + 8 <= data.len() {
            let w = u64::from_le_bytes(data[pos..pos + 8].try_into().expect("8 bytes"));
            if w & 0x8080_8080_8080_8080 == 0 {
                for (j, o) in out[i..i + 8].iter_mut().enumerate() {
                    prev = prev.wrapping_add((w >> (8 * j)) as u8 as u32);
                    *o = prev;
                }
                i += 8;
                pos += 8;
                continue;
            }
        }
        let (v, l) = get_varint(data, pos)?;
        prev = prev.wrapping_add(v);
        out[i] = prev;
        pos += l;
        i += 1;
    }
    Ok(pos)
}

/// Encodes the deltas of `keys` (after a check) into `out`; returns the payload size.
pub(crate) fn encode_payload(keys: &[u32], out: &mut [u8]) -> Result<usize> {
    let needed: usize = keys.windows(2).map(|w| varint_len(w[1] - w[0])).sum();
    if needed > out.len() {
        return Err(CodecError::NoRoom {
            needed,
            available: out.len(),
        });
    }
    let mut pos = 0;
    for w in keys.windows(2) {
        pos += put_varint(w[1] - w[0], &mut out[pos..]);
    }
    Ok(pos)
}

/// Byte offset of varint `j` in `data`: just after the `j`-th byte with bit 7 clear. Counts the
/// terminator bytes eight at a time.
pub(crate) fn offset_of_value(data: &[u8], j: usize) -> Result<usize> {
    let mut pos = 0;
    let mut left = j;
    while left > 0 && pos + 8 <= data.len() {
        let w = u64::from_le_bytes(data[pos..pos + 8].try_into().expect("8 bytes"));
        let ends = (!w & 0x8080_8080_8080_8080).count_ones() as usize;
        if ends >= left {
            break;
        }
        left -= ends;
        pos += 8;
    }
    while left > 0 {
        let b = *data
            .get(pos)
            .ok_or(corrupt("payload ends before its keys"))?;
        left -= (b < 0x80) as usize;
        pos += 1;
    }
    Ok(pos)
}

/// Start of the last `k` varints of `data`: just after the `(k + 1)`-th terminator byte (bit 7
/// clear) counted from the end, or 0 when there are not that many. Counts eight bytes at a time.
pub(crate) fn offset_of_last(data: &[u8], k: usize) -> usize {
    let mut end = data.len();
    let mut left = k + 1;
    while end >= 8 {
        let w = u64::from_le_bytes(data[end - 8..end].try_into().expect("8 bytes"));
        let mut ends = !w & 0x8080_8080_8080_8080;
        let c = ends.count_ones() as usize;
        if c < left {
            left -= c;
            end -= 8;
            continue;
        }
        // The left-th terminator from the top of this word.
        for _ in 1..left {
            ends &= !(1u64 << (63 - ends.leading_zeros()));
        }
        return end - 8 + (63 - ends.leading_zeros() as usize) / 8 + 1;
    }
    while end > 0 {
        end -= 1;
        left -= (data[end] < 0x80) as usize;
        if left == 0 {
            return end + 1;
        }
    }
    0
}

/// Keys decoded per backward step of [`lower_bound_bidi`].
const BACK: usize = 64;

/// `select` of VByte / Masked VByte from the nearer end: the key at slot `i` is `start` plus the
/// first `i` deltas, or `last` minus the deltas from value `i` on (found by counting varint
/// terminators from the end), decoded in one call into a stack buffer.
pub(crate) fn select_bidi(isa: Isa, d: &Descriptor, payload: &[u8], i: usize) -> Result<u32> {
    check_desc(d, payload, BYTE_MAX_KEYS)?;
    let count = d.count as usize;
    if let Some(k) = select_from_desc(d, i)? {
        return Ok(k);
    }
    let data = &payload[..d.size as usize];
    let n = count - 1;
    let mut buf = [0u32; BYTE_MAX_KEYS];
    if i <= n - i {
        decode_n(isa, data, 0, d.start, &mut buf[..i])?;
        Ok(buf[i - 1])
    } else {
        let m = n - i;
        decode_n(isa, data, offset_of_last(data, m), 0, &mut buf[..m])?;
        Ok(d.last.wrapping_sub(buf[m - 1]))
    }
}

/// `lower_bound` of VByte / Masked VByte from the end nearer to the interpolated position:
/// forward in chunks with early exit, or backward in chunks of [`BACK`] keys decoded relative to
/// their own start (`key(v) = key(v0 - 1) + partial sum`, with `key(v0 - 1)` known from the
/// chunk above).
pub(crate) fn lower_bound_bidi(
    isa: Isa,
    d: &Descriptor,
    payload: &[u8],
    key: u32,
) -> Result<(usize, Option<u32>)> {
    let count = d.count as usize;
    check_desc(d, payload, BYTE_MAX_KEYS)?;
    if count == 0 || key > d.last {
        return Ok((count, None));
    }
    if key <= d.start {
        return Ok((0, Some(d.start)));
    }
    if crate::search::forward_for_key(d.start, d.last, key) {
        return lower_bound_in(d, VByteChunks::new(d, payload, isa)?, key);
    }
    let data = &payload[..d.size as usize];
    let (mut v_end, mut end_key, mut end) = (count - 1, d.last, data.len());
    let mut buf = [0u32; BACK];
    loop {
        let m = v_end.min(BACK);
        let v0 = v_end - m;
        let pos = if v0 == 0 {
            0
        } else {
            offset_of_last(&data[..end], m)
        };
        // Decoding sees the whole payload (the SIMD kernel wants 16 bytes ahead), but stops
        // after the m values.
        decode_n(isa, data, pos, 0, &mut buf[..m])?;
        let before = end_key.wrapping_sub(buf[m - 1]);
        // key(v0 - 1) = before: the answer is in this chunk once it is below the key.
        if before < key || v0 == 0 {
            let below = buf[..m]
                .iter()
                .map(|&p| (before.wrapping_add(p) < key) as usize)
                .sum::<usize>()
                .min(m - 1);
            return Ok((v0 + below + 1, Some(before.wrapping_add(buf[below]))));
        }
        (v_end, end_key, end) = (v0, before, pos);
    }
}

/// Finds where `key` goes: lower_bound with the kernels of `isa`, then the byte offset of the
/// delta that changes.
pub(crate) fn locate(d: &Descriptor, payload: &[u8], key: u32, isa: Isa) -> Result<Place> {
    let (slot, found) = lower_bound_bidi(isa, d, payload, key)?;
    if found == Some(key) {
        return Ok(Place::Exists(slot));
    }
    if slot == d.count as usize {
        return Ok(Place::Back);
    }
    if slot == 0 {
        return Ok(Place::Front);
    }
    let next = found.ok_or(corrupt("lower bound without a key"))?;
    let data = &payload[..d.size as usize];
    let at = offset_of_value(data, slot - 1)?;
    let (delta, len) = get_varint(data, at)?;
    let prev = next.wrapping_sub(delta);
    if prev >= key || next <= key {
        return Err(corrupt("keys not strictly increasing"));
    }
    Ok(Place::Between {
        slot,
        prev,
        delta,
        at,
        len,
    })
}

/// In-place insert shared by VByte and Masked VByte.
pub(crate) fn insert_in_place(
    isa: Isa,
    d: &mut Descriptor,
    payload: &mut [u8],
    key: u32,
) -> Result<InsertOutcome> {
    check_desc(d, payload, BYTE_MAX_KEYS)?;
    let size = d.size as usize;
    let place = locate(d, payload, key, isa)?;
    match place {
        Place::Exists(slot) => return Ok(InsertOutcome::Exists { slot }),
        Place::Back => {
            let slot = d.count as usize;
            return Ok(match append_in_place(d, payload, key)? {
                AppendOutcome::Appended => InsertOutcome::Inserted { slot },
                AppendOutcome::NoRoom => InsertOutcome::NoRoom,
            });
        }
        _ => {}
    }
    if d.count as usize >= BYTE_MAX_KEYS {
        return Ok(InsertOutcome::NoRoom);
    }
    let mut tmp = [0u8; 10];
    let (at, old_len, new_len, slot) = match place {
        Place::Front => {
            if key >= d.start {
                return Err(corrupt("keys not strictly increasing"));
            }
            let l = put_varint(d.start - key, &mut tmp);
            (0, 0, l, 0)
        }
        Place::Between {
            slot,
            prev,
            delta,
            at,
            len,
        } => {
            let next = prev.wrapping_add(delta);
            let l1 = put_varint(key - prev, &mut tmp);
            let l2 = put_varint(next - key, &mut tmp[l1..]);
            (at, len, l1 + l2, slot)
        }
        _ => unreachable!("handled above"),
    };
    let new_size = size - old_len + new_len;
    if new_size > payload.len() {
        return Ok(InsertOutcome::NoRoom);
    }
    payload.copy_within(at + old_len..size, at + new_len);
    payload[at..at + new_len].copy_from_slice(&tmp[..new_len]);
    if slot == 0 {
        d.start = key;
    }
    d.count += 1;
    d.size = new_size as u32;
    Ok(InsertOutcome::Inserted { slot })
}

/// O(1) append shared by VByte and Masked VByte.
pub(crate) fn append_in_place(
    d: &mut Descriptor,
    payload: &mut [u8],
    key: u32,
) -> Result<AppendOutcome> {
    check_desc(d, payload, BYTE_MAX_KEYS)?;
    if d.count == 0 {
        *d = desc_of(&[key], 0);
        return Ok(AppendOutcome::Appended);
    }
    if key <= d.last {
        return Err(invalid("append key not greater than the last key"));
    }
    if d.count as usize >= BYTE_MAX_KEYS {
        return Ok(AppendOutcome::NoRoom);
    }
    let size = d.size as usize;
    let delta = key - d.last;
    if size + varint_len(delta) > payload.len() {
        return Ok(AppendOutcome::NoRoom);
    }
    let l = put_varint(delta, &mut payload[size..]);
    d.size += l as u32;
    d.count += 1;
    d.last = key;
    Ok(AppendOutcome::Appended)
}

/// In-place remove shared by VByte and Masked VByte. Merging two deltas never grows the payload
/// (`varint_len(a + b) <= varint_len(a) + varint_len(b)`).
pub(crate) fn remove_in_place(
    d: &mut Descriptor,
    payload: &mut [u8],
    slot: usize,
) -> Result<RemoveOutcome> {
    check_desc(d, payload, BYTE_MAX_KEYS)?;
    let count = d.count as usize;
    if slot >= count {
        return Err(invalid("slot out of range"));
    }
    if count == 1 {
        *d = Descriptor::default();
        return Ok(RemoveOutcome::Removed { grew: false });
    }
    let size = d.size as usize;
    let data = &payload[..size];
    // Walk to payload value `slot - 1` (the delta of keys[slot]); slot 0 drops value 0.
    let pos = offset_of_value(data, slot.saturating_sub(1))?;
    let (d1, l1) = get_varint(data, pos)?;
    let two_left = count == 2;
    if two_left && pos + l1 != size {
        return Err(corrupt("payload longer than its keys"));
    }
    if slot == 0 {
        let start = d
            .start
            .checked_add(d1)
            .ok_or(corrupt("key above u32::MAX"))?;
        if two_left && start != d.last {
            return Err(corrupt("keys disagree with the descriptor"));
        }
        payload.copy_within(l1..size, 0);
        d.start = start;
        d.size -= l1 as u32;
    } else if slot + 1 == count {
        if pos + l1 != size {
            return Err(corrupt("payload longer than its keys"));
        }
        let last = d
            .last
            .checked_sub(d1)
            .ok_or(corrupt("delta above last key"))?;
        if two_left && last != d.start {
            return Err(corrupt("keys disagree with the descriptor"));
        }
        d.last = last;
        d.size -= l1 as u32;
    } else {
        let (d2, l2) = get_varint(data, pos + l1)?;
        let merged = d1.checked_add(d2).ok_or(corrupt("key above u32::MAX"))?;
        let mut tmp = [0u8; 5];
        let l = put_varint(merged, &mut tmp);
        payload.copy_within(pos + l1 + l2..size, pos + l);
        payload[pos..pos + l].copy_from_slice(&tmp[..l]);
        d.size = (size - l1 - l2 + l) as u32;
    }
    d.count -= 1;
    Ok(RemoveOutcome::Removed { grew: false })
}

/// Chunked decoder over a VByte payload, with the kernel chosen by `isa`.
pub(crate) struct VByteChunks<'a> {
    data: &'a [u8],
    pos: usize,
    prev: u32,
    left: usize,
    isa: Isa,
}

impl<'a> VByteChunks<'a> {
    pub(crate) fn new(d: &Descriptor, payload: &'a [u8], isa: Isa) -> Result<Self> {
        check_desc(d, payload, BYTE_MAX_KEYS)?;
        Ok(VByteChunks {
            data: &payload[..d.size as usize],
            pos: 0,
            prev: d.start,
            left: (d.count as usize).saturating_sub(1),
            isa,
        })
    }
}

impl Chunks for VByteChunks<'_> {
    fn next_chunk(&mut self, buf: &mut [u32; CHUNK], want: usize) -> Result<usize> {
        let n = self.left.min(chunk_len(want));
        if n == 0 {
            return Ok(0);
        }
        self.pos = decode_n(self.isa, self.data, self.pos, self.prev, &mut buf[..n])?;
        self.prev = buf[n - 1];
        self.left -= n;
        Ok(n)
    }
    fn finish(&self) -> Result<()> {
        if self.left != 0 || self.pos != self.data.len() {
            return Err(corrupt("payload size does not match its keys"));
        }
        Ok(())
    }
}

/// Decodes `out.len()` deltas from `data[pos..]` with the kernel for `isa`; returns the new
/// position. The SIMD kernels are Masked VByte's.
pub(crate) fn decode_n(
    isa: Isa,
    data: &[u8],
    pos: usize,
    prev: u32,
    out: &mut [u32],
) -> Result<usize> {
    crate::masked_vbyte::decode_n(isa, data, pos, prev, out)
}

/// Full decode with the kernel for `isa` (shared by VByte and Masked VByte).
pub(crate) fn decode_block(
    isa: Isa,
    d: &Descriptor,
    payload: &[u8],
    out: &mut [u32],
) -> Result<usize> {
    check_desc(d, payload, BYTE_MAX_KEYS)?;
    let n = decode_prelude(d, out)?;
    let data = &payload[..d.size as usize];
    let end = if n == 0 {
        0
    } else {
        decode_n(isa, data, 0, d.start, &mut out[1..=n])?
    };
    if end != data.len() {
        return Err(corrupt("payload size does not match its keys"));
    }
    Ok(d.count as usize)
}

/// Worst case: five bytes per delta.
pub(crate) fn max_len(count: usize) -> usize {
    5 * count.saturating_sub(1)
}

/// The VByte codec (scalar kernels; see [`crate::masked_vbyte::MaskedVByte`] for SIMD ones).
#[derive(Clone, Copy, Debug, Default)]
pub struct VByte;

impl BlockCodec for VByte {
    const ID: CodecId = CodecId::VByte;
    const MAX_KEYS: usize = BYTE_MAX_KEYS;

    fn max_payload_len(count: usize) -> usize {
        max_len(count)
    }

    fn encode(keys: &[u32], out: &mut [u8]) -> Result<Descriptor> {
        check_keys(keys, BYTE_MAX_KEYS)?;
        let size = encode_payload(keys, out)?;
        Ok(desc_of(keys, size))
    }

    fn decode(desc: &Descriptor, payload: &[u8], out: &mut [u32]) -> Result<usize> {
        decode_block(Isa::Scalar, desc, payload, out)
    }

    fn select(desc: &Descriptor, payload: &[u8], i: usize) -> Result<u32> {
        select_bidi(Isa::Scalar, desc, payload, i)
    }

    fn lower_bound(desc: &Descriptor, payload: &[u8], key: u32) -> Result<(usize, Option<u32>)> {
        lower_bound_bidi(Isa::Scalar, desc, payload, key)
    }

    fn insert(desc: &mut Descriptor, payload: &mut [u8], key: u32) -> Result<InsertOutcome> {
        insert_in_place(Isa::Scalar, desc, payload, key)
    }

    fn append(desc: &mut Descriptor, payload: &mut [u8], key: u32) -> Result<AppendOutcome> {
        append_in_place(desc, payload, key)
    }

    fn remove(desc: &mut Descriptor, payload: &mut [u8], slot: usize) -> Result<RemoveOutcome> {
        remove_in_place(desc, payload, slot)
    }

    fn fold(desc: &Descriptor, payload: &[u8], slots: std::ops::Range<usize>) -> Result<Fold> {
        fold_in(desc, VByteChunks::new(desc, payload, Isa::Scalar)?, slots)
    }

    fn validate(desc: &Descriptor, payload: &[u8]) -> Result<()> {
        validate_in(desc, VByteChunks::new(desc, payload, Isa::Scalar)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varint_lengths_and_bytes() {
        for (v, bytes) in [
            (1u32, &[0x01u8][..]),
            (127, &[0x7F]),
            (128, &[0x80, 0x01]),
            (300, &[0xAC, 0x02]),
            (16383, &[0xFF, 0x7F]),
            (16384, &[0x80, 0x80, 0x01]),
            (u32::MAX, &[0xFF, 0xFF, 0xFF, 0xFF, 0x0F]),
        ] {
            let mut b = [0u8; 5];
            assert_eq!(put_varint(v, &mut b), bytes.len(), "len of {v}");
            assert_eq!(varint_len(v), bytes.len());
            assert_eq!(&b[..bytes.len()], bytes);
            assert_eq!(get_varint(bytes, 0).unwrap(), (v, bytes.len()));
        }
        assert!(get_varint(&[0xFF, 0xFF, 0xFF, 0xFF, 0x10], 0).is_err());
        assert!(get_varint(&[0xFF, 0xFF, 0xFF, 0xFF, 0x8F, 0x00], 0).is_err());
        assert!(get_varint(&[0x80], 0).is_err());
    }

    /// Up to `max` random bytes, about three in four with the continuation bit set, and the
    /// positions of the terminators (bytes below 0x80).
    fn varint_soup(rng: &mut fastrand::Rng, max: usize) -> (Vec<u8>, Vec<usize>) {
        let data: Vec<u8> = (0..rng.usize(..max))
            .map(|_| {
                if rng.bool() {
                    rng.u8(..)
                } else {
                    0x80 | rng.u8(..)
                }
            })
            .collect();
        let ends = (0..data.len()).filter(|&i| data[i] < 0x80).collect();
        (data, ends)
    }

    #[test]
    fn offset_of_last_matches_a_bytewise_walk() {
        let mut rng = fastrand::Rng::with_seed(8);
        for _ in 0..2000 {
            let (data, ends) = varint_soup(&mut rng, 80);
            for k in 0..=ends.len() + 1 {
                // after the (k + 1)-th terminator from the end, else 0
                let want = ends.len().checked_sub(k + 1).map_or(0, |j| ends[j] + 1);
                assert_eq!(offset_of_last(&data, k), want, "{data:?} k={k}");
            }
        }
    }

    #[test]
    fn offset_of_value_matches_a_bytewise_walk() {
        let mut rng = fastrand::Rng::with_seed(7);
        for _ in 0..2000 {
            let (data, ends) = varint_soup(&mut rng, 64);
            for j in 0..=ends.len() + 1 {
                let want = match j {
                    0 => Some(0),
                    _ => ends.get(j - 1).map(|&e| e + 1),
                };
                assert_eq!(offset_of_value(&data, j).ok(), want, "{data:?} j={j}");
            }
        }
    }
}
