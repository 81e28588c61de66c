// The C++ client of the fault harness (docs/faults-design.md), through baton.hpp: the same
// critical sections as the Rust worker (tests/src/bin/chaos_worker.rs), flag for flag.
//
//   chaos_worker_cpp --url URL --strategy S --name NAME --register HOST:PORT --client ID
//                    [--seconds 60] [--ttl-ms 2000] [--hold-ms 50] [--wait-ms 10000]
//
// Each section: lock (keep-alive on, waiting up to --wait-ms), `begin`, fenced `read`, a pause of
// up to --hold-ms, fenced `write`, `lost` if the lock knows by then that its lease was lost,
// `end`, then the unlock and `release` with its outcome. A failed lock call is reported
// (`error CODE`) and retried after 20 ms. Every lock decision is baton's; the register is one
// TCP connection (POSIX sockets) for the whole run. Prints a summary line at the end; exits 0,
// 2 on bad flags, 1 if the register cannot be reached or answers `bad ...`, or the locker
// cannot be opened.
//
// Built by `scripts/c-bindings chaos-worker` against the installed CMake package (CMakeLists.txt).

#include <baton.hpp>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <iostream>
#include <optional>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

namespace {

using std::chrono::milliseconds;

// How long the register may take to connect or answer: it is never partitioned from clients,
// so a slow answer means it is gone and the run is void (as the Rust client).
constexpr int kAnswerDeadlineSeconds = 30;

struct Args {
    std::string url;
    std::string strategy = "unique-insert";
    std::string name = "chaos";
    std::string register_address;
    std::string client;
    std::uint64_t seconds = 60;
    std::uint64_t ttl_ms = 2000;
    std::uint64_t hold_ms = 50;
    std::uint64_t wait_ms = 10000;
};

// The strategy names the Rust worker accepts (baton's Strategy::from_str), as the binding's
// canonical name.
std::optional<std::string> strategy_named(std::string_view s) {
    if (s == "unique-insert" || s == "unique_insert" || s == "unique") {
        return std::string("unique-insert");
    }
    if (s == "bakery") {
        return std::string("bakery");
    }
    if (s == "column-prefix" || s == "column_prefix" || s == "prefix") {
        return std::string("column-prefix");
    }
    return std::nullopt;
}

std::uint64_t number(const std::string& flag, const std::string& value) {
    if (value.empty() || value.size() > 19 ||
        value.find_first_not_of("0123456789") != std::string::npos) {
        throw std::invalid_argument(flag + " \"" + value + "\" is not a number");
    }
    return std::stoull(value);
}

Args parse(int argc, char** argv) {
    Args a;
    for (int i = 1; i < argc; ++i) {
        const std::string flag = argv[i];
        static const char* const known[] = {"--url",      "--strategy", "--name",
                                             "--register", "--client",   "--seconds",
                                             "--ttl-ms",   "--hold-ms",  "--wait-ms"};
        bool is_known = false;
        for (const char* k : known) {
            is_known = is_known || flag == k;
        }
        if (!is_known) {
            throw std::invalid_argument("unknown flag " + flag);
        }
        if (i + 1 >= argc) {
            throw std::invalid_argument(flag + " needs a value");
        }
        const std::string value = argv[++i];
        if (flag == "--url") {
            a.url = value;
        } else if (flag == "--strategy") {
            std::optional<std::string> s = strategy_named(value);
            if (!s) {
                throw std::invalid_argument("unknown strategy \"" + value +
                                            "\"; expected bakery, unique-insert or column-prefix");
            }
            a.strategy = *s;
        } else if (flag == "--name") {
            a.name = value;
        } else if (flag == "--register") {
            a.register_address = value;
        } else if (flag == "--client") {
            a.client = value;
        } else if (flag == "--seconds") {
            a.seconds = number(flag, value);
        } else if (flag == "--ttl-ms") {
            a.ttl_ms = number(flag, value);
        } else if (flag == "--hold-ms") {
            a.hold_ms = number(flag, value);
        } else if (flag == "--wait-ms") {
            a.wait_ms = number(flag, value);
        } else {
            throw std::invalid_argument("unknown flag " + flag);
        }
    }
    if (a.register_address.empty() || a.client.empty() || a.url.empty()) {
        throw std::invalid_argument("--register, --client and --url are needed");
    }
    return a;
}

// A connection to the register: one request line at a time, one answer line each.
class Register {
public:
    explicit Register(const std::string& address) : address_(address) {
        std::size_t colon = address.rfind(':');
        if (colon == std::string::npos || colon == 0 || colon + 1 == address.size()) {
            throw std::runtime_error("register " + address + ": not HOST:PORT");
        }
        std::string host = address.substr(0, colon);
        if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
            host = host.substr(1, host.size() - 2);
        }
        const std::string port = address.substr(colon + 1);
        addrinfo hints{};
        hints.ai_family = AF_UNSPEC;
        hints.ai_socktype = SOCK_STREAM;
        addrinfo* found = nullptr;
        int rc = getaddrinfo(host.c_str(), port.c_str(), &hints, &found);
        if (rc != 0) {
            throw std::runtime_error("register " + address + ": " + gai_strerror(rc));
        }
        std::string why = "no address";
        for (addrinfo* ai = found; ai != nullptr && fd_ < 0; ai = ai->ai_next) {
            int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
            if (fd < 0) {
                why = std::strerror(errno);
                continue;
            }
            if (connect_within(fd, ai->ai_addr, ai->ai_addrlen, why)) {
                fd_ = fd;
            } else {
                close(fd);
            }
        }
        freeaddrinfo(found);
        if (fd_ < 0) {
            throw std::runtime_error("register " + address + ": " + why);
        }
        int one = 1;
        setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        timeval deadline{kAnswerDeadlineSeconds, 0};
        setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &deadline, sizeof deadline);
        setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &deadline, sizeof deadline);
    }

    Register(const Register&) = delete;
    Register& operator=(const Register&) = delete;
    ~Register() {
        if (fd_ >= 0) {
            close(fd_);
        }
    }

    // Sends one request line and returns the answer; a `bad ...` answer is an error.
    std::string request(const std::string& line) {
        const std::string out = line + "\n";
        std::size_t sent = 0;
        while (sent < out.size()) {
            ssize_t n = send(fd_, out.data() + sent, out.size() - sent, MSG_NOSIGNAL);
            if (n < 0 && errno == EINTR) {
                continue;
            }
            if (n <= 0) {
                throw std::runtime_error("register: sending \"" + line + "\": " +
                                         std::strerror(errno));
            }
            sent += static_cast<std::size_t>(n);
        }
        std::string answer;
        for (;;) {
            std::size_t newline = buffer_.find('\n');
            if (newline != std::string::npos) {
                answer = buffer_.substr(0, newline);
                buffer_.erase(0, newline + 1);
                break;
            }
            char chunk[4096];
            ssize_t n = recv(fd_, chunk, sizeof chunk, 0);
            if (n < 0 && errno == EINTR) {
                continue;
            }
            if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
                throw std::runtime_error("register: no answer to \"" + line + "\" within " +
                                         std::to_string(kAnswerDeadlineSeconds) + "s");
            }
            if (n < 0) {
                throw std::runtime_error("register: answer to \"" + line + "\": " +
                                         std::strerror(errno));
            }
            if (n == 0) {
                throw std::runtime_error("register: closed before answering \"" + line + "\"");
            }
            buffer_.append(chunk, static_cast<std::size_t>(n));
        }
        if (answer.rfind("bad ", 0) == 0) {
            throw std::runtime_error("register refused \"" + line + "\": " + answer.substr(4));
        }
        return answer;
    }

