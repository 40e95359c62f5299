//! Space under random-order loads and erases: bytes per key (live pages, used bytes, file) after
//! loading keys in ascending or random order in batches, then erasing a share of them at random,
//! against a fresh ascending load of the survivors.
//!
//! `cargo run --release -p tersedb --example space -- N CODEC [BATCH] [ERASE_PCT] [PAGE_SIZE]`
//! (CODEC: none or a codec name; keys are ClusterData-like: clusters of dense runs with gaps).
//! `SPACE_TRACE=1` prints the leaves and the file's pages after every commit of the loads.
//! The random-order load is also measured after closing it (`EnvOptions::shrink_on_close` moves
//! the pages at the end of the file into its free ones), and so are the erases.

use tersedb::{CodecId, DbConfig, Env, EnvOptions};

fn keys(n: usize, seed: u64) -> Vec<u32> {
    // Clusters: runs of keys with small gaps, separated by large jumps (ClusterData-like).
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut v = Vec::with_capacity(n);
    let mut k: u32 = 1000;
    while v.len() < n {
        let run = rng.usize(50..2000);
        for _ in 0..run.min(n - v.len()) {
            k += rng.u32(1..8);
            v.push(k);
        }
        k += rng.u32(1000..200_000);
    }
    v
}

struct Size {
    file: u64,
    pages: u64,
    used: u64,
    key_bytes: u64,
    leaves: u64,
}

fn load(
    path: &std::path::Path,
    codec: Option<CodecId>,
    order: &[u32],
    batch: usize,
    psize: usize,
) -> Env {
    let _ = std::fs::remove_file(path);
    let env = Env::open_or_create(path, &EnvOptions::default().page_size(psize)).unwrap();
    for chunk in order.chunks(batch) {
        let mut w = env.begin_write().unwrap();
        let db = w
            .open_or_create_db("k", DbConfig::u32_set().with_codec(codec))
            .unwrap();
        for &k in chunk {
            w.insert(&db, k, &[]).unwrap();
        }
        w.commit().unwrap();
        if std::env::var_os("SPACE_TRACE").is_some() {
            let s = size(&env, path);
            eprintln!(
                "  batch: leaves {} file pages {}",
                s.leaves,
                s.file / psize as u64
            );
        }
    }
    env
}

fn size(env: &Env, path: &std::path::Path) -> Size {
    let r = env.begin_read().unwrap();
    let db = r.open_db("k").unwrap();
    let s = r.stats(&db).unwrap();
    Size {
        file: std::fs::metadata(path).unwrap().len(),
        pages: s.bytes,
        used: s.used_bytes,
        key_bytes: s.leaf_key_bytes,
        leaves: s.leaf_pages,
    }
}

fn row(label: &str, n: usize, s: &Size) {
    let n = n as f64;
    println!(
        "{label:<28} keys {n:>9}  file {:>7.3}  pages {:>7.3}  used {:>7.3}  leaf-key {:>7.3} B/key  leaves {}",
        s.file as f64 / n,
        s.pages as f64 / n,
        s.used as f64 / n,
        s.key_bytes as f64 / n,
        s.leaves
    );
}

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let n: usize = a.get(1).map_or(2_000_000, |s| s.parse().unwrap());
    let codec_name = a.get(2).map_or("bp128", |s| s.as_str());
    let batch: usize = a.get(3).map_or(100_000, |s| s.parse().unwrap());
    let erase_pct: usize = a.get(4).map_or(90, |s| s.parse().unwrap());
    let psize: usize = a.get(5).map_or(16384, |s| s.parse().unwrap());
    let codec = if codec_name == "none" {
        None
    } else {
        Some(CodecId::from_name(codec_name).expect("codec name"))
    };
    let dir = std::env::temp_dir().join(format!("tersedb-space-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("a.tdb");
    let ks = keys(n, 7);
    let t = std::time::Instant::now();
    let env = load(&path, codec, &ks, batch, psize);
    let asc_s = t.elapsed().as_secs_f64();
    row(
        &format!("{codec_name} ascending ({asc_s:.2}s)"),
        n,
        &size(&env, &path),
    );
    drop(env);
    let mut shuffled = ks.clone();
    fastrand::Rng::with_seed(9).shuffle(&mut shuffled);
    let t = std::time::Instant::now();
    let env = load(&path, codec, &shuffled, batch, psize);
    let rnd_s = t.elapsed().as_secs_f64();
    row(
        &format!("{codec_name} random ({rnd_s:.2}s)"),
        n,
        &size(&env, &path),
    );
    // Closing gives the free pages at the end back (`EnvOptions::shrink_on_close`).
    let t = std::time::Instant::now();
    drop(env);
    let close_s = t.elapsed().as_secs_f64();
    let env = Env::open(&path, &EnvOptions::default()).unwrap();
    row(
        &format!("  after close ({close_s:.2}s)"),
        n,
        &size(&env, &path),
    );
    // Erase a share of the keys at random, in batches.
    let n_erase = n * erase_pct / 100;
    let before = std::fs::metadata(&path).unwrap().len();
    let mut max_file = before;
    for chunk in shuffled[..n_erase].chunks(batch) {
        let mut w = env.begin_write().unwrap();
        let db = w.open_db("k").unwrap();
        for &k in chunk {
            assert!(w.erase(&db, k).unwrap());
        }
        w.commit().unwrap();
        max_file = max_file.max(std::fs::metadata(&path).unwrap().len());
    }
    let survivors_n = n - n_erase;
    let erased = size(&env, &path);
    row(&format!("erased {erase_pct}%"), survivors_n, &erased);
    println!("  file before erase {before}, largest during erase {max_file}");
    drop(env);
    let env = Env::open(&path, &EnvOptions::default()).unwrap();
    row("  after close", survivors_n, &size(&env, &path));
    for _ in 0..2 {
        env.begin_write().unwrap().commit().unwrap();
    }
    println!(
        "  file after two empty commits {}",
        std::fs::metadata(&path).unwrap().len()
    );
    let c = env.check().unwrap();
    println!(
        "  check: {} pages, {} free, clean {}",
        c.total_pages,
        c.free_pages,
        c.is_clean()
    );
    if std::env::var("SPACE_DEBUG").is_ok() {
        for id in (c.total_pages.saturating_sub(30)..c.total_pages).rev() {
            match env.describe_page(id) {
                Ok(d) => println!("  page {id}: {}", d.lines().next().unwrap_or("")),
                Err(e) => println!("  page {id}: {e}"),
            }
        }
    }
    drop(env);
    let mut survivors = shuffled[n_erase..].to_vec();
    survivors.sort_unstable();
    let path2 = dir.join("b.tdb");
    let env = load(&path2, codec, &survivors, batch, psize);
    row("fresh load of survivors", survivors_n, &size(&env, &path2));
    drop(env);
    let _ = std::fs::remove_dir_all(&dir);
}
