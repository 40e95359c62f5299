//! Masked VByte: the VByte format (see [`crate::vbyte`], byte for byte the same payload) with the
//! SIMD decoder of Plaisance, Kurz & Lemire ("Vectorized VByte Decoding").
//!
//! ```text
//! payload: [d1 ...][d2 ...] ... [d(count-1) ...]       LEB128 deltas, exactly as VByte
//! ```
//!
//! The decoder loads 16 payload bytes, gathers their continuation bits with `movemask` and looks
//! the low 12 bits up in a table (4096 entries, built at compile time). An entry says how many
//! whole varints of the first 12 bytes to decode at once and how: up to 8 varints of 1-2 bytes
//! into 16-bit lanes, or up to 4 varints of 1-4 bytes into 32-bit lanes; a `pshufb` pattern moves
//! each varint's bytes into its lane, `pmaddubsw` / `pmaddwd` join the 7-bit groups, and the
//! prefix sum runs in registers. Sixteen one-byte varints (mask 0) take a fast path; a 5-byte
//! varint (delta >= 2^28) is decoded in scalar. The tail (the last < 16 bytes or keys) is scalar.
//!
//! Insert, append and remove are VByte's in-place byte moves (shared code).

use crate::vbyte::{
    append_in_place, check_keys, decode_block, decode_scalar, desc_of, encode_payload, fold_in,
    insert_in_place, lower_bound_bidi, max_len, remove_in_place, select_bidi, validate_in,
    VByteChunks, BYTE_MAX_KEYS,
};
use crate::{
    AppendOutcome, BlockCodec, CodecId, Descriptor, Fold, InsertOutcome, Isa, RemoveOutcome, Result,
};

/// One table entry's metadata: number of varints decoded (0 = do one in scalar), whether they go
/// into 32-bit lanes (else 16-bit lanes), and the bytes they take.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Meta {
    pub n: u8,
    pub wide: bool,
    pub consumed: u8,
}

/// The varint lengths that end within the first 12 bytes, given their continuation bits.
const fn lengths(mask: usize) -> ([u8; 12], usize) {
    let mut lens = [0u8; 12];
    let mut k = 0;
    let mut run = 0u8;
    let mut i = 0;
    while i < 12 {
        run += 1;
        if mask & (1 << i) == 0 {
            lens[k] = run;
            k += 1;
            run = 0;
        }
        i += 1;
    }
    (lens, k)
}

const fn meta_of(mask: usize) -> Meta {
    let (lens, k) = lengths(mask);
    let mut n2 = 0;
    while n2 < k && n2 < 8 && lens[n2] <= 2 {
        n2 += 1;
    }
    let mut n4 = 0;
    while n4 < k && n4 < 4 && lens[n4] <= 4 {
        n4 += 1;
    }
    let (n, wide) = if n2 > 4 { (n2, false) } else { (n4, true) };
    let mut consumed = 0;
    let mut j = 0;
    while j < n {
        consumed += lens[j];
        j += 1;
    }
    Meta {
        n: n as u8,
        wide,
        consumed,
    }
}

const fn shuffle_of(mask: usize) -> [u8; 16] {
    let (lens, _) = lengths(mask);
    let m = meta_of(mask);
    let mut s = [0x80u8; 16];
    let lane = if m.wide { 4 } else { 2 };
    let mut start = 0u8;
    let mut j = 0;
    while j < m.n as usize {
        let mut b = 0;
        while b < lens[j] as usize {
            s[j * lane + b] = start + b as u8;
            b += 1;
        }
        start += lens[j];
        j += 1;
    }
    s
}

const fn build_meta() -> [Meta; 4096] {
    let mut t = [Meta {
        n: 0,
        wide: false,
        consumed: 0,
    }; 4096];
    let mut i = 0;
    while i < 4096 {
        t[i] = meta_of(i);
        i += 1;
    }
    t
}

const fn build_shuffle() -> [[u8; 16]; 4096] {
    let mut t = [[0u8; 16]; 4096];
    let mut i = 0;
    while i < 4096 {
        t[i] = shuffle_of(i);
        i += 1;
    }
    t
}

/// Decoding plan per 12-bit continuation mask.
pub(crate) static META: [Meta; 4096] = build_meta();
/// `pshufb` pattern per 12-bit continuation mask.
pub(crate) static SHUFFLE: [[u8; 16]; 4096] = build_shuffle();

/// `isa` capped at the best level this CPU supports (public entry points take any level).
/// Cached: this runs on every call of the `*_with` functions.
#[inline]
pub(crate) fn usable(isa: Isa) -> Isa {
    use std::sync::atomic::{AtomicU8, Ordering};
    static BEST: AtomicU8 = AtomicU8::new(u8::MAX);
    let b = BEST.load(Ordering::Relaxed);
    let best = if b == u8::MAX {
        let best = Isa::available().last().copied().unwrap_or(Isa::Scalar);
        BEST.store(best as u8, Ordering::Relaxed);
        best
    } else {
        Isa::ALL[b as usize]
    };
    isa.min(best)
}

