//! The store commands: `import`, `erase`, `export`, `info`, `check`, `dump`.

use crate::lines::{self, KeyFormat, ParsedKey};
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::Path;
use tersedb::{
    CodecId, Db, DbConfig, Durability, Env, EnvOptions, Key, KeyScheme, KeyType, RecordType,
    ValueType, WriteTxn,
};

/// Options shared by `import` and `erase`.
#[derive(Debug)]
pub struct LoadOptions {
    pub db: String,
    pub input: Option<String>,
    pub commit_every: Option<u64>,
    pub hex: bool,
}

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
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
) -> Result<u64, String> {
    let every = opts.commit_every.unwrap_or(u64::MAX).max(1);
    let mut line_no = 0u64;
    let mut buf = Vec::new();
    let mut done = 0u64;
    let mut txn = env.begin_write().map_err(err)?;
    let db = open(&mut txn)?;
    let fmt = key_format(db.config().key_type);
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
        let entry = lines::parse_line(line_no, &buf, fmt, opts.hex)
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
    progress.message("committing");
    txn.commit().map_err(err)?;
    *committed = true;
    progress.finish("");
    Ok(done)
}

/// Puts a file that a command found absent (`before` = `None`) or empty back as it was, after
/// the command failed without committing anything: removed, or truncated to nothing. A file
/// that held an environment needs nothing: only commits write to it.
fn restore(file: &Path, before: Option<u64>) {
    match before {
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
}

/// How `tersedb import` creates a database that does not exist yet.
#[derive(Clone, Debug)]
pub struct NewDb {
    pub key_type: String,
    pub record_size: Option<u32>,
    /// Numeric record type (`u32`, `u64`, `i64`, `f64`): values are decimal numbers.
    pub record_type: Option<String>,
    pub page_size: usize,
    /// Key codec name; `None` = uncompressed.
    pub compression: Option<String>,
    pub block_size: u16,
}

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
    let before = std::fs::metadata(file).map(|m| m.len()).ok();
    let mut committed = false;
    let r = import_into(file, opts, new_db, durability, &mut committed);
    if r.is_err() && !committed {
        restore(file, before);
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
    let (record_size, page_size) = (new_db.record_size, new_db.page_size);
    let key_type = match new_db.key_type.as_str() {
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
            _ => return Err(format!("unknown record type {t:?} (u32, u64, i64, f64)")),
        },
    };
    let env_opts = EnvOptions::default()
        .page_size(page_size)
        .durability(durability);
    let mut input = open_input(&opts.input)?;
    let env =
        Env::open_or_create(file, &env_opts).map_err(|e| format!("{}: {e}", file.display()))?;
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
        Ok(match w.open_db(&opts.db) {
            Ok(db) => {
                if db.config().key_type != key_type {
                    return Err(format!(
                        "database {:?} has key type {:?}, not {:?}",
                        opts.db,
                        db.config().key_type,
                        key_type
                    ));
                }
                if new_db.record_type.is_some() && db.value_type() != value_type {
                    return Err(format!(
                        "database {:?} exists with record type {}, not {}",
                        opts.db,
                        db.value_type().name(),
                        value_type.name()
                    ));
                }
                if let Some(sc) = scheme.filter(|&sc| db.config().key_scheme != sc) {
                    return Err(format!(
                        "database {:?} exists with key compression {}, not {}",
                        opts.db,
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
                        opts.db,
                        if db.config().auto_codec {
                            "auto"
                        } else {
                            codec_name(db.config().key_codec)
                        },
                        if auto { "auto" } else { codec_name(codec) }
                    ));
                }
                db
            }
            Err(tersedb::Error::DbNotFound(_)) => w
                .create_db(&opts.db, {
                    let c = DbConfig::new(key_type, record_type)
                        .with_codec(codec)
                        .with_auto_codec(auto)
                        .with_block_size(new_db.block_size)
                        .with_value_type(value_type);
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
    let mut num = Vec::new();
    let n = run_batches(&env, opts, input, committed, open, |w, db, e| {
        let (rt, vt) = (db.config().record_type, db.value_type());
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
    eprintln!(
        "imported {n} lines into {:?} ({inserted} new keys, {} updated) in {:.2} s",
        opts.db,
        n - inserted,
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
    Ok(match vt {
        ValueType::U32 => s.parse::<u32>().map_err(|_| bad())?.to_le_bytes().to_vec(),
        ValueType::U64 => s.parse::<u64>().map_err(|_| bad())?.to_le_bytes().to_vec(),
        ValueType::I64 => s.parse::<i64>().map_err(|_| bad())?.to_le_bytes().to_vec(),
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
        ValueType::F64 => f64::from_le_bytes(b.try_into().ok()?).to_string(),
        ValueType::Bytes => return None,
    })
}

/// `tersedb erase`. A failure in the first batch leaves the file as it was.
pub fn erase(file: &Path, opts: &LoadOptions) -> Result<(), String> {
    let input = open_input(&opts.input)?;
    let env =
        Env::open(file, &EnvOptions::default()).map_err(|e| format!("{}: {e}", file.display()))?;
    let mut absent = 0u64;
    let mut committed = false;
    let open = |w: &mut WriteTxn| w.open_db(&opts.db).map_err(err);
    let n = run_batches(&env, opts, input, &mut committed, open, |w, db, e| {
        if e.value.is_some() {
            return Err("erase takes keys only (no TAB)".into());
        }
        if !w.erase(db, as_key(&e.key)).map_err(err)? {
            absent += 1;
        }
        Ok(())
    })?;
    eprintln!(
        "erased {} keys from {:?}; {absent} were absent",
        n - absent,
        opts.db
    );
    Ok(())
}

/// `tersedb export`.
pub fn export(file: &Path, db_name: &str, hex: bool) -> Result<(), String> {
    let env = Env::open_read_only(file, &EnvOptions::default())
        .map_err(|e| format!("{}: {e}", file.display()))?;
    let r = env.begin_read().map_err(err)?;
    let db = r.open_db(db_name).map_err(err)?;
    let has_values = db.config().record_type != RecordType::None;
    let out = std::io::stdout();
    let mut out = BufWriter::with_capacity(1 << 20, out.lock());
    let total = r.len(&db).map_err(err)?;
    let mut progress = crate::progress::Progress::new(total, "keys");
    let mut done = 0u64;
    let mut c = r.cursor(&db).map_err(err)?;
    let mut ok = c.first().map_err(err)?;
    while ok {
        done += 1;
        if done % PROGRESS_STEP == 0 {
            progress.inc(PROGRESS_STEP);
        }
        let key = match c.key().ok_or("cursor lost its position")? {
            Key::U32(v) => ParsedKey::U32(v),
            Key::U64(v) => ParsedKey::U64(v),
            Key::Bytes(b) => ParsedKey::Bytes(b.to_vec()),
        };
        let mut value = if has_values {
            c.value().map_err(err)?
        } else {
            None
        };
        if let (Some(v), false) = (&value, hex) {
            if let Some(t) = format_number(v, db.value_type()) {
                value = Some(t.into_bytes());
            }
        }
        let mut line = lines::format_line(&key, value.as_deref(), hex);
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
    progress.finish(&format!("exported {done} keys from {db_name:?}"));
    flushed
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

/// `tersedb info`.
pub fn info(file: &Path, json: bool) -> Result<(), String> {
    let env = Env::open_read_only(file, &EnvOptions::default())
        .map_err(|e| format!("{}: {e}", file.display()))?;
    let file_bytes = std::fs::metadata(file).map_err(err)?.len();
    let space = env.space().map_err(err)?;
    let r = env.begin_read().map_err(err)?;
    let dbs = r.list_dbs().map_err(err)?;
    let mut rows = Vec::new();
    for (name, config) in &dbs {
        let db = r.open_db(name).map_err(err)?;
        let s = r.stats(&db).map_err(err)?;
        rows.push((name.clone(), *config, s));
    }
    if json {
        let dbs: Vec<String> = rows
            .iter()
            .map(|(name, c, s)| {
                format!(
                    "{{\"name\":{},\"key_type\":\"{:?}\",\"record_type\":\"{:?}\",\"value_type\":\"{}\",\"codec\":\"{}\",\"block_size\":{},\"key_compression\":\"{}\",\"key_bytes\":{},\"keys\":{},\"height\":{},\"leaf_pages\":{},\"internal_pages\":{},\"overflow_pages\":{},\"bytes\":{},\"bytes_per_key\":{}}}",
                    json_str(name), c.key_type, c.record_type, c.value_type.name(), if c.auto_codec { "auto" } else { codec_name(c.key_codec) }, c.block_size, c.key_scheme.name(), s.key_bytes, s.key_count, s.height, s.leaf_pages, s.branch_pages, s.overflow_pages, s.bytes,
                    if s.key_count > 0 { format!("{:.4}", s.bytes as f64 / s.key_count as f64) } else { "null".into() }
                )
            })
            .collect();
        outln!(
            "{{\"file\":{},\"page_size\":{},\"file_bytes\":{},\"live_bytes\":{},\"free_bytes\":{},\"pager_bytes\":{},\"databases\":[{}]}}",
            json_str(&file.display().to_string()),
            env.page_size(),
            file_bytes,
            space.live_bytes,
            space.free_bytes,
            space.pager_bytes,
            dbs.join(",")
        );
    } else {
        outln!("file        {}", file.display());
        outln!("page size   {} bytes", env.page_size());
        outln!("file size   {file_bytes} bytes");
        outln!(
            "  live      {} bytes (catalog and databases)",
            space.live_bytes
        );
        outln!(
            "  free      {} bytes ({} pages the next writes reuse; `tersedb compact` gives them back)",
            space.free_bytes,
            space.free_pages
        );
        outln!(
            "  pager     {} bytes (meta pages and the free list)",
            space.pager_bytes
        );
        outln!("databases   {}", rows.len());
        for (name, c, s) in rows {
            outln!("\n{name}");
            outln!("  key type     {:?}", c.key_type);
            outln!("  record type  {:?}", c.record_type);
            outln!("  value type   {}", c.value_type.name());
            match c.key_codec {
                None if c.auto_codec => outln!(
                    "  codec        auto: chosen per block ({} keys per block)",
                    c.block_size
                ),
                Some(k) => outln!(
                    "  codec        {} ({} keys per block)",
                    k.name(),
                    c.block_size
                ),
                None if c.key_type == KeyType::VarBinary => {
                    let param = match c.key_scheme {
                        KeyScheme::WiredTiger => {
                            format!(", a full key every {} keys", c.scheme_param)
                        }
                        KeyScheme::Pkb => format!(", {}-byte partial keys", c.scheme_param),
                        _ => String::new(),
                    };
                    let tail = if c.split_range > 0 {
                        format!(", split range {}%", c.split_range)
                    } else {
                        String::new()
                    };
                    outln!("  compression  {}{param}{tail}", c.key_scheme.name());
                }
                None => outln!("  codec        none"),
            }
            outln!("  keys         {}", s.key_count);
            outln!("  height       {}", s.height);
            outln!(
                "  pages        {} leaf, {} internal, {} overflow",
                s.leaf_pages,
                s.branch_pages,
                s.overflow_pages
            );
            if s.key_count > 0 {
                outln!("  bytes/key    {:.3}", s.bytes as f64 / s.key_count as f64);
                outln!(
                    "  key bytes    {} ({:.2} per key: keys, per-key metadata, prefixes)",
                    s.key_bytes,
                    s.key_bytes as f64 / s.key_count as f64
                );
            }
        }
    }
    Ok(())
}

/// `tersedb compact`.
pub fn compact(file: &Path) -> Result<(), String> {
    let rep = tersedb::compact_file(file, &EnvOptions::default())
        .map_err(|e| format!("{}: {e}", file.display()))?;
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

/// `tersedb check`: Ok when clean, Err listing every fault otherwise.
pub fn check(file: &Path) -> Result<(), String> {
    let env = Env::open_read_only(file, &EnvOptions::default())
        .map_err(|e| format!("{}: {e}", file.display()))?;
    let mut progress = crate::progress::Progress::spinner("checking every page");
    let report = env.check().map_err(err)?;
    progress.finish("");
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
    let env = Env::open(file, &EnvOptions::default().recover(true))
        .map_err(|e| format!("{}: {e}", file.display()))?;
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
    let env = Env::open_read_only(file, &EnvOptions::default())
        .map_err(|e| format!("{}: {e}", file.display()))?;
    let pages = std::fs::metadata(file).map_err(err)?.len() / env.page_size() as u64;
    if page >= pages {
        return Err(format!(
            "page {page} is beyond the end of the file ({pages} pages)"
        ));
    }
    outln!("{}", env.describe_page(page).map_err(err)?);
    Ok(())
}