private:
    // connect() with the answer deadline (a blocking connect could wait minutes for a SYN).
    static bool connect_within(int fd, const sockaddr* addr, socklen_t len, std::string& why) {
        int flags = fcntl(fd, F_GETFL);
        fcntl(fd, F_SETFL, flags | O_NONBLOCK);
        if (connect(fd, addr, len) != 0) {
            if (errno != EINPROGRESS) {
                why = std::strerror(errno);
                return false;
            }
            pollfd p{fd, POLLOUT, 0};
            int ready;
            do {
                ready = poll(&p, 1, kAnswerDeadlineSeconds * 1000);
            } while (ready < 0 && errno == EINTR);
            if (ready == 0) {
                why = "no connection within " + std::to_string(kAnswerDeadlineSeconds) + "s";
                return false;
            }
            int error = 0;
            socklen_t size = sizeof error;
            if (ready < 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &size) != 0 ||
                error != 0) {
                why = std::strerror(ready < 0 ? errno : error);
                return false;
            }
        }
        fcntl(fd, F_SETFL, flags);
        return true;
    }

    std::string address_;
    int fd_ = -1;
    std::string buffer_;
};

struct Tally {
    std::uint64_t sections = 0;
    std::uint64_t refused = 0;
    std::uint64_t lost = 0;
    std::uint64_t lock_errors = 0;
    // The error codes seen so far: each one's first message goes to the log.
    std::set<std::string> codes_seen;
};

