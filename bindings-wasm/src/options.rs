//! Reading the options JavaScript passes: plain objects whose durations are milliseconds.
//! Every mistake is an [`ErrorKind::InvalidOption`] (or [`ErrorKind::InvalidName`]) naming the
//! option and what was wrong; unknown keys are refused, so a misspelt option is not silently
//! ignored.

use std::time::Duration;

use baton_kernel::host::{duration_from, TimeUnit};
use baton_kernel::{
    Error, ErrorKind, LockName, LockOptions, Mode, OwnerId, Result, Strategy, Wait,
};
use js_sys::{JsString, Object};
use wasm_bindgen::{JsCast, JsValue};

use crate::js;

/// How long an adapter call may take before it counts as timed out, unless configured.
pub(crate) const DEFAULT_COMMAND_TIMEOUT: Duration = Duration::from_secs(10);

/// A locker's settings.
pub(crate) struct LockerOptions {
    pub(crate) defaults: LockOptions,
    pub(crate) keep_alive: bool,
    pub(crate) host: Option<String>,
    pub(crate) command_timeout: Duration,
}

const LOCKER_KEYS: &[&str] = &[
    "strategy",
    "ttl",
    "timeout",
    "consistency",
    "keepAlive",
    "host",
    "commandTimeout",
    "failOnStaleLock",
    "paths",
];

/// `new Locker(store, options)`'s options.
pub(crate) fn locker_options(options: &JsValue) -> Result<LockerOptions> {
    let mut out = LockerOptions {
        defaults: LockOptions::default(),
        keep_alive: true,
        host: None,
        command_timeout: DEFAULT_COMMAND_TIMEOUT,
    };
    let Some(options) = object("Locker options", options, LOCKER_KEYS)? else {
        return Ok(out);
    };
    if let Some(v) = js::field(&options, "strategy") {
        let text = v.as_string().ok_or_else(|| {
            invalid(format!(
                "strategy must be a string (bakery, unique-insert, column-prefix), got {}",
                type_of(&v)
            ))
        })?;
        out.defaults.strategy = text.parse::<Strategy>()?;
    }
    if let Some(v) = js::field(&options, "ttl") {
        out.defaults.ttl = duration("ttl", &v, false)?;
    }
    if let Some(v) = js::field(&options, "timeout") {
        out.defaults.wait = Wait::Timeout(duration("timeout", &v, true)?);
    }
    if let Some(v) = js::field(&options, "consistency") {
        let text = v.as_string().ok_or_else(|| {
            invalid(format!(
                "consistency must be a string (one, quorum, local_quorum, each_quorum, all), got {}",
                type_of(&v)
            ))
        })?;
        let level = text.parse()?;
        out.defaults.consistency = level;
    }
    if let Some(v) = js::field(&options, "keepAlive") {
        out.keep_alive = v
            .as_bool()
            .ok_or_else(|| invalid(format!("keepAlive must be a boolean, got {}", type_of(&v))))?;
    }
    if let Some(v) = js::field(&options, "host") {
        let host = v
            .as_string()
            .ok_or_else(|| invalid(format!("host must be a string, got {}", type_of(&v))))?;
        out.host = Some(OwnerId::sanitize_host(&host));
    }
    if let Some(v) = js::field(&options, "commandTimeout") {
        out.command_timeout = duration("commandTimeout", &v, false)?;
        if out.command_timeout.is_zero() {
            return Err(invalid(String::from(
                "commandTimeout must be more than 0 ms",
            )));
        }
    }
    if let Some(v) = js::field(&options, "failOnStaleLock") {
        out.defaults.prefix.fail_on_stale_lock = fail_on_stale_lock(&v)?;
    }
    if let Some(v) = js::field(&options, "paths") {
        // Names are dot-separated paths (the kernel's `LockOptions::paths`); its validation
        // refuses them on unique insert.
        out.defaults.paths = v
            .as_bool()
            .ok_or_else(|| invalid(format!("paths must be a boolean, got {}", type_of(&v))))?;
    }
    out.defaults.validate()?;
    Ok(out)
}

