// The error taxonomy: one class per kind, each with the kernel's stable numeric `code` and its
// `kind` name. The WebAssembly module throws plain `{ batonError: true, code, kind, ... }`
// objects; `toBatonError` rebuilds them into these classes.

/** Every error baton raises: `code` (stable, 1-17) and `kind` name what happened. */
export class BatonError extends Error {
  /**
   * @param {string} message
   * @param {{ lock?: string | null, store?: string | null, holder?: string | null, cause?: unknown }} [details]
   */
  constructor(message, details = {}) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    const kind = /** @type {typeof BatonError} */ (new.target);
    this.name = kind.name;
    /** @type {number} */
    this.code = kind.code;
    /** @type {string} */
    this.kind = kind.kind;
    /** @type {string | null} */
    this.lock = details.lock ?? null;
    /** @type {string | null} */
    this.store = details.store ?? null;
    /** @type {string | null} */
    this.holder = details.holder ?? null;
  }

  /** The code of errors of this class (0 for the base class). */
  static code = 0;
  /** The kind name of errors of this class. */
  static kind = 'baton';
}

/** The lock stayed busy until the wait's timeout. */
export class TimedOutError extends BatonError { static code = 1; static kind = 'timed_out'; }
/** The lock is held by someone else (a single attempt). */
export class BusyError extends BatonError { static code = 2; static kind = 'busy'; }
/** The lease was lost: taken over, broken by an operator, or its deadline passed unrenewed. */
export class LostError extends BatonError { static code = 3; static kind = 'lost'; }
/** Not the owner: a second release, or a release of a lock that is not ours. */
export class NotOwnerError extends BatonError { static code = 4; static kind = 'not_owner'; }
/** A stale lock column was found and the options say to fail on it. */
export class StaleLockError extends BatonError { static code = 5; static kind = 'stale_lock'; }
/** The lock name is not a string, is empty, too long, has a NUL or a lone surrogate. */
export class InvalidNameError extends BatonError { static code = 6; static kind = 'invalid_name'; }
/** An option (or the store) is of the wrong type or out of range. */
export class InvalidOptionError extends BatonError { static code = 7; static kind = 'invalid_option'; }
/** The store could not be reached; nothing was written. */
export class StoreUnavailableError extends BatonError { static code = 8; static kind = 'store_unavailable'; }
/** The store refused or failed a command. */
export class StoreError extends BatonError { static code = 9; static kind = 'store_error'; }
/** The store's answer was lost and could not be settled: the outcome is unknown. */
export class AmbiguousError extends BatonError { static code = 10; static kind = 'ambiguous'; }
/** The wait was cancelled (an AbortSignal); nothing of it is left in the store. */
export class CancelledError extends BatonError { static code = 11; static kind = 'cancelled'; }
/** A bug in baton: please report it. */
export class InternalError extends BatonError { static code = 12; static kind = 'internal'; }
/** A runtime baton needs could not start (native bindings only). */
export class RuntimeFailedError extends BatonError { static code = 13; static kind = 'runtime_failed'; }
/** A call made where it cannot run (native bindings only). */
export class WrongContextError extends BatonError { static code = 14; static kind = 'wrong_context'; }
/** An optimistic update named a version the object no longer has: read it again and retry. */
export class VersionMismatchError extends BatonError { static code = 15; static kind = 'version_mismatch'; }
/** The object does not exist (never inserted, or removed). */
export class ObjectNotFoundError extends BatonError { static code = 16; static kind = 'object_not_found'; }
/** An insert found the object already there. */
export class AlreadyExistsError extends BatonError { static code = 17; static kind = 'already_exists'; }

const BY_CODE = new Map(
  [TimedOutError, BusyError, LostError, NotOwnerError, StaleLockError, InvalidNameError,
    InvalidOptionError, StoreUnavailableError, StoreError, AmbiguousError, CancelledError,
    InternalError, RuntimeFailedError, WrongContextError, VersionMismatchError, ObjectNotFoundError,
    AlreadyExistsError].map((c) => [c.code, c]),
);

/**
 * The error class of a stable code, or undefined.
 * @param {number} code
 */
export function errorClass(code) {
  return BY_CODE.get(code);
}

/**
 * A value thrown by the module (or anything else) as an Error: the module's error objects
 * become their BatonError subclass; Errors pass through; anything else is an InternalError.
 * @param {unknown} thrown
 * @param {unknown} [cause]
 * @returns {Error}
 */
export function toBatonError(thrown, cause) {
  if (thrown instanceof Error) return thrown;
  if (thrown !== null && typeof thrown === 'object' && /** @type {any} */ (thrown).batonError === true) {
    const e = /** @type {{ code: number, message: string, lock: string | null, store: string | null, holder: string | null }} */ (thrown);
    const Class = BY_CODE.get(e.code) ?? InternalError;
    return new Class(e.message, { lock: e.lock, store: e.store, holder: e.holder, cause });
  }
  return new InternalError(`internal error: ${String(thrown)}`, { cause });
}
