/** Details every BatonError carries. */
export interface BatonErrorDetails {
  lock?: string | null;
  store?: string | null;
  holder?: string | null;
  cause?: unknown;
}

/** Every error baton raises: `code` (stable, 1-17) and `kind` name what happened. */
export class BatonError extends Error {
  constructor(message: string, details?: BatonErrorDetails);
  /** The stable numeric code of the kind (the same in every binding). */
  readonly code: number;
  /** The kind's name, such as `"timed_out"`. */
  readonly kind: string;
  /** The lock concerned, when there is one. */
  readonly lock: string | null;
  /** The store concerned, when the error comes from one. */
  readonly store: string | null;
  /** Who holds the lock, when known (busy, timed out). */
  readonly holder: string | null;
  static readonly code: number;
  static readonly kind: string;
}
/** Code 1: the lock stayed busy until the wait's timeout. */
export class TimedOutError extends BatonError {}
/** Code 2: the lock is held by someone else (a single attempt). */
export class BusyError extends BatonError {}
/** Code 3: the lease was lost: taken over, broken by an operator, or its deadline passed. */
export class LostError extends BatonError {}
/** Code 4: not the owner: a second release. */
export class NotOwnerError extends BatonError {}
/** Code 5: a stale lock column was found and the options say to fail on it. */
export class StaleLockError extends BatonError {}
/** Code 6: the lock name is not a string, is empty, too long, or has a NUL or a lone surrogate. */
export class InvalidNameError extends BatonError {}
/** Code 7: an option (or the store) is of the wrong type or out of range. */
export class InvalidOptionError extends BatonError {}
/** Code 8: the store could not be reached; nothing was written. */
export class StoreUnavailableError extends BatonError {}
/** Code 9: the store refused or failed a command. */
export class StoreError extends BatonError {}
/** Code 10: the store's answer was lost and could not be settled. */
export class AmbiguousError extends BatonError {}
/** Code 11: the wait was cancelled (an AbortSignal); nothing of it is left in the store. */
export class CancelledError extends BatonError {}
/** Code 12: a bug in baton. */
export class InternalError extends BatonError {}
/** Code 13: a runtime could not start (native bindings only). */
export class RuntimeFailedError extends BatonError {}
/** Code 14: a call made where it cannot run (native bindings only). */
export class WrongContextError extends BatonError {}
/** Code 15: an optimistic update named a version the object no longer has (another client wrote it first): read it again and retry. */
export class VersionMismatchError extends BatonError {}
/** Code 16: the object does not exist (never inserted, or removed). */
export class ObjectNotFoundError extends BatonError {}
/** Code 17: an insert found the object already there. */
export class AlreadyExistsError extends BatonError {}
/** The error class of a stable code. */
export function errorClass(code: number): (typeof BatonError) | undefined;
/** A thrown value as an Error (the module's error objects become their BatonError class). */
export function toBatonError(thrown: unknown, cause?: unknown): Error;
