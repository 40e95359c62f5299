//! Pins what reads do with a compressed leaf whose key blocks are each valid but out of order
//! with the block before them, inside the same leaf, behind a valid checksum (issue 18): block
//! `j`'s descriptor is moved down (its first and last key, by the same amount) so that its
//! keys, still ascending and matching the descriptor, start inside block `j - 1`. Cursors check
//! each block they cache against the one before it, block scans check every listed block
//! against the one before: a cursor either way, row queries and `check` give `Corrupted`,
//! never a key out of order.

mod common;

use tersedb::storage::meta::seal;
use tersedb::storage::MemStorage;
use tersedb::{CodecId, DbConfig, Env, EnvOptions, Error, KeyType, RecordType};

const PAGE: usize = 4096;

fn opts() -> EnvOptions {
    EnvOptions::default().page_size(PAGE)
}

fn configs() -> Vec<DbConfig> {
    let mut v = Vec::new();
    for codec in [CodecId::Bp128, CodecId::For, CodecId::StreamVByte] {
        v.push(DbConfig::raw(KeyType::U32, RecordType::Fixed(4)).with_codec(Some(codec)));
    }
    v
}

/// A file of keys `3k`, `k < 20000`, and the page id of a leaf in the middle of the tree.
fn file_of(cfg: DbConfig) -> (Vec<u8>, u64) {
    let store = MemStorage::new();
    let env = Env::create_with_storage(Box::new(store.clone()), &opts()).unwrap();
    let mut w = env.begin_write().unwrap();
    let db = w.create_db("d", cfg).unwrap();
    for k in 0..20_000u32 {
        w.put(&db, 3 * k, &k.to_le_bytes()).unwrap();
    }
    w.commit().unwrap();
    let r = env.begin_read().unwrap();
    let mut leaves = Vec::new();
    r.scan_leaves(&db, &[(0, u64::MAX)], false, &mut |leaf, _| {
        leaves.push(leaf.page_id());
        Ok(true)
    })
    .unwrap();
    assert!(leaves.len() >= 5, "{cfg:?}: {} leaves", leaves.len());
    drop(r);
    drop(env);
    (store.snapshot(), leaves[leaves.len() / 2])
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}

/// Leaf `page` with block `j`'s keys moved to start one above block `j - 1`'s first key, for
/// a middle block `j` (docs/FORMAT.md, "Compressed KeyList", u32 descriptors of 12 bytes).
fn forged(page: &[u8]) -> Vec<u8> {
    let mut p = page.to_vec();
    let nblocks = usize::from(u16::from_le_bytes([p[16], p[17]]));
    assert!(nblocks >= 3, "{nblocks} blocks");
    let j = nblocks / 2;
    let (prev, this) = (20 + 12 * (j - 1), 20 + 12 * j);
    assert!(
        p[prev + 2] != 0 || p[prev + 3] != 0,
        "block {} is a gap",
        j - 1
    );
    let (first, last) = (u32_at(&p, this + 4), u32_at(&p, this + 8));
    let to = u32_at(&p, prev + 4) + 1;
    p[this + 4..this + 8].copy_from_slice(&to.to_le_bytes());
    p[this + 8..this + 12].copy_from_slice(&(last - (first - to)).to_le_bytes());
    p
}

/// The keys a pass gives before it ends, and whether it ended on `Corrupted`.
fn pass(env: &Env, back: bool) -> (Vec<u64>, bool) {
    let r = env.begin_read().unwrap();
    let db = r.open_db("d").unwrap();
    let it = r.iter(&db).unwrap();
    let it: Box<dyn Iterator<Item = _>> = if back {
        Box::new(it.rev())
    } else {
        Box::new(it)
    };
    let mut got = Vec::new();
    for item in it {
        match item {
            Ok((k, _)) => got.push(k.as_key().as_u64().unwrap()),
            Err(Error::Corrupted { .. }) => return (got, true),
            Err(e) => panic!("{e}"),
        }
    }
    (got, false)
}

