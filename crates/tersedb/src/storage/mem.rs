//! [`MemStorage`]: a file held in memory, for tests and temporary environments.

use super::Storage;
use std::io;
use std::sync::{Arc, Mutex};

/// An in-memory file. Clones share the same bytes (so a test can "reopen" it).
#[derive(Clone, Debug, Default)]
pub struct MemStorage {
    data: Arc<Mutex<Vec<u8>>>,
}

impl MemStorage {
    pub fn new() -> MemStorage {
        MemStorage::default()
    }

    /// A storage holding a copy of `bytes`.
    pub fn from_bytes(bytes: Vec<u8>) -> MemStorage {
        MemStorage {
            data: Arc::new(Mutex::new(bytes)),
        }
    }

    /// A copy of the current bytes.
    pub fn snapshot(&self) -> Vec<u8> {
        self.lock().clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<u8>> {
        self.data.lock().unwrap_or_else(|p| p.into_inner())
    }
}

pub(crate) fn read_from(data: &[u8], offset: u64, buf: &mut [u8]) -> io::Result<()> {
    let start = usize::try_from(offset).map_err(|_| io::ErrorKind::UnexpectedEof)?;
    let end = start
        .checked_add(buf.len())
        .ok_or(io::ErrorKind::UnexpectedEof)?;
    let src = data.get(start..end).ok_or(io::ErrorKind::UnexpectedEof)?;
    buf.copy_from_slice(src);
    Ok(())
}

pub(crate) fn write_to(data: &mut Vec<u8>, offset: u64, buf: &[u8]) -> io::Result<()> {
    let start = usize::try_from(offset).map_err(|_| io::ErrorKind::InvalidInput)?;
    let end = start
        .checked_add(buf.len())
        .ok_or(io::ErrorKind::InvalidInput)?;
    if data.len() < end {
        data.resize(end, 0);
    }
    if let Some(dst) = data.get_mut(start..end) {
        dst.copy_from_slice(buf);
    }
    Ok(())
}

impl Storage for MemStorage {
    fn len(&self) -> io::Result<u64> {
        Ok(self.lock().len() as u64)
    }
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        read_from(&self.lock(), offset, buf)
    }
    fn write_at(&self, offset: u64, buf: &[u8]) -> io::Result<()> {
        write_to(&mut self.lock(), offset, buf)
    }
    fn set_len(&self, len: u64) -> io::Result<()> {
        self.lock().resize(len as usize, 0);
        Ok(())
    }
    fn sync(&self) -> io::Result<()> {
        Ok(())
    }
}
