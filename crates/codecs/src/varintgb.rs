//! VarIntGB (group varint): deltas from the block's start key in groups of four, each group a
//! key byte followed by the group's values.
//!
//! With `n = count - 1` payload values `d[j] = keys[j+1] - keys[j]`:
//!
//! ```text
//! [key 0][values 0..4][key 1][values 4..8] ... [key g][values 4g..n]
//! key byte: 2 bits per value, value 4g+0 in bits 0-1 ... value 4g+3 in bits 6-7: code = bytes - 1
//! value:    little-endian in 1 (< 2^8), 2 (< 2^16), 3 (< 2^24) or 4 bytes
//! ```
//!
//! The last group holds the `n - 4*floor((n-1)/4)` (1..=4) remaining values: when it has `r < 4`,
//! its key byte has `r` codes in its low bits, the other bits are zero, and exactly `r` values
//! follow (no padding). `size = ceil(n/4) + sum of the value lengths`. The key byte means the same
//! as a StreamVByte control byte; the two formats differ only in interleaving.
//!
//! Decoding (SSE4.1, AVX2) shuffles each group with the key byte's `pshufb` pattern and
//! prefix-sums in registers; runs of groups with the same key byte (the norm for blocks of
//! uniform bit width) advance by a constant, which keeps the next load off the dependency chain.
//! Insert and remove re-encode the values from the edited group on, in the payload buffer;
//! append writes at the end and updates the last key byte.

use crate::streamvbyte::{byte_len, read_le, GROUP_LEN};
use crate::vbyte::{
    check_desc, check_keys, chunk_len, corrupt, decode_prelude, desc_of, fold_in, invalid,
    lower_bound_in, select_in, validate_in, Chunks, BYTE_MAX_KEYS, CHUNK,
};
use crate::{
    AppendOutcome, BlockCodec, CodecError, CodecId, Descriptor, Fold, InsertOutcome, Isa,
    RemoveOutcome, Result,
};

/// Scalar decoder: `out.len()` values from the group starting at `data[pos]` (a key byte),
/// prefix-summed from `prev`; returns the new position. A final partial group ends the output.
pub(crate) fn decode_scalar(
    data: &[u8],
    mut pos: usize,
    mut prev: u32,
    out: &mut [u32],
) -> Result<usize> {
    for group in out.chunks_mut(4) {
        let key = *data
            .get(pos)
            .ok_or(corrupt("group key byte past the payload"))?;
        pos += 1;
        for (k, o) in group.iter_mut().enumerate() {
            let len = ((key >> (2 * k)) & 3) as usize + 1;
            prev = prev.wrapping_add(read_le(data, pos, len)?);
            pos += len;
            *o = prev;
        }
    }
    Ok(pos)
}

