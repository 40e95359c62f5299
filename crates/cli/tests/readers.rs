//! Pins readers in other processes beside the writer (issue 18): four reader threads run
//! `tersedb query` processes in a loop while a `tersedb import` process commits in batches, then
//! while `erase` and `import` processes churn the file. Every read succeeds (no `Locked`, no
//! error) and, during the import, sees a committed prefix that never goes back; `check` is
//! clean after; page reuse still bounds the file. A reader process killed with SIGKILL in the
//! middle of a read transaction holds nothing once it is gone, and its slot is taken over.

use std::io::Write;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

const BATCH: u32 = 1000;
const N: u32 = 100_000;

fn tersedb() -> Command {
    Command::new(env!("CARGO_BIN_EXE_tersedb"))
}

/// Runs `tersedb ARGS` with `keys` on standard input; panics unless it succeeds.
fn feed(args: &[&str], keys: std::ops::Range<u32>) {
    let mut child = tersedb()
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let text: String = keys.map(|k| format!("{k}\n")).collect();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let o = child.wait_with_output().unwrap();
    assert!(
        o.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// COUNT(*), MIN(key), MAX(key).
type Read = (u64, u64, u64);

/// What a `tersedb query` process reads.
fn query(f: &str) -> Read {
    let o = tersedb()
        .args([
            "query",
            f,
            "SELECT COUNT(*), MIN(key), MAX(key) FROM d",
            "--json",
        ])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "a read failed: {}{out}",
        String::from_utf8_lossy(&o.stderr)
    );
    let values = out.split("\"values\":[").nth(1).unwrap();
    let v: Vec<u64> = values
        .trim_end()
        .trim_end_matches("]}")
        .split(',')
        .map(|x| x.parse().unwrap())
        .collect();
    (v[0], v[1], v[2])
}

/// Runs `writer` while four threads query in a loop; each query's result goes to `judge`
/// with the thread's previous one. Returns the number of reads.
fn with_readers(f: &str, judge: fn(Read, Read), writer: impl FnOnce()) -> usize {
    let done = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..4)
        .map(|_| {
            let (f, done) = (f.to_string(), done.clone());
            std::thread::spawn(move || {
                let mut prev = (0, 0, 0);
                let mut reads = 0;
                loop {
                    let last = done.load(Ordering::Acquire);
                    let r = query(&f);
                    judge(prev, r);
                    prev = r;
                    reads += 1;
                    if last {
                        return reads;
                    }
                }
            })
        })
        .collect();
    writer();
    done.store(true, Ordering::Release);
    readers.into_iter().map(|r| r.join().unwrap()).sum()
}

#[test]
fn four_reader_processes_beside_a_writer() {
    let f = std::env::temp_dir().join(format!("tersedb-cli-{}-readers.tdb", std::process::id()));
    let f = f.to_string_lossy().into_owned();
    let dir = format!("{f}-readers");
    let _ = std::fs::remove_file(&f);
    let _ = std::fs::remove_dir_all(&dir);
    let import = ["import", &f, "--db", "d", "--commit-every", "1000"];
    feed(&import, 0..BATCH);

    // A batched import: every read shows a committed prefix [0, k * BATCH), never an older one.
    let reads = with_readers(
        &f,
        |prev, (count, min, max)| {
            assert!(count > 0 && count.is_multiple_of(BATCH as u64), "{count}");
            assert_eq!((min, max), (0, count - 1), "a prefix");
            assert!(count >= prev.0, "went back from {} to {count}", prev.0);
        },
        || feed(&import, BATCH..N),
    );
    assert!(reads >= 8, "{reads} reads");
    eprintln!("{reads} reads during the import");
    assert_eq!(query(&f), (N as u64, 0, N as u64 - 1));
    let size = std::fs::metadata(&f).unwrap().len();

    // Churn: erase and re-import half the keys, five times, in batches.
    let erase = ["erase", &f, "--db", "d", "--commit-every", "1000"];
    let reads = with_readers(
        &f,
        |_, (count, _, max)| {
            assert!((N as u64 / 2..=N as u64).contains(&count), "{count}");
            assert_eq!(max, N as u64 - 1);
        },
        || {
            for _ in 0..5 {
                feed(&erase, 0..N / 2);
                feed(&import, 0..N / 2);
            }
        },
    );
    assert!(reads >= 8, "{reads} reads");
    let o = tersedb().args(["check", &f]).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stdout));
    let after = std::fs::metadata(&f).unwrap().len();
    eprintln!("file {size} -> {after} bytes after churn; {reads} reads during churn");
    // The churn makes 500 commits of at least four 16 KiB pages each (a leaf, the catalog, the
    // free list, the meta's copy): 32 MB without reuse. Readers lagging a few commits behind
    // hold some pages for a while (measured: 0.7-1.1 MB -> 1.0-1.9 MB).
    assert!(
        after <= 4 * size,
        "page reuse bounds the file: {size} -> {after}"
    );
    let _ = std::fs::remove_file(&f);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A reader process killed (SIGKILL, no cleanup) while it holds a read transaction leaves its
