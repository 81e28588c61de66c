// baton-locks: distributed locks whose every decision is made by baton's Rust kernel, compiled
// to WebAssembly. This module uses only what every JavaScript runtime has (WebAssembly,
// promises, timers, AbortController): the store adapters for Node clients are the separate
// modules `baton-locks/postgres` and `baton-locks/cassandra`.

import init, { CoreLocker, MemoryStore as CoreMemoryStore, version as coreVersion } from './wasm/baton_wasm.js';
import { wasmBytes } from './wasm/bytes.js';
import {
  BatonError, BusyError, CancelledError, InvalidOptionError, toBatonError,
} from './errors.js';

export * from './errors.js';

await init({ module_or_path: wasmBytes() });

/** The package's version. */
export const version = coreVersion();

const asyncDispose = Symbol.asyncDispose ?? Symbol.for('Symbol.asyncDispose');

/**
 * Runs `f`, turning what the module throws into BatonErrors.
 * @template T
 * @param {() => T} f
 * @returns {T}
 */
function core(f) {
  try {
    return f();
  } catch (e) {
    throw toBatonError(e);
  }
}

/** A lock table in this module's memory: lockers on one MemoryStore exclude each other. */
export class MemoryStore {
  /** @type {CoreMemoryStore} */
  #core = new CoreMemoryStore();
  /** @internal */
  static coreOf(/** @type {MemoryStore} */ store) {
    return store.#core;
  }
}

/** @param {unknown} options */
function splitSignal(options) {
  if (options === null || typeof options !== 'object' || !('signal' in options)) {
    return { signal: undefined, rest: options };
  }
  const { signal, ...rest } = /** @type {Record<string, unknown>} */ (options);
  if (signal !== undefined && !(signal instanceof AbortSignal)) {
    throw new InvalidOptionError(`signal must be an AbortSignal, got ${signal === null ? 'null' : typeof signal}`);
  }
  return { signal: /** @type {AbortSignal | undefined} */ (signal), rest };
}

/** A store, and the defaults of the locks taken on it. */
export class Locker {
  /** @type {CoreLocker} */
  #core;

  /**
   * @param {MemoryStore | object} store a MemoryStore, or an adapter (`postgresStore`,
   *   `cassandraStore`, or your own: see the README)
   * @param {{ strategy?: string, ttl?: number, timeout?: number, consistency?: string,
   *   keepAlive?: boolean, host?: string, commandTimeout?: number }} [options]
   */
  constructor(store, options) {
    const kind = store !== null && typeof store === 'object' ? /** @type {any} */ (store).kind : undefined;
    if (store instanceof MemoryStore) {
      this.#core = core(() => CoreLocker.memory(MemoryStore.coreOf(store), options));
    } else if (kind === 'sql') {
      this.#core = core(() => CoreLocker.sql(store, options));
    } else if (kind === 'cql') {
      this.#core = core(() => CoreLocker.cql(store, options));
    } else {
      throw new InvalidOptionError(
        `the store must be a MemoryStore or a store adapter (an object whose kind is "sql" or "cql"), got ${store === null ? 'null' : typeof store}`,
      );
    }
  }

  /** Where the locks are kept. */
  get store() {
    return this.#core.describe();
  }

  /**
   * Acquires `name`, waiting up to `timeout` ms (the locker's by default; Infinity: no limit).
   * An aborted `signal` stops the wait and removes what it wrote, rejecting with CancelledError.
   * @param {string} name
   * @param {{ timeout?: number, ttl?: number, signal?: AbortSignal }} [options]
   * @returns {Promise<Lock>}
   */
  async lock(name, options) {
    return this.#acquire(name, options, false);
  }

  /**
   * One attempt: the lock, or null if someone else holds it.
   * @param {string} name
   * @param {{ ttl?: number, signal?: AbortSignal }} [options]
   * @returns {Promise<Lock | null>}
   */
  async tryLock(name, options) {
    try {
      return await this.#acquire(name, options, true);
    } catch (e) {
      if (e instanceof BusyError) return null;
      throw e;
    }
  }

  /**
   * Runs `critical(signal, lock)` holding `name`, and releases the lock whatever it does.
   * `signal` aborts if the lease is lost. Rejects with LostError if the lease was lost while
   * the callback ran (its result is then not to be trusted), else with what the callback threw.
   * @template T
   * @param {string} name
   * @param {(signal: AbortSignal, lock: Lock) => T | Promise<T>} critical
   * @param {{ timeout?: number, ttl?: number, signal?: AbortSignal }} [options]
   * @returns {Promise<T>}
   */
  async withLock(name, critical, options) {
    if (typeof critical !== 'function') {
      throw new InvalidOptionError(`withLock needs a function to run, got ${typeof critical}`);
    }
    const lock = await this.lock(name, options);
    let result;
    try {
      result = await critical(lock.signal, lock);
    } catch (e) {
      await lock.release().catch(() => {});
      throw e;
    }
    await lock.release();
    return result;
  }