/// Decodes `out.len()` values from the group at `data[pos]` with the kernels of `isa`
/// (supported by this CPU).
#[inline(always)]
pub(crate) fn decode_n(
    isa: Isa,
    data: &[u8],
    pos: usize,
    prev: u32,
    out: &mut [u32],
) -> Result<usize> {
    #[cfg(target_arch = "x86_64")]
    if isa >= Isa::Avx512 {
        // SAFETY: AVX-512 F/BW/VL/VBMI are supported at Isa::Avx512 (callers pass supported
        // levels only); the kernel bounds its reads by `data` and its writes by `out`.
        let end = unsafe { crate::simd::varintgb_avx512::decode_all(data, pos, prev, out) };
        if end > data.len() {
            return Err(corrupt("group runs past the payload"));
        }
        return Ok(end);
    }
    #[cfg(target_arch = "x86_64")]
    if isa >= Isa::Sse41 && out.len() >= 4 {
        let (pos, done) = if isa >= Isa::Avx2 {
            // SAFETY: AVX2 is supported (callers pass supported levels only); the kernel bounds
            // its reads by `data` and its writes by `out`.
            unsafe { crate::simd::varintgb_avx2::decode(data, pos, prev, out) }
        } else {
            // SAFETY: as above, with SSSE3/SSE4.1 supported at Isa::Sse41.
            unsafe { crate::simd::varintgb_sse41::decode(data, pos, prev, out) }
        };
        let (mut pos, mut done) = (pos, done);
        let rest = &data[pos.min(data.len())..];
        if done + 4 <= out.len() && rest.len() < 17 {
            // The last whole groups, whose 16-byte loads would cross the end of `data`: decode
            // them from a zero-padded copy, then check they stayed within the real bytes.
            let mut pad = [0u8; 64];
            // A fixed-size copy of the last 17 bytes when there are that many (no memcpy call).
            let skip = if data.len() >= 17 {
                pad[..17].copy_from_slice(&data[data.len() - 17..]);
                17 - rest.len()
            } else {
                pad[..rest.len()].copy_from_slice(rest);
                0
            };
            let prev = if done > 0 { out[done - 1] } else { prev };
            let whole = (out.len() - done) / 4 * 4;
            // SAFETY: SSSE3/SSE4.1 are supported at Isa::Sse41 and above.
            let (p2, d2) = unsafe {
                crate::simd::varintgb_sse41::decode(&pad, skip, prev, &mut out[done..done + whole])
            };
            let p2 = p2 - skip;
            if p2 > rest.len() {
                return Err(corrupt("group runs past the payload"));
            }
            pos += p2;
            done += d2;
        }
        let prev = if done > 0 { out[done - 1] } else { prev };
        return decode_scalar(data, pos, prev, &mut out[done..]);
    }
    let _ = isa;
    decode_scalar(data, pos, prev, out)
}

/// The deltas (not prefix-summed) of `out.len()` values from the group at `data[pos..]`, through
/// the decoder of `isa` (prefix sums from 0, then differences); returns the position after them.
fn read_deltas(isa: Isa, data: &[u8], pos: usize, out: &mut [u32]) -> Result<usize> {
    let end = decode_n(isa, data, pos, 0, out)?;
    let mut prev = 0u32;
    for x in out.iter_mut() {
        let sum = *x;
        *x = sum.wrapping_sub(prev);
        prev = sum;
    }
    Ok(end)
}

/// Bytes `deltas` take when encoded as groups.
fn encoded_len(deltas: &[u32]) -> usize {
    deltas.len().div_ceil(4) + deltas.iter().map(|&x| byte_len(x)).sum::<usize>()
}

/// Writes `deltas` as groups into `out` (which must hold `encoded_len(deltas)`); returns it.
/// Values are staged in a stack buffer with whole 4-byte writes, then copied out at once.
fn put_groups(deltas: &[u32], out: &mut [u8]) -> usize {
    let mut buf = [0u8; 5 * BYTE_MAX_KEYS + 8];
    let mut pos = 0;
    for group in deltas.chunks(4) {
        let kpos = pos;
        let mut key = 0u8;
        pos += 1;
        for (k, &x) in group.iter().enumerate() {
            let l = byte_len(x);
            key |= ((l - 1) as u8) << (2 * k);
            buf[pos..pos + 4].copy_from_slice(&x.to_le_bytes());
            pos += l;
        }
        buf[kpos] = key;
    }
    out[..pos].copy_from_slice(&buf[..pos]);
    pos
}

/// Byte offset of group `g` (walking the key bytes of the full groups before it). Runs of equal
/// key bytes advance by a constant step, so the walk is not one dependent load per group.
fn group_offset(data: &[u8], g: usize) -> Result<usize> {
    let mut pos = 0;
    let mut k = 0;
    while k < g {
        let key = *data
            .get(pos)
            .ok_or(corrupt("group key byte past the payload"))?;
        let step = 1 + GROUP_LEN[key as usize] as usize;
        pos += step;
        k += 1;
        while k < g && data.get(pos) == Some(&key) {
            pos += step;
            k += 1;
        }
    }
    if pos > data.len() {
        return Err(corrupt("groups run past the payload"));
    }
    Ok(pos)
}

