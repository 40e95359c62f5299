//! BP128: binary packing of deltas in the 4-lane vertical layout of simdcomp (see
//! [`crate::vertical`] for the bit layout).
//!
//! ```text
//! Descriptor { start, count <= 129, last, bits = b, size = 16 * b }
//! payload[0..16b]   one frame: d[i] = keys[i+1] - keys[i] for i < count - 1, then zeros
//! ```
//!
//! The frame is byte-identical to simdcomp's `simdpackwithoutmaskd1(start, keys[1..129], out, b)`
//! and to `bitpacking::BitPacker4x::compress_sorted(start, keys[1..129], out, b)`; a partial
//! frame is padded with zero deltas (the padding keys repeat the last key) and still takes `16b`
//! bytes. `b` is the width of the widest delta; blocks of 0 or 1 key have no payload and `b = 0`.
//!
//! Decode unpacks with the prefix sum fused in (one SIMD kernel per width); `select(i)` sums the
//! first `i` deltas in SIMD without storing them; `lower_bound` scans the prefix-summed vectors in
//! registers and stops at the first vector holding a key `>= key`. `append` writes one delta in
//! place while it fits in `b`; insert and remove decode, modify and re-encode (removing a key
//! merges two deltas, which may widen `b` and grow the block).

use crate::isa::Isa;
use crate::vertical;
use crate::{
    AppendOutcome, BlockCodec, CodecError, CodecId, Descriptor, Fold, InsertOutcome, RemoveOutcome,
    Result,
};

/// The BP128 codec (zero-sized; see the module docs for the format).
#[derive(Clone, Copy, Debug, Default)]
pub struct Bp128;

impl Bp128 {
    /// [`BlockCodec::encode`] on an explicit instruction-set level (unsupported levels fall back).
    #[doc(hidden)]
    pub fn encode_with(isa: Isa, keys: &[u32], out: &mut [u8]) -> Result<Descriptor> {
        vertical::encode(isa, true, keys, out)
    }

    /// [`BlockCodec::decode`] on an explicit instruction-set level.
    #[doc(hidden)]
    #[inline]
    pub fn decode_with(isa: Isa, d: &Descriptor, payload: &[u8], out: &mut [u32]) -> Result<usize> {
        vertical::decode(isa, true, d, payload, out)
    }

    /// [`BlockCodec::select`] on an explicit instruction-set level.
    #[doc(hidden)]
    #[inline]
    pub fn select_with(isa: Isa, d: &Descriptor, payload: &[u8], i: usize) -> Result<u32> {
        let (b, _) = vertical::check(d, payload)?;
        if i >= d.count as usize {
            return Err(CodecError::InvalidInput {
                what: "slot out of range",
            });
        }
        if i == 0 {
            return Ok(d.start);
        }
        let s = vertical::sum_prefix(isa, payload, b, i)
            .ok_or(CodecError::Corrupt { what: "frame" })?;
        Ok(d.start.wrapping_add(s))
    }

    /// [`BlockCodec::lower_bound`] on an explicit instruction-set level.
    #[doc(hidden)]
    #[inline]
    pub fn lower_bound_with(
        isa: Isa,
        d: &Descriptor,
        payload: &[u8],
        key: u32,
    ) -> Result<(usize, Option<u32>)> {
        let (b, n) = vertical::check(d, payload)?;
        let count = d.count as usize;
        if count == 0 || key > d.last {
            return Ok((count, None));
        }
        if key <= d.start {
            return Ok((0, Some(d.start)));
        }
        match vertical::seek_delta(isa, payload, b, d.start, n, key) {
            Some((i, Some(v))) => Ok((i + 1, Some(v))),
            Some((_, None)) => Ok((count, None)),
            None => Err(CodecError::Corrupt { what: "frame" }),
        }
    }
}

impl BlockCodec for Bp128 {
    const ID: CodecId = CodecId::Bp128;
    const MAX_KEYS: usize = vertical::MAX_KEYS;

    fn max_payload_len(count: usize) -> usize {
        if count <= 1 {
            0
        } else {
            vertical::frame_len(32)
        }
    }

    /// 16 bytes per bit of the widest delta (one frame); none for a lone start key.
    fn encoded_len(keys: &[u32]) -> Option<usize> {
        let or = keys
            .windows(2)
            .fold(0u32, |or, w| or | w[1].wrapping_sub(w[0]));
        Some(if keys.len() > 1 {
            crate::vertical::frame_len(crate::bits::width(or))
        } else {
            0
        })
    }

    fn encode(keys: &[u32], out: &mut [u8]) -> Result<Descriptor> {
        vertical::encode(Isa::detect(), true, keys, out)
    }

    #[inline]
    fn decode(desc: &Descriptor, payload: &[u8], out: &mut [u32]) -> Result<usize> {
        vertical::decode_detected(true, desc, payload, out)
    }

    fn select(desc: &Descriptor, payload: &[u8], i: usize) -> Result<u32> {
        Self::select_with(Isa::detect(), desc, payload, i)
    }

    fn lower_bound(desc: &Descriptor, payload: &[u8], key: u32) -> Result<(usize, Option<u32>)> {
        Self::lower_bound_with(Isa::detect(), desc, payload, key)
    }

    fn insert(desc: &mut Descriptor, payload: &mut [u8], key: u32) -> Result<InsertOutcome> {
        vertical::insert(Isa::detect(), true, desc, payload, key)
    }

    fn append(desc: &mut Descriptor, payload: &mut [u8], key: u32) -> Result<AppendOutcome> {
        vertical::append(Isa::detect(), true, desc, payload, key)
    }

    fn remove(desc: &mut Descriptor, payload: &mut [u8], slot: usize) -> Result<RemoveOutcome> {
        vertical::remove(Isa::detect(), true, desc, payload, slot)
    }

    fn fold(desc: &Descriptor, payload: &[u8], slots: std::ops::Range<usize>) -> Result<Fold> {
        vertical::fold(Isa::detect(), true, desc, payload, slots)
    }

    fn validate(desc: &Descriptor, payload: &[u8]) -> Result<()> {
        vertical::validate(Isa::detect(), true, desc, payload)
    }
}