  /**
   * Every live lock entry in the store (an operator's view, as `baton locks` shows).
   * @returns {Promise<LockInfo[]>}
   */
  async locks() {
    try {
      return await this.#core.locks();
    } catch (e) {
      throw toBatonError(e);
    }
  }

  /**
   * Removes expired entries, of `name` or of every lock; resolves to what was removed.
   * @param {string} [name]
   * @returns {Promise<{ name: string, cell: string }[]>}
   */
  async purge(name) {
    try {
      return await this.#core.purge(name);
    } catch (e) {
      throw toBatonError(e);
    }
  }

  /**
   * Breaks `name`'s lock whoever holds it (an operator's call; its holder finds it lost at its
   * next renewal). Resolves to the entries removed.
   * @param {string} name
   * @returns {Promise<LockInfo[]>}
   */
  async forceRelease(name) {
    try {
      return await this.#core.forceRelease(name);
    } catch (e) {
      throw toBatonError(e);
    }
  }

  /**
   * @param {unknown} name
   * @param {unknown} options
   * @param {boolean} tryOnce
   */
  async #acquire(name, options, tryOnce) {
    const { signal, rest } = splitSignal(options);
    if (signal?.aborted) {
      throw new CancelledError('the wait for the lock was cancelled before it started', { cause: signal.reason });
    }
    const acquisition = core(() => this.#core.acquire(name, rest, tryOnce));
    const cancel = () => acquisition.cancel();
    signal?.addEventListener('abort', cancel, { once: true });
    try {
      const lock = new Lock(await acquisition.result());
      if (signal?.aborted) {
        // Aborted between the grant and now: the cancellation releases it.
        throw new CancelledError('the wait for the lock was cancelled as it was granted; the lock was released', { cause: signal.reason });
      }
      return lock;
    } catch (e) {
      throw toBatonError(e, signal?.aborted ? signal.reason : undefined);
    } finally {
      signal?.removeEventListener('abort', cancel);
      acquisition.free();
    }
  }
}

/**
 * @typedef {object} LockInfo
 * @property {string} name
 * @property {string} strategy
 * @property {string} column
 * @property {string} owner
 * @property {string} state
 * @property {bigint | null} token
 * @property {bigint | null} ticket
 * @property {number | null} createdUnixMs
 * @property {bigint} acquisition
 * @property {string} value
 * @property {number | null} expiresIn
 */

/** A held lock. Its lease is renewed in the background until it is released. */
export class Lock {
  /** @type {import('./wasm/baton_wasm.js').CoreLock} */
  #core;
  /** @type {AbortController} */
  #lost;
  /** @type {Promise<void> | undefined} */
  #released;

  /** @param {import('./wasm/baton_wasm.js').CoreLock} held @internal */
  constructor(held) {
    this.#core = held;
    /** The lock's name. */
    this.name = held.name;
    /** The fencing token: larger for every later holder; pass it to what you protect. */
    this.token = held.token;
    /** The owner id written in the store. */
    this.owner = held.owner;
    // The callback holds the controller only, not this Lock: a Lock nobody references can be
    // collected, and then its lease is released (the module's side releases on finalization).
    const lost = new AbortController();
    this.#lost = lost;
    held.onLost((/** @type {unknown} */ e) => lost.abort(toBatonError(e)));
  }

  /** Whether the lease is held now (not lost, not released, deadline not passed). */
  get held() {
    return this.#core.held;
  }

  /** Milliseconds left on the lease unless renewed (0 when not held). */
  get remaining() {
    return this.#core.remaining;
  }

  /** Aborts (with a LostError as its reason) when the lease is lost. */
  get signal() {
    return this.#lost.signal;
  }

  /** Throws LostError if the lease is lost, NotOwnerError after a release. */
  check() {
    core(() => this.#core.check());
  }

  /**
   * Releases the lock. Rejects with LostError if the lease was lost before, with NotOwnerError
   * when called again.
   * @returns {Promise<void>}
   */
  async release() {
    const released = this.#core.release();
    this.#released ??= released.then(() => {}, () => {});
    try {
      await released;
    } catch (e) {
      throw toBatonError(e);
    }
  }

  /** `await using lock = await locker.lock(name)`: releases unless released already. */
  async [asyncDispose]() {
    if (this.#released) return this.#released;
    return this.release();
  }
}
