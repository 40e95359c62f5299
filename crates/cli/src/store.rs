//! The store commands: `import`, `erase`, `export`, `get`, `drop`, `info`, `check`, `dump`.

use crate::lines::{self, Delim, KeyFormat, ParsedKey};
use crate::timestamps::{self, Unit};
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::Path;
use tersedb::{
    CodecId, Db, DbConfig, Durability, Env, EnvOptions, Key, KeyScheme, KeyType, RecordType,
    ValueType, WriteTxn,
};

/// Options shared by `import` and `erase`.
#[derive(Debug)]
pub struct LoadOptions {
    /// `None`: the file's only database.
    pub db: Option<String>,
    pub input: Option<String>,
    pub commit_every: Option<u64>,
    pub hex: bool,
    /// `None`: detected from the first data line.
    pub delimiter: Option<Delim>,
    /// Lines skipped before the data (`--skip N`, plus one for `--header`).
    pub skip: u64,
    /// The last skipped line is a header (`--header`): the names of `--key-column` and
    /// `--value-column`.
    pub header: bool,
    /// The key and value columns of lines with more fields (`--key-column`, `--value-column`).
    pub columns: lines::ColumnSpec,
    /// Integer keys written as ISO 8601 timestamps, stored in this unit.
    pub timestamps: Option<Unit>,
    /// A line without a value (empty or `NA`) for a numeric database is an error instead of
    /// being skipped.
    pub missing_error: bool,
}

