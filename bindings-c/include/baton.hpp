// baton.hpp: the C++ API of baton, a distributed lock library (C++17).
//
//   baton::Locker locker("postgres://app@db/app", options);   // a store; copyable, thread-safe
//   {
//       baton::Lock lock(locker, "users::snap");   // locks, or throws baton::TimedOut
//       ...                                          // the critical section
//   }                                                // the destructor unlocks, never throws
//
//   auto quote = locker.get_and_lock("GOOG");       // objects beside locks: a baton::Object
//   quote.update_locked_and_release("1053.26");     // writes and releases (seed 002's model)
//
// Every decision (waiting, renewing the lease, loss, unlocking) is made by baton's Rust core;
// these classes only adapt its types and errors. Errors are baton::Error (a
// std::runtime_error) with the kernel's stable code(), and one subclass per kind.
//
//   baton::SharedMutex catalog(locker, "catalog");  // readers and a writer (bakery, column prefix)
//   { std::shared_lock<baton::SharedMutex> read(catalog); ... }
//   baton::Semaphore encoders(locker, "encoders", 3); // at most 3 holders, in every process
//   auto both = locker.lock_all({"accounts.alice", "accounts.bob"});  // all or nothing
//
// Threads: a Locker may be shared by any number of threads. A Lock, Mutex or Object is one lock
// held by one owner: use it from one thread at a time (a Mutex is meant to be shared, through
// std::lock_guard and friends, which serialise its use). A SharedMutex and a Semaphore may be
// used by many threads at once. After fork(), a child cannot unlock
// its parent's locks (NotOwner; their destructors then do nothing) and opens Lockers of its own.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>
#if __cplusplus >= 202002L && __has_include(<span>)
#include <cstddef>
#include <span>
#endif

#include "baton.h"
#include "baton-c/src/cxx_bridge.rs.h"
#include "baton/lost_callback.hpp"

namespace baton {

// The kind of an error, with the kernel's stable code: the values are baton.h's baton_code
// (generated from the Rust table), so C and C++ share one table.
enum class ErrorKind : std::uint32_t {
    TimedOut = BATON_TIMED_OUT,
    Busy = BATON_BUSY,
    Lost = BATON_LOST,
    NotOwner = BATON_NOT_OWNER,
    StaleLock = BATON_STALE_LOCK,
    InvalidName = BATON_INVALID_NAME,
    InvalidOption = BATON_INVALID_OPTION,
    StoreUnavailable = BATON_STORE_UNAVAILABLE,
    StoreError = BATON_STORE_ERROR,
    Ambiguous = BATON_AMBIGUOUS,
    Cancelled = BATON_CANCELLED,
    Internal = BATON_INTERNAL,
    RuntimeFailed = BATON_RUNTIME_FAILED,
    WrongContext = BATON_WRONG_CONTEXT,
    VersionMismatch = BATON_VERSION_MISMATCH,
    ObjectNotFound = BATON_OBJECT_NOT_FOUND,
    AlreadyExists = BATON_ALREADY_EXISTS,
};

// The kind's name: "timed_out", "busy", ... ("unknown" for a code this header predates).
inline std::string_view kind_name(ErrorKind kind) {
    rust::Str name = bridge::code_name(static_cast<std::uint32_t>(kind));
    return std::string_view(name.data(), name.size());
}

// Every error baton throws.
class Error : public std::runtime_error {
public:
    Error(std::uint32_t code, const std::string& message)
        : std::runtime_error(message), code_(code) {}
    // The kernel's stable code.
    std::uint32_t code() const noexcept { return code_; }
    ErrorKind kind() const noexcept { return static_cast<ErrorKind>(code_); }

private:
    std::uint32_t code_;
};

// Each kind's class also has a constructor from a message alone, with the kind's code:
// throw baton::ObjectNotFound("no quote for GOOG").
#define BATON_ERROR_KIND(Name)                                                  \
    class Name : public Error {                                                 \
    public:                                                                     \
        using Error::Error;                                                     \
        explicit Name(const std::string& message)                               \
            : Error(static_cast<std::uint32_t>(ErrorKind::Name), message) {}    \
    };
BATON_ERROR_KIND(TimedOut)          // waited the whole timeout without acquiring
BATON_ERROR_KIND(Busy)              // a try found the lock held
BATON_ERROR_KIND(Lost)              // the lease ended while the holder believed it held it
BATON_ERROR_KIND(NotOwner)          // unlock of a lock not (or no longer) held here
BATON_ERROR_KIND(StaleLock)         // column prefix found an expired lock column
BATON_ERROR_KIND(InvalidName)       // empty, over 255 bytes, NUL inside, not UTF-8
BATON_ERROR_KIND(InvalidOption)     // an option out of range, a bad URL, a negative duration
BATON_ERROR_KIND(StoreUnavailable)  // the store could not be reached; nothing was applied
BATON_ERROR_KIND(StoreError)        // the store refused (schema, permissions)
BATON_ERROR_KIND(Ambiguous)         // a write may or may not have been applied
BATON_ERROR_KIND(Cancelled)         // a wait was cancelled
BATON_ERROR_KIND(Internal)          // a bug in baton: please report it
BATON_ERROR_KIND(RuntimeFailed)     // baton could not start its runtime
BATON_ERROR_KIND(WrongContext)      // a call from where it cannot run
BATON_ERROR_KIND(VersionMismatch)   // update_optimistic: another client wrote the object first
BATON_ERROR_KIND(ObjectNotFound)    // an update or removal of an object that does not exist
BATON_ERROR_KIND(AlreadyExists)     // an insert of an object that exists
#undef BATON_ERROR_KIND

namespace detail {

// Throws the subclass of `code` (one table with C's baton_code and the kernel's codes).
[[noreturn]] inline void throw_code(std::uint32_t code, const std::string& message) {
    switch (static_cast<ErrorKind>(code)) {
        case ErrorKind::TimedOut: throw TimedOut(code, message);
        case ErrorKind::Busy: throw Busy(code, message);
        case ErrorKind::Lost: throw Lost(code, message);
        case ErrorKind::NotOwner: throw NotOwner(code, message);
        case ErrorKind::StaleLock: throw StaleLock(code, message);
        case ErrorKind::InvalidName: throw InvalidName(code, message);
        case ErrorKind::InvalidOption: throw InvalidOption(code, message);
        case ErrorKind::StoreUnavailable: throw StoreUnavailable(code, message);
        case ErrorKind::StoreError: throw StoreError(code, message);
        case ErrorKind::Ambiguous: throw Ambiguous(code, message);
        case ErrorKind::Cancelled: throw Cancelled(code, message);
        case ErrorKind::Internal: throw Internal(code, message);
        case ErrorKind::RuntimeFailed: throw RuntimeFailed(code, message);
        case ErrorKind::WrongContext: throw WrongContext(code, message);
        case ErrorKind::VersionMismatch: throw VersionMismatch(code, message);
        case ErrorKind::ObjectNotFound: throw ObjectNotFound(code, message);
        case ErrorKind::AlreadyExists: throw AlreadyExists(code, message);
    }
    throw Error(code, message);
}

// A bridge error ("<code>:<message>") as the baton::Error it stands for.
[[noreturn]] inline void rethrow(const rust::Error& e) {
    std::string_view text(e.what());
    std::uint32_t code = 0;
    std::size_t i = 0;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
        code = code * 10 + static_cast<std::uint32_t>(text[i] - '0');
        ++i;
    }
    if (i == 0 || i >= text.size() || text[i] != ':') {
        throw Internal(static_cast<std::uint32_t>(ErrorKind::Internal), std::string(text));
    }
    throw_code(code, std::string(text.substr(i + 1)));
}

struct BytesAccess;

template <class F>
auto call(F&& f) -> decltype(f()) {
    try {
        return f();
    } catch (const rust::Error& e) {
        rethrow(e);
    }
}

inline rust::Slice<const std::uint8_t> bytes(std::string_view s) {
    return rust::Slice<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(s.data()),
                                           s.size());
}

}  // namespace detail

