//! StreamVByte (Lemire, Kurz & Rupp): control bytes first, then data bytes; deltas from the
//! block's start key. Byte-identical to the reference C library's
//! `streamvbyte_delta_encode(keys[1..], count - 1, out, keys[0])`, and decodable by its
//! `streamvbyte_delta_decode` (and vice versa; `tests/reference_streamvbyte.rs` proves both).
//!
//! With `n = count - 1` payload values `d[j] = keys[j+1] - keys[j]`:
//!
//! ```text
//! [ctrl 0 .. ceil(n/4)][data ...]
//! ctrl byte q covers values 4q..4q+3, 2 bits each, value 4q in bits 0-1:  code = bytes - 1
//!   bits:  7 6 | 5 4 | 3 2 | 1 0
//!          d3  | d2  | d1  | d0        (codes of a missing 4th..2nd value in the last byte are 0)
//! data: each d[j] little-endian in 1 (< 2^8), 2 (< 2^16), 3 (< 2^24) or 4 bytes, in order
//! size = ceil(n/4) + sum of the byte lengths
//! ```
//!
//! Decoding (SSE4.1, AVX2) looks each control byte up in a 256-entry table of `pshufb` patterns
//! and lengths, expands 16 data bytes into four u32 deltas, and prefix-sums them in registers.
//! Insert, append and remove run in place: the data bytes around the edit move with
//! `copy_within`, the control codes from the edit onward are rewritten.

use crate::search::{forward_for_key, Pad, Seek};
use crate::vbyte::{
    check_desc, check_keys, chunk_len, corrupt, decode_prelude, desc_of, fold_in, invalid,
    validate_in, Chunks, BYTE_MAX_KEYS, CHUNK,
};
use crate::{
    AppendOutcome, BlockCodec, CodecError, CodecId, Descriptor, Fold, InsertOutcome, Isa,
    RemoveOutcome, Result,
};

/// Bytes of a value: 1..=4.
#[inline]
pub(crate) fn byte_len(v: u32) -> usize {
    1 + (v >= 1 << 8) as usize + (v >= 1 << 16) as usize + (v >= 1 << 24) as usize
}

/// Data bytes of the four values of a control (or VarIntGB key) byte.
const fn group_len(c: u8) -> u8 {
    4 + (c & 3) + ((c >> 2) & 3) + ((c >> 4) & 3) + ((c >> 6) & 3)
}

const fn build_len() -> [u8; 256] {
    let mut t = [0u8; 256];
    let mut c = 0;
    while c < 256 {
        t[c] = group_len(c as u8);
        c += 1;
    }
    t
}

const fn build_shuffle() -> [[u8; 16]; 256] {
    let mut t = [[0x80u8; 16]; 256];
    let mut c = 0;
    while c < 256 {
        let mut src = 0u8;
        let mut k = 0;
        while k < 4 {
            let len = ((c >> (2 * k)) & 3) + 1;
            let mut b = 0;
            while b < len {
                t[c][4 * k + b] = src;
                src += 1;
                b += 1;
            }
            k += 1;
        }
        c += 1;
    }
    t
}

/// Data bytes per control byte (shared with VarIntGB, whose key byte means the same).
pub(crate) static GROUP_LEN: [u8; 256] = build_len();
/// `pshufb` pattern per control byte: moves the group's data bytes into four u32 lanes.
pub(crate) static GROUP_SHUFFLE: [[u8; 16]; 256] = build_shuffle();

/// Control bytes for `n` values.
#[inline]
fn ctrl_len(n: usize) -> usize {
    n.div_ceil(4)
}

/// Code (bytes - 1) of value `j`.
#[inline]
fn code_at(ctrl: &[u8], j: usize) -> usize {
    ((ctrl[j / 4] >> (2 * (j % 4))) & 3) as usize
}

