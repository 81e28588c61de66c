// The C++ API (baton.hpp) with GoogleTest, on the store BATON_TEST_URL names (memory: when
// unset), each strategy: Lock, Mutex with the standard lock types, errors, loss, objects
// beside locks (baton::Object, Locker::get and the optimistic calls), shared locks and
// semaphores (baton::SharedMutex with std::shared_lock, baton::Semaphore), dot-separated paths
// (Options::paths) and several locks at once (Locker::lock_all).
#include <gtest/gtest.h>

#include <baton.hpp>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <future>
#include <limits>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <mutex>
#include <shared_mutex>
#include <optional>
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

// The largest value the store under test takes (MariaDB's is smaller).
std::size_t store_limit() {
    return store_url().rfind("mysql", 0) == 0 ? 48000 : 1048576;
}

// Bytes that are not text: NUL inside, and no UTF-8.
const std::vector<std::uint8_t> kOdd = {'1', 0, 0xff, 0xfe, '\n', 0x80, 0};

// Whether `name` can be taken now (taken and given back).
bool free_now(const baton::Locker& l, const std::string& name) {
    baton::Lock probe(l);
    return probe.try_lock(name);
}

template <class F>
baton::ErrorKind kind_of(F&& f) {
    try {
        f();
    } catch (const baton::Error& e) {
        return e.kind();
    }
    return static_cast<baton::ErrorKind>(0);
}

