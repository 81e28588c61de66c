//! `baton get`, `baton put` and `baton remove`: a name's object (seed 002's model) from the
//! shell. The value is bytes: `get` writes it to standard output exactly, `put` reads it from
//! standard input. Versions make `put --version V` an optimistic update: it fails (65) if
//! another client wrote the object since the version read.

use std::io::{Read, Write};

use baton::{ErrorKind, Locker, LockerBuilder, Strategy};
use serde::Serialize;

use crate::args::{GetArgs, PutArgs, RemoveArgs};
use crate::exit::{CliError, CONFLICT, NO_OBJECT, OK, USAGE};
use crate::output::print_json;
use crate::store;

/// `baton get --json`.
#[derive(Debug, Serialize)]
struct ObjectJson<'a> {
    name: &'a str,
    version: u64,
    /// The value as text, when it is UTF-8.
    value: Option<&'a str>,
    /// The value in standard base64, always.
    value_base64: String,
}

/// A locker on `url` whose object calls use `strategy`.
fn locker(url: &str, strategy: Strategy) -> Result<Locker, CliError> {
    let plain = store::open(url)?;
    LockerBuilder::new(std::sync::Arc::clone(plain.store()))
        .strategy(strategy)
        .build()
        .map_err(|e| CliError::from_baton("cannot use the lock store", &e))
}

/// The exit status and message of an object call's error.
fn object_error(context: &str, name: &str, e: &baton::Error) -> CliError {
    let status = match e.kind() {
        ErrorKind::VersionMismatch | ErrorKind::AlreadyExists => CONFLICT,
        ErrorKind::ObjectNotFound => NO_OBJECT,
        _ => return CliError::from_baton(context, e),
    };
    let error = CliError::new(status, format!("{context}: {}", e.message()));
    match e.kind() {
        ErrorKind::VersionMismatch => error.hint(format!(
            "read it again (baton get {name} --print-version) and retry with the new version"
        )),
        ErrorKind::AlreadyExists => error.hint(format!(
            "update it with --version (baton get {name} --print-version gives it)"
        )),
        _ => error,
    }
}

/// `baton get NAME`: the value on standard output (exit 66 when there is none).
pub async fn get(url: &str, args: &GetArgs) -> Result<u8, CliError> {
    let locker = locker(url, args.strategy)?;
    let context = format!("cannot read object {:?}", args.name);
    let object = locker
        .get(&args.name)
        .await
        .map_err(|e| object_error(&context, &args.name, &e))?
        .ok_or_else(|| {
            CliError::new(NO_OBJECT, format!("{context}: there is no such object"))
                .hint("baton put NAME < file creates one")
        })?;
    if args.json {
        print_json(&ObjectJson {
            name: &args.name,
            version: object.version,
            value: std::str::from_utf8(&object.value).ok(),
            value_base64: baton::baton_kernel::object::base64(&object.value),
        })?;
    } else if args.print_version {
        write_out(format!("{}\n", object.version).as_bytes())?;
    } else {
        write_out(&object.value)?;
    }
    Ok(OK)
}

/// `baton put NAME [--version V]`: stores standard input as the value, and prints the new
/// version. Without `--version` the object must not exist yet (an insert).
pub async fn put(url: &str, args: &PutArgs) -> Result<u8, CliError> {
    let mut value = Vec::new();
    std::io::stdin()
        .read_to_end(&mut value)
        .map_err(|e| CliError::usage(format!("cannot read the value from standard input: {e}")))?;
    let locker = locker(url, args.strategy)?;
    let context = format!("cannot write object {:?}", args.name);
    let version = match args.version {
        Some(v) => locker.update_optimistic(&args.name, value, v).await,
        None => locker.insert(&args.name, value).await,
    }
    .map_err(|e| object_error(&context, &args.name, &e))?;
    write_out(format!("{version}\n").as_bytes())?;
    Ok(OK)
}

/// `baton remove NAME`.
pub async fn remove(url: &str, args: &RemoveArgs) -> Result<u8, CliError> {
    let locker = locker(url, args.strategy)?;
    let context = format!("cannot remove object {:?}", args.name);
    locker
        .remove(&args.name)
        .await
        .map_err(|e| object_error(&context, &args.name, &e))?;
    Ok(OK)
}

fn write_out(bytes: &[u8]) -> Result<(), CliError> {
    let mut out = std::io::stdout().lock();
    out.write_all(bytes)
        .and_then(|()| out.flush())
        .map_err(|e| CliError::new(USAGE, format!("cannot write to standard output: {e}")))
}