/// Reads `len` (1..=4) little-endian bytes at `data[pos..]`.
#[inline]
pub(crate) fn read_le(data: &[u8], pos: usize, len: usize) -> Result<u32> {
    if pos + 4 <= data.len() {
        let w = u32::from_le_bytes(data[pos..pos + 4].try_into().expect("4 bytes"));
        return Ok(w & (u32::MAX >> (32 - 8 * len)));
    }
    let b = data
        .get(pos..pos + len)
        .ok_or(corrupt("data bytes run past the payload"))?;
    Ok(b.iter().rev().fold(0u32, |acc, &x| (acc << 8) | x as u32))
}

/// Scalar decoder: values `v0..v0 + out.len()` (their codes in `ctrl`, which must cover them)
/// from `data[pos..]`, prefix-summed from `prev`; returns the new data position.
pub(crate) fn decode_scalar(
    ctrl: &[u8],
    data: &[u8],
    v0: usize,
    mut pos: usize,
    mut prev: u32,
    out: &mut [u32],
) -> Result<usize> {
    for (j, o) in out.iter_mut().enumerate() {
        let len = code_at(ctrl, v0 + j) + 1;
        prev = prev.wrapping_add(read_le(data, pos, len)?);
        pos += len;
        *o = prev;
    }
    Ok(pos)
}

/// Decodes values `v0..v0 + out.len()` with the kernels of `isa` (supported by this CPU).
/// `v0` is a multiple of 4 and `ctrl` covers the values.
#[inline(always)]
pub(crate) fn decode_n(
    isa: Isa,
    ctrl: &[u8],
    data: &[u8],
    v0: usize,
    pos: usize,
    prev: u32,
    out: &mut [u32],
) -> Result<usize> {
    debug_assert!(v0.is_multiple_of(4) && ctrl.len() * 4 >= v0 + out.len());
    #[cfg(target_arch = "x86_64")]
    if isa >= Isa::Avx512 && !out.is_empty() {
        let groups = &ctrl[v0 / 4..v0 / 4 + out.len().div_ceil(4)];
        // SAFETY: AVX-512 F/BW/VL/VBMI are supported at Isa::Avx512 (callers pass supported
        // levels only); `groups` has one control byte per four values of `out`.
        let end = unsafe { crate::simd::streamvbyte_avx512::decode(groups, data, pos, prev, out) };
        if end > data.len() {
            return Err(corrupt("data bytes run past the payload"));
        }
        return Ok(end);
    }
    #[cfg(target_arch = "x86_64")]
    if isa >= Isa::Sse41 && out.len() >= 4 {
        let groups = &ctrl[v0 / 4..v0 / 4 + out.len() / 4];
        let (pos, done) = if isa >= Isa::Avx2 {
            // SAFETY: AVX2 is supported (callers pass supported levels only); `groups` has one
            // control byte per 4 slots of `out`, and the kernel bounds its reads by `data`.
            unsafe { crate::simd::streamvbyte_avx2::decode(groups, data, pos, prev, out) }
        } else {
            // SAFETY: as above, with SSSE3/SSE4.1 supported at Isa::Sse41.
            unsafe { crate::simd::streamvbyte_sse41::decode(groups, data, pos, prev, out) }
        };
        let (mut pos, mut done) = (pos, done);
        let rest = &data[pos.min(data.len())..];
        if done + 4 <= out.len() && rest.len() < 16 {
            // The last whole groups, whose 16-byte loads would cross the end of `data`: decode
            // them from a zero-padded copy, then check they stayed within the real bytes.
            let mut pad = [0u8; 64];
            // A fixed-size copy of the last 16 bytes when there are that many (no memcpy call).
            let skip = if data.len() >= 16 {
                pad[..16].copy_from_slice(&data[data.len() - 16..]);
                16 - rest.len()
            } else {
                pad[..rest.len()].copy_from_slice(rest);
                0
            };
            let prev = if done > 0 { out[done - 1] } else { prev };
            let tail = &groups[done / 4..];
            // SAFETY: as above; `out[done..]` has 4 slots per control byte of `tail`.
            let (p2, d2) = unsafe {
                crate::simd::streamvbyte_sse41::decode(tail, &pad, skip, prev, &mut out[done..])
            };
            let p2 = p2 - skip;
            if p2 > rest.len() {
                return Err(corrupt("data bytes run past the payload"));
            }
            pos += p2;
            done += d2;
        }
        if done == out.len() {
            return Ok(pos);
        }
        let prev = if done > 0 { out[done - 1] } else { prev };
        return decode_scalar(ctrl, data, v0 + done, pos, prev, &mut out[done..]);
    }
    let _ = isa;
    decode_scalar(ctrl, data, v0, pos, prev, out)
}