/// Chunked decoder over a VarIntGB payload.
pub(crate) struct GbChunks<'a> {
    data: &'a [u8],
    pos: usize,
    prev: u32,
    left: usize,
    isa: Isa,
}

impl<'a> GbChunks<'a> {
    fn new(d: &Descriptor, payload: &'a [u8], isa: Isa) -> Result<Self> {
        check_desc(d, payload, BYTE_MAX_KEYS)?;
        Ok(GbChunks {
            data: &payload[..d.size as usize],
            pos: 0,
            prev: d.start,
            left: (d.count as usize).saturating_sub(1),
            isa,
        })
    }
}

impl Chunks for GbChunks<'_> {
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

/// Full check, including the zero bits of a partial last group's key byte.
fn validate(d: &Descriptor, payload: &[u8]) -> Result<()> {
    validate_in(d, GbChunks::new(d, payload, Isa::detect())?)?;
    let n = (d.count as usize).saturating_sub(1);
    if !n.is_multiple_of(4) {
        let at = group_offset(&payload[..d.size as usize], n / 4)?;
        if payload[at] >> (2 * (n % 4)) != 0 {
            return Err(corrupt("unused key bits are set"));
        }
    }
    Ok(())
}

/// Decodes a block with the kernels of `isa` (clamped to what this CPU supports).
#[doc(hidden)]
#[inline]
pub fn decode_with(isa: Isa, desc: &Descriptor, payload: &[u8], out: &mut [u32]) -> Result<usize> {
    let isa = crate::masked_vbyte::usable(isa);
    check_desc(desc, payload, BYTE_MAX_KEYS)?;
    let n = decode_prelude(desc, out)?;
    let data = &payload[..desc.size as usize];
    let end = if n == 0 {
        0
    } else {
        decode_n(isa, data, 0, desc.start, &mut out[1..=n])?
    };
    if end != data.len() {
        return Err(corrupt("payload size does not match its keys"));
    }
    Ok(desc.count as usize)
}

/// [`VarIntGb::select`] with the kernels of `isa`.
#[doc(hidden)]
pub fn select_with(isa: Isa, desc: &Descriptor, payload: &[u8], i: usize) -> Result<u32> {
    let isa = crate::masked_vbyte::usable(isa);
    select_in(desc, GbChunks::new(desc, payload, isa)?, i)
}

/// [`VarIntGb::lower_bound`] with the kernels of `isa`.
#[doc(hidden)]
pub fn lower_bound_with(
    isa: Isa,
    desc: &Descriptor,
    payload: &[u8],
    key: u32,
) -> Result<(usize, Option<u32>)> {
    let isa = crate::masked_vbyte::usable(isa);
    lower_bound_in(desc, GbChunks::new(desc, payload, isa)?, key)
}

/// Replaces the values from group `g` on by `tail` (deltas), if the result fits the buffer.
/// Returns the new size, or `None` (block unchanged) when it does not fit.
fn rewrite_tail(payload: &mut [u8], g_at: usize, tail: &[u32]) -> Option<usize> {
    let new_size = g_at + encoded_len(tail);
    if new_size > payload.len() {
        return None;
    }
    put_groups(tail, &mut payload[g_at..]);
    Some(new_size)
}

