//! `tersedb bench --block-size 128,256`: the store benchmark for every codec at each block size
//! in one run, as the Upscaledb paper's section 4.3.2 (Fig. 11: sizes and timings at block sizes
//! 128 and 256). A block size counts keys per block, start key included, as `import --block-size`
//! does; a codec whose format holds fewer keys per block (BP128, SIMD FOR and the PFOR family hold
//! 129: one 128-value frame after the start key) gets a row saying so, not a silent clamp.
//! Round-robin over (size, codec) per repeat, medians, every answer verified by the store run.

use super::store::{generate_keys, one_run, Options, Run, DEFAULT_CODECS};
use super::timing::median;
use tersedb::CodecId;

/// Runs every codec of `opts` (default: all) at each of `sizes` and prints Fig. 11's table.
pub fn run(opts: &Options, sizes: &[u16]) -> Result<(), String> {
    if sizes.contains(&0) {
        return Err("block sizes must be at least 2 keys (0 = the codec's maximum is not a size to compare)".into());
    }
    let (keys, label, insert_order, lookups) = generate_keys(opts)?;
    let names: Vec<String> = if opts.codecs.is_empty() {
        DEFAULT_CODECS.iter().map(|s| s.to_string()).collect()
    } else {
        opts.codecs
            .iter()
            .filter(|c| *c != "none")
            .cloned()
            .collect()
    };
    let mut codecs = Vec::new();
    for n in &names {
        codecs.push(CodecId::from_name(n).ok_or_else(|| {
            format!(
                "unknown codec {n:?} ({})",
                CodecId::ALL.map(|c| c.name()).join(", ")
            )
        })?);
    }
    let reps = opts.repeat.max(1);
    // (codec, size) -> runs; None where the codec cannot take the size.
    let mut runs: Vec<Vec<Option<Vec<Run>>>> = codecs
        .iter()
        .map(|&c| {
            sizes
                .iter()
                .map(|&s| (s as usize <= max_keys(c)).then(Vec::new))
                .collect()
        })
        .collect();
    // Uncompressed leaves once per repeat: the reference the paper's figures are relative to.
    let mut none_runs = Vec::new();
    let cells = runs.iter().flatten().filter(|r| r.is_some()).count() + 1;
    let mut progress = crate::progress::Progress::new((reps * cells) as u64, "runs");
    for i in 0..reps {
        progress.message(&format!("none run {}/{reps}", i + 1));
        let o = Options {
            block_size: 0,
            ..opts.clone()
        };
        none_runs.push(
            one_run(&o, None, &keys, &insert_order, &lookups).map_err(|m| format!("none: {m}"))?,
        );
        progress.inc(1);
        for (ci, &codec) in codecs.iter().enumerate() {
            for (si, &size) in sizes.iter().enumerate() {
                let Some(list) = runs[ci][si].as_mut() else {
                    continue;
                };
                progress.message(&format!(
                    "{} block {size} run {}/{reps}",
                    codec.name(),
                    i + 1
                ));
                let o = Options {
                    block_size: size,
                    ..opts.clone()
                };
                list.push(
                    one_run(&o, Some(codec), &keys, &insert_order, &lookups)
                        .map_err(|m| format!("{} at block size {size}: {m}", codec.name()))?,
                );
                progress.inc(1);
            }
        }
    }
    progress.finish(&format!(
        "{} runs of {} codecs at block sizes {sizes:?}, every answer verified",
        reps * cells,
        codecs.len()
    ));
    let n = keys.len() as f64;
    if !opts.json {
        outln!(
            "# tersedb bench --block-size (Upscaledb paper Fig. 11): {} {} keys, {} inserts, page {} B, median of {reps}; isa {}",
            keys.len(),
            label,
            opts.order,
            opts.page_size,
            tersedb_codecs::Isa::detect()
        );
        outln!("# block size = keys per block, start key included; seconds");
        outln!(
            "{:<12} {:>6} {:>9} {:>9} {:>9} {:>9} {:>9} {:>11}",
            "codec",
            "block",
            "bytes/key",
            "insert s",
            "lookup s",
            "cursor s",
            "SUM s",
            "AVG>max/2 s"
        );
    }
    let mut rows: Vec<Row> = vec![(None, 0, Some(&none_runs))];
    for (ci, &c) in codecs.iter().enumerate() {
        for (si, &size) in sizes.iter().enumerate() {
            rows.push((Some(c), size, runs[ci][si].as_ref()));
        }
    }
    for (codec, size, list) in rows {
        {
            let name = codec.map_or("none", |c| c.name());
            let Some(list) = list else {
                let max = codec.map_or(0, max_keys);
                if opts.json {
                    outln!(
                        "{{\"codec\":\"{name}\",\"block_size\":{size},\"supported\":false,\"max_block_keys\":{max}}}"
                    );
                } else {
                    outln!("{name:<12} {size:>6}   not supported: {name} holds at most {max} keys per block (docs/BENCHMARKS.md)");
                }
                continue;
            };
            let med = |f: fn(&Run) -> f64| median(&mut list.iter().map(f).collect::<Vec<_>>());
            let bpk = list[0].file_bytes as f64 / n;
            let (ins, find, cur, sum, avg) = (
                med(|r| r.insert_s),
                med(|r| r.find_s),
                med(|r| r.cursor_s),
                med(|r| r.sum_s),
                med(|r| r.avg_where_s),
            );
            if opts.json {
                outln!(
                    "{{\"codec\":\"{name}\",\"block_size\":{size},\"supported\":true,\"keys\":{},\"bytes_per_key\":{bpk:.4},\"insert_s\":{ins:.6},\"find_s\":{find:.6},\"cursor_s\":{cur:.6},\"sum_s\":{sum:.6},\"avg_where_s\":{avg:.6},\"verified\":true}}",
                    keys.len()
                );
            } else {
                let size = if codec.is_some() {
                    size.to_string()
                } else {
                    "-".into()
                };
                outln!(
                    "{name:<12} {size:>6} {bpk:>9.3} {ins:>9.3} {find:>9.3} {cur:>9.4} {sum:>9.5} {avg:>11.5}"
                );
            }
        }
    }
    Ok(())
}

/// One line of the table: codec (`None` = uncompressed), block size, its runs (`None` = the codec
/// cannot take the size).
type Row<'a> = (Option<CodecId>, u16, Option<&'a Vec<Run>>);

/// Most keys per block the engine takes for `codec`.
fn max_keys(codec: CodecId) -> usize {
    tersedb_codecs::codec::max_keys(codec)
}