/// A checked view of a block: control bytes and data bytes.
struct View<'a> {
    ctrl: &'a [u8],
    data: &'a [u8],
    n: usize,
}

#[inline(always)]
fn view<'a>(d: &Descriptor, payload: &'a [u8]) -> Result<View<'a>> {
    check_desc(d, payload, BYTE_MAX_KEYS)?;
    let n = (d.count as usize).saturating_sub(1);
    let c = ctrl_len(n);
    let size = d.size as usize;
    if c > size {
        return Err(corrupt("payload shorter than its control bytes"));
    }
    Ok(View {
        ctrl: &payload[..c],
        data: &payload[c..size],
        n,
    })
}

/// Chunked decoder over a StreamVByte payload.
pub(crate) struct SvbChunks<'a> {
    v: View<'a>,
    next: usize,
    pos: usize,
    prev: u32,
    isa: Isa,
}

impl<'a> SvbChunks<'a> {
    fn new(d: &Descriptor, payload: &'a [u8], isa: Isa) -> Result<Self> {
        Ok(SvbChunks {
            v: view(d, payload)?,
            next: 0,
            pos: 0,
            prev: d.start,
            isa,
        })
    }
}

impl Chunks for SvbChunks<'_> {
    fn next_chunk(&mut self, buf: &mut [u32; CHUNK], want: usize) -> Result<usize> {
        let n = (self.v.n - self.next).min(chunk_len(want));
        if n == 0 {
            return Ok(0);
        }
        let v = &self.v;
        self.pos = decode_n(
            self.isa,
            v.ctrl,
            v.data,
            self.next,
            self.pos,
            self.prev,
            &mut buf[..n],
        )?;
        self.prev = buf[n - 1];
        self.next += n;
        Ok(n)
    }
    fn finish(&self) -> Result<()> {
        if self.next != self.v.n || self.pos != self.v.data.len() {
            return Err(corrupt("payload size does not match its keys"));
        }
        // The reference encoder leaves the codes of missing values in the last byte at zero.
        if !self.v.n.is_multiple_of(4) && self.v.ctrl[self.v.n / 4] >> (2 * (self.v.n % 4)) != 0 {
            return Err(corrupt("unused control bits are set"));
        }
        Ok(())
    }
}

/// Decodes a block with the kernels of `isa` (clamped to what this CPU supports).
#[doc(hidden)]
#[inline]
pub fn decode_with(isa: Isa, desc: &Descriptor, payload: &[u8], out: &mut [u32]) -> Result<usize> {
    let isa = crate::masked_vbyte::usable(isa);
    let v = view(desc, payload)?;
    let n = decode_prelude(desc, out)?;
    if n > 0 {
        let end = decode_n(isa, v.ctrl, v.data, 0, 0, desc.start, &mut out[1..=n])?;
        if end != v.data.len() {
            return Err(corrupt("payload size does not match its keys"));
        }
    }
    Ok(desc.count as usize)
}

/// [`StreamVByte::select`] with the kernels of `isa`.
#[doc(hidden)]
pub fn select_with(isa: Isa, desc: &Descriptor, payload: &[u8], i: usize) -> Result<u32> {
    select(crate::masked_vbyte::usable(isa), desc, payload, i)
}

/// [`StreamVByte::lower_bound`] with the kernels of `isa`.
#[doc(hidden)]
pub fn lower_bound_with(
    isa: Isa,
    desc: &Descriptor,
    payload: &[u8],
    key: u32,
) -> Result<(usize, Option<u32>)> {
    lower_bound(crate::masked_vbyte::usable(isa), desc, payload, key)
}

