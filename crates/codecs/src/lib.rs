//! tersedb-codecs: integer codecs over blocks of sorted, unique `u32` keys, with the operations a
//! B+-tree leaf needs (select, lower_bound, insert, append, remove, fold) run directly on the
//! compressed bytes wherever the format allows it.
//!
//! A *block* is a descriptor kept by the caller plus a *payload* of bytes:
//!
//! ```text
//! Descriptor { start, count, last, bits, size }     kept by the caller (the leaf's block index)
//! payload[0..size]                                  encodes keys[1..count] (the start key is not in it)
//! ```
//!
//! `count` counts every key of the block including `start`; a block with `count == 0` is empty and
//! its other fields are zero. The payload encodes what follows the start key, so a block with one
//! key has an empty payload. The caller owns the payload buffer; its length is the block's
//! *capacity*. In-place operations never write beyond it: when a change does not fit they return
//! [`CodecError::NoRoom`] / an outcome saying so and leave the block unchanged.
//!
//! Every public function is safe. Payloads and descriptors may come from disk and are untrusted:
//! malformed input yields a [`CodecError`], never a panic or an out-of-bounds read.
//! SIMD kernels live in [`simd`] and are selected once at run time ([`isa::Isa`]).

#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_debug_implementations)]

pub mod bits;
pub mod bp128;
pub mod codec;
pub mod error;
pub mod for_;
pub mod isa;
pub mod masked_vbyte;
pub mod pfor;
pub(crate) mod rewrite;
pub mod rice;
pub(crate) mod search;
pub mod simd;
pub mod simd_for;
pub mod streamvbyte;
pub mod sum;
pub mod varintgb;
pub mod vbyte;
pub mod vertical;

pub use codec::Codec;
pub use error::CodecError;
pub use isa::Isa;

/// Result type of this crate.
pub type Result<T> = std::result::Result<T, CodecError>;

/// Stable codec identifiers. The numeric value is stored in database files: never renumber.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum CodecId {
    VByte = 1,
    MaskedVByte = 2,
    VarIntGb = 3,
    StreamVByte = 4,
    Bp128 = 5,
    For = 6,
    SimdFor = 7,
    Pfor = 8,
    PforDelta = 9,
    Rice = 10,
}

impl CodecId {
    /// Entries of a table indexed by `CodecId as usize`: one past the largest id (ids start at 1,
    /// so entry 0 stays unused).
    pub const TABLE_LEN: usize = CodecId::Rice as usize + 1;

    /// Every codec, in id order.
    pub const ALL: [CodecId; 10] = [
        CodecId::VByte,
        CodecId::MaskedVByte,
        CodecId::VarIntGb,
        CodecId::StreamVByte,
        CodecId::Bp128,
        CodecId::For,
        CodecId::SimdFor,
        CodecId::Pfor,
        CodecId::PforDelta,
        CodecId::Rice,
    ];

    /// The codec's name as used in the API, the CLI and the file format docs.
    pub fn name(self) -> &'static str {
        match self {
            CodecId::VByte => "vbyte",
            CodecId::MaskedVByte => "masked-vbyte",
            CodecId::VarIntGb => "varintgb",
            CodecId::StreamVByte => "streamvbyte",
            CodecId::Bp128 => "bp128",
            CodecId::For => "for",
            CodecId::SimdFor => "simd-for",
            CodecId::Pfor => "pfor",
            CodecId::PforDelta => "pfor-delta",
            CodecId::Rice => "rice",
        }
    }

    /// Parses a name as returned by [`CodecId::name`].
    pub fn from_name(name: &str) -> Option<CodecId> {
        CodecId::ALL.into_iter().find(|c| c.name() == name)
    }

    /// Decodes the on-disk id byte.
    pub fn from_u8(v: u8) -> Option<CodecId> {
        CodecId::ALL.into_iter().find(|c| *c as u8 == v)
    }
}