#[test]
fn a_key_block_out_of_order_inside_its_leaf_gives_corrupted() {
    for cfg in configs() {
        let (good, id) = file_of(cfg);
        let at = id as usize * PAGE;
        let mut page = forged(&good[at..at + PAGE]);
        seal(id, &mut page);
        let mut bad = good.clone();
        bad[at..at + PAGE].copy_from_slice(&page);
        let env =
            Env::open_with_storage(Box::new(MemStorage::from_bytes(bad)), &opts(), false).unwrap();
        for back in [false, true] {
            let (got, corrupted) = pass(&env, back);
            let what = format!("{cfg:?}, read back {back}");
            assert!(corrupted, "{what}: no error after {} keys", got.len());
            let ordered = got
                .windows(2)
                .all(|w| if back { w[0] > w[1] } else { w[0] < w[1] });
            assert!(ordered, "{what}: keys out of order");
        }
        let r = env.begin_read().unwrap();
        for q in [
            "SELECT key FROM d",
            "SELECT key, record FROM d WHERE key >= 3000",
            "SELECT key FROM d WHERE key > 100 AND key != 707",
        ] {
            match r.query_str(q) {
                Err(Error::Corrupted { .. }) => {}
                Ok(res) => panic!("{cfg:?}: {q} answered {} bytes", res.to_csv().len()),
                Err(e) => panic!("{cfg:?}: {q}: {e}"),
            }
        }
        let report = env.check().unwrap();
        assert!(!report.faults.is_empty(), "{cfg:?}: check found nothing");
    }
}

/// The layout of a leaf's compressed KeyList (docs/FORMAT.md, "Compressed KeyList"): header
/// bytes, descriptor bytes, block count, where the region starts in the page.
struct Index {
    hs: usize,
    dl: usize,
    nb: usize,
    wide: bool,
}

/// The KeyList region of a leaf starts after the 16-byte node header.
const REGION: usize = 16;

fn index_of(page: &[u8], cfg: DbConfig) -> Index {
    let raw = u16::from_le_bytes([page[REGION], page[REGION + 1]]);
    let u64keys = cfg.key_type == KeyType::U64;
    let based = u64keys && raw & 0x8000 != 0;
    let wide = u64keys && !based;
    Index {
        hs: if based { 12 } else { 4 },
        dl: if wide { 16 } else { 12 } + usize::from(cfg.auto_codec),
        nb: usize::from(raw & 0x7fff),
        wide,
    }
}

fn desc_at(ix: &Index, b: usize) -> usize {
    REGION + ix.hs + ix.dl * b
}

fn count_of(page: &[u8], ix: &Index, b: usize) -> usize {
    let at = desc_at(ix, b);
    usize::from(u16::from_le_bytes([page[at + 2], page[at + 3]]) & 0x1ff)
}

/// The leaf with its blocks (descriptor and payload, each whole and valid) in the order
/// `order`: offsets recomputed, so every block decodes to its descriptor's keys and only the
/// order of the index is forged.
fn permuted(page: &[u8], ix: &Index, order: &[usize]) -> Vec<u8> {
    let ps = REGION + ix.hs + ix.dl * ix.nb;
    let data_end = usize::from(u16::from_le_bytes([page[REGION + 2], page[REGION + 3]]));
    let off = |b: usize| {
        if b == ix.nb {
            data_end
        } else {
            let at = desc_at(ix, b);
            usize::from(u16::from_le_bytes([page[at], page[at + 1]]))
        }
    };
    let mut p = page.to_vec();
    let mut o = 0;
    for (i, &b) in order.iter().enumerate() {
        let (src, dst) = (desc_at(ix, b), desc_at(ix, i));
        p[dst..dst + ix.dl].copy_from_slice(&page[src..src + ix.dl]);
        p[dst..dst + 2].copy_from_slice(&(o as u16).to_le_bytes());
        let bytes = &page[ps + off(b)..ps + off(b + 1)];
        p[ps + o..ps + o + bytes.len()].copy_from_slice(bytes);
        o += bytes.len();
    }
    assert_eq!(o, data_end);
    p
}

/// Ways to forge a compressed leaf behind a valid checksum.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Forgery {
    /// Two neighbouring blocks swapped (descriptors and payloads).
    Swap,
    /// A middle block moved to the end of the index: the block search never looks at it.
    Hide,
    /// The block count raised past what the region holds.
    CountPastRegion,
    /// A middle block's payload offset pointed past the payload.
    OffsetPastRegion,
    /// A middle block's key count one more than its payload codes.
    KeyCount,
    /// A middle block's last key one less than its payload's (u32 lists).
    LastKey,
    /// A middle block's first key one more than its payload's (u32 lists).
    FirstKey,
}