// An object's value as a call takes it: a view of bytes (any bytes: NUL and non-UTF-8 ones are
// data), from a std::string, std::string_view, string literal, std::vector<std::uint8_t> (or of
// char), a pointer and a size, or (C++20) a std::span of std::uint8_t or std::byte. It only
// borrows: pass it straight to the call, do not keep it.
class Bytes {
public:
    Bytes(const char* text) : Bytes(text ? std::string_view(text) : std::string_view()) {}
    Bytes(std::string_view text) : data_(text.data()), size_(text.size()) {}
    Bytes(const std::string& text) : data_(text.data()), size_(text.size()) {}
    Bytes(const std::vector<std::uint8_t>& bytes) : data_(bytes.data()), size_(bytes.size()) {}
    Bytes(const std::vector<char>& bytes) : data_(bytes.data()), size_(bytes.size()) {}
    // `size` bytes at `data`; a NULL `data` with a size is InvalidOption, when used.
    Bytes(const void* data, std::size_t size) : data_(data), size_(size) {}
#if __cplusplus >= 202002L && __has_include(<span>)
    Bytes(std::span<const std::uint8_t> bytes) : data_(bytes.data()), size_(bytes.size()) {}
    Bytes(std::span<const std::byte> bytes) : data_(bytes.data()), size_(bytes.size()) {}
#endif

    const void* data() const noexcept { return data_; }
    std::size_t size() const noexcept { return size_; }

private:
    friend struct detail::BytesAccess;
    const void* data_;
    std::size_t size_;
};

namespace detail {

struct BytesAccess {
    static rust::Slice<const std::uint8_t> slice(const Bytes& value) {
        if (value.data_ == nullptr && value.size_ != 0) {
            throw InvalidOption(static_cast<std::uint32_t>(ErrorKind::InvalidOption),
                                "the value is NULL but its size is " +
                                    std::to_string(value.size_));
        }
        return rust::Slice<const std::uint8_t>(static_cast<const std::uint8_t*>(value.data_),
                                               value.size_);
    }
};

inline std::vector<std::uint8_t> vector_of(rust::Slice<const std::uint8_t> bytes) {
    return std::vector<std::uint8_t>(bytes.begin(), bytes.end());
}

}  // namespace detail

// An object's value and version, as Locker::get read it.
struct Versioned {
    std::vector<std::uint8_t> value;
    // Grows by one on every write of the object, removals included.
    std::uint64_t version = 0;
    // The value as a std::string (the same bytes).
    std::string value_string() const { return std::string(value.begin(), value.end()); }
};