/// The database a command works on: the one named, or the file's only one.
pub fn pick_db(file: &Path, names: &[String], given: Option<&str>) -> Result<String, String> {
    if let Some(n) = given {
        return Ok(n.to_string());
    }
    match names {
        [one] => Ok(one.clone()),
        [] => Err(format!(
            "{} has no database: name the one to create with --db NAME",
            file.display()
        )),
        many => Err(format!(
            "{} has {} databases ({}): choose one with --db NAME",
            file.display(),
            many.len(),
            many.iter()
                .map(|n| format!("{n:?}"))
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

/// A database that does not exist, with the closest existing name when one is close.
fn no_such_db(file: &Path, name: &str, names: &[String]) -> String {
    let close = names.iter().find(|n| {
        n.eq_ignore_ascii_case(name) || {
            let (a, b) = (n.as_bytes(), name.as_bytes());
            a.len().abs_diff(b.len()) <= 1
                && a.iter().zip(b).filter(|(x, y)| x != y).count() + a.len().abs_diff(b.len()) <= 2
        }
    });
    match close {
        Some(c) => format!(
            "{}: no database named {name:?} (did you mean {c:?}?)",
            file.display()
        ),
        None => format!(
            "{}: no database named {name:?} (the file has {})",
            file.display(),
            if names.is_empty() {
                "none".to_string()
            } else {
                names
                    .iter()
                    .map(|n| format!("{n:?}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        ),
    }
}

/// The names of a file's databases, from `list_dbs`.
fn db_names(dbs: tersedb::Result<Vec<(String, DbConfig)>>) -> Result<Vec<String>, String> {
    Ok(dbs.map_err(err)?.into_iter().map(|(n, _)| n).collect())
}

/// Opens the named (or only) database of a read transaction.
fn open_read_db(file: &Path, r: &tersedb::ReadTxn, given: Option<&str>) -> Result<Db, String> {
    let names = db_names(r.list_dbs())?;
    let name = pick_db(file, &names, given)?;
    r.open_db(&name).map_err(|e| match e {
        tersedb::Error::DbNotFound(_) => no_such_db(file, &name, &names),
        e => e.to_string(),
    })
}

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// An error opening `file`, naming the path once: the engine's errors that already name it
/// (`cannot open FILE: ...`, `FILE is a directory ...`, `FILE already exists`) as they are,
/// the others (`not a tersedb file`, `Locked`, a damaged meta page) after `FILE: `.
pub fn open_error(file: &Path, e: tersedb::Error) -> String {
    let p = file.display().to_string();
    let named = match &e {
        tersedb::Error::Io(io) => io.to_string().starts_with(&format!("cannot open {p}")),
        tersedb::Error::BadFormat(w) => w.starts_with(&format!("{p} is ")),
        tersedb::Error::InvalidArgument(w) => w.starts_with(&format!("{p} already exists")),
        _ => false,
    };
    if named {
        e.to_string()
    } else {
        format!("{p}: {e}")
    }
}

fn open_input(input: &Option<String>) -> Result<Box<dyn BufRead>, String> {
    match input.as_deref() {
        None | Some("-") => Ok(Box::new(BufReader::new(std::io::stdin()))),
        Some(p) => {
            let f = std::fs::File::open(p).map_err(|e| format!("{p}: {e}"))?;
            Ok(Box::new(BufReader::with_capacity(1 << 20, f)))
        }
    }
}

fn key_format(t: KeyType) -> KeyFormat {
    match t {
        KeyType::U32 => KeyFormat::U32,
        KeyType::U64 => KeyFormat::U64,
        KeyType::Binary(_) | KeyType::VarBinary => KeyFormat::Binary,
    }
}

fn as_key(k: &ParsedKey) -> Key<'_> {
    match k {
        ParsedKey::U32(v) => Key::U32(*v),
        ParsedKey::U64(v) => Key::U64(*v),
        ParsedKey::Bytes(b) => Key::Bytes(b),
    }
}

/// Lines or keys between progress updates (a bar update per entry would cost more than the
/// entry).
const PROGRESS_STEP: u64 = 4096;

/// Reads lines, calling `apply` on each parsed entry inside write transactions of
/// `commit_every` lines; `open` gives the database inside the first one (so that a database it
/// creates is committed with the first batch, or not at all). A bad line aborts its batch
/// (nothing of it is committed) and is reported with its number; earlier batches stay
/// committed. `committed` says whether any transaction was committed, on error too.
fn run_batches(
    env: &Env,
    opts: &LoadOptions,
    mut input: Box<dyn BufRead>,
    committed: &mut bool,
    open: impl FnOnce(&mut WriteTxn) -> Result<Db, String>,
    mut apply: impl FnMut(&mut WriteTxn, &Db, &lines::Entry) -> Result<(), String>,
) -> Result<Batches, String> {
    let every = opts.commit_every.unwrap_or(u64::MAX).max(1);
    let mut line_no = 0u64;
    let mut buf = Vec::new();
    let mut done = 0u64;
    let mut txn = env.begin_write().map_err(err)?;
    let db = open(&mut txn)?;
    let fmt = key_format(db.config().key_type);
    if opts.timestamps.is_some() && fmt == KeyFormat::Binary {
        return Err("--timestamps applies to u32 and u64 keys".into());
    }
    let mut delim = opts.delimiter;
    let mut header: Option<Vec<u8>> = None;
    let mut cols: Option<lines::Columns> = None;
    let mut blank = 0u64;
    let mut in_batch = 0u64;
    let mut kept = 0u64;
    let fail = |line_no: u64, e: String, kept: u64, committed: bool| {
        if committed {
            format!(
                "{e} (the {kept} lines before its batch are committed, nothing of the batch with this line)"
            )
        } else {
            format!("{e} (nothing was committed: line {line_no} is in the first batch)")
        }
    };
    // A bar on a terminal only; the callers print the one-line summary.
    let mut progress = crate::progress::Progress::new(0, "lines");
    loop {
        buf.clear();
        let n = input
            .read_until(b'\n', &mut buf)
            .map_err(|e| format!("reading input: {e}"))?;
        if n == 0 {
            break;
        }
        line_no += 1;
        if buf.last() == Some(&b'\n') {
            buf.pop();
        }
        if line_no <= opts.skip {
            if opts.header && line_no == opts.skip {
                header = Some(std::mem::take(&mut buf));
            }
            continue;
        }
        // Blank lines are no entries (an empty binary key is written with --hex as "").
        if fmt != KeyFormat::Binary && buf.iter().all(u8::is_ascii_whitespace) {
            blank += 1;
            continue;
        }
        let d = *delim.get_or_insert_with(|| Delim::detect(&buf, fmt));
        // Columns resolve on the first data line: header names split at its delimiter.
        if cols.is_none() && opts.columns.is_set() {
            let names = match &header {
                Some(h) if opts.columns.by_name() => Some(
                    lines::split_columns(h, d)
                        .map_err(|e| format!("header (line {}): {e}", opts.skip))?,
                ),
                _ => None,
            };
            cols = Some(opts.columns.resolve(names.as_deref())?);
        }
        let entry = lines::parse_delimited(line_no, &buf, fmt, d, opts.hex, opts.timestamps, cols)
            .map_err(|e| fail(line_no, e.to_string(), kept, *committed))?;
        apply(&mut txn, &db, &entry)
            .map_err(|e| fail(line_no, format!("line {line_no}: {e}"), kept, *committed))?;
        in_batch += 1;
        done += 1;
        if done % PROGRESS_STEP == 0 {
            progress.inc(PROGRESS_STEP);
        }
        if in_batch >= every {
            txn.commit().map_err(err)?;
            *committed = true;
            kept = done;
            txn = env.begin_write().map_err(err)?;
            in_batch = 0;
        }
    }
    // Names not yet checked (no data line): a header-only file with a misspelt name fails as
    // one with data would, instead of importing nothing.
    if cols.is_none() && opts.columns.by_name() {
        let Some(h) = &header else {
            return Err(format!(
                "--header: the input ended before its header line (line {})",
                opts.skip
            ));
        };
        let d = delim.unwrap_or_else(|| Delim::detect(h, fmt));
        let names =
            lines::split_columns(h, d).map_err(|e| format!("header (line {}): {e}", opts.skip))?;
        opts.columns.resolve(Some(&names))?;
    }
    progress.message("committing");
    txn.commit().map_err(err)?;
    *committed = true;
    progress.finish("");
    Ok(Batches {
        lines: done,
        blank,
        db: db.name().to_string(),
    })
}

/// What [`run_batches`] read.
struct Batches {
    /// Entries applied.
    lines: u64,
    /// Blank lines ignored.
    blank: u64,
    /// The database's name.
    db: String,
}

impl Batches {
    fn blank_note(&self) -> String {
        match self.blank {
            0 => String::new(),
            n => format!("; {n} blank lines ignored"),
        }
    }
}

/// The reader table beside a data file (`FILE-readers/`, docs/FORMAT.md), which the writer
/// creates on open.
fn readers_dir(file: &Path) -> std::path::PathBuf {
    let mut s = file.as_os_str().to_owned();
    s.push("-readers");
    s.into()
}

/// What a command found before it opened a file, to put back after a failure that committed
/// nothing.
struct Before {
    /// The file's length; `None`: absent.
    len: Option<u64>,
    /// Whether its reader table existed.
    readers: bool,
}

impl Before {
    fn of(file: &Path) -> Before {
        Before {
            len: std::fs::metadata(file).map(|m| m.len()).ok(),
            readers: readers_dir(file).exists(),
        }
    }

    /// Puts a file that the command found absent or empty back as it was: removed, or
    /// truncated to nothing; a reader table the open created is removed. A file that held an
    /// environment needs nothing: only commits write to it.
    fn restore(&self, file: &Path) {
        match self.len {
            None => {
                let _ = std::fs::remove_file(file);
            }
            Some(0) => {
                if let Ok(f) = std::fs::OpenOptions::new().write(true).open(file) {
                    let _ = f.set_len(0);
                }
            }
            Some(_) => {}
        }
        if !self.readers {
            // The open made it; a reader's slot (another process) in it keeps it.
            let dir = readers_dir(file);
            let _ = std::fs::remove_file(dir.join("writer"));
            let _ = std::fs::remove_dir(dir);
        }
    }
}

/// How `tersedb import` creates a database that does not exist yet.
#[derive(Clone, Debug)]
/// Each option is `None` when not given: for an existing file or database, a given option that
/// differs from what is stored is an error (never silently ignored).
pub struct NewDb {
    pub key_type: Option<String>,
    pub record_size: Option<u32>,
    /// Numeric record type (`u32`, `u64`, `i64`, `f64`): values are decimal numbers.
    pub record_type: Option<String>,
    pub page_size: Option<usize>,
    /// Key codec name; `None` = uncompressed.
    pub compression: Option<String>,
    pub block_size: Option<u16>,
    /// `--record-compression`: `Some(true)` for auto, `Some(false)` for none.
    pub record_compression: Option<bool>,
}

/// The page size of new files.
pub const DEFAULT_PAGE_SIZE: usize = 16384;

/// Parses a codec name (`none` = uncompressed).
pub fn parse_codec(name: &str) -> Result<Option<CodecId>, String> {
    if name == "none" {
        return Ok(None);
    }
    CodecId::from_name(name).map(Some).ok_or_else(|| {
        format!(
            "unknown codec {name:?} (none, {})",
            CodecId::ALL.map(|c| c.name()).join(", ")
        )
    })
}

/// Parses a byte-string key compression scheme name.
pub fn parse_scheme(name: &str) -> Result<KeyScheme, String> {
    KeyScheme::from_name(name).ok_or_else(|| {
        format!(
            "unknown key compression {name:?} for binary keys ({})",
            KeyScheme::ALL.map(|s| s.name()).join(", ")
        )
    })
}

/// `tersedb import`. A failure that committed nothing leaves the file as it was: a database
/// the command would create is created in the first batch's transaction, and a file it
/// created is removed. With `--commit-every`, batches committed before a failure stay.
pub fn import(
    file: &Path,
    opts: &LoadOptions,
    new_db: &NewDb,
    durability: Durability,
) -> Result<(), String> {
    let before = Before::of(file);
    let mut committed = false;
    let r = import_into(file, opts, new_db, durability, &mut committed);
    if r.is_err() && !committed {
        before.restore(file);
    }
    r
}

fn import_into(
    file: &Path,
    opts: &LoadOptions,
    new_db: &NewDb,
    durability: Durability,
    committed: &mut bool,
) -> Result<(), String> {
    let record_size = new_db.record_size;
    // An existing file keeps its page size: a different --page-size is refused.
    let exists = std::fs::metadata(file).is_ok_and(|m| m.len() > 0);
    if let (true, Some(ps)) = (exists, new_db.page_size) {
        let have = Env::open_read_only(file, &EnvOptions::default())
            .map_err(|e| open_error(file, e))?
            .page_size();
        if have != ps {
            return Err(format!(
                "--page-size {ps} applies to a new file: {} exists with {have}-byte pages",
                file.display()
            ));
        }
    }
    let page_size = new_db.page_size.unwrap_or(DEFAULT_PAGE_SIZE);
    let key_type = match new_db.key_type.as_deref().unwrap_or("u32") {
        "u32" => KeyType::U32,
        "u64" => KeyType::U64,
        "binary" => KeyType::VarBinary,
        other => return Err(format!("unknown key type {other:?} (u32, u64, binary)")),
    };
    // --compression names a key codec for integer keys, a key scheme for byte strings.
    let (codec, scheme) = match (&new_db.compression, key_type) {
        (Some(c), KeyType::VarBinary) => (None, Some(parse_scheme(c)?)),
        (Some(c), _) if c == "auto" => (None, None),
        (Some(c), _) => (parse_codec(c)?, None),
        (None, _) => (None, None),
    };
    let auto = new_db.compression.as_deref() == Some("auto") && key_type != KeyType::VarBinary;

    let value_type = match new_db.record_type.as_deref() {
        None => ValueType::Bytes,
        Some(t) => match ValueType::from_name(t) {
            Some(v) if v != ValueType::Bytes => v,
            _ => {
                return Err(format!(
                    "unknown record type {t:?} (u32, u64, i16, i32, i64, f64)"
                ))
            }
        },
    };
    let env_opts = EnvOptions::default()
        .page_size(page_size)
        .durability(durability);
    let mut input = open_input(&opts.input)?;
    let env = Env::open_or_create(file, &env_opts).map_err(|e| open_error(file, e))?;
    // A new integer-key database compresses its keys with a codec chosen per block unless
    // --compression says otherwise (`none` stores them raw); pages under 1 KiB are too small.
    let auto_new = auto
        || (new_db.compression.is_none()
            && key_type != KeyType::VarBinary
            && env.page_size() >= 1024);
    // Without --record-size, a new database stores variable-size records when the first line has
    // a value, and no records otherwise.
    let first_has_value = input
        .fill_buf()
        .map_err(err)?
        .split(|&c| c == b'\n')
        .next()
        .is_some_and(|l| l.contains(&b'\t'));
    let record_type = match (value_type.width(), record_size) {
        (Some(w), _) => RecordType::Fixed(w),
        (None, Some(n)) => RecordType::Fixed(n),
        (None, None) if first_has_value => RecordType::Variable,
        (None, None) => RecordType::None,
    };
    let open = |w: &mut WriteTxn| -> Result<Db, String> {
        let names = db_names(w.list_dbs())?;
        let name = pick_db(file, &names, opts.db.as_deref())?;
        Ok(match w.open_db(&name) {
            Ok(db) => {
                let c = db.config();
                // Without --key-type the database's own is used.
                if new_db.key_type.is_some() && c.key_type != key_type {
                    return Err(format!(
                        "database {name:?} exists with key type {}, not {}",
                        crate::names::key_type(c.key_type),
                        crate::names::key_type(key_type)
                    ));
                }
                if let Some(n) = record_size.filter(|&n| c.record_type != RecordType::Fixed(n)) {
                    return Err(format!(
                        "database {name:?} exists with {}, not {n}-byte records",
                        crate::names::record_type(c.record_type)
                    ));
                }
                if let Some(b) = new_db.block_size.filter(|&b| b != c.block_size) {
                    return Err(format!(
                        "database {name:?} exists with {} keys per block, not {b}",
                        c.block_size
                    ));
                }
                if new_db.record_type.is_some() && db.value_type() != value_type {
                    return Err(format!(
                        "database {:?} exists with record type {}, not {}",
                        name,
                        db.value_type().name(),
                        value_type.name()
                    ));
                }
                if let Some(rc) = new_db
                    .record_compression
                    .filter(|&rc| rc != c.compress_records)
                {
                    return Err(format!(
                        "database {name:?} exists with record compression {}, not {}",
                        crate::names::record_compression(&c),
                        if rc { "auto" } else { "none" }
                    ));
                }
                if let Some(sc) = scheme.filter(|&sc| db.config().key_scheme != sc) {
                    return Err(format!(
                        "database {:?} exists with key compression {}, not {}",
                        name,
                        db.config().key_scheme.name(),
                        sc.name()
                    ));
                }
                if new_db.compression.is_some()
                    && scheme.is_none()
                    && (db.config().key_codec != codec || db.config().auto_codec != auto)
                {
                    return Err(format!(
                        "database {:?} exists with key codec {}, not {}",
                        name,
                        crate::names::compression(&db.config()),
                        if auto { "auto" } else { codec_name(codec) }
                    ));
                }
                db
            }
            Err(tersedb::Error::DbNotFound(_)) => w
                .create_db(&name, {
                    let c = DbConfig::raw(key_type, record_type)
                        .with_codec(codec)
                        .with_auto_codec(auto_new)
                        .with_block_size(new_db.block_size.unwrap_or(0))
                        .with_value_type(value_type)
                        .with_compressed_records(
                            new_db
                                .record_compression
                                .unwrap_or(matches!(record_type, RecordType::Fixed(1..=8))),
                        );
                    match scheme {
                        Some(sc) => c.with_key_scheme(sc),
                        None => c,
                    }
                })
                .map_err(err)?,
            Err(e) => return Err(e.to_string()),
        })
    };
    let t = std::time::Instant::now();
    let mut inserted = 0u64;
    let mut no_value = 0u64;
    let mut num = Vec::new();
    let b = run_batches(&env, opts, input, committed, open, |w, db, e| {
        let (rt, vt) = (db.config().record_type, db.value_type());
        if let (Some(v), false) = (&e.value, vt == ValueType::Bytes) {
            let t = v.trim_ascii();
            let missing = t.is_empty()
                || t.eq_ignore_ascii_case(b"NA")
                || t.eq_ignore_ascii_case(b"N/A")
                || t.eq_ignore_ascii_case(b"null");
            if missing {
                if opts.missing_error {
                    return Err(format!(
                        "no value ({:?}) for a database of {} records (without --missing \
                         error such lines are skipped)",
                        String::from_utf8_lossy(t),
                        vt.name()
                    ));
                }
                no_value += 1;
                return Ok(());
            }
        }
        let value: &[u8] = match (&e.value, rt) {
            (Some(v), _) if vt != ValueType::Bytes && !opts.hex => {
                num = parse_number(v, vt)?;
                &num
            }
            (Some(_), RecordType::None) => {
                return Err(format!(
                    "database {:?} stores keys only, but the line has a value",
                    db.name()
                ))
            }
            (None, RecordType::Fixed(n)) if n > 0 => {
                return Err(format!("database {:?} needs a {n}-byte value", db.name()))
            }
            (Some(v), _) => v,
            (None, _) => &[],
        };
        if w.upsert(db, as_key(&e.key), value).map_err(err)? {
            inserted += 1;
        }
        Ok(())
    })?;
    let skipped = match no_value {
        0 => String::new(),
        n => format!("; {n} lines without a value (empty or NA) skipped"),
    };
    eprintln!(
        "imported {} lines into {:?} ({inserted} new keys, {} updated{skipped}{}) in {:.2} s",
        b.lines - no_value,
        b.db,
        b.lines - no_value - inserted,
        b.blank_note(),
        t.elapsed().as_secs_f64()
    );
    Ok(())
}

/// A decimal value of a numeric record type as its little-endian record bytes.
pub fn parse_number(v: &[u8], vt: ValueType) -> Result<Vec<u8>, String> {
    let s = std::str::from_utf8(v)
        .map_err(|_| "value is not a decimal number".to_string())?
        .trim();
    let bad = || format!("{s:?} is not a {} value", vt.name());
    // An integer that does not fit says the type's range rather than "not a number".
    let int = |min: i128, max: i128| -> Result<i128, String> {
        match s.parse::<i128>() {
            Ok(n) if (min..=max).contains(&n) => Ok(n),
            Ok(_) => Err(format!(
                "{s} is out of range for {} ({min}..={max})",
                vt.name()
            )),
            Err(_) => Err(bad()),
        }
    };
    Ok(match vt {
        ValueType::U32 => (int(0, u32::MAX.into())? as u32).to_le_bytes().to_vec(),
        ValueType::U64 => (int(0, u64::MAX.into())? as u64).to_le_bytes().to_vec(),
        ValueType::I64 => (int(i64::MIN.into(), i64::MAX.into())? as i64)
            .to_le_bytes()
            .to_vec(),
        ValueType::I32 => (int(i32::MIN.into(), i32::MAX.into())? as i32)
            .to_le_bytes()
            .to_vec(),
        ValueType::I16 => (int(i16::MIN.into(), i16::MAX.into())? as i16)
            .to_le_bytes()
            .to_vec(),
        ValueType::F64 => s.parse::<f64>().map_err(|_| bad())?.to_le_bytes().to_vec(),
        ValueType::Bytes => v.to_vec(),
    })
}

/// Record bytes of a numeric record type as decimal text (the inverse of [`parse_number`]);
/// `None` when the length does not match.
pub fn format_number(b: &[u8], vt: ValueType) -> Option<String> {
    Some(match vt {
        ValueType::U32 => u32::from_le_bytes(b.try_into().ok()?).to_string(),
        ValueType::U64 => u64::from_le_bytes(b.try_into().ok()?).to_string(),
        ValueType::I64 => i64::from_le_bytes(b.try_into().ok()?).to_string(),
        ValueType::I32 => i32::from_le_bytes(b.try_into().ok()?).to_string(),
        ValueType::I16 => i16::from_le_bytes(b.try_into().ok()?).to_string(),
        ValueType::F64 => f64::from_le_bytes(b.try_into().ok()?).to_string(),
        ValueType::Bytes => return None,
    })
}

/// `tersedb erase`. A failure in the first batch leaves the file as it was.
pub fn erase(file: &Path, opts: &LoadOptions) -> Result<(), String> {
    let input = open_input(&opts.input)?;
    let env = Env::open(file, &EnvOptions::default()).map_err(|e| open_error(file, e))?;
    let mut absent = 0u64;
    let mut committed = false;
    let open = |w: &mut WriteTxn| {
        let names = db_names(w.list_dbs())?;
        let name = pick_db(file, &names, opts.db.as_deref())?;
        w.open_db(&name).map_err(|e| match e {
            tersedb::Error::DbNotFound(_) => no_such_db(file, &name, &names),
            e => e.to_string(),
        })
    };
    let b = run_batches(&env, opts, input, &mut committed, open, |w, db, e| {
        if e.value.is_some() {
            return Err("erase takes keys only (no TAB)".into());
        }
        if !w.erase(db, as_key(&e.key)).map_err(err)? {
            absent += 1;
        }
        Ok(())
    })?;
    eprintln!(
        "erased {} keys from {:?}; {absent} were absent{}",
        b.lines - absent,
        b.db,
        b.blank_note()
    );
    Ok(())
}

/// `tersedb export` options.
#[derive(Debug, Default)]
pub struct ExportOptions {
    pub db: Option<String>,
    pub hex: bool,
    /// First and last key exported (inclusive), as the import format writes keys.
    pub from: Option<String>,
    pub to: Option<String>,
    pub limit: Option<u64>,
    pub timestamps: Option<Unit>,
}

/// A key given on the command line, parsed for `db`'s key type (timestamps with `ts`).
fn cli_key(text: &str, kt: KeyType, hex: bool, ts: Option<Unit>) -> Result<ParsedKey, String> {
    let fmt = key_format(kt);
    if let (Some(u), KeyFormat::U32 | KeyFormat::U64) = (ts, fmt) {
        let v = timestamps::parse(text, u)?;
        return Ok(match fmt {
            KeyFormat::U32 => ParsedKey::U32(
                u32::try_from(v).map_err(|_| format!("{text:?} is beyond the u32 key range"))?,
            ),
            _ => ParsedKey::U64(v),
        });
    }
    lines::parse_line(0, text.as_bytes(), fmt, hex)
        .map(|e| e.key)
        .map_err(|e| format!("key {text:?}: {}", e.what))
}

/// A key as text: decimal, a timestamp with `ts`, or the bytes (hex with `hex`).
fn key_text(k: &ParsedKey, hex: bool, ts: Option<Unit>) -> Result<Vec<u8>, String> {
    Ok(match (k, ts) {
        (ParsedKey::U32(v), Some(u)) => timestamps::format(*v as u64, u)?.into_bytes(),
        (ParsedKey::U64(v), Some(u)) => timestamps::format(*v, u)?.into_bytes(),
        (k, _) => lines::format_line(k, None, hex),
    })
}

fn parsed(k: Key<'_>) -> ParsedKey {
    match k {
        Key::U32(v) => ParsedKey::U32(v),
        Key::U64(v) => ParsedKey::U64(v),
        Key::Bytes(b) => ParsedKey::Bytes(b.to_vec()),
    }
}

/// A value as export writes it: decimal for numeric records, else the bytes (hex with `hex`).
fn value_text(v: &[u8], vt: ValueType, hex: bool) -> Vec<u8> {
    match (hex, format_number(v, vt)) {
        (false, Some(t)) => t.into_bytes(),
        (true, _) => lines::to_hex(v).into_bytes(),
        (false, None) => v.to_vec(),
    }
}

/// `tersedb export`: the keys from `--from` to `--to`, at most `--limit` of them.
pub fn export(file: &Path, o: &ExportOptions) -> Result<(), String> {
    let env = Env::open_read_only(file, &EnvOptions::default()).map_err(|e| open_error(file, e))?;
    let r = env.begin_read().map_err(err)?;
    let db = open_read_db(file, &r, o.db.as_deref())?;
    let kt = db.config().key_type;
    if o.timestamps.is_some() && !matches!(kt, KeyType::U32 | KeyType::U64) {
        return Err("--timestamps applies to u32 and u64 keys".into());
    }
    let from = o
        .from
        .as_deref()
        .map(|t| cli_key(t, kt, o.hex, o.timestamps))
        .transpose()?;
    let to =
        o.to.as_deref()
            .map(|t| cli_key(t, kt, o.hex, o.timestamps))
            .transpose()?;
    let has_values = db.config().record_type != RecordType::None;
    let out = std::io::stdout();
    let mut out = BufWriter::with_capacity(1 << 20, out.lock());
    let total = r.len(&db).map_err(err)?;
    let total = o.limit.map_or(total, |l| l.min(total));
    let mut progress = crate::progress::Progress::new(total, "keys");
    let mut done = 0u64;
    let mut c = r.cursor(&db).map_err(err)?;
    let mut ok = match &from {
        Some(k) => c.lower_bound(as_key(k)).map_err(err)?,
        None => c.first().map_err(err)?,
    };
    let past_end = |k: &ParsedKey| -> bool {
        match (&to, k) {
            (None, _) => false,
            (Some(ParsedKey::U32(t)), ParsedKey::U32(v)) => v > t,
            (Some(ParsedKey::U64(t)), ParsedKey::U64(v)) => v > t,
            (Some(ParsedKey::Bytes(t)), ParsedKey::Bytes(v)) => v > t,
            _ => false,
        }
    };
    while ok && o.limit.is_none_or(|l| done < l) {
        let key = parsed(c.key().ok_or("cursor lost its position")?);
        if past_end(&key) {
            break;
        }
        done += 1;
        if done % PROGRESS_STEP == 0 {
            progress.inc(PROGRESS_STEP);
        }
        let mut line = key_text(&key, o.hex, o.timestamps)?;
        if has_values {
            if let Some(v) = c.value().map_err(err)? {
                line.push(b'\t');
                line.extend_from_slice(&value_text(&v, db.value_type(), o.hex));
            }
        }
        line.push(b'\n');
        if let Err(e) = out.write_all(&line) {
            if e.kind() == std::io::ErrorKind::BrokenPipe {
                return Ok(());
            }
            return Err(e.to_string());
        }
        ok = c.next().map_err(err)?;
    }
    let flushed = out.flush().or_else(|e| {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            Ok(())
        } else {
            Err(e.to_string())
        }
    });
    progress.finish(&format!("exported {done} keys from {:?}", db.name()));
    flushed
}

/// `tersedb get FILE [--db NAME] KEY...`: each key's line as export writes it (`--json`: one
/// array of `{"key":...,"value":...}`, `null` for an absent key). Fails when a key is absent,
/// after printing the others.
pub fn get(
    file: &Path,
    db: Option<&str>,
    keys: &[String],
    hex: bool,
    ts: Option<Unit>,
    json: bool,
) -> Result<(), String> {
    let env = Env::open_read_only(file, &EnvOptions::default()).map_err(|e| open_error(file, e))?;
    let r = env.begin_read().map_err(err)?;
    let db = open_read_db(file, &r, db)?;
    let (kt, vt) = (db.config().key_type, db.value_type());
    let has_values = db.config().record_type != RecordType::None;
    let mut absent = Vec::new();
    let mut items = Vec::new();
    for text in keys {
        let k = cli_key(text, kt, hex, ts)?;
        let v = r.get(&db, as_key(&k)).map_err(err)?;
        let shown = String::from_utf8_lossy(&key_text(&k, hex, ts)?).into_owned();
        match v {
            None => {
                absent.push(text.clone());
                if json {
                    items.push(format!(
                        "{{\"key\":{},\"value\":null,\"found\":false}}",
                        json_key(&k, &shown)
                    ));
                }
            }
            Some(v) => {
                let vt_text = String::from_utf8_lossy(&value_text(&v, vt, hex)).into_owned();
                if json {
                    let val = if !has_values {
                        "null".to_string()
                    } else if vt != ValueType::Bytes {
                        vt_text
                    } else {
                        json_str(&vt_text)
                    };
                    items.push(format!(
                        "{{\"key\":{},\"value\":{val},\"found\":true}}",
                        json_key(&k, &shown)
                    ));
                } else if has_values {
                    outln!("{shown}\t{vt_text}");
                } else {
                    outln!("{shown}");
                }
            }
        }
    }
    let missing = format!(
        "{} of {} keys not in {:?}: {}",
        absent.len(),
        keys.len(),
        db.name(),
        absent.join(", ")
    );
    if json {
        outln!("[{}]", items.join(","));
        if !absent.is_empty() {
            // The array above is the JSON answer; the absent keys show in the exit status.
            eprintln!("tersedb: {missing}");
            std::process::exit(1);
        }
    }
    if absent.is_empty() {
        Ok(())
    } else {
        Err(missing)
    }
}

fn json_key(k: &ParsedKey, shown: &str) -> String {
    match k {
        ParsedKey::U32(v) if shown == v.to_string() => shown.to_string(),
        ParsedKey::U64(v) if shown == v.to_string() => shown.to_string(),
        _ => json_str(shown),
    }
}

/// `tersedb drop FILE --db NAME`: removes a database and every entry in it.
pub fn drop_db(file: &Path, name: &str) -> Result<(), String> {
    let env = Env::open(file, &EnvOptions::default()).map_err(|e| open_error(file, e))?;
    let mut w = env.begin_write().map_err(err)?;
    let names = db_names(w.list_dbs())?;
    let db = w.open_db(name).map_err(|e| match e {
        tersedb::Error::DbNotFound(_) => no_such_db(file, name, &names),
        e => e.to_string(),
    })?;
    let n = w.len(&db).map_err(err)?;
    w.drop_db(name).map_err(err)?;
    w.commit().map_err(err)?;
    eprintln!("dropped database {name:?} ({n} keys); its pages are free for reuse (`tersedb compact` gives them back)");
    Ok(())
}

pub(crate) fn json_str(s: &str) -> String {
    let mut o = String::from("\"");
    for ch in s.chars() {
        match ch {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            c if (c as u32) < 0x20 => o.push_str(&format!("\\u{:04x}", c as u32)),
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

fn codec_name(c: Option<CodecId>) -> &'static str {
    c.map_or("none", |c| c.name())
}

/// One database's size, explained: every byte of its pages is key bytes, record bytes or
/// overhead.
struct Sizes {
    /// Key lists of the nodes: keys, per-key metadata, prefixes, block indexes.
    keys: u64,
    /// Records in the leaves and in overflow pages.
    records: u64,
    /// The rest of its pages: node headers, slot arrays' slack, unused room in pages.
    overhead: u64,
    total: u64,
}

fn sizes(s: &tersedb::DbStats, page: u64) -> Sizes {
    let in_nodes = s.used_bytes.saturating_sub(s.key_bytes);
    let records = in_nodes + s.overflow_pages * page;
    let keys = s.key_bytes.min(s.bytes);
    let records = records.min(s.bytes - keys);
    Sizes {
        keys,
        records,
        overhead: s.bytes - keys - records,
        total: s.bytes,
    }
}

fn pct(x: u64, of: u64) -> String {
    if of == 0 {
        "-".into()
    } else {
        format!("{:.1}%", 100.0 * x as f64 / of as f64)
    }
}

/// `tersedb info`.
pub fn info(file: &Path, json: bool) -> Result<(), String> {
    let env = Env::open_read_only(file, &EnvOptions::default()).map_err(|e| open_error(file, e))?;
    let file_bytes = std::fs::metadata(file).map_err(err)?.len();
    let space = env.space().map_err(err)?;
    let page = env.page_size() as u64;
    let r = env.begin_read().map_err(err)?;
    let dbs = r.list_dbs().map_err(err)?;
    let mut rows = Vec::new();
    for (name, config) in &dbs {
        let db = r.open_db(name).map_err(err)?;
        let s = r.stats(&db).map_err(err)?;
        rows.push((name.clone(), *config, s));
    }
    let db_bytes: u64 = rows.iter().map(|r| r.2.bytes).sum();
    // Live pages hold the databases and the catalog.
    let catalog = space.live_bytes.saturating_sub(db_bytes);
    // Bytes past the committed pages (a crash before the file shrank).
    let tail = file_bytes.saturating_sub(space.pages * page);
    if json {
        let dbs: Vec<String> = rows
            .iter()
            .map(|(name, c, s)| {
                let z = sizes(s, page);
                format!(
                    "{{\"name\":{},\"key_type\":\"{}\",\"records\":{},\"record_bytes_each\":{},\"record_compression\":\"{}\",\"compression\":{},\"block_size\":{},\"codec_mix\":{{{}}},\"record_mix\":{{{}}},\"keys\":{},\"height\":{},\"pages\":{{\"leaf\":{},\"internal\":{},\"overflow\":{}}},\"size\":{{\"key_bytes\":{},\"record_bytes\":{},\"overhead_bytes\":{},\"total_bytes\":{}}},\"bytes_per_key\":{}}}",
                    json_str(name),
                    crate::names::key_type(c.key_type),
                    json_str(&crate::names::records(c)),
                    match c.record_type { RecordType::Fixed(n) => n.to_string(), RecordType::None => "0".into(), RecordType::Variable => "null".into() },
                    crate::names::record_compression(c),
                    json_str(&crate::names::compression(c)),
                    if c.key_codec.is_some() || c.auto_codec { c.block_size.to_string() } else { "null".into() },
                    s.codec_mix().iter().map(|(c, n)| format!("\"{}\":{n}", c.name())).collect::<Vec<_>>().join(","),
                    s.record_mix().iter().map(|(l, n)| format!("\"{l}\":{n}")).collect::<Vec<_>>().join(","),
                    s.key_count, s.height, s.leaf_pages, s.branch_pages, s.overflow_pages,
                    z.keys, z.records, z.overhead, z.total,
                    if s.key_count > 0 { format!("{:.4}", s.bytes as f64 / s.key_count as f64) } else { "null".into() }
                )
            })
            .collect();
        outln!(
            "{{\"file\":{},\"page_size\":{},\"size\":{{\"file_bytes\":{},\"database_bytes\":{},\"catalog_bytes\":{},\"free_bytes\":{},\"pager_bytes\":{},\"tail_bytes\":{}}},\"free_pages\":{},\"databases\":[{}]}}",
            json_str(&file.display().to_string()),
            page,
            file_bytes,
            db_bytes,
            catalog,
            space.free_bytes,
            space.pager_bytes,
            tail,
            space.free_pages,
            dbs.join(",")
        );
        return Ok(());
    }
    outln!("file        {}", file.display());
    outln!("page size   {page} bytes");
    outln!("file size   {file_bytes} bytes =");
    outln!(
        "  databases {:>12} bytes  {:>6}  (below, per database)",
        db_bytes,
        pct(db_bytes, file_bytes)
    );
    outln!(
        "  catalog   {:>12} bytes  {:>6}  (the list of databases)",
        catalog,
        pct(catalog, file_bytes)
    );
    outln!(
        "  free      {:>12} bytes  {:>6}  ({} free pages the next writes reuse; `tersedb compact` gives them back)",
        space.free_bytes,
        pct(space.free_bytes, file_bytes),
        space.free_pages
    );
    outln!(
        "  pager     {:>12} bytes  {:>6}  (the two meta pages and the free list)",
        space.pager_bytes,
        pct(space.pager_bytes, file_bytes)
    );
    if tail > 0 {
        outln!(
            "  tail      {:>12} bytes  {:>6}  (past the last committed page: a write that did not finish)",
            tail,
            pct(tail, file_bytes)
        );
    }
    outln!("databases   {}", rows.len());
    for (name, c, s) in rows {
        let z = sizes(&s, page);
        outln!("\n{name}");
        outln!(
            "  keys         {} ({})",
            s.key_count,
            crate::names::key_type(c.key_type)
        );
        if c.compress_records {
            outln!(
                "  records      {}, compressed (auto: each chunk of up to 255 records as frame of reference, dictionary, patched dictionary{} or raw, whichever is smallest)",
                crate::names::records(&c),
                if c.value_type == tersedb::ValueType::F64 { ", decimal" } else { "" }
            );
            let mix = s.record_mix();
            let chunks: u64 = mix.iter().map(|m| m.1).sum();
            if chunks > 0 {
                let parts: Vec<String> = mix
                    .iter()
                    .map(|(l, n)| format!("{l} {}", pct(*n, chunks)))
                    .collect();
                outln!("  record mix   {} (of {chunks} chunks)", parts.join(", "));
            }
        } else {
            outln!("  records      {}", crate::names::records(&c));
        }
        match c.key_codec {
            None if c.auto_codec => {
                outln!(
                    "  compression  auto: a codec chosen per block ({} keys per block)",
                    c.block_size
                );
                let mix = s.codec_mix();
                let blocks: u64 = mix.iter().map(|m| m.1).sum();
                if blocks > 0 {
                    let parts: Vec<String> = mix
                        .iter()
                        .map(|(c, n)| format!("{} {}", c.name(), pct(*n, blocks)))
                        .collect();
                    outln!("  codec mix    {} (of {blocks} blocks)", parts.join(", "));
                }
            }
            Some(_) => outln!(
                "  compression  {} ({} keys per block)",
                crate::names::compression(&c),
                c.block_size
            ),
            None => {
                let tail = if c.split_range > 0 && c.key_type == KeyType::VarBinary {
                    format!(", split range {}%", c.split_range)
                } else {
                    String::new()
                };
                outln!("  compression  {}{tail}", crate::names::compression(&c));
            }
        }
        outln!(
            "  tree         height {}; {} leaf, {} internal, {} overflow pages",
            s.height,
            s.leaf_pages,
            s.branch_pages,
            s.overflow_pages
        );
        let per = |b: u64| {
            if s.key_count > 0 {
                format!("{:.2} per key", b as f64 / s.key_count as f64)
            } else {
                String::new()
            }
        };
        outln!("  size         {} bytes = ", z.total);
        outln!(
            "    key bytes    {:>12}  {:>6}  {}  (keys as stored: compressed blocks, prefixes, per-key metadata)",
            z.keys,
            pct(z.keys, z.total),
            per(z.keys)
        );
        outln!(
            "    record bytes {:>12}  {:>6}  {}  (in leaves and overflow pages)",
            z.records,
            pct(z.records, z.total),
            per(z.records)
        );
        outln!(
            "    overhead     {:>12}  {:>6}  {}  (page headers, internal pages' slack, unused room in pages)",
            z.overhead,
            pct(z.overhead, z.total),
            per(z.overhead)
        );
    }
    Ok(())
}

/// `tersedb compact`.
pub fn compact(file: &Path) -> Result<(), String> {
    let rep =
        tersedb::compact_file(file, &EnvOptions::default()).map_err(|e| open_error(file, e))?;
    let pct = if rep.before_bytes > 0 {
        100.0 * rep.after_bytes as f64 / rep.before_bytes as f64
    } else {
        100.0
    };
    outln!(
        "{}: {} -> {} bytes ({pct:.1}%), {} entries in {} databases",
        file.display(),
        rep.before_bytes,
        rep.after_bytes,
        rep.entries,
        rep.dbs
    );
    Ok(())
}

/// `tersedb check`: Ok when clean, Err listing every fault otherwise. `--json`: one object
/// `{"file", "clean", "commit", "pages": {...}, "databases", "faults": [{"page", "what"}],
/// "notes"}` (and a non-zero exit when not clean).
pub fn check(file: &Path, json: bool) -> Result<(), String> {
    let env = Env::open_read_only(file, &EnvOptions::default()).map_err(|e| open_error(file, e))?;
    let mut progress = crate::progress::Progress::spinner("checking every page");
    let report = env.check().map_err(err)?;
    progress.finish("");
    if json {
        let faults: Vec<String> = report
            .faults
            .iter()
            .map(|f| {
                format!(
                    "{{\"page\":{},\"what\":{}}}",
                    f.page.map_or("null".into(), |p| p.to_string()),
                    json_str(&f.what)
                )
            })
            .collect();
        let notes: Vec<String> = report.notes.iter().map(|n| json_str(n)).collect();
        outln!(
            "{{\"file\":{},\"clean\":{},\"commit\":{},\"pages\":{{\"total\":{},\"free\":{},\"pager\":{},\"catalog\":{}}},\"databases\":{},\"faults\":[{}],\"notes\":[{}]}}",
            json_str(&file.display().to_string()),
            report.is_clean(),
            report.commit,
            report.total_pages,
            report.free_pages,
            report.meta_pages,
            report.catalog_pages,
            report.dbs.len(),
            faults.join(","),
            notes.join(",")
        );
        if report.is_clean() {
            return Ok(());
        }
        // The report above is the JSON answer; the failure shows in the exit status.
        eprintln!(
            "tersedb: {}: {} fault(s) found in commit {}",
            file.display(),
            report.faults.len(),
            report.commit
        );
        std::process::exit(1);
    }
    for n in &report.notes {
        outln!("note: {n}");
    }
    if report.is_clean() {
        outln!(
            "{}: clean (commit {}, {} pages: {} free, {} pager, {} catalog; {} databases)",
            file.display(),
            report.commit,
            report.total_pages,
            report.free_pages,
            report.meta_pages,
            report.catalog_pages,
            report.dbs.len()
        );
        Ok(())
    } else {
        for f in &report.faults {
            match f.page {
                Some(p) => outln!("page {p}: {}", f.what),
                None => outln!("{}", f.what),
            }
        }
        Err(format!(
            "{}: {} fault(s) found in commit {}",
            file.display(),
            report.faults.len(),
            report.commit
        ))
    }
}

/// `tersedb recover FILE`: opens for writing with recovery, which repairs damaged meta pages
/// and, when it must, rolls back to the older commit; says what it did.
pub fn recover(file: &Path) -> Result<(), String> {
    let env =
        Env::open(file, &EnvOptions::default().recover(true)).map_err(|e| open_error(file, e))?;
    let notes = env.open_notes();
    let commit = env.begin_read().map_err(err)?.txn_id();
    if notes.is_empty() {
        outln!("{}: nothing to recover (commit {commit})", file.display());
    }
    for n in &notes {
        outln!("{}: {n}", file.display());
    }
    outln!("{}: opens at commit {commit}", file.display());
    Ok(())
}

/// `tersedb dump --page N`.
pub fn dump(file: &Path, page: u64) -> Result<(), String> {
    let env = Env::open_read_only(file, &EnvOptions::default()).map_err(|e| open_error(file, e))?;
    let pages = std::fs::metadata(file).map_err(err)?.len() / env.page_size() as u64;
    if page >= pages {
        return Err(format!(
            "page {page} is beyond the end of the file ({pages} pages)"
        ));
    }
    outln!("{}", env.describe_page(page).map_err(err)?);
    Ok(())
}
