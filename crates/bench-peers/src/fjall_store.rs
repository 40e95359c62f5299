//! fjall (a pure-Rust LSM tree) as a [`Store`]: one keyspace with fjall's defaults (LZ4 data
//! blocks of 4 KiB, Bloom filters, leveled compaction), big-endian u32/u64 keys and empty values,
//! a 1 GiB block cache.
//!
//! ```text
//! ascending load   `start_ingestion` of the sorted keys (fjall's bulk path: straight to tables)
//! random load      a write batch of 100,000 keys per commit (journal not fsynced)
//! settle           memtable flushed into a table, then a major compaction, timed
//! size             every file of the database directory after a synced close (tables, journal,
//!                  manifests), by allocated blocks (the journal is sparse)
//! ranges           an iterator per range: fjall has no range COUNT or SUM
//! ```

use crate::{Result, Store, Width};
use fjall::{Database, Keyspace, KeyspaceCreateOptions, PersistMode};
use std::path::{Path, PathBuf};

/// Every value: the stores hold keys only.
const EMPTY: &[u8] = &[];

pub struct Fjall {
    dir: PathBuf,
    width: Width,
    db: Option<(Database, Keyspace)>,
}

fn e(x: impl std::fmt::Display) -> String {
    format!("fjall: {x}")
}

fn key(width: Width, k: u64) -> Vec<u8> {
    match width {
        Width::U32 => (k as u32).to_be_bytes().to_vec(),
        Width::U64 => k.to_be_bytes().to_vec(),
    }
}

fn value(b: &[u8]) -> Result<u64> {
    Ok(match b.len() {
        4 => u32::from_be_bytes(b.try_into().map_err(e)?) as u64,
        8 => u64::from_be_bytes(b.try_into().map_err(e)?),
        n => return Err(format!("fjall: key of {n} bytes")),
    })
}

/// Bytes the files under `dir` take on disk: fjall's journal is a sparse file of 64 MiB
/// (`set_len` ahead of writing), so its length is not its size; its allocated blocks are.
fn allocated_bytes(dir: &Path) -> Result<u64> {
    use std::os::unix::fs::MetadataExt;
    let mut n = 0;
    for f in std::fs::read_dir(dir).map_err(|x| format!("{}: {x}", dir.display()))? {
        let f = f.map_err(e)?;
        let m = f.metadata().map_err(e)?;
        if m.is_dir() {
            n += allocated_bytes(&f.path())?;
        } else {
            n += m.len().min(m.blocks() * 512);
        }
    }
    Ok(n)
}

fn open(dir: &Path) -> Result<(Database, Keyspace)> {
    let db = Database::builder(dir)
        .cache_size(1 << 30)
        .open()
        .map_err(e)?;
    let ks = db
        .keyspace("bench", KeyspaceCreateOptions::default)
        .map_err(e)?;
    Ok((db, ks))
}

impl Fjall {
    pub fn create(dir: &Path, width: Width) -> Result<Fjall> {
        let dir = dir.join("db");
        Ok(Fjall {
            db: Some(open(&dir)?),
            dir,
            width,
        })
    }

    fn parts(&self) -> Result<&(Database, Keyspace)> {
        self.db.as_ref().ok_or_else(|| "fjall: closed".into())
    }
}

impl Store for Fjall {
    fn durability(&self) -> String {
        "journal not fsynced per commit (PersistMode::SyncAll at close); defaults: LZ4, Bloom filters".into()
    }

    fn load_ascending(&mut self, keys: &[u64]) -> Result<()> {
        let (_, ks) = self.parts()?;
        let mut ing = ks.start_ingestion().map_err(e)?;
        for &k in keys {
            ing.write(key(self.width, k), EMPTY).map_err(e)?;
        }
        ing.finish().map_err(e)
    }

    fn load_batches(&mut self, keys: &[u64], batch: usize) -> Result<()> {
        let (db, ks) = self.parts()?;
        for chunk in keys.chunks(batch.max(1)) {
            let mut b = db.batch();
            for &k in chunk {
                b.insert(ks, key(self.width, k), EMPTY);
            }
            b.commit().map_err(e)?;
        }
        Ok(())
    }

    fn settle(&mut self) -> Result<Option<&'static str>> {
        let (_, ks) = self.parts()?;
        // Both are public but hidden from fjall's docs: the memtable into a table, then every
        // table merged (RocksDB's full compaction, for the same comparison of sizes).
        ks.rotate_memtable_and_wait().map_err(e)?;
        ks.major_compact().map_err(e)?;
        Ok(Some("flush and major compaction"))
    }

    fn close(&mut self) -> Result<u64> {
        if let Some((db, ks)) = self.db.take() {
            db.persist(PersistMode::SyncAll).map_err(e)?;
            drop(ks);
            drop(db);
        }
        allocated_bytes(&self.dir)
    }

    fn reopen(&mut self) -> Result<()> {
        self.db = Some(open(&self.dir)?);
        Ok(())
    }

    fn count_present(&mut self, keys: &[u64]) -> Result<u64> {
        let (_, ks) = self.parts()?;
        let mut n = 0;
        for &k in keys {
            n += ks.contains_key(key(self.width, k)).map_err(e)? as u64;
        }
        Ok(n)
    }

    fn scan(&mut self) -> Result<(u64, u128)> {
        let (_, ks) = self.parts()?;
        let (mut count, mut sum) = (0u64, 0u128);
        for g in ks.iter() {
            sum += value(&g.key().map_err(e)?)? as u128;
            count += 1;
        }
        Ok((count, sum))
    }

    fn ranges(&mut self, ranges: &[(u64, u64)], sum: bool) -> Result<Vec<(u64, u128)>> {
        let (_, ks) = self.parts()?;
        ranges
            .iter()
            .map(|&(lo, hi)| {
                let (mut c, mut s) = (0u64, 0u128);
                for g in ks.range(key(self.width, lo)..=key(self.width, hi)) {
                    let k = g.key().map_err(e)?;
                    if sum {
                        s += value(&k)? as u128;
                    }
                    c += 1;
                }
                Ok((c, s))
            })
            .collect()
    }
}
