//! Objects beside locks (seed 002, ScaleOut StateServer's model): a named object is an opaque
//! byte value with a version, kept in its lock's own row. As in the tokio host
//! (`baton::api::object`), the unlocked calls are the kernel's [`ObjectOp`], driven as the other
//! one-shot operations are ([`run`]), and a holder's calls go through its lock's life
//! ([`LockLife::object`](baton_kernel::LockLife::object), [`Life::object`]). This module only
//! reads JavaScript's arguments (values, versions) and gives the object back as
//! `{ value: Uint8Array | null, version: bigint }`.

use std::rc::Rc;

use baton_kernel::host::fresh_acquisition;
use baton_kernel::{
    check_value, AfterObject, Error, ErrorKind, Object, ObjectOp, ObjectRequest, OwnerId, Result,
};
use js_sys::{BigInt, JsString, Object as JsObject, Promise, Uint8Array};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::future_to_promise;

use crate::errors::to_js;
use crate::js;
use crate::life::Life;
use crate::locker::{run, CoreLock, CoreLocker, Inner};
use crate::options::lock_name;

/// The object calls made without the lock.
#[wasm_bindgen]
impl CoreLocker {
    /// Reads object `name`: `{ value, version }` (`value` null: no object).
    pub fn get(&self, name: JsValue) -> Promise {
        unlocked(&self.inner, name, |_| Ok(ObjectRequest::Get))
    }

    /// Inserts object `name` with `value`: the object written (`AlreadyExists` when it exists,
    /// `Busy` while its lock is held).
    pub fn insert(&self, name: JsValue, value: JsValue) -> Promise {
        unlocked(&self.inner, name, move |limit| {
            Ok(ObjectRequest::Insert(object_value(&value, limit)?))
        })
    }

    /// Replaces object `name`'s value if it is still at `version`: the object written
    /// (`VersionMismatch`, `ObjectNotFound`, `Busy`).
    #[wasm_bindgen(js_name = updateOptimistic)]
    pub fn update_optimistic(&self, name: JsValue, value: JsValue, version: JsValue) -> Promise {
        unlocked(&self.inner, name, move |limit| {
            let value = object_value(&value, limit)?;
            Ok(ObjectRequest::Update {
                value,
                version: Some(object_version(&version)?),
            })
        })
    }

    /// Removes object `name` (`ObjectNotFound`, `Busy`).
    pub fn remove(&self, name: JsValue) -> Promise {
        unlocked(&self.inner, name, |_| Ok(ObjectRequest::Remove))
    }

    /// Throws `InvalidOption` for a value this store does not take (checked before
    /// `insertAndLock` takes the lock, as the tokio host does).
    #[wasm_bindgen(js_name = checkValue)]
    pub fn check_value(&self, value: JsValue) -> std::result::Result<(), JsValue> {
        object_value(&value, self.inner.store.max_object_bytes())
            .map(drop)
            .map_err(|e| to_js(&e))
    }
}

/// An unlocked call on object `name`, whose request `request` makes from the arguments (given
/// the store's value limit): a fresh caller of its own, as an acquisition is (options, owner id
/// and slot, kept until the call ends: bakery and column prefix take the lock for a write).
fn unlocked(
    inner: &Rc<Inner>,
    name: JsValue,
    request: impl FnOnce(usize) -> Result<ObjectRequest> + 'static,
) -> Promise {
    let inner = Rc::clone(inner);
    future_to_promise(async move {
        let result = async {
            let name = lock_name(&name)?;
            let lock = name.as_str().to_owned();
            let limit = inner.store.max_object_bytes();
            let request = request(limit).map_err(|e| e.about_lock(&lock))?;
            let (seed, acquisition) = (js::random_u64(), js::random_u64());
            let opts = fresh_acquisition(&inner.defaults, seed, acquisition, js::unix_ms());
            let slot = inner.slots.take(&lock);
            let owner = OwnerId::new(&inner.host, inner.pid, slot.nonce())?;
            let mut op = ObjectOp::new(name, owner, opts, request, limit)
                .map_err(|e| e.about_lock(&lock))?;
            let object = run(&inner.store, &mut op)
                .await
                .map_err(|e| e.about_lock(&lock));
            drop(slot);
            object
        }
        .await;
        result.map(|o| to_js_object(&o)).map_err(|e| to_js(&e))
    })
}

/// A holder's object calls (SOSS's locked calls, with the `LockTicket`).
#[wasm_bindgen]
impl CoreLock {
    /// Reads the object (`renew`: and renews the lock, SOSS's `get_locked`; without, as
    /// `getAndLock` reads it after the grant).
    #[wasm_bindgen(js_name = objectGet)]
    pub fn object_get(&self, renew: bool) -> Promise {
        let after = if renew {
            AfterObject::Renew
        } else {
            AfterObject::Keep
        };
        self.locked(|_| Ok(ObjectRequest::Get), after)
    }

    /// Writes `value` over the object, then renews the lock (`release` false, SOSS's
    /// `update_locked_and_retain`) or releases it (`update_locked_and_release`; the promise
    /// settles with the release's outcome).
    #[wasm_bindgen(js_name = objectUpdate)]
    pub fn object_update(&self, value: JsValue, release: bool) -> Promise {
        let after = if release {
            AfterObject::Release
        } else {
            AfterObject::Renew
        };
        self.locked(
            move |limit| {
                Ok(ObjectRequest::Update {
                    value: object_value(&value, limit)?,
                    version: None,
                })
            },
            after,
        )
    }

