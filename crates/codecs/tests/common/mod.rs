//! Shared model-based tests for every codec: a sorted `Vec<u32>` is the model, and every operation
//! of [`BlockCodec`] is checked against it, including the full/no-room paths and untrusted input.
//!
//! Each codec's test file instantiates the whole suite with `codec_suite!(module_name, CodecType);`.

#![allow(dead_code)]

pub mod byte_parity;

use proptest::prelude::*;
use tersedb_codecs::{
    AppendOutcome, BlockCodec, CodecError, Descriptor, Fold, InsertOutcome, RemoveOutcome,
};

/// Sorted unique keys with deltas of at most `b` bits (b = 0 means deltas of exactly 1).
pub fn keys_with_width(rng: &mut fastrand::Rng, n: usize, b: u32, start: u32) -> Vec<u32> {
    let mut out = Vec::with_capacity(n);
    let mut cur = start as u64;
    for i in 0..n {
        if i > 0 {
            let d = if b == 0 {
                1
            } else {
                let m = if b >= 32 { u32::MAX } else { (1u32 << b) - 1 };
                (rng.u32(..) & m).max(1) as u64
            };
            cur += d;
            if cur > u32::MAX as u64 {
                break;
            }
        }
        out.push(cur as u32);
    }
    out
}

/// Proptest strategy: sorted unique key sets of up to `max` keys in every shape that matters:
/// bit widths 0..=32, dense, sparse, ending at u32::MAX, starting at 0.
pub fn key_sets(max: usize) -> impl Strategy<Value = Vec<u32>> {
    (0..=max, 0u32..=32, any::<u64>(), 0u8..4).prop_map(move |(n, b, seed, shape)| {
        let mut rng = fastrand::Rng::with_seed(seed);
        match shape {
            // deltas of width <= b from a random start (clipped at u32::MAX)
            0 => {
                let start = if b >= 24 {
                    rng.u32(..1 << 16)
                } else {
                    rng.u32(..)
                };
                keys_with_width(&mut rng, n, b, start)
            }
            // same but from 0
            1 => keys_with_width(&mut rng, n, b, 0),
            // ending exactly at u32::MAX
            2 => {
                let mut k = keys_with_width(&mut rng, n, b.min(20), 0);
                if let Some(&last) = k.last() {
                    let shift = u32::MAX - last;
                    for x in &mut k {
                        *x += shift;
                    }
                }
                k
            }
            // uniformly random set
            _ => {
                let mut k: Vec<u32> = (0..n).map(|_| rng.u32(..)).collect();
                k.sort_unstable();
                k.dedup();
                k
            }
        }
    })
}

/// Encodes `keys` into a buffer of exactly `max_payload_len` bytes.
pub fn encode_vec<C: BlockCodec>(keys: &[u32]) -> (Descriptor, Vec<u8>) {
    let mut buf = vec![0u8; C::max_payload_len(keys.len().max(1))];
    let d = C::encode(keys, &mut buf).expect("encode");
    (d, buf)
}

fn decode_all<C: BlockCodec>(d: &Descriptor, payload: &[u8]) -> Vec<u32> {
    let mut out = vec![0u32; d.count as usize];
    let n = C::decode(d, payload, &mut out).expect("decode");
    assert_eq!(n, d.count as usize);
    out
}

fn model_fold(keys: &[u32]) -> Fold {
    Fold {
        count: keys.len() as u64,
        sum: keys.iter().map(|&k| k as u64).sum(),
        min: keys.iter().copied().min(),
        max: keys.iter().copied().max(),
    }
}

