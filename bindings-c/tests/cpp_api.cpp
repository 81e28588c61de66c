// The C++ API (baton.hpp) with GoogleTest, on the store BATON_TEST_URL names (memory: when
// unset), each strategy: Lock, Mutex with the standard lock types, errors, loss.
#include <gtest/gtest.h>

#include <baton.hpp>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <future>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;

namespace {

std::string store_url() {
    const char* url = std::getenv("BATON_TEST_URL");
    return url && *url ? url : "memory:";
}

// A name no other test (or earlier run) uses.
std::string fresh(const std::string& base) {
    static std::atomic<int> n{0};
    return base + "-" + std::to_string(::getpid()) + "-" + std::to_string(n++);
}

class CppApi : public ::testing::TestWithParam<const char*> {
protected:
    baton::Locker locker() {
        baton::Options options;
        options.strategy = GetParam();
        options.wait_timeout = 300ms;
        options.ttl = 5s;
        return baton::Locker(store_url(), options);
    }
};

TEST_P(CppApi, LockExcludesFencesAndUnlocks) {
    auto l = locker();
    auto other = baton::Locker(l);  // copies share the store
    const std::string name = fresh("users::snap");
    std::uint64_t first_token = 0;
    {
        baton::Lock lock(l, name);
        EXPECT_TRUE(lock.held());
        EXPECT_GT(lock.remaining(), 0ms);
        EXPECT_EQ(lock.name(), name);
        first_token = lock.token();
        EXPECT_GT(first_token, 0u);
        lock.check();

        baton::Lock second(other);
        EXPECT_FALSE(second.try_lock(name));
        EXPECT_FALSE(second.lock_for(name, 50ms));
        EXPECT_THROW(baton::Lock(other, name), baton::TimedOut);
    }  // the destructor unlocks
    baton::Lock again(other);
    ASSERT_TRUE(again.try_lock(name));
    EXPECT_GT(again.token(), first_token);
    again.unlock();
    EXPECT_FALSE(again.held());
    EXPECT_THROW(again.unlock(), baton::NotOwner);  // double unlock
    EXPECT_THROW(again.check(), baton::NotOwner);
}

// How far the wall clock (which Cassandra expires cells by) moved against the monotonic one
// (which leases are timed by) since `since`, in milliseconds.
static long long wall_clock_step_ms(std::chrono::nanoseconds since) {
    auto now = std::chrono::system_clock::now().time_since_epoch() -
               std::chrono::steady_clock::now().time_since_epoch();
    return std::chrono::duration_cast<std::chrono::milliseconds>(now - since).count();
}

TEST_P(CppApi, MutexIsLockable) {
    const std::chrono::nanoseconds clocks = std::chrono::system_clock::now().time_since_epoch() -
                                            std::chrono::steady_clock::now().time_since_epoch();
    auto l = locker();
    const std::string name = fresh("mutex");
    baton::Mutex a(l, name);
    baton::Mutex b(l, name);
    {
        std::lock_guard<baton::Mutex> guard(a);
        EXPECT_GT(a.token(), 0u);
        EXPECT_FALSE(b.try_lock());
        std::unique_lock<baton::Mutex> waiting(b, std::defer_lock);
        bool taken = false;
        try {
            waiting.lock();
            taken = true;
        } catch (const baton::TimedOut&) {
        }
        if (taken) {
            // Never expected: say what each side believed, to tell two holders from a lost lease.
            std::string a_state = "held";
            try {
                a.check();
            } catch (const baton::Error& e) {
                a_state = std::string("not held: ") + e.what();
            }
            ADD_FAILURE() << "b took " << name << " (token " << b.token() << ") while a held it (token "
                          << a.token() << ", " << a_state << "); the wall clock moved "
                          << wall_clock_step_ms(clocks) << " ms against the monotonic clock meanwhile";
        }
    }
    {
        std::scoped_lock both(b);
        EXPECT_GT(b.token(), 0u);
    }
    std::unique_lock<baton::Mutex> u(a, std::try_to_lock);
    EXPECT_TRUE(u.owns_lock());
}

TEST_P(CppApi, ThreadsShareALockerAndNeverOverlap) {
    auto l = locker();
    const std::string name = fresh("threads");
    std::atomic<int> inside{0};
    std::atomic<int> overlaps{0};
    std::atomic<int> done{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
        threads.emplace_back([&] {
            baton::Mutex m(l, name);
            for (int i = 0; i < 10; ++i) {
                while (!m.try_lock()) {
                    std::this_thread::sleep_for(1ms);  // backoff between attempts, not a wait
                }
                if (inside.fetch_add(1) != 0) {
                    overlaps++;
                }
                inside.fetch_sub(1);
                m.unlock();
                done++;
            }
        });
    }
    for (auto& t : threads) {
        t.join();
    }
    EXPECT_EQ(overlaps.load(), 0);
    EXPECT_EQ(done.load(), 40);
}

TEST_P(CppApi, BadInputIsAnErrorNeverACrash) {
    auto l = locker();
    baton::Lock lock(l);
    EXPECT_THROW(lock.lock(""), baton::InvalidName);
    EXPECT_THROW(lock.lock(std::string("a\0b", 3)), baton::InvalidName);
    EXPECT_THROW(lock.lock("\xff\xfe"), baton::InvalidName);
    EXPECT_THROW(lock.lock(std::string(1 << 20, 'x')), baton::InvalidName);
    EXPECT_THROW(lock.lock_for("x", -1ms), baton::InvalidOption);
    EXPECT_THROW(lock.unlock(), baton::NotOwner);  // nothing held
    baton::Options zero;
    zero.ttl = 0ms;
    EXPECT_THROW(baton::Locker(store_url(), zero), baton::InvalidOption);
    baton::Options negative;
    negative.wait_timeout = -5ms;
    EXPECT_THROW(baton::Locker(store_url(), negative), baton::InvalidOption);
    baton::Options strategy;
    strategy.strategy = "queue";
    EXPECT_THROW(baton::Locker(store_url(), strategy), baton::InvalidOption);
    EXPECT_THROW(baton::Locker("nosuch://x"), baton::InvalidOption);
    try {
        baton::Locker("nosuch://x");
    } catch (const baton::Error& e) {
        EXPECT_EQ(e.code(), 7u);
        EXPECT_EQ(e.kind(), baton::ErrorKind::InvalidOption);
        EXPECT_EQ(baton::kind_name(e.kind()), "invalid_option");
    }
}

TEST_P(CppApi, LossIsReportedWithoutPolling) {
    baton::Options options;
    options.strategy = GetParam();
    options.ttl = 200ms;
    options.keep_alive = false;  // the lease runs out: a loss
    baton::Locker l(store_url(), options);
    baton::Lock lock(l, fresh("lost"));
    std::promise<std::uint32_t> lost;
    auto reported = lost.get_future();
    lock.on_lost([&lost](const baton::Error& e) { lost.set_value(e.code()); });
    ASSERT_EQ(reported.wait_for(10s), std::future_status::ready);
    EXPECT_EQ(reported.get(), static_cast<std::uint32_t>(baton::ErrorKind::Lost));
    EXPECT_FALSE(lock.held());
    EXPECT_THROW(lock.check(), baton::Lost);
    EXPECT_TRUE(lock.wait_lost(0ms));
}

TEST(CppErrors, ADeadStoreIsUnavailable) {
    if (store_url() != "memory:") {
        GTEST_SKIP() << "run once, with the memory store";
    }
    baton::Options options;
    options.wait_timeout = 0ms;
    baton::Locker l("postgres://baton@127.0.0.1:9/baton?timeout=1s", options);
    EXPECT_THROW(baton::Lock(l, "x"), baton::StoreUnavailable);
}

// A TCP server on loopback that accepts every connection and never writes a byte (connections
// stay open until it is destroyed: a reset would be an answer).
class SilentServer {
public:
    SilentServer() {
        fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        addr.sin_port = 0;
        socklen_t len = sizeof addr;
        if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
            ::listen(fd_, 16) != 0 ||
            ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
            throw std::runtime_error("silent server: cannot listen on 127.0.0.1");
        }
        port_ = ntohs(addr.sin_port);
        // The kernel completes handshakes into the backlog: nothing needs to accept them.
    }
    ~SilentServer() { ::close(fd_); }
    SilentServer(const SilentServer&) = delete;
    SilentServer& operator=(const SilentServer&) = delete;
    int port() const { return port_; }

private:
    int fd_ = -1;
    int port_ = 0;
};

