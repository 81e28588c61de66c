// Objects under contention across processes: `contend_objects URL PROCESSES ITERATIONS MODE`
// inserts a counter object "0" under a name of its own, starts PROCESSES copies of itself, each
// incrementing it ITERATIONS times, and checks that it ends at exactly PROCESSES x ITERATIONS.
//   MODE locked:     get_and_lock, then update_locked_and_release (seed 002's quote example)
//   MODE optimistic: get, then update_optimistic, read again and retry on VersionMismatch (and
//                    on Busy: bakery and column prefix take the lock for an unlocked write)
// A lost increment (two processes writing the same next value) leaves the counter short.
#include <baton.hpp>

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

extern char** environ;

namespace {

// Increments before giving up on one (only ever reached if something is wrong).
constexpr int kMaxAttempts = 100000;

std::uint64_t number(const std::string& text) { return std::stoull(text); }

int child(const std::string& url, int iterations, const std::string& name, const std::string& mode) {
    baton::Options options;
    options.wait_timeout = std::chrono::seconds(120);
    baton::Locker counters(url, options);
    long retries = 0;
    for (int i = 0; i < iterations; ++i) {
        if (mode == "locked") {
            auto counter = counters.get_and_lock(name);
            counter.update_locked_and_release(std::to_string(number(counter.value_string()) + 1));
            continue;
        }
        for (int attempt = 1;; ++attempt) {
            if (attempt > kMaxAttempts) {
                std::cerr << "max optimistic update attempts exceeded\n";
                return 3;
            }
            auto read = counters.get(name);
            if (!read) {
                std::cerr << "the counter is gone\n";
                return 2;
            }
            try {
                counters.update_optimistic(name, std::to_string(number(read->value_string()) + 1),
                                           read->version);
                break;
            } catch (const baton::VersionMismatch&) {
                ++retries;  // another process wrote first: read again
            } catch (const baton::Busy&) {
                ++retries;  // another process's write holds the lock for a moment
            }
        }
    }
    std::cout << "process " << ::getpid() << ": " << iterations << " increments, " << retries
              << " retries\n";
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    try {
        if (argc == 6 && std::string(argv[1]) == "child") {
            return child(argv[2], std::atoi(argv[3]), argv[4], argv[5]);
        }
        if (argc != 5 || (std::string(argv[4]) != "locked" && std::string(argv[4]) != "optimistic")) {
            std::cerr << "usage: contend_objects URL PROCESSES ITERATIONS locked|optimistic\n";
            return 64;
        }
        const std::string url = argv[1], mode = argv[4];
        const int processes = std::atoi(argv[2]), iterations = std::atoi(argv[3]);
        const std::string name = "counter-" + mode + "-" + std::to_string(::getpid()) + "-" +
                                 std::to_string(std::chrono::system_clock::now().time_since_epoch().count());
        baton::Locker counters(url);
        counters.insert(name, "0");
        auto started = std::chrono::steady_clock::now();
        std::vector<pid_t> pids;
        for (int p = 0; p < processes; ++p) {
            std::vector<std::string> args = {argv[0], "child", url, argv[3], name, mode};
            std::vector<char*> raw;
            for (auto& a : args) raw.push_back(a.data());
            raw.push_back(nullptr);
            pid_t pid;
            if (posix_spawn(&pid, argv[0], nullptr, nullptr, raw.data(), environ) != 0) {
                std::cerr << "cannot start a child\n";
                return 1;
            }
            pids.push_back(pid);
        }
        int failed = 0;
        for (pid_t pid : pids) {
            int status = 0;
            waitpid(pid, &status, 0);
            if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) failed++;
        }
        auto took = std::chrono::duration_cast<std::chrono::milliseconds>(
            std::chrono::steady_clock::now() - started);
        auto end = counters.get(name);
        const std::uint64_t want = static_cast<std::uint64_t>(processes) * iterations;
        const std::uint64_t got = end ? number(end->value_string()) : 0;
        std::cout << processes << " processes x " << iterations << " " << mode
                  << " increments: counter " << got << " (want " << want << "), version "
                  << (end ? end->version : 0) << ", " << failed << " failed processes, "
                  << took.count() << " ms\n";
        counters.remove(name);
        // One insert, then one write per increment: any other version means a write was lost
        // or doubled.
        const bool versions_match = end && end->version == want + 1;
        return failed == 0 && got == want && versions_match ? 0 : 1;
    } catch (const baton::Error& e) {
        std::cerr << "baton: " << e.what() << "\n";
        return 1;
    }
}