TEST_P(CppApi, ObjectsRoundTripBytesAndVersions) {
    auto quotes = locker();
    const std::string name = fresh("GOOG");
    EXPECT_EQ(quotes.get(name), std::nullopt);
    EXPECT_THROW(quotes.remove(name), baton::ObjectNotFound);
    EXPECT_THROW(quotes.update_optimistic(name, "1", 0), baton::ObjectNotFound);

    EXPECT_EQ(quotes.insert(name, kOdd), 1u);
    EXPECT_THROW(quotes.insert(name, "again"), baton::AlreadyExists);
    auto read = quotes.get(name);
    ASSERT_TRUE(read.has_value());
    EXPECT_EQ(read->value, kOdd);
    EXPECT_EQ(read->version, 1u);
    EXPECT_EQ(read->value_string(), std::string("1\0\xff\xfe\n\x80\0", 7));

    // Every kind of bytes the calls accept.
    EXPECT_EQ(quotes.update_optimistic(name, std::string("a\0b", 3), 1), 2u);
    EXPECT_EQ(quotes.update_optimistic(name, std::string_view("cd"), 2), 3u);
    EXPECT_EQ(quotes.update_optimistic(name, std::vector<char>{'e', '\0'}, 3), 4u);
    const char raw[] = {'\xff', '\0', 'g'};
    EXPECT_EQ(quotes.update_optimistic(name, baton::Bytes(raw, sizeof raw), 4), 5u);
    EXPECT_EQ(quotes.get(name)->value_string(), std::string(raw, sizeof raw));
    EXPECT_THROW(quotes.update_optimistic(name, "stale", 4), baton::VersionMismatch);
    EXPECT_EQ(quotes.get(name)->version, 5u);  // nothing written

    {
        baton::Object quote = quotes.get_and_lock(name);
        EXPECT_TRUE(quote.held());
        EXPECT_TRUE(quote.exists());
        EXPECT_GT(quote.token(), 0u);
        EXPECT_GT(quote.remaining(), 0ms);
        EXPECT_EQ(quote.name(), name);
        EXPECT_EQ(quote.version(), 5u);
        EXPECT_EQ(quote.value_string(), std::string(raw, sizeof raw));

        // Others read, but do not write or lock.
        EXPECT_EQ(quotes.get(name)->version, 5u);
        EXPECT_THROW(quotes.update_optimistic(name, "x", 5), baton::Busy);
        EXPECT_THROW(quotes.remove(name), baton::Busy);
        EXPECT_THROW(quotes.insert(name, "x"), baton::Busy);
        EXPECT_EQ(quotes.try_get_and_lock(name), std::nullopt);
        EXPECT_THROW(quotes.get_and_lock_for(name, 0ms), baton::TimedOut);
        EXPECT_THROW(quotes.get_and_lock_for(name, 30ms), baton::TimedOut);
        EXPECT_THROW(quotes.get_and_lock_for(name, -1ms), baton::InvalidOption);
        EXPECT_THROW(quotes.get_and_lock(name), baton::TimedOut);

        EXPECT_EQ(quote.get_locked(), std::optional<std::vector<std::uint8_t>>(
                                          std::vector<std::uint8_t>(raw, raw + sizeof raw)));
        EXPECT_EQ(quote.update_locked_and_retain(kOdd), 6u);
        EXPECT_EQ(quote.value(), kOdd);
        EXPECT_TRUE(quote.held());
        quote.lock_refresh();
        EXPECT_THROW(quote.insert_locked("x"), baton::AlreadyExists);
        EXPECT_EQ(quote.update_locked_and_release(std::string("1053.26")), 7u);
        EXPECT_FALSE(quote.held());
        EXPECT_EQ(quote.value_string(), "1053.26");  // still readable

        // Released: every locked call is NotOwner.
        EXPECT_THROW(quote.update_locked_and_retain("x"), baton::NotOwner);
        EXPECT_THROW(quote.update_locked_and_release("x"), baton::NotOwner);
        EXPECT_THROW(quote.insert_locked("x"), baton::NotOwner);
        EXPECT_THROW(quote.get_locked(), baton::NotOwner);
        EXPECT_THROW(quote.lock_refresh(), baton::NotOwner);
        EXPECT_THROW(quote.remove_locked(), baton::NotOwner);
        EXPECT_THROW(quote.unlock(), baton::NotOwner);
    }
    EXPECT_EQ(quotes.get(name)->value_string(), "1053.26");

    {
        auto quote = quotes.get_and_lock(name);
        quote.unlock();
        EXPECT_THROW(quote.unlock(), baton::NotOwner);  // double unlock
    }
    {
        auto quote = quotes.get_and_lock(name);  // the destructor releases
    }
    {
        auto taken = quotes.try_get_and_lock(name);
        ASSERT_TRUE(taken.has_value());
        baton::Object moved = std::move(*taken);  // the moved-from Object holds nothing
        EXPECT_FALSE(taken->held());
        EXPECT_EQ(taken->version(), 0u);
        EXPECT_THROW(taken->unlock(), baton::NotOwner);
        EXPECT_TRUE(moved.held());
        moved.remove_locked();
        EXPECT_FALSE(moved.held());
        EXPECT_FALSE(moved.exists());
    }
    EXPECT_EQ(quotes.get(name), std::nullopt);

    {
        // A held name without an object; versions go on after the removal (8).
        auto bare = quotes.get_and_lock(name);
        EXPECT_FALSE(bare.exists());
        EXPECT_TRUE(bare.value().empty());
        EXPECT_EQ(bare.get_locked(), std::nullopt);
        EXPECT_THROW(bare.update_locked_and_retain("x"), baton::ObjectNotFound);
        EXPECT_THROW(bare.remove_locked(), baton::ObjectNotFound);
        EXPECT_TRUE(bare.held());
        EXPECT_EQ(bare.insert_locked("9"), 9u);
        bare.remove_locked();
    }
    {
        auto inserted = quotes.insert_and_lock(name, "11");
        EXPECT_TRUE(inserted.held());
        EXPECT_EQ(inserted.version(), 11u);
        EXPECT_EQ(inserted.value_string(), "11");
    }
    EXPECT_THROW(quotes.insert_and_lock(name, "12"), baton::AlreadyExists);
    EXPECT_TRUE(quotes.try_get_and_lock(name).has_value());  // released again

    // The largest value the store takes comes back whole.
    std::vector<std::uint8_t> big(store_limit());
    for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<std::uint8_t>(i * 7);
    quotes.remove(name);
    quotes.insert(name, big);
    EXPECT_EQ(quotes.get(name)->value, big);
    big.push_back(1);
    EXPECT_THROW(quotes.update_optimistic(name, big, 13), baton::InvalidOption);
    quotes.remove(name);
}

