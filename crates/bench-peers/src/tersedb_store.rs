//! tersedb as a [`Store`]: one database of keys without records (a key codec, `auto` or none),
//! 16 KiB pages (or `TERSEDB_BENCH_PAGE_SIZE` bytes: the fixed pages of a small file are a
//! large share of its bytes per key), a 1 GiB page cache, `Durability::None` (commits are atomic but not fsynced;
//! `close` syncs). Ascending loads
//! use `append`, ranges the in-tree fold (`ReadTxn::fold_keys`), which sums and counts a block
//! at a time on the compressed keys.

use crate::{Result, Store, Width};
use std::path::{Path, PathBuf};
use tersedb::{CodecId, DbConfig, Durability, Env, EnvOptions, Key, KeyType, RecordType};

pub struct TerseStore {
    path: PathBuf,
    width: Width,
    opts: EnvOptions,
    env: Option<Env>,
    db: Option<tersedb::Db>,
}

fn e(x: tersedb::Error) -> String {
    format!("tersedb: {x}")
}

impl TerseStore {
    /// `codec`: `none`, `auto` (a codec chosen per block) or a codec name.
    pub fn create(dir: &Path, width: Width, codec: &str) -> Result<TerseStore> {
        let (codec, auto) = match codec {
            "none" => (None, false),
            "auto" => (None, true),
            c => (
                Some(CodecId::from_name(c).ok_or_else(|| {
                    format!(
                        "unknown codec {c:?} (none, auto, {})",
                        CodecId::ALL.map(|c| c.name()).join(", ")
                    )
                })?),
                false,
            ),
        };
        let key_type = match width {
            Width::U32 => KeyType::U32,
            Width::U64 => KeyType::U64,
        };
        let path = dir.join("bench.tdb");
        let page_size = match std::env::var("TERSEDB_BENCH_PAGE_SIZE") {
            Ok(v) => v
                .parse()
                .map_err(|_| format!("TERSEDB_BENCH_PAGE_SIZE {v:?} is not a number"))?,
            Err(_) => 16384,
        };
        let opts = EnvOptions::default()
            .page_size(page_size)
            .durability(Durability::None)
            .cache_bytes(1 << 30);
        let env = Env::create(&path, &opts).map_err(e)?;
        let mut w = env.begin_write().map_err(e)?;
        let db = w
            .create_db(
                "bench",
                DbConfig::raw(key_type, RecordType::None)
                    .with_codec(codec)
                    .with_auto_codec(auto),
            )
            .map_err(e)?;
        w.commit().map_err(e)?;
        Ok(TerseStore {
            path,
            width,
            opts,
            env: Some(env),
            db: Some(db),
        })
    }

    fn key(&self, k: u64) -> Key<'static> {
        match self.width {
            Width::U32 => Key::U32(k as u32),
            Width::U64 => Key::U64(k),
        }
    }

    fn parts(&self) -> Result<(&Env, &tersedb::Db)> {
        match (&self.env, &self.db) {
            (Some(env), Some(db)) => Ok((env, db)),
            _ => Err("tersedb: store is closed".into()),
        }
    }
}

impl Store for TerseStore {
    fn durability(&self) -> String {
        "Durability::None (atomic commits, no fsync; synced at close)".into()
    }

    fn load_ascending(&mut self, keys: &[u64]) -> Result<()> {
        let (env, db) = self.parts()?;
        let mut w = env.begin_write().map_err(e)?;
        for &k in keys {
            w.append(db, self.key(k), &[]).map_err(e)?;
        }
        w.commit().map_err(e)
    }

    fn load_batches(&mut self, keys: &[u64], batch: usize) -> Result<()> {
        let (env, db) = self.parts()?;
        for chunk in keys.chunks(batch.max(1)) {
            let mut w = env.begin_write().map_err(e)?;
            for &k in chunk {
                w.insert(db, self.key(k), &[]).map_err(e)?;
            }
            w.commit().map_err(e)?;
        }
        Ok(())
    }

    fn close(&mut self) -> Result<u64> {
        if let Some(env) = &self.env {
            // One durable empty commit: what a clean shutdown leaves on disk.
            let mut w = env.begin_write().map_err(e)?;
            w.set_durability(Durability::Immediate);
            w.commit().map_err(e)?;
        }
        self.db = None;
        self.env = None;
        std::fs::metadata(&self.path)
            .map(|m| m.len())
            .map_err(|x| format!("{}: {x}", self.path.display()))
    }

    fn reopen(&mut self) -> Result<()> {
        let env = Env::open(&self.path, &self.opts).map_err(e)?;
        let db = env.begin_read().map_err(e)?.open_db("bench").map_err(e)?;
        self.env = Some(env);
        self.db = Some(db);
        Ok(())
    }

    fn count_present(&mut self, keys: &[u64]) -> Result<u64> {
        let (env, db) = self.parts()?;
        let r = env.begin_read().map_err(e)?;
        let mut n = 0;
        for &k in keys {
            n += r.contains(db, self.key(k)).map_err(e)? as u64;
        }
        Ok(n)
    }

    fn scan(&mut self) -> Result<(u64, u128)> {
        let (env, db) = self.parts()?;
        let r = env.begin_read().map_err(e)?;
        let mut c = r.cursor(db).map_err(e)?;
        let (mut count, mut sum) = (0u64, 0u128);
        let mut ok = c.first().map_err(e)?;
        while ok {
            let k = match self.width {
                Width::U32 => c.key_u32().map(u64::from),
                Width::U64 => match c.key() {
                    Some(Key::U64(k)) => Some(k),
                    _ => None,
                },
            };
            sum += k.ok_or("tersedb: cursor without a key")? as u128;
            count += 1;
            ok = c.next().map_err(e)?;
        }
        Ok((count, sum))
    }

    fn ranges(&mut self, ranges: &[(u64, u64)], sum: bool) -> Result<Vec<(u64, u128)>> {
        let (env, db) = self.parts()?;
        let r = env.begin_read().map_err(e)?;
        ranges
            .iter()
            .map(|&(lo, hi)| {
                let f = r.fold_keys(db, lo, hi, sum).map_err(e)?;
                Ok((f.count, if sum { f.sum } else { 0 }))
            })
            .collect()
    }
}
