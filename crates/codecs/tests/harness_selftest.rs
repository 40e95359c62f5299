//! Pins the shared codec test suite itself: it passes for a trivially correct codec (plain
//! little-endian u32 deltas, written here) and fails for a codec with a planted bug.

mod common;

use tersedb_codecs::{
    AppendOutcome, BlockCodec, CodecError, CodecId, Descriptor, Fold, InsertOutcome, RemoveOutcome,
    Result,
};

/// Keys after `start` as plain little-endian u32 values (4 bytes each).
struct Plain;

fn check(d: &Descriptor, p: &[u8]) -> Result<()> {
    if d.count as usize > Plain::MAX_KEYS {
        return Err(CodecError::Corrupt { what: "count" });
    }
    if d.size as usize != 4 * (d.count as usize).saturating_sub(1) || d.size as usize > p.len() {
        return Err(CodecError::Corrupt { what: "size" });
    }
    Ok(())
}

fn keys_of(d: &Descriptor, p: &[u8]) -> Result<Vec<u32>> {
    check(d, p)?;
    let mut v = Vec::with_capacity(d.count as usize);
    if d.count > 0 {
        v.push(d.start);
    }
    for c in p[..d.size as usize].chunks_exact(4) {
        v.push(u32::from_le_bytes(c.try_into().unwrap()));
    }
    Ok(v)
}

fn store(keys: &[u32], out: &mut [u8]) -> Result<Descriptor> {
    let size = 4 * keys.len().saturating_sub(1);
    if keys.len() > Plain::MAX_KEYS {
        return Err(CodecError::InvalidInput {
            what: "too many keys",
        });
    }
    if !keys.windows(2).all(|w| w[0] < w[1]) {
        return Err(CodecError::InvalidInput { what: "unsorted" });
    }
    if size > out.len() {
        return Err(CodecError::NoRoom {
            needed: size,
            available: out.len(),
        });
    }
    for (i, k) in keys.iter().skip(1).enumerate() {
        out[4 * i..4 * i + 4].copy_from_slice(&k.to_le_bytes());
    }
    Ok(match keys {
        [] => Descriptor::default(),
        [f, .., l] => Descriptor {
            start: *f,
            count: keys.len() as u32,
            last: *l,
            size: size as u32,
            bits: 0,
        },
        [f] => Descriptor {
            start: *f,
            count: 1,
            last: *f,
            size: 0,
            bits: 0,
        },
    })
}

