//! The C API (`baton.h`) called as a C program may call it: with any bytes as names, URLs,
//! options and values, any lengths and buffer sizes (never lying about the memory behind them,
//! as the header's contract asks), NULL wherever a pointer may be NULL, and the handles used in
//! any order: double unlocks, unlocks after another guard took the lock, frees of unlocked
//! and of held guards, objects and semaphores.
//!
//! Feeds: the input as a little program: a locker opened on the memory store with options of
//! the fuzzer's choosing (strategy, keep-alive, paths; waits mostly none and at most 1 ms, so
//! that a run is not spent asleep), then up to 48 calls chosen by the bytes: opening (and
//! freeing) lockers on any URL with any options, every lock call (exclusive, shared,
//! `lock_all` with lengths or NUL-terminated names, semaphores), every guard call, every
//! object call (from outside the lock and as its holder), error messages and code names.
//! Every handle left is freed at the end.
//!
//! Asserts: no crash (built with AddressSanitizer, which also catches a read or write past a
//! buffer the API was given); no call answers `BATON_INTERNAL` (a panic caught at the boundary,
//! or a bug); a call that fails leaves a message for `baton_last_error`; a failed call that
//! hands out a handle sets it to NULL; a guard acquired and not released stays held whatever
//! other guards do (a double unlock, an unlock after another guard took the lock, never
//! releases someone else's lock: leases last 60 s, far longer than a run); and no two held
//! guards of one locker hold related names (equal, or on a paths locker an ancestor) when one
//! of them is exclusive.
#![no_main]

use std::ffi::{c_char, c_void, CStr, CString};
use std::ptr::{null, null_mut};

use baton_c::*;
use baton_kernel::MAX_OBJECT_BYTES;
use libfuzzer_sys::arbitrary::Unstructured;
use libfuzzer_sys::fuzz_target;

/// Names the program mostly uses, so that calls meet on the same locks.
const NAMES: [&[u8]; 6] = [b"a", b"a.b", b"b", b"job", "émile".as_bytes(), b"a.b.c"];

struct Guard {
    ptr: *mut BatonGuard,
    /// Acquired, and neither unlocked nor lost since (as far as this program did anything).
    held: bool,
}

struct Program<'a> {
    u: Unstructured<'a>,
    locker: *mut BatonLocker,
    paths: bool,
    guards: Vec<Guard>,
    objects: Vec<*mut BatonObject>,
    semaphores: Vec<*mut BatonSemaphore>,
}

unsafe extern "C" fn on_lost(_context: *mut c_void, _code: BatonCode, message: *const c_char) {
    // SAFETY: baton passes a NUL-terminated message.
    assert!(!message.is_null() && !unsafe { CStr::from_ptr(message) }.is_empty());
}

/// Checks a call's code: never internal, and a failure leaves a message.
fn checked(code: BatonCode) -> BatonCode {
    assert_ne!(code, BatonCode::BATON_INTERNAL, "{}", last_error());
    if code != BatonCode::BATON_OK {
        assert!(!last_error().is_empty(), "{code:?} without a message");
    }
    code
}

fn last_error() -> String {
    // SAFETY: baton_last_error gives a NUL-terminated string it owns.
    unsafe { CStr::from_ptr(baton_last_error()) }
        .to_string_lossy()
        .into_owned()
}

/// Bytes as a C string: cut at the first NUL, as C would read it.
fn c_string(bytes: &[u8]) -> CString {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    CString::new(&bytes[..end]).expect("no NUL left")
}

