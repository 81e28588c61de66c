// baton/primitives.hpp: baton::Mutex, baton::SharedMutex and baton::Semaphore, the
// standard library's lock shapes over one locker.
// Part of baton's C++ API (include <baton.hpp>, not this).
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

namespace baton {

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

}  // namespace baton
