//! String keys: words -> counts and composite keys (`country/city`) -> populations, with prefix
//! ranges and a `LIKE 'prefix%'` query. Keys are compressed with head and tail compression.
//!
//! `cargo run -p tersedb --example string_keys [FILE]`

use std::path::{Path, PathBuf};
use tersedb::{Env, EnvOptions, TableDef};

/// Word -> how often it occurs.
const WORDS: TableDef<&str, u64> = TableDef::new("words");
/// `country/city` -> population.
const CITIES: TableDef<&str, u64> = TableDef::new("cities");

/// Counts the words of a text into `path`; returns the cities of France, in key order.
pub fn run(path: &Path) -> tersedb::Result<Vec<(String, u64)>> {
    let env = Env::open_or_create(path, &EnvOptions::default())?;
    let mut w = env.begin_write()?;
    let words = w.open_table(WORDS)?;
    let text = "the quick brown fox jumps over the lazy dog the end";
    for word in text.split_whitespace() {
        let n = words.get(&w, word)?.unwrap_or(0);
        words.put(&mut w, word, n + 1)?;
    }
    let cities = w.open_table(CITIES)?;
    for (key, pop) in [
        ("de/berlin", 3_878_100),
        ("de/hamburg", 1_910_160),
        ("fr/lyon", 522_250),
        ("fr/marseille", 877_215),
        ("fr/paris", 2_102_650),
        ("it/rome", 2_746_984),
    ] {
        cities.put(&mut w, key, pop)?;
    }
    w.commit()?;

    let r = env.begin_read()?;
    // Counts add up across runs: "the" is 3 after the first, 6 after the second.
    println!("the: {}", words.get(&r, "the")?.unwrap_or(0));
    // A prefix is a key range: every key from "fr/" up to (excluding) "fr0" ('0' follows '/').
    let france: Vec<(String, u64)> = cities.range(&r, "fr/".."fr0")?.collect::<Result<_, _>>()?;
    for (city, pop) in &france {
        println!("{city}: {pop}");
    }
    let q = r.query_str("SELECT COUNT(*), SUM(record) FROM cities WHERE key LIKE 'fr/%'")?;
    println!("{q}");
    Ok(france)
}

fn main() -> tersedb::Result<()> {
    let path = std::env::args()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("tersedb-example-string-keys.tdb"));
    run(&path)?;
    Ok(())
}