class Lock;
class Object;

// A locker's options. Durations are std::chrono; a negative one is InvalidOption.
struct Options {
    // "unique-insert" (empty: the default), "bakery" or "column-prefix" (QCassandraLock's
    // algorithm is "bakery").
    std::string strategy;
    // The lease, renewed in the background while held (10 ms to 30 days).
    std::chrono::milliseconds ttl{bridge::default_options().ttl_ms};
    // How long a lock waits for another holder (QCassandraContext::setLockTimeout);
    // std::chrono::milliseconds::max(): forever.
    std::chrono::milliseconds wait_timeout{bridge::default_options().wait_timeout_ms};
    // Cassandra consistency of plain reads and writes: "quorum" (empty: the default, as
    // QCassandraLock's CONSISTENCY_LEVEL_QUORUM), "local_quorum", "each_quorum", "all", "one".
    std::string consistency;
    // The lock table (QCassandraContext::setLockTableName); empty: the URL's, or baton_locks.
    std::string table;
    // Whether held locks renew their leases in the background.
    bool keep_alive = true;
    // Whether lock names are dot-separated paths: a lock on "app.cache" then conflicts with
    // "app" and "app.cache.users" (either side exclusive), not with "app.db" or "apple".
    // "bakery" and "column-prefix" only (unique insert: the Locker's constructor throws
    // InvalidOption); "a..b", "a.", ".a" and names with '|' throw InvalidName; objects
    // (get_and_lock, ...) throw InvalidOption.
    bool paths = false;
};

// A store with default options, opened from a URL: "memory:", "sqlite:///path.db",
// "postgres://…", "mysql://…", "cassandra://h1,h2,h3/keyspace". Opening does not connect: an
// unreachable store is reported by the first lock. Copies share the store; thread-safe.
class Locker {
public:
    explicit Locker(std::string_view url, const Options& options = Options()) {
        bridge::LockerOptions o = bridge::default_options();
        o.strategy = rust::String(options.strategy);
        o.ttl_ms = static_cast<std::int64_t>(options.ttl.count());
        o.wait_timeout_ms = static_cast<std::int64_t>(options.wait_timeout.count());
        o.consistency = rust::String(options.consistency);
        o.table = rust::String(options.table);
        o.keep_alive = options.keep_alive;
        o.paths = options.paths;
        inner_ = std::make_shared<rust::Box<bridge::Locker>>(
            detail::call([&] { return bridge::open_locker(detail::bytes(url), o); }));
    }

    // Objects beside locks (seed 002): a named object is an opaque byte value with a version,
    // kept in its lock's row; names follow the rules of lock names.

    // Reads object `name` without looking at its lock (one read): its value and version, or
    // std::nullopt when there is none (never inserted, or removed).
    std::optional<Versioned> get(std::string_view name) const {
        bridge::ObjectRead read = detail::call([&] { return inner().get(detail::bytes(name)); });
        if (!read.found) {
            return std::nullopt;
        }
        return Versioned{std::vector<std::uint8_t>(read.value.begin(), read.value.end()),
                         read.version};
    }

    // Inserts object `name` and returns its version: AlreadyExists when it exists, Busy while
    // someone holds its lock, InvalidOption for an empty value or one larger than the store
    // takes (1 MiB; MariaDB 48 000 bytes), never truncated.
    std::uint64_t insert(std::string_view name, Bytes value) const {
        return detail::call([&] {
            return inner().insert(detail::bytes(name), detail::BytesAccess::slice(value));
        });
    }

    // Replaces object `name`'s value if it is still at `version` (as get() returned it) and
    // returns the new version: VersionMismatch when someone wrote it since (read it again and
    // retry), ObjectNotFound when it is gone, Busy while someone holds its lock. Nothing is
    // written on an error.
    std::uint64_t update_optimistic(std::string_view name, Bytes value,
                                    std::uint64_t version) const {
        return detail::call([&] {
            return inner().update_optimistic(detail::bytes(name),
                                             detail::BytesAccess::slice(value), version);
        });
    }

    // Removes object `name`: ObjectNotFound when there is none, Busy while someone holds its
    // lock.
    void remove(std::string_view name) const {
        detail::call([&] { inner().remove(detail::bytes(name)); });
    }

    // Locks `name` (waiting up to the wait timeout: TimedOut after it) and reads its object,
    // atomically for every other client: nobody else writes it until the Object releases it.
    Object get_and_lock(std::string_view name) const;
    // One attempt: std::nullopt when another owner holds the lock.
    std::optional<Object> try_get_and_lock(std::string_view name) const;
    // Waits up to `wait` instead of the locker's timeout: TimedOut after it.
    Object get_and_lock_for(std::string_view name, std::chrono::milliseconds wait) const;
    // Locks `name` and inserts its object: AlreadyExists when it exists (the lock is then
    // released).
    Object insert_and_lock(std::string_view name, Bytes value) const;

