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

const utf8 = new TextDecoder();

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

/**
 * What the promise `f` returns resolves to; what it throws or rejects with, as a BatonError.
 * @template T
 * @param {() => Promise<T>} f
 * @returns {Promise<T>}
 */
async function settled(f) {
  try {
    return await core(f);
  } catch (e) {
    throw toBatonError(e);
  }
}

/**
 * An object as the module gives it.
 * @typedef {{ value: Uint8Array | null, version: bigint }} CoreObject
 */

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
   *   keepAlive?: boolean, host?: string, commandTimeout?: number, paths?: boolean }} [options]
   *   `paths: true`: names are dot-separated paths, a lock covering every path below it
   *   (bakery or column prefix only)
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
   * `mode: 'shared'` takes it as one of any number of readers (bakery or column prefix only).
   * @param {string} name
   * @param {{ timeout?: number, ttl?: number, signal?: AbortSignal, mode?: 'exclusive' | 'shared' }} [options]
   * @returns {Promise<Lock>}
   */
  async lock(name, options) {
    return this.#acquire(name, options, false);
  }

  /**
   * Acquires every name of `names`, all or nothing: one at a time in baton's one global order
   * (`foo`, `foo.bar`, `foo.bar.woof`, `foo.baz`), whatever order they are given in, so two
   * callers never each hold what the other waits for. `timeout` is the budget of the whole
   * call. On any error (TimedOutError, an aborted `signal`'s CancelledError...) every lock
   * already taken is released before the promise rejects. Resolves to the locks in the order
   * taken, an array that `await using` releases (last first). InvalidOptionError for no names,
   * a name twice, or (with paths) a path given with one of its ancestors.
   * @param {string[]} names
   * @param {{ timeout?: number, ttl?: number, signal?: AbortSignal, mode?: 'exclusive' | 'shared' }} [options]
   * @returns {Promise<Lock[] & { [Symbol.asyncDispose](): Promise<void> }>}
   */
  async lockAll(names, options) {
    const { signal, rest } = splitSignal(options);
    if (signal?.aborted) {
      throw new CancelledError('the wait for the locks was cancelled before it started', { cause: signal.reason });
    }
    const acquisition = core(() => this.#core.lockAll(names, rest));
    const cancel = () => acquisition.cancel();
    signal?.addEventListener('abort', cancel, { once: true });
    try {
      const held = /** @type {import('./wasm/baton_wasm.js').CoreLock[]} */ (await acquisition.result());
      const locks = held.map((one) => new Lock(one));
      if (signal?.aborted) {
        // Aborted between the grant and now: the cancellation released them all.
        throw new CancelledError('the wait for the locks was cancelled as they were granted; they were released', { cause: signal.reason });
      }
      return disposableLocks(locks);
    } catch (e) {
      throw toBatonError(e, signal?.aborted ? signal.reason : undefined);
    } finally {
      signal?.removeEventListener('abort', cancel);
      acquisition.free();
    }
  }

  /**
   * A semaphore of `permits` on `name`, shared by every process on the store: at most
   * `permits` holders at once (bakery or column prefix only). Throws InvalidOptionError for
   * permits that are not an integer from 1 to 10000 or a unique-insert locker, InvalidNameError
   * for a bad name.
   * @param {string} name
   * @param {number | bigint} permits
   * @returns {Semaphore}
   */
  semaphore(name, permits) {
    return new Semaphore(core(() => this.#core.semaphore(name, permits)));
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
    return holding(await this.lock(name, options), critical);
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
   * Reads object `name` (its lock is not looked at): its value and version, or null when
   * there is none (never inserted, or removed).
   * @param {string} name
   * @returns {Promise<Versioned | null>}
   */
  async get(name) {
    const object = /** @type {CoreObject} */ (await settled(() => this.#core.get(name)));
    return object.value === null ? null : new Versioned(object.value, object.version);
  }

  /**
   * Inserts object `name` with `value` (a Uint8Array, or a string stored as UTF-8) and
   * resolves to its version. Rejects with AlreadyExistsError when it exists, BusyError while
   * someone holds its lock.
   * @param {string} name
   * @param {Uint8Array | string} value
   * @returns {Promise<bigint>}
   */
  async insert(name, value) {
    return /** @type {CoreObject} */ (await settled(() => this.#core.insert(name, value))).version;
  }

  /**
   * Replaces object `name`'s value if it is still at `version` (as `get` gave it), and
   * resolves to the new version. Rejects with VersionMismatchError when someone wrote it
   * since (read it again and retry), ObjectNotFoundError when it is gone, BusyError while
   * someone holds its lock; nothing is written then.
   * @param {string} name
   * @param {Uint8Array | string} value
   * @param {bigint | number} version
   * @returns {Promise<bigint>}
   */
  async updateOptimistic(name, value, version) {
    return /** @type {CoreObject} */ (await settled(() => this.#core.updateOptimistic(name, value, version))).version;
  }

  /**
   * Removes object `name`. Rejects with ObjectNotFoundError when there is none, BusyError
   * while someone holds its lock.
   * @param {string} name
   * @returns {Promise<void>}
   */
  async remove(name) {
    await settled(() => this.#core.remove(name));
  }

  /**
   * Locks `name` (waiting as `lock` does, with its options) and reads its object: nobody else
   * writes it until the lock is released (`unlock`, a releasing write, or `await using`).
   * @param {string} name
   * @param {{ timeout?: number, ttl?: number, signal?: AbortSignal }} [options]
   * @returns {Promise<LockedObject>}
   */
  async getAndLock(name, options) {
    const lock = await this.#acquire(name, options, false, true);
    try {
      return new LockedObject(lock, await settled(() => Lock.coreOf(lock).objectGet(false)));
    } catch (e) {
      await lock.release().catch(() => {});
      throw e;
    }
  }

  /**
   * Locks `name` and inserts its object with `value`, keeping the lock. Rejects with
   * AlreadyExistsError when the object exists (the lock is then released).
   * @param {string} name
   * @param {Uint8Array | string} value
   * @param {{ timeout?: number, ttl?: number, signal?: AbortSignal }} [options]
   * @returns {Promise<LockedObject>}
   */
  async insertAndLock(name, value, options) {
    core(() => this.#core.checkValue(value));
    const object = await this.getAndLock(name, options);
    try {
      await object.insertLocked(value);
    } catch (e) {
      await object.unlock().catch(() => {});
      throw e;
    }
    return object;
  }

  /**
   * @param {unknown} name
   * @param {unknown} options
   * @param {boolean} tryOnce
   * @param {boolean} [object] for getAndLock: the lock must be exclusive
   */
  async #acquire(name, options, tryOnce, object = false) {
    return acquired(options, (rest) => this.#core.acquire(name, rest, tryOnce, object));
  }
}

/**
 * Runs one acquisition that `start(options without signal)` starts: a lock, or a semaphore's
 * permit. An aborted `signal` cancels it.
 * @param {unknown} options
 * @param {(rest: unknown) => import('./wasm/baton_wasm.js').Acquisition} start
 * @returns {Promise<Lock>}
 */
async function acquired(options, start) {
  const { signal, rest } = splitSignal(options);
  if (signal?.aborted) {
    throw new CancelledError('the wait for the lock was cancelled before it started', { cause: signal.reason });
  }
  const acquisition = core(() => start(rest));
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

/**
 * A semaphore shared by every process on the store: at most `permits` holders of its name at
 * once. Each `acquire` resolves to a Lock holding one permit (its mode `counted(N)`), given
 * back as any lock is: `release()`, or `await using`. Made by `locker.semaphore`.
 */
export class Semaphore {
  /** @type {import('./wasm/baton_wasm.js').CoreSemaphore} */
  #core;

  /** @param {import('./wasm/baton_wasm.js').CoreSemaphore} semaphore @internal */
  constructor(semaphore) {
    this.#core = semaphore;
    /** The name its permits are taken on. */
    this.name = semaphore.name;
    /** How many holders it admits at once. */
    this.permits = semaphore.permits;
  }

  /**
   * Takes a permit, waiting up to `timeout` ms (the locker's by default): TimedOutError when
   * none comes back in time. An aborted `signal` stops the wait (CancelledError).
   * @param {{ timeout?: number, ttl?: number, signal?: AbortSignal }} [options]
   * @returns {Promise<Lock>}
   */
  async acquire(options) {
    return acquired(options, (rest) => this.#core.acquire(rest, false));
  }

  /**
   * One attempt: a permit, or null when all are taken.
   * @param {{ ttl?: number, signal?: AbortSignal }} [options]
   * @returns {Promise<Lock | null>}
   */
  async tryAcquire(options) {
    try {
      return await acquired(options, (rest) => this.#core.acquire(rest, true));
    } catch (e) {
      if (e instanceof BusyError) return null;
      throw e;
    }
  }

  /**
   * Runs `critical(signal, permit)` holding a permit, and gives it back whatever it does, as
   * `locker.withLock` does.
   * @template T
   * @param {(signal: AbortSignal, permit: Lock) => T | Promise<T>} critical
   * @param {{ timeout?: number, ttl?: number, signal?: AbortSignal }} [options]
   * @returns {Promise<T>}
   */
  async withPermit(critical, options) {
    if (typeof critical !== 'function') {
      throw new InvalidOptionError(`withPermit needs a function to run, got ${typeof critical}`);
    }
    return holding(await this.acquire(options), critical);
  }
}

/**
 * `locks` with `[Symbol.asyncDispose]`: `await using` releases each (unless released), last
 * taken first, every one even when one fails, then rejects with the first failure.
 * @param {Lock[]} locks
 * @returns {Lock[] & { [Symbol.asyncDispose](): Promise<void> }}
 */
function disposableLocks(locks) {
  Object.defineProperty(locks, asyncDispose, {
    value: async () => {
      /** @type {unknown[]} */
      const failures = [];
      for (const lock of [...locks].reverse()) {
        await lock[asyncDispose]().catch((/** @type {unknown} */ e) => failures.push(e));
      }
      if (failures.length > 0) throw failures[0];
    },
    enumerable: false,
  });
  return /** @type {Lock[] & { [Symbol.asyncDispose](): Promise<void> }} */ (locks);
}

/**
 * Runs `critical(lock.signal, lock)` and releases `lock` whatever it does.
 * @template T
 * @param {Lock} lock
 * @param {(signal: AbortSignal, lock: Lock) => T | Promise<T>} critical
 * @returns {Promise<T>}
 */
async function holding(lock, critical) {
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
    /** What it is held as: `exclusive`, `shared` or `counted(N)` (a semaphore's permit). */
    this.mode = held.mode;
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

  /** @internal */
  static coreOf(/** @type {Lock} */ lock) {
    return lock.#core;
  }
}

/** An object's value and version, as `locker.get` read them. */
export class Versioned {
  /**
   * @param {Uint8Array} value
   * @param {bigint} version
   * @internal
   */
  constructor(value, version) {
    /** The value's bytes. */
    this.value = value;
    /** Grows by one on every write of the object (removals included). */
    this.version = version;
  }

  /** The value decoded as UTF-8 (bytes that are not UTF-8 become U+FFFD). */
  get text() {
    return utf8.decode(this.value);
  }
}

/**
 * A locked object (ScaleOut StateServer's LockTicket), from `locker.getAndLock` or
 * `insertAndLock`: the object as last read or written, and the calls only its lock's holder
 * makes. The store applies each write only if this holder still holds the lock then: after a
 * loss (expiry, `baton release --force`) a write rejects with LostError and writes nothing.
 */
export class LockedObject {
  /** @type {Lock} */
  #lock;
  /** @type {Uint8Array | null} */
  #value;
  /** @type {bigint} */
  #version;

  /**
   * @param {Lock} lock
   * @param {CoreObject} object
   * @internal
   */
  constructor(lock, object) {
    this.#lock = lock;
    this.#value = object.value;
    this.#version = object.version;
  }

  /** The object's name (its lock's). */
  get name() {
    return this.#lock.name;
  }

  /** The lock: `token`, `held`, `signal`, `remaining`, `owner`. */
  get lock() {
    return this.#lock;
  }

  /** The value as last read or written, or null when there is no object. */
  get value() {
    return this.#value;
  }

  /** The version as last read or written (0n: never written). */
  get version() {
    return this.#version;
  }

  /** The value decoded as UTF-8 (bytes that are not UTF-8 become U+FFFD), or null. */
  get text() {
    return this.#value === null ? null : utf8.decode(this.#value);
  }

  /**
   * Reads the object again and renews the lock; resolves to its value (null: none).
   * @returns {Promise<Uint8Array | null>}
   */
  async getLocked() {
    await this.#call((held) => held.objectGet(true));
    return this.#value;
  }

  /**
   * Writes `value` and keeps the lock, renewed; resolves to the new version. Rejects with
   * ObjectNotFoundError when there is no object (insert it with `insertLocked`).
   * @param {Uint8Array | string} value
   * @returns {Promise<bigint>}
   */
  async updateLockedAndRetain(value) {
    await this.#call((held) => held.objectUpdate(value, false));
    return this.#version;
  }

  /**
   * Writes `value` and releases the lock; resolves to the new version. On an error the lock
   * stays held (`unlock`, or the end of an `await using` block, releases it).
   * @param {Uint8Array | string} value
   * @returns {Promise<bigint>}
   */
  async updateLockedAndRelease(value) {
    await this.#call((held) => held.objectUpdate(value, true));
    return this.#version;
  }

  /**
   * Inserts the object, which must not exist (AlreadyExistsError), keeping the lock; resolves
   * to its version.
   * @param {Uint8Array | string} value
   * @returns {Promise<bigint>}
   */
  async insertLocked(value) {
    await this.#call((held) => held.objectInsert(value));
    return this.#version;
  }

  /**
   * Removes the object and releases the lock.
   * @returns {Promise<void>}
   */
  async removeLocked() {
    await this.#call((held) => held.objectRemove());
  }

  /**
   * Renews the lock now. Rejects with LostError if it was lost, NotOwnerError after a release.
   * @returns {Promise<void>}
   */
  async lockRefresh() {
    await settled(() => Lock.coreOf(this.#lock).renew());
  }

  /**
   * Releases the lock without writing. Rejects with LostError if the lease was lost, with
   * NotOwnerError when it was released already.
   * @returns {Promise<void>}
   */
  async unlock() {
    return this.#lock.release();
  }

  /** `await using obj = await locker.getAndLock(name)`: releases unless released already. */
  async [asyncDispose]() {
    await settled(() => Lock.coreOf(this.#lock).dispose());
  }

  /** @param {(held: import('./wasm/baton_wasm.js').CoreLock) => Promise<CoreObject>} f */
  async #call(f) {
    const object = await settled(() => f(Lock.coreOf(this.#lock)));
    this.#value = object.value;
    this.#version = object.version;
  }
}