fn insert(d: &mut Descriptor, payload: &mut [u8], key: u32) -> Result<InsertOutcome> {
    let (slot, found) = lower_bound_in(d, GbChunks::new(d, payload, Isa::detect())?, key)?;
    if found == Some(key) {
        return Ok(InsertOutcome::Exists { slot });
    }
    let count = d.count as usize;
    if slot == count {
        return Ok(match append(d, payload, key)? {
            AppendOutcome::Appended => InsertOutcome::Inserted { slot },
            AppendOutcome::NoRoom => InsertOutcome::NoRoom,
        });
    }
    if count >= BYTE_MAX_KEYS {
        return Ok(InsertOutcome::NoRoom);
    }
    let next = found.ok_or(corrupt("lower bound without a key"))?;
    let n = count - 1;
    let data = &payload[..d.size as usize];
    // Value j (the delta of keys[slot]) is replaced; slot 0 puts a new delta in front.
    let j = slot.saturating_sub(1);
    let g = j / 4;
    let g_at = group_offset(data, g)?;
    let mut tail = [0u32; BYTE_MAX_KEYS + 1];
    let m = n - 4 * g;
    read_deltas(Isa::detect(), data, g_at, &mut tail[..m])?;
    let k = j - 4 * g;
    if slot == 0 {
        if key >= d.start {
            return Err(corrupt("keys not strictly increasing"));
        }
        tail.copy_within(0..m, 1);
        tail[0] = d.start - key;
    } else {
        let prev = next.wrapping_sub(tail[k]);
        if prev >= key || next <= key {
            return Err(corrupt("keys not strictly increasing"));
        }
        tail.copy_within(k + 1..m, k + 2);
        tail[k] = key - prev;
        tail[k + 1] = next - key;
    }
    match rewrite_tail(payload, g_at, &tail[..m + 1]) {
        None => Ok(InsertOutcome::NoRoom),
        Some(size) => {
            if slot == 0 {
                d.start = key;
            }
            d.count += 1;
            d.size = size as u32;
            Ok(InsertOutcome::Inserted { slot })
        }
    }
}

fn append(d: &mut Descriptor, payload: &mut [u8], key: u32) -> Result<AppendOutcome> {
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
    let n = d.count as usize - 1;
    let size = d.size as usize;
    let delta = key - d.last;
    let l = byte_len(delta);
    let new_key_byte = n.is_multiple_of(4);
    let new_size = size + l + new_key_byte as usize;
    if new_size > payload.len() {
        return Ok(AppendOutcome::NoRoom);
    }
    if new_key_byte {
        payload[size] = (l - 1) as u8;
    } else {
        let at = group_offset(&payload[..size], n / 4)?;
        if at >= size {
            return Err(corrupt("groups run past the payload"));
        }
        payload[at] |= ((l - 1) as u8) << (2 * (n % 4));
    }
    payload[new_size - l..new_size].copy_from_slice(&delta.to_le_bytes()[..l]);
    d.count += 1;
    d.size = new_size as u32;
    d.last = key;
    Ok(AppendOutcome::Appended)
}

fn remove(d: &mut Descriptor, payload: &mut [u8], slot: usize) -> Result<RemoveOutcome> {
    check_desc(d, payload, BYTE_MAX_KEYS)?;
    let count = d.count as usize;
    if slot >= count {
        return Err(invalid("slot out of range"));
    }
    if count == 1 {
        *d = Descriptor::default();
        return Ok(RemoveOutcome::Removed { grew: false });
    }
    let n = count - 1;
    let size = d.size as usize;
    let data = &payload[..size];
    let j = slot.saturating_sub(1);
    let g = j / 4;
    let g_at = group_offset(data, g)?;
    let mut tail = [0u32; BYTE_MAX_KEYS];
    let m = n - 4 * g;
    if read_deltas(Isa::detect(), data, g_at, &mut tail[..m])? != size {
        return Err(corrupt("payload size does not match its keys"));
    }
    let k = j - 4 * g;
    let (mut start, mut last) = (d.start, d.last);
    if slot == 0 {
        start = start
            .checked_add(tail[0])
            .ok_or(corrupt("key above u32::MAX"))?;
        tail.copy_within(1..m, 0);
    } else if slot == n {
        last = last
            .checked_sub(tail[k])
            .ok_or(corrupt("delta above the last key"))?;
    } else {
        tail[k] = tail[k]
            .checked_add(tail[k + 1])
            .ok_or(corrupt("key above u32::MAX"))?;
        tail.copy_within(k + 2..m, k + 1);
    }
    if count == 2 && start != last {
        return Err(corrupt("keys disagree with the descriptor"));
    }
    let new_size = rewrite_tail(payload, g_at, &tail[..m - 1]).ok_or(corrupt("block grew"))?;
    d.start = start;
    d.last = last;
    d.count -= 1;
    d.size = new_size as u32;
    Ok(RemoveOutcome::Removed { grew: false })
}