    // Several locks at once, all or nothing: every name of `names`, taken one at a time in one
    // global order whatever order they are given in ("app", "app.cache", "app.cache.users",
    // "app.db"), so two callers never each hold what the other waits for. Returns one held
    // Lock per name, in the order taken (Lock::name() tells which is which). Waits up to the
    // locker's wait timeout in all: TimedOut after it. On any error every lock already taken
    // is released before it is thrown: nothing is left held. InvalidOption for no names, a
    // name given twice, or (paths) a path given with one of its ancestors; InvalidName for
    // any bad name, before anything is taken.
    //
    //   std::vector<baton::Lock> both = locker.lock_all({"accounts.alice", "accounts.bob"});
    std::vector<Lock> lock_all(const std::vector<std::string>& names) const;
    // Waits up to `wait` in all instead of the locker's timeout (zero: one attempt at each).
    std::vector<Lock> lock_all_for(const std::vector<std::string>& names,
                                   std::chrono::milliseconds wait) const;
    // As readers: every lock shared (bakery and column prefix; unique insert: InvalidOption).
    std::vector<Lock> lock_all_shared(const std::vector<std::string>& names) const;
    std::vector<Lock> lock_all_shared_for(const std::vector<std::string>& names,
                                          std::chrono::milliseconds wait) const;

private:
    std::vector<Lock> take_all(const std::vector<std::string>& names, bool shared,
                               std::optional<std::chrono::milliseconds> wait) const;

    friend class Lock;
    friend class SharedMutex;
    friend class Semaphore;
    const bridge::Locker& inner() const { return **inner_; }
    std::shared_ptr<rust::Box<bridge::Locker>> inner_;
};

// One lock, RAII: QCassandraLock's shape. Move-only. Locker::lock_all gives several, each
// a Lock (a shared one from lock_all_shared).
//
//   baton::Lock lock(locker, "users::snap");   // locks or throws baton::TimedOut
//   baton::Lock later(locker);                  // holds nothing yet
//   if (later.lock("users::snap")) { ... }      // true, or false when the wait ran out
class Lock {
public:
    // Locks `name`, waiting up to the locker's wait timeout: TimedOut when it runs out; the
    // store's errors (StoreUnavailable, ...) and InvalidName otherwise.
    Lock(const Locker& locker, std::string_view name) : locker_(locker) {
        acquire(name, [&] { return locker_.inner().lock(detail::bytes(name)); });
    }

    // Holds nothing until lock() or try_lock().
    explicit Lock(const Locker& locker) : locker_(locker) {}

    Lock(const Lock&) = delete;
    Lock& operator=(const Lock&) = delete;
    // The moved-from Lock holds nothing.
    Lock(Lock&& other) noexcept
        : locker_(other.locker_), guard_(std::move(other.guard_)), name_(std::move(other.name_)) {
        other.guard_.reset();
        other.name_.clear();
    }
    Lock& operator=(Lock&& other) noexcept {
        if (this != &other) {
            finish();
            locker_ = other.locker_;
            guard_ = std::move(other.guard_);
            name_ = std::move(other.name_);
            other.guard_.reset();
            other.name_.clear();
        }
        return *this;
    }

    // Unlocks if held, waiting for the store to confirm; never throws (an unlock that cannot
    // be confirmed lets the lock expire with its TTL).
    ~Lock() { finish(); }

    // Locks `name` (after unlocking what this Lock held): true once held, false when the wait
    // ran out; other errors throw.
    bool lock(std::string_view name) {
        return attempt(name, [&] { return locker_.inner().lock(detail::bytes(name)); });
    }

    // One attempt: false if another owner holds it.
    bool try_lock(std::string_view name) {
        return attempt(name, [&] { return locker_.inner().try_lock(detail::bytes(name)); });
    }

    // Waits up to `wait` instead of the locker's timeout: false when it ran out.
    bool lock_for(std::string_view name, std::chrono::milliseconds wait) {
        auto ms = static_cast<std::int64_t>(wait.count());
        return attempt(name, [&] { return locker_.inner().lock_for(detail::bytes(name), ms); });
    }

    // Unlocks. Returns normally when the lease was valid until the unlock was sent (the
    // critical section was protected throughout); throws Lost when it was not, NotOwner when
    // this Lock holds nothing (a second unlock).
    void unlock() {
        if (!guard_) {
            detail::throw_code(static_cast<std::uint32_t>(ErrorKind::NotOwner),
                               "this baton::Lock holds no lock" + describe());
        }
        detail::call([&] { (*guard_)->unlock(); });
    }

    // The fencing token of the lock held (0 when none): show it to the resource you protect.
    std::uint64_t token() const { return guard_ ? (*guard_)->token() : 0; }
    // Whether the lock is held: false once unlocked, lost, or past its deadline.
    bool held() const { return guard_ && (*guard_)->held(); }
    // Time left before the lease's deadline (zero when not held).
    std::chrono::milliseconds remaining() const {
        return std::chrono::milliseconds(guard_ ? (*guard_)->remaining_ms() : 0);
    }
    // The name locked (empty when none).
    const std::string& name() const { return name_; }

    // Throws Lost if the lease was lost (NotOwner after an unlock, or when nothing is held).
    void check() const {
        if (!guard_) {
            detail::throw_code(static_cast<std::uint32_t>(ErrorKind::NotOwner),
                               "this baton::Lock holds no lock");
        }
        detail::call([&] { (*guard_)->check(); });
    }

    // Waits up to `timeout` for the lock to stop being held; true if it did.
    bool wait_lost(std::chrono::milliseconds timeout) const {
        if (!guard_) {
            return true;
        }
        auto ms = static_cast<std::int64_t>(timeout.count());
        return detail::call([&] { return (*guard_)->wait_lost(ms); });
    }

