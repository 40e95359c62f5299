//! SQLite (rusqlite, compiled in) as a [`Store`]: `CREATE TABLE t(k INTEGER PRIMARY KEY)
//! WITHOUT ROWID` (the keys are the B-tree's keys, no rowid beside them), WAL journal with
//! `synchronous=OFF`, a 1 GiB page cache; sums by SQL `SUM` where it cannot overflow.

use crate::{Result, Store, Width};
use rusqlite::{params, Connection};
use std::path::{Path, PathBuf};

pub struct Sqlite {
    path: PathBuf,
    width: Width,
    conn: Option<Connection>,
}

fn e(x: rusqlite::Error) -> String {
    format!("sqlite: {x}")
}

fn open(path: &Path) -> Result<Connection> {
    let c = Connection::open(path).map_err(e)?;
    c.execute_batch(
        "PRAGMA journal_mode=WAL; PRAGMA synchronous=OFF; PRAGMA cache_size=-1048576;
         CREATE TABLE IF NOT EXISTS t(k INTEGER PRIMARY KEY) WITHOUT ROWID;",
    )
    .map_err(e)?;
    Ok(c)
}

/// SQLite integers are i64.
fn key(k: u64) -> Result<i64> {
    i64::try_from(k).map_err(|_| format!("sqlite: key {k} is above SQLite's 2^63-1"))
}

impl Sqlite {
    pub fn create(dir: &Path, width: Width) -> Result<Sqlite> {
        let path = dir.join("bench.sqlite");
        let conn = open(&path)?;
        Ok(Sqlite {
            path,
            width,
            conn: Some(conn),
        })
    }

    fn conn(&mut self) -> Result<&mut Connection> {
        self.conn.as_mut().ok_or_else(|| "sqlite: closed".into())
    }
}

impl Store for Sqlite {
    fn durability(&self) -> String {
        "WAL, synchronous=OFF (checkpointed at close)".into()
    }

    fn load_ascending(&mut self, keys: &[u64]) -> Result<()> {
        self.load_batches(keys, usize::MAX)
    }

    fn load_batches(&mut self, keys: &[u64], batch: usize) -> Result<()> {
        let c = self.conn()?;
        for chunk in keys.chunks(batch.max(1)) {
            let tx = c.transaction().map_err(e)?;
            {
                let mut st = tx.prepare_cached("INSERT INTO t VALUES (?1)").map_err(e)?;
                for &k in chunk {
                    st.execute(params![key(k)?]).map_err(e)?;
                }
            }
            tx.commit().map_err(e)?;
        }
        Ok(())
    }

    fn close(&mut self) -> Result<u64> {
        if let Some(c) = self.conn.take() {
            c.close().map_err(|(_, x)| e(x))?;
        }
        // After the last connection closes, the WAL is checkpointed and removed.
        let mut n = 0;
        for suffix in ["", "-wal", "-shm"] {
            let p = PathBuf::from(format!("{}{suffix}", self.path.display()));
            n += std::fs::metadata(&p).map(|m| m.len()).unwrap_or(0);
        }
        Ok(n)
    }

    fn reopen(&mut self) -> Result<()> {
        self.conn = Some(open(&self.path)?);
        Ok(())
    }

    fn count_present(&mut self, keys: &[u64]) -> Result<u64> {
        let c = self.conn()?;
        let mut st = c
            .prepare_cached("SELECT 1 FROM t WHERE k = ?1")
            .map_err(e)?;
        let mut n = 0;
        for &k in keys {
            n += st.exists(params![key(k)?]).map_err(e)? as u64;
        }
        Ok(n)
    }

    fn scan(&mut self) -> Result<(u64, u128)> {
        let width = self.width;
        let c = self.conn()?;
        if width == Width::U32 {
            // u32 keys: SUM cannot overflow i64 below 2^31 keys.
            let (n, s): (i64, Option<i64>) = c
                .query_row("SELECT COUNT(*), SUM(k) FROM t", [], |r| {
                    Ok((r.get(0)?, r.get(1)?))
                })
                .map_err(e)?;
            return Ok((n as u64, s.unwrap_or(0) as u128));
        }
        let mut st = c.prepare("SELECT k FROM t ORDER BY k").map_err(e)?;
        let mut rows = st.query([]).map_err(e)?;
        let (mut n, mut s) = (0u64, 0u128);
        while let Some(r) = rows.next().map_err(e)? {
            let k: i64 = r.get(0).map_err(e)?;
            s += k as u128;
            n += 1;
        }
        Ok((n, s))
    }

    fn ranges(&mut self, ranges: &[(u64, u64)], sum: bool) -> Result<Vec<(u64, u128)>> {
        let width = self.width;
        let c = self.conn()?;
        let mut out = Vec::with_capacity(ranges.len());
        if !sum || width == Width::U32 {
            let sql = if sum {
                "SELECT COUNT(*), SUM(k) FROM t WHERE k BETWEEN ?1 AND ?2"
            } else {
                "SELECT COUNT(*), 0 FROM t WHERE k BETWEEN ?1 AND ?2"
            };
            let mut st = c.prepare_cached(sql).map_err(e)?;
            for &(lo, hi) in ranges {
                let (n, s): (i64, Option<i64>) = st
                    .query_row(params![key(lo)?, key(hi)?], |r| Ok((r.get(0)?, r.get(1)?)))
                    .map_err(e)?;
                out.push((n as u64, s.unwrap_or(0) as u128));
            }
            return Ok(out);
        }
        // u64 keys: SUM may overflow i64; sum in Rust.
        let mut st = c
            .prepare_cached("SELECT k FROM t WHERE k BETWEEN ?1 AND ?2")
            .map_err(e)?;
        for &(lo, hi) in ranges {
            let mut rows = st.query(params![key(lo)?, key(hi)?]).map_err(e)?;
            let (mut n, mut s) = (0u64, 0u128);
            while let Some(r) = rows.next().map_err(e)? {
                let k: i64 = r.get(0).map_err(e)?;
                s += k as u128;
                n += 1;
            }
            out.push((n, s));
        }
        Ok(out)
    }
}
