// The C++ side of `scripts/c-bindings bench`: one uncontended lock+unlock through baton.hpp,
// timed as examples/lock_unlock.rs times the same through Rust's blocking API.
//   bench_lock_unlock URL ITERATIONS
#include <baton.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

int main(int argc, char** argv) {
    const std::string url = argc > 1 ? argv[1] : "memory:";
    const std::size_t iterations = argc > 2 ? std::strtoul(argv[2], nullptr, 10) : 2000;
    baton::Locker locker(url);
    std::vector<double> times;
    for (std::size_t i = 0; i < iterations + iterations / 10; ++i) {
        auto start = std::chrono::steady_clock::now();
        {
            baton::Lock lock(locker, "bench");
            lock.unlock();
        }
        if (i >= iterations / 10) {  // after a warm-up tenth
            std::chrono::duration<double, std::micro> took = std::chrono::steady_clock::now() - start;
            times.push_back(took.count());
        }
    }
    std::sort(times.begin(), times.end());
    auto at = [&](double q) { return times[static_cast<std::size_t>((times.size() - 1) * q)]; };
    std::printf("c++ %s %zu %.1f %.1f\n", url.c_str(), iterations, at(0.5), at(0.99));
    return 0;
}