    // Calls `callback` once, from a thread of baton's, if the lease is lost (a renewal found
    // the lock broken or taken over, or its deadline passed); not after an unlock. It must be
    // callable from another thread and return quickly; exceptions it throws are dropped.
    void on_lost(std::function<void(const Error&)> callback) {
        if (!guard_) {
            detail::throw_code(static_cast<std::uint32_t>(ErrorKind::NotOwner),
                               "this baton::Lock holds no lock");
        }
        auto adapter = std::make_unique<bridge::LostCallback>(
            [callback = std::move(callback)](std::uint32_t code, rust::Str message) {
                try {
                    callback(Error(code, std::string(message)));
                } catch (...) {
                }
            });
        detail::call([&] { (*guard_)->on_lost(std::move(adapter)); });
    }

private:
    friend class Locker;
    // A lock already taken (Locker::lock_all).
    Lock(const Locker& locker, rust::Box<bridge::Guard> guard)
        : locker_(locker), guard_(std::move(guard)) {
        rust::Str name = (*guard_)->name();
        name_.assign(name.data(), name.size());
    }

    template <class Take>
    void acquire(std::string_view name, Take take) {
        finish();
        guard_.emplace(detail::call(take));
        name_ = std::string(name);
    }

    template <class Take>
    bool attempt(std::string_view name, Take take) {
        try {
            acquire(name, take);
            return true;
        } catch (const TimedOut&) {
            return false;
        } catch (const Busy&) {
            return false;
        }
    }

    void finish() noexcept {
        if (guard_) {
            (*guard_)->finish();
            guard_.reset();
            name_.clear();
        }
    }

    std::string describe() const { return name_.empty() ? "" : " (" + name_ + ")"; }

    Locker locker_;
    std::optional<rust::Box<bridge::Guard>> guard_;
    std::string name_;
};

// One named lock as a standard Lockable: std::lock_guard, std::unique_lock and
// std::scoped_lock work with it. lock() waits up to the locker's wait timeout and throws
// TimedOut after it; try_lock() makes one attempt; unlock() never throws (as the standard
// asks): check() before unlocking if you need to know the lease held throughout.
class Mutex {
public:
    Mutex(const Locker& locker, std::string name) : lock_(locker), name_(std::move(name)) {}

    void lock() {
        if (!lock_.lock(name_)) {
            detail::throw_code(static_cast<std::uint32_t>(ErrorKind::TimedOut),
                               "timed out waiting for lock " + name_);
        }
    }
    bool try_lock() { return lock_.try_lock(name_); }
    void unlock() noexcept {
        try {
            lock_.unlock();
        } catch (...) {
        }
    }

    // The fencing token while locked.
    std::uint64_t token() const { return lock_.token(); }
    // Throws Lost if the lease was lost.
    void check() const { lock_.check(); }
    const std::string& name() const { return name_; }

private:
    Lock lock_;
    std::string name_;
};

// One named lock as a standard *SharedLockable* and *Lockable*: readers with
// std::shared_lock, a writer with std::unique_lock or std::lock_guard, in every process using
// the store. Any number of shared holders at once, never beside an exclusive one; a writer that
// waits is not starved by readers that keep coming. Shared locks need a locker whose strategy
// is "bakery" or "column-prefix" (unique insert: lock_shared() throws InvalidOption).
//
//   baton::SharedMutex catalog(locker, "catalog");
//   {
//       std::shared_lock<baton::SharedMutex> read(catalog);   // beside other readers
//   }
//   {
//       std::unique_lock<baton::SharedMutex> write(catalog);  // alone
//   }
//
// lock() and lock_shared() wait up to the locker's wait timeout and throw TimedOut after it;
// the try_ ones make one attempt, the _for ones wait up to the time given. As the standard's
// unlock() and unlock_shared() take no argument, the object keeps the locks it took for each
// thread: a thread unlocks what it locked (its latest lock of that kind first). unlock() or
// unlock_shared() on a thread that holds no such lock through this object throws NotOwner (the
// standard lock types never do that); otherwise they never throw: an unlock that cannot be
// confirmed lets the lock expire with its TTL, and check() before unlocking tells you whether
// the lease held throughout. Not copyable or movable (as std::shared_mutex); the destructor
// releases whatever is still held, by any thread, and never throws. Many threads may use one
// SharedMutex at once.
class SharedMutex {
public:
    SharedMutex(const Locker& locker, std::string name)
        : locker_(locker), name_(std::move(name)) {}
    SharedMutex(const SharedMutex&) = delete;
    SharedMutex& operator=(const SharedMutex&) = delete;
    ~SharedMutex() {
        std::unordered_map<std::thread::id, Held> held;
        {
            std::lock_guard<std::mutex> hold(mutex_);
            held.swap(held_);
        }
        for (auto& entry : held) {
            for (auto& guard : entry.second.exclusive) {
                guard->finish();
            }
            for (auto& guard : entry.second.shared) {
                guard->finish();
            }
        }
    }

    // Exclusive (*Lockable*, *TimedLockable*).
    void lock() {
        keep(false, detail::call([&] { return inner().lock(bytes_name()); }));
    }
    bool try_lock() {
        return attempt(false, [&] { return inner().try_lock(bytes_name()); });
    }
    bool try_lock_for(std::chrono::milliseconds wait) {
        auto ms = static_cast<std::int64_t>(wait.count());
        return attempt(false, [&] { return inner().lock_for(bytes_name(), ms); });
    }
    void unlock() { release(false); }

