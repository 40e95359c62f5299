//! Pins what opening a file that is not a whole tersedb file does (issue 18, "hostile files"):
//! a clear error (`Corrupted` naming a page, or `BadFormat` saying what the file is not), or the
//! newest commit; never a panic, never an older commit without a note, and a failed open leaves
//! the file's bytes as they were.
//! * a real file cut at every page boundary and inside pages (a lost tail, a copy stopped
//!   half-way): read-only and read-write opens give the newest commit or an error; with
//!   recovery on, an older commit only with a note saying so;
//! * an empty file, a file of random bytes (shorter and longer than a page), a file of zeros, a
//!   SQLite database, a file holding only the first page of a tersedb file: `BadFormat` or
//!   `Corrupted`, and the bytes unchanged;
//! * a directory given as the path: `BadFormat` naming it, nothing created beside it; a FIFO
//!   or a device: the same, and no open waits on a FIFO for a writer;
//! * a file the operating system will not open for writing: an error naming the path.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use tersedb::{CodecId, DbConfig, Env, EnvOptions, Error, KeyType, RecordType};

const PS: usize = 1024;

fn opts() -> EnvOptions {
    EnvOptions::default().page_size(PS)
}

/// A scratch directory for one test, removed when dropped (the reader table lives beside the
/// data file, so each test keeps its files in a directory of its own).
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let d = std::env::temp_dir().join(format!("tersedb-hostile-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        Scratch(d)
    }
    fn path(&self, file: &str) -> PathBuf {
        self.0.join(file)
    }
    /// Names in the directory, sorted.
    fn names(&self) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(&self.0)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

type Model = BTreeMap<(String, u64), Vec<u8>>;

/// Commit `c` of the workload: a u32 database with variable records (one value long enough for
/// an overflow chain), a u64 database under BP128; inserts, overwrites and erases.
fn commit(env: &Env, model: &mut Model, c: u64) {
    let mut w = env.begin_write().unwrap();
    let a = w
        .open_or_create_db("a", DbConfig::raw(KeyType::U32, RecordType::Variable))
        .unwrap();
    let b = w
        .open_or_create_db(
            "b",
            DbConfig::raw(KeyType::U64, RecordType::Fixed(8)).with_codec(Some(CodecId::Bp128)),
        )
        .unwrap();
    for k in 0..60u64 {
        let key = k * 7 + c;
        if k % 6 == 0 {
            if w.erase(&a, (key / 2) as u32).unwrap() {
                model.remove(&("a".into(), key / 2));
            }
        } else {
            let len = if k == 13 {
                3 * PS
            } else {
                (k as usize * 5) % 40
            };
            let v = vec![c as u8 ^ k as u8; len];
            w.upsert(&a, key as u32, &v).unwrap();
            model.insert(("a".into(), key), v);
        }
        let bk = (c << 20) + k * 3;
        w.upsert(&b, bk, &bk.to_le_bytes()).unwrap();
        model.insert(("b".into(), bk), bk.to_le_bytes().to_vec());
    }
    w.commit().unwrap();
}

/// Every entry of both databases, or the first error a read gave.
fn contents(env: &Env) -> tersedb::Result<Model> {
    let r = env.begin_read()?;
    let mut m = Model::new();
    for name in ["a", "b"] {
        let db = match r.open_db(name) {
            Ok(db) => db,
            Err(Error::DbNotFound(_)) => continue,
            Err(e) => return Err(e),
        };
        for item in r.iter(&db)? {
            let (k, v) = item?;
            m.insert((name.to_string(), k.as_key().as_u64().unwrap()), v);
        }
    }
    Ok(m)
}

/// A file with four commits: its bytes and the model after each commit (index = commit).
fn build(dir: &Scratch) -> (Vec<u8>, Vec<Model>) {
    let path = dir.path("source.tdb");
    let env = Env::create(&path, &opts()).unwrap();
    let mut model = Model::new();
    let mut states = vec![Model::new()];
    for c in 1..=4 {
        commit(&env, &mut model, c);
        states.push(model.clone());
    }
    assert!(env.check().unwrap().is_clean());
    drop(env);
    let bytes = std::fs::read(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    (bytes, states)
}

/// The errors a damaged or foreign file may give: they name a page or say what the file is.
fn clear(e: &Error) -> bool {
    match e {
        Error::Corrupted { what, .. } | Error::BadFormat(what) => !what.is_empty(),
        _ => false,
    }
}

#[derive(Clone, Copy, Debug)]
enum Open {
    ReadOnly,
    ReadWrite,
    Recover,
}

fn open_as(path: &Path, how: Open) -> tersedb::Result<Env> {
    match how {
        Open::ReadOnly => Env::open_read_only(path, &opts()),
        Open::ReadWrite => Env::open(path, &opts()),
        Open::Recover => Env::open(path, &opts().recover(true)),
    }
}

/// Opens `bytes` written to a fresh file in each way and checks the outcome; returns how many
/// opens gave the newest commit and how many an error.
fn probe_cut(
    dir: &Scratch,
    bytes: &[u8],
    states: &[Model],
    hows: &[Open],
    what: &str,
) -> (usize, usize) {
    let newest = states.last().unwrap();
    let (mut whole, mut refused) = (0, 0);
    for &how in hows {
        let path = dir.path("cut.tdb");
        std::fs::write(&path, bytes).unwrap();
        let what = format!("{what}, {how:?}");
        match open_as(&path, how) {
            Err(e) => {
                assert!(clear(&e), "{what}: unclear error: {e:?}");
                assert!(
                    std::fs::read(&path).unwrap() == bytes,
                    "{what}: a refused open wrote to the file"
                );
                refused += 1;
            }
            Ok(env) => {
                let got = contents(&env);
                let notes = env.open_notes();
                match (&got, how) {
                    (Ok(m), _) if m == newest => whole += 1,
                    // Recovery may roll back, and says so.
                    (Ok(m), Open::Recover) => {
                        assert!(states.contains(m), "{what}: contents of no commit");
                        assert!(!notes.is_empty(), "{what}: rolled back without a note");
                    }
                    (Ok(_), _) => panic!("{what}: opened an older commit ({notes:?})"),
                    (Err(e), _) => assert!(clear(e), "{what}: unclear read error: {e:?}"),
                }
                // `check` answers without panicking; after a clean open of the newest commit
                // it finds nothing (a cut at or past the page count loses nothing).
                let report = env.check();
                if matches!(&got, Ok(m) if m == newest) && notes.is_empty() {
                    let r = report.unwrap();
                    assert!(r.is_clean(), "{what}: {r}");
                }
                if matches!(how, Open::ReadOnly) {
                    drop(env);
                    assert!(
                        std::fs::read(&path).unwrap() == bytes,
                        "{what}: read-only wrote"
                    );
                }
            }
        }
        std::fs::remove_file(&path).unwrap();
    }
    (whole, refused)
}

#[test]
fn a_file_cut_anywhere_opens_the_newest_commit_or_says_why_not() {
    let dir = Scratch::new("cut");
    let (good, states) = build(&dir);
    assert_eq!(good.len() % PS, 0);
    let pages = good.len() / PS;
    assert!(pages > 20, "the file should span many pages, has {pages}");
    let long = std::env::var_os("TERSEDB_LONG").is_some();
    let mut cuts: Vec<usize> = Vec::new();
    for p in 0..pages {
        // Page boundaries, inside the checksum and kind bytes, mid-page, the last byte.
        for off in [0, 1, 8, 9, 100, PS / 2, PS - 1] {
            cuts.push(p * PS + off);
        }
    }
    // Inside the two meta pages: the first 64 bytes, then every 7th (every byte with
    // TERSEDB_LONG=1).
    cuts.extend((0..2 * PS).filter(|&c| long || c < 64 || c % 7 == 0));
    cuts.sort_unstable();
    cuts.dedup();
    let all = [Open::ReadOnly, Open::ReadWrite, Open::Recover];
    let (mut whole, mut refused, mut opens) = (0, 0, 0);
    for &cut in &cuts {
        // A read-only open retries a damaged meta page for 100 ms or more (a writer of another
        // process may be writing it): a sample of cuts, every cut with TERSEDB_LONG=1.
        let sampled = cut % (8 * PS) == 0 || [PS / 2, PS + 9, 3 * PS / 2].contains(&cut);
        let hows = if long || sampled { &all[..] } else { &all[1..] };
        let (w, r) = probe_cut(&dir, &good[..cut], &states, hows, &format!("cut at {cut}"));
        whole += w;
        refused += r;
        opens += hows.len();
    }
    // The whole file opens in every way (the probe can succeed); no cut file opens as the
    // newest commit (the meta pages count the file's pages); recovery may open an older one.
    assert_eq!(probe_cut(&dir, &good, &states, &all, "whole file"), (3, 0));
    assert_eq!(whole, 0, "a cut file opened as the newest commit");
    let recovered = opens - refused;
    assert!(
        recovered < cuts.len(),
        "{recovered} recovered of {} cuts",
        cuts.len()
    );
    eprintln!(
        "{} cuts, {opens} opens: {refused} refused, {recovered} recovered",
        cuts.len()
    );
}

#[test]
fn a_file_with_pages_past_its_page_count_opens_the_newest_commit() {
    // The opposite of a cut: a commit that extended the file and crashed before its meta page.
    let dir = Scratch::new("long");
    let (good, states) = build(&dir);
    for extra in [1, PS - 1, PS, 3 * PS + 17] {
        let mut long = good.clone();
        long.extend((0..extra).map(|i| (i * 31 + 7) as u8));
        let all = [Open::ReadOnly, Open::ReadWrite, Open::Recover];
        let (w, r) = probe_cut(
            &dir,
            &long,
            &states,
            &all,
            &format!("{extra} bytes appended"),
        );
        assert_eq!((w, r), (3, 0), "{extra} bytes appended");
    }
}

/// Files that are not tersedb files at all: each open is refused with `BadFormat` (or
/// `Corrupted`), and the file stays as it was.
#[test]
fn foreign_files_are_refused_and_left_alone() {
    let dir = Scratch::new("foreign");
    let seed = 0x5eed_f11e_u64;
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut sqlite = b"SQLite format 3\0".to_vec();
    sqlite.extend_from_slice(&[0x10, 0x00, 0x01, 0x01, 0x00, 0x40, 0x20, 0x20]);
    sqlite.resize(4096 * 3, 0);
    let (good, _) = build(&dir);
    let mut random_big = vec![0u8; 64 * 1024];
    rng.fill(&mut random_big);
    let mut random_small = vec![0u8; 100];
    rng.fill(&mut random_small);
    // A tersedb file's first page alone, and its first page repeated (meta 0 where meta 1 and
    // the data pages should be).
    let first = good[..PS].to_vec();
    let repeated: Vec<u8> = first.iter().copied().cycle().take(good.len()).collect();
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("empty", Vec::new(), "empty"),
        ("one byte", vec![0x42], "not a tersedb file"),
        ("random, 100 bytes", random_small, "not a tersedb file"),
        ("random, 64 KiB", random_big, "not a tersedb file"),
        ("zeros, 64 KiB", vec![0; 64 * 1024], "not a tersedb file"),
        ("SQLite database", sqlite, "not a tersedb file"),
        (
            "text",
            b"key,value\n1,2\n".repeat(100),
            "not a tersedb file",
        ),
        ("first page only", first, ""),
        ("first page repeated", repeated, ""),
    ];
    for (name, bytes, says) in cases {
        for how in [Open::ReadOnly, Open::ReadWrite, Open::Recover] {
            let path = dir.path("foreign.tdb");
            std::fs::write(&path, &bytes).unwrap();
            let what = format!("{name}, {how:?} (seed {seed})");
            match open_as(&path, how) {
                // What is left of a tersedb file may hold an older commit that recovery opens
                // on request, saying so; its reads then fail on the missing pages.
                Ok(env) if matches!(how, Open::Recover) && says.is_empty() => {
                    assert!(!env.open_notes().is_empty(), "{what}: no note");
                    match contents(&env) {
                        Ok(m) => assert!(m.is_empty(), "{what}: {} entries", m.len()),
                        Err(e) => assert!(clear(&e), "{what}: unclear read error: {e:?}"),
                    }
                    continue;
                }
                Ok(_) => panic!("{what}: opened"),
                Err(e) => {
                    assert!(clear(&e), "{what}: unclear error: {e:?}");
                    assert!(e.to_string().contains(says), "{what}: {e}");
                }
            }
            assert!(
                std::fs::read(&path).unwrap() == bytes,
                "{what}: file changed"
            );
            std::fs::remove_file(&path).unwrap();
        }
    }
    // `open_or_create` takes an empty file as a new one, and only an empty one.
    let path = dir.path("empty.tdb");
    std::fs::write(&path, b"").unwrap();
    let env = Env::open_or_create(&path, &opts()).unwrap();
    assert!(env.check().unwrap().is_clean());
    drop(env);
    std::fs::write(&path, b"SQLite format 3\0").unwrap();
    let e = Env::open_or_create(&path, &opts()).unwrap_err();
    assert!(matches!(e, Error::BadFormat(_)), "{e:?}");
    let e = Env::create(&path, &opts()).unwrap_err();
    assert!(e.to_string().contains("already exists"), "{e}");
    assert_eq!(std::fs::read(&path).unwrap(), b"SQLite format 3\0");
}

#[test]
fn a_directory_is_not_a_tersedb_file() {
    let dir = Scratch::new("dir");
    let sub = dir.path("data.tdb");
    std::fs::create_dir(&sub).unwrap();
    type Opener = fn(&Path) -> tersedb::Result<Env>;
    let tries: [(&str, Opener); 4] = [
        ("open", |p| Env::open(p, &opts())),
        ("open_read_only", |p| Env::open_read_only(p, &opts())),
        ("open_or_create", |p| Env::open_or_create(p, &opts())),
        ("create", |p| Env::create(p, &opts())),
    ];
    for (name, f) in tries {
        let e = f(&sub).map(|_| ()).unwrap_err();
        assert!(matches!(e, Error::BadFormat(_)), "{name}: {e:?}");
        let text = e.to_string();
        assert!(
            text.contains("is a directory") && text.contains("data.tdb"),
            "{name}: {text}"
        );
        // Nothing was created beside it (no reader table for a file that is not one).
        assert_eq!(dir.names(), ["data.tdb"], "{name}");
        assert_eq!(std::fs::read_dir(&sub).unwrap().count(), 0, "{name}");
    }
}

/// Opens `path` in every way on another thread; `None` when that takes over 20 s (a hang).
fn open_all_within(path: &Path) -> Option<Vec<(&'static str, tersedb::Result<()>)>> {
    let path = path.to_path_buf();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut out = Vec::new();
        for (name, r) in [
            ("open_read_only", Env::open_read_only(&path, &opts())),
            ("open", Env::open(&path, &opts())),
            ("open_or_create", Env::open_or_create(&path, &opts())),
            ("create", Env::create(&path, &opts())),
        ] {
            out.push((name, r.map(|_| ())));
        }
        let _ = tx.send(out);
    });
    rx.recv_timeout(std::time::Duration::from_secs(20)).ok()
}

