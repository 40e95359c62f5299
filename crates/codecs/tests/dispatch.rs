//! Pins `tersedb_codecs::Codec`, the run-time dispatch: for every codec in `CodecId::ALL`, every
//! operation through `Codec(id)` gives exactly the result, descriptor and bytes of the static
//! type, and `max_keys` / `max_payload_len` agree. Random, seeded: re-run with `SEED=<n>`.

mod common;

use tersedb_codecs::codec::{max_keys, max_payload_len};
use tersedb_codecs::{with_codec, BlockCodec, Codec, CodecId};

fn seed() -> u64 {
    let s = std::env::var("SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(77);
    eprintln!("SEED={s}");
    s
}

/// Runs the same random operations on a static block of `C` and a dynamic block of `Codec(id)`.
fn same_as_static<C: BlockCodec>(id: CodecId, rng: &mut fastrand::Rng) {
    assert_eq!(C::ID, id);
    let dy = Codec(id);
    assert_eq!(dy.max_keys(), C::MAX_KEYS);
    assert_eq!(max_keys(id), C::MAX_KEYS);
    for n in [0, 1, 2, 100, C::MAX_KEYS] {
        assert_eq!(max_payload_len(id, n), C::max_payload_len(n));
    }
    for round in 0..20 {
        let n = rng.usize(..=C::MAX_KEYS);
        let b = rng.u32(0..=32);
        let s = rng.u32(..1000);
        let keys = common::keys_with_width(rng, n, b, s);
        let cap = C::max_payload_len(C::MAX_KEYS) + rng.usize(..8);
        let (mut sp, mut dp) = (vec![0u8; cap], vec![0u8; cap]);
        let mut sd = C::encode(&keys, &mut sp).unwrap();
        let mut dd = dy.encode(&keys, &mut dp).unwrap();
        assert_eq!((sd, &sp), (dd, &dp), "{id} round {round} encode");
        for _ in 0..30 {
            let key = rng.u32(..);
            let slot = rng.usize(..=sd.count as usize);
            match rng.u8(..6) {
                0 => assert_eq!(
                    C::insert(&mut sd, &mut sp, key),
                    dy.insert(&mut dd, &mut dp, key)
                ),
                1 => {
                    let k = sd.last.saturating_add(rng.u32(1..1000));
                    assert_eq!(
                        C::append(&mut sd, &mut sp, k),
                        dy.append(&mut dd, &mut dp, k)
                    )
                }
                2 => assert_eq!(
                    C::remove(&mut sd, &mut sp, slot),
                    dy.remove(&mut dd, &mut dp, slot)
                ),
                3 => assert_eq!(C::select(&sd, &sp, slot), dy.select(&dd, &dp, slot)),
                4 => assert_eq!(C::lower_bound(&sd, &sp, key), dy.lower_bound(&dd, &dp, key)),
                _ => assert_eq!(
                    C::fold(&sd, &sp, slot / 2..slot),
                    dy.fold(&dd, &dp, slot / 2..slot)
                ),
            }
            assert_eq!((sd, &sp), (dd, &dp), "{id} round {round}");
        }
        assert_eq!(C::validate(&sd, &sp), dy.validate(&dd, &dp));
        dy.validate(&dd, &dp).unwrap();
        let mut so = vec![0u32; sd.count as usize];
        let mut doo = vec![0u32; dd.count as usize];
        assert_eq!(C::decode(&sd, &sp, &mut so), dy.decode(&dd, &dp, &mut doo));
        assert_eq!(so, doo);
        // garbage goes to the same checks
        let mut bad = sd;
        bad.count = C::MAX_KEYS as u32 + 1;
        assert_eq!(C::validate(&bad, &sp), dy.validate(&bad, &dp));
        assert!(dy.validate(&bad, &dp).is_err());
    }
}

#[test]
fn every_codec_dispatches_to_its_static_type() {
    let mut rng = fastrand::Rng::with_seed(seed());
    let mut seen = Vec::new();
    for id in CodecId::ALL {
        // The explicit list (not `with_codec!`) is the reference for which type an id means.
        match id {
            CodecId::VByte => same_as_static::<tersedb_codecs::vbyte::VByte>(id, &mut rng),
            CodecId::MaskedVByte => {
                same_as_static::<tersedb_codecs::masked_vbyte::MaskedVByte>(id, &mut rng)
            }
            CodecId::VarIntGb => same_as_static::<tersedb_codecs::varintgb::VarIntGb>(id, &mut rng),
            CodecId::StreamVByte => {
                same_as_static::<tersedb_codecs::streamvbyte::StreamVByte>(id, &mut rng)
            }
            CodecId::Bp128 => same_as_static::<tersedb_codecs::bp128::Bp128>(id, &mut rng),
            CodecId::For => same_as_static::<tersedb_codecs::for_::For>(id, &mut rng),
            CodecId::SimdFor => same_as_static::<tersedb_codecs::simd_for::SimdFor>(id, &mut rng),
            CodecId::Pfor => same_as_static::<tersedb_codecs::pfor::Pfor>(id, &mut rng),
            CodecId::PforDelta => same_as_static::<tersedb_codecs::pfor::PforDelta>(id, &mut rng),
            CodecId::Rice => same_as_static::<tersedb_codecs::rice::Rice>(id, &mut rng),
        }
        seen.push(id);
    }
    assert_eq!(seen.len(), 10);
}

#[test]
fn with_codec_binds_the_type_of_the_id() {
    for id in CodecId::ALL {
        assert_eq!(with_codec!(id, C => <C as BlockCodec>::ID), id);
        assert_eq!(Codec::from(id).id(), id);
        assert_eq!(Codec(id).to_string(), id.name());
    }
    assert_eq!(Codec::all().count(), CodecId::ALL.len());
    // A table indexed by id (the engine's blocks per codec) has a slot for every codec.
    assert!(CodecId::ALL
        .iter()
        .all(|&id| (id as usize) < CodecId::TABLE_LEN));
}

/// `Codec::encoded_len`, where a codec gives one, is the size its encoder writes, for random
/// blocks of every count and delta width (the `auto` choice relies on it to pick the blocks'
/// codecs as encoding every candidate did).
#[test]
fn encoded_len_is_the_encoders_size() {
    let mut rng = fastrand::Rng::with_seed(seed());
    for id in CodecId::ALL {
        let c = Codec(id);
        let mut buf = vec![0u8; c.max_payload_len(c.max_keys())];
        let mut sized = 0;
        for round in 0..2000 {
            let n = match round % 4 {
                0 => rng.usize(..=3),
                1 => c.max_keys(),
                _ => rng.usize(..=c.max_keys()),
            };
            let (b, start) = (rng.u32(0..=32), rng.u32(..));
            let keys = common::keys_with_width(&mut rng, n, b, start);
            let d = c.encode(&keys, &mut buf).unwrap();
            if let Some(len) = c.encoded_len(&keys) {
                assert_eq!(
                    len,
                    d.size as usize,
                    "{id} round {round}: {} keys",
                    keys.len()
                );
                sized += 1;
            }
        }
        let expect = matches!(
            id,
            CodecId::Bp128 | CodecId::SimdFor | CodecId::For | CodecId::StreamVByte
        );
        assert_eq!(sized > 0, expect, "{id}");
    }
}

/// `Codec::encode_below` is `encode`, byte for byte, unless it says the block would take at
/// least the limit, which must then be so: for every codec, random blocks of every count and
/// delta width with outliers (the last delta often), and limits around the encoder's size.
/// `auto` relies on it to choose the blocks' codecs as encoding every candidate did.
#[test]
fn encode_below_is_encode_or_a_true_refusal() {
    let mut rng = fastrand::Rng::with_seed(seed());
    for id in CodecId::ALL {
        let c = Codec(id);
        let len = c.max_payload_len(c.max_keys());
        let (mut buf, mut below) = (vec![0u8; len], vec![0u8; len]);
        let mut refused = 0;
        for round in 0..3000 {
            let n = match round % 4 {
                0 => rng.usize(..=3),
                1 => c.max_keys(),
                _ => rng.usize(..=c.max_keys()),
            };
            let (b, start) = (rng.u32(0..=32), rng.u32(..1 << 20));
            let mut keys = common::keys_with_width(&mut rng, n, b, start);
            if round % 3 > 0 && keys.len() > 2 {
                for _ in 0..rng.usize(1..4) {
                    let at = if rng.bool() {
                        keys.len() - 1
                    } else {
                        rng.usize(1..keys.len())
                    };
                    let w = rng.u32(8..28);
                    let jump = rng.u32(..1 << w);
                    for k in &mut keys[at..] {
                        *k = k.saturating_add(jump);
                    }
                }
                keys.dedup();
            }
            let d = c.encode(&keys, &mut buf).unwrap();
            let size = d.size as usize;
            let limit = match round % 3 {
                0 => size * 9 / 10 + rng.usize(..=size / 5 + 1),
                1 => rng.usize(..=2 * size + 1),
                _ => usize::MAX,
            };
            match c.encode_below(&keys, &mut below, limit).unwrap() {
                Some(db) => {
                    assert_eq!(db, d, "{id} round {round}");
                    assert_eq!(below[..size], buf[..size], "{id} round {round}");
                }
                None => {
                    assert!(
                        size >= limit,
                        "{id} round {round}: {size} refused below {limit}"
                    );
                    refused += 1;
                }
            }
        }
        if matches!(id, CodecId::Pfor | CodecId::PforDelta) {
            assert!(refused > 100, "{id}: only {refused} refusals");
        }
    }
}