impl BlockCodec for Plain {
    const ID: CodecId = CodecId::VByte;
    const MAX_KEYS: usize = 257;
    fn max_payload_len(count: usize) -> usize {
        4 * count.saturating_sub(1)
    }
    fn encode(keys: &[u32], out: &mut [u8]) -> Result<Descriptor> {
        store(keys, out)
    }
    fn decode(d: &Descriptor, p: &[u8], out: &mut [u32]) -> Result<usize> {
        let k = keys_of(d, p)?;
        if out.len() < k.len() {
            return Err(CodecError::InvalidInput {
                what: "out too small",
            });
        }
        out[..k.len()].copy_from_slice(&k);
        Ok(k.len())
    }
    fn select(d: &Descriptor, p: &[u8], i: usize) -> Result<u32> {
        keys_of(d, p)?
            .get(i)
            .copied()
            .ok_or(CodecError::InvalidInput { what: "slot" })
    }
    fn lower_bound(d: &Descriptor, p: &[u8], key: u32) -> Result<(usize, Option<u32>)> {
        let k = keys_of(d, p)?;
        let pos = k.partition_point(|&x| x < key);
        Ok((pos, k.get(pos).copied()))
    }
    fn insert(d: &mut Descriptor, p: &mut [u8], key: u32) -> Result<InsertOutcome> {
        let mut k = keys_of(d, p)?;
        let pos = k.partition_point(|&x| x < key);
        if k.get(pos) == Some(&key) {
            return Ok(InsertOutcome::Exists { slot: pos });
        }
        if k.len() == Self::MAX_KEYS || 4 * k.len() > p.len() {
            return Ok(InsertOutcome::NoRoom);
        }
        k.insert(pos, key);
        *d = store(&k, p)?;
        Ok(InsertOutcome::Inserted { slot: pos })
    }
    fn append(d: &mut Descriptor, p: &mut [u8], key: u32) -> Result<AppendOutcome> {
        let mut k = keys_of(d, p)?;
        if d.count > 0 && key <= d.last {
            return Err(CodecError::InvalidInput {
                what: "append key not greater than last",
            });
        }
        if k.len() == Self::MAX_KEYS || 4 * k.len() > p.len() {
            return Ok(AppendOutcome::NoRoom);
        }
        k.push(key);
        *d = store(&k, p)?;
        Ok(AppendOutcome::Appended)
    }
    fn remove(d: &mut Descriptor, p: &mut [u8], slot: usize) -> Result<RemoveOutcome> {
        let mut k = keys_of(d, p)?;
        if slot >= k.len() {
            return Err(CodecError::InvalidInput { what: "slot" });
        }
        k.remove(slot);
        *d = store(&k, p)?;
        Ok(RemoveOutcome::Removed { grew: false })
    }
    fn fold(d: &Descriptor, p: &[u8], r: std::ops::Range<usize>) -> Result<Fold> {
        let k = keys_of(d, p)?;
        let s = k.get(r).ok_or(CodecError::InvalidInput { what: "range" })?;
        Ok(Fold {
            count: s.len() as u64,
            sum: s.iter().map(|&x| x as u64).sum(),
            min: s.iter().copied().min(),
            max: s.iter().copied().max(),
        })
    }
    fn validate(d: &Descriptor, p: &[u8]) -> Result<()> {
        let k = keys_of(d, p)?;
        let ok = k.windows(2).all(|w| w[0] < w[1])
            && k.first().is_none_or(|&f| f == d.start)
            && k.last().is_none_or(|&l| l == d.last);
        if ok {
            Ok(())
        } else {
            Err(CodecError::Corrupt { what: "keys" })
        }
    }
}

/// Plain with a planted bug: lower_bound is off by one for keys that are present.
struct Buggy;
impl BlockCodec for Buggy {
    const ID: CodecId = CodecId::VByte;
    const MAX_KEYS: usize = 257;
    fn max_payload_len(c: usize) -> usize {
        Plain::max_payload_len(c)
    }
    fn encode(k: &[u32], o: &mut [u8]) -> Result<Descriptor> {
        Plain::encode(k, o)
    }
    fn decode(d: &Descriptor, p: &[u8], o: &mut [u32]) -> Result<usize> {
        Plain::decode(d, p, o)
    }
    fn select(d: &Descriptor, p: &[u8], i: usize) -> Result<u32> {
        Plain::select(d, p, i)
    }
    fn lower_bound(d: &Descriptor, p: &[u8], key: u32) -> Result<(usize, Option<u32>)> {
        let k = keys_of(d, p)?;
        let pos = k.partition_point(|&x| x <= key);
        Ok((pos, k.get(pos).copied()))
    }
    fn insert(d: &mut Descriptor, p: &mut [u8], key: u32) -> Result<InsertOutcome> {
        Plain::insert(d, p, key)
    }
    fn append(d: &mut Descriptor, p: &mut [u8], key: u32) -> Result<AppendOutcome> {
        Plain::append(d, p, key)
    }
    fn remove(d: &mut Descriptor, p: &mut [u8], s: usize) -> Result<RemoveOutcome> {
        Plain::remove(d, p, s)
    }
    fn fold(d: &Descriptor, p: &[u8], r: std::ops::Range<usize>) -> Result<Fold> {
        Plain::fold(d, p, r)
    }
    fn validate(d: &Descriptor, p: &[u8]) -> Result<()> {
        Plain::validate(d, p)
    }
}

codec_suite!(plain, super::Plain);

#[test]
fn suite_catches_a_wrong_lower_bound() {
    let keys: Vec<u32> = (0..50).map(|i| i * 3).collect();
    let (d, p) = common::encode_vec::<Buggy>(&keys);
    let caught = std::panic::catch_unwind(|| common::check_block::<Buggy>(&d, &p, &keys));
    assert!(
        caught.is_err(),
        "the shared suite must reject a wrong lower_bound"
    );
}
