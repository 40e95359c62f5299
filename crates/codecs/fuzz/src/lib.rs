//! Fuzzing harness shared by the targets in `fuzz_targets/`: arbitrary descriptor + payload bytes
//! go to every operation of a codec (validate, decode, select, lower_bound, fold, insert, append,
//! remove). Nothing may panic or read out of bounds, and whatever `validate` accepts must behave
//! like a sorted key list: decode gives `count` increasing keys ending at `last`, select /
//! lower_bound / fold agree with them, and a successful insert / append / remove leaves a block
//! that validates and holds the expected keys.
//!
//! Input layout: `[start u32][count u16][last u32][size u16][bits u8][key u32][slot u16]
//! [codec u8][payload ..]` (little-endian); short inputs are zero-extended.
//!
//! Run: `cd crates/codecs/fuzz && RUSTC_BOOTSTRAP=1 cargo fuzz run pfor_codecs -- -max_total_time=60`.

use tersedb_codecs::{
    AppendOutcome, BlockCodec, CodecId, Descriptor, InsertOutcome, RemoveOutcome,
};

const HEADER: usize = 4 + 2 + 4 + 2 + 1 + 4 + 2 + 1;

/// One decoded fuzz input.
#[derive(Debug)]
pub struct Input<'a> {
    pub desc: Descriptor,
    pub key: u32,
    pub slot: usize,
    pub pick: u8,
    pub payload: &'a [u8],
}

impl<'a> Input<'a> {
    pub fn parse(data: &'a [u8]) -> Input<'a> {
        let mut h = [0u8; HEADER];
        let n = data.len().min(HEADER);
        h[..n].copy_from_slice(&data[..n]);
        let u32_at = |i: usize| u32::from_le_bytes([h[i], h[i + 1], h[i + 2], h[i + 3]]);
        let u16_at = |i: usize| u16::from_le_bytes([h[i], h[i + 1]]);
        Input {
            desc: Descriptor {
                start: u32_at(0),
                count: u16_at(4) as u32 % 600,
                last: u32_at(6),
                size: u16_at(10) as u32,
                bits: h[12],
            },
            key: u32_at(13),
            slot: u16_at(17) as usize % 600,
            pick: h[19],
            payload: &data[n..],
        }
    }
}

/// Runs every operation of `C` on `input`, checking the invariants of the module docs.
pub fn check<C: BlockCodec>(input: &Input) {
    let d = input.desc;
    let p = input.payload;
    let (key, slot) = (input.key, input.slot);
    let mut out = vec![0u32; C::MAX_KEYS + 8];
    let decoded = C::decode(&d, p, &mut out);
    let _ = C::select(&d, p, slot);
    let _ = C::lower_bound(&d, p, key);
    let _ = C::fold(&d, p, 0..(d.count as usize).min(C::MAX_KEYS));
    let valid = C::validate(&d, p).is_ok();
    let mut model = Vec::new();
    if valid {
        let n = decoded.expect("a validated block decodes");
        assert_eq!(n, d.count as usize);
        model = out[..n].to_vec();
        assert!(
            model.windows(2).all(|w| w[0] < w[1]),
            "validated keys increase"
        );
        if let (Some(&f), Some(&l)) = (model.first(), model.last()) {
            assert_eq!((f, l), (d.start, d.last));
        }
        if let Some(&k) = model.get(slot) {
            assert_eq!(C::select(&d, p, slot).expect("select"), k);
        }
        let pos = model.partition_point(|&k| k < key);
        assert_eq!(
            C::lower_bound(&d, p, key).expect("lower_bound"),
            (pos, model.get(pos).copied())
        );
        let f = C::fold(&d, p, 0..n).expect("fold");
        assert_eq!(f.count, n as u64);
        assert_eq!(f.sum, model.iter().map(|&k| k as u64).sum::<u64>());
    }
    // Updates on a copy; on a valid block the result must validate and match the model.
    let after = |dd: &Descriptor, pp: &[u8], want: &[u32]| {
        C::validate(dd, pp).expect("block valid after an update");
        let mut o = vec![0u32; C::MAX_KEYS + 8];
        let n = C::decode(dd, pp, &mut o).expect("decode after an update");
        assert_eq!(&o[..n], want);
    };
    let mut buf = p.to_vec();
    let mut dd = d;
    let r = C::insert(&mut dd, &mut buf, key);
    if valid {
        match r.expect("insert on a valid block") {
            InsertOutcome::Inserted { slot: s } => {
                let mut m = model.clone();
                m.insert(s, key);
                after(&dd, &buf, &m);
            }
            InsertOutcome::Exists { slot: s } => assert_eq!(model.get(s), Some(&key)),
            InsertOutcome::NoRoom => assert_eq!(dd, d),
        }
    }
    let mut buf = p.to_vec();
    let mut dd = d;
    let r = C::append(&mut dd, &mut buf, key);
    if valid && (model.is_empty() || key > d.last) {
        match r.expect("append on a valid block") {
            AppendOutcome::Appended => {
                let mut m = model.clone();
                m.push(key);
                after(&dd, &buf, &m);
            }
            AppendOutcome::NoRoom => assert_eq!(dd, d),
        }
    }
    let mut buf = p.to_vec();
    let mut dd = d;
    let r = C::remove(&mut dd, &mut buf, slot);
    if valid && slot < model.len() {
        match r.expect("remove on a valid block") {
            RemoveOutcome::Removed { .. } => {
                let mut m = model.clone();
                m.remove(slot);
                after(&dd, &buf, &m);
            }
            RemoveOutcome::NoRoom => assert_eq!(dd, d),
        }
    }
}

/// Runs [`check`] for the codec `id`. When bit 7 of the input's codec byte is set, the payload
/// bytes are read as key deltas (2 bytes each, scaled by `bits`), encoded into a valid block, and
/// then the input's `key` XORs one byte of it (at `slot`), so valid and nearly valid blocks are
/// explored too.
pub fn check_id(id: CodecId, input: &Input) {
    tersedb_codecs::with_codec!(id, C => {
        if input.pick & 0x80 == 0 {
            check::<C>(input);
        } else {
            let shift = input.desc.bits as u32 % 24;
            let mut keys = Vec::new();
            let mut cur = input.desc.start as u64;
            for c in input.payload.chunks_exact(2).take(C::MAX_KEYS) {
                if cur > u32::MAX as u64 {
                    break;
                }
                keys.push(cur as u32);
                cur += 1 + ((u16::from_le_bytes([c[0], c[1]]) as u64) << shift >> 8);
            }
            let mut buf = vec![0u8; C::max_payload_len(C::MAX_KEYS)];
            let desc = C::encode(&keys, &mut buf).expect("encode sorted keys");
            if !buf.is_empty() && input.key & 0xff != 0 {
                let at = input.slot % (desc.size as usize).max(1).min(buf.len());
                buf[at] ^= input.key as u8;
            }
            let built = Input { desc, payload: &buf, ..*input };
            check::<C>(&built);
        }
    })
}

/// Runs [`check`] for one of `ids`, chosen by the input, on the input's descriptor and payload.
pub fn fuzz_family(ids: &[CodecId], data: &[u8]) {
    let input = Input::parse(data);
    let id = ids[input.pick as usize % ids.len()];
    check_id(id, &input);
}