/// Checks a block against the model: descriptor fields, decode, select, lower_bound, fold, validate.
pub fn check_block<C: BlockCodec>(d: &Descriptor, payload: &[u8], model: &[u32]) {
    assert_eq!(d.count as usize, model.len(), "count");
    assert!(d.size as usize <= payload.len(), "size within capacity");
    // No operation leaves a block larger than the worst case for its key count: callers size
    // their buffers by `max_payload_len` (the B+-tree leaf copies blocks into such a buffer).
    assert!(
        d.size as usize <= C::max_payload_len(d.count as usize),
        "size {} above max_payload_len({}) = {}",
        d.size,
        d.count,
        C::max_payload_len(d.count as usize)
    );
    if let (Some(&f), Some(&l)) = (model.first(), model.last()) {
        assert_eq!(d.start, f, "start");
        assert_eq!(d.last, l, "last");
    } else {
        assert_eq!(*d, Descriptor::default(), "empty block descriptor");
    }
    C::validate(d, payload).expect("validate");
    assert_eq!(decode_all::<C>(d, payload), model, "decode");
    for (i, &k) in model.iter().enumerate() {
        assert_eq!(C::select(d, payload, i).expect("select"), k, "select({i})");
    }
    assert!(
        C::select(d, payload, model.len()).is_err(),
        "select past the end"
    );
    let mut probes: Vec<u32> = vec![0, 1, u32::MAX, u32::MAX - 1];
    for &k in model.iter().take(300) {
        probes.extend([k, k.wrapping_sub(1), k.wrapping_add(1)]);
    }
    for p in probes {
        let pos = model.partition_point(|&k| k < p);
        let want = (pos, model.get(pos).copied());
        assert_eq!(
            C::lower_bound(d, payload, p).expect("lower_bound"),
            want,
            "lower_bound({p})"
        );
    }
    let n = model.len();
    for (a, b) in [
        (0, n),
        (0, n / 2),
        (n / 3, n),
        (n / 4, (3 * n / 4).max(n / 4)),
        (n, n),
    ] {
        assert_eq!(
            C::fold(d, payload, a..b).expect("fold"),
            model_fold(&model[a..b]),
            "fold {a}..{b}"
        );
    }
    assert!(C::fold(d, payload, 0..n + 1).is_err(), "fold past the end");
}

/// One in-place operation of the model test.
#[derive(Clone, Debug)]
pub enum Op {
    /// Insert a key near the existing ones (`near` picks a neighbour, `off` the distance).
    Insert { near: usize, off: i64 },
    /// Insert an arbitrary key.
    InsertAny(u32),
    /// Append `last + delta`.
    Append(u32),
    /// Remove the slot `slot % count`.
    Remove(usize),
}

pub fn ops() -> impl Strategy<Value = Vec<Op>> {
    prop::collection::vec(
        prop_oneof![
            3 => (any::<usize>(), -300i64..300).prop_map(|(near, off)| Op::Insert { near, off }),
            1 => any::<u32>().prop_map(Op::InsertAny),
            3 => prop_oneof![1u32..4, 1u32..300, 1u32..70000, any::<u32>()].prop_map(Op::Append),
            2 => any::<usize>().prop_map(Op::Remove),
        ],
        0..80,
    )
}