const FORGERIES: [Forgery; 7] = [
    Forgery::Swap,
    Forgery::Hide,
    Forgery::CountPastRegion,
    Forgery::OffsetPastRegion,
    Forgery::KeyCount,
    Forgery::LastKey,
    Forgery::FirstKey,
];

fn forge(page: &[u8], cfg: DbConfig, f: Forgery) -> Option<Vec<u8>> {
    let ix = index_of(page, cfg);
    assert!(ix.nb >= 4, "{cfg:?}: {} blocks", ix.nb);
    let j = ix.nb / 2;
    assert!(count_of(page, &ix, j) > 2 && count_of(page, &ix, j + 1) > 2);
    let mut order: Vec<usize> = (0..ix.nb).collect();
    let at = desc_at(&ix, j);
    let mut p = page.to_vec();
    match f {
        Forgery::Swap => {
            order.swap(j, j + 1);
            return Some(permuted(page, &ix, &order));
        }
        Forgery::Hide => {
            let b = order.remove(j);
            order.push(b);
            return Some(permuted(page, &ix, &order));
        }
        Forgery::CountPastRegion => {
            let raw = u16::from_le_bytes([p[REGION], p[REGION + 1]]);
            p[REGION..REGION + 2].copy_from_slice(&((raw & 0x8000) | 0x7000).to_le_bytes());
        }
        Forgery::OffsetPastRegion => p[at..at + 2].copy_from_slice(&0xfff0u16.to_le_bytes()),
        Forgery::KeyCount => {
            let cb = u16::from_le_bytes([p[at + 2], p[at + 3]]) + 1;
            p[at + 2..at + 4].copy_from_slice(&cb.to_le_bytes());
        }
        Forgery::LastKey | Forgery::FirstKey if ix.wide => return None,
        Forgery::LastKey => {
            let last = u32_at(&p, at + 8) - 1;
            p[at + 8..at + 12].copy_from_slice(&last.to_le_bytes());
        }
        Forgery::FirstKey => {
            let first = u32_at(&p, at + 4) + 1;
            p[at + 4..at + 8].copy_from_slice(&first.to_le_bytes());
        }
    }
    Some(p)
}

/// Databases of every compressed form: u32 lists of three codecs, u64 lists in the based and
/// the wide form, automatic codecs; keys `step * k + base`.
fn forms() -> Vec<(DbConfig, u64, u64)> {
    let (rec, none) = (RecordType::Fixed(4), RecordType::None);
    let c = |k, r, codec| {
        DbConfig::raw(k, r)
            .with_codec(Some(codec))
            .with_block_size(64)
    };
    vec![
        (c(KeyType::U32, rec, CodecId::Bp128), 3, 0),
        (c(KeyType::U32, none, CodecId::For), 3, 0),
        (c(KeyType::U32, rec, CodecId::StreamVByte), 5, 0),
        // u64 keys in the based form (a leaf spans less than 2^32) and the wide form.
        (c(KeyType::U64, rec, CodecId::Bp128), 3, 1 << 40),
        (c(KeyType::U64, none, CodecId::Bp128), 1 << 27, 0),
        (
            DbConfig::raw(KeyType::U32, rec)
                .with_auto_codec(true)
                .with_block_size(64),
            3,
            0,
        ),
    ]
}

fn kb(cfg: DbConfig, k: u64) -> tersedb::KeyBuf {
    match cfg.key_type {
        KeyType::U64 => tersedb::KeyBuf::U64(k),
        _ => tersedb::KeyBuf::U32(k as u32),
    }
}

/// A file of `n` keys of `form` with 4-byte records (the key's low bits), its leaves in key
/// order with their keys.
fn form_file(cfg: DbConfig, step: u64, base: u64, n: u64) -> (Vec<u8>, Vec<(u64, Vec<u64>)>) {
    let store = MemStorage::new();
    let env = Env::create_with_storage(Box::new(store.clone()), &opts()).unwrap();
    let mut w = env.begin_write().unwrap();
    let db = w.create_db("d", cfg).unwrap();
    let rec = |k: u64| match cfg.record_type {
        RecordType::Fixed(_) => (k as u32).to_le_bytes().to_vec(),
        _ => Vec::new(),
    };
    for k in 0..n {
        let k = base + step * k;
        w.put(&db, &kb(cfg, k), &rec(k)).unwrap();
    }
    w.commit().unwrap();
    let leaves = common::leaves_with_keys(&env, &db);
    drop(env);
    (store.snapshot(), leaves)
}