// ---------------------------------------------------------------------------------------------
// select and lower_bound: a seek from the nearer end (see crate::search).

/// Scalar forward seek over values `v..v_hi` from data position `pos`, `acc = key(v - 1)`: the
/// first value with `key >= target` or index `stop`, else where it stopped (`v_hi`).
pub(crate) fn seek_fwd_scalar(
    ctrl: &[u8],
    data: &[u8],
    (mut v, mut pos, mut acc): (usize, usize, u32),
    v_hi: usize,
    target: u32,
    stop: usize,
) -> Result<Seek> {
    while v < v_hi {
        let len = code_at(ctrl, v) + 1;
        acc = acc.wrapping_add(read_le(data, pos, len)?);
        pos += len;
        if acc >= target || v >= stop {
            return Ok(Seek::Found(v, acc));
        }
        v += 1;
    }
    Ok(Seek::Next(v, pos, acc))
}

/// Scalar backward seek from `v_end` (exclusive; data ends at `pos`, `key = key(v_end - 1)`)
/// down to `v_lo`: the first value `v` (walking down) with `v == stop` or `key(v - 1) <
/// target`, else where it stopped (`v_lo`, with `key(v_lo - 1)`).
pub(crate) fn seek_bwd_scalar(
    ctrl: &[u8],
    data: &[u8],
    (mut v_end, mut pos, mut key): (usize, usize, u32),
    v_lo: usize,
    target: u32,
    stop: usize,
) -> Result<Seek> {
    while v_end > v_lo {
        let v = v_end - 1;
        if v <= stop {
            return Ok(Seek::Found(v, key));
        }
        let len = code_at(ctrl, v) + 1;
        pos = pos
            .checked_sub(len)
            .ok_or(corrupt("data bytes run past the payload"))?;
        let prev = key.wrapping_sub(read_le(data, pos, len)?);
        if prev < target {
            return Ok(Seek::Found(v, key));
        }
        key = prev;
        v_end = v;
    }
    Ok(Seek::Next(v_end, pos, key))
}

/// The seek of [`crate::search`] on a block with `count >= 3` (so `n >= 2` values), with the
/// kernels of `isa`: `(v, key(v))`.
fn seek(
    isa: Isa,
    d: &Descriptor,
    v: &View<'_>,
    forward: bool,
    target: u32,
    stop: usize,
) -> Result<(usize, u32)> {
    let (ctrl, data, n) = (v.ctrl, v.data, v.n);
    let full = n / 4;
    let found = |s: Seek| match s {
        Seek::Found(v, k) => Ok((v, k)),
        Seek::Next(..) => Err(corrupt("seek ran off the block")),
    };
    if forward {
        let mut at = (0, 0, d.start);
        #[cfg(target_arch = "x86_64")]
        if isa >= Isa::Avx2 && full >= 2 {
            let pad = Pad::new(data);
            let groups = &ctrl[..full];
            // SAFETY: AVX2 (and AVX-512 F/BW/VL at Isa::Avx512) is supported (callers pass
            // supported levels only); the kernels bound their loads by `data` (via `pad`).
            let s = unsafe {
                if isa >= Isa::Avx512 {
                    crate::simd::streamvbyte_avx512::seek_fwd(groups, data, &pad, at, target, stop)
                } else {
                    crate::simd::streamvbyte_avx2::seek_fwd(groups, data, &pad, at, target, stop)
                }
            };
            match s {
                Seek::Found(v, k) => return Ok((v, k)),
                Seek::Next(g, pos, acc) => at = (4 * g, pos, acc),
            }
        }
        found(seek_fwd_scalar(ctrl, data, at, n, target, stop)?)
    } else {
        // The values of a partial last group first, then whole groups, then what is left.
        let tail = seek_bwd_scalar(ctrl, data, (n, data.len(), d.last), 4 * full, target, stop)?;
        let Seek::Next(_, mut pos, mut key) = tail else {
            return found(tail);
        };
        let mut g = full;
        #[cfg(target_arch = "x86_64")]
        if isa >= Isa::Avx2 && full >= 2 {
            let pad = Pad::new(data);
            let groups = &ctrl[..full];
            // SAFETY: as for the forward kernels.
            let s = unsafe {
                if isa >= Isa::Avx512 {
                    crate::simd::streamvbyte_avx512::seek_bwd(
                        groups,
                        data,
                        &pad,
                        (g, pos, key),
                        target,
                        stop,
                    )
                } else {
                    crate::simd::streamvbyte_avx2::seek_bwd(
                        groups,
                        data,
                        &pad,
                        (g, pos, key),
                        target,
                        stop,
                    )
                }
            };
            match s {
                Seek::Found(v, k) => return Ok((v, k)),
                Seek::Next(g2, p2, k2) => (g, pos, key) = (g2, p2, k2),
            }
        }
        found(seek_bwd_scalar(
            ctrl,
            data,
            (4 * g, pos, key),
            0,
            target,
            stop,
        )?)
    }
}

