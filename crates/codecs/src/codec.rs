//! Dynamic dispatch for callers that pick the codec at run time (the engine stores a
//! [`CodecId`] per database).
//!
//! [`Codec`] wraps a [`CodecId`] and offers every [`BlockCodec`] operation as a method that
//! matches on the id once and calls the static codec type: no trait objects, and each arm is the
//! statically dispatched, inlinable code. [`with_codec!`](crate::with_codec) exposes the same
//! match for callers that want to run a generic function monomorphised per codec (e.g. a whole
//! leaf scan) with a single dispatch.

use crate::{
    AppendOutcome, BlockCodec, CodecId, Descriptor, Fold, InsertOutcome, RemoveOutcome, Result,
};

/// Runs `$body` with the type alias `$C` bound to the static codec type of `$id`.
///
/// ```
/// use tersedb_codecs::{with_codec, BlockCodec, CodecId};
/// let id = CodecId::from_name("pfor-delta").unwrap();
/// let max = with_codec!(id, C => <C as BlockCodec>::MAX_KEYS);
/// assert_eq!(max, 129);
/// ```
#[macro_export]
macro_rules! with_codec {
    ($id:expr, $C:ident => $body:expr) => {
        match $id {
            $crate::CodecId::VByte => {
                type $C = $crate::vbyte::VByte;
                $body
            }
            $crate::CodecId::MaskedVByte => {
                type $C = $crate::masked_vbyte::MaskedVByte;
                $body
            }
            $crate::CodecId::VarIntGb => {
                type $C = $crate::varintgb::VarIntGb;
                $body
            }
            $crate::CodecId::StreamVByte => {
                type $C = $crate::streamvbyte::StreamVByte;
                $body
            }
            $crate::CodecId::Bp128 => {
                type $C = $crate::bp128::Bp128;
                $body
            }
            $crate::CodecId::For => {
                type $C = $crate::for_::For;
                $body
            }
            $crate::CodecId::SimdFor => {
                type $C = $crate::simd_for::SimdFor;
                $body
            }
            $crate::CodecId::Pfor => {
                type $C = $crate::pfor::Pfor;
                $body
            }
            $crate::CodecId::PforDelta => {
                type $C = $crate::pfor::PforDelta;
                $body
            }
            $crate::CodecId::Rice => {
                type $C = $crate::rice::Rice;
                $body
            }
        }
    };
}

/// A codec chosen at run time; every method forwards to the static type of its id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Codec(pub CodecId);

/// Most keys a block of codec `id` may hold, start key included.
pub fn max_keys(id: CodecId) -> usize {
    with_codec!(id, C => <C as BlockCodec>::MAX_KEYS)
}

/// Worst-case payload bytes of a block of `count` keys of codec `id`.
pub fn max_payload_len(id: CodecId, count: usize) -> usize {
    with_codec!(id, C => C::max_payload_len(count))
}

impl Codec {
    /// Every codec, in id order.
    pub fn all() -> impl Iterator<Item = Codec> {
        CodecId::ALL.into_iter().map(Codec)
    }

    /// The codec's id.
    pub fn id(self) -> CodecId {
        self.0
    }

    /// See [`BlockCodec::MAX_KEYS`].
    pub fn max_keys(self) -> usize {
        max_keys(self.0)
    }

    /// See [`BlockCodec::max_payload_len`].
    pub fn max_payload_len(self, count: usize) -> usize {
        max_payload_len(self.0, count)
    }

    /// See [`BlockCodec::encode`].
    pub fn encode(self, keys: &[u32], out: &mut [u8]) -> Result<Descriptor> {
        with_codec!(self.0, C => C::encode(keys, out))
    }

    /// See [`BlockCodec::encoded_len`]: BP128 and SIMD FOR (16 bytes per bit of the widest
    /// delta or offset), FOR (the offsets' packed bits) and StreamVByte (a control byte per
    /// four deltas plus each delta's bytes) size a block without encoding it. `auto` sizes its
    /// candidates with it and encodes only the winner (issue 21).
    pub fn encoded_len(self, keys: &[u32]) -> Option<usize> {
        with_codec!(self.0, C => C::encoded_len(keys))
    }

    /// See [`BlockCodec::encode_below`]: `None`, nothing written, when the codec tells before
    /// encoding that `keys` would take at least `limit` bytes.
    pub fn encode_below(
        self,
        keys: &[u32],
        out: &mut [u8],
        limit: usize,
    ) -> Result<Option<Descriptor>> {
        with_codec!(self.0, C => C::encode_below(keys, out, limit))
    }

    /// See [`BlockCodec::decode`].
    #[inline]
    pub fn decode(self, d: &Descriptor, payload: &[u8], out: &mut [u32]) -> Result<usize> {
        with_codec!(self.0, C => C::decode(d, payload, out))
    }

    /// See [`BlockCodec::select`].
    #[inline]
    pub fn select(self, d: &Descriptor, payload: &[u8], i: usize) -> Result<u32> {
        with_codec!(self.0, C => C::select(d, payload, i))
    }

    /// See [`BlockCodec::lower_bound`].
    #[inline]
    pub fn lower_bound(
        self,
        d: &Descriptor,
        payload: &[u8],
        key: u32,
    ) -> Result<(usize, Option<u32>)> {
        with_codec!(self.0, C => C::lower_bound(d, payload, key))
    }

    /// See [`BlockCodec::insert`].
    pub fn insert(self, d: &mut Descriptor, payload: &mut [u8], key: u32) -> Result<InsertOutcome> {
        with_codec!(self.0, C => C::insert(d, payload, key))
    }

    /// See [`BlockCodec::append`].
    pub fn append(self, d: &mut Descriptor, payload: &mut [u8], key: u32) -> Result<AppendOutcome> {
        with_codec!(self.0, C => C::append(d, payload, key))
    }

    /// See [`BlockCodec::remove`].
    pub fn remove(
        self,
        d: &mut Descriptor,
        payload: &mut [u8],
        slot: usize,
    ) -> Result<RemoveOutcome> {
        with_codec!(self.0, C => C::remove(d, payload, slot))
    }

    /// See [`BlockCodec::fold`].
    pub fn fold(
        self,
        d: &Descriptor,
        payload: &[u8],
        slots: std::ops::Range<usize>,
    ) -> Result<Fold> {
        with_codec!(self.0, C => C::fold(d, payload, slots))
    }

    /// See [`BlockCodec::validate`].
    pub fn validate(self, d: &Descriptor, payload: &[u8]) -> Result<()> {
        with_codec!(self.0, C => C::validate(d, payload))
    }
}

impl From<CodecId> for Codec {
    fn from(id: CodecId) -> Codec {
        Codec(id)
    }
}

impl std::fmt::Display for Codec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}
