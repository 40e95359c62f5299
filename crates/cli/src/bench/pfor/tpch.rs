//! Table 2 of the patched-FOR paper, per column: TPC-H LINEITEM columns from `tpchgen` (dbgen's
//! rows) as 32-bit integers, compressed with PFOR (width chosen per frame of 128), PFOR-DELTA on
//! the column sorted (as an index or a sorted projection stores it; `l_orderkey` is sorted in
//! the table already), PDICT (the engine's record chunks of 255, [`DictColumn`]), and zstd (level 3) of the raw little-endian column as the general-purpose
//! peer. Ratio = raw bytes (4 per value) / compressed bytes, directories included; decode speed
//! in MB/s of decoded 32-bit values.
//!
//! The automatic choice is the engine's own: the column stored as the compressed u32 records of
//! a database keyed by row number (`DbConfig::with_compressed_records`, which picks RAW, FOR,
//! DICT (the paper's PDICT without exceptions) or PDICT with exceptions, per chunk of up to 255
//! records), measured through the public API only: bytes are `DbStats::leaf_record_bytes`, speed
//! is `SUM(record)` folded inside the tree (chunk by chunk, keys skipped); `DbStats::record_mix`
//! counts the chunks of each layout.
//! Loading costs about a microsecond per record, so the database holds the first
//! [`ENGINE_ROWS`] rows at most (the method then says so): the columns are drawn from the same
//! distribution throughout, and a chunk's layout depends only on its own 128 values.

use super::kernels::{Column, N};
use super::pdict::{DictColumn, CHUNK};
use super::{err, Cell, Options, Scale, Table};
use crate::bench::timing::ops_per_sec;
use std::collections::HashMap;
use std::hint::black_box;
use tersedb_codecs::Isa;

/// Rows of the engine's database per column (see the module docs).
const ENGINE_ROWS: usize = 1_000_000;

/// LINEITEM rows per unit of scale factor (dbgen at SF 1 writes 6,001,215).
const LINES_PER_SF: f64 = 6_001_215.0;

/// The LINEITEM columns of Table 2 for the first `rows` rows: (name, values).
pub(crate) fn lineitem_columns(rows: usize) -> Vec<(&'static str, Vec<u32>)> {
    use tpchgen::distribution::Distributions;
    use tpchgen::generators::LineItemGenerator;
    use tpchgen::text::TextPool;
    const NAMES: [&str; 15] = [
        "l_orderkey",
        "l_partkey",
        "l_suppkey",
        "l_linenumber",
        "l_quantity",
        "l_extendedprice",
        "l_discount",
        "l_tax",
        "l_returnflag",
        "l_linestatus",
        "l_shipdate",
        "l_commitdate",
        "l_receiptdate",
        "l_shipinstruct",
        "l_shipmode",
    ];
    let dists = Distributions::static_default();
    let pool = TextPool::new(1 << 20, dists);
    let sf = (rows as f64 / LINES_PER_SF * 1.05).max(1e-5);
    let g = LineItemGenerator::new_with_distributions_and_text_pool(sf, 1, 1, dists, &pool);
    let mut cols: Vec<Vec<u32>> = (0..NAMES.len()).map(|_| Vec::with_capacity(rows)).collect();
    // Enum codes in order of first appearance.
    let mut dicts: [HashMap<String, u32>; 4] = Default::default();
    let mut code = |k: usize, s: &str| {
        let d = &mut dicts[k];
        let n = d.len() as u32;
        *d.entry(s.to_string()).or_insert(n)
    };
    for l in g.iter().take(rows) {
        let row = [
            l.l_orderkey as u32,
            l.l_partkey as u32,
            l.l_suppkey as u32,
            l.l_linenumber as u32,
            l.l_quantity as u32,
            l.l_extendedprice.0 as u32,
            l.l_discount.0 as u32,
            l.l_tax.0 as u32,
            code(0, l.l_returnflag),
            code(1, l.l_linestatus),
            l.l_shipdate.to_unix_epoch() as u32,
            l.l_commitdate.to_unix_epoch() as u32,
            l.l_receiptdate.to_unix_epoch() as u32,
            code(2, l.l_shipinstruct),
            code(3, l.l_shipmode),
        ];
        for (c, v) in cols.iter_mut().zip(row) {
            c.push(v);
        }
    }
    NAMES.into_iter().zip(cols).collect()
}

const COLS: &[(&str, &str, usize)] = &[
    ("column", "column", 18),
    ("method", "method", 18),
    ("ratio", "ratio", 6),
    ("bits_per_value", "bits/val", 8),
    ("decode_mb_per_s", "dec MB/s", 8),
];