/// [`StreamVByte::select`] with the kernels of `isa` (a level this CPU supports).
fn select(isa: Isa, d: &Descriptor, payload: &[u8], i: usize) -> Result<u32> {
    let v = view(d, payload)?;
    if let Some(k) = crate::vbyte::select_from_desc(d, i)? {
        return Ok(k);
    }
    // key(i - 1): i values from the front or n - i + 1 from the back.
    let forward = i <= v.n + 1 - i;
    let target = if forward { u32::MAX } else { 0 };
    Ok(seek(isa, d, &v, forward, target, i - 1)?.1)
}

/// [`StreamVByte::lower_bound`] with the kernels of `isa` (a level this CPU supports).
fn lower_bound(isa: Isa, d: &Descriptor, payload: &[u8], key: u32) -> Result<(usize, Option<u32>)> {
    let v = view(d, payload)?;
    let count = d.count as usize;
    if count == 0 || key > d.last {
        return Ok((count, None));
    }
    if key <= d.start {
        return Ok((0, Some(d.start)));
    }
    // count >= 2 here; key in (start, last].
    if count == 2 {
        return Ok((1, Some(d.last)));
    }
    let forward = forward_for_key(d.start, d.last, key);
    let stop = if forward { v.n - 1 } else { 0 };
    let (at, k) = seek(isa, d, &v, forward, key, stop)?;
    Ok((at + 1, Some(k)))
}

/// Data offset of value `j`: the byte lengths of values `0..j`.
fn data_offset(ctrl: &[u8], j: usize) -> usize {
    let full: usize = ctrl[..j / 4]
        .iter()
        .map(|&c| GROUP_LEN[c as usize] as usize)
        .sum();
    full + (0..j % 4)
        .map(|k| code_at(ctrl, j - j % 4 + k) + 1)
        .sum::<usize>()
}

