//! Errors across the boundary: every kernel [`Error`] becomes a plain object
//! `{ batonError: true, code, kind, message, lock, store, holder }` that the package's
//! JavaScript turns into the `BatonError` subclass of its kind. Codes are the kernel's stable
//! [`ErrorKind`] codes.

use baton_kernel::Error;
use js_sys::Object;
use wasm_bindgen::JsValue;

use crate::js;
use crate::store::Store;

/// `e` as the plain object the JavaScript side rebuilds into a `BatonError`.
pub(crate) fn to_js(e: &Error) -> JsValue {
    let object = Object::new();
    js::set(&object, "batonError", true);
    js::set(&object, "code", e.code());
    js::set(&object, "kind", e.kind().as_str());
    js::set(&object, "message", e.message());
    let optional = |v: Option<&str>| v.map_or(JsValue::NULL, JsValue::from_str);
    js::set(&object, "lock", optional(e.lock()));
    js::set(&object, "store", optional(e.store()));
    js::set(&object, "holder", optional(e.holder()));
    object.into()
}

/// Names `store` in the error, and in the message of errors that come from the store.
pub(crate) fn in_context(e: Error, store: &Store) -> Error {
    e.in_store(store.describe())
}
