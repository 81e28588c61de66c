//! The committed header, `include/baton.h`, is what cbindgen generates from this crate's sources
//! with `cbindgen.toml`: a C user never sees a declaration the library does not export, or misses
//! one it does.
//!
//! After changing the C API, `scripts/c-bindings header` writes the header anew (it runs this
//! test with `BATON_WRITE_HEADER=1`); commit it with the change.
//!
//! cbindgen is a dev-dependency at one exact version (its output changes between releases), so
//! that this check is built with the rest of the tests rather than installed as a command.

use std::path::Path;

#[test]
fn the_committed_header_is_what_cbindgen_generates() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let config = cbindgen::Config::from_file(dir.join("cbindgen.toml"))
        .unwrap_or_else(|e| panic!("bindings-c/cbindgen.toml: {e}"));
    let bindings = cbindgen::Builder::new()
        .with_config(config)
        .with_crate(dir)
        .generate()
        .unwrap_or_else(|e| panic!("cbindgen could not generate baton.h: {e}"));
    let mut fresh = Vec::new();
    bindings.write(&mut fresh);

    let path = dir.join("include").join("baton.h");
    if std::env::var_os("BATON_WRITE_HEADER").is_some() {
        std::fs::write(&path, &fresh).unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
        return;
    }
    let committed =
        std::fs::read(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    if committed != fresh {
        let fresh = String::from_utf8_lossy(&fresh);
        let committed = String::from_utf8_lossy(&committed);
        let first = committed
            .lines()
            .zip(fresh.lines())
            .position(|(a, b)| a != b)
            .unwrap_or_else(|| committed.lines().count().min(fresh.lines().count()));
        let near = |text: &str| {
            text.lines()
                .skip(first)
                .take(5)
                .collect::<Vec<_>>()
                .join("\n")
        };
        panic!(
            "bindings-c/include/baton.h is out of date: run scripts/c-bindings header and commit \
             it.\nFirst difference at line {}:\ncommitted:\n{}\ngenerated:\n{}",
            first + 1,
            near(&committed),
            near(&fresh)
        );
    }
}
