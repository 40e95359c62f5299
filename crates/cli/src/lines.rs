//! The text format of `tersedb import`, `erase` and `export`: one entry per line, `key` or
//! `key<TAB>value`. Integer keys are decimal; binary keys and values are the line's bytes as they
//! are, or hex-encoded with `--hex` (then an empty field is the empty string).
//!
//! Import also reads `key,value` (CSV, RFC 4180 quotes) and `key value` (whitespace-separated,
//! integer keys) lines, see [`Delim`]; with a TAB the value is the rest of the line, as export
//! writes it. Files of more columns name the key and value columns ([`ColumnSpec`]: by 1-based
//! position, or by header name); then every delimiter, TAB included, separates fields.

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

/// What separates a key from its value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Delim {
    /// The first TAB; the value is the rest of the line (the export format).
    Tab,
    /// A character such as `,` or `;`, with CSV quoting (`"a,b"`, `""` for a quote).
    Char(u8),
    /// Runs of spaces and TABs; leading and trailing ones ignored.
    Whitespace,
}

impl Delim {
    /// `tab`, `space` (whitespace), `,` or any one ASCII character.
    pub fn parse(s: &str) -> Result<Delim, String> {
        Ok(match s {
            "tab" | "\\t" | "\t" => Delim::Tab,
            "space" | "whitespace" | " " => Delim::Whitespace,
            "comma" => Delim::Char(b','),
            s if s.len() == 1 && s.is_ascii() => Delim::Char(s.as_bytes()[0]),
            _ => {
                return Err(format!(
                    "--delimiter takes tab, space, comma or one ASCII character, not {s:?}"
                ))
            }
        })
    }

    /// The delimiter of a data line: a TAB, else a comma, else (integer keys) whitespace
    /// between two fields, else TAB (a line of keys alone).
    pub fn detect(line: &[u8], keys: KeyFormat) -> Delim {
        if line.contains(&b'\t') {
            Delim::Tab
        } else if line.contains(&b',') {
            Delim::Char(b',')
        } else if keys != KeyFormat::Binary && line.trim_ascii().contains(&b' ') {
            Delim::Whitespace
        } else {
            Delim::Tab
        }
    }

    pub fn describe(self) -> String {
        match self {
            Delim::Tab => "TAB".into(),
            Delim::Whitespace => "whitespace".into(),
            Delim::Char(c) => format!("{:?}", c as char),
        }
    }
}

/// Splits a line into fields at `d` (not [`Delim::Tab`]); a trailing `\r` is dropped.
pub fn split_fields(line: &[u8], d: Delim) -> Result<Vec<Vec<u8>>, String> {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    match d {
        Delim::Tab => Ok(match line.iter().position(|&c| c == b'\t') {
            Some(t) => vec![line[..t].to_vec(), line[t + 1..].to_vec()],
            None => vec![line.to_vec()],
        }),
        Delim::Whitespace => Ok(line
            .split(|c| *c == b' ' || *c == b'\t')
            .filter(|f| !f.is_empty())
            .map(<[u8]>::to_vec)
            .collect()),
        Delim::Char(c) => {
            let mut out = Vec::new();
            let mut i = 0;
            loop {
                let mut f = Vec::new();
                if line.get(i) == Some(&b'"') {
                    i += 1;
                    loop {
                        match line.get(i) {
                            None => return Err("unterminated quoted field".into()),
                            Some(b'"') if line.get(i + 1) == Some(&b'"') => {
                                f.push(b'"');
                                i += 2;
                            }
                            Some(b'"') => {
                                i += 1;
                                break;
                            }
                            Some(&b) => {
                                f.push(b);
                                i += 1;
                            }
                        }
                    }
                    if i < line.len() && line[i] != c {
                        return Err("text after a closing quote".into());
                    }
                } else {
                    while i < line.len() && line[i] != c {
                        f.push(line[i]);
                        i += 1;
                    }
                }
                out.push(f);
                if i >= line.len() {
                    return Ok(out);
                }
                i += 1; // the delimiter
            }
        }
    }
}

/// A column named on the command line: a 1-based position (`3`) or a header name (`delay`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Col {
    /// 0-based.
    Pos(usize),
    Name(String),
}

impl Col {
    /// A positive integer is a position (from 1); anything else a header name.
    pub fn parse(opt: &str, s: &str) -> Result<Col, String> {
        match s.trim().parse::<u64>() {
            Ok(0) => Err(format!("{opt} 0: columns are numbered from 1")),
            Ok(n) => usize::try_from(n - 1)
                .map(Col::Pos)
                .map_err(|_| format!("{opt} {n}: no line has that many columns")),
            Err(_) if s.trim().is_empty() => Err(format!("{opt} needs a column number or name")),
            Err(_) => Ok(Col::Name(s.trim().to_string())),
        }
    }
}

/// `--key-column` / `--value-column` as given. Without a value column, the lines give keys only
/// (no value) once a key column is named; without a key column the key is the first field.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ColumnSpec {
    pub key: Option<Col>,
    pub value: Option<Col>,
}

