//! Row queries on integer keys whose condition reads the record
//! (`SELECT key, record FROM t WHERE record > 100 [AND key ...] [ORDER BY key DESC] [LIMIT n]
//! [OFFSET m]`): leaf by leaf through the block scan, each record chunk judged by its bounds
//! first ([`Judge`], the zone map on records):
//!
//! ```text
//! never   no row; a key block whose slots all lie in such chunks is not decoded
//! keys    the rows whose keys lie in the verdict's intervals, untested; OFFSET skips them
//!         in bulk and a record is read only when it is selected
//! test    each row's record read and the condition tested, as a cursor walk does
//! ```
//!
//! Leaves come in key order (reversed with ORDER BY key DESC: leaves, blocks, chunks and rows
//! backwards); LIMIT stops the walk.

use super::reczone::{Judge, Runs, Verdict};
use super::{column_name, overlapping, rec_val, Window};
use crate::btree::scan::{self, KeyBuffer};
use crate::db::Db;
use crate::error::{PageId, Result};
use crate::query::ast::{Item, Query};
use crate::query::plan::{self, Bound, RecVal};
use crate::query::value::{QueryResult, QueryStats, Value};
use crate::txn::Reader;

/// The rows of `q` over the key intervals `ivs`, whose residual condition `residual` reads
/// the record.
pub(super) fn rows(
    txn: &dyn Reader,
    q: &Query,
    db: &Db,
    root: PageId,
    ivs: &[(u64, u64)],
    residual: &Bound,
    mut stats: QueryStats,
) -> Result<QueryResult> {
    let vt = db.value_type();
    let items = q.items();
    let rec_out = items.iter().any(|s| s.item == Item::Record);
    let desc = q.descending;
    let mut win = Window::new(q);
    let mut judge = Judge::default();
    let mut blocks = Vec::new();
    let mut buf: Box<KeyBuffer> = Box::default();
    let mut runs = Runs::new();
    scan::leaves_overlapping(txn.pages(), &db.spec, root, ivs, desc, &mut |leaf, ivs| {
        if win.full() {
            return Ok(false);
        }
        stats.leaves += 1;
        let lo = ivs.first().map_or(0, |iv| iv.0);
        let hi = ivs.last().map_or(u64::MAX, |iv| iv.1);
        leaf.blocks_in(&mut blocks, lo, hi)?;
        judge.leaf(leaf, Some(residual))?;
        for bi in 0..blocks.len() {
            let Some(b) = blocks.get(if desc { blocks.len() - 1 - bi } else { bi }) else {
                continue;
            };
            if win.full() {
                return Ok(false);
            }
            let (hit, _) = overlapping(ivs, b.first, b.last);
            if hit.is_empty() {
                stats.blocks_skipped += 1;
                continue;
            }
            let slots = b.slots();
            let zs = judge.block(leaf, &slots, true, &mut stats)?;
            if judge.all(zs.clone(), |v| *v == Verdict::Never) {
                stats.blocks_skipped += 1;
                continue;
            }
            let keys = leaf.decode_keys(b, &mut buf)?;
            stats.blocks_decoded += 1;
            // The block's runs of rows in walk order: (indexes in the block, tested).
            judge.runs(zs, &slots, &keys, hit, true, &mut runs);
            if desc {
                runs.reverse();
            }
            for (run, test) in runs.drain(..) {
                let mut run = run;
                if !test && win.skip > 0 {
                    // OFFSET over untested rows: skipped without reading them.
                    let n = win.skip.min(run.len() as u64) as usize;
                    win.skip -= n as u64;
                    run = if desc {
                        run.start..run.end - n
                    } else {
                        run.start + n..run.end
                    };
                }
                for j in 0..run.len() {
                    let i = if desc { run.end - 1 - j } else { run.start + j };
                    let k = keys.at(i);
                    let rec = if test || rec_out {
                        rec_val(vt, &leaf.record(slots.start + i)?, leaf.page_id())?
                    } else {
                        RecVal::None
                    };
                    if test && !plan::test(residual, k, rec) {
                        continue;
                    }
                    if win.take() {
                        let mut row = Vec::with_capacity(items.len());
                        for s in &items {
                            row.push(match (s.item, rec) {
                                (Item::Key, _) => Value::Int(k as i128),
                                (Item::Record, RecVal::Int(v)) => Value::Int(v),
                                (Item::Record, RecVal::F64(v)) => Value::Float(v),
                                _ => Value::Null,
                            });
                        }
                        win.rows.push(row);
                    }
                    if win.full() {
                        return Ok(false);
                    }
                }
            }
        }
        Ok(!win.full())
    })?;
    Ok(QueryResult {
        columns: items.iter().map(|s| column_name(q, s)).collect(),
        values: Vec::new(),
        rows: win.rows,
        stats,
    })
}
