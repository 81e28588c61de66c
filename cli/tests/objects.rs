//! `baton get`, `baton put` and `baton remove`: a name's object from the shell, on SQLite and on
//! every server store the test command exports. Values are bytes, read from standard input and
//! written back exactly; the exit statuses are the documented ones.

use crate::common;

use std::io::Write;
use std::process::Stdio;

use common::*;

/// `baton put ARGS` with `value` on standard input.
fn put(world: &World, args: &[&str], value: &[u8]) -> Out {
    let mut all = vec!["put"];
    all.extend_from_slice(args);
    let mut child = world
        .baton(&all)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let written = child.stdin.take().expect("stdin").write_all(value);
    // A command that exits without reading all its input (arguments refused before it reads,
    // a value past the limit) may close the pipe first: its exit status says the rest.
    if let Err(e) = written {
        assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe, "write: {e}");
    }
    Out::of(child.wait_with_output().expect("wait"))
}

fn raw_get(world: &World, name: &str) -> (Option<i32>, Vec<u8>) {
    let out = world.baton(&["get", name]).output().expect("run");
    (out.status.code(), out.stdout)
}

fn objects_on(world: &World, name: &str) {
    // Bytes go in and come out exactly: NUL, invalid UTF-8, no trailing newline.
    let value = b"1053.26\0\xff\xfe volume=1657662";
    put(world, &[name], value)
        .expect_code(0)
        .expect_stdout("1\n");
    assert_eq!(raw_get(world, name), (Some(0), value.to_vec()));
    world
        .output(&["get", name, "--print-version"])
        .expect_code(0)
        .expect_stdout("1\n");
    let json = world.output(&["get", name, "--json"]);
    json.expect_code(0);
    let json = json.json();
    assert_eq!(json["version"], 1);
    assert_eq!(json["value"], serde_json::Value::Null, "not UTF-8");
    assert_eq!(json["value_base64"], "MTA1My4yNgD//iB2b2x1bWU9MTY1NzY2Mg==");

    // An insert over an existing object, a stale version, the right one.
    put(world, &[name], b"again")
        .expect_code(65)
        .expect_stderr("already exists");
    put(world, &[name, "--version", "1"], b"1052.42")
        .expect_code(0)
        .expect_stdout("2\n");
    put(world, &[name, "--version", "1"], b"stale")
        .expect_code(65)
        .expect_stderr("version 2");
    assert_eq!(raw_get(world, name).1, b"1052.42".to_vec());

    // Locked by someone else: not changed (75).
    let release = world.path(&format!("release-{}", fresh_name("r")));
    let holder = world.hold_until_file(name, &[], &release);
    put(world, &[name, "--version", "2"], b"while held")
        .expect_code(75)
        .expect_stderr("locked");
    world.output(&["remove", name]).expect_code(75);
    std::fs::write(&release, b"").expect("release");
    holder.finish().expect_code(0);
    assert_eq!(raw_get(world, name).1, b"1052.42".to_vec());

    // Removed: 66 for get, put --version and remove; an insert goes on from its version.
    world.output(&["remove", name]).expect_code(0);
    world
        .output(&["get", name])
        .expect_code(66)
        .expect_stderr("no such object");
    put(world, &[name, "--version", "3"], b"x").expect_code(66);
    world.output(&["remove", name]).expect_code(66);
    put(world, &[name], b"back")
        .expect_code(0)
        .expect_stdout("4\n");
}

#[test]
fn get_put_and_remove_on_sqlite() {
    let world = World::new("objects");
    objects_on(&world, "quote/GOOG");
}

#[test]
fn bad_values_and_arguments_are_usage_errors() {
    let world = World::new("objects-bad");
    put(&world, &["empty"], b"")
        .expect_code(64)
        .expect_stderr("must not be empty");
    put(&world, &["huge"], &vec![b'x'; (1 << 20) + 1])
        .expect_code(64)
        .expect_stderr("larger than this store takes");
    put(&world, &["exact"], &vec![b'x'; 1 << 20]).expect_code(0);
    assert_eq!(raw_get(&world, "exact").1.len(), 1 << 20);
    put(&world, &["v", "--version", "-1"], b"x").expect_code(64);
    put(&world, &["v", "--version", "x"], b"x").expect_code(64);
    world.output(&["get", ""]).expect_code(64);
    world
        .output(&["get", "a", "--json", "--print-version"])
        .expect_code(64);
}

#[test]
fn get_put_and_remove_on_every_server_store() {
    for var in [
        "BATON_POSTGRES_URL",
        "BATON_MYSQL_URL",
        "BATON_CASSANDRA_URL",
    ] {
        let Some(url) = store_url(var) else { continue };
        let mut world = World::new("objects-server");
        world.store = url;
        objects_on(&world, &fresh_name("cli-object"));
    }
}