/// The last block of a leaf with its descriptor's last key one below its payload's: the real
/// last key lies above what the index says the leaf holds, where a lookup's miss is answered by
/// the index alone (`Packed::miss_edges`). The leaf's first read checks that block's payload
/// against its descriptor, so every lookup in the leaf gives `Corrupted`: the key is never
/// hidden as a miss.
#[test]
fn a_forged_last_key_of_the_last_block_hides_no_key() {
    for (cfg, step, base) in forms() {
        let (good, leaves) = form_file(cfg, step, base, 20_000);
        let (id, own) = &leaves[leaves.len() / 2];
        let at = *id as usize * PAGE;
        let mut page = good[at..at + PAGE].to_vec();
        let ix = index_of(&page, cfg);
        if ix.wide {
            continue;
        }
        let last = (0..ix.nb)
            .rev()
            .find(|&b| count_of(&page, &ix, b) > 1)
            .unwrap();
        let d = desc_at(&ix, last);
        let forged = u32_at(&page, d + 8) - 1;
        page[d + 8..d + 12].copy_from_slice(&forged.to_le_bytes());
        seal(*id, &mut page);
        let mut bad = good.clone();
        bad[at..at + PAGE].copy_from_slice(&page);
        let env =
            Env::open_with_storage(Box::new(MemStorage::from_bytes(bad)), &opts(), false).unwrap();
        let r = env.begin_read().unwrap();
        let db = r.open_db("d").unwrap();
        let top = *own.last().unwrap();
        for k in [top, top + 1, own[0], own[own.len() / 2]] {
            let got = r.contains(&db, &kb(cfg, k));
            assert!(
                matches!(got, Err(Error::Corrupted { .. })),
                "{cfg:?}: lookup of {k} in a leaf whose last block is forged: {got:?}"
            );
        }
    }
}