/// The keys of one acquisition's options (a semaphore's acquisitions take all but `mode`).
const LOCK_KEYS: &[&str] = &["timeout", "ttl", "failOnStaleLock", "cellTtl", "mode"];

/// One acquisition's settings on top of the locker's; `mode` given by a semaphore (whose
/// acquisitions take no `mode` key), else read from the `mode` key (exclusive by default).
pub(crate) fn lock_options(
    defaults: &LockOptions,
    options: &JsValue,
    try_once: bool,
    mode: Option<Mode>,
) -> Result<LockOptions> {
    let mut opts = defaults.clone();
    let keys = if mode.is_some() {
        &LOCK_KEYS[..LOCK_KEYS.len() - 1]
    } else {
        LOCK_KEYS
    };
    if let Some(mode) = mode {
        opts.mode = mode;
    }
    if let Some(options) = object("lock options", options, keys)? {
        if let Some(v) = js::field(&options, "mode") {
            opts.mode = lock_mode(&v)?;
        }
        if let Some(v) = js::field(&options, "ttl") {
            opts.ttl = duration("ttl", &v, false)?;
        }
        if let Some(v) = js::field(&options, "timeout") {
            opts.wait = Wait::Timeout(duration("timeout", &v, true)?);
        }
        if let Some(v) = js::field(&options, "failOnStaleLock") {
            opts.prefix.fail_on_stale_lock = fail_on_stale_lock(&v)?;
        }
        // Column prefix only, at least the lease's TTL: checked by the kernel (as Rust's
        // `cell_ttl`) when the acquisition starts.
        if let Some(v) = js::field(&options, "cellTtl") {
            opts.prefix.cell_ttl = Some(duration("cellTtl", &v, false)?);
        }
    }
    if try_once {
        opts.wait = Wait::TryOnce;
    }
    Ok(opts)
}

/// `mode`: `"exclusive"` or `"shared"` (a semaphore's permits are taken through
/// `locker.semaphore`). The kernel's validation refuses a shared lock on unique insert.
fn lock_mode(value: &JsValue) -> Result<Mode> {
    match value.as_string().as_deref() {
        Some("exclusive") => Ok(Mode::Exclusive),
        Some("shared") => Ok(Mode::Shared),
        _ => Err(invalid(format!(
            "mode must be \"exclusive\" or \"shared\" (a semaphore: locker.semaphore(name, permits)), got {}",
            value
                .as_string()
                .map_or_else(|| type_of(value), |s| format!("{s:?}"))
        ))),
    }
}

/// A semaphore's permits: an integer (a number without a fraction, or a bigint), whose range
/// the kernel checks ([`Mode::counted`]: 1 to [`Mode::MAX_PERMITS`]).
pub(crate) fn permits(value: &JsValue) -> Result<Mode> {
    if let Some(b) = value.dyn_ref::<js_sys::BigInt>() {
        // Past an i64: the nearest one, which the kernel refuses as out of range.
        let n = i64::try_from(b.clone()).unwrap_or(if b.ge(&js_sys::BigInt::from(0)) {
            i64::MAX
        } else {
            i64::MIN
        });
        return Mode::counted(n);
    }
    match value.as_f64() {
        // `as` saturates: a number past an i64 is refused by the kernel as out of range.
        #[allow(clippy::cast_possible_truncation)]
        Some(n) if n.is_finite() && n.fract() == 0.0 => Mode::counted(n as i64),
        _ => Err(invalid(format!(
            "a semaphore's permits must be an integer, got {}",
            value
                .as_f64()
                .map_or_else(|| type_of(value), |n| n.to_string())
        ))),
    }
}