/// slot file behind, still naming its snapshot; its `flock` died with it, so the writer stops
/// protecting that snapshot (page reuse resumes) and the next reader process takes the slot.
#[test]
fn a_killed_reader_process_gives_its_slot_back() {
    use std::os::unix::process::ExitStatusExt;
    use tersedb::storage::readers::ReaderScan;
    use tersedb::{DbConfig, Env, EnvOptions, KeyType, RecordType};

    let f = std::env::temp_dir().join(format!("tersedb-cli-{}-killed.tdb", std::process::id()));
    let f = f.to_string_lossy().into_owned();
    let dir = format!("{f}-readers");
    let _ = std::fs::remove_file(&f);
    let _ = std::fs::remove_dir_all(&dir);
    const KEYS: u32 = 300_000;
    let env = Env::create(&f, &EnvOptions::default()).unwrap();
    let mut w = env.begin_write().unwrap();
    let db = w
        .create_db("d", DbConfig::raw(KeyType::U32, RecordType::Fixed(4)))
        .unwrap();
    for k in 0..KEYS {
        w.append(&db, k, &[0; 4]).unwrap();
    }
    w.commit().unwrap();

    // `tersedb export` into a pipe nobody reads blocks once the pipe and its 1 MiB buffer are
    // full (300,000 keys and values print 5 MB): inside its read transaction.
    let mut reader = tersedb()
        .args(["export", &f, "--db", "d"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut scan = ReaderScan::new(std::path::Path::new(&f));
    let t = std::time::Instant::now();
    let held = loop {
        if let Some(txn) = scan.oldest().unwrap() {
            break txn;
        }
        assert!(
            t.elapsed().as_secs() < 60,
            "the reader never published its snapshot"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    };

    // The writer rewrites a tenth of the keys per commit: the pages of the reader's snapshot
    // stay, so the file grows.
    let size = || std::fs::metadata(&f).unwrap().len();
    let churn = |rounds: std::ops::Range<u32>| {
        for c in rounds {
            let mut w = env.begin_write().unwrap();
            let db = w.open_db("d").unwrap();
            let value = [c as u8; 4];
            for k in (c % 10..KEYS).step_by(10) {
                w.upsert(&db, k, &value).unwrap();
            }
            w.commit().unwrap();
        }
    };
    let before = size();
    churn(0..6);
    let grown = size();
    assert!(
        grown > before + before / 2,
        "a live reader holds its pages: {before} -> {grown}"
    );
    assert_eq!(scan.oldest().unwrap(), Some(held), "the reader is alive");

    reader.kill().unwrap(); // SIGKILL
    let status = reader.wait().unwrap();
    assert_eq!(status.signal(), Some(9), "{status}");
    assert_eq!(scan.oldest().unwrap(), None, "a dead reader holds nothing");
    let slot = std::fs::read(format!("{dir}/r0")).unwrap();
    assert_eq!(
        slot[..8],
        held.to_le_bytes(),
        "the slot file still names the snapshot"
    );

    // Page reuse resumes: more of the same churn, and the file grows no more.
    churn(6..18);
    let after = size();
    assert!(
        after <= grown,
        "page reuse after the reader died: {grown} -> {after}"
    );
    drop(env);

    // The next reader process claims the dead reader's slot instead of making a new one.
    assert_eq!(query(&f), (KEYS as u64, 0, KEYS as u64 - 1));
    let slots = std::fs::read_dir(&dir)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with('r')
        })
        .count();
    assert_eq!(slots, 1, "the slot was taken over");
    let o = tersedb().args(["check", &f]).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stdout));
    eprintln!("file {before} -> {grown} (reader alive) -> {after} (reader killed) bytes");
    let _ = std::fs::remove_file(&f);
    let _ = std::fs::remove_dir_all(&dir);
}