/// A compressed leaf forged behind a valid checksum (blocks swapped, a block moved out of the
/// search's way, counts and offsets past the region, a block whose descriptor's first key,
/// last key or count is not its payload's): every read that relies on what was forged gives
/// `Corrupted`, none a wrong answer or a panic. Lookups of the leaf's keys find them (with
/// their records) or give `Corrupted`, always `Corrupted` when the block index itself is forged
/// (the leaf's first read proves its index); a lookup between them always gives `Corrupted` (a
/// miss relies on the index and checks the block it looked in); cursors both ways, a range
/// cursor over the leaf, folds over the whole tree and over the leaf (SUM and COUNT) and
/// `check` give `Corrupted` or an error, and cursors never a key out of order.
#[test]
fn forged_block_indexes_give_corrupted_for_every_read() {
    for (cfg, step, base) in forms() {
        let (good, leaves) = form_file(cfg, step, base, 20_000);
        assert!(leaves.len() >= 5, "{cfg:?}: {} leaves", leaves.len());
        let (id, own) = &leaves[leaves.len() / 2];
        let at = *id as usize * PAGE;
        for f in FORGERIES {
            let Some(mut page) = forge(&good[at..at + PAGE], cfg, f) else {
                continue;
            };
            seal(*id, &mut page);
            let mut bad = good.clone();
            bad[at..at + PAGE].copy_from_slice(&page);
            let what = format!("{cfg:?}, {f:?}");
            let env = Env::open_with_storage(Box::new(MemStorage::from_bytes(bad)), &opts(), false)
                .unwrap();
            let r = env.begin_read().unwrap();
            let db = r.open_db("d").unwrap();
            // Lookups: a hit is right, a miss inside the leaf is refused.
            let (mut found, mut refused, mut missed_refused) = (0, 0, 0);
            let mut forged_first = Vec::new();
            for &k in own {
                match r.get(&db, &kb(cfg, k)) {
                    Ok(Some(v)) => {
                        // Moved blocks keep their records where they were: a hit gives the
                        // page's record at the key's slot, as a forged record would be.
                        // So does a forged count in an earlier block: the slot is the counts
                        // before the key's block plus its position.
                        let moved = matches!(f, Forgery::Swap | Forgery::Hide | Forgery::KeyCount);
                        if cfg.record_type != RecordType::None && !moved {
                            assert_eq!(v, (k as u32).to_le_bytes(), "{what}: record of {k}");
                        }
                        found += 1;
                    }
                    Err(Error::Corrupted { .. }) => refused += 1,
                    other => panic!("{what}: get {k}: {other:?}"),
                }
                match r.contains(&db, &kb(cfg, k)) {
                    Ok(true) | Err(Error::Corrupted { .. }) => {}
                    other => panic!("{what}: contains {k}: {other:?}"),
                }
                // A miss proves the index and the block it looked in: with the index forged
                // every miss in the leaf is refused, with one block's first, last or count
                // forged the misses in that block (a miss elsewhere is right).
                let one_block =
                    matches!(f, Forgery::KeyCount | Forgery::LastKey | Forgery::FirstKey);
                for got in [
                    r.get(&db, &kb(cfg, k + 1)).map(|v| v.is_some()),
                    r.contains(&db, &kb(cfg, k + 1)),
                ] {
                    match got {
                        Err(Error::Corrupted { .. }) => missed_refused += 1,
                        Ok(false) if one_block => {}
                        // A block's first key is its descriptor's, the codec's start value
                        // (not in the payload): forged, it moves every key of the block, and
                        // the page codes the moved keys (only their last disagrees).
                        Ok(true) if f == Forgery::FirstKey => forged_first.push(k + 1),
                        other => panic!("{what}: lookup {}: {other:?}", k + 1),
                    }
                }
            }
            assert!(found + refused == own.len(), "{what}");
            // The first read of the leaf proves its whole block index (order, offsets,
            // counts): with the index forged, every read of the leaf is refused, hits too.
            let index_forged = matches!(
                f,
                Forgery::Swap
                    | Forgery::Hide
                    | Forgery::CountPastRegion
                    | Forgery::OffsetPastRegion
                    | Forgery::KeyCount
            );
            if index_forged {
                assert_eq!(found, 0, "{what}: hits in a leaf whose index is forged");
            }
            assert!(missed_refused > 0, "{what}: no miss refused");
            // The moved keys lie inside the leaf's.
            let inside = |k: &u64| (own[0]..=own[own.len() - 1]).contains(k);
            assert!(
                forged_first.iter().all(inside),
                "{what}: hits {forged_first:?}"
            );
            // Cursors, both ways and over the leaf's range.
            for back in [false, true] {
                let (got, stopped) = pass(&env, back);
                assert!(stopped, "{what}: pass back {back} gave {} keys", got.len());
                let ordered = got
                    .windows(2)
                    .all(|w| if back { w[0] > w[1] } else { w[0] < w[1] });
                assert!(ordered, "{what}: keys out of order");
            }
            let (lo, hi) = (own[1], own[own.len() - 2]);
            let mut prev = None;
            let mut ended = false;
            let (klo, khi) = (kb(cfg, lo), kb(cfg, hi));
            for item in r.range(&db, klo.as_key()..=khi.as_key()).unwrap() {
                match item {
                    Ok((k, _)) => {
                        let k = k.as_key().as_u64().unwrap();
                        assert!(
                            prev.is_none_or(|p| p < k) && (lo..=hi).contains(&k),
                            "{what}"
                        );
                        prev = Some(k);
                    }
                    Err(Error::Corrupted { .. }) => {
                        ended = true;
                        break;
                    }
                    Err(e) => panic!("{what}: range: {e}"),
                }
            }
            assert!(
                ended,
                "{what}: range cursor over the leaf ended without an error"
            );
            // Folds over the tree and inside the leaf: `Corrupted`, or for a forged offset,
            // first or last key the right answer when the fold reads none of it (a whole-block
            // SUM sums the payload, a COUNT the descriptors' counts).
            let all: Vec<u64> = (0..20_000).map(|k| base + step * k).collect();
            for sum in [false, true] {
                for (a, z) in [(0, u64::MAX), (own[1], own[own.len() - 2])] {
                    let want: Vec<u64> = all
                        .iter()
                        .copied()
                        .filter(|k| (a..=z).contains(k))
                        .collect();
                    match (f, r.fold_keys(&db, a, z, sum)) {
                        (_, Err(Error::Corrupted { .. })) => {}
                        // Right, when the fold reads nothing forged: a COUNT of the whole leaf
                        // (counts, and the smallest first and largest last key, whatever the
                        // order), a SUM of whole blocks (the payloads) past a forged first or
                        // last key or offset.
                        (
                            Forgery::LastKey | Forgery::FirstKey | Forgery::OffsetPastRegion,
                            Ok(kf),
                        )
                        | (Forgery::Swap | Forgery::Hide, Ok(kf))
                            if a == 0 || !matches!(f, Forgery::Swap | Forgery::Hide) =>
                        {
                            assert_eq!(kf.count, want.len() as u64, "{what}: fold {a}..={z}");
                            // A forged start value moves the block's keys: a SUM of
                            // the payload adds the moved keys, as the page codes them.
                            if sum && f != Forgery::FirstKey {
                                let s: u128 = want.iter().map(|&k| k as u128).sum();
                                assert_eq!(kf.sum, s, "{what}: fold {a}..={z}");
                            }
                            assert_eq!(
                                (kf.min, kf.max),
                                (want.first().copied(), want.last().copied())
                            );
                        }
                        (_, other) => panic!("{what}: fold {a}..={z} sum {sum}: {other:?}"),
                    }
                }
            }
            let report = env.check().unwrap();
            assert!(!report.faults.is_empty(), "{what}: check found nothing");
        }
    }
}

