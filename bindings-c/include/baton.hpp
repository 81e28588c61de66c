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
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "baton.h"
#include "baton-c/src/cxx_bridge.rs.h"
#include "baton/bytes.hpp"
#include "baton/error.hpp"
#include "baton/lost_callback.hpp"

namespace baton {

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

}  // namespace baton

#include "baton/primitives.hpp"
#include "baton/object.hpp"

namespace baton {

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
