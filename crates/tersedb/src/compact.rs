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

/// What [`Env::shrink`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ShrinkReport {
    /// Pages of the file before.
    pub pages_before: u64,
    /// Pages of the file after.
    pub pages_after: u64,
    /// Pages moved from the end of the file into free pages lower down.
    pub moved: u64,
}

/// Commits after the one that moves pages: the first makes the moved pages' old copies
/// reusable (when the move was synced; a second does when it was not) and drops them from the
/// page count; the next shortens the file to that count (a file is never shorter than either
/// meta page's count).
const MAX_RELEASE_COMMITS: usize = 3;

impl Env {
    /// Gives the free pages of the file back to the file system, in place: the pages at the
    /// end of the file move into free pages lower down (copied on write and committed like any
    /// transaction, so a crash at any point leaves the state before or after it), then up to
    /// three empty commits release the old copies and shorten the file. Leaves keep their
    /// contents (a shrink moves pages, it does not repack them: [`compact_file`] does). Pages
    /// that a reader (in any process) may still read stay until it ends. Runs as the write
    /// transaction: `Error::WriteTxnActive` while another is open.
    pub fn shrink(&self) -> Result<ShrinkReport> {
        self.shrink_by(1)
    }

    /// [`Env::shrink`] when it gives back at least `min_gain` pages.
    fn shrink_by(&self, min_gain: u64) -> Result<ShrinkReport> {
        let pages_before = self.space()?.pages;
        let mut w = self.begin_write()?;
        let Some((_, moved)) = w.relocate_tail(min_gain)? else {
            w.abort();
            return Ok(ShrinkReport {
                pages_before,
                pages_after: pages_before,
                moved: 0,
            });
        };
        w.commit()?;
        let mut last = self.space()?.pages;
        for k in 0..MAX_RELEASE_COMMITS {
            self.begin_write()?.commit()?;
            let now = self.space()?.pages;
            if k > 0 && now == last {
                break;
            }
            last = now;
        }
        Ok(ShrinkReport {
            pages_before,
            pages_after: last,
            moved,
        })
    }

    /// The shrink of [`EnvOptions::shrink_on_close`] (see there when it runs); `opened_at` is
    /// the commit and page count the file had when this environment opened it.
    fn shrink_at_close(&self, (txn, pages_then): (u64, u64)) -> Result<()> {
        if self.begin_read()?.txn_id() == txn {
            return Ok(());
        }
        let s = self.space()?;
        let grew = s.pages.saturating_sub(pages_then);
        let min_gain = if s.free_pages * 3 >= s.pages {
            s.pages / 8
        } else if grew > 0 && s.free_pages > 0 {
            grew.min(s.pages / 8)
        } else {
            return Ok(());
        };
        if s.pages < SHRINK_MIN_PAGES {
            return Ok(());
        }
        self.shrink_by(min_gain.max(1)).map(|_| ())
    }
}

/// Files smaller than this many pages are not shrunk at close.
const SHRINK_MIN_PAGES: u64 = 16;

impl Drop for Env {
    fn drop(&mut self) {
        if let (Some(opened_at), true) = self.close_state() {
            // Best effort: a failure leaves the file as the last commit left it (every step
            // is a commit of its own), and a drop cannot report it.
            let _ = self.shrink_at_close(opened_at);
        }
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
