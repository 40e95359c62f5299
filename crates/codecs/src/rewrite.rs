//! Changes made by decoding a block whole and encoding it again, for the cases a codec's format
//! has no in-place edit for (FOR's first and last keys; every insert and remove of Rice).

use crate::{BlockCodec, CodecError, Descriptor, InsertOutcome, RemoveOutcome, Result};

/// The keys of a block, decoded into a buffer of `N` (at least `C::MAX_KEYS`), and their count.
pub(crate) fn keys_of<C: BlockCodec, const N: usize>(
    d: &Descriptor,
    payload: &[u8],
) -> Result<([u32; N], usize)> {
    let mut buf = [0u32; N];
    let n = C::decode(d, payload, &mut buf)?;
    Ok((buf, n))
}

/// Encodes `keys` into `payload`; `None` when they do not fit (`encode` checks the size
/// before it writes, so nothing was written then).
pub(crate) fn encode_fitting<C: BlockCodec>(
    keys: &[u32],
    payload: &mut [u8],
) -> Result<Option<Descriptor>> {
    match C::encode(keys, payload) {
        Ok(nd) => Ok(Some(nd)),
        Err(CodecError::NoRoom { .. }) => Ok(None),
        Err(e) => Err(e),
    }
}

/// [`BlockCodec::insert`] by decoding, inserting and encoding again.
pub(crate) fn insert<C: BlockCodec, const N: usize>(
    desc: &mut Descriptor,
    payload: &mut [u8],
    key: u32,
) -> Result<InsertOutcome> {
    let (mut keys, count) = keys_of::<C, N>(desc, payload)?;
    let slot = keys[..count].partition_point(|&k| k < key);
    if slot < count && keys[slot] == key {
        return Ok(InsertOutcome::Exists { slot });
    }
    if count >= C::MAX_KEYS.min(N) {
        return Ok(InsertOutcome::NoRoom);
    }
    keys.copy_within(slot..count, slot + 1);
    keys[slot] = key;
    match encode_fitting::<C>(&keys[..count + 1], payload)? {
        Some(nd) => {
            *desc = nd;
            Ok(InsertOutcome::Inserted { slot })
        }
        None => Ok(InsertOutcome::NoRoom),
    }
}

/// [`BlockCodec::remove`] by decoding, removing and encoding again.
pub(crate) fn remove<C: BlockCodec, const N: usize>(
    desc: &mut Descriptor,
    payload: &mut [u8],
    slot: usize,
) -> Result<RemoveOutcome> {
    let (mut keys, count) = keys_of::<C, N>(desc, payload)?;
    if slot >= count {
        return Err(CodecError::InvalidInput {
            what: "slot out of range",
        });
    }
    keys.copy_within(slot + 1..count, slot);
    match encode_fitting::<C>(&keys[..count - 1], payload)? {
        Some(nd) => {
            let grew = nd.size > desc.size;
            *desc = nd;
            Ok(RemoveOutcome::Removed { grew })
        }
        None => Ok(RemoveOutcome::NoRoom),
    }
}