    // Shared (*SharedLockable*, *SharedTimedLockable*).
    void lock_shared() {
        keep(true, detail::call([&] { return inner().lock_shared(bytes_name()); }));
    }
    bool try_lock_shared() {
        return attempt(true, [&] { return inner().try_lock_shared(bytes_name()); });
    }
    bool try_lock_shared_for(std::chrono::milliseconds wait) {
        auto ms = static_cast<std::int64_t>(wait.count());
        return attempt(true, [&] { return inner().lock_shared_for(bytes_name(), ms); });
    }
    void unlock_shared() { release(true); }

    // Throws Lost if a lease of a lock this thread holds through this object was lost.
    void check() const {
        std::lock_guard<std::mutex> hold(mutex_);
        auto it = held_.find(std::this_thread::get_id());
        if (it == held_.end()) {
            return;
        }
        for (const auto& guard : it->second.exclusive) {
            detail::call([&] { guard->check(); });
        }
        for (const auto& guard : it->second.shared) {
            detail::call([&] { guard->check(); });
        }
    }

    // The fencing token of this thread's latest lock through this object (0 when none).
    std::uint64_t token() const {
        std::lock_guard<std::mutex> hold(mutex_);
        auto it = held_.find(std::this_thread::get_id());
        if (it == held_.end()) {
            return 0;
        }
        const auto& kind = it->second.exclusive.empty() ? it->second.shared : it->second.exclusive;
        return kind.empty() ? 0 : kind.back()->token();
    }

    // The name locked.
    const std::string& name() const { return name_; }

private:
    struct Held {
        std::vector<rust::Box<bridge::Guard>> exclusive;
        std::vector<rust::Box<bridge::Guard>> shared;
    };

    const bridge::Locker& inner() const { return locker_.inner(); }
    rust::Slice<const std::uint8_t> bytes_name() const { return detail::bytes(name_); }

    void keep(bool shared, rust::Box<bridge::Guard> guard) {
        std::lock_guard<std::mutex> hold(mutex_);
        Held& mine = held_[std::this_thread::get_id()];
        (shared ? mine.shared : mine.exclusive).push_back(std::move(guard));
    }

    template <class Take>
    bool attempt(bool shared, Take take) {
        try {
            keep(shared, detail::call(take));
            return true;
        } catch (const TimedOut&) {
            return false;
        } catch (const Busy&) {
            return false;
        }
    }

    void release(bool shared) {
        std::optional<rust::Box<bridge::Guard>> guard;
        {
            std::lock_guard<std::mutex> hold(mutex_);
            auto it = held_.find(std::this_thread::get_id());
            if (it != held_.end()) {
                auto& kind = shared ? it->second.shared : it->second.exclusive;
                if (!kind.empty()) {
                    guard.emplace(std::move(kind.back()));
                    kind.pop_back();
                }
                if (it->second.exclusive.empty() && it->second.shared.empty()) {
                    held_.erase(it);
                }
            }
        }
        if (!guard) {
            detail::throw_code(static_cast<std::uint32_t>(ErrorKind::NotOwner),
                               std::string("this thread holds no ") +
                                   (shared ? "shared" : "exclusive") + " lock on " + name_ +
                                   " through this baton::SharedMutex");
        }
        (*guard)->finish();  // unlocks, waiting for the store; never throws
    }

    Locker locker_;
    std::string name_;
    mutable std::mutex mutex_;
    std::unordered_map<std::thread::id, Held> held_;
};

// A semaphore shared by every process on the store, shaped like std::counting_semaphore: at
// most permits() holders of its name at once. Every user of the name must give the same
// count: an acquire that finds the name held with another count, or as a shared or exclusive
// lock, throws InvalidOption naming both. Semaphores need a locker whose strategy is "bakery"
// or "column-prefix".
//
//   baton::Semaphore encoders(locker, "encoders", 3);
//   encoders.acquire();    // waits up to the wait timeout (TimedOut after it)
//   ...                    // one of at most 3 holders
//   encoders.release();    // gives the permit back
//
// The object keeps the permits it took (any thread may release them, as with
// std::counting_semaphore), renewed in the background like any lease; release() gives back the
// latest. Not copyable or movable; the destructor gives back every permit still held, waiting
// for the store, and never throws. Many threads may use one Semaphore at once.
class Semaphore {
public:
    // A semaphore of `permits` on `name`: InvalidOption for `permits` outside 1 to 10000 or a
    // locker whose strategy is unique insert, InvalidName for a bad name. Takes no permit.
    Semaphore(const Locker& locker, std::string_view name, std::int64_t permits)
        : inner_(detail::call(
              [&] { return locker.inner().semaphore(detail::bytes(name), permits); })),
          name_(name) {}
    Semaphore(const Semaphore&) = delete;
    Semaphore& operator=(const Semaphore&) = delete;
    ~Semaphore() {
        std::vector<rust::Box<bridge::Guard>> held;
        {
            std::lock_guard<std::mutex> hold(mutex_);
            held.swap(held_);
        }
        for (auto& guard : held) {
            guard->finish();
        }
    }