TEST_P(CppApi, ObjectsRefuseBadInput) {
    auto quotes = locker();
    const std::string name = fresh("bad");
    const std::string huge(std::size_t(1) << 20, 'x');
    for (const std::string& bad : {std::string(), std::string("a\0b", 3), std::string("\xff\xfe"), huge}) {
        EXPECT_EQ(kind_of([&] { quotes.get(bad); }), baton::ErrorKind::InvalidName);
        EXPECT_EQ(kind_of([&] { quotes.insert(bad, "v"); }), baton::ErrorKind::InvalidName);
        EXPECT_EQ(kind_of([&] { quotes.update_optimistic(bad, "v", 1); }), baton::ErrorKind::InvalidName);
        EXPECT_EQ(kind_of([&] { quotes.remove(bad); }), baton::ErrorKind::InvalidName);
        EXPECT_EQ(kind_of([&] { quotes.get_and_lock(bad); }), baton::ErrorKind::InvalidName);
        EXPECT_EQ(kind_of([&] { quotes.try_get_and_lock(bad); }), baton::ErrorKind::InvalidName);
        EXPECT_EQ(kind_of([&] { quotes.insert_and_lock(bad, "v"); }), baton::ErrorKind::InvalidName);
    }
    const std::string over(std::size_t(1) << 20 | 1, 'v');
    const std::vector<baton::Bytes> values = {std::string_view(), "", baton::Bytes(nullptr, 0),
                                              baton::Bytes(nullptr, 5), over};
    for (const baton::Bytes& v : values) {
        EXPECT_EQ(kind_of([&] { quotes.insert(name, v); }), baton::ErrorKind::InvalidOption);
        EXPECT_EQ(kind_of([&] { quotes.update_optimistic(name, v, 1); }), baton::ErrorKind::InvalidOption);
        EXPECT_EQ(kind_of([&] { quotes.insert_and_lock(name, v); }), baton::ErrorKind::InvalidOption);
    }
    EXPECT_EQ(quotes.get(name), std::nullopt);  // nothing was written
    auto object = quotes.get_and_lock(name);
    for (const baton::Bytes& v : values) {
        EXPECT_EQ(kind_of([&] { object.insert_locked(v); }), baton::ErrorKind::InvalidOption);
        EXPECT_EQ(kind_of([&] { object.update_locked_and_retain(v); }), baton::ErrorKind::InvalidOption);
        EXPECT_EQ(kind_of([&] { object.update_locked_and_release(v); }), baton::ErrorKind::InvalidOption);
    }
    EXPECT_TRUE(object.held());  // a refused write leaves the lock held
}

TEST_P(CppApi, ABrokenLockRefusesTheHoldersWrite) {
    baton::Options options;
    options.strategy = GetParam();
    // Long enough to be seen held after acquiring on a loaded machine under the sanitizers
    // (seen: 300 ms ran out on SQLite before the first check), short enough to wait out.
    options.ttl = 2s;
    options.keep_alive = false;  // the lease runs out
    baton::Locker quotes(store_url(), options);
    const std::string name = fresh("expiring");
    quotes.insert(name, "1");
    auto quote = quotes.get_and_lock(name);
    ASSERT_TRUE(quote.held());
    // Wait for the lease to end (a condition with a deadline, not a sleep).
    auto deadline = std::chrono::steady_clock::now() + 10s;
    while (quote.held() && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(10ms);  // polling held(), with the deadline above
    }
    ASSERT_FALSE(quote.held());
    EXPECT_THROW(quote.update_locked_and_retain("2"), baton::Lost);
    EXPECT_THROW(quote.update_locked_and_release("2"), baton::Lost);
    EXPECT_EQ(quotes.get(name)->value_string(), "1");  // nothing written
}