/// Runs `ops` on a block built from `initial` with payload capacity `cap`, against the model.
pub fn run_ops<C: BlockCodec>(initial: &[u32], ops: &[Op], cap: usize) {
    let mut model = initial.to_vec();
    let mut payload = vec![0u8; cap.max(C::max_payload_len(initial.len().max(1)))];
    let mut d = C::encode(&model, &mut payload).expect("encode");
    check_block::<C>(&d, &payload, &model);
    for op in ops {
        let before = (d, payload.clone());
        match *op {
            Op::Insert { .. } | Op::InsertAny(_) => {
                let key = match *op {
                    Op::Insert { near, off } if !model.is_empty() => {
                        let base = model[near % model.len()] as i64;
                        (base + off).clamp(0, u32::MAX as i64) as u32
                    }
                    Op::Insert { off, .. } => off.unsigned_abs() as u32,
                    Op::InsertAny(k) => k,
                    _ => unreachable!(),
                };
                let pos = model.partition_point(|&k| k < key);
                let exists = model.get(pos) == Some(&key);
                match C::insert(&mut d, &mut payload, key).expect("insert") {
                    InsertOutcome::Exists { slot } => {
                        assert!(exists, "Exists for absent key {key}");
                        assert_eq!(slot, pos);
                        assert_eq!(
                            (d, &payload),
                            (before.0, &before.1),
                            "Exists changed the block"
                        );
                    }
                    InsertOutcome::Inserted { slot } => {
                        assert!(!exists, "inserted duplicate {key}");
                        assert!(model.len() < C::MAX_KEYS, "inserted beyond MAX_KEYS");
                        assert_eq!(slot, pos);
                        model.insert(pos, key);
                    }
                    InsertOutcome::NoRoom => {
                        assert!(!exists, "NoRoom for existing key {key}");
                        assert_eq!(
                            (d, &payload),
                            (before.0, &before.1),
                            "NoRoom changed the block"
                        );
                    }
                }
            }
            Op::Append(delta) => {
                let key = match model.last() {
                    Some(&l) => match l.checked_add(delta) {
                        Some(k) => k,
                        None => {
                            // appending a key <= last is an API error, block unchanged
                            assert!(matches!(
                                C::append(&mut d, &mut payload, l),
                                Err(CodecError::InvalidInput { .. })
                            ));
                            assert_eq!(d, before.0);
                            continue;
                        }
                    },
                    None => delta,
                };
                match C::append(&mut d, &mut payload, key).expect("append") {
                    AppendOutcome::Appended => {
                        assert!(model.len() < C::MAX_KEYS, "appended beyond MAX_KEYS");
                        model.push(key);
                    }
                    AppendOutcome::NoRoom => {
                        assert_eq!(
                            (d, &payload),
                            (before.0, &before.1),
                            "NoRoom changed the block"
                        );
                    }
                }
            }
            Op::Remove(s) => {
                if model.is_empty() {
                    assert!(
                        C::remove(&mut d, &mut payload, 0).is_err(),
                        "remove from empty"
                    );
                    continue;
                }
                let slot = s % model.len();
                let old_size = d.size;
                match C::remove(&mut d, &mut payload, slot).expect("remove") {
                    RemoveOutcome::Removed { grew } => {
                        assert_eq!(grew, d.size > old_size, "grew flag");
                        model.remove(slot);
                    }
                    RemoveOutcome::NoRoom => {
                        assert_eq!(
                            (d, &payload),
                            (before.0, &before.1),
                            "NoRoom changed the block"
                        );
                    }
                }
            }
        }
        check_block::<C>(&d, &payload, &model);
    }
}

/// Feeds arbitrary descriptors and payloads to every read operation: errors are fine, panics and
/// out-of-bounds reads are not. Whatever `validate` accepts must decode consistently.
pub fn garbage_is_safe<C: BlockCodec>(d: Descriptor, payload: &[u8], key: u32, i: usize) {
    let mut out = vec![0u32; C::MAX_KEYS + 8];
    let _ = C::decode(&d, payload, &mut out);
    let _ = C::select(&d, payload, i);
    let _ = C::lower_bound(&d, payload, key);
    let _ = C::fold(&d, payload, 0..(d.count as usize).min(C::MAX_KEYS));
    if C::validate(&d, payload).is_ok() {
        let n = C::decode(&d, payload, &mut out).expect("validated block decodes");
        assert_eq!(n, d.count as usize);
        assert!(
            out[..n].windows(2).all(|w| w[0] < w[1]),
            "validated keys increase"
        );
    }
    let mut dd = d;
    let mut p = payload.to_vec();
    let _ = C::insert(&mut dd, &mut p, key);
    let mut dd = d;
    let _ = C::append(&mut dd, &mut p, key);
    let mut dd = d;
    let _ = C::remove(&mut dd, &mut p, i);
}