/// Replaces values `j..j + old` (at data offset `at`, `old_len` bytes) by `new` (deltas), moving
/// the bytes in place. The caller has checked the new size fits `payload`.
fn splice(payload: &mut [u8], n: usize, size: usize, j: usize, old: usize, new: &[u32]) {
    let c = ctrl_len(n);
    let n2 = n - old + new.len();
    let c2 = ctrl_len(n2);
    let mut new_bytes = [0u8; 8];
    let mut new_len = 0;
    let mut new_codes = CodeBits::default();
    for (k, &x) in new.iter().enumerate() {
        let l = byte_len(x);
        new_bytes[new_len..new_len + 4].copy_from_slice(&x.to_le_bytes());
        new_len += l;
        new_codes.set(j + k, (l - 1) as u64);
    }
    let codes = CodeBits::load(&payload[..c]);
    let at = data_offset(&payload[..c], j);
    let old_len: usize = (j..j + old).map(|v| code_at(&payload[..c], v) + 1).sum();
    let (head, tail) = ((c, c + at), (c + at + old_len, size));
    let tail_to = c2 + at + new_len;
    if c2 >= c {
        // Everything moves right (or stays): tail first.
        payload.copy_within(tail.0..tail.1, tail_to);
        payload.copy_within(head.0..head.1, c2);
    } else {
        payload.copy_within(head.0..head.1, c2);
        payload.copy_within(tail.0..tail.1, tail_to);
    }
    payload[c2 + at..c2 + at + new_len].copy_from_slice(&new_bytes[..new_len]);
    // Codes: those before j stay, those after the edit move by (new - old) places.
    let moved = codes.shifted(2 * new.len() as isize - 2 * old as isize);
    let mut out = CodeBits::default();
    for (i, w) in out.0.iter_mut().enumerate() {
        let keep = low_mask(i, 2 * j);
        let after = !low_mask(i, 2 * (j + new.len()));
        *w = ((codes.0[i] & keep) | (moved.0[i] & after) | new_codes.0[i]) & low_mask(i, 2 * n2);
    }
    out.store(&mut payload[..c2]);
}

/// The control codes of a block as a bit string: code `v` in bits `2v..2v + 2`.
#[derive(Clone, Copy, Default)]
struct CodeBits([u64; 9]);

impl CodeBits {
    fn load(ctrl: &[u8]) -> CodeBits {
        let mut bytes = [0u8; 72];
        bytes[..ctrl.len()].copy_from_slice(ctrl);
        let mut w = [0u64; 9];
        for (i, x) in w.iter_mut().enumerate() {
            *x = u64::from_le_bytes(bytes[8 * i..8 * i + 8].try_into().expect("8 bytes"));
        }
        CodeBits(w)
    }

    fn store(&self, ctrl: &mut [u8]) {
        let mut bytes = [0u8; 72];
        for (i, x) in self.0.iter().enumerate() {
            bytes[8 * i..8 * i + 8].copy_from_slice(&x.to_le_bytes());
        }
        let n = ctrl.len();
        ctrl.copy_from_slice(&bytes[..n]);
    }

    fn set(&mut self, v: usize, code: u64) {
        self.0[v / 32] |= code << (2 * (v % 32));
    }

    /// The bit string moved up (`by > 0`) or down by `by` bits (`|by| < 64`).
    fn shifted(&self, by: isize) -> CodeBits {
        let w = &self.0;
        let mut out = [0u64; 9];
        let k = by.unsigned_abs() as u32;
        if k == 0 {
            return *self;
        }
        for i in 0..9 {
            out[i] = if by > 0 {
                (w[i] << k) | if i > 0 { w[i - 1] >> (64 - k) } else { 0 }
            } else {
                (w[i] >> k) | if i < 8 { w[i + 1] << (64 - k) } else { 0 }
            };
        }
        CodeBits(out)
    }
}

/// The bits of word `i` that lie below bit position `p` of the whole string.
#[inline]
fn low_mask(i: usize, p: usize) -> u64 {
    let base = 64 * i;
    if p >= base + 64 {
        u64::MAX
    } else if p <= base {
        0
    } else {
        (1u64 << (p - base)) - 1
    }
}

fn insert(d: &mut Descriptor, payload: &mut [u8], key: u32) -> Result<InsertOutcome> {
    let isa = Isa::detect();
    let (slot, found) = lower_bound(isa, d, payload, key)?;
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
    let size = d.size as usize;
    let c = ctrl_len(n);
    // slot 0: the old start follows the new key; else keys[slot-1] < key < keys[slot] = next.
    let (j, old, new): (usize, usize, [u32; 2]) = if slot == 0 {
        if key >= d.start {
            return Err(corrupt("keys not strictly increasing"));
        }
        (0, 0, [d.start - key, 0])
    } else {
        let j = slot - 1;
        let at = data_offset(&payload[..c], j);
        let len = code_at(&payload[..c], j) + 1;
        let delta = read_le(&payload[c..size], at, len)?;
        let prev = next.wrapping_sub(delta);
        if prev >= key || next <= key {
            return Err(corrupt("keys not strictly increasing"));
        }
        (j, 1, [key - prev, next - key])
    };
    let new = &new[..1 + old];
    let old_len: usize = (j..j + old).map(|v| code_at(&payload[..c], v) + 1).sum();
    let new_len: usize = new.iter().map(|&x| byte_len(x)).sum();
    let new_size = ctrl_len(n - old + new.len()) + (size - c) - old_len + new_len;
    if new_size > payload.len() {
        return Ok(InsertOutcome::NoRoom);
    }
    splice(payload, n, size, j, old, new);
    if slot == 0 {
        d.start = key;
    }
    d.count += 1;
    d.size = new_size as u32;
    Ok(InsertOutcome::Inserted { slot })
}

