//! The text format of `tersedb import`, `erase` and `export`: one entry per line, `key` or
//! `key<TAB>value`. Integer keys are decimal; binary keys and values are the line's bytes as they
//! are, or hex-encoded with `--hex` (then an empty field is the empty string).

use std::fmt;

/// How keys are written in a line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyFormat {
    U32,
    U64,
    Binary,
}

/// One parsed line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub key: ParsedKey,
    pub value: Option<Vec<u8>>,
}

/// A key as parsed from a line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ParsedKey {
    U32(u32),
    U64(u64),
    Bytes(Vec<u8>),
}

/// A malformed line: its 1-based number and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LineError {
    pub line: u64,
    pub what: String,
}

impl fmt::Display for LineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.what)
    }
}

/// Decodes lowercase or uppercase hex.
pub fn from_hex(s: &[u8]) -> Result<Vec<u8>, String> {
    if s.len() % 2 != 0 {
        return Err("hex string of odd length".into());
    }
    let nib = |c: u8| -> Result<u8, String> {
        match c {
            b'0'..=b'9' => Ok(c - b'0'),
            b'a'..=b'f' => Ok(c - b'a' + 10),
            b'A'..=b'F' => Ok(c - b'A' + 10),
            _ => Err(format!("invalid hex digit {:?}", c as char)),
        }
    };
    s.chunks_exact(2)
        .map(|p| Ok(nib(p[0])? << 4 | nib(p[1])?))
        .collect()
}

/// Encodes as lowercase hex.
pub fn to_hex(b: &[u8]) -> String {
    const D: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(2 * b.len());
    for &x in b {
        s.push(D[(x >> 4) as usize] as char);
        s.push(D[(x & 15) as usize] as char);
    }
    s
}

/// Parses one line (without its terminating newline; a trailing `\r` is removed for integer keys
/// and hex fields). `with_value`: whether a value field may follow a TAB.
pub fn parse_line(
    line_no: u64,
    line: &[u8],
    keys: KeyFormat,
    hex: bool,
) -> Result<Entry, LineError> {
    let err = |what: String| LineError {
        line: line_no,
        what,
    };
    let (k, v) = match line.iter().position(|&c| c == b'\t') {
        Some(t) => (&line[..t], Some(&line[t + 1..])),
        None => (line, None),
    };
    let trim_cr = |s: &[u8]| -> Vec<u8> { s.strip_suffix(b"\r").unwrap_or(s).to_vec() };
    let key = match keys {
        KeyFormat::U32 | KeyFormat::U64 => {
            let t = trim_cr(k);
            let s =
                std::str::from_utf8(&t).map_err(|_| err("key is not a decimal integer".into()))?;
            let s = s.trim();
            if s.is_empty() {
                return Err(err("empty key".into()));
            }
            if keys == KeyFormat::U32 {
                ParsedKey::U32(
                    s.parse()
                        .map_err(|_| err(format!("{s:?} is not a u32 key")))?,
                )
            } else {
                ParsedKey::U64(
                    s.parse()
                        .map_err(|_| err(format!("{s:?} is not a u64 key")))?,
                )
            }
        }
        KeyFormat::Binary => {
            if hex {
                ParsedKey::Bytes(from_hex(&trim_cr(k)).map_err(|e| err(format!("key: {e}")))?)
            } else {
                ParsedKey::Bytes(k.to_vec())
            }
        }
    };
    let value = match v {
        None => None,
        Some(v) if hex => Some(from_hex(&trim_cr(v)).map_err(|e| err(format!("value: {e}")))?),
        Some(v) => Some(v.to_vec()),
    };
    Ok(Entry { key, value })
}

/// Formats a key and optional value as one line (without newline), the inverse of [`parse_line`].
pub fn format_line(key: &ParsedKey, value: Option<&[u8]>, hex: bool) -> Vec<u8> {
    let mut out = match key {
        ParsedKey::U32(k) => k.to_string().into_bytes(),
        ParsedKey::U64(k) => k.to_string().into_bytes(),
        ParsedKey::Bytes(b) if hex => to_hex(b).into_bytes(),
        ParsedKey::Bytes(b) => b.clone(),
    };
    if let Some(v) = value {
        out.push(b'\t');
        if hex {
            out.extend_from_slice(to_hex(v).as_bytes());
        } else {
            out.extend_from_slice(v);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_and_values() {
        let e = parse_line(1, b"42", KeyFormat::U32, false).unwrap();
        assert_eq!(
            e,
            Entry {
                key: ParsedKey::U32(42),
                value: None
            }
        );
        let e = parse_line(1, b"42\thello\r", KeyFormat::U64, false).unwrap();
        assert_eq!(e.key, ParsedKey::U64(42));
        assert_eq!(e.value.as_deref(), Some(&b"hello\r"[..]));
        let e = parse_line(1, b"7\t6869\r", KeyFormat::U32, true).unwrap();
        assert_eq!(e.value.as_deref(), Some(&b"hi"[..]));
    }

    #[test]
    fn errors_name_the_line() {
        let e = parse_line(17, b"4294967296", KeyFormat::U32, false).unwrap_err();
        assert_eq!(e.line, 17);
        assert!(e.to_string().starts_with("line 17:"), "{e}");
        assert!(parse_line(3, b"", KeyFormat::U32, false).is_err());
        assert!(parse_line(3, b"-1", KeyFormat::U64, false).is_err());
        assert!(parse_line(3, b"zz", KeyFormat::Binary, true).is_err());
        assert!(parse_line(3, b"abc", KeyFormat::Binary, true).is_err());
    }

    #[test]
    fn binary_round_trip() {
        let keys: Vec<Vec<u8>> = vec![vec![], vec![0], vec![0xff, 0x00, 0x80], b"plain".to_vec()];
        for k in keys {
            for v in [None, Some(vec![1u8, 2, 255])] {
                let key = ParsedKey::Bytes(k.clone());
                let line = format_line(&key, v.as_deref(), true);
                let back = parse_line(1, &line, KeyFormat::Binary, true).unwrap();
                assert_eq!(back, Entry { key, value: v });
            }
        }
        assert_eq!(to_hex(&[0xab, 0x01]), "ab01");
        assert_eq!(from_hex(b"AB01").unwrap(), vec![0xab, 0x01]);
    }
}
