//! Conversions between Python objects and the engine's keys and records: numpy arrays in (borrowed
//! when contiguous, checked for dtype and shape), numpy arrays out (the Rust `Vec` handed over to
//! numpy without a copy), and single keys and values.

use crate::config::{KeyKind, RecKind};
use numpy::{
    Element, PyArray1, PyArrayDescrMethods, PyArrayMethods, PyReadonlyArray1, PyUntypedArray,
    PyUntypedArrayMethods,
};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList};
use tersedb::KeyBuf;

/// A one-dimensional numpy array of `T`: borrowed when contiguous, else copied once.
pub enum Arr<'py, T: Element> {
    Borrowed(PyReadonlyArray1<'py, T>),
    Owned(Vec<T>),
}

impl<T: Element> Arr<'_, T> {
    pub fn slice(&self) -> &[T] {
        match self {
            // Only contiguous arrays are kept borrowed (checked in `array`).
            Arr::Borrowed(ro) => ro.as_slice().unwrap_or(&[]),
            Arr::Owned(v) => v,
        }
    }
}

fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "?".into())
}

/// `obj` as a one-dimensional array of `T` (`want` is numpy's name of `T`); a wrong type or
/// dtype is a `TypeError`, a wrong shape a `ValueError`.
pub fn array<'py, T: Element + Copy>(
    obj: &Bound<'py, PyAny>,
    what: &str,
    want: &str,
) -> PyResult<Arr<'py, T>> {
    let py = obj.py();
    let arr = obj.cast::<PyUntypedArray>().map_err(|_| {
        PyTypeError::new_err(format!(
            "{what} must be a numpy array of {want}, not {}",
            type_name(obj)
        ))
    })?;
    if arr.ndim() != 1 {
        return Err(PyValueError::new_err(format!(
            "{what} must be a one-dimensional array, not of shape {:?}",
            arr.shape()
        )));
    }
    let dt = arr.dtype();
    if !dt.is_equiv_to(&numpy::dtype::<T>(py)) {
        return Err(PyTypeError::new_err(format!(
            "{what} must have dtype {want}, not {dt}; convert with .astype(numpy.{want})"
        )));
    }
    let typed = arr
        .cast::<PyArray1<T>>()
        .map_err(|_| PyTypeError::new_err(format!("{what} must be a numpy array of {want}")))?;
    let ro = typed
        .try_readonly()
        .map_err(|e| PyValueError::new_err(format!("{what}: {e}")))?;
    if ro.as_slice().is_ok() {
        Ok(Arr::Borrowed(ro))
    } else {
        Ok(Arr::Owned(ro.as_array().to_vec()))
    }
}

/// Keys of a bulk call, checked against the database's key type.
pub enum Keys<'py> {
    U32(Arr<'py, u32>),
    U64(Arr<'py, u64>),
}

/// The keys as a slice, for work without the GIL.
#[derive(Clone, Copy)]
pub enum KeySlice<'a> {
    U32(&'a [u32]),
    U64(&'a [u64]),
}

impl<'py> Keys<'py> {
    pub fn new(kind: KeyKind, obj: &Bound<'py, PyAny>) -> PyResult<Self> {
        match kind {
            KeyKind::U32 => Ok(Keys::U32(array(obj, "keys", "uint32")?)),
            KeyKind::U64 => Ok(Keys::U64(array(obj, "keys", "uint64")?)),
            KeyKind::Bytes => Err(PyTypeError::new_err(
                "bulk calls need a database of u32 or u64 keys",
            )),
        }
    }
    pub fn slice(&self) -> KeySlice<'_> {
        match self {
            Keys::U32(a) => KeySlice::U32(a.slice()),
            Keys::U64(a) => KeySlice::U64(a.slice()),
        }
    }
}

impl KeySlice<'_> {
    pub fn len(&self) -> usize {
        match self {
            KeySlice::U32(s) => s.len(),
            KeySlice::U64(s) => s.len(),
        }
    }
    pub fn key(&self, i: usize) -> tersedb::Key<'static> {
        match self {
            KeySlice::U32(s) => tersedb::Key::U32(s[i]),
            KeySlice::U64(s) => tersedb::Key::U64(s[i]),
        }
    }
    pub fn sub(&self, r: std::ops::Range<usize>) -> Self {
        match self {
            KeySlice::U32(s) => KeySlice::U32(&s[r]),
            KeySlice::U64(s) => KeySlice::U64(&s[r]),
        }
    }
}