TEST(CppErrors, ObjectErrorsAreErrorsWithTheirCodes) {
    baton::VersionMismatch mismatch("GOOG changed");
    const baton::Error& base = mismatch;
    EXPECT_EQ(base.code(), 15u);
    EXPECT_EQ(base.kind(), baton::ErrorKind::VersionMismatch);
    EXPECT_EQ(baton::kind_name(base.kind()), "version_mismatch");
    EXPECT_EQ(baton::ObjectNotFound("gone").code(), 16u);
    EXPECT_EQ(baton::kind_name(baton::ErrorKind::ObjectNotFound), "object_not_found");
    EXPECT_EQ(baton::AlreadyExists("there").code(), 17u);
    EXPECT_EQ(baton::kind_name(baton::ErrorKind::AlreadyExists), "already_exists");
    EXPECT_STREQ(baton::TimedOut("late").what(), "late");
    // Thrown from a call with the code the kernel gave, caught as the base, and as runtime_error.
    baton::Locker quotes("memory:");
    quotes.insert("GOOG", "1");
    try {
        quotes.update_optimistic("GOOG", "2", 7);
        ADD_FAILURE() << "no VersionMismatch";
    } catch (const std::runtime_error& e) {
        auto* error = dynamic_cast<const baton::VersionMismatch*>(&e);
        ASSERT_NE(error, nullptr) << e.what();
        EXPECT_EQ(error->code(), static_cast<std::uint32_t>(BATON_VERSION_MISMATCH));
    }
}

