// baton/bytes.hpp: an object's value as calls take it (baton::Bytes) and as Locker::get
// reads it (baton::Versioned).
// Part of baton's C++ API (include <baton.hpp>, not this).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>
#if __cplusplus >= 202002L && __has_include(<span>)
#include <span>
#endif

#include "baton/error.hpp"

namespace baton {

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

}  // namespace baton
