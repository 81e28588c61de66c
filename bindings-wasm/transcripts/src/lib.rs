//! # baton-wasm-transcripts
//!
//! The kernel's transcript scenarios, compiled for WebAssembly. The harness and the scenarios
//! are the kernel's own test code (`kernel/tests/support/`), included here by path, not copied:
//! the native test `kernel/tests/transcripts.rs` pins each scenario's transcript, and
//! `scripts/wasm-bindings transcripts` plays every scenario in this module under Node
//! (`compare.cjs`) and checks each transcript is byte for byte the native one.
//!
//! Not published; not part of the `baton-locks` package.

#![forbid(unsafe_code)]

#[path = "../../../kernel/tests/support/mod.rs"]
mod support;

use wasm_bindgen::prelude::*;

#[wasm_bindgen]
extern "C" {
    /// `console.error`, where a scenario's panic message goes: in WebAssembly a panic aborts
    /// (a `RuntimeError: unreachable` in JavaScript) and std has nowhere to print it.
    #[wasm_bindgen(js_namespace = console, js_name = error)]
    fn console_error(message: &str);
}

fn report_panics() {
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| std::panic::set_hook(Box::new(|info| console_error(&info.to_string()))));
}

/// The scenarios' names, in order (each the name of its test in `kernel/tests/transcripts.rs`).
#[wasm_bindgen]
pub fn names() -> Vec<String> {
    report_panics();
    support::scenarios::all()
        .into_iter()
        .map(|(name, _)| name.to_owned())
        .collect()
}

/// Plays the scenario `name` and returns its transcript (lines joined by `\n`, no final one).
/// An unknown name is an error; a scenario that panics traps, after which the instance is
/// unusable (`compare.cjs` loads a fresh one).
#[wasm_bindgen]
pub fn transcript(name: &str) -> Result<String, JsError> {
    report_panics();
    support::scenarios::transcript(name)
        .ok_or_else(|| JsError::new(&format!("no transcript scenario named {name:?}")))
}