/// Leaf `page` (of `id`) with block `b`'s key count field set to `count` (its low 9 bits; a
/// count of 512 carries into the codec bits as the field's `+ 1` would) and the node's entry
/// count moved by the same amount, so that the block index still adds up and only the block's
/// own count is wrong; resealed.
fn with_block_count(page: &[u8], id: u64, cfg: DbConfig, b: usize, count: usize) -> Vec<u8> {
    let ix = index_of(page, cfg);
    let at = desc_at(&ix, b);
    let mut p = page.to_vec();
    let old = count_of(&p, &ix, b);
    let cb = u16::from_le_bytes([p[at + 2], p[at + 3]]);
    let cb = (cb & !0x1ff).wrapping_add(count as u16);
    p[at + 2..at + 4].copy_from_slice(&cb.to_le_bytes());
    let n = u32_at(&p, 12) as usize + count - old;
    p[12..16].copy_from_slice(&(n as u32).to_le_bytes());
    seal(id, &mut p);
    p
}

/// Block key counts against each codec's own limit (issue 21): Rice blocks hold up to 511 keys,
/// all that a descriptor's 9-bit count holds, the other codecs 257 or 129, while the engine's
/// decode buffers hold 511 for every codec. A leaf of full 511-key Rice blocks reads back whole
/// and checks clean. A count beyond the block's codec's limit (a full Rice block's raised to
/// 512: the field wraps to 0 and carries into the codec bits; a full StreamVByte block's raised
/// to 258 and to 511, the node's entry count raised to match so that only the block is wrong)
/// gives `Corrupted` for lookups in the block, cursors, folds and `check`. A Rice block's count
/// raised to 511 within the limit is another valid reading of the same missing values (the last
/// of them become keys): `check` sees the unused bits after them, and no read panics.
#[test]
fn block_counts_are_held_to_the_codec_limit() {
    let none = RecordType::None;
    let rice = DbConfig::raw(KeyType::U32, none).with_codec(Some(CodecId::Rice));
    let svb = DbConfig::raw(KeyType::U32, none).with_codec(Some(CodecId::StreamVByte));
    for (cfg, step, limit, counts) in [
        (rice, 3, 511, &[512usize, 511][..]),
        (svb, 5, 257, &[258, 511][..]),
    ] {
        let (good, leaves) = form_file(cfg, step, 0, 60_000);
        assert!(leaves.len() >= 3, "{cfg:?}: {} leaves", leaves.len());
        let (id, own) = &leaves[leaves.len() / 2];
        let at = *id as usize * PAGE;
        let page = &good[at..at + PAGE];
        let ix = index_of(page, cfg);
        let sizes: Vec<usize> = (0..ix.nb).map(|b| count_of(page, &ix, b)).collect();
        assert_eq!(
            sizes.iter().max(),
            Some(&limit),
            "{cfg:?}: blocks {sizes:?}"
        );
        // Accepted: the leaf of full blocks reads back whole.
        let env = Env::open_with_storage(
            Box::new(MemStorage::from_bytes(good.clone())),
            &opts(),
            false,
        )
        .unwrap();
        common::assert_clean(&env);
        let (all, stopped) = pass(&env, false);
        assert!(!stopped && all.len() == 60_000, "{cfg:?}");
        drop(env);
        let full = sizes.iter().position(|&c| c == limit).unwrap();
        let short = sizes.iter().position(|&c| c > 1 && c < limit);
        for &count in counts {
            let beyond = count > limit;
            let b = match (beyond, short) {
                (true, _) => full,
                (false, Some(b)) => b,
                (false, None) => panic!("{cfg:?}: no block short of {limit} keys: {sizes:?}"),
            };
            let what = format!("{cfg:?}: block {b} of {} keys counted {count}", sizes[b]);
            let forged = with_block_count(page, *id, cfg, b, count);
            let mut bad = good.clone();
            bad[at..at + PAGE].copy_from_slice(&forged);
            let env = Env::open_with_storage(Box::new(MemStorage::from_bytes(bad)), &opts(), false)
                .unwrap();
            let report = env.check().unwrap();
            assert!(!report.faults.is_empty(), "{what}: check found nothing");
            let _ = env.describe_page(*id);
            let r = env.begin_read().unwrap();
            let db = r.open_db("d").unwrap();
            let before: usize = sizes[..b].iter().sum();
            let k = own[before + sizes[b] / 2] as u32;
            fn refused<T>(got: &tersedb::Result<T>) -> bool {
                matches!(got, Err(Error::Corrupted { .. }))
            }
            for p in [k, k + 1] {
                let got = r.contains(&db, p);
                assert!(!beyond || refused(&got), "{what}: lookup of {p}: {got:?}");
            }
            for back in [false, true] {
                let (_, stopped) = pass(&env, back);
                assert!(
                    !beyond || stopped,
                    "{what}: pass back {back} ended without an error"
                );
            }
            for sum in [false, true] {
                let got = r.fold_keys(&db, own[0], own[own.len() - 1], sum);
                assert!(!beyond || refused(&got), "{what}: fold sum {sum}: {got:?}");
            }
        }
    }
}

