//! redb as a [`Store`]: one table of u32 (or u64) keys and `()` values, a 1 GiB cache, commits
//! with `Durability::None` and one `Immediate` commit at close (redb's clean shutdown).

use crate::{Result, Store, Width};
use redb::{Database, Durability, ReadableDatabase, ReadableTable, TableDefinition};
use std::path::{Path, PathBuf};

pub struct Redb {
    path: PathBuf,
    width: Width,
    db: Option<Database>,
}

fn e(x: impl std::fmt::Display) -> String {
    format!("redb: {x}")
}

/// A key type redb stores natively, with its table.
trait IntKey: redb::Key + for<'a> redb::Value<SelfType<'a> = Self> + Copy + 'static {
    const TABLE: TableDefinition<'static, Self, ()>;
    fn from_u64(k: u64) -> Self;
    fn to_u64(self) -> u64;
}

impl IntKey for u32 {
    const TABLE: TableDefinition<'static, u32, ()> = TableDefinition::new("bench");
    fn from_u64(k: u64) -> u32 {
        k as u32
    }
    fn to_u64(self) -> u64 {
        self as u64
    }
}

impl IntKey for u64 {
    const TABLE: TableDefinition<'static, u64, ()> = TableDefinition::new("bench");
    fn from_u64(k: u64) -> u64 {
        k
    }
    fn to_u64(self) -> u64 {
        self
    }
}

fn open(path: &Path, create: bool) -> Result<Database> {
    let mut b = Database::builder();
    b.set_cache_size(1 << 30);
    if create {
        b.create(path).map_err(e)
    } else {
        b.open(path).map_err(e)
    }
}

fn load<K: IntKey>(db: &Database, keys: &[u64], batch: usize) -> Result<()> {
    for chunk in keys.chunks(batch.max(1)) {
        let mut w = db.begin_write().map_err(e)?;
        w.set_durability(Durability::None).map_err(e)?;
        {
            let mut t = w.open_table(K::TABLE).map_err(e)?;
            for &k in chunk {
                t.insert(K::from_u64(k), ()).map_err(e)?;
            }
        }
        w.commit().map_err(e)?;
    }
    Ok(())
}

fn count_present<K: IntKey>(db: &Database, keys: &[u64]) -> Result<u64> {
    let r = db.begin_read().map_err(e)?;
    let t = r.open_table(K::TABLE).map_err(e)?;
    let mut n = 0;
    for &k in keys {
        n += t.get(K::from_u64(k)).map_err(e)?.is_some() as u64;
    }
    Ok(n)
}

fn scan<K: IntKey>(db: &Database) -> Result<(u64, u128)> {
    let r = db.begin_read().map_err(e)?;
    let t = r.open_table(K::TABLE).map_err(e)?;
    let (mut c, mut s) = (0u64, 0u128);
    for kv in t.iter().map_err(e)? {
        let (k, _) = kv.map_err(e)?;
        s += k.value().to_u64() as u128;
        c += 1;
    }
    Ok((c, s))
}

fn ranges<K: IntKey>(db: &Database, ranges: &[(u64, u64)], sum: bool) -> Result<Vec<(u64, u128)>> {
    let r = db.begin_read().map_err(e)?;
    let t = r.open_table(K::TABLE).map_err(e)?;
    let mut out = Vec::with_capacity(ranges.len());
    for &(lo, hi) in ranges {
        let (mut c, mut s) = (0u64, 0u128);
        // redb has no range count: both walk the range.
        for kv in t.range(K::from_u64(lo)..=K::from_u64(hi)).map_err(e)? {
            let (k, _) = kv.map_err(e)?;
            if sum {
                s += k.value().to_u64() as u128;
            }
            c += 1;
        }
        out.push((c, s));
    }
    Ok(out)
}

impl Redb {
    pub fn create(dir: &Path, width: Width) -> Result<Redb> {
        let path = dir.join("bench.redb");
        let db = open(&path, true)?;
        Ok(Redb {
            path,
            width,
            db: Some(db),
        })
    }

    fn db(&self) -> Result<&Database> {
        self.db.as_ref().ok_or_else(|| "redb: closed".into())
    }
}

impl Store for Redb {
    fn durability(&self) -> String {
        "Durability::None per commit; one Immediate commit at close".into()
    }

    fn load_ascending(&mut self, keys: &[u64]) -> Result<()> {
        let db = self.db()?;
        match self.width {
            Width::U32 => load::<u32>(db, keys, usize::MAX),
            Width::U64 => load::<u64>(db, keys, usize::MAX),
        }
    }

    fn load_batches(&mut self, keys: &[u64], batch: usize) -> Result<()> {
        let db = self.db()?;
        match self.width {
            Width::U32 => load::<u32>(db, keys, batch),
            Width::U64 => load::<u64>(db, keys, batch),
        }
    }

    fn close(&mut self) -> Result<u64> {
        if let Some(db) = self.db.take() {
            let w = db.begin_write().map_err(e)?;
            w.commit().map_err(e)?;
            drop(db);
        }
        std::fs::metadata(&self.path)
            .map(|m| m.len())
            .map_err(|x| format!("{}: {x}", self.path.display()))
    }

    fn reopen(&mut self) -> Result<()> {
        self.db = Some(open(&self.path, false)?);
        Ok(())
    }

    fn count_present(&mut self, keys: &[u64]) -> Result<u64> {
        let db = self.db()?;
        match self.width {
            Width::U32 => count_present::<u32>(db, keys),
            Width::U64 => count_present::<u64>(db, keys),
        }
    }

    fn scan(&mut self) -> Result<(u64, u128)> {
        let db = self.db()?;
        match self.width {
            Width::U32 => scan::<u32>(db),
            Width::U64 => scan::<u64>(db),
        }
    }

    fn ranges(&mut self, r: &[(u64, u64)], sum: bool) -> Result<Vec<(u64, u128)>> {
        let db = self.db()?;
        match self.width {
            Width::U32 => ranges::<u32>(db, r, sum),
            Width::U64 => ranges::<u64>(db, r, sum),
        }
    }
}