/// Values of `put_many`, checked against the database's record type.
pub enum Values<'py> {
    None,
    U32(Arr<'py, u32>),
    U64(Arr<'py, u64>),
    I64(Arr<'py, i64>),
    I32(Arr<'py, i32>),
    I16(Arr<'py, i16>),
    F64(Arr<'py, f64>),
    Bytes(Vec<Vec<u8>>),
}

/// The values as slices, for work without the GIL.
#[derive(Clone, Copy)]
pub enum ValSlice<'a> {
    None,
    U32(&'a [u32]),
    U64(&'a [u64]),
    I64(&'a [i64]),
    I32(&'a [i32]),
    I16(&'a [i16]),
    F64(&'a [f64]),
    Bytes(&'a [Vec<u8>]),
}

impl<'py> Values<'py> {
    pub fn new(kind: RecKind, obj: Option<&Bound<'py, PyAny>>, n: usize) -> PyResult<Self> {
        let obj = match (kind, obj) {
            (RecKind::None, None) => return Ok(Values::None),
            (RecKind::None, Some(o)) if o.is_none() => return Ok(Values::None),
            (RecKind::None, Some(_)) => {
                return Err(PyTypeError::new_err(
                    "the database has no records: pass values=None",
                ))
            }
            (_, None) => {
                return Err(PyTypeError::new_err(format!(
                    "the database has {} records: values are required",
                    kind.name().unwrap_or("no")
                )))
            }
            (_, Some(o)) => o,
        };
        let v = match kind {
            RecKind::None => Values::None,
            RecKind::U32 => Values::U32(array(obj, "values", "uint32")?),
            RecKind::U64 => Values::U64(array(obj, "values", "uint64")?),
            RecKind::I64 => Values::I64(array(obj, "values", "int64")?),
            RecKind::I32 => Values::I32(array(obj, "values", "int32")?),
            RecKind::I16 => Values::I16(array(obj, "values", "int16")?),
            RecKind::F64 => Values::F64(array(obj, "values", "float64")?),
            RecKind::Bytes => {
                if obj.is_instance_of::<PyBytes>() {
                    return Err(PyTypeError::new_err(
                        "values must be a sequence of bytes objects, not one bytes object",
                    ));
                }
                let mut out = Vec::with_capacity(n);
                for item in obj.try_iter().map_err(|_| {
                    PyTypeError::new_err(format!(
                        "values must be a sequence of bytes, not {}",
                        type_name(obj)
                    ))
                })? {
                    let item = item?;
                    let b = item.cast::<PyBytes>().map_err(|_| {
                        PyTypeError::new_err(format!(
                            "values must be bytes objects, found {}",
                            type_name(&item)
                        ))
                    })?;
                    out.push(b.as_bytes().to_vec());
                }
                Values::Bytes(out)
            }
        };
        let len = v.slice().len().unwrap_or(n);
        if len != n {
            return Err(PyValueError::new_err(format!(
                "values has {len} items, keys has {n}: they must match"
            )));
        }
        Ok(v)
    }
    pub fn slice(&self) -> ValSlice<'_> {
        match self {
            Values::None => ValSlice::None,
            Values::U32(a) => ValSlice::U32(a.slice()),
            Values::U64(a) => ValSlice::U64(a.slice()),
            Values::I64(a) => ValSlice::I64(a.slice()),
            Values::I32(a) => ValSlice::I32(a.slice()),
            Values::I16(a) => ValSlice::I16(a.slice()),
            Values::F64(a) => ValSlice::F64(a.slice()),
            Values::Bytes(v) => ValSlice::Bytes(v),
        }
    }
}

impl<'a> ValSlice<'a> {
    pub fn len(&self) -> Option<usize> {
        match self {
            ValSlice::None => None,
            ValSlice::U32(s) => Some(s.len()),
            ValSlice::U64(s) => Some(s.len()),
            ValSlice::I64(s) => Some(s.len()),
            ValSlice::I32(s) => Some(s.len()),
            ValSlice::I16(s) => Some(s.len()),
            ValSlice::F64(s) => Some(s.len()),
            ValSlice::Bytes(s) => Some(s.len()),
        }
    }
    /// The record bytes of value `i` (little-endian numbers), using `buf` for numbers.
    pub fn bytes<'b>(&'b self, i: usize, buf: &'b mut [u8; 8]) -> &'b [u8] {
        match self {
            ValSlice::None => &[],
            ValSlice::U32(s) => {
                buf[..4].copy_from_slice(&s[i].to_le_bytes());
                &buf[..4]
            }
            ValSlice::U64(s) => {
                *buf = s[i].to_le_bytes();
                &buf[..]
            }
            ValSlice::I64(s) => {
                *buf = s[i].to_le_bytes();
                &buf[..]
            }
            ValSlice::I32(s) => {
                buf[..4].copy_from_slice(&s[i].to_le_bytes());
                &buf[..4]
            }
            ValSlice::I16(s) => {
                buf[..2].copy_from_slice(&s[i].to_le_bytes());
                &buf[..2]
            }
            ValSlice::F64(s) => {
                *buf = s[i].to_le_bytes();
                &buf[..]
            }
            ValSlice::Bytes(s) => &s[i],
        }
    }
    pub fn sub(&self, r: std::ops::Range<usize>) -> Self {
        match self {
            ValSlice::None => ValSlice::None,
            ValSlice::U32(s) => ValSlice::U32(&s[r]),
            ValSlice::U64(s) => ValSlice::U64(&s[r]),
            ValSlice::I64(s) => ValSlice::I64(&s[r]),
            ValSlice::I32(s) => ValSlice::I32(&s[r]),
            ValSlice::I16(s) => ValSlice::I16(&s[r]),
            ValSlice::F64(s) => ValSlice::F64(&s[r]),
            ValSlice::Bytes(s) => ValSlice::Bytes(&s[r]),
        }
    }
}

/// Records collected without the GIL, turned into a numpy array (a list for bytes) after.
pub enum ValVec {
    None,
    U32(Vec<u32>),
    U64(Vec<u64>),
    I64(Vec<i64>),
    I32(Vec<i32>),
    I16(Vec<i16>),
    F64(Vec<f64>),
    Bytes(Vec<Option<Vec<u8>>>),
}

fn bad_record(len: usize, want: usize) -> tersedb::Error {
    tersedb::Error::InvalidRecord(format!(
        "stored record has {len} bytes, the database's numeric type needs {want}"
    ))
}

fn le<const N: usize>(raw: &[u8]) -> tersedb::Result<[u8; N]> {
    raw.try_into().map_err(|_| bad_record(raw.len(), N))
}

impl ValVec {
    pub fn new(kind: RecKind, cap: usize) -> ValVec {
        match kind {
            RecKind::None => ValVec::None,
            RecKind::U32 => ValVec::U32(Vec::with_capacity(cap)),
            RecKind::U64 => ValVec::U64(Vec::with_capacity(cap)),
            RecKind::I64 => ValVec::I64(Vec::with_capacity(cap)),
            RecKind::I32 => ValVec::I32(Vec::with_capacity(cap)),
            RecKind::I16 => ValVec::I16(Vec::with_capacity(cap)),
            RecKind::F64 => ValVec::F64(Vec::with_capacity(cap)),
            RecKind::Bytes => ValVec::Bytes(Vec::with_capacity(cap)),
        }
    }
    /// Appends a record (`None`: absent, stored as 0 in numeric arrays).
    pub fn push(&mut self, raw: Option<&[u8]>) -> tersedb::Result<()> {
        match self {
            ValVec::None => {}
            ValVec::U32(v) => v.push(raw.map(le::<4>).transpose()?.map_or(0, u32::from_le_bytes)),
            ValVec::U64(v) => v.push(raw.map(le::<8>).transpose()?.map_or(0, u64::from_le_bytes)),
            ValVec::I64(v) => v.push(raw.map(le::<8>).transpose()?.map_or(0, i64::from_le_bytes)),
            ValVec::I32(v) => v.push(raw.map(le::<4>).transpose()?.map_or(0, i32::from_le_bytes)),
            ValVec::I16(v) => v.push(raw.map(le::<2>).transpose()?.map_or(0, i16::from_le_bytes)),
            ValVec::F64(v) => v.push(
                raw.map(le::<8>)
                    .transpose()?
                    .map_or(0.0, f64::from_le_bytes),
            ),
            ValVec::Bytes(v) => v.push(raw.map(<[u8]>::to_vec)),
        }
        Ok(())
    }
    /// A numpy array (the Vec handed over, no copy), a list of bytes, or None.
    pub fn into_py(self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        Ok(match self {
            ValVec::None => py.None(),
            ValVec::U32(v) => PyArray1::from_vec(py, v).into_any().unbind(),
            ValVec::U64(v) => PyArray1::from_vec(py, v).into_any().unbind(),
            ValVec::I64(v) => PyArray1::from_vec(py, v).into_any().unbind(),
            ValVec::I32(v) => PyArray1::from_vec(py, v).into_any().unbind(),
            ValVec::I16(v) => PyArray1::from_vec(py, v).into_any().unbind(),
            ValVec::F64(v) => PyArray1::from_vec(py, v).into_any().unbind(),
            ValVec::Bytes(v) => {
                let items = v.into_iter().map(|b| match b {
                    Some(b) => PyBytes::new(py, &b).into_any(),
                    None => py.None().into_bound(py),
                });
                PyList::new(py, items)?.into_any().unbind()
            }
        })
    }
}

/// A single key as the database's key type wants it.
pub fn key(kind: KeyKind, obj: &Bound<'_, PyAny>) -> PyResult<KeyBuf> {
    let int = |max: u64| -> PyResult<u64> {
        // Python ints and numpy integer scalars (through __index__); bool is no key.
        if obj.is_instance_of::<pyo3::types::PyBool>() || !obj.hasattr("__index__")? {
            return Err(PyTypeError::new_err(format!(
                "key must be an int, not {}",
                type_name(obj)
            )));
        }
        let v = obj.call_method0("__index__")?;
        v.extract::<u64>()
            .ok()
            .filter(|v| *v <= max)
            .ok_or_else(|| PyValueError::new_err(format!("key {v} is out of range 0..={max}")))
    };
    Ok(match kind {
        KeyKind::U32 => KeyBuf::U32(int(u32::MAX as u64)? as u32),
        KeyKind::U64 => KeyBuf::U64(int(u64::MAX)?),
        KeyKind::Bytes => {
            let b = obj.cast::<PyBytes>().map_err(|_| {
                PyTypeError::new_err(format!("key must be bytes, not {}", type_name(obj)))
            })?;
            KeyBuf::Bytes(b.as_bytes().to_vec())
        }
    })
}

/// A single value as the database's record type wants it.
pub fn value(kind: RecKind, obj: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<u8>> {
    let obj = match (kind, obj) {
        (RecKind::None, None) => return Ok(Vec::new()),
        (RecKind::None, Some(o)) if o.is_none() => return Ok(Vec::new()),
        (RecKind::None, Some(_)) => {
            return Err(PyTypeError::new_err(
                "the database has no records: pass no value",
            ))
        }
        (k, None) => {
            return Err(PyTypeError::new_err(format!(
                "the database has {} records: a value is required",
                k.name().unwrap_or("no")
            )))
        }
        (_, Some(o)) => o,
    };
    let range = |e: PyErr, t: &str| -> PyErr {
        if e.is_instance_of::<pyo3::exceptions::PyOverflowError>(obj.py()) {
            PyValueError::new_err(format!("value {obj} does not fit {t}"))
        } else {
            PyTypeError::new_err(format!("value must be {t}, not {}", type_name(obj)))
        }
    };
    Ok(match kind {
        RecKind::None => Vec::new(),
        RecKind::U32 => obj
            .extract::<u32>()
            .map_err(|e| range(e, "u32"))?
            .to_le_bytes()
            .to_vec(),
        RecKind::U64 => obj
            .extract::<u64>()
            .map_err(|e| range(e, "u64"))?
            .to_le_bytes()
            .to_vec(),
        RecKind::I64 => obj
            .extract::<i64>()
            .map_err(|e| range(e, "i64"))?
            .to_le_bytes()
            .to_vec(),
        RecKind::I32 => obj
            .extract::<i32>()
            .map_err(|e| range(e, "i32"))?
            .to_le_bytes()
            .to_vec(),
        RecKind::I16 => obj
            .extract::<i16>()
            .map_err(|e| range(e, "i16"))?
            .to_le_bytes()
            .to_vec(),
        RecKind::F64 => obj
            .extract::<f64>()
            .map_err(|e| range(e, "f64"))?
            .to_le_bytes()
            .to_vec(),
        RecKind::Bytes => obj
            .cast::<PyBytes>()
            .map_err(|_| {
                PyTypeError::new_err(format!("value must be bytes, not {}", type_name(obj)))
            })?
            .as_bytes()
            .to_vec(),
    })
}

/// A stored record as Python sees it (`None` for key-only databases: use `contains`).
pub fn value_to_py(py: Python<'_>, kind: RecKind, raw: &[u8]) -> PyResult<Py<PyAny>> {
    Ok(match kind {
        RecKind::None => py.None(),
        RecKind::U32 => u32::from_le_bytes(le(raw).map_err(crate::errors::to_py)?)
            .into_pyobject(py)?
            .into_any()
            .unbind(),
        RecKind::U64 => u64::from_le_bytes(le(raw).map_err(crate::errors::to_py)?)
            .into_pyobject(py)?
            .into_any()
            .unbind(),
        RecKind::I64 => i64::from_le_bytes(le(raw).map_err(crate::errors::to_py)?)
            .into_pyobject(py)?
            .into_any()
            .unbind(),
        RecKind::I32 => i32::from_le_bytes(le(raw).map_err(crate::errors::to_py)?)
            .into_pyobject(py)?
            .into_any()
            .unbind(),
        RecKind::I16 => i16::from_le_bytes(le(raw).map_err(crate::errors::to_py)?)
            .into_pyobject(py)?
            .into_any()
            .unbind(),
        RecKind::F64 => f64::from_le_bytes(le(raw).map_err(crate::errors::to_py)?)
            .into_pyobject(py)?
            .into_any()
            .unbind(),
        RecKind::Bytes => PyBytes::new(py, raw).into_any().unbind(),
    })
}
