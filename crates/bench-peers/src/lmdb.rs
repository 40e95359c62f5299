//! LMDB (through heed) as a [`Store`]: one database with native-endian integer keys
//! (`MDB_INTEGERKEY`, LMDB's fastest key compare) and empty values; ascending loads use
//! `MDB_APPEND`; the environment has `MDB_NOSYNC` (commits not fsynced, synced at close).

use crate::{Result, Store, Width};
use heed::types::{Bytes, Unit};
use heed::{Database, Env, EnvFlags, EnvOpenOptions, IntegerComparator, PutFlags};
use std::path::{Path, PathBuf};

type Db = Database<Bytes, Unit, IntegerComparator>;

pub struct Lmdb {
    dir: PathBuf,
    width: Width,
    env: Option<(Env, Db)>,
}

fn e(x: heed::Error) -> String {
    format!("lmdb: {x}")
}

/// Address space reserved for the map (LMDB's file grows only as pages are used).
const MAP_SIZE: usize = 1 << 40;

fn open(dir: &Path) -> Result<(Env, Db)> {
    let mut o = EnvOpenOptions::new();
    o.map_size(MAP_SIZE).max_dbs(1);
    // SAFETY: NO_SYNC only drops fsync (durability after a crash), not memory safety; this
    // process opens each directory once, and no other process touches it.
    unsafe { o.flags(EnvFlags::NO_SYNC) };
    // SAFETY: heed requires that the same environment is not opened twice in one process: each
    // store has its own fresh directory and closes its Env before reopening it.
    let env = unsafe { o.open(dir) }.map_err(e)?;
    let mut w = env.write_txn().map_err(e)?;
    let db = env
        .database_options()
        .types::<Bytes, Unit>()
        .key_comparator::<IntegerComparator>()
        .create(&mut w)
        .map_err(e)?;
    w.commit().map_err(e)?;
    Ok((env, db))
}

impl Lmdb {
    pub fn create(dir: &Path, width: Width) -> Result<Lmdb> {
        let env = open(dir)?;
        Ok(Lmdb {
            dir: dir.to_path_buf(),
            width,
            env: Some(env),
        })
    }

    fn parts(&self) -> Result<&(Env, Db)> {
        self.env.as_ref().ok_or_else(|| "lmdb: closed".into())
    }
}

/// A key as LMDB's integer keys want it: native-endian, 4 or 8 bytes.
fn bytes(width: Width, k: u64, buf: &mut [u8; 8]) -> &[u8] {
    match width {
        Width::U32 => {
            buf[..4].copy_from_slice(&(k as u32).to_ne_bytes());
            &buf[..4]
        }
        Width::U64 => {
            *buf = k.to_ne_bytes();
            &buf[..]
        }
    }
}

fn value(b: &[u8]) -> Result<u64> {
    Ok(match b.len() {
        4 => u32::from_ne_bytes(b.try_into().map_err(|_| "lmdb: key")?) as u64,
        8 => u64::from_ne_bytes(b.try_into().map_err(|_| "lmdb: key")?),
        n => return Err(format!("lmdb: key of {n} bytes")),
    })
}

impl Store for Lmdb {
    fn durability(&self) -> String {
        "MDB_NOSYNC (no fsync per commit; synced at close)".into()
    }

    fn load_ascending(&mut self, keys: &[u64]) -> Result<()> {
        let (env, db) = self.parts()?;
        let mut w = env.write_txn().map_err(e)?;
        let mut buf = [0u8; 8];
        for &k in keys {
            db.put_with_flags(
                &mut w,
                PutFlags::APPEND,
                bytes(self.width, k, &mut buf),
                &(),
            )
            .map_err(e)?;
        }
        w.commit().map_err(e)
    }

    fn load_batches(&mut self, keys: &[u64], batch: usize) -> Result<()> {
        let (env, db) = self.parts()?;
        let mut buf = [0u8; 8];
        for chunk in keys.chunks(batch.max(1)) {
            let mut w = env.write_txn().map_err(e)?;
            for &k in chunk {
                db.put(&mut w, bytes(self.width, k, &mut buf), &())
                    .map_err(e)?;
            }
            w.commit().map_err(e)?;
        }
        Ok(())
    }

    fn close(&mut self) -> Result<u64> {
        if let Some((env, _)) = self.env.take() {
            env.force_sync().map_err(e)?;
            env.prepare_for_closing().wait();
        }
        // The lock file is LMDB's reader table, not data.
        let data = self.dir.join("data.mdb");
        std::fs::metadata(&data)
            .map(|m| m.len())
            .map_err(|x| format!("{}: {x}", data.display()))
    }

    fn reopen(&mut self) -> Result<()> {
        self.env = Some(open(&self.dir)?);
        Ok(())
    }

    fn count_present(&mut self, keys: &[u64]) -> Result<u64> {
        let (env, db) = self.parts()?;
        let r = env.read_txn().map_err(e)?;
        let mut buf = [0u8; 8];
        let mut n = 0;
        for &k in keys {
            n += db
                .get(&r, bytes(self.width, k, &mut buf))
                .map_err(e)?
                .is_some() as u64;
        }
        Ok(n)
    }

    fn scan(&mut self) -> Result<(u64, u128)> {
        let (env, db) = self.parts()?;
        let r = env.read_txn().map_err(e)?;
        let (mut count, mut sum) = (0u64, 0u128);
        for kv in db.iter(&r).map_err(e)? {
            let (k, ()) = kv.map_err(e)?;
            sum += value(k)? as u128;
            count += 1;
        }
        Ok((count, sum))
    }

    fn ranges(&mut self, ranges: &[(u64, u64)], sum: bool) -> Result<Vec<(u64, u128)>> {
        let (env, db) = self.parts()?;
        let r = env.read_txn().map_err(e)?;
        let (mut a, mut b) = ([0u8; 8], [0u8; 8]);
        let mut out = Vec::with_capacity(ranges.len());
        for &(lo, hi) in ranges {
            use std::ops::Bound::Included;
            let range = (
                Included(bytes(self.width, lo, &mut a)),
                Included(bytes(self.width, hi, &mut b)),
            );
            let (mut c, mut s) = (0u64, 0u128);
            // LMDB has no range count: both walk the range with a cursor.
            for kv in db.range(&r, &range).map_err(e)? {
                let (k, ()) = kv.map_err(e)?;
                if sum {
                    s += value(k)? as u128;
                }
                c += 1;
            }
            out.push((c, s));
        }
        Ok(out)
    }
}
