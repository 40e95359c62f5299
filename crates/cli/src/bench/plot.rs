//! `--plot DIR`: SVG charts of the benchmarks.

#[cfg(feature = "peers")]
pub fn peers(
    _dir: &std::path::Path,
    _rows: &[crate::bench::peers::Row],
    _n: u64,
    _label: &str,
    _bound: f64,
) -> Result<(), String> {
    Ok(())
}