Tally run(const Args& args) {
    Register reg(args.register_address);
    const std::string& c = args.client;
    reg.request("hello " + c + " cpp " + std::to_string(getpid()));

    baton::Options options;
    options.strategy = args.strategy;
    options.ttl = milliseconds(args.ttl_ms);
    options.wait_timeout = milliseconds(args.wait_ms);
    options.keep_alive = true;
    baton::Locker locker(args.url, options);

    std::mt19937_64 rng(std::random_device{}());
    std::uniform_int_distribution<std::uint64_t> hold(0, args.hold_ms);
    Tally tally;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(args.seconds);
    while (std::chrono::steady_clock::now() < deadline) {
        std::optional<baton::Lock> lock;
        try {
            lock.emplace(locker, args.name);  // waits up to wait_timeout: TimedOut after it
        } catch (const baton::Error& e) {
            tally.lock_errors += 1;
            const std::string code(baton::kind_name(e.kind()));
            if (tally.codes_seen.insert(code).second) {
                std::cerr << "worker.cpp " << c << ": first " << code << ": " << e.what()
                          << std::endl;
            }
            reg.request("error " + c + " " + code);
            std::this_thread::sleep_for(milliseconds(20));
            continue;
        }
        const std::string token = std::to_string(lock->token());
        reg.request("begin " + c + " " + token);
        const std::string read = reg.request("read " + c + " " + token);
        std::this_thread::sleep_for(milliseconds(hold(rng)));
        if (read.rfind("value ", 0) == 0) {
            const std::string answer = reg.request("write " + c + " " + token + " " + read.substr(6));
            tally.refused += answer.rfind("refused", 0) == 0 ? 1 : 0;
        } else {
            tally.refused += 1;
        }
        bool lost = false;
        try {
            lock->check();
        } catch (const baton::Lost&) {
            lost = true;
        }
        if (lost) {
            tally.lost += 1;
            reg.request("lost " + c + " " + token);
        }
        reg.request("end " + c + " " + token);
        std::string outcome = "ok";
        try {
            lock->unlock();
        } catch (const baton::Error& e) {
            outcome = std::string(baton::kind_name(e.kind()));
        }
        reg.request("release " + c + " " + token + " " + outcome);
        tally.sections += 1;
    }
    return tally;
}

}  // namespace

int main(int argc, char** argv) {
    Args args;
    try {
        args = parse(argc, argv);
    } catch (const std::invalid_argument& e) {
        std::cerr << "chaos_worker_cpp: " << e.what() << "\n";
        return 2;
    }
    try {
        Tally t = run(args);
        std::cout << "done client=" << args.client << " sections=" << t.sections
                  << " refused=" << t.refused << " lost=" << t.lost
                  << " lock_errors=" << t.lock_errors << std::endl;
        return 0;
    } catch (const std::exception& e) {
        std::cerr << "chaos_worker_cpp " << args.client << ": " << e.what() << "\n";
        return 1;
    }
}