// A store that never answers costs no more than the lock's timeout (it used to cost the store
// attempts times the command timeout).
TEST(CppErrors, ASilentStoreFailsTheWaitAtItsTimeout) {
    if (store_url() != "memory:") {
        GTEST_SKIP() << "run once, with the memory store";
    }
    for (const char* scheme : {"postgres", "mysql", "cassandra"}) {
        SilentServer server;
        baton::Options options;
        options.wait_timeout = 2s;
        // Cassandra: no authenticator here, so no user.
        std::string user = std::string(scheme) == "cassandra" ? "" : "baton@";
        baton::Locker l(std::string(scheme) + "://" + user + "127.0.0.1:" +
                            std::to_string(server.port()) + "/baton",
                        options);
        auto started = std::chrono::steady_clock::now();
        EXPECT_THROW(baton::Lock(l, "job"), baton::StoreUnavailable) << scheme;
        auto took = std::chrono::steady_clock::now() - started;
        EXPECT_GE(took, 2s) << scheme;
        EXPECT_LT(took, 2700ms) << scheme << ": "
                                << std::chrono::duration_cast<std::chrono::milliseconds>(took).count()
                                << " ms";
    }
}

INSTANTIATE_TEST_SUITE_P(Strategies, CppApi,
                         ::testing::Values("unique-insert", "bakery", "column-prefix"));

}  // namespace