    // Takes a permit, waiting up to the locker's wait timeout: TimedOut after it.
    void acquire() {
        keep(detail::call([&] { return inner_->acquire(); }));
    }
    // One attempt: false when every permit is taken.
    bool try_acquire() {
        return attempt([&] { return inner_->try_acquire(); });
    }
    // Waits up to `wait` for a permit: false when it ran out.
    bool try_acquire_for(std::chrono::milliseconds wait) {
        auto ms = static_cast<std::int64_t>(wait.count());
        return attempt([&] { return inner_->acquire_for(ms); });
    }

    // Gives back `update` of the permits this object holds, the latest first, waiting for the
    // store. NotOwner when it holds fewer than `update` (nothing is given back then);
    // InvalidOption for a negative `update`. Throws Lost, after giving back all `update`,
    // when a permit's lease had ended before (its holder was not protected throughout).
    void release(std::ptrdiff_t update = 1) {
        if (update < 0) {
            detail::throw_code(static_cast<std::uint32_t>(ErrorKind::InvalidOption),
                               "baton::Semaphore::release: update is negative (" +
                                   std::to_string(update) + ")");
        }
        std::vector<rust::Box<bridge::Guard>> giving;
        {
            std::lock_guard<std::mutex> hold(mutex_);
            auto count = static_cast<std::size_t>(update);
            if (count > held_.size()) {
                detail::throw_code(static_cast<std::uint32_t>(ErrorKind::NotOwner),
                                   "baton::Semaphore " + name_ + " holds " +
                                       std::to_string(held_.size()) + " permit(s), not " +
                                       std::to_string(count));
            }
            for (std::size_t i = 0; i < count; ++i) {
                giving.push_back(std::move(held_.back()));
                held_.pop_back();
            }
        }
        std::optional<Lost> lost;
        for (auto& guard : giving) {
            try {
                detail::call([&] { guard->unlock(); });
            } catch (const Lost& e) {
                if (!lost) {
                    lost.emplace(e);
                }
            } catch (const Error&) {
                // Not confirmed: the permit expires with its TTL.
            }
            guard->finish();
        }
        if (lost) {
            throw *lost;
        }
    }

    // How many holders it admits at once.
    std::uint32_t permits() const { return inner_->permits(); }
    // How many permits this object holds now.
    std::ptrdiff_t held() const {
        std::lock_guard<std::mutex> hold(mutex_);
        return static_cast<std::ptrdiff_t>(held_.size());
    }
    // The name its permits are taken on.
    const std::string& name() const { return name_; }

private:
    void keep(rust::Box<bridge::Guard> guard) {
        std::lock_guard<std::mutex> hold(mutex_);
        held_.push_back(std::move(guard));
    }

    template <class Take>
    bool attempt(Take take) {
        try {
            keep(detail::call(take));
            return true;
        } catch (const TimedOut&) {
            return false;
        } catch (const Busy&) {
            return false;
        }
    }

    rust::Box<bridge::Semaphore> inner_;
    std::string name_;
    mutable std::mutex mutex_;
    std::vector<rust::Box<bridge::Guard>> held_;
};

// A held lock and its object, RAII (SOSS's LockTicket): from Locker::get_and_lock or
// insert_and_lock. Move-only; the destructor releases the lock if still held, waiting for the
// store to confirm, and never throws. Its writes apply only while it holds the lock, checked by
// the store in the same step: after a forced release or the lease's end they throw Lost and
// write nothing. After unlock(), update_locked_and_release() or remove_locked() (or in a
// moved-from Object) the locked calls throw NotOwner; value() and version() stay readable.
//
//   auto quote = locker.get_and_lock("GOOG");      // locks, reads: quote.value(), version()
//   quote.update_locked_and_release(new_value);   // writes, releases
class Object {
public:
    Object(const Object&) = delete;
    Object& operator=(const Object&) = delete;
    Object(Object&& other) noexcept : inner_(std::move(other.inner_)), name_(std::move(other.name_)) {
        other.inner_.reset();
        other.name_.clear();
    }
    Object& operator=(Object&& other) noexcept {
        if (this != &other) {
            finish();
            inner_ = std::move(other.inner_);
            name_ = std::move(other.name_);
            other.inner_.reset();
            other.name_.clear();
        }
        return *this;
    }
    ~Object() { finish(); }

    // The value as last read or written (empty when there is no object: see exists()).
    std::vector<std::uint8_t> value() const {
        return inner_ ? detail::vector_of((*inner_)->value()) : std::vector<std::uint8_t>();
    }
    // The same bytes as a std::string.
    std::string value_string() const {
        if (!inner_) {
            return std::string();
        }
        rust::Slice<const std::uint8_t> bytes = (*inner_)->value();
        return std::string(bytes.begin(), bytes.end());
    }
    // Whether there is an object (as last read or written): false before an insert.
    bool exists() const { return inner_ && (*inner_)->exists(); }
    // Its version as last read or written (0: never written).
    std::uint64_t version() const { return inner_ ? (*inner_)->version() : 0; }
    // The name locked.
    const std::string& name() const { return name_; }
    // The lock's fencing token.
    std::uint64_t token() const { return inner_ ? (*inner_)->token() : 0; }
    // Whether the lock is held: false once released, lost, or past its deadline.
    bool held() const { return inner_ && (*inner_)->held(); }
    // Time left before the lease's deadline (zero when not held).
    std::chrono::milliseconds remaining() const {
        return std::chrono::milliseconds(inner_ ? (*inner_)->remaining_ms() : 0);
    }