/// A leaf of byte-string keys forged behind a valid checksum, for every key scheme: the head
/// prefix's length one more and one less, a middle item's end offset moved by one and past
/// the region, two neighbouring items swapped, and single bytes of the key region changed.
/// No read panics or reads out of bounds: lookups of the leaf's keys give the key's record,
/// a miss or `Corrupted`; cursors both ways give keys in strict order until they end or give
/// `Corrupted`; `check` returns a report. (A byte-string lookup trusts the order of the keys
/// it compares and a head prefix: a forged page may hide a key from it.)
#[test]
fn forged_string_leaves_give_errors_not_panics() {
    use tersedb::KeyScheme;
    for scheme in KeyScheme::ALL {
        let cfg = DbConfig::raw(KeyType::VarBinary, RecordType::Fixed(4)).with_key_scheme(scheme);
        let key = |k: u32| format!("customer/{:05}/order/{:04}", k / 7, k * 31 % 9973).into_bytes();
        let store = MemStorage::new();
        let env = Env::create_with_storage(Box::new(store.clone()), &opts()).unwrap();
        let mut w = env.begin_write().unwrap();
        let db = w.create_db("d", cfg).unwrap();
        for k in 0..6000u32 {
            w.put(&db, key(k).as_slice(), &k.to_le_bytes()).unwrap();
        }
        w.commit().unwrap();
        drop(env);
        let good = store.snapshot();
        // The tree's leaves: pages of kind 4 with more than a catalog's few keys.
        let leaves: Vec<u64> = (1..good.len() / PAGE)
            .filter(|&i| {
                let p = &good[i * PAGE..(i + 1) * PAGE];
                p[8] == 4 && u32::from_le_bytes([p[12], p[13], p[14], p[15]]) >= 20
            })
            .map(|i| i as u64)
            .collect();
        assert!(leaves.len() >= 5, "{scheme:?}: {} leaves", leaves.len());
        let id = leaves[leaves.len() / 2];
        let at = id as usize * PAGE;
        let page = &good[at..at + PAGE];
        let n = usize::from(u16::from_le_bytes([page[12], page[13]]));
        // Where the slots::var table starts: after the head prefix for Head layouts.
        let head = matches!(scheme, KeyScheme::Head | KeyScheme::HeadTail);
        let plen = usize::from(u16::from_le_bytes([page[REGION], page[REGION + 1]]));
        let table = REGION + if head { 2 + plen } else { 0 };
        let mut forgeries: Vec<(String, Vec<u8>)> = Vec::new();
        let mut with = |what: &str, f: &dyn Fn(&mut Vec<u8>)| {
            let mut p = page.to_vec();
            f(&mut p);
            forgeries.push((what.to_string(), p));
        };
        if head {
            for d in [1i32, -1] {
                with(&format!("prefix length {d:+}"), &|p| {
                    let v = (plen as i32 + d).max(0) as u16;
                    p[REGION..REGION + 2].copy_from_slice(&v.to_le_bytes());
                });
            }
        }
        if scheme != KeyScheme::Db2 {
            let i = n / 2;
            let end =
                |p: &[u8], i: usize| u16::from_le_bytes([p[table + 2 * i], p[table + 2 * i + 1]]);
            with("item end +1", &|p| {
                let v = end(p, i) + 1;
                p[table + 2 * i..table + 2 * i + 2].copy_from_slice(&v.to_le_bytes());
            });
            with("item end past the region", &|p| {
                p[table + 2 * i..table + 2 * i + 2].copy_from_slice(&0xfff0u16.to_le_bytes());
            });
            with("last item end past the region", &|p| {
                let j = n - 1;
                p[table + 2 * j..table + 2 * j + 2].copy_from_slice(&0xfff0u16.to_le_bytes());
            });
            with("items swapped", &|p| {
                // Items i and i + 1 of equal length exchanged (else nothing changes).
                let (a, b, c) = (
                    end(p, i - 1) as usize,
                    end(p, i) as usize,
                    end(p, i + 1) as usize,
                );
                if b - a == c - b {
                    let base = table + 2 * n;
                    let x = p[base + a..base + b].to_vec();
                    p.copy_within(base + b..base + c, base + a);
                    p[base + b..base + c].copy_from_slice(&x);
                }
            });
        }
        for off in [2, 3, 7, 20, 41, 64, 100, 257] {
            with(&format!("byte {off} of the key region"), &|p| {
                p[REGION + off] ^= 0x5a
            });
        }
        with("key count +1", &|p| {
            p[12..14].copy_from_slice(&((n + 1) as u16).to_le_bytes());
        });
        for (what, mut p) in forgeries {
            let changed = p.as_slice() != page;
            seal(id, &mut p);
            let mut bad = good.clone();
            bad[at..at + PAGE].copy_from_slice(&p);
            let what = format!("{scheme:?}, {what}");
            let env = Env::open_with_storage(Box::new(MemStorage::from_bytes(bad)), &opts(), false)
                .unwrap();
            let r = env.begin_read().unwrap();
            let db = r.open_db("d").unwrap();
            let (mut missed, mut refused) = (0, 0);
            for k in 0..6000u32 {
                match r.get(&db, key(k).as_slice()) {
                    // Swapped keys keep their records where they were: a hit gives the
                    // page's record at the key's slot.
                    Ok(Some(v)) if what.ends_with("swapped") => assert_eq!(v.len(), 4, "{what}"),
                    Ok(Some(v)) => assert_eq!(v, k.to_le_bytes(), "{what}: record of key {k}"),
                    Ok(None) => missed += 1,
                    Err(Error::Corrupted { .. }) => refused += 1,
                    Err(e) => panic!("{what}: get {k}: {e}"),
                }
            }
            // The leaf's key order is proven when it is first read: keys swapped within it
            // are refused, not hidden from the lookups that compare them.
            if what.ends_with("swapped") && changed {
                assert_eq!(missed, 0, "{what}: keys hidden");
                assert!(refused > 0, "{what}: nothing refused");
            }
            for back in [false, true] {
                let it = r.iter(&db).unwrap();
                let it: Box<dyn Iterator<Item = _>> = if back {
                    Box::new(it.rev())
                } else {
                    Box::new(it)
                };
                let mut prev: Option<Vec<u8>> = None;
                for item in it {
                    match item {
                        Ok((k, _)) => {
                            let k = k.as_key().as_bytes().unwrap().to_vec();
                            if let Some(p) = &prev {
                                assert!(
                                    if back { *p > k } else { *p < k },
                                    "{what}: keys out of order"
                                );
                            }
                            prev = Some(k);
                        }
                        Err(Error::Corrupted { .. }) => break,
                        Err(e) => panic!("{what}: cursor: {e}"),
                    }
                }
            }
            env.check().unwrap();
        }
    }
}