// StoreUnavailable within the store's timeout (250 ms, three attempts) or the wait (1 s); a write
// in one step may instead be Ambiguous, where the kernel cannot rule out that a send reached the
// store: a typed error either way. Each call must end in bounded time, not hang on the dead
// store: at most the wait and one round of attempts (1.75 s), with slack for a loaded machine
// (seen: 2.2 s for the optimistic update on 2 busy cores).
TEST(CppErrors, ObjectsOnADeadStoreAreUnavailable) {
    if (store_url() != "memory:") {
        GTEST_SKIP() << "run once, with the memory store";
    }
    baton::Options options;
    options.wait_timeout = 1s;
    baton::Locker quotes("postgres://baton@127.0.0.1:9/baton?timeout=250ms", options);
    const auto bound = 5s;
    auto started = std::chrono::steady_clock::now();
    EXPECT_THROW(quotes.get("GOOG"), baton::StoreUnavailable);
    EXPECT_LT(std::chrono::steady_clock::now() - started, bound);
    started = std::chrono::steady_clock::now();
    EXPECT_THROW(quotes.remove("GOOG"), baton::StoreUnavailable);
    EXPECT_LT(std::chrono::steady_clock::now() - started, bound);
    started = std::chrono::steady_clock::now();
    auto kind = kind_of([&] { quotes.update_optimistic("GOOG", "1", 1); });
    EXPECT_TRUE(kind == baton::ErrorKind::StoreUnavailable || kind == baton::ErrorKind::Ambiguous)
        << baton::kind_name(kind);
    EXPECT_LT(std::chrono::steady_clock::now() - started, bound);
    started = std::chrono::steady_clock::now();
    EXPECT_THROW(quotes.get_and_lock("GOOG"), baton::StoreUnavailable);
    EXPECT_LT(std::chrono::steady_clock::now() - started, bound);
    started = std::chrono::steady_clock::now();
    EXPECT_THROW(quotes.insert_and_lock("GOOG", "1"), baton::StoreUnavailable);
    EXPECT_LT(std::chrono::steady_clock::now() - started, bound);
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

// Locker::lock_all on every strategy, flat names and (bakery, column prefix) paths.
TEST_P(CppApi, LockAllTakesAllInOrderOrNothing) {
    auto l = locker();
    baton::Locker other(l);
    const std::string root = fresh("all");
    const std::vector<std::string> names = {root + ".c", root + ".b", root + ".a.x"};
    {
        std::vector<baton::Lock> locks = l.lock_all(names);
        ASSERT_EQ(locks.size(), 3u);
        EXPECT_EQ(locks[0].name(), root + ".a.x");          // one order, whatever is given
        EXPECT_EQ(locks[1].name(), root + ".b");
        EXPECT_EQ(locks[2].name(), root + ".c");
        for (const auto& lock : locks) {
            EXPECT_TRUE(lock.held());
            EXPECT_GT(lock.token(), 0u);
            EXPECT_FALSE(free_now(other, lock.name()));
        }
        locks[1].unlock();                                   // each an ordinary Lock
        EXPECT_THROW(locks[1].check(), baton::NotOwner);
        EXPECT_TRUE(free_now(other, root + ".b"));
        baton::Lock moved = std::move(locks[2]);
        EXPECT_TRUE(moved.held());
    }
    for (const auto& name : names) {
        EXPECT_TRUE(free_now(other, name)) << name;
    }
    // One held elsewhere: the wait runs out and nothing stays held.
    {
        baton::Lock c(other, root + ".c");
        auto started = std::chrono::steady_clock::now();
        EXPECT_THROW(l.lock_all_for(names, 80ms), baton::TimedOut);
        EXPECT_LT(std::chrono::steady_clock::now() - started, 5s);
        EXPECT_THROW(l.lock_all(names), baton::TimedOut);   // the locker's wait
        EXPECT_THROW(l.lock_all_for(names, 0ms), baton::TimedOut);
        EXPECT_TRUE(free_now(other, root + ".a.x"));
        EXPECT_TRUE(free_now(other, root + ".b"));
    }
    EXPECT_THROW(l.lock_all({}), baton::InvalidOption);
    EXPECT_THROW(l.lock_all({root + ".b", root + ".c", root + ".b"}), baton::InvalidOption);
    EXPECT_THROW(l.lock_all_for(names, -1ms), baton::InvalidOption);
    // Bad names anywhere in the list: typed errors, before anything is taken.
    for (const std::string& bad : {std::string(""), std::string("a\0b", 3), std::string("\xff\xfe"),
                                   std::string(300, 'h'), std::string(1 << 20, 'x')}) {
        EXPECT_THROW(l.lock_all({root + ".a.x", bad}), baton::InvalidName);
        EXPECT_THROW(l.lock_all({bad, root + ".b"}), baton::InvalidName);
        EXPECT_TRUE(free_now(other, root + ".a.x"));
        EXPECT_TRUE(free_now(other, root + ".b"));
    }
    if (std::string(GetParam()) == "unique-insert") {
        EXPECT_THROW(l.lock_all_shared(names), baton::InvalidOption);
        return;
    }
    auto readers = l.lock_all_shared(names);
    auto more = other.lock_all_shared_for(names, 1s);
    EXPECT_EQ(readers.size(), 3u);
    EXPECT_EQ(more.size(), 3u);
    EXPECT_FALSE(free_now(other, root + ".b"));
}

INSTANTIATE_TEST_SUITE_P(Strategies, CppApi,
                         ::testing::Values("unique-insert", "bakery", "column-prefix"));

// Shared locks and semaphores: the strategies that carry them (unique insert refuses them).
class CppModes : public ::testing::TestWithParam<const char*> {
protected:
    baton::Locker locker(const char* strategy = nullptr) {
        baton::Options options;
        options.strategy = strategy ? strategy : GetParam();
        options.wait_timeout = 300ms;
        options.ttl = 5s;
        return baton::Locker(store_url(), options);
    }
};

TEST_P(CppModes, SharedMutexAdmitsReadersTogetherAndAWriterAlone) {
    auto l = locker();
    const std::string name = fresh("catalog");
    baton::SharedMutex a(l, name);
    baton::SharedMutex b(baton::Locker(l), name);
    baton::SharedMutex c(l, name);
    EXPECT_EQ(a.name(), name);
    {
        std::shared_lock<baton::SharedMutex> ra(a);
        std::shared_lock<baton::SharedMutex> rb(b, std::try_to_lock);
        EXPECT_TRUE(rb.owns_lock());  // two readers at once
        EXPECT_GT(a.token(), 0u);
        a.check();
        EXPECT_FALSE(c.try_lock());  // a writer waits for both
        EXPECT_FALSE(c.try_lock_for(50ms));
        std::unique_lock<baton::SharedMutex> w(c, std::defer_lock);
        EXPECT_THROW(w.lock(), baton::TimedOut);
        EXPECT_FALSE(w.owns_lock());
        std::shared_lock<baton::SharedMutex> rc(c, 1s);  // the writer gave up: readers again
        EXPECT_TRUE(rc.owns_lock());
    }
    {
        std::unique_lock<baton::SharedMutex> w(c);  // alone
        EXPECT_TRUE(w.owns_lock());
        EXPECT_GT(c.token(), 0u);
        EXPECT_FALSE(a.try_lock_shared());
        std::shared_lock<baton::SharedMutex> r(b, std::try_to_lock);
        EXPECT_FALSE(r.owns_lock());
        std::shared_lock<baton::SharedMutex> timed(b, 50ms);
        EXPECT_FALSE(timed.owns_lock());
        EXPECT_THROW(std::shared_lock<baton::SharedMutex>{a}, baton::TimedOut);
    }
    {
        std::lock_guard<baton::SharedMutex> g(a);
        std::shared_lock<baton::SharedMutex> r(b, std::try_to_lock);
        EXPECT_FALSE(r.owns_lock());
    }
    std::shared_lock<baton::SharedMutex> last(b, std::try_to_lock);
    EXPECT_TRUE(last.owns_lock());
}

TEST_P(CppModes, SharedMutexKeepsEachThreadsLocks) {
    auto l = locker();
    const std::string name = fresh("per-thread");
    baton::SharedMutex m(l, name);
    EXPECT_THROW(m.unlock(), baton::NotOwner);  // nothing held
    EXPECT_THROW(m.unlock_shared(), baton::NotOwner);
    EXPECT_EQ(m.token(), 0u);
    m.check();  // nothing held: nothing lost

    // Three threads read through one SharedMutex at once, each unlocking its own.
    std::atomic<int> reading{0};
    std::atomic<int> most{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 3; ++t) {
        threads.emplace_back([&] {
            std::shared_lock<baton::SharedMutex> r(m);
            int now = ++reading;
            int seen = most.load();
            while (now > seen && !most.compare_exchange_weak(seen, now)) {
            }
            auto until = std::chrono::steady_clock::now() + 2s;
            while (most.load() < 3 && std::chrono::steady_clock::now() < until) {
                std::this_thread::sleep_for(1ms);
            }
            --reading;
        });
    }
    for (auto& t : threads) {
        t.join();
    }
    EXPECT_EQ(most.load(), 3);

    // A thread unlocks what it locked, of the kind it locked.
    m.lock_shared();
    EXPECT_THROW(m.unlock(), baton::NotOwner);  // a shared lock, not an exclusive one
    std::thread([&] { EXPECT_THROW(m.unlock_shared(), baton::NotOwner); }).join();
    m.unlock_shared();
    EXPECT_THROW(m.unlock_shared(), baton::NotOwner);  // double unlock
    m.lock();
    std::thread([&] { EXPECT_THROW(m.unlock(), baton::NotOwner); }).join();
    m.unlock();
    std::unique_lock<baton::SharedMutex> again(m, std::try_to_lock);
    EXPECT_TRUE(again.owns_lock());
}

TEST_P(CppModes, SemaphoreAdmitsItsPermits) {
    auto l = locker();
    const std::string name = fresh("encoders");
    baton::Semaphore s(l, name, 3);
    baton::Semaphore other(baton::Locker(l), name, 3);
    EXPECT_EQ(s.permits(), 3u);
    EXPECT_EQ(s.name(), name);
    s.acquire();
    EXPECT_TRUE(s.try_acquire());
    EXPECT_TRUE(other.try_acquire_for(1s));
    EXPECT_EQ(s.held(), 2);
    EXPECT_FALSE(other.try_acquire());  // a fourth
    EXPECT_FALSE(s.try_acquire_for(50ms));
    EXPECT_THROW(other.acquire(), baton::TimedOut);
    s.release();  // a permit back
    EXPECT_EQ(s.held(), 1);
    EXPECT_TRUE(other.try_acquire());
    EXPECT_EQ(other.held(), 2);
    EXPECT_THROW(s.release(2), baton::NotOwner);  // holds one: nothing given back
    EXPECT_EQ(s.held(), 1);
    EXPECT_THROW(s.release(-1), baton::InvalidOption);
    s.release(0);
    std::thread([&] { s.release(); }).join();  // any thread may give a permit back
    EXPECT_THROW(s.release(), baton::NotOwner);  // double release: none held
    other.release(2);
    EXPECT_THROW(other.release(), baton::NotOwner);
    // All free again: three at once.
    EXPECT_TRUE(s.try_acquire());
    EXPECT_TRUE(s.try_acquire());
    EXPECT_TRUE(other.try_acquire());
    EXPECT_FALSE(other.try_acquire());
}  // the destructors give every permit back

TEST_P(CppModes, ModesThatCannotShareANameAreRefused) {
    auto l = locker();
    const std::string name = fresh("mixed");
    baton::Semaphore three(l, name, 3);
    baton::Semaphore four(l, name, 4);  // opening takes nothing: no conflict yet
    baton::SharedMutex m(l, name);
    three.acquire();
    try {
        four.try_acquire();
        ADD_FAILURE() << "a semaphore of 4 on a name held as one of 3";
    } catch (const baton::InvalidOption& e) {
        std::string what = e.what();
        EXPECT_NE(what.find('3'), std::string::npos) << what;
        EXPECT_NE(what.find('4'), std::string::npos) << what;
    }
    EXPECT_THROW(four.try_acquire_for(50ms), baton::InvalidOption);
    EXPECT_THROW(m.try_lock_shared(), baton::InvalidOption);
    EXPECT_THROW(m.try_lock(), baton::InvalidOption);
    three.release();
    EXPECT_TRUE(four.try_acquire());  // free again: the other size may have it
    four.release();

    const std::string read = fresh("mixed-read");
    baton::SharedMutex reader(l, read);
    baton::Semaphore on_reader(l, read, 2);
    std::shared_lock<baton::SharedMutex> r(reader);
    EXPECT_THROW(on_reader.try_acquire(), baton::InvalidOption);
    EXPECT_EQ(on_reader.held(), 0);
}

TEST_P(CppModes, BadInputIsAnErrorNeverACrash) {
    auto l = locker();
    const std::string name = fresh("bad");
    for (std::int64_t permits : {std::int64_t{0}, std::int64_t{-1}, std::int64_t{10001},
                                 std::numeric_limits<std::int64_t>::min(),
                                 std::numeric_limits<std::int64_t>::max(),
                                 std::int64_t{1} << 32}) {
        EXPECT_THROW(baton::Semaphore(l, name, permits), baton::InvalidOption) << permits;
    }
    baton::Semaphore most(l, name, 10000);
    EXPECT_EQ(most.permits(), 10000u);
    EXPECT_THROW(most.try_acquire_for(-1ms), baton::InvalidOption);
    for (const std::string& bad : {std::string(""), std::string("a\0b", 3), std::string("\xff\xfe"),
                                   std::string(1 << 20, 'x')}) {
        EXPECT_THROW(baton::Semaphore(l, bad, 2), baton::InvalidName);
        baton::SharedMutex m(l, bad);
        EXPECT_THROW(m.lock_shared(), baton::InvalidName);
        EXPECT_THROW(m.try_lock_shared(), baton::InvalidName);
        EXPECT_THROW(m.try_lock(), baton::InvalidName);
    }
    baton::SharedMutex m(l, name + "-m");
    EXPECT_THROW(m.try_lock_shared_for(-1ms), baton::InvalidOption);
    EXPECT_THROW(m.try_lock_for(-1ms), baton::InvalidOption);
}

INSTANTIATE_TEST_SUITE_P(Strategies, CppModes, ::testing::Values("bakery", "column-prefix"));

// Unique insert (the default strategy) is exclusive only: shared locks and semaphores are
// InvalidOption, saying which strategies carry them; exclusive locks still work.
TEST(CppModesUniqueInsert, SharedAndCountedAreRefused) {
    baton::Options options;
    options.wait_timeout = 300ms;
    baton::Locker l(store_url(), options);
    const std::string name = fresh("unique");
    try {
        baton::Semaphore s(l, name, 3);
        ADD_FAILURE() << "a semaphore on unique insert";
    } catch (const baton::InvalidOption& e) {
        EXPECT_NE(std::string(e.what()).find("bakery"), std::string::npos) << e.what();
    }
    baton::SharedMutex m(l, name);
    EXPECT_THROW(m.lock_shared(), baton::InvalidOption);
    EXPECT_THROW(m.try_lock_shared(), baton::InvalidOption);
    EXPECT_THROW(std::shared_lock<baton::SharedMutex>{m}, baton::InvalidOption);
    std::unique_lock<baton::SharedMutex> w(m);
    EXPECT_TRUE(w.owns_lock());
}

// Dot-separated paths (Options::paths): bakery and column prefix.
class CppPaths : public ::testing::TestWithParam<const char*> {
protected:
    baton::Locker locker(bool paths = true) {
        baton::Options options;
        EXPECT_FALSE(options.paths);  // flat names by default
        options.strategy = GetParam();
        options.wait_timeout = 300ms;
        options.ttl = 5s;
        options.paths = paths;
        return baton::Locker(store_url(), options);
    }
};

TEST_P(CppPaths, AncestorsAndDescendantsConflictSiblingsDoNot) {
    auto l = locker();
    baton::Locker other(l);
    const std::string root = fresh("app");
    {
        baton::Lock cache(l, root + ".cache");
        EXPECT_FALSE(free_now(other, root));
        baton::Lock leaf(other);
        EXPECT_FALSE(leaf.lock_for(root + ".cache.users", 50ms));
        baton::SharedMutex reader(other, root + ".cache.users");
        EXPECT_FALSE(reader.try_lock_shared());
        EXPECT_TRUE(free_now(other, root + ".db"));
        EXPECT_TRUE(free_now(other, root + "le"));          // "apple": not a descendant
        EXPECT_TRUE(free_now(other, root + "le.cache"));
    }
    EXPECT_TRUE(free_now(other, root));
    {
        baton::Lock users(l, root + ".cache.users");         // a descendant keeps ancestors out
        EXPECT_FALSE(free_now(other, root + ".cache"));
        EXPECT_FALSE(free_now(other, root));
        EXPECT_TRUE(free_now(other, root + ".cache.groups"));
    }
    {
        baton::SharedMutex top(l, root), down(other, root + ".cache.users");
        std::shared_lock<baton::SharedMutex> a(top), b(down);  // readers share the tree
        EXPECT_FALSE(free_now(other, root + ".cache"));
    }
}

TEST_P(CppPaths, InvalidPathsAreInvalidNamesAndObjectsAreRefused) {
    auto l = locker();
    for (const char* bad : {"a..b", "a.", ".a", "a|b", "a.b|c"}) {
        EXPECT_THROW(baton::Lock(l, bad), baton::InvalidName) << bad;
        baton::SharedMutex m(l, bad);
        EXPECT_THROW(m.try_lock_shared(), baton::InvalidName) << bad;
        EXPECT_THROW(l.lock_all({fresh("ok"), bad}), baton::InvalidName) << bad;
    }
    EXPECT_THROW(l.get_and_lock(fresh("quote")), baton::InvalidOption);
    // The same names are fine flat.
    auto flat = locker(false);
    baton::Lock dots(flat, fresh("a") + "..b");
    EXPECT_TRUE(dots.held());
}

TEST_P(CppPaths, LockAllRefusesAPathBesideItsAncestor) {
    auto l = locker();
    const std::string root = fresh("tree");
    EXPECT_THROW(l.lock_all({root + ".b.z", root + ".c", root + ".b"}), baton::InvalidOption);
    EXPECT_THROW(l.lock_all({root + ".c", root + ".c"}), baton::InvalidOption);
    EXPECT_TRUE(free_now(l, root));
    auto locks = l.lock_all({root + ".b.z", root + ".a"});
    ASSERT_EQ(locks.size(), 2u);
    EXPECT_EQ(locks[0].name(), root + ".a");
    EXPECT_FALSE(free_now(l, root + ".b"));                 // an ancestor of one held
    EXPECT_TRUE(free_now(l, root + ".b.y"));
}

INSTANTIATE_TEST_SUITE_P(Strategies, CppPaths, ::testing::Values("bakery", "column-prefix"));

TEST(CppPathsUniqueInsert, IsRefusedAtOpen) {
    baton::Options options;
    options.paths = true;
    EXPECT_THROW(baton::Locker(store_url(), options), baton::InvalidOption);
    options.strategy = "unique-insert";
    EXPECT_THROW(baton::Locker(store_url(), options), baton::InvalidOption);
}

}  // namespace