    // Reads the object again and renews the lock (SOSS's get_locked): its value, or
    // std::nullopt when there is none.
    std::optional<std::vector<std::uint8_t>> get_locked() {
        detail::call([&] { held_object().get_locked(); });
        if (!exists()) {
            return std::nullopt;
        }
        return value();
    }

    // Writes `value` and keeps the lock, renewed; returns the new version. ObjectNotFound when
    // there is no object (insert_locked() inserts one).
    std::uint64_t update_locked_and_retain(Bytes value) {
        return detail::call([&] {
            return held_object().update_locked_and_retain(detail::BytesAccess::slice(value));
        });
    }

    // Writes `value` and releases the lock; returns the new version. On an error the lock
    // stays held (the destructor releases it).
    std::uint64_t update_locked_and_release(Bytes value) {
        return detail::call([&] {
            return held_object().update_locked_and_release(detail::BytesAccess::slice(value));
        });
    }

    // Inserts the object, which must not exist (AlreadyExists), keeping the lock; returns its
    // version.
    std::uint64_t insert_locked(Bytes value) {
        return detail::call(
            [&] { return held_object().insert_locked(detail::BytesAccess::slice(value)); });
    }

    // Removes the object and releases the lock (ObjectNotFound when there is none: the lock
    // then stays held).
    void remove_locked() {
        detail::call([&] { held_object().remove_locked(); });
    }

    // Renews the lock (SOSS's lock_refresh).
    void lock_refresh() {
        detail::call([&] { held_object().lock_refresh(); });
    }

    // Releases the lock without writing. Returns normally when the lease was valid until the
    // release was sent; throws Lost when it was not, NotOwner on a second call.
    void unlock() {
        detail::call([&] { held_object().unlock(); });
    }

private:
    friend class Locker;
    Object(rust::Box<bridge::Object> inner, std::string_view name)
        : inner_(std::move(inner)), name_(name) {}

    bridge::Object& held_object() {
        if (!inner_) {
            detail::throw_code(static_cast<std::uint32_t>(ErrorKind::NotOwner),
                               "this baton::Object holds no lock (it was moved from)");
        }
        return **inner_;
    }

    void finish() noexcept {
        if (inner_) {
            (*inner_)->finish();
            inner_.reset();
            name_.clear();
        }
    }

    std::optional<rust::Box<bridge::Object>> inner_;
    std::string name_;
};

inline Object Locker::get_and_lock(std::string_view name) const {
    return Object(detail::call([&] { return inner().get_and_lock(detail::bytes(name)); }), name);
}

inline std::optional<Object> Locker::try_get_and_lock(std::string_view name) const {
    try {
        return Object(detail::call([&] { return inner().try_get_and_lock(detail::bytes(name)); }),
                      name);
    } catch (const Busy&) {
        return std::nullopt;
    }
}

inline Object Locker::get_and_lock_for(std::string_view name,
                                       std::chrono::milliseconds wait) const {
    auto ms = static_cast<std::int64_t>(wait.count());
    return Object(
        detail::call([&] { return inner().get_and_lock_for(detail::bytes(name), ms); }), name);
}

inline Object Locker::insert_and_lock(std::string_view name, Bytes value) const {
    return Object(detail::call([&] {
                      return inner().insert_and_lock(detail::bytes(name),
                                                     detail::BytesAccess::slice(value));
                  }),
                  name);
}

inline std::vector<Lock> Locker::take_all(const std::vector<std::string>& names, bool shared,
                                          std::optional<std::chrono::milliseconds> wait) const {
    std::string joined;
    std::vector<std::size_t> lengths;
    lengths.reserve(names.size());
    for (const std::string& name : names) {
        joined += name;
        lengths.push_back(name.size());
    }
    auto ms = static_cast<std::int64_t>(wait ? wait->count() : 0);
    rust::Box<bridge::Guards> taken = detail::call([&] {
        return inner().lock_all(detail::bytes(joined),
                                rust::Slice<const std::size_t>(lengths.data(), lengths.size()),
                                shared, !wait.has_value(), ms);
    });
    // Each lock moves into a Lock as it is taken out; if this throws (out of memory), the
    // Locks made so far and `taken` (the rest) release theirs.
    std::vector<Lock> locks;
    locks.reserve(taken->count());
    for (std::size_t i = 0; i < taken->count(); ++i) {
        locks.push_back(Lock(*this, detail::call([&] { return taken->take(i); })));
    }
    return locks;
}

inline std::vector<Lock> Locker::lock_all(const std::vector<std::string>& names) const {
    return take_all(names, false, std::nullopt);
}

inline std::vector<Lock> Locker::lock_all_for(const std::vector<std::string>& names,
                                              std::chrono::milliseconds wait) const {
    return take_all(names, false, wait);
}

inline std::vector<Lock> Locker::lock_all_shared(const std::vector<std::string>& names) const {
    return take_all(names, true, std::nullopt);
}

inline std::vector<Lock> Locker::lock_all_shared_for(const std::vector<std::string>& names,
                                                     std::chrono::milliseconds wait) const {
    return take_all(names, true, wait);
}

}  // namespace baton
