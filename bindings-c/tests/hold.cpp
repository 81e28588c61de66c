// For the interoperation test with the `baton` command:
//   hold URL NAME try        one attempt: exit 0 if acquired (and released), 75 if busy
//   hold URL NAME FILE       take the lock, create FILE, hold until FILE is removed (or 60 s),
//                            then release and exit 0
#include <baton.hpp>

#include <unistd.h>

#include <chrono>
#include <fstream>
#include <iostream>
#include <string>
#include <thread>

int main(int argc, char** argv) {
    if (argc != 4) {
        std::cerr << "usage: hold URL NAME try|FILE\n";
        return 64;
    }
    try {
        baton::Locker locker(argv[1]);
        baton::Lock lock(locker);
        if (std::string(argv[3]) == "try") {
            return lock.try_lock(argv[2]) ? 0 : 75;
        }
        lock.lock(argv[2]);
        const std::string file = argv[3];
        std::ofstream(file) << lock.token() << "\n";
        auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
        while (::access(file.c_str(), F_OK) == 0 && std::chrono::steady_clock::now() < deadline) {
            std::this_thread::sleep_for(std::chrono::milliseconds(10));  // polling a file
        }
        lock.unlock();
        return 0;
    } catch (const baton::Error& e) {
        std::cerr << "baton: " << e.what() << "\n";
        return 1;
    }
}