/// Instantiates the model-based suite for one codec.
#[macro_export]
macro_rules! codec_suite {
    ($name:ident, $codec:ty) => {
        mod $name {
            use super::common::*;
            use proptest::prelude::*;
            use tersedb_codecs::{BlockCodec, Descriptor};
            type C = $codec;

            #[test]
            fn edge_cases() {
                let max = <C as BlockCodec>::MAX_KEYS as u32;
                let sets: Vec<Vec<u32>> = vec![
                    vec![],
                    vec![0],
                    vec![u32::MAX],
                    vec![0, u32::MAX],
                    (0..max).collect(),
                    (u32::MAX - max + 1..=u32::MAX).collect(),
                    (0..max).map(|i| i * (u32::MAX / max)).collect(),
                    (0..max - 1).collect(),
                    (0..2).collect(),
                ];
                for keys in sets {
                    let (d, p) = encode_vec::<C>(&keys);
                    check_block::<C>(&d, &p, &keys);
                }
                let mut rng = fastrand::Rng::with_seed(42);
                for b in 0..=32 {
                    for n in [1usize, 2, 31, 32, 33, 127, 128, 129, 255, 256, 257, 258, 510, 511] {
                        if n > <C as BlockCodec>::MAX_KEYS {
                            continue;
                        }
                        let s = rng.u32(..1000);
                        let keys = keys_with_width(&mut rng, n, b, s);
                        let (d, p) = encode_vec::<C>(&keys);
                        check_block::<C>(&d, &p, &keys);
                    }
                }
            }

            #[test]
            fn encode_rejects_bad_input() {
                let mut buf = vec![0u8; C::max_payload_len(<C as BlockCodec>::MAX_KEYS)];
                assert!(C::encode(&[3, 2], &mut buf).is_err(), "unsorted");
                assert!(C::encode(&[2, 2], &mut buf).is_err(), "duplicate");
                let too_many: Vec<u32> = (0..<C as BlockCodec>::MAX_KEYS as u32 + 1).collect();
                assert!(C::encode(&too_many, &mut buf).is_err(), "too many keys");
                let keys: Vec<u32> = (0..100u32).map(|i| i * 1000).collect();
                let need = C::encode(&keys, &mut buf).unwrap().size as usize;
                if need > 0 {
                    assert!(C::encode(&keys, &mut buf[..need - 1]).is_err(), "small buffer");
                }
            }

            #[test]
            fn truncated_payload_is_an_error() {
                let mut rng = fastrand::Rng::with_seed(9);
                for b in [1u32, 7, 8, 9, 16, 21, 32] {
                    let n = <C as BlockCodec>::MAX_KEYS;
                    let keys = keys_with_width(&mut rng, n, b, 5);
                    let (d, p) = encode_vec::<C>(&keys);
                    if d.size == 0 {
                        continue;
                    }
                    let short = &p[..d.size as usize - 1];
                    assert!(C::validate(&d, short).is_err(), "b={b}");
                    let mut out = vec![0u32; keys.len()];
                    assert!(C::decode(&d, short, &mut out).is_err(), "decode short b={b}");
                }
                let bad = Descriptor { count: <C as BlockCodec>::MAX_KEYS as u32 + 1, ..Descriptor::default() };
                assert!(C::validate(&bad, &[0u8; 64]).is_err());
            }

            proptest! {
                #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

                #[test]
                fn round_trip(keys in key_sets(<C as BlockCodec>::MAX_KEYS)) {
                    let (d, p) = encode_vec::<C>(&keys);
                    check_block::<C>(&d, &p, &keys);
                }

                #[test]
                fn operations(keys in key_sets(<C as BlockCodec>::MAX_KEYS), ops in ops(), slack in 0usize..64, full in any::<bool>()) {
                    let cap = if full {
                        C::max_payload_len(<C as BlockCodec>::MAX_KEYS)
                    } else {
                        let (d, _) = encode_vec::<C>(&keys);
                        d.size as usize + slack
                    };
                    run_ops::<C>(&keys, &ops, cap);
                }

                #[test]
                fn garbage(start in any::<u32>(), count in 0u32..300, last in any::<u32>(), bits in 0u8..40,
                           payload in prop::collection::vec(any::<u8>(), 0..1200), size in 0u32..1300,
                           key in any::<u32>(), i in 0usize..300) {
                    let size = size.min(payload.len() as u32);
                    let d = Descriptor { start, count, last, size, bits };
                    garbage_is_safe::<C>(d, &payload, key, i);
                }

                #[test]
                fn mutated_valid_block(keys in key_sets(<C as BlockCodec>::MAX_KEYS), flips in prop::collection::vec((any::<usize>(), any::<u8>()), 1..4), key in any::<u32>(), i in 0usize..300) {
                    let (d, mut p) = encode_vec::<C>(&keys);
                    let used = (d.size as usize).max(1);
                    for (at, x) in flips {
                        let at = at % used.min(p.len().max(1));
                        if let Some(b) = p.get_mut(at) { *b ^= x; }
                    }
                    garbage_is_safe::<C>(d, &p, key, i);
                }
            }
        }
    };
}
