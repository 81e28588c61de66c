//! `baton-wasm-bindgen`: what `wasm-bindgen` (the command) does for baton's modules, with the
//! options scripts/wasm-bindings uses, through the same library (`wasm-bindgen-cli-support`) at
//! the same version as the `wasm-bindgen` crate the modules link.
//!
//! ```text
//! baton-wasm-bindgen --target web|nodejs --out-dir DIR [--out-name NAME] [--no-typescript]
//!                    [--remove-name-section] [--remove-producers-section] MODULE.wasm
//! ```
//!
//! Each option means what it means to `wasm-bindgen`; every other is refused (exit status 2).

use std::path::PathBuf;
use std::process::ExitCode;

use wasm_bindgen_cli_support::Bindgen;

#[derive(Default)]
struct Args {
    target: Option<String>,
    out_dir: Option<PathBuf>,
    out_name: Option<String>,
    no_typescript: bool,
    remove_name_section: bool,
    remove_producers_section: bool,
    input: Option<PathBuf>,
}

/// The arguments, or a message naming what was wrong with them.
fn parse(mut words: impl Iterator<Item = String>) -> Result<Args, String> {
    let mut args = Args::default();
    while let Some(word) = words.next() {
        let mut value = |option: &str| {
            words
                .next()
                .ok_or_else(|| format!("{option} needs a value"))
        };
        match word.as_str() {
            "--target" => args.target = Some(value("--target")?),
            "--out-dir" => args.out_dir = Some(value("--out-dir")?.into()),
            "--out-name" => args.out_name = Some(value("--out-name")?),
            "--no-typescript" => args.no_typescript = true,
            "--remove-name-section" => args.remove_name_section = true,
            "--remove-producers-section" => args.remove_producers_section = true,
            option if option.starts_with('-') => return Err(format!("unknown option {option}")),
            _ if args.input.is_some() => return Err(format!("a second module: {word}")),
            _ => args.input = Some(word.into()),
        }
    }
    Ok(args)
}

fn generate(args: &Args) -> Result<(), String> {
    let input = args.input.as_ref().ok_or("no module given")?;
    let out_dir = args.out_dir.as_ref().ok_or("--out-dir is required")?;
    let mut bindgen = Bindgen::new();
    let with_target = match args.target.as_deref() {
        Some("web") => bindgen.web(true),
        Some("nodejs") => bindgen.nodejs(true),
        Some(other) => return Err(format!("--target {other}: only web and nodejs are used")),
        None => return Err("--target is required (web or nodejs)".into()),
    };
    with_target.map_err(|e| format!("{e:#}"))?;
    if let Some(name) = &args.out_name {
        bindgen.out_name(name);
    }
    bindgen
        .input_path(input)
        .typescript(!args.no_typescript)
        .remove_name_section(args.remove_name_section)
        .remove_producers_section(args.remove_producers_section)
        // The command's default (the library's own is the opposite).
        .omit_default_module_path(false)
        .generate(out_dir)
        .map_err(|e| format!("{}: {e:#}", input.display()))
}

fn main() -> ExitCode {
    match parse(std::env::args().skip(1)) {
        Ok(args) => match generate(&args) {
            Ok(()) => ExitCode::SUCCESS,
            Err(message) => {
                eprintln!("baton-wasm-bindgen: {message}");
                ExitCode::FAILURE
            }
        },
        Err(message) => {
            eprintln!(
                "baton-wasm-bindgen: {message} (see the top of bindings-wasm/bindgen/src/main.rs)"
            );
            ExitCode::from(2)
        }
    }
}