/// Decodes `out.len()` deltas from `data[pos..]` prefix-summed from `prev` with the kernel of
/// `isa` (which the CPU must support); returns the new position.
pub(crate) fn decode_n(
    isa: Isa,
    data: &[u8],
    pos: usize,
    prev: u32,
    out: &mut [u32],
) -> Result<usize> {
    #[cfg(target_arch = "x86_64")]
    if isa >= Isa::Sse41 && out.len() >= 16 {
        // SAFETY: callers pass only levels the CPU supports (`Isa::detect` or `usable`), and
        // Isa::Sse41 and above include SSSE3 and SSE4.1. The kernel bounds its own accesses.
        let (pos, done) = unsafe { crate::simd::masked_vbyte_sse41::decode(data, pos, prev, out)? };
        let prev = if done > 0 { out[done - 1] } else { prev };
        return decode_scalar(data, pos, prev, &mut out[done..]);
    }
    let _ = isa;
    decode_scalar(data, pos, prev, out)
}

/// Decodes a block with the kernels of `isa` (clamped to what this CPU supports). For tests and
/// benchmarks; [`MaskedVByte::decode`] uses the best level.
#[doc(hidden)]
pub fn decode_with(isa: Isa, desc: &Descriptor, payload: &[u8], out: &mut [u32]) -> Result<usize> {
    decode_block(usable(isa), desc, payload, out)
}

/// [`MaskedVByte::select`] with the kernels of `isa`.
#[doc(hidden)]
pub fn select_with(isa: Isa, desc: &Descriptor, payload: &[u8], i: usize) -> Result<u32> {
    select_bidi(usable(isa), desc, payload, i)
}

/// [`MaskedVByte::lower_bound`] with the kernels of `isa`.
#[doc(hidden)]
pub fn lower_bound_with(
    isa: Isa,
    desc: &Descriptor,
    payload: &[u8],
    key: u32,
) -> Result<(usize, Option<u32>)> {
    lower_bound_bidi(usable(isa), desc, payload, key)
}

/// The Masked VByte codec: VByte's bytes, SIMD decode / select / lower_bound / fold.
#[derive(Clone, Copy, Debug, Default)]
pub struct MaskedVByte;

impl BlockCodec for MaskedVByte {
    const ID: CodecId = CodecId::MaskedVByte;
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
        decode_block(Isa::detect(), desc, payload, out)
    }

    fn select(desc: &Descriptor, payload: &[u8], i: usize) -> Result<u32> {
        select_bidi(Isa::detect(), desc, payload, i)
    }

    fn lower_bound(desc: &Descriptor, payload: &[u8], key: u32) -> Result<(usize, Option<u32>)> {
        lower_bound_bidi(Isa::detect(), desc, payload, key)
    }

    fn insert(desc: &mut Descriptor, payload: &mut [u8], key: u32) -> Result<InsertOutcome> {
        insert_in_place(Isa::detect(), desc, payload, key)
    }

    fn append(desc: &mut Descriptor, payload: &mut [u8], key: u32) -> Result<AppendOutcome> {
        append_in_place(desc, payload, key)
    }

    fn remove(desc: &mut Descriptor, payload: &mut [u8], slot: usize) -> Result<RemoveOutcome> {
        remove_in_place(desc, payload, slot)
    }

    fn fold(desc: &Descriptor, payload: &[u8], slots: std::ops::Range<usize>) -> Result<Fold> {
        fold_in(desc, VByteChunks::new(desc, payload, Isa::detect())?, slots)
    }

    fn validate(desc: &Descriptor, payload: &[u8]) -> Result<()> {
        validate_in(desc, VByteChunks::new(desc, payload, Isa::detect())?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_entries() {
        // all one-byte varints: eight into 16-bit lanes, 8 bytes
        let m = META[0];
        assert_eq!((m.n, m.wide, m.consumed), (8, false, 8));
        assert_eq!(&SHUFFLE[0][..4], &[0, 0x80, 1, 0x80]);
        // a 3-byte varint first (bits 0,1 continue): four into 32-bit lanes
        let m = META[0b11];
        assert_eq!((m.n, m.wide, m.consumed), (4, true, 6));
        assert_eq!(&SHUFFLE[0b11][..8], &[0, 1, 2, 0x80, 3, 0x80, 0x80, 0x80]);
        // a 5-byte varint first: scalar
        assert_eq!(META[0b1111].n, 0);
        // 2-byte varints throughout: six fit in 12 bytes
        let m = META[0b0101_0101_0101];
        assert_eq!((m.n, m.wide, m.consumed), (6, false, 12));
    }
}