fn append(d: &mut Descriptor, payload: &mut [u8], key: u32) -> Result<AppendOutcome> {
    let v = view(d, payload)?;
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
    let n = v.n;
    let size = d.size as usize;
    let delta = key - d.last;
    let l = byte_len(delta);
    let grow_ctrl = n % 4 == 0;
    let new_size = size + l + grow_ctrl as usize;
    if new_size > payload.len() {
        return Ok(AppendOutcome::NoRoom);
    }
    let c = ctrl_len(n);
    if grow_ctrl {
        // A new control byte: the data moves up one byte.
        payload.copy_within(c..size, c + 1);
        payload[c] = (l - 1) as u8;
    } else {
        payload[n / 4] |= ((l - 1) as u8) << (2 * (n % 4));
    }
    let end = new_size - l;
    payload[end..new_size].copy_from_slice(&delta.to_le_bytes()[..l]);
    d.count += 1;
    d.size = new_size as u32;
    d.last = key;
    Ok(AppendOutcome::Appended)
}

fn remove(d: &mut Descriptor, payload: &mut [u8], slot: usize) -> Result<RemoveOutcome> {
    let v = view(d, payload)?;
    let count = d.count as usize;
    if slot >= count {
        return Err(invalid("slot out of range"));
    }
    if count == 1 {
        *d = Descriptor::default();
        return Ok(RemoveOutcome::Removed { grew: false });
    }
    let n = v.n;
    let size = d.size as usize;
    let c = v.ctrl.len();
    let value = |j: usize| -> Result<u32> {
        let at = data_offset(v.ctrl, j);
        read_le(v.data, at, code_at(v.ctrl, j) + 1)
    };
    let two_left = count == 2;
    let (j, old, merged, start, last) = if slot == 0 {
        let d0 = value(0)?;
        let start = d
            .start
            .checked_add(d0)
            .ok_or(corrupt("key above u32::MAX"))?;
        (0, 1, None, start, d.last)
    } else if slot + 1 == count {
        let dl = value(n - 1)?;
        let last = d
            .last
            .checked_sub(dl)
            .ok_or(corrupt("delta above the last key"))?;
        (n - 1, 1, None, d.start, last)
    } else {
        let m = value(slot - 1)?
            .checked_add(value(slot)?)
            .ok_or(corrupt("key above u32::MAX"))?;
        (slot - 1, 2, Some(m), d.start, d.last)
    };
    if two_left && (start != last || size != c + code_at(v.ctrl, 0) + 1) {
        return Err(corrupt("keys disagree with the descriptor"));
    }
    if slot + 1 == count && data_offset(v.ctrl, n) != size - c {
        return Err(corrupt("payload size does not match its keys"));
    }
    let new: &[u32] = match &merged {
        Some(m) => std::slice::from_ref(m),
        None => &[],
    };
    let old_len: usize = (j..j + old).map(|x| code_at(v.ctrl, x) + 1).sum();
    let new_len: usize = new.iter().map(|&x| byte_len(x)).sum();
    let new_size = ctrl_len(n - old + new.len()) + (size - c) - old_len + new_len;
    splice(payload, n, size, j, old, new);
    d.start = start;
    d.last = last;
    d.count -= 1;
    d.size = new_size as u32;
    Ok(RemoveOutcome::Removed { grew: false })
}

