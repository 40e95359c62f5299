//! Compaction: an environment rewritten into its smallest form.
//!
//! Copy-on-write files keep free pages (the previous commit's pages, pages freed by erases) and
//! leaves filled by random-order inserts are not packed as tightly as an ascending load packs
//! them. [`Env::copy_compact`] writes the last committed state into a new file by appending
//! every database's entries in key order, which fills every leaf and block as an ascending
//! load does, with no free pages. [`compact_file`] replaces a file by its compact copy:
//!
//! 1. the copy is written to `FILE.compact` (a stale one from an earlier crash is removed) and
//!    synced;
//! 2. it is renamed over `FILE` (atomic on POSIX file systems) and the directory is synced.
//!
//! A crash before step 2 leaves the old file as it was (and a `.compact` file that the next
//! compaction removes); a crash after it leaves the new one. The source stays open with its
//! writer lock for the whole run, so no writer in another process can commit to the old file
//! while it is copied.

#![deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used)]

use crate::env::{Env, EnvOptions};
use crate::error::{Error, Result};
use crate::storage::Durability;
use std::path::{Path, PathBuf};

/// Entries copied per intermediate commit (bounds the dirty pages held in memory).
const BATCH: u64 = 1 << 20;

/// What a compaction did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CompactReport {
    /// File size before, in bytes.
    pub before_bytes: u64,
    /// File size after, in bytes.
    pub after_bytes: u64,
    /// Databases copied.
    pub dbs: usize,
    /// Entries copied, over all databases.
    pub entries: u64,
}

impl Env {
    /// Writes the last committed state into a new environment file at `dest` (which must not
    /// exist) in its smallest form: every database with the same configuration, its entries
    /// appended in key order. The copy is synced before this returns. Returns the number of
    /// databases and entries copied.
    pub fn copy_compact(&self, dest: impl AsRef<Path>) -> Result<(usize, u64)> {
        let dest = dest.as_ref();
        if dest.exists() {
            return Err(Error::InvalidArgument(format!(
                "{} exists: a compact copy is written to a new file",
                dest.display()
            )));
        }
        let opts = EnvOptions::default()
            .page_size(self.page_size())
            .durability(Durability::None);
        let out = Env::create(dest, &opts)?;
        let r = self.begin_read()?;
        let dbs = r.list_dbs()?;
        let mut entries = 0u64;
        let mut w = out.begin_write()?;
        for (name, config) in &dbs {
            let src = r.open_db(name)?;
            let mut db = w.create_db(name, *config)?;
            let mut c = r.cursor(&src)?;
            let mut more = c.first()?;
            let mut in_batch = 0u64;
            while more {
                let key = c
                    .key()
                    .ok_or_else(|| Error::InvalidArgument("cursor lost its position".into()))?;
                let value = c.value()?.unwrap_or_default();
                w.append(&db, key, &value)?;
                entries += 1;
                in_batch += 1;
                if in_batch == BATCH {
                    w.commit()?;
                    w = out.begin_write()?;
                    db = w.open_db(name)?;
                    in_batch = 0;
                }
                more = c.next()?;
            }
        }
        // The last commit syncs everything written before it.
        w.set_durability(Durability::Immediate);
        w.commit()?;
        Ok((dbs.len(), entries))
    }
}

/// The temporary file a compaction of `path` writes.
pub fn compact_temp_path(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(".compact");
    PathBuf::from(s)
}

/// Rewrites the environment file at `path` into its smallest form, safely (see the module
/// docs). Fails with `Error::Locked` while another handle has the file open.
pub fn compact_file(path: impl AsRef<Path>, opts: &EnvOptions) -> Result<CompactReport> {
    let path = path.as_ref();
    let before_bytes = std::fs::metadata(path)?.len();
    let env = Env::open(path, opts)?;
    let tmp = compact_temp_path(path);
    match std::fs::remove_file(&tmp) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e.into()),
    }
    let (dbs, entries) = match env.copy_compact(&tmp) {
        Ok(n) => n,
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            return Err(e);
        }
    };
    // The source must be unchanged: nothing else can write while `env` holds the writer lock.
    std::fs::rename(&tmp, path)?;
    if let Some(dir) = path.parent() {
        let dir = if dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            dir
        };
        std::fs::File::open(dir)?.sync_all()?;
    }
    drop(env);
    let after_bytes = std::fs::metadata(path)?.len();
    Ok(CompactReport {
        before_bytes,
        after_bytes,
        dbs,
        entries,
    })
}
