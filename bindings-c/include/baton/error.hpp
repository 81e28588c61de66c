// baton/error.hpp: baton::Error, one subclass per error kind, and how a bridge error
// becomes one.
// Part of baton's C++ API (include <baton.hpp>, not this).
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

#include "baton.h"
#include "baton-c/src/cxx_bridge.rs.h"

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

}  // namespace baton
