//! `include/tersedb.h` is what cbindgen makes of the crate now: a change to the C API without
//! regenerating the checked-in header fails here. Regenerate with
//! `TERSEDB_BLESS=1 cargo test -p tersedb-capi --test header`.

use std::path::Path;

#[test]
fn header_is_fresh() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let config = cbindgen::Config::from_file(dir.join("cbindgen.toml")).expect("cbindgen.toml");
    let mut fresh = Vec::new();
    cbindgen::Builder::new()
        .with_crate(dir)
        .with_config(config)
        .generate()
        .expect("cbindgen failed on the crate")
        .write(&mut fresh);
    let fresh = String::from_utf8(fresh).expect("header is UTF-8");
    let path = dir.join("include/tersedb.h");
    if std::env::var_os("TERSEDB_BLESS").is_some() {
        std::fs::write(&path, &fresh).expect("write include/tersedb.h");
        return;
    }
    let checked_in = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        checked_in == fresh,
        "include/tersedb.h is stale: regenerate it with \
         `TERSEDB_BLESS=1 cargo test -p tersedb-capi --test header` and commit it"
    );
}
