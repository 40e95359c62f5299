//! [`DirectFile`]: a [`Storage`] for `bench strings --disk` whose every leaf access is a read
//! from the device, the disk setting of Gao et al., "Revisiting B-tree Compression" (§3.3: "we
//! store the non-leaf nodes in memory and move the complete pages in the leaf level to disk").
//!
//! The file is opened with `O_DIRECT`: reads and writes bypass the OS page cache, so a page is
//! never served from RAM by the kernel. The environment over it runs with a page cache of zero
//! bytes (`EnvOptions::cache_bytes(0)`), so the engine keeps no clean pages either. Branch pages
//! are the one exception, as in the study: every branch page written or read is also kept here,
//! in a map from its offset, and served from it; a write of any other page at that offset drops
//! the copy (copy-on-write reuses freed page ids).
//!
//! ```text
//!  pager read_at(page)  -> branch map hit?  yes: copy from RAM        (counted: branch_hits)
//!                                           no:  pread, O_DIRECT      (counted: device_reads)
//!  pager write_at(page) -> pwrite, O_DIRECT; branch pages copied into the map, others dropped
//! ```
//!
//! `O_DIRECT` needs buffers, offsets and lengths aligned to the device's logical block (512 B or
//! 4 KiB): I/O goes through an aligned scratch buffer, and page sizes below 4 KiB are refused.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tersedb::storage::{PageKind, Storage, PAGE_KIND_OFFSET};

#[cfg(target_os = "linux")]
const O_DIRECT: i32 = libc::O_DIRECT;
/// Elsewhere there is no `O_DIRECT` flag (macOS has `F_NOCACHE`, set after open):
/// [`DirectFile::create`] refuses rather than measuring the page cache.
#[cfg(not(target_os = "linux"))]
const O_DIRECT: i32 = 0;

/// Alignment of every `O_DIRECT` transfer (the larger of the usual logical block sizes).
pub const ALIGN: usize = 4096;

/// What the storage did, shared with the benchmark.
#[derive(Debug, Default)]
pub struct Counters {
    /// Reads that went to the device (`O_DIRECT` preads).
    pub device_reads: AtomicU64,
    /// Of those, reads of leaf pages.
    pub leaf_reads: AtomicU64,
    /// Branch pages served from the in-memory copy.
    pub branch_hits: AtomicU64,
    /// Writes to the device.
    pub device_writes: AtomicU64,
}

impl Counters {
    pub fn device_reads(&self) -> u64 {
        self.device_reads.load(Ordering::Relaxed)
    }
    pub fn leaf_reads(&self) -> u64 {
        self.leaf_reads.load(Ordering::Relaxed)
    }
    pub fn branch_hits(&self) -> u64 {
        self.branch_hits.load(Ordering::Relaxed)
    }
}

/// A byte buffer whose slice `off..off + len` starts on an [`ALIGN`] boundary.
#[derive(Debug, Default)]
struct Aligned {
    v: Vec<u8>,
    off: usize,
}

impl Aligned {
    /// `len` aligned bytes (contents unspecified).
    fn get(&mut self, len: usize) -> &mut [u8] {
        if self.v.len() < self.off + len || self.v.is_empty() {
            self.v = vec![0u8; len + ALIGN];
            self.off = self.v.as_ptr().align_offset(ALIGN);
        }
        &mut self.v[self.off..self.off + len]
    }
}

/// A file read and written with `O_DIRECT`, branch pages kept in RAM (module docs). Removed
/// when dropped.
#[derive(Debug)]
pub struct DirectFile {
    file: File,
    path: PathBuf,
    page_size: usize,
    branches: Mutex<HashMap<u64, Box<[u8]>>>,
    scratch: Mutex<Aligned>,
    counters: Arc<Counters>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn unaligned(what: &str, offset: u64, len: usize) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("O_DIRECT {what} of {len} bytes at {offset} is not {ALIGN}-byte aligned"),
    )
}

impl DirectFile {
    /// Creates `path` (truncating it) for pages of `page_size` bytes (a multiple of [`ALIGN`]).
    pub fn create(path: &Path, page_size: usize, counters: Arc<Counters>) -> Result<Self, String> {
        if page_size % ALIGN != 0 {
            return Err(format!(
                "--disk needs pages of at least {ALIGN} bytes (O_DIRECT transfers whole blocks), not {page_size}"
            ));
        }
        if !cfg!(target_os = "linux") {
            return Err(
                "--disk reads pages with O_DIRECT, which this build has only on Linux".into(),
            );
        }
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .custom_flags(O_DIRECT)
            .open(path)
            .map_err(|e| {
                format!(
                    "{}: cannot open with O_DIRECT ({e}); tmpfs and some other file systems \
                     refuse it: pass --dir on a disk-backed file system",
                    path.display()
                )
            })?;
        Ok(DirectFile {
            file,
            path: path.to_path_buf(),
            page_size,
            branches: Mutex::new(HashMap::new()),
            scratch: Mutex::new(Aligned::default()),
            counters,
        })
    }

    /// Branch pages held in RAM.
    #[cfg(test)]
    fn branch_pages(&self) -> usize {
        lock(&self.branches).len()
    }

