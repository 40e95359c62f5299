//! Pins what reads do with compressed records forged behind a valid checksum (issue 18): a leaf
//! of a `with_compressed_records` database whose record region is edited in one place (a
//! chunk's count, kind or bit width, the region's `used`, a directory entry, a stored sum) and
//! sealed again. Reads trust where a walk over the chunks starts and prove the chunks they
//! walk against the next directory entry or the region's end (`NumRecs::prove`), so lookups,
//! cursors, folds (SUM/MIN/MAX/AVG/COUNT) and row queries give the records of the good file or
//! `Corrupted`, never a record shifted from another key, and never panic; `check` reports every
//! forgery. A forged stored sum is the one edit reads cannot see (a SUM over whole chunks reads
//! it instead of the records): `check` holds it against the records. PDICT chunks (status
//! codes) are forged the same ways and in their exception count; exception positions out of
//! order (values, not structure: reads may answer them) are for `check` to report.

mod common;

use tersedb::storage::meta::seal;
use tersedb::storage::MemStorage;
use tersedb::{CodecId, DbConfig, Env, EnvOptions, Error, KeyType, RecordType, ValueType};

const PAGE: usize = 4096;
const N: u64 = 60_000;

#[derive(Clone, Copy, Debug)]
enum Vals {
    /// u64 records 1e6 + k % 5: FOR chunks of 3 bits with a stored sum.
    Ints,
    /// f64 records 21.0 + (k % 5) / 10: DEC chunks with a stored sum.
    Decimals,
    /// u64 status codes, 200 nine times in ten: PDICT chunks (0-bit codes, exceptions) with a
    /// stored sum.
    Status,
}

impl Vals {
    fn config(self) -> DbConfig {
        let vt = match self {
            Vals::Ints | Vals::Status => ValueType::U64,
            Vals::Decimals => ValueType::F64,
        };
        DbConfig::raw(KeyType::U64, RecordType::Fixed(8))
            .with_codec(Some(CodecId::Bp128))
            .with_value_type(vt)
            .with_compressed_records(true)
    }

    fn value(self, k: u64) -> Vec<u8> {
        match self {
            Vals::Ints => (1_000_000 + k % 5).to_le_bytes().to_vec(),
            Vals::Decimals => (21.0 + (k % 5) as f64 / 10.0).to_le_bytes().to_vec(),
            Vals::Status => match k % 10 {
                3 => [404u64, 500, 301][(k / 10 % 3) as usize],
                _ => 200,
            }
            .to_le_bytes()
            .to_vec(),
        }
    }
}

fn opts() -> EnvOptions {
    EnvOptions::default().page_size(PAGE)
}

/// A file of database `d` with keys `0..N`, and its leaves in key order: (page id, keys).
fn file_of(vals: Vals) -> (Vec<u8>, Vec<(u64, Vec<u64>)>) {
    let store = MemStorage::new();
    let env = Env::create_with_storage(Box::new(store.clone()), &opts()).unwrap();
    let mut w = env.begin_write().unwrap();
    let db = w.create_db("d", vals.config()).unwrap();
    for k in 0..N {
        w.put(&db, k, &vals.value(k)).unwrap();
    }
    w.commit().unwrap();
    let leaves = common::leaves_with_keys(&env, &db);
    drop(env);
    (store.snapshot(), leaves)
}

fn u16_at(b: &[u8], at: usize) -> usize {
    usize::from(u16::from_le_bytes([b[at], b[at + 1]]))
}

fn packed_len(count: usize, bits: usize) -> usize {
    (count * bits).div_ceil(8)
}

/// The record region of a leaf page: where it starts in the page.
fn region_at(page: &[u8]) -> usize {
    PAGE - u16_at(page, 10)
}

/// A chunk: (offset in the region, records, bytes).
type ChunkAt = (usize, usize, usize);

