// baton/lost_callback.hpp: the C++ callable the Rust side of the bridge calls when a lease is
// lost. Part of baton's C++ API (include <baton.hpp>, not this).
#pragma once

#include <cstdint>
#include <functional>
#include <utility>

#include "rust/cxx.h"

namespace baton {
namespace bridge {

// Owned by the Rust guard once handed over; called at most once, from a thread of baton's.
class LostCallback {
public:
    explicit LostCallback(std::function<void(std::uint32_t, rust::Str)> f) : f_(std::move(f)) {}
    void call(std::uint32_t code, rust::Str message) const {
        if (f_) {
            f_(code, message);
        }
    }

private:
    std::function<void(std::uint32_t, rust::Str)> f_;
};

}  // namespace bridge
}  // namespace baton