#[test]
fn a_fifo_or_a_device_is_not_a_tersedb_file_and_never_hangs() {
    let dir = Scratch::new("fifo");
    let fifo = dir.path("pipe.tdb");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    assert!(matches!(made, Ok(s) if s.success()), "mkfifo: {made:?}");
    for target in [fifo.as_path(), Path::new("/dev/null")] {
        let results =
            open_all_within(target).unwrap_or_else(|| panic!("{}: an open hung", target.display()));
        for (name, r) in results {
            let e = r.unwrap_err();
            let text = e.to_string();
            assert!(matches!(e, Error::BadFormat(_)), "{name}: {e:?}");
            assert!(
                text.contains("not a regular file") && text.contains(&*target.to_string_lossy()),
                "{name}: {text}"
            );
        }
    }
    assert_eq!(dir.names(), ["pipe.tdb"], "nothing created beside the FIFO");
}

/// Makes `path` unwritable for this process: mode 0444, and, for a user the mode does not stop
/// (root), the immutable attribute. `None` when neither works here (the error mapping is then
/// pinned by the unit test in `storage/file.rs` alone).
fn make_unwritable(path: &Path) -> Option<Unwritable> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o444)).unwrap();
    let writable = || std::fs::OpenOptions::new().write(true).open(path).is_ok();
    if !writable() {
        return Some(Unwritable(path.to_path_buf(), false));
    }
    let chattr = std::process::Command::new("chattr")
        .arg("+i")
        .arg(path)
        .stderr(std::process::Stdio::null())
        .status();
    if matches!(chattr, Ok(s) if s.success()) && !writable() {
        return Some(Unwritable(path.to_path_buf(), true));
    }
    None
}