fn decode_sum(c: &Column, isa: Isa, buf: &mut [u32; N]) -> u64 {
    let mut total = 0u64;
    for f in 0..c.frames() {
        let out = &mut buf[..c.frame_len(f)];
        if c.decode_frame(isa, f, out).is_err() {
            return u64::MAX;
        }
        black_box(&mut *out);
        total = total.wrapping_add(out[0] as u64);
    }
    total
}

fn pfor_row(
    t: &Table,
    scale: &Scale,
    name: &str,
    method: &str,
    values: &[u32],
    delta: bool,
) -> Result<(), String> {
    let isa = Isa::detect();
    let c = Column::encode(values, delta, None).map_err(err)?;
    let mut buf = [0u32; N];
    for (f, want) in values.chunks(N).enumerate() {
        let out = &mut buf[..want.len()];
        c.decode_frame(isa, f, out).map_err(err)?;
        if out != want {
            return Err(format!("{method} on {name}: decoded other values"));
        }
    }
    let rate = ops_per_sec(scale.budget, values.len() as u64, || {
        decode_sum(&c, isa, &mut buf)
    });
    let ratio = (values.len() * 4) as f64 / c.size() as f64;
    t.row(&[
        Cell::S(name.into()),
        Cell::S(method.into()),
        Cell::F(ratio, 2),
        Cell::F(32.0 / ratio, 2),
        Cell::F(rate * 4.0 / 1e6, 0),
    ]);
    Ok(())
}

/// PDICT (the engine's chunks, [`DictColumn`]) of `values`: ratio and decode speed.
/// Returns the share of chunks written as PDICT (the others are DICT).
fn pdict_row(t: &Table, scale: &Scale, name: &str, values: &[u32]) -> Result<f64, String> {
    let c = DictColumn::encode(values, None)?;
    let mut buf = [0u64; CHUNK];
    let mut at = 0;
    let mut wrong = false;
    c.decode_each(&mut buf, |v| {
        let want = &values[at..at + v.len()];
        wrong |= v.iter().zip(want).any(|(&g, &w)| g != u64::from(w));
        at += v.len();
    })?;
    if wrong || at != values.len() {
        return Err(format!("PDICT on {name}: decoded other values"));
    }
    let rate = ops_per_sec(scale.budget, values.len() as u64, || {
        let mut check = 0u64;
        let ok = c.decode_each(&mut buf, |v| {
            black_box(v);
            check = check.wrapping_add(v[0]);
        });
        if ok.is_err() {
            return u64::MAX;
        }
        check
    });
    let ratio = (values.len() * 4) as f64 / c.size() as f64;
    t.row(&[
        Cell::S(name.into()),
        Cell::S("PDICT".into()),
        Cell::F(ratio, 2),
        Cell::F(32.0 / ratio, 2),
        Cell::F(rate * 4.0 / 1e6, 0),
    ]);
    Ok(c.patched() as f64 / c.chunks.len().max(1) as f64)
}

/// The engine's compressed records of `values` (module docs): ratio and SUM(record) speed.
fn engine_row(t: &Table, scale: &Scale, name: &str, values: &[u32]) -> Result<(), String> {
    let method = if values.len() > ENGINE_ROWS {
        format!("engine auto ({}M)", ENGINE_ROWS / 1_000_000)
    } else {
        "engine auto".to_string()
    };
    let values = &values[..values.len().min(ENGINE_ROWS)];
    use tersedb::{DbConfig, Durability, Env, EnvOptions, KeyType, RecordType, Value, ValueType};
    let e = |x: tersedb::Error| format!("engine records of {name}: {x}");
    let env = Env::in_memory(&EnvOptions::default().durability(Durability::None)).map_err(e)?;
    let cfg = DbConfig::raw(KeyType::U32, RecordType::Fixed(4))
        .with_value_type(ValueType::U32)
        .with_compressed_records(true);
    let mut w = env.begin_write().map_err(e)?;
    let db = w.create_db("col", cfg).map_err(e)?;
    for (i, v) in values.iter().enumerate() {
        w.append(&db, i as u32, &v.to_le_bytes()).map_err(e)?;
    }
    w.commit().map_err(e)?;
    let r = env.begin_read().map_err(e)?;
    let stats = r.stats(&db).map_err(e)?;
    let want: i128 = values.iter().map(|&v| v as i128).sum();
    let sum = || match r.query_str("SELECT SUM(record) FROM col") {
        Ok(q) => q.values.first().and_then(Value::as_int),
        Err(_) => None,
    };
    if sum() != Some(want) {
        return Err(format!(
            "engine records of {name}: SUM(record) is {:?}, not {want}",
            sum()
        ));
    }
    if stats.key_count != values.len() as u64 {
        return Err(format!(
            "engine records of {name}: {} records",
            stats.key_count
        ));
    }
    let rate = ops_per_sec(scale.budget, values.len() as u64, || {
        sum().map_or(0, |s| s as u64)
    });
    let ratio = (values.len() * 4) as f64 / stats.leaf_record_bytes.max(1) as f64;
    t.row(&[
        Cell::S(name.into()),
        Cell::S(method),
        Cell::F(ratio, 2),
        Cell::F(32.0 / ratio, 2),
        Cell::F(rate * 4.0 / 1e6, 0),
    ]);
    Ok(())
}

