//! Finds the reference StreamVByte C library (Debian's `libstreamvbyte-dev`) for the format test
//! `tests/reference_streamvbyte.rs`. When found, sets `cfg(has_libstreamvbyte)` and adds its
//! directory to the native search path; the library itself is linked only by that test (through
//! `#[link]` on its `extern "C"` block), never into the crate. When missing, the test is compiled
//! out with a warning, or the build fails if `TERSEDB_REQUIRE_REFS=1` (CI sets it).

use std::path::Path;

const HEADER_DIRS: &[&str] = &["/usr/include", "/usr/local/include"];
const LIB_DIRS: &[&str] = &[
    "/usr/lib/x86_64-linux-gnu",
    "/usr/lib/aarch64-linux-gnu",
    "/usr/lib64",
    "/usr/lib",
    "/usr/local/lib",
];

fn main() {
    println!("cargo::rustc-check-cfg=cfg(has_libstreamvbyte)");
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-env-changed=TERSEDB_REQUIRE_REFS");
    let header = HEADER_DIRS
        .iter()
        .find(|d| Path::new(d).join("streamvbytedelta.h").exists());
    let lib = LIB_DIRS
        .iter()
        .find(|d| Path::new(d).join("libstreamvbyte.a").exists());
    match (header, lib) {
        (Some(_), Some(dir)) => {
            println!("cargo::rerun-if-changed={dir}/libstreamvbyte.a");
            println!("cargo::rustc-link-search=native={dir}");
            println!("cargo::rustc-cfg=has_libstreamvbyte");
        }
        _ => {
            let missing = "the reference StreamVByte library (libstreamvbyte-dev: \
                           streamvbytedelta.h and libstreamvbyte.a) was not found";
            let fix = "install it with `apt-get install libstreamvbyte-dev`";
            if std::env::var("TERSEDB_REQUIRE_REFS").as_deref() == Ok("1") {
                panic!("TERSEDB_REQUIRE_REFS=1 but {missing}; {fix}");
            }
            println!(
                "cargo::warning={missing}; the StreamVByte format test against it is skipped \
                 ({fix})"
            );
        }
    }
}
