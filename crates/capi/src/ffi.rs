//! The boundary with C: error reporting (status codes plus a per-thread message), panics
//! caught, and the caller's pointers checked (null, alignment, size) before they become
//! slices. The one place with `unsafe` in this crate.

use crate::tersedb_status::{self, *};
use std::cell::RefCell;
use std::ffi::{c_char, c_void, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// An error on its way to C: a status code and a message.
#[derive(Debug)]
pub struct Fail {
    pub code: tersedb_status,
    pub msg: String,
}

pub type Res<T> = Result<T, Fail>;

pub fn fail(code: tersedb_status, msg: impl Into<String>) -> Fail {
    Fail {
        code,
        msg: msg.into(),
    }
}

pub fn inval(msg: impl Into<String>) -> Fail {
    fail(TERSEDB_EINVAL, msg)
}

impl From<tersedb::Error> for Fail {
    fn from(e: tersedb::Error) -> Fail {
        use tersedb::Error as E;
        let code = match &e {
            E::Io(_) => TERSEDB_EIO,
            E::Corrupted { .. } => TERSEDB_ECORRUPTED,
            E::BadFormat(_) => TERSEDB_EBADFORMAT,
            E::PreviousIo => TERSEDB_EPREVIOUSIO,
            E::Locked { .. } => TERSEDB_ELOCKED,
            E::ReadOnly => TERSEDB_EREADONLY,
            E::WriteTxnActive => TERSEDB_EWRITETXNACTIVE,
            E::DbNotFound(_) => TERSEDB_EDBNOTFOUND,
            E::DbExists(_) => TERSEDB_EDBEXISTS,
            E::ConfigMismatch { .. } => TERSEDB_ECONFIGMISMATCH,
            E::DuplicateKey { .. } | E::KeyExists => TERSEDB_EKEYEXISTS,
            E::InvalidKey(_) => TERSEDB_EINVALIDKEY,
            E::InvalidRecord(_) => TERSEDB_EINVALIDRECORD,
            E::InvalidArgument(_) => TERSEDB_EINVAL,
            E::DiskFull => TERSEDB_EDISKFULL,
            E::Query(_) => TERSEDB_EQUERY,
            _ => TERSEDB_EIO,
        };
        fail(code, e.to_string())
    }
}

thread_local! {
    static LAST: RefCell<CString> = RefCell::new(CString::default());
}

fn set_last(msg: &str) {
    let c = CString::new(msg.replace('\0', " ")).unwrap_or_default();
    LAST.with(|l| *l.borrow_mut() = c);
}

pub fn last_error_ptr() -> *const c_char {
    // The CString lives in this thread's slot until the next error replaces it.
    LAST.with(|l| l.borrow().as_ptr())
}

/// Runs the body of an exported function: its error becomes the return code and this
/// thread's message; a panic becomes `TERSEDB_EPANIC`.
pub fn run(f: impl FnOnce() -> Res<tersedb_status>) -> tersedb_status {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => {
            set_last(&e.msg);
            e.code
        }
        Err(p) => {
            let what = p
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            set_last(&format!("internal error (a bug in tersedb): {what}"));
            TERSEDB_EPANIC
        }
    }
}

fn check_ptr<T>(p: *const T, n: usize, what: &str) -> Res<()> {
    if p.is_null() {
        return Err(inval(format!("{what} is NULL")));
    }
    if !(p as usize).is_multiple_of(std::mem::align_of::<T>()) {
        return Err(inval(format!(
            "{what} is not aligned to {} bytes",
            std::mem::align_of::<T>()
        )));
    }
    if n.checked_mul(std::mem::size_of::<T>())
        .is_none_or(|b| b > isize::MAX as usize)
    {
        return Err(inval(format!("{what}: {n} items is too many")));
    }
    Ok(())
}

/// `n` items at `p` (any pointer, even NULL, when `n == 0`).
///
/// # Safety
/// When `n > 0` and `p` is not NULL, `p` must point to `n` readable `T`s that nothing writes
/// during the call.
pub unsafe fn slice<'a, T>(p: *const T, n: usize, what: &str) -> Res<&'a [T]> {
    if n == 0 {
        return Ok(&[]);
    }
    check_ptr(p, n, what)?;
    // SAFETY: `p` is non-null, aligned, and the size fits isize (checked above); the caller
    // guarantees `n` readable items.
    Ok(unsafe { std::slice::from_raw_parts(p, n) })
}

/// `n` writable items at `p`.
///
/// # Safety
/// When `n > 0` and `p` is not NULL, `p` must point to `n` writable `T`s that nothing else
/// reads or writes during the call.
pub unsafe fn slice_mut<'a, T>(p: *mut T, n: usize, what: &str) -> Res<&'a mut [T]> {
    if n == 0 {
        return Ok(&mut []);
    }
    check_ptr(p, n, what)?;
    // SAFETY: as in `slice`, and the caller guarantees exclusive access.
    Ok(unsafe { std::slice::from_raw_parts_mut(p, n) })
}

/// `len` bytes at `p` (a key or a value).
///
/// # Safety
/// As [`slice`].
pub unsafe fn bytes<'a>(p: *const c_void, len: usize, what: &str) -> Res<&'a [u8]> {
    // SAFETY: forwarded contract.
    unsafe { slice(p.cast::<u8>(), len, what) }
}

/// The single output object at `p`.
///
/// # Safety
/// If not NULL, `p` must point to a writable `T`.
pub unsafe fn out<'a, T>(p: *mut T, what: &str) -> Res<&'a mut T> {
    check_ptr(p, 1, what)?;
    // SAFETY: non-null and aligned (checked); the caller guarantees it is writable.
    Ok(unsafe { &mut *p })
}

/// A NUL-terminated UTF-8 string.
///
/// # Safety
/// If not NULL, `p` must point to a NUL-terminated string.
pub unsafe fn string<'a>(p: *const c_char, what: &str) -> Res<&'a str> {
    if p.is_null() {
        return Err(inval(format!("{what} is NULL")));
    }
    // SAFETY: non-null; the caller guarantees NUL termination.
    let c = unsafe { CStr::from_ptr(p) };
    c.to_str()
        .map_err(|_| inval(format!("{what} is not valid UTF-8")))
}

/// Fails unless `len` (the length output of a copy-out call) is usable; checked before the
/// lookup so a bad call fails the same way whether or not the key exists.
pub fn need_len(len: *mut usize) -> Res<()> {
    check_ptr(len, 1, "len")
}

/// Copies `src` into the caller's buffer `(buf, cap)` and stores its length in `*len`;
/// `TERSEDB_EBUFFER` (with `*len` = the length needed) when it does not fit.
///
/// # Safety
/// `buf` must be NULL or point to `cap` writable bytes; `len` NULL or writable.
pub unsafe fn copy_out(src: &[u8], buf: *mut c_void, cap: usize, len: *mut usize) -> Res<()> {
    // SAFETY: forwarded contract.
    let len = unsafe { out(len, "len") }?;
    *len = src.len();
    if src.len() > cap {
        return Err(fail(
            TERSEDB_EBUFFER,
            format!("buffer of {cap} bytes is too small for {} bytes", src.len()),
        ));
    }
    // SAFETY: forwarded contract (cap >= src.len()).
    let dst = unsafe { slice_mut(buf.cast::<u8>(), src.len(), "buf") }?;
    dst.copy_from_slice(src);
    Ok(())
}