/// The chunks of a record region (docs/FORMAT.md, "Compressed records"), and the directory's
/// entries (first record, offset).
fn chunks(region: &[u8], n: usize) -> (Vec<ChunkAt>, Vec<(usize, usize)>) {
    let w = 8;
    let (mut at, mut dir) = (2, Vec::new());
    if region[2] == 0 && region[3] == 0x0f {
        let k = usize::from(region[4]);
        for e in 0..k {
            let p = 5 + 6 * e;
            let first = u32::from_le_bytes(region[p..p + 4].try_into().unwrap()) as usize;
            dir.push((first, u16_at(region, p + 4)));
        }
        at = 5 + 6 * k;
    }
    let (mut out, mut seen) = (Vec::new(), 0);
    while seen < n {
        let (count, kind) = (usize::from(region[at]), region[at + 1]);
        let (b2, b3) = (usize::from(region[at + 2]), usize::from(region[at + 3]));
        let sum = usize::from(kind >> 4);
        let len = sum
            + match kind & 0x0f {
                0 => 2 + count * w,
                1 => 3 + w + packed_len(count, b2),
                2 => 4 + (b3 + 1) * w + packed_len(count, b2),
                3 => 13 + packed_len(count, b3) + 9 * usize::from(region[at + 12]),
                4 => {
                    let (d, x) = (b3 + 1, usize::from(region[at + 4]));
                    let xbits = (usize::BITS - (d - (1 << b2) - 1).leading_zeros()) as usize;
                    5 + d * w + packed_len(count, b2) + x + packed_len(x, xbits)
                }
                k => panic!("layout {k}"),
            };
        out.push((at, count, len));
        seen += count;
        at += len;
    }
    assert_eq!(at, u16_at(region, 0), "chunks end at `used`");
    (out, dir)
}

/// One edit of leaf `page`'s record region: its name and the forged page (not sealed).
fn forgeries(page: &[u8], n: usize) -> Vec<(&'static str, Vec<u8>)> {
    let base = region_at(page);
    let region = &page[base..];
    let (cs, dir) = chunks(region, n);
    let live: Vec<(usize, usize)> = dir.iter().copied().filter(|e| e.1 != 0).collect();
    assert!(
        live.len() >= 2 && cs.len() >= 12,
        "a leaf of {} chunks, directory {dir:?}",
        cs.len()
    );
    // A full chunk in the middle, its bits below 8 so that one record less keeps its length
    // (PDICT: 0 bits, the codes of the frequent value take no bytes).
    let mid = cs.len() / 2;
    let (at, count, len) = cs[mid];
    assert!(count >= 8, "chunk {mid}: {count} records");
    let kind = region[at + 1];
    let bits_at = if kind & 0x0f == 3 { at + 3 } else { at + 2 };
    let bits = usize::from(region[bits_at]);
    let pdict = kind & 0x0f == 4;
    assert!(
        (if pdict {
            bits == 0
        } else {
            (1..8).contains(&bits)
        }) && kind >> 4 > 0,
        "chunk {mid}: kind {kind:#x}"
    );
    let edit = |f: &dyn Fn(&mut [u8])| {
        let mut p = page.to_vec();
        f(&mut p[base..]);
        p
    };
    let e = live[live.len() / 2];
    let after = cs.iter().find(|c| c.0 > e.1).unwrap().0;
    let dir_at = dir.iter().position(|&d| d == e).unwrap();
    let used = u16_at(region, 0);
    let mut out = vec![];
    if pdict {
        out.push(("exception count", edit(&|r| r[at + 4] -= 1)));
    }
    out.extend(vec![
        // One record less, the chunk as long: every later record would shift by one.
        ("count, same length", edit(&|r| r[at] -= 1)),
        (
            "count, another length",
            edit(&|r| r[at] = (count / 2) as u8),
        ),
        ("kind", edit(&|r| r[at + 1] = (kind & 0xf0) | 2)),
        ("bit width", edit(&|r| r[bits_at] += 1)),
        (
            "used",
            edit(&|r| r[..2].copy_from_slice(&(used as u16 - 1).to_le_bytes())),
        ),
        (
            "directory entry's first record",
            edit(&|r| r[5 + 6 * dir_at] += 1),
        ),
        (
            "directory entry's offset",
            edit(&|r| {
                r[9 + 6 * dir_at..11 + 6 * dir_at].copy_from_slice(&(after as u16).to_le_bytes())
            }),
        ),
        // The low byte of the chunk's stored sum.
        (
            "stored sum",
            edit(&|r| r[at + len - usize::from(kind >> 4)] ^= 1),
        ),
    ]);
    out
}

