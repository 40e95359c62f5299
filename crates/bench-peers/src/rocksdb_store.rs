//! RocksDB (through rust-rocksdb, linked to the system's librocksdb) as a [`Store`], with LZ4 or
//! ZSTD block compression on every level. Keys are big-endian u32/u64 (RocksDB's bytewise order
//! is then numeric order), values empty; a 1 GiB block cache (as tersedb's and redb's caches),
//! otherwise RocksDB's defaults (4 KiB blocks, no Bloom filter, leveled compaction).
//!
//! ```text
//! ascending load   SstFileWriter of the sorted keys, ingested as one file (RocksDB's bulk path)
//! random load      a WriteBatch of 100,000 keys per write (WAL on, not fsynced)
//! settle           flush, then a full manual compaction (`compact_range` of everything, the last
//!                  level rewritten too: `BottommostLevelCompaction::Force`), timed
//! size             the files a reopen needs (SST, MANIFEST, CURRENT, OPTIONS, WAL), not LOG
//! ranges           an iterator per range: RocksDB has no range COUNT or SUM
//! ```

use crate::{Result, Store, Width};
use rocksdb::{
    BlockBasedOptions, BottommostLevelCompaction, Cache, CompactOptions, DBCompressionType,
    Options, SstFileWriter, WriteBatch, DB,
};
use std::path::{Path, PathBuf};

/// Every value: the stores hold keys only.
const EMPTY: &[u8] = &[];

/// Block compression of a RocksDB store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compression {
    Lz4,
    Zstd,
}

pub struct Rocks {
    dir: PathBuf,
    width: Width,
    compression: Compression,
    /// Kept alive beside the options that point at it.
    cache: Cache,
    db: Option<DB>,
}

fn e(x: impl std::fmt::Display) -> String {
    format!("rocksdb: {x}")
}

fn key(width: Width, k: u64) -> ([u8; 8], usize) {
    match width {
        Width::U32 => {
            let mut b = [0u8; 8];
            b[..4].copy_from_slice(&(k as u32).to_be_bytes());
            (b, 4)
        }
        Width::U64 => (k.to_be_bytes(), 8),
    }
}

fn value(b: &[u8]) -> Result<u64> {
    Ok(match b.len() {
        4 => u32::from_be_bytes(b.try_into().map_err(e)?) as u64,
        8 => u64::from_be_bytes(b.try_into().map_err(e)?),
        n => return Err(format!("rocksdb: key of {n} bytes")),
    })
}

impl Rocks {
    pub fn create(dir: &Path, width: Width, compression: Compression) -> Result<Rocks> {
        let cache = Cache::new_lru_cache(1 << 30).map_err(e)?;
        let mut s = Rocks {
            dir: dir.join("db"),
            width,
            compression,
            cache,
            db: None,
        };
        s.db = Some(DB::open(&s.options(), &s.dir).map_err(e)?);
        Ok(s)
    }

    fn options(&self) -> Options {
        let mut o = Options::default();
        o.create_if_missing(true);
        let c = match self.compression {
            Compression::Lz4 => DBCompressionType::Lz4,
            Compression::Zstd => DBCompressionType::Zstd,
        };
        o.set_compression_type(c);
        o.set_bottommost_compression_type(c);
        o.set_keep_log_file_num(1);
        let mut t = BlockBasedOptions::default();
        t.set_block_cache(&self.cache);
        o.set_block_based_table_factory(&t);
        o
    }

    fn db(&self) -> Result<&DB> {
        self.db.as_ref().ok_or_else(|| "rocksdb: closed".into())
    }

    fn name(&self) -> &'static str {
        match self.compression {
            Compression::Lz4 => "LZ4",
            Compression::Zstd => "ZSTD",
        }
    }
}

impl Store for Rocks {
    fn durability(&self) -> String {
        format!(
            "{} blocks; WAL on, sync=false (commits not fsynced); flushed at close",
            self.name()
        )
    }

