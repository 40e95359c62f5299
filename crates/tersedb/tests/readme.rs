//! The README's Rust example is this file's `readme_example` (checked line by line) and runs
//! twice in a row on the same file without error.

// README-EXAMPLE-START
fn readme_example() -> tersedb::Result<()> {
    use tersedb::{Env, EnvOptions, TableDef};

    // u64 timestamps (µs) -> f64 readings; keys and values compressed (the default).
    const READINGS: TableDef<u64, f64> = TableDef::new("readings");

    let env = Env::open_or_create("readings.tdb", &EnvOptions::default())?;
    let mut w = env.begin_write()?;
    let readings = w.open_table(READINGS)?; // created on first use, type-checked after
    for s in 0..3600u64 {
        let t = 1_709_251_200_000_000 + s * 1_000_000;
        readings.put(&mut w, t, 20.0 + (s % 60) as f64 / 10.0)?; // put overwrites
    }
    w.commit()?;

    let r = env.begin_read()?; // a snapshot; never blocks the writer
    assert_eq!(readings.get(&r, 1_709_251_201_000_000)?, Some(20.1));
    for item in readings.range(&r, 1_709_251_200_000_000..)?.take(2) {
        let (t, celsius) = item?;
        println!("{t}: {celsius}");
    }
    // Per-minute averages: each minute a key range, folded block by block inside the tree.
    let minutes = r.query_str(
        "SELECT key / 60000000 * 60000000 AS minute, AVG(record) FROM readings GROUP BY key / 60000000",
    )?;
    assert_eq!(minutes.rows.len(), 60);
    Ok(())
}
// README-EXAMPLE-END

/// The README's first ```rust block, without its hidden `# ` lines.
fn readme_block() -> Vec<String> {
    let readme = include_str!("../../../README.md");
    let start = readme.find("```rust\n").expect("README has a Rust block") + 8;
    let len = readme[start..].find("```").expect("the block ends");
    readme[start..start + len]
        .lines()
        .filter(|l| !l.starts_with("# "))
        .map(str::to_string)
        .collect()
}

/// `readme_example`'s body, unindented, without its final `Ok(())`.
fn example_body() -> Vec<String> {
    let me = include_str!("readme.rs");
    let a = me.find("// README-EXAMPLE-START\n").unwrap();
    let b = me.find("// README-EXAMPLE-END").unwrap();
    let lines: Vec<&str> = me[a..b].lines().collect();
    // Drop the marker, the `fn` line, `Ok(())` and the closing brace.
    lines[2..lines.len() - 2]
        .iter()
        .map(|l| l.strip_prefix("    ").unwrap_or(l).to_string())
        .collect()
}

#[test]
fn readme_example_is_this_test_and_runs_twice() {
    assert_eq!(
        readme_block(),
        example_body(),
        "README.md's Rust example and tests/readme.rs differ"
    );
    // The example writes `readings.tdb` in the working directory: run it in a fresh one
    // (this binary's only test, so changing the directory races with nothing).
    let dir = std::env::temp_dir().join(format!("tersedb-readme-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::env::set_current_dir(&dir).unwrap();
    readme_example().unwrap();
    readme_example().unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
}