    /// Inserts the object, keeping the lock (`AlreadyExists` when it exists).
    #[wasm_bindgen(js_name = objectInsert)]
    pub fn object_insert(&self, value: JsValue) -> Promise {
        self.locked(
            move |limit| Ok(ObjectRequest::Insert(object_value(&value, limit)?)),
            AfterObject::Keep,
        )
    }

    /// Removes the object and releases the lock (SOSS's `remove_locked`).
    #[wasm_bindgen(js_name = objectRemove)]
    pub fn object_remove(&self) -> Promise {
        self.locked(|_| Ok(ObjectRequest::Remove), AfterObject::Release)
    }

    /// `await using`'s release: releases unless a release was asked for already (by
    /// `release`, `objectUpdate(.., true)` or `objectRemove`), whose outcome went to its
    /// caller: then it waits for it, and resolves whatever it was. Rejects as `release` does
    /// otherwise (the loss, if the lease was lost).
    pub fn dispose(&self) -> Promise {
        let (life, name) = (Rc::clone(&self.life), self.name.clone());
        future_to_promise(async move {
            life.dispose()
                .await
                .map_err(|e| to_js(&e.about_lock(&name)))?;
            Ok(JsValue::UNDEFINED)
        })
    }

    /// Renews the lock now (SOSS's `lock_refresh`): the loss if it was lost, `NotOwner` after a
    /// release.
    pub fn renew(&self) -> Promise {
        let (life, name) = (Rc::clone(&self.life), self.name.clone());
        future_to_promise(async move {
            life.renew()
                .await
                .map_err(|e| to_js(&e.about_lock(&name)))?;
            Ok(JsValue::UNDEFINED)
        })
    }
}

impl CoreLock {
    fn locked(
        &self,
        request: impl FnOnce(usize) -> Result<ObjectRequest> + 'static,
        after: AfterObject,
    ) -> Promise {
        let (life, name): (Rc<Life>, String) = (Rc::clone(&self.life), self.name.clone());
        future_to_promise(async move {
            let result = async {
                let request = request(life.store().max_object_bytes())?;
                life.object(request, after).await
            }
            .await;
            result
                .map(|o| to_js_object(&o))
                .map_err(|e| to_js(&e.about_lock(&name)))
        })
    }
}

/// `{ value: Uint8Array | null, version: bigint }`.
fn to_js_object(object: &Object) -> JsValue {
    let out = JsObject::new();
    let value = object
        .value
        .as_deref()
        .map_or(JsValue::NULL, |bytes| Uint8Array::from(bytes).into());
    js::set(&out, "value", value);
    js::set(&out, "version", BigInt::from(object.version));
    out.into()
}

/// An object's value: a `Uint8Array` (a Node `Buffer` is one) as its bytes, or a string as its
/// UTF-8 (well-formed: a lone surrogate has none). Empty or larger than the store's `limit`
/// is the kernel's refusal ([`check_value`]); a value too large is refused before it is
/// copied into the module, whose memory never shrinks.
fn object_value(value: &JsValue, limit: usize) -> Result<Vec<u8>> {
    if let Some(bytes) = value.dyn_ref::<Uint8Array>() {
        let len = bytes.length() as usize;
        if len > limit {
            // What `check_value` says of it, without the copy.
            return Err(too_large(&format!("{len} bytes"), limit));
        }
        let bytes = bytes.to_vec();
        check_value(&bytes, limit)?;
        return Ok(bytes);
    }
    if let Some(text) = value.dyn_ref::<JsString>() {
        // UTF-8 takes at least one byte per UTF-16 unit.
        let units = text.length() as usize;
        if units > limit {
            return Err(too_large(
                &format!("{units} characters (UTF-16 units)"),
                limit,
            ));
        }
        if !text.is_valid_utf16() {
            return Err(Error::new(
                ErrorKind::InvalidOption,
                "an object's value given as a string must be well-formed Unicode (it has a lone surrogate, which has no UTF-8 form); pass a Uint8Array for arbitrary bytes",
            ));
        }
        let bytes = String::from(text).into_bytes();
        check_value(&bytes, limit)?;
        return Ok(bytes);
    }
    Err(Error::new(
        ErrorKind::InvalidOption,
        format!(
            "an object's value must be a Uint8Array (or Buffer) or a string, got {}",
            describe(value)
        ),
    ))
}

fn too_large(size: &str, limit: usize) -> Error {
    Error::new(
        ErrorKind::InvalidOption,
        format!("an object's value of {size} is larger than this store takes ({limit} bytes); it was not written"),
    )
}

/// A version as `get()` gave it: a bigint, or a number that is a non-negative safe integer.
fn object_version(value: &JsValue) -> Result<u64> {
    if let Some(b) = value.dyn_ref::<BigInt>() {
        return u64::try_from(b.clone()).map_err(|_| {
            Error::new(
                ErrorKind::InvalidOption,
                format!("an object's version must be an integer from 0 to 2^64-1, got {b:?}n"),
            )
        });
    }
    const MAX_SAFE: f64 = 9_007_199_254_740_991.0;
    match value.as_f64() {
        Some(n) if n.fract() == 0.0 && (0.0..=MAX_SAFE).contains(&n) => Ok(n as u64),
        _ => Err(Error::new(
            ErrorKind::InvalidOption,
            format!(
                "an object's version must be a bigint or a non-negative integer, as get() gave it; got {}",
                describe(value)
            ),
        )),
    }
}

fn describe(value: &JsValue) -> String {
    if value.is_null() {
        return String::from("null");
    }
    if let Some(n) = value.as_f64() {
        return format!("the number {n}");
    }
    if js_sys::Array::is_array(value) {
        return String::from("an array");
    }
    value.js_typeof().as_string().unwrap_or_default()
}