    fn is_branch(page: &[u8]) -> bool {
        page.get(PAGE_KIND_OFFSET) == Some(&(PageKind::Branch as u8))
    }
}

impl Drop for DirectFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

impl Storage for DirectFile {
    fn len(&self) -> io::Result<u64> {
        Ok(self.file.metadata()?.len())
    }

    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        let whole_page = buf.len() == self.page_size && offset % self.page_size as u64 == 0;
        if whole_page {
            if let Some(p) = lock(&self.branches).get(&offset) {
                buf.copy_from_slice(p);
                self.counters.branch_hits.fetch_add(1, Ordering::Relaxed);
                return Ok(());
            }
        }
        // The aligned span around the request (the pager reads whole pages; the meta probe at
        // open reads less).
        let start = offset - offset % ALIGN as u64;
        let end = (offset + buf.len() as u64).div_ceil(ALIGN as u64) * ALIGN as u64;
        let mut s = lock(&self.scratch);
        let span = s.get((end - start) as usize);
        self.file.read_exact_at(span, start)?;
        let at = (offset - start) as usize;
        buf.copy_from_slice(&span[at..at + buf.len()]);
        drop(s);
        self.counters.device_reads.fetch_add(1, Ordering::Relaxed);
        if whole_page {
            if Self::is_branch(buf) {
                lock(&self.branches).insert(offset, buf.into());
            } else if buf.get(PAGE_KIND_OFFSET) == Some(&(PageKind::Leaf as u8)) {
                self.counters.leaf_reads.fetch_add(1, Ordering::Relaxed);
            }
        }
        Ok(())
    }

    fn write_at(&self, offset: u64, buf: &[u8]) -> io::Result<()> {
        if offset % ALIGN as u64 != 0 || buf.len() % ALIGN != 0 {
            return Err(unaligned("write", offset, buf.len()));
        }
        let mut s = lock(&self.scratch);
        let span = s.get(buf.len());
        span.copy_from_slice(buf);
        self.file.write_all_at(span, offset)?;
        drop(s);
        self.counters.device_writes.fetch_add(1, Ordering::Relaxed);
        let mut map = lock(&self.branches);
        for (i, page) in buf.chunks_exact(self.page_size).enumerate() {
            let at = offset + (i * self.page_size) as u64;
            if Self::is_branch(page) {
                map.insert(at, page.into());
            } else {
                map.remove(&at);
            }
        }
        Ok(())
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        self.file.set_len(len)?;
        lock(&self.branches).retain(|&at, _| at < len);
        Ok(())
    }

    fn sync(&self) -> io::Result<()> {
        self.file.sync_all()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(kind: PageKind, fill: u8) -> Vec<u8> {
        let mut p = vec![fill; ALIGN];
        p[PAGE_KIND_OFFSET] = kind as u8;
        p
    }

    /// Leaves come from the device on every read; branches from RAM after their write, until
    /// a leaf is written over them.
    #[test]
    fn leaves_are_read_from_the_device_and_branches_from_ram() {
        let c = Arc::new(Counters::default());
        let dir = std::env::current_dir().unwrap();
        let path = dir.join(format!("direct-io-test-{}", std::process::id()));
        // Under the crate's directory: the system's temp dir may be a tmpfs, which refuses
        // O_DIRECT.
        let f = DirectFile::create(&path, ALIGN, c.clone()).unwrap();
        f.write_at(0, &page(PageKind::Leaf, 1)).unwrap();
        f.write_at(ALIGN as u64, &page(PageKind::Branch, 2))
            .unwrap();
        let mut buf = vec![0u8; ALIGN];
        for _ in 0..3 {
            f.read_at(0, &mut buf).unwrap();
            assert_eq!(buf, page(PageKind::Leaf, 1));
            f.read_at(ALIGN as u64, &mut buf).unwrap();
            assert_eq!(buf, page(PageKind::Branch, 2));
        }
        assert_eq!(
            (c.device_reads(), c.leaf_reads(), c.branch_hits()),
            (3, 3, 3)
        );
        // A leaf over the branch: read from the device from now on.
        f.write_at(ALIGN as u64, &page(PageKind::Leaf, 3)).unwrap();
        f.read_at(ALIGN as u64, &mut buf).unwrap();
        assert_eq!(buf, page(PageKind::Leaf, 3));
        assert_eq!((c.device_reads(), c.branch_hits()), (4, 3));
        // Unaligned partial read (the meta probe) and an unaligned write.
        let mut head = [0u8; 16];
        f.read_at(ALIGN as u64 + 100, &mut head).unwrap();
        assert_eq!(head, [3u8; 16]);
        assert!(f.write_at(100, &[0u8; 8]).is_err());
        assert_eq!(f.branch_pages(), 0);
        drop(f);
        assert!(!path.exists(), "removed on drop");
    }

    #[test]
    fn small_pages_are_refused() {
        let c = Arc::new(Counters::default());
        let e = DirectFile::create(Path::new("unused"), 2048, c).unwrap_err();
        assert!(e.contains("4096"), "{e}");
    }
}
