//! Pins what reads do with a compressed leaf whose key blocks are each valid but out of order
//! with the block before them, inside the same leaf, behind a valid checksum (issue 18): block
//! `j`'s descriptor is moved down (its first and last key, by the same amount) so that its
//! keys, still ascending and matching the descriptor, start inside block `j - 1`. Cursors check
//! each block they cache against the one before it, block scans check every listed block
//! against the one before: a cursor either way, row queries and `check` give `Corrupted`,
//! never a key out of order.

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