impl Program<'_> {
    fn name(&mut self) -> Vec<u8> {
        if self.u.ratio(1, 5).unwrap_or(false) {
            let bytes: &[u8] = self.u.arbitrary().unwrap_or(b"");
            bytes.to_vec()
        } else {
            let i = self.u.choose_index(NAMES.len()).unwrap_or(0);
            NAMES[i].to_vec()
        }
    }

    /// A wait in milliseconds that never blocks long: mostly zero (a try), negative (refused),
    /// and now and then 1 ms, so that the waiting path runs without a run spending its time
    /// asleep (a wait on a held name sleeps all of it).
    fn wait_ms(&mut self) -> i64 {
        match self.u.int_in_range(0..=7).unwrap_or(0) {
            0 => -1,
            1 => i64::MIN,
            7 => 1,
            _ => 0,
        }
    }

    /// The value of an object: any bytes, NULL with a length of 0, now and then one byte past
    /// the limit (refused before anything is encoded: cheap) and, rarely, one at the limit
    /// (1 MiB, base64-encoded and decoded under coverage instrumentation: tens of
    /// milliseconds). Each is chosen by a two-byte tag that the fuzzer's usual mutations do not
    /// make: a `ratio(1023, 1024)` was once used here, and it answers no for 0xFFFF, which
    /// libFuzzer's repeated-byte insertions write all the time; 1 MiB values then took 45% of
    /// the run (`perf`, 2026-12-02: 140 executions/s per process, 4 processes on 2 cores). A
    /// value at the limit is also written and read back by `baton/tests/objects.rs`.
    fn value(&mut self) -> Vec<u8> {
        const PAST_THE_LIMIT: u16 = 0x5a3c;
        const AT_THE_LIMIT: u16 = 0xa5c3;
        let tag: u16 = if self.u.ratio(1, 16).unwrap_or(false) {
            self.u.arbitrary().unwrap_or(0)
        } else {
            0
        };
        match tag {
            PAST_THE_LIMIT => vec![0x5a; MAX_OBJECT_BYTES + 1],
            AT_THE_LIMIT => vec![0x5a; MAX_OBJECT_BYTES],
            _ => {
                let bytes: &[u8] = self.u.arbitrary().unwrap_or(b"");
                bytes.to_vec()
            }
        }
    }

    fn keep(&mut self, code: BatonCode, out: *mut BatonGuard) {
        if code == BatonCode::BATON_OK {
            assert!(!out.is_null(), "OK without a guard");
            self.guards.push(Guard {
                ptr: out,
                held: true,
            });
        } else {
            assert!(out.is_null(), "{code:?} with a guard");
        }
    }

    fn lock(&mut self) {
        let name = self.name();
        let null_name = self.u.ratio(1, 16).unwrap_or(false);
        let ptr: *const c_char = if null_name {
            null()
        } else {
            name.as_ptr().cast()
        };
        let len = name.len();
        let wait = self.wait_ms();
        let mut out: *mut BatonGuard = null_mut();
        let l = self.locker;
        // SAFETY: `ptr` is NULL or `len` readable bytes; `out` is writable.
        let code = unsafe {
            match self.u.int_in_range(0..=5).unwrap_or(0) {
                0 => baton_lock(l, ptr, len, &mut out),
                1 => baton_try_lock(l, ptr, len, &mut out),
                2 => baton_lock_for(l, ptr, len, wait, &mut out),
                3 => baton_lock_shared(l, ptr, len, &mut out),
                4 => baton_try_lock_shared(l, ptr, len, &mut out),
                _ => baton_lock_shared_for(l, ptr, len, wait, &mut out),
            }
        };
        self.keep(checked(code), out);
    }

    fn lock_all(&mut self) {
        let count = self.u.int_in_range(0..=4).unwrap_or(0);
        let names: Vec<Vec<u8>> = (0..count).map(|_| self.name()).collect();
        let with_lengths = self.u.arbitrary().unwrap_or(true);
        let texts: Vec<CString> = names.iter().map(|n| c_string(n)).collect();
        let pointers: Vec<*const c_char> = if with_lengths {
            names.iter().map(|n| n.as_ptr().cast()).collect()
        } else {
            texts.iter().map(|t| t.as_ptr()).collect()
        };
        let lens: Vec<usize> = names.iter().map(Vec::len).collect();
        let lens_ptr = if with_lengths { lens.as_ptr() } else { null() };
        let mut out = vec![null_mut::<BatonGuard>(); count];
        let wait = self.wait_ms();
        let shared = self.u.arbitrary().unwrap_or(false);
        // SAFETY: `count` pointers, each to `lens[i]` bytes or a NUL-terminated string, and
        // `count` writable slots.
        let code = checked(unsafe {
            if shared {
                baton_lock_all_shared(
                    self.locker,
                    pointers.as_ptr(),
                    lens_ptr,
                    count,
                    wait,
                    out.as_mut_ptr(),
                )
            } else {
                baton_lock_all(
                    self.locker,
                    pointers.as_ptr(),
                    lens_ptr,
                    count,
                    wait,
                    out.as_mut_ptr(),
                )
            }
        });
        for guard in out {
            self.keep(code, guard);
        }
    }

    fn semaphore(&mut self) {
        if self.semaphores.is_empty() || self.u.ratio(1, 4).unwrap_or(false) {
            let name = self.name();
            let permits = match self.u.int_in_range(0..=3).unwrap_or(0) {
                0 => self.u.arbitrary().unwrap_or(0),
                _ => self.u.int_in_range(1..=3).unwrap_or(1),
            };
            let mut out: *mut BatonSemaphore = null_mut();
            // SAFETY: `name` is `len` readable bytes; `out` is writable.
            let code = checked(unsafe {
                baton_semaphore_open(
                    self.locker,
                    name.as_ptr().cast(),
                    name.len(),
                    permits,
                    &mut out,
                )
            });
            if code == BatonCode::BATON_OK {
                // SAFETY: a live semaphore.
                assert!((1..=1_000_000).contains(&unsafe { baton_semaphore_permits(out) }));
                self.semaphores.push(out);
            } else {
                assert!(out.is_null());
            }
            return;
        }
        let i = self.u.choose_index(self.semaphores.len()).unwrap_or(0);
        let s = self.semaphores[i];
        let mut out: *mut BatonGuard = null_mut();
        let wait = self.wait_ms();
        // SAFETY: `s` is live; `out` is writable.
        let code = unsafe {
            match self.u.int_in_range(0..=3).unwrap_or(0) {
                0 => baton_semaphore_acquire(s, &mut out),
                1 => baton_semaphore_try_acquire(s, &mut out),
                2 => baton_semaphore_acquire_for(s, wait, &mut out),
                _ => {
                    baton_semaphore_free(s);
                    self.semaphores.swap_remove(i);
                    return;
                }
            }
        };
        self.keep(checked(code), out);
    }

    fn guard(&mut self) {
        if self.guards.is_empty() {
            return;
        }
        let i = self.u.choose_index(self.guards.len()).unwrap_or(0);
        let g = self.guards[i].ptr;
        // SAFETY (every call): `g` is live, the out-pointers writable.
        unsafe {
            match self.u.int_in_range(0..=9).unwrap_or(0) {
                0 | 1 => {
                    // Unlocking twice, or after the lock went to someone else, is fine.
                    let code = checked(baton_unlock(g));
                    assert!(
                        code == BatonCode::BATON_OK || !self.guards[i].held,
                        "unlocking a held guard: {code:?} {}",
                        last_error()
                    );
                    self.guards[i].held = false;
                }
                2 => {
                    baton_guard_free(g);
                    self.guards.swap_remove(i);
                }
                3 => {
                    let code = checked(baton_guard_check(g));
                    assert_eq!(code == BatonCode::BATON_OK, baton_guard_held(g));
                }
                4 => {
                    let _ = baton_guard_token(g);
                    let _ = baton_guard_remaining_ms(g);
                }
                5 => {
                    let (mut mode, mut permits) = (BatonMode::BATON_MODE_EXCLUSIVE, 0u32);
                    checked(baton_guard_mode(g, &mut mode, &mut permits));
                    checked(baton_guard_mode(g, &mut mode, null_mut()));
                    assert!(permits >= 1);
                }
                6 => {
                    let mut lost = false;
                    let timeout = match self.u.int_in_range(0..=3).unwrap_or(0) {
                        0 => -1,
                        1 => 1,
                        _ => 0,
                    };
                    checked(baton_guard_wait_lost(g, timeout, &mut lost));
                }
                7 => {
                    checked(baton_guard_on_lost(g, Some(on_lost), null_mut()));
                    checked(baton_guard_on_lost(g, None, null_mut()));
                }
                _ => {
                    let (mut name, mut len) = (null::<c_char>(), 0usize);
                    checked(baton_guard_name(g, &mut name, &mut len));
                    checked(baton_guard_name(g, null_mut(), &mut len));
                    let bytes = std::slice::from_raw_parts(name.cast::<u8>(), len);
                    assert!(std::str::from_utf8(bytes).is_ok());
                }
            }
        }
    }

    fn object(&mut self) {
        let name = self.name();
        let (n, len) = (name.as_ptr().cast::<c_char>(), name.len());
        let value = self.value();
        let v: *const c_void = if value.is_empty() && self.u.arbitrary().unwrap_or(false) {
            null()
        } else {
            value.as_ptr().cast()
        };
        let l = self.locker;
        let mut version = 0u64;
        // SAFETY (every call): pointers to `len` and `value.len()` readable bytes, writable
        // outs, buffers as long as said.
        unsafe {
            match self.u.int_in_range(0..=7).unwrap_or(0) {
                0 => {
                    let size = self.u.int_in_range(0..=16).unwrap_or(0);
                    let mut buf = vec![0u8; size];
                    let given = self.u.int_in_range(0..=size).unwrap_or(0);
                    let ptr = if given == 0 && self.u.arbitrary().unwrap_or(false) {
                        null_mut()
                    } else {
                        buf.as_mut_ptr().cast()
                    };
                    let (mut value_len, mut found) = (0usize, false);
                    let code = checked(baton_get(
                        l,
                        n,
                        len,
                        ptr,
                        given,
                        &mut value_len,
                        &mut version,
                        &mut found,
                    ));
                    if code == BatonCode::BATON_BUFFER_TOO_SMALL {
                        assert!(value_len > given);
                    }
                }
                1 => drop(checked(baton_insert(
                    l,
                    n,
                    len,
                    v,
                    value.len(),
                    &mut version,
                ))),
                2 => {
                    let expected = self.u.arbitrary().unwrap_or(0);
                    checked(baton_update_optimistic(
                        l,
                        n,
                        len,
                        v,
                        value.len(),
                        expected,
                        &mut version,
                    ));
                }
                3 => drop(checked(baton_remove(l, n, len))),
                _ => {
                    let mut out: *mut BatonObject = null_mut();
                    let wait = self.wait_ms();
                    let code = checked(match self.u.int_in_range(0..=3).unwrap_or(0) {
                        0 => baton_get_and_lock(l, n, len, &mut out),
                        1 => baton_try_get_and_lock(l, n, len, &mut out),
                        2 => baton_get_and_lock_for(l, n, len, wait, &mut out),
                        _ => baton_insert_and_lock(l, n, len, v, value.len(), &mut out),
                    });
                    if code == BatonCode::BATON_OK {
                        assert!(!out.is_null());
                        self.objects.push(out);
                    } else {
                        assert!(out.is_null());
                    }
                }
            }
        }
    }

    fn held_object(&mut self) {
        if self.objects.is_empty() {
            return;
        }
        let i = self.u.choose_index(self.objects.len()).unwrap_or(0);
        let o = self.objects[i];
        let value = self.value();
        let (v, vlen) = (value.as_ptr().cast::<c_void>(), value.len());
        let mut version = 0u64;
        // SAFETY (every call): `o` is live; `value` readable; outs writable.
        unsafe {
            match self.u.int_in_range(0..=9).unwrap_or(0) {
                0 => {
                    let size = self.u.int_in_range(0..=16).unwrap_or(0);
                    let mut buf = vec![0u8; size];
                    let (mut value_len, mut exists) = (0usize, false);
                    let code = checked(baton_object_value(
                        o,
                        buf.as_mut_ptr().cast(),
                        size,
                        &mut value_len,
                        &mut exists,
                    ));
                    if code == BatonCode::BATON_OK {
                        assert!(value_len <= size && (exists || value_len == 0));
                    }
                    let _ = (
                        baton_object_version(o),
                        baton_object_token(o),
                        baton_object_held(o),
                    );
                }
                1 => drop(checked(baton_object_get_locked(o))),
                2 => drop(checked(baton_object_update_and_retain(
                    o,
                    v,
                    vlen,
                    &mut version,
                ))),
                3 => drop(checked(baton_object_update_and_release(
                    o,
                    v,
                    vlen,
                    &mut version,
                ))),
                4 => drop(checked(baton_object_insert(o, v, vlen, &mut version))),
                5 => drop(checked(baton_object_remove(o))),
                6 => drop(checked(baton_object_refresh(o))),
                7 => drop(checked(baton_object_unlock(o))),
                _ => {
                    baton_object_free(o);
                    self.objects.swap_remove(i);
                }
            }
        }
    }

    /// Opens a locker on any URL with any options, then frees it.
    fn open_any(&mut self) {
        let url: &[u8] = self.u.arbitrary().unwrap_or(b"memory:");
        let url = c_string(url);
        if url.to_bytes().windows(13).any(|w| w == b"password_file") {
            return; // it would read the file it names
        }
        let strategy: &[u8] = self.u.arbitrary().unwrap_or(b"");
        let consistency: &[u8] = self.u.arbitrary().unwrap_or(b"");
        let table: &[u8] = self.u.arbitrary().unwrap_or(b"");
        let (strategy, consistency, table) =
            (c_string(strategy), c_string(consistency), c_string(table));
        let mut options = std::mem::MaybeUninit::<BatonOptions>::uninit();
        // SAFETY: room for one BatonOptions; filled before it is read.
        let mut options = unsafe {
            baton_options_init(options.as_mut_ptr());
            options.assume_init()
        };
        let pick = |on: bool, text: &CString| if on { text.as_ptr() } else { null() };
        options.strategy = pick(self.u.arbitrary().unwrap_or(false), &strategy);
        options.consistency = pick(self.u.arbitrary().unwrap_or(false), &consistency);
        options.table = pick(self.u.arbitrary().unwrap_or(false), &table);
        options.ttl_ms = self.u.arbitrary().unwrap_or(60_000);
        options.wait_timeout_ms = self.u.arbitrary().unwrap_or(0);
        options.paths = self.u.arbitrary().unwrap_or(false);
        let with_options = self.u.arbitrary().unwrap_or(true);
        let mut out: *mut BatonLocker = null_mut();
        // SAFETY: NUL-terminated strings; `out` writable.
        let code = checked(unsafe {
            baton_locker_open(
                url.as_ptr(),
                if with_options { &options } else { null() },
                &mut out,
            )
        });
        if code == BatonCode::BATON_OK {
            let mut clone: *mut BatonLocker = null_mut();
            // SAFETY: `out` is live, `clone` writable; each freed once.
            unsafe {
                checked(baton_locker_clone(out, &mut clone));
                baton_locker_free(out);
                baton_locker_free(clone);
            }
        } else {
            assert!(out.is_null());
        }
    }

    /// Calls with NULL where the API allows it: each is refused (or ignored), never a crash.
    fn nulls(&mut self) {
        let mut guard: *mut BatonGuard = null_mut();
        let mut locker: *mut BatonLocker = null_mut();
        // SAFETY: NULL is allowed everywhere here.
        unsafe {
            checked(baton_lock(null(), b"a".as_ptr().cast(), 1, &mut guard));
            checked(baton_lock(self.locker, b"a".as_ptr().cast(), 1, null_mut()));
            checked(baton_locker_open(null(), null(), &mut locker));
            checked(baton_locker_open(c"memory:".as_ptr(), null(), null_mut()));
            checked(baton_unlock(null_mut()));
            checked(baton_guard_check(null()));
            checked(baton_object_get_locked(null_mut()));
            checked(baton_lock_all(
                self.locker,
                null(),
                null(),
                2,
                0,
                null_mut(),
            ));
            baton_guard_free(null_mut());
            baton_object_free(null_mut());
            baton_semaphore_free(null_mut());
            baton_locker_free(null_mut());
            baton_options_init(null_mut());
            let code: i32 = self.u.arbitrary().unwrap_or(0);
            let name = baton_code_name(code);
            assert!(!name.is_null());
            baton_clear_error();
            assert!(last_error().is_empty());
        }
    }

    /// The program's invariants over the guards it holds.
    fn check_guards(&self) {
        let mut held = Vec::new();
        for g in self.guards.iter().filter(|g| g.held) {
            // SAFETY (each): `g.ptr` is live; outs writable.
            unsafe {
                let code = baton_guard_check(g.ptr);
                assert_eq!(
                    code,
                    BatonCode::BATON_OK,
                    "a held guard was released by someone else: {}",
                    last_error()
                );
                let (mut name, mut len) = (null::<c_char>(), 0usize);
                assert_eq!(
                    baton_guard_name(g.ptr, &mut name, &mut len),
                    BatonCode::BATON_OK
                );
                let name = std::str::from_utf8(std::slice::from_raw_parts(name.cast::<u8>(), len))
                    .expect("a guard's name is UTF-8")
                    .to_owned();
                let mut mode = BatonMode::BATON_MODE_EXCLUSIVE;
                assert_eq!(
                    baton_guard_mode(g.ptr, &mut mode, null_mut()),
                    BatonCode::BATON_OK
                );
                held.push((name, mode == BatonMode::BATON_MODE_EXCLUSIVE));
            }
        }
        let related = |a: &str, b: &str| {
            a == b
                || (self.paths
                    && ((b.starts_with(a) && b[a.len()..].starts_with('.'))
                        || (a.starts_with(b) && a[b.len()..].starts_with('.'))))
        };
        for (i, (a, a_exclusive)) in held.iter().enumerate() {
            for (b, b_exclusive) in &held[i + 1..] {
                assert!(
                    !(related(a, b) && (*a_exclusive || *b_exclusive)),
                    "two holders at once: {a:?} and {b:?}"
                );
            }
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let strategies: [&CStr; 3] = [c"unique-insert", c"bakery", c"column-prefix"];
    let strategy = *u.choose(&strategies).unwrap_or(&strategies[0]);
    let paths = strategy != c"unique-insert" && u.arbitrary().unwrap_or(false);
    let mut options = std::mem::MaybeUninit::<BatonOptions>::uninit();
    // SAFETY: room for one BatonOptions; filled before it is read.
    let mut options = unsafe {
        baton_options_init(options.as_mut_ptr());
        options.assume_init()
    };
    options.strategy = strategy.as_ptr();
    options.ttl_ms = 60_000;
    // The locker's own wait (for `baton_lock`): mostly none, now and then 1 ms.
    options.wait_timeout_ms = i64::from(!u.ratio(7, 8).unwrap_or(true));
    options.keep_alive = u.arbitrary().unwrap_or(false);
    options.paths = paths;
    let mut locker: *mut BatonLocker = null_mut();
    // SAFETY: a NUL-terminated URL, valid options, a writable out.
    let code = unsafe { baton_locker_open(c"memory:".as_ptr(), &options, &mut locker) };
    assert_eq!(code, BatonCode::BATON_OK, "{}", last_error());
    let mut program = Program {
        u,
        locker,
        paths,
        guards: Vec::new(),
        objects: Vec::new(),
        semaphores: Vec::new(),
    };
    for _ in 0..48 {
        if program.u.is_empty() {
            break;
        }
        match program.u.int_in_range(0..=13).unwrap_or(0) {
            0..=2 => program.lock(),
            3 => program.lock_all(),
            4 => program.semaphore(),
            5..=7 => program.guard(),
            8 | 9 => program.object(),
            10 | 11 => program.held_object(),
            12 => program.open_any(),
            _ => program.nulls(),
        }
        program.check_guards();
    }
    // SAFETY: every handle is live and freed once.
    unsafe {
        for g in program.guards.drain(..) {
            baton_guard_free(g.ptr);
        }
        for o in program.objects.drain(..) {
            baton_object_free(o);
        }
        for s in program.semaphores.drain(..) {
            baton_semaphore_free(s);
        }
        baton_locker_free(program.locker);
    }
});