    fn load_ascending(&mut self, keys: &[u64]) -> Result<()> {
        let db = self.db()?;
        let sst = self.dir.with_extension("ingest.sst");
        let opts = self.options();
        let mut w = SstFileWriter::create(&opts);
        w.open(&sst).map_err(e)?;
        for &k in keys {
            let (b, n) = key(self.width, k);
            w.put(&b[..n], EMPTY).map_err(e)?;
        }
        w.finish().map_err(e)?;
        db.ingest_external_file(vec![&sst]).map_err(e)?;
        // Ingestion copies (or links) the file into the database.
        let _ = std::fs::remove_file(&sst);
        Ok(())
    }

    fn load_batches(&mut self, keys: &[u64], batch: usize) -> Result<()> {
        let db = self.db()?;
        for chunk in keys.chunks(batch.max(1)) {
            let mut b = WriteBatch::default();
            for &k in chunk {
                let (k, n) = key(self.width, k);
                b.put(&k[..n], EMPTY);
            }
            db.write(b).map_err(e)?;
        }
        Ok(())
    }

    fn settle(&mut self) -> Result<Option<&'static str>> {
        let db = self.db()?;
        db.flush().map_err(e)?;
        // Force: a flushed L0 file would otherwise move to the last level unchanged, keeping
        // each key's 7-byte sequence number, which the rewrite zeroes (half its size here).
        let mut c = CompactOptions::default();
        c.set_bottommost_level_compaction(BottommostLevelCompaction::Force);
        db.compact_range_opt(None::<&[u8]>, None::<&[u8]>, &c);
        Ok(Some("full compaction"))
    }

    fn close(&mut self) -> Result<u64> {
        if let Some(db) = self.db.take() {
            db.flush().map_err(e)?;
            db.flush_wal(true).map_err(e)?;
            drop(db);
        }
        let mut n = 0;
        for f in std::fs::read_dir(&self.dir).map_err(|x| format!("{}: {x}", self.dir.display()))? {
            let f = f.map_err(e)?;
            let name = f.file_name();
            // LOG is RocksDB's human-readable info log, not data (as LMDB's lock file).
            if name.to_string_lossy().starts_with("LOG") {
                continue;
            }
            let m = f.metadata().map_err(e)?;
            if m.is_file() {
                n += m.len();
            }
        }
        Ok(n)
    }

    fn reopen(&mut self) -> Result<()> {
        self.db = Some(DB::open(&self.options(), &self.dir).map_err(e)?);
        Ok(())
    }

    fn count_present(&mut self, keys: &[u64]) -> Result<u64> {
        let db = self.db()?;
        let mut n = 0;
        for &k in keys {
            let (b, len) = key(self.width, k);
            n += db.get_pinned(&b[..len]).map_err(e)?.is_some() as u64;
        }
        Ok(n)
    }

    fn scan(&mut self) -> Result<(u64, u128)> {
        let db = self.db()?;
        let mut it = db.raw_iterator();
        it.seek_to_first();
        let (mut count, mut sum) = (0u64, 0u128);
        while let Some(k) = it.key() {
            sum += value(k)? as u128;
            count += 1;
            it.next();
        }
        it.status().map_err(e)?;
        Ok((count, sum))
    }

    fn ranges(&mut self, ranges: &[(u64, u64)], sum: bool) -> Result<Vec<(u64, u128)>> {
        let db = self.db()?;
        let mut it = db.raw_iterator();
        let mut out = Vec::with_capacity(ranges.len());
        for &(lo, hi) in ranges {
            let (b, n) = key(self.width, lo);
            it.seek(&b[..n]);
            let (mut c, mut s) = (0u64, 0u128);
            while let Some(k) = it.key() {
                let k = value(k)?;
                if k > hi {
                    break;
                }
                if sum {
                    s += k as u128;
                }
                c += 1;
                it.next();
            }
            it.status().map_err(e)?;
            out.push((c, s));
        }
        Ok(out)
    }
}