/// Worst case: a key byte per four values and four bytes per value.
pub(crate) fn max_len(count: usize) -> usize {
    let n = count.saturating_sub(1);
    n.div_ceil(4) + 4 * n
}

/// The VarIntGB codec.
#[derive(Clone, Copy, Debug, Default)]
pub struct VarIntGb;

impl BlockCodec for VarIntGb {
    const ID: CodecId = CodecId::VarIntGb;
    const MAX_KEYS: usize = BYTE_MAX_KEYS;

    fn max_payload_len(count: usize) -> usize {
        max_len(count)
    }

    fn encode(keys: &[u32], out: &mut [u8]) -> Result<Descriptor> {
        check_keys(keys, BYTE_MAX_KEYS)?;
        let mut deltas = [0u32; BYTE_MAX_KEYS];
        for (o, w) in deltas.iter_mut().zip(keys.windows(2)) {
            *o = w[1] - w[0];
        }
        let deltas = &deltas[..keys.len().saturating_sub(1)];
        let needed = encoded_len(deltas);
        if needed > out.len() {
            return Err(CodecError::NoRoom {
                needed,
                available: out.len(),
            });
        }
        Ok(desc_of(keys, put_groups(deltas, out)))
    }

    fn decode(desc: &Descriptor, payload: &[u8], out: &mut [u32]) -> Result<usize> {
        decode_with(Isa::detect(), desc, payload, out)
    }

    fn select(desc: &Descriptor, payload: &[u8], i: usize) -> Result<u32> {
        select_in(desc, GbChunks::new(desc, payload, Isa::detect())?, i)
    }

    fn lower_bound(desc: &Descriptor, payload: &[u8], key: u32) -> Result<(usize, Option<u32>)> {
        lower_bound_in(desc, GbChunks::new(desc, payload, Isa::detect())?, key)
    }

    fn insert(desc: &mut Descriptor, payload: &mut [u8], key: u32) -> Result<InsertOutcome> {
        insert(desc, payload, key)
    }

    fn append(desc: &mut Descriptor, payload: &mut [u8], key: u32) -> Result<AppendOutcome> {
        append(desc, payload, key)
    }

    fn remove(desc: &mut Descriptor, payload: &mut [u8], slot: usize) -> Result<RemoveOutcome> {
        remove(desc, payload, slot)
    }

    fn fold(desc: &Descriptor, payload: &[u8], slots: std::ops::Range<usize>) -> Result<Fold> {
        fold_in(desc, GbChunks::new(desc, payload, Isa::detect())?, slots)
    }

    fn validate(desc: &Descriptor, payload: &[u8]) -> Result<()> {
        validate(desc, payload)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_bytes() {
        // deltas 1, 289, 69700, 5, 16777216 -> group 0 (codes 0,1,2,0) and a partial group 1
        let keys = [10u32, 11, 300, 70000, 70005, 70005 + (1 << 24)];
        let mut out = [0u8; 32];
        let d = VarIntGb::encode(&keys, &mut out).unwrap();
        assert_eq!(
            &out[..d.size as usize],
            &[
                0b00_10_01_00,
                1,
                0x21,
                0x01,
                0x44,
                0x10,
                0x01,
                5,
                0b11,
                0,
                0,
                0,
                1
            ]
        );
    }
}