/// Worst case: a control byte per four values and four bytes per value.
pub(crate) fn max_len(count: usize) -> usize {
    let n = count.saturating_sub(1);
    ctrl_len(n) + 4 * n
}

/// Encodes the deltas of checked `keys`; returns the payload size.
fn encode_payload(keys: &[u32], out: &mut [u8]) -> Result<usize> {
    let n = keys.len().saturating_sub(1);
    let c = ctrl_len(n);
    let needed = c + keys
        .windows(2)
        .map(|w| byte_len(w[1] - w[0]))
        .sum::<usize>();
    if needed > out.len() {
        return Err(CodecError::NoRoom {
            needed,
            available: out.len(),
        });
    }
    out[..c].fill(0);
    let mut pos = c;
    for (j, w) in keys.windows(2).enumerate() {
        let delta = w[1] - w[0];
        let l = byte_len(delta);
        out[j / 4] |= ((l - 1) as u8) << (2 * (j % 4));
        out[pos..pos + l].copy_from_slice(&delta.to_le_bytes()[..l]);
        pos += l;
    }
    Ok(pos)
}

/// The StreamVByte codec.
#[derive(Clone, Copy, Debug, Default)]
pub struct StreamVByte;

impl BlockCodec for StreamVByte {
    const ID: CodecId = CodecId::StreamVByte;
    const MAX_KEYS: usize = BYTE_MAX_KEYS;

    fn max_payload_len(count: usize) -> usize {
        max_len(count)
    }

    /// A control byte per four deltas plus each delta's bytes.
    fn encoded_len(keys: &[u32]) -> Option<usize> {
        let n = keys.len().saturating_sub(1);
        Some(
            n.div_ceil(4)
                + keys
                    .windows(2)
                    .map(|w| byte_len(w[1].wrapping_sub(w[0])))
                    .sum::<usize>(),
        )
    }

    fn encode(keys: &[u32], out: &mut [u8]) -> Result<Descriptor> {
        check_keys(keys, BYTE_MAX_KEYS)?;
        let size = encode_payload(keys, out)?;
        Ok(desc_of(keys, size))
    }

    fn decode(desc: &Descriptor, payload: &[u8], out: &mut [u32]) -> Result<usize> {
        decode_with(Isa::detect(), desc, payload, out)
    }

    fn select(desc: &Descriptor, payload: &[u8], i: usize) -> Result<u32> {
        select(Isa::detect(), desc, payload, i)
    }

    fn lower_bound(desc: &Descriptor, payload: &[u8], key: u32) -> Result<(usize, Option<u32>)> {
        lower_bound(Isa::detect(), desc, payload, key)
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
        fold_in(desc, SvbChunks::new(desc, payload, Isa::detect())?, slots)
    }

    fn validate(desc: &Descriptor, payload: &[u8]) -> Result<()> {
        validate_in(desc, SvbChunks::new(desc, payload, Isa::detect())?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables() {
        assert_eq!(GROUP_LEN[0], 4);
        assert_eq!(GROUP_LEN[0xFF], 16);
        assert_eq!(GROUP_LEN[0b11_10_01_00], 10);
        assert_eq!(
            GROUP_SHUFFLE[0b00_00_01_00],
            [0, 0x80, 0x80, 0x80, 1, 2, 0x80, 0x80, 3, 0x80, 0x80, 0x80, 4, 0x80, 0x80, 0x80]
        );
    }

    #[test]
    fn known_bytes() {
        // keys 10, 11, 300, 70000 -> deltas 1, 289, 69700: codes 0, 1, 2
        let mut out = [0u8; 16];
        let d = StreamVByte::encode(&[10, 11, 300, 70000], &mut out).unwrap();
        assert_eq!(d.size, 1 + 1 + 2 + 3);
        assert_eq!(&out[..7], &[0b10_01_00, 1, 0x21, 0x01, 0x44, 0x10, 0x01]);
    }
}