/// `failOnStaleLock`: a boolean. The kernel's validation refuses `true` for a strategy other
/// than column prefix (as Rust's `fail_on_stale_lock`).
fn fail_on_stale_lock(value: &JsValue) -> Result<bool> {
    value.as_bool().ok_or_else(|| {
        invalid(format!(
            "failOnStaleLock must be a boolean, got {}",
            type_of(value)
        ))
    })
}

/// A lock name: a string of well-formed Unicode, then the kernel's rules (not empty, not too
/// long, no NUL).
pub(crate) fn lock_name(value: &JsValue) -> Result<LockName> {
    let Some(text) = value.dyn_ref::<JsString>() else {
        return Err(Error::new(
            ErrorKind::InvalidName,
            format!("a lock name must be a string, got {}", type_of(value)),
        ));
    };
    // Longer than the limit in UTF-16 units is longer in UTF-8 bytes: refuse without copying.
    if text.length() as usize > LockName::MAX_LEN {
        return Err(Error::new(
            ErrorKind::InvalidName,
            format!(
                "lock name is {} characters long; the maximum is {} bytes",
                text.length(),
                LockName::MAX_LEN
            ),
        ));
    }
    if !text.is_valid_utf16() {
        return Err(Error::new(
            ErrorKind::InvalidName,
            "lock name is not well-formed Unicode (it has a lone surrogate), so it has no UTF-8 form",
        ));
    }
    LockName::new(&String::from(text))
}

/// `lockAll`'s names: an array of lock names (each as [`lock_name`] reads one).
pub(crate) fn lock_names(value: &JsValue) -> Result<Vec<LockName>> {
    if !js_sys::Array::is_array(value) {
        return Err(invalid(format!(
            "lockAll takes an array of names, got {}",
            type_of(value)
        )));
    }
    value
        .unchecked_ref::<js_sys::Array>()
        .iter()
        .map(|name| lock_name(&name))
        .collect()
}

/// `value` as an options object with only `keys`, or `None` for undefined and null.
fn object(what: &str, value: &JsValue, keys: &[&str]) -> Result<Option<JsValue>> {
    if value.is_undefined() || value.is_null() {
        return Ok(None);
    }
    if !value.is_object() || js_sys::Array::is_array(value) {
        return Err(invalid(format!(
            "{what} must be an object, got {}",
            type_of(value)
        )));
    }
    for key in Object::keys(value.unchecked_ref::<Object>()).iter() {
        let key = key.as_string().unwrap_or_default();
        if !keys.contains(&key.as_str()) {
            return Err(invalid(format!(
                "unknown {what} key {key:?} (known: {})",
                keys.join(", ")
            )));
        }
    }
    Ok(Some(value.clone()))
}

/// Milliseconds as a duration: a bigint, or a number read as every binding reads one
/// ([`duration_from`]: non-negative, fractions kept, `Infinity` only where `infinite`, for
/// waiting forever).
pub(crate) fn duration(what: &str, value: &JsValue, infinite: bool) -> Result<Duration> {
    if let Some(b) = value.dyn_ref::<js_sys::BigInt>() {
        return match u64::try_from(b.clone()) {
            Ok(ms) => Ok(Duration::from_millis(ms)),
            Err(_) => Err(invalid(format!(
                "{what} must be a number of milliseconds >= 0, got {b:?}n"
            ))),
        };
    }
    let Some(ms) = value.as_f64() else {
        return Err(invalid(format!(
            "{what} must be a number of milliseconds, got {}",
            type_of(value)
        )));
    };
    duration_from(what, ms, TimeUnit::Milliseconds, infinite)
}

fn type_of(value: &JsValue) -> String {
    if value.is_null() {
        return String::from("null");
    }
    if js_sys::Array::is_array(value) {
        return String::from("an array");
    }
    value.js_typeof().as_string().unwrap_or_default()
}

fn invalid(message: String) -> Error {
    Error::new(ErrorKind::InvalidOption, message)
}