fn zstd_row(t: &Table, scale: &Scale, name: &str, values: &[u32]) -> Result<(), String> {
    let raw: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    let packed = zstd::bulk::compress(&raw, 3).map_err(|e| format!("zstd: {e}"))?;
    let mut out = vec![0u8; raw.len()];
    let mut d = zstd::bulk::Decompressor::new().map_err(|e| format!("zstd: {e}"))?;
    let n = d
        .decompress_to_buffer(&packed, &mut out)
        .map_err(|e| format!("zstd: {e}"))?;
    if out[..n] != raw[..] {
        return Err(format!("zstd on {name}: decoded other bytes"));
    }
    let rate = ops_per_sec(scale.budget, values.len() as u64, || {
        let n = d.decompress_to_buffer(&packed, &mut out).unwrap_or(0);
        black_box(&mut out);
        n as u64
    });
    let ratio = raw.len() as f64 / packed.len() as f64;
    t.row(&[
        Cell::S(name.into()),
        Cell::S("zstd-3 (raw)".into()),
        Cell::F(ratio, 2),
        Cell::F(32.0 / ratio, 2),
        Cell::F(rate * 4.0 / 1e6, 0),
    ]);
    Ok(())
}

pub fn run(opts: &Options, scale: &Scale) -> Result<(), String> {
    let t = Table {
        name: "table2",
        cols: COLS,
        json: opts.json,
    };
    let cols = lineitem_columns(scale.rows);
    t.start(&format!(
        "Table 2 (per column): TPC-H LINEITEM, {} rows as 32-bit integers; ratio = raw 4-byte column / compressed",
        scale.rows
    ));
    t.note(&format!("PDICT: the engine's record chunks of {CHUNK} (PDICT, or DICT where that is smaller), 4 bytes of directory per chunk, decoded chunk by chunk into a 255-value buffer"));
    t.note(&format!("engine auto: the engine's compressed u32 records (RAW / FOR / DICT / PDICT per chunk of up to 255) of the first {} rows at most, bytes of the leaves' record lists, speed of SUM(record) in the tree", ENGINE_ROWS.min(scale.rows)));
    let mut patched = Vec::new();
    for (name, values) in &cols {
        pfor_row(&t, scale, name, "PFOR", values, false)?;
        let mut sorted = values.clone();
        sorted.sort_unstable();
        let label = if sorted == *values {
            "PFOR-DELTA"
        } else {
            "PFOR-DELTA sorted"
        };
        pfor_row(&t, scale, name, label, &sorted, true)?;
        let share = pdict_row(&t, scale, name, values)?;
        patched.push(format!("{name} {:.0}%", share * 100.0));
        engine_row(&t, scale, name, values)?;
        zstd_row(&t, scale, name, values)?;
    }
    t.note(&format!(
        "PDICT chunks with exceptions (the others DICT): {}",
        patched.join(", ")
    ));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lineitem_columns_have_tpch_domains() {
        let cols = lineitem_columns(1000);
        let get = |n: &str| &cols.iter().find(|(c, _)| *c == n).unwrap().1;
        assert!(get("l_orderkey").windows(2).all(|w| w[0] <= w[1]));
        assert!(get("l_linenumber").iter().all(|&x| (1..=7).contains(&x)));
        assert!(get("l_quantity").iter().all(|&x| (1..=50).contains(&x)));
        assert!(get("l_discount").iter().all(|&x| x <= 10));
        assert!(get("l_returnflag").iter().all(|&x| x < 3));
        assert!(get("l_shipmode").iter().all(|&x| x < 7));
        // 1992-01-02 .. 1998-12-31 in days since 1970.
        assert!(get("l_shipdate")
            .iter()
            .all(|&x| (8036..10_600).contains(&x)));
        assert!(cols.iter().all(|(_, v)| v.len() == 1000));
    }
}