impl std::fmt::Display for CodecId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The descriptor checks every bit-packing codec (FOR, BP128 and SIMD FOR, PFOR and PFOR-DELTA,
/// Rice) makes first: at most `max` keys (`max_msg` when more); a block of 0 or 1 key has no
/// payload and no bit width, an empty one no keys, a one-key one `start == last`; a longer one
/// `last > start`. `Ok(false)`: a block of at most one key, which needs no further check.
#[inline(always)]
pub(crate) fn check_head(d: &Descriptor, max: usize, max_msg: &'static str) -> Result<bool> {
    let corrupt = |what| Err(CodecError::Corrupt { what });
    let count = d.count as usize;
    if count > max {
        return corrupt(max_msg);
    }
    if count <= 1 {
        if d.size != 0 || d.bits != 0 {
            return corrupt("block of at most one key has a payload");
        }
        if count == 0 && (d.start != 0 || d.last != 0) {
            return corrupt("empty block with keys");
        }
        if count == 1 && d.start != d.last {
            return corrupt("one-key block with start != last");
        }
        return Ok(false);
    }
    if d.last <= d.start {
        return corrupt("last <= start");
    }
    Ok(true)
}

/// What the caller keeps about a block (the leaf's block index entry).
///
/// Invariants of a well-formed block: `count <= C::MAX_KEYS`; `count == 0` implies every other
/// field is zero; `count == 1` implies `start == last` and `size == 0`; `start < .. < last`
/// are the keys; `size` bytes of payload are in use; `bits <= 32` is the bit width for the packed
/// codecs (0 for the byte-oriented ones, which do not use it), except Rice's `k | mode << 5`
/// (at most 63: the engine's block index keeps 6 bits).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Descriptor {
    /// First (smallest) key of the block.
    pub start: u32,
    /// Number of keys in the block, `start` included.
    pub count: u32,
    /// Last (largest) key of the block; cached so append needs no decode.
    pub last: u32,
    /// Payload bytes in use.
    pub size: u32,
    /// Bit width of the packed codecs; 0 for the byte-oriented codecs; Rice's `k` and mode flag
    /// ([`rice::COMPLEMENT`]).
    pub bits: u8,
}

/// Result of [`BlockCodec::insert`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InsertOutcome {
    /// The key was inserted at this slot (0-based position among the block's keys).
    Inserted { slot: usize },
    /// The key was already present at this slot; the block is unchanged.
    Exists { slot: usize },
    /// The block is full (key count or payload capacity); the block is unchanged. The caller
    /// splits or grows the block and retries.
    NoRoom,
}

/// Result of [`BlockCodec::append`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AppendOutcome {
    /// The key is now the block's last key.
    Appended,
    /// The block is full (key count or payload capacity); the block is unchanged.
    NoRoom,
}

/// Result of [`BlockCodec::remove`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RemoveOutcome {
    /// The key was removed; `grew` says whether the payload got larger (possible for the packed
    /// codecs, whose bit width may rise when two deltas merge).
    Removed { grew: bool },
    /// Removing would grow the payload beyond its capacity; the block is unchanged.
    NoRoom,
}

/// SUM / COUNT / MIN / MAX of a slot range of a block.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Fold {
    pub count: u64,
    pub sum: u64,
    /// `None` when `count == 0`.
    pub min: Option<u32>,
    pub max: Option<u32>,
}

impl Fold {
    /// Combines two folds (of disjoint key sets).
    pub fn merge(self, other: Fold) -> Fold {
        Fold {
            count: self.count + other.count,
            sum: self.sum + other.sum,
            min: match (self.min, other.min) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            },
            max: match (self.max, other.max) {
                (Some(a), Some(b)) => Some(a.max(b)),
                (a, b) => a.or(b),
            },
        }
    }
}