/// Leaf `page` with two exception positions of its middle PDICT chunk swapped (not sealed).
fn positions_swapped(page: &[u8], n: usize) -> Vec<u8> {
    let base = region_at(page);
    let (cs, _) = chunks(&page[base..], n);
    let (at, count, _) = cs[cs.len() / 2];
    let r = &page[base + at..];
    assert_eq!((r[1] & 0x0f, r[2]), (4, 0), "a PDICT chunk of 0-bit codes");
    let (d, x) = (usize::from(r[3]) + 1, usize::from(r[4]));
    assert!(x >= 2 && x < count);
    let pos = base + at + 5 + d * 8;
    let mut p = page.to_vec();
    p.swap(pos, pos + 1);
    p
}

/// Queries over the whole database and over key ranges inside and around leaf `m`.
fn queries(keys: &[u64], vals: Vals) -> Vec<String> {
    let (lo, hi) = (keys[0], keys[keys.len() - 1]);
    let mut q = vec![
        "SELECT COUNT(*), SUM(record), AVG(record), MIN(record), MAX(record) FROM d".to_string(),
    ];
    let mut ranges = vec![
        (lo, hi + 1),
        (lo + 1, hi),
        (lo.saturating_sub(300), hi + 300),
    ];
    for k in 0..6 {
        let a = lo + (hi - lo) * k / 6;
        ranges.push((a, a + 700));
        ranges.push((a + 3, a + 40));
    }
    for (a, b) in ranges {
        q.push(format!(
            "SELECT COUNT(*), SUM(record), MIN(record), MAX(record) FROM d WHERE key >= {a} AND key < {b}"
        ));
        q.push(format!(
            "SELECT key / 100, SUM(record), MAX(record) FROM d WHERE key >= {a} AND key < {b} GROUP BY key / 100"
        ));
        q.push(format!(
            "SELECT key, record FROM d WHERE key >= {a} AND key < {b}"
        ));
        // Conditions on the record: chunks judged by the bounds in their headers (skipped,
        // folded whole, or tested row by row).
        let xs: &[&str] = match vals {
            Vals::Ints => &["1000002", ">= 1000000", "> 1000007"],
            Vals::Decimals => &["21.2", ">= 21", "> 21.4"],
            Vals::Status => &["300", ">= 200", "> 500"],
        };
        for x in xs {
            let cond = if x.starts_with('>') {
                format!("record {x}")
            } else {
                format!("record > {x}")
            };
            q.push(format!(
                "SELECT COUNT(*), SUM(record), MIN(record), MAX(record) FROM d WHERE key >= {a} AND key < {b} AND {cond}"
            ));
        }
    }
    q
}

fn run(env: &Env, q: &str) -> Result<String, Error> {
    env.begin_read().unwrap().query_str(q).map(|r| r.to_csv())
}