/// Undoes [`make_unwritable`] so the scratch directory can be removed.
struct Unwritable(PathBuf, bool);

impl Drop for Unwritable {
    fn drop(&mut self) {
        if self.1 {
            let _ = std::process::Command::new("chattr")
                .arg("-i")
                .arg(&self.0)
                .status();
        }
    }
}

#[test]
fn a_file_that_cannot_be_written_is_refused_for_writing_and_opens_read_only() {
    let dir = Scratch::new("ro");
    let path = dir.path("ro.tdb");
    let env = Env::create(&path, &opts()).unwrap();
    let mut model = Model::new();
    commit(&env, &mut model, 1);
    drop(env);
    let before = std::fs::read(&path).unwrap();
    let Some(_guard) = make_unwritable(&path) else {
        eprintln!("note: this process can write a 0444 file and cannot set it immutable");
        return;
    };
    for (name, r) in [
        ("open", Env::open(&path, &opts())),
        ("open_or_create", Env::open_or_create(&path, &opts())),
    ] {
        let e = r.map(|_| ()).unwrap_err();
        let text = e.to_string();
        assert!(
            matches!(&e, Error::Io(io) if io.kind() == std::io::ErrorKind::PermissionDenied),
            "{name}: {e:?}"
        );
        assert!(
            text.contains("ro.tdb") && text.contains("read-only"),
            "{name}: {text}"
        );
    }
    // Reading needs no write access to the file.
    let env = Env::open_read_only(&path, &opts()).unwrap();
    assert_eq!(contents(&env).unwrap(), model);
    assert!(env.check().unwrap().is_clean());
    drop(env);
    assert_eq!(std::fs::read(&path).unwrap(), before);
}
