//! Helpers shared by the CLI's integration tests: run the `tersedb` binary, name a scratch file,
//! read its output.
#![allow(dead_code)]

use std::io::Write;
use std::process::{Command, Output, Stdio};

/// Runs `tersedb ARGS` with `stdin` as its input.
pub fn tersedb(args: &[&str], stdin: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_tersedb"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run tersedb");
    // A command that fails before reading its input (a bad option) closes the pipe: the write
    // may then fail with BrokenPipe, which is the command's business, not the test's.
    if let Err(e) = child.stdin.take().unwrap().write_all(stdin) {
        assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe, "{e}");
    }
    child.wait_with_output().unwrap()
}

/// A scratch file path, removed if present (the process id keeps test binaries apart).
pub fn temp(name: &str) -> String {
    let p = std::env::temp_dir().join(format!("tersedb-cli-{}-{name}.tdb", std::process::id()));
    let _ = std::fs::remove_file(&p);
    p.to_string_lossy().into_owned()
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The value of a numeric or string field of a flat JSON object (one line of `--json` output).
pub fn field<'a>(line: &'a str, name: &str) -> &'a str {
    let pat = format!("\"{name}\":");
    let start = line
        .find(&pat)
        .unwrap_or_else(|| panic!("{name} missing: {line}"))
        + pat.len();
    let rest = &line[start..];
    let end = rest.find([',', '}']).unwrap_or(rest.len());
    rest[..end].trim_matches('"')
}

/// A numeric field of a flat JSON object.
pub fn num(line: &str, name: &str) -> f64 {
    field(line, name)
        .parse()
        .unwrap_or_else(|_| panic!("{name} is not a number: {line}"))
}
