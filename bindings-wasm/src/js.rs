//! The few things the binding takes from its JavaScript host: timers, clocks, randomness, and
//! calling a store adapter's methods. Only globals every JavaScript runtime has are used
//! (`setTimeout`, `clearTimeout`, `performance.now`, `Date.now`, `crypto.getRandomValues` when
//! present): nothing of Node's.

use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};
use std::cell::Cell;
use std::time::Duration;

use baton_kernel::{Instant, SplitMix64};
use js_sys::{Function, Promise, Reflect};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(js_name = setTimeout)]
    fn set_timeout(callback: &Function, ms: f64) -> JsValue;
    #[wasm_bindgen(js_name = clearTimeout)]
    fn clear_timeout(id: &JsValue);
    #[wasm_bindgen(js_namespace = performance, js_name = now)]
    fn performance_now() -> f64;
}

/// The longest delay `setTimeout` takes (2^31 − 1 ms); a longer wait wakes early and waits again.
const MAX_TIMER_MS: f64 = 2_147_483_647.0;

/// The monotonic clock the lock's life is decided on (`performance.now()`).
pub(crate) fn now() -> Instant {
    let ms = performance_now().max(0.0);
    // Truncation is fine: a nanosecond count of 2^64 is 584 years of uptime.
    Instant::from_nanos((ms * 1e6) as u64)
}

/// Wall-clock milliseconds since the Unix epoch (`Date.now()`).
pub(crate) fn unix_ms() -> u64 {
    js_sys::Date::now().max(0.0) as u64
}

/// A random 64-bit number: from `crypto.getRandomValues` where the runtime has it, else from
/// `Math.random` mixed with the clocks and a counter (nonces and seeds need to differ, not to
/// be secret).
pub(crate) fn random_u64() -> u64 {
    thread_local!(static COUNTER: Cell<u64> = const { Cell::new(0) });
    let counter = COUNTER.with(|c| {
        c.set(c.get().wrapping_add(1));
        c.get()
    });
    let mut seed = (js_sys::Math::random() * 4_294_967_296.0) as u64
        ^ ((js_sys::Math::random() * 4_294_967_296.0) as u64) << 32;
    if let Some(words) = crypto_words() {
        seed ^= words;
    }
    seed ^= unix_ms().rotate_left(17) ^ (performance_now().to_bits()).rotate_left(41) ^ counter;
    SplitMix64::new(seed).next_u64()
}

fn crypto_words() -> Option<u64> {
    let crypto = Reflect::get(&js_sys::global(), &"crypto".into()).ok()?;
    let get: Function = Reflect::get(&crypto, &"getRandomValues".into())
        .ok()?
        .dyn_into()
        .ok()?;
    let words = js_sys::Uint32Array::new_with_length(2);
    get.call1(&crypto, &words).ok()?;
    Some(u64::from(words.get_index(0)) | u64::from(words.get_index(1)) << 32)
}

/// The host's process id, where it has one (`process.pid` under Node, Deno's `Deno.pid`), else 0.
pub(crate) fn pid() -> u32 {
    let global = js_sys::global();
    let read = |object: &str, field: &str| {
        Reflect::get(&global, &object.into())
            .ok()
            .filter(|o| o.is_object())
            .and_then(|o| Reflect::get(&o, &field.into()).ok())
            .and_then(|v| v.as_f64())
    };
    read("process", "pid")
        .or_else(|| read("Deno", "pid"))
        .map_or(0, |p| p as u32)
}

/// A `setTimeout` as a future; dropping it clears the timer, so nothing keeps the host's event
/// loop alive for a wait nobody awaits any more.
pub(crate) struct Sleep {
    id: JsValue,
    done: JsFuture,
}

impl Sleep {
    pub(crate) fn for_duration(d: Duration) -> Sleep {
        let ms = (d.as_secs_f64() * 1000.0).ceil().min(MAX_TIMER_MS);
        let mut id = JsValue::UNDEFINED;
        let promise = Promise::new(&mut |resolve, _reject| {
            id = set_timeout(&resolve, ms);
        });
        Sleep {
            id,
            done: JsFuture::from(promise),
        }
    }

    /// Until the monotonic instant `at` (at most `MAX_TIMER_MS` from now).
    pub(crate) fn until(at: Instant) -> Sleep {
        Sleep::for_duration(at.saturating_duration_since(now()))
    }
}

impl Future for Sleep {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        Pin::new(&mut self.done).poll(cx).map(|_| ())
    }
}

impl Drop for Sleep {
    fn drop(&mut self) {
        clear_timeout(&self.id);
    }
}

/// Calls `object[method](...args)` and awaits the promise (or value) it returns. A throw, a
/// rejection, or a missing method is the `Err`, as the value thrown.
pub(crate) async fn call(
    object: &JsValue,
    method: &str,
    args: &[JsValue],
) -> Result<JsValue, JsValue> {
    let function: Function = Reflect::get(object, &method.into())?
        .dyn_into()
        .map_err(|_| {
            JsValue::from(js_sys::Error::new(&format!(
                "the store has no method {method}()"
            )))
        })?;
    let array: js_sys::Array = args.iter().collect();
    let returned = function.apply(object, &array)?;
    match returned.dyn_into::<Promise>() {
        Ok(promise) => JsFuture::from(promise).await,
        Err(value) => Ok(value),
    }
}

/// `object[field]`, if it is there and not `undefined`.
pub(crate) fn field(object: &JsValue, name: &str) -> Option<JsValue> {
    if !object.is_object() && !object.is_function() {
        return None;
    }
    Reflect::get(object, &name.into())
        .ok()
        .filter(|v| !v.is_undefined())
}

/// A string field, if present and a string.
pub(crate) fn string_field(object: &JsValue, name: &str) -> Option<String> {
    field(object, name).and_then(|v| v.as_string())
}

/// Sets `object[name] = value` on a fresh plain object being built.
pub(crate) fn set(object: &js_sys::Object, name: &str, value: impl Into<JsValue>) {
    // Setting a property on a plain object we made cannot throw.
    let _ = Reflect::set(object, &name.into(), &value.into());
}

/// The message of a thrown value: its `message` if it has one, else its text.
pub(crate) fn message_of(thrown: &JsValue) -> String {
    string_field(thrown, "message")
        .or_else(|| thrown.as_string())
        .unwrap_or_else(|| format!("{thrown:?}"))
}
