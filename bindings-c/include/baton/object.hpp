// baton/object.hpp: baton::Object, a held lock and its object (ScaleOut StateServer's
// LockTicket), and the Locker calls that make one.
// Part of baton's C++ API (include <baton.hpp>, not this).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace baton {

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

}  // namespace baton
