// Compiled (never run) with lib esnext.disposable and without @types/node: `await using` on a
// Lock, the package's Symbol.asyncDispose merged with the lib's.

import { Locker, MemoryStore } from 'baton-locks';

export async function scoped(): Promise<bigint> {
  const locker = new Locker(new MemoryStore());
  await using lock = await locker.lock('scoped');
  const dispose: () => Promise<void> = () => lock[Symbol.asyncDispose]();
  void dispose;
  await using quote = await locker.getAndLock('GOOG');
  await quote.updateLockedAndRetain('1053.26');
  return lock.token;
}