/// One integer codec over blocks of sorted unique `u32` keys.
///
/// Implementations are zero-sized types; every method is an associated function so that callers
/// can dispatch statically (generic over `C: BlockCodec`) or dynamically through [`Codec`].
///
/// Unless stated otherwise, methods taking a descriptor and payload first check them cheaply
/// (`count <= MAX_KEYS`, `size <= payload.len()`, `bits <= 32`, ...) and return
/// [`CodecError::Corrupt`] on inconsistency; they never read outside `payload`.
pub trait BlockCodec {
    /// Which codec this is.
    const ID: CodecId;
    /// Most keys a block may hold, start key included.
    const MAX_KEYS: usize;

    /// Worst-case payload bytes for a block of `count` keys (start included). A buffer of this
    /// size always suffices for [`BlockCodec::encode`].
    fn max_payload_len(count: usize) -> usize;

    /// Encodes `keys` (sorted, unique, `1 <= len <= MAX_KEYS`; an empty slice gives the empty
    /// descriptor) into `out`, returning the descriptor. Errors with `NoRoom` when `out` is too
    /// small and `InvalidInput` when keys are unsorted, duplicated or too many.
    fn encode(keys: &[u32], out: &mut [u8]) -> Result<Descriptor>;

    /// The payload size [`BlockCodec::encode`] gives `keys`, without encoding them, where it
    /// follows from the keys' widths alone; `None` (the default) where only the encoder finds it
    /// (PFOR's exceptions, the byte codecs' groups). For keys `encode` refuses the result is
    /// unspecified.
    fn encoded_len(keys: &[u32]) -> Option<usize> {
        let _ = keys;
        None
    }

    /// [`BlockCodec::encode`], unless the codec can tell before encoding that the payload
    /// would take at least `limit` bytes: then `None`, and nothing is written. (A `Some` block
    /// may still take `limit` bytes or more.) The default always encodes; PFOR and PFOR-DELTA
    /// bound their frame from a histogram of the values before choosing a width. `auto` asks
    /// for each candidate it must encode to be sized under nine tenths of its best (issue 21).
    fn encode_below(keys: &[u32], out: &mut [u8], limit: usize) -> Result<Option<Descriptor>> {
        let _ = limit;
        Self::encode(keys, out).map(Some)
    }

    /// Decodes all `count` keys (start included) into `out[..count]`; returns `count`.
    /// `out.len()` must be at least `count` (else `InvalidInput`). Prefix sum fused in.
    fn decode(desc: &Descriptor, payload: &[u8], out: &mut [u32]) -> Result<usize>;

    /// The key at slot `i` (0 = start), without decoding the whole block where the format allows.
    fn select(desc: &Descriptor, payload: &[u8], i: usize) -> Result<u32>;

    /// Position and value of the first key `>= key`; `(count, None)` when every key is smaller.
    fn lower_bound(desc: &Descriptor, payload: &[u8], key: u32) -> Result<(usize, Option<u32>)>;

    /// Inserts `key`, in place where the format allows. `payload` is the whole buffer (its length
    /// is the capacity). On `NoRoom`/`Exists`/error the block is unchanged.
    fn insert(desc: &mut Descriptor, payload: &mut [u8], key: u32) -> Result<InsertOutcome>;

    /// Appends `key`, which must be greater than `desc.last` (else `InvalidInput`) unless the
    /// block is empty. O(1) fast path for every codec while the format allows it.
    fn append(desc: &mut Descriptor, payload: &mut [u8], key: u32) -> Result<AppendOutcome>;

    /// Removes the key at `slot` (`< count`, else `InvalidInput`).
    fn remove(desc: &mut Descriptor, payload: &mut [u8], slot: usize) -> Result<RemoveOutcome>;

    /// SUM/COUNT/MIN/MAX of the keys at `slots`, decoding through a small stack buffer.
    fn fold(desc: &Descriptor, payload: &[u8], slots: std::ops::Range<usize>) -> Result<Fold>;

    /// Full check of a block read from untrusted storage: the payload decodes within `size`
    /// bytes, keys strictly increase from `start`, and the last decoded key equals `last`.
    fn validate(desc: &Descriptor, payload: &[u8]) -> Result<()>;
}
