// Mutual exclusion across processes: `contend URL PROCESSES ITERATIONS DIR` starts PROCESSES
// copies of itself, each taking the lock ITERATIONS times; inside the critical section each
// creates DIR/marker with O_EXCL (which fails if another process is inside too), appends its
// fencing token to DIR/tokens, and removes the marker. The parent checks that no marker ever
// collided, that every critical section ran, and that the tokens strictly increase in the
// order the sections ran.
#include <baton.hpp>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

extern char** environ;

namespace {

int child(const std::string& url, int iterations, const std::string& dir) {
    baton::Options options;
    options.wait_timeout = std::chrono::seconds(60);
    baton::Locker locker(url, options);
    const std::string marker = dir + "/marker";
    const std::string tokens = dir + "/tokens";
    for (int i = 0; i < iterations; ++i) {
        baton::Lock lock(locker, "contended");
        int fd = ::open(marker.c_str(), O_CREAT | O_EXCL | O_WRONLY, 0600);
        if (fd < 0) {
            std::cerr << "overlap: " << marker << " exists\n";
            return 2;
        }
        ::close(fd);
        {
            std::ofstream out(tokens, std::ios::app);
            out << lock.token() << "\n";
        }
        ::unlink(marker.c_str());
        lock.unlock();
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    try {
        if (argc == 5 && std::string(argv[1]) == "child") {
            return child(argv[2], std::atoi(argv[3]), argv[4]);
        }
        if (argc != 5) {
            std::cerr << "usage: contend URL PROCESSES ITERATIONS DIR\n";
            return 64;
        }
        const std::string url = argv[1], dir = argv[4];
        const int processes = std::atoi(argv[2]), iterations = std::atoi(argv[3]);
        std::remove((dir + "/tokens").c_str());
        std::remove((dir + "/marker").c_str());
        std::vector<pid_t> pids;
        for (int p = 0; p < processes; ++p) {
            std::vector<std::string> args = {argv[0], "child", url, argv[3], dir};
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
        std::ifstream in(dir + "/tokens");
        std::uint64_t token = 0, previous = 0;
        int sections = 0, disorder = 0;
        while (in >> token) {
            if (sections > 0 && token <= previous) disorder++;
            previous = token;
            sections++;
        }
        std::cout << processes << " processes x " << iterations << ": " << sections
                  << " critical sections, " << failed << " failed processes, " << disorder
                  << " tokens out of order\n";
        return failed == 0 && disorder == 0 && sections == processes * iterations ? 0 : 1;
    } catch (const baton::Error& e) {
        std::cerr << "baton: " << e.what() << "\n";
        return 1;
    }
}