impl ColumnSpec {
    /// Whether the default (key, then at most one value) is replaced.
    pub fn is_set(&self) -> bool {
        self.key.is_some() || self.value.is_some()
    }

    /// Whether a column is named (it needs the header line).
    pub fn by_name(&self) -> bool {
        [&self.key, &self.value]
            .iter()
            .any(|c| matches!(c, Some(Col::Name(_))))
    }

    /// The 0-based positions, names looked up in `header` (the header line's fields).
    pub fn resolve(&self, header: Option<&[Vec<u8>]>) -> Result<Columns, String> {
        let find = |opt: &str, c: &Col| -> Result<usize, String> {
            let name = match c {
                Col::Pos(i) => return Ok(*i),
                Col::Name(n) => n,
            };
            let Some(h) = header else {
                return Err(format!(
                    "{opt} {name:?} names a column: give --header (the first line holds the \
                     names) or the column's number (from 1)"
                ));
            };
            let names: Vec<String> = h
                .iter()
                .map(|f| String::from_utf8_lossy(f.trim_ascii()).into_owned())
                .collect();
            let hits: Vec<usize> = (0..names.len()).filter(|&i| names[i] == *name).collect();
            match hits[..] {
                [i] => Ok(i),
                [] => Err(format!(
                    "{opt} {name:?}: no such column in the header (its columns: {})",
                    names
                        .iter()
                        .map(|n| format!("{n:?}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )),
                _ => Err(format!(
                    "{opt} {name:?}: the header has {} columns of that name (columns {}); \
                     give the column's number",
                    hits.len(),
                    hits.iter()
                        .map(|i| (i + 1).to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                )),
            }
        };
        let key = match &self.key {
            Some(c) => find("--key-column", c)?,
            None => 0,
        };
        let value = match &self.value {
            Some(c) => Some(find("--value-column", c)?),
            None => None,
        };
        if value == Some(key) {
            return Err(format!(
                "--key-column and --value-column are both column {}",
                key + 1
            ));
        }
        Ok(Columns { key, value })
    }
}

/// The columns of the key and the value (0-based), resolved from a [`ColumnSpec`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Columns {
    pub key: usize,
    pub value: Option<usize>,
}

/// Splits a line of columns: as [`split_fields`], except that every TAB separates fields.
pub fn split_columns(line: &[u8], d: Delim) -> Result<Vec<Vec<u8>>, String> {
    match d {
        Delim::Tab => Ok(line
            .strip_suffix(b"\r")
            .unwrap_or(line)
            .split(|&c| c == b'\t')
            .map(<[u8]>::to_vec)
            .collect()),
        d => split_fields(line, d),
    }
}

/// Parses one data line with delimiter `d` into a key and an optional value. Integer keys may
/// be ISO 8601 timestamps with `ts`. Without `cols`, more than two fields is an error naming
/// the count; with `cols`, the key and value are taken from their columns (every TAB
/// separates fields), and a line too short for them is an error naming the count.
pub fn parse_delimited(
    line_no: u64,
    line: &[u8],
    keys: KeyFormat,
    d: Delim,
    hex: bool,
    ts: Option<crate::timestamps::Unit>,
    cols: Option<Columns>,
) -> Result<Entry, LineError> {
    if d == Delim::Tab && ts.is_none() && cols.is_none() {
        return parse_line(line_no, line, keys, hex);
    }
    let err = |what: String| LineError {
        line: line_no,
        what,
    };
    let mut fields = match cols {
        Some(_) => split_columns(line, d),
        None => split_fields(line, d),
    }
    .map_err(err)?;
    let (k, value) = match cols {
        None => {
            if fields.len() > 2 {
                return Err(err(format!(
                    "{} fields separated by {}; import takes a key and at most one value \
                     (choose columns with --key-column and --value-column)",
                    fields.len(),
                    d.describe()
                )));
            }
            let value = if fields.len() == 2 {
                fields.pop()
            } else {
                None
            };
            (fields.pop().unwrap_or_default(), value)
        }
        Some(c) => {
            let need = c.key.max(c.value.unwrap_or(0)) + 1;
            if fields.len() < need {
                let which = if c.value.is_some_and(|v| v > c.key) {
                    format!("--value-column {}", need)
                } else {
                    format!("--key-column {}", need)
                };
                return Err(err(format!(
                    "{} field{} separated by {}; {which} needs at least {need}",
                    fields.len(),
                    if fields.len() == 1 { "" } else { "s" },
                    d.describe()
                )));
            }
            let value = c.value.map(|v| std::mem::take(&mut fields[v]));
            (std::mem::take(&mut fields[c.key]), value)
        }
    };
    let key = match (keys, ts) {
        (KeyFormat::U32 | KeyFormat::U64, Some(unit)) => {
            let s = std::str::from_utf8(&k).map_err(|_| err("key is not text".into()))?;
            let v = crate::timestamps::parse(s, unit).map_err(err)?;
            match keys {
                KeyFormat::U32 => ParsedKey::U32(u32::try_from(v).map_err(|_| {
                    err(format!(
                        "{s:?} is {v}, beyond the u32 key range (use --key-type u64)"
                    ))
                })?),
                _ => ParsedKey::U64(v),
            }
        }
        _ => {
            let e = parse_line(line_no, &k, keys, hex)?;
            e.key
        }
    };
    let value = match value {
        Some(v) if hex => Some(from_hex(v.trim_ascii()).map_err(|e| err(format!("value: {e}")))?),
        v => v,
    };
    Ok(Entry { key, value })
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
    fn delimiters() {
        let csv = |l: &[u8]| split_fields(l, Delim::Char(b','));
        assert_eq!(csv(b"1,10\r").unwrap(), vec![b"1".to_vec(), b"10".to_vec()]);
        assert_eq!(
            csv(b"\"a,b\",\"x\"\"y\"").unwrap(),
            vec![b"a,b".to_vec(), b"x\"y".to_vec()]
        );
        assert_eq!(csv(b"1,").unwrap(), vec![b"1".to_vec(), vec![]]);
        assert!(csv(b"\"a").is_err());
        assert!(csv(b"\"a\"b,1").is_err());
        assert_eq!(
            split_fields(b"  1 \t 10  ", Delim::Whitespace).unwrap(),
            vec![b"1".to_vec(), b"10".to_vec()]
        );
        assert_eq!(Delim::detect(b"1,2", KeyFormat::U32), Delim::Char(b','));
        assert_eq!(Delim::detect(b"1 2", KeyFormat::U32), Delim::Whitespace);
        assert_eq!(Delim::detect(b"a b", KeyFormat::Binary), Delim::Tab);
        assert_eq!(Delim::detect(b"1\t2,3", KeyFormat::U32), Delim::Tab);
        let e = parse_delimited(
            4,
            b"1,2,3",
            KeyFormat::U32,
            Delim::Char(b','),
            false,
            None,
            None,
        )
        .unwrap_err();
        assert!(e.to_string().starts_with("line 4: 3 fields"), "{e}");
        let e = parse_delimited(
            1,
            b"2024-01-01T00:00:01Z,5",
            KeyFormat::U64,
            Delim::Char(b','),
            false,
            Some(crate::timestamps::Unit::S),
            None,
        )
        .unwrap();
        assert_eq!(e.key, ParsedKey::U64(1704067201));
        assert_eq!(e.value.as_deref(), Some(&b"5"[..]));
    }

    #[test]
    fn chosen_columns() {
        let spec = |k: &str, v: Option<&str>| ColumnSpec {
            key: Some(Col::parse("--key-column", k).unwrap()),
            value: v.map(|v| Col::parse("--value-column", v).unwrap()),
        };
        let header: Vec<Vec<u8>> = vec![b"station".to_vec(), b" time".to_vec(), b"delay".to_vec()];
        let c = spec("time", Some("3")).resolve(Some(&header)).unwrap();
        assert_eq!(
            c,
            Columns {
                key: 1,
                value: Some(2)
            }
        );
        let parse = |line: &[u8], d: Delim, c: Columns| {
            parse_delimited(9, line, KeyFormat::U64, d, false, None, Some(c))
        };
        let e = parse(b"a,17,5,x", Delim::Char(b','), c).unwrap();
        assert_eq!((e.key, e.value), (ParsedKey::U64(17), Some(b"5".to_vec())));
        let e = parse(b"a\t17\t5\r", Delim::Tab, c).unwrap();
        assert_eq!((e.key, e.value), (ParsedKey::U64(17), Some(b"5".to_vec())));
        let e = parse(
            b" a  17 ",
            Delim::Whitespace,
            Columns {
                key: 1,
                value: None,
            },
        )
        .unwrap();
        assert_eq!((e.key, e.value), (ParsedKey::U64(17), None));
        let e = parse(b"a,17", Delim::Char(b','), c).unwrap_err();
        assert_eq!(
            e.to_string(),
            "line 9: 2 fields separated by ','; --value-column 3 needs at least 3"
        );
        let e = parse(
            b"a",
            Delim::Char(b','),
            Columns {
                key: 1,
                value: None,
            },
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "line 9: 1 field separated by ','; --key-column 2 needs at least 2"
        );
        // Names need the header; unknown, repeated and clashing columns are refused.
        assert!(spec("time", None)
            .resolve(None)
            .unwrap_err()
            .contains("--header"));
        let e = spec("tme", None).resolve(Some(&header)).unwrap_err();
        assert!(
            e.contains(r#"no such column in the header (its columns: "station", "time", "delay")"#),
            "{e}"
        );
        let twice: Vec<Vec<u8>> = vec![b"t".to_vec(), b"t".to_vec()];
        assert!(spec("t", None)
            .resolve(Some(&twice))
            .unwrap_err()
            .contains("columns 1, 2"));
        assert!(spec("2", Some("time"))
            .resolve(Some(&header))
            .unwrap_err()
            .contains("both column 2"));
        assert!(Col::parse("--key-column", "0")
            .unwrap_err()
            .contains("numbered from 1"));
        // Without a key column the key is the first field.
        let only_value = ColumnSpec {
            key: None,
            value: Some(Col::Pos(3)),
        };
        assert_eq!(
            only_value.resolve(None).unwrap(),
            Columns {
                key: 0,
                value: Some(3)
            }
        );
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