/// Whether every read of the forged file gives the good file's answer or `Corrupted` (with
/// `sum_forged`, answers of queries that sum may differ), and how many gave `Corrupted`:
/// (lookups, cursor forward, cursor backward, queries).
fn reads(
    what: &str,
    file: Vec<u8>,
    keys: &[u64],
    good: &[String],
    sum_forged: bool,
    vals: Vals,
) -> [usize; 4] {
    let env =
        Env::open_with_storage(Box::new(MemStorage::from_bytes(file)), &opts(), false).unwrap();
    let r = env.begin_read().unwrap();
    let db = r.open_db("d").unwrap();
    let mut errors = [0; 4];
    for &k in keys {
        match r.get(&db, k) {
            Ok(v) => assert_eq!(v, Some(vals.value(k)), "{what}: lookup of {k}"),
            Err(Error::Corrupted { .. }) => errors[0] += 1,
            Err(e) => panic!("{e}"),
        }
    }
    for back in [false, true] {
        let it = r.iter(&db).unwrap();
        let it: Box<dyn Iterator<Item = _>> = if back {
            Box::new(it.rev())
        } else {
            Box::new(it)
        };
        for item in it {
            match item {
                Ok((k, v)) => {
                    let k = k.as_key().as_u64().unwrap();
                    assert_eq!(v, vals.value(k), "{what}: cursor at {k}");
                }
                Err(Error::Corrupted { .. }) => {
                    errors[1 + usize::from(back)] += 1;
                    break;
                }
                Err(e) => panic!("{e}"),
            }
        }
    }
    for (q, want) in queries(keys, vals).iter().zip(good) {
        match run(&env, q) {
            Ok(_) if sum_forged && q.contains("SUM") => {}
            Ok(got) => assert_eq!(&got, want, "{what}: {q}"),
            Err(Error::Corrupted { .. }) => errors[3] += 1,
            Err(e) => panic!("{q}: {e}"),
        }
    }
    errors
}

#[test]
fn forged_record_chunks_give_corrupted_never_a_wrong_record() {
    for vals in [Vals::Ints, Vals::Decimals, Vals::Status] {
        let (file, leaves) = file_of(vals);
        assert!(leaves.len() >= 5, "{vals:?}: {} leaves", leaves.len());
        let (id, keys) = &leaves[leaves.len() / 2];
        let env = Env::open_with_storage(
            Box::new(MemStorage::from_bytes(file.clone())),
            &opts(),
            false,
        )
        .unwrap();
        let good: Vec<String> = queries(keys, vals)
            .iter()
            .map(|q| run(&env, q).unwrap())
            .collect();
        drop(env);
        let at = *id as usize * PAGE;
        for (what, mut page) in forgeries(&file[at..at + PAGE], keys.len()) {
            seal(*id, &mut page);
            let mut bad = file.clone();
            bad[at..at + PAGE].copy_from_slice(&page);
            let sum_forged = what == "stored sum";
            let what = format!("{vals:?}, forged {what}");
            let errors = reads(&what, bad.clone(), keys, &good, sum_forged, vals);
            if sum_forged {
                // Reads of records do not see it (a whole-chunk SUM reads it: asserted
                // neither way).
                assert_eq!(errors[..3], [0, 0, 0], "{what}");
            } else {
                // Some lookup reads past the edit, the cursors pass it both ways.
                assert!(errors[0] > 0, "{what}: every lookup answered");
                assert!(errors[1] > 0 && errors[2] > 0, "{what}: a cursor passed it");
                assert!(errors[3] > 0, "{what}: every query answered");
            }
            let env = Env::open_with_storage(Box::new(MemStorage::from_bytes(bad)), &opts(), false)
                .unwrap();
            let report = env.check().unwrap();
            assert!(!report.faults.is_empty(), "{what}: check found nothing");
        }
        if let Vals::Status = vals {
            let mut page = positions_swapped(&file[at..at + PAGE], keys.len());
            seal(*id, &mut page);
            let mut bad = file.clone();
            bad[at..at + PAGE].copy_from_slice(&page);
            let env = Env::open_with_storage(Box::new(MemStorage::from_bytes(bad)), &opts(), false)
                .unwrap();
            let r = env.begin_read().unwrap();
            let db = r.open_db("d").unwrap();
            for &k in keys {
                match r.get(&db, k) {
                    Ok(_) | Err(Error::Corrupted { .. }) => {}
                    Err(e) => panic!("{e}"),
                }
            }
            for q in queries(keys, vals) {
                match run(&env, &q) {
                    Ok(_) | Err(Error::Corrupted { .. }) => {}
                    Err(e) => panic!("{q}: {e}"),
                }
            }
            drop(r);
            let report = env.check().unwrap();
            assert!(
                report.to_string().contains("exceptions out of order"),
                "{report}"
            );
        }
    }
}
