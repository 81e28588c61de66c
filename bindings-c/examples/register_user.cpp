// QCassandraLock's registration example (libQtCassandra's documentation of QCassandraLock),
// ported to baton with only the names changed: the lock is taken before the user name is
// checked and written, and the destructor releases it on every path, exceptions included.
//
//   register_user_cpp [STORE_URL] [USER]    (default: sqlite:///tmp/baton-example.db snap)
#include <baton.hpp>

#include <chrono>
#include <iostream>
#include <set>
#include <stdexcept>
#include <string>

namespace {

// Stands for the users table of the original example.
std::set<std::string> users;

void register_user(const baton::Locker& context, const std::string& username,
                   const std::string& email) {
    //... ready to create the new user in the database ...
    {
        baton::Lock lock(context, "users::" + username);
        if (users.count(username) != 0) {
            // problem
            throw std::runtime_error("sorry, a user with that name exists");
            // Note: the lock destructor takes care of unlocking
        }
        users.insert(username);  // users->row(username)->cell("email")->setValue(email);
        std::cout << "registered " << username << " <" << email << "> under fencing token "
                  << lock.token() << "\n";
        // Note: the lock destructor takes care of unlocking
    }
}

}  // namespace

int main(int argc, char** argv) {
    const std::string url = argc > 1 ? argv[1] : "sqlite:///tmp/baton-example.db";
    const std::string user = argc > 2 ? argv[2] : "snap";
    try {
        baton::Options options;
        options.strategy = "bakery";            // QCassandraLock's algorithm
        options.consistency = "quorum";         // CONSISTENCY_LEVEL_QUORUM (Cassandra)
        options.table = "libQtCassandraLockTable";  // QCassandraContext::setLockTableName()
        options.wait_timeout = std::chrono::seconds(5);  // QCassandraContext::setLockTimeout()
        options.ttl = std::chrono::seconds(60);          // QCassandraContext::setLockTtl()
        baton::Locker context(url, options);
        register_user(context, user, user + "@example.com");
        register_user(context, user, user + "@example.com");  // the name is taken now
    } catch (const baton::Error& e) {
        std::cerr << "baton: " << e.what() << " (" << baton::kind_name(e.kind()) << ")\n";
        return 1;
    } catch (const std::runtime_error& e) {
        std::cout << e.what() << "\n";
        return 0;
    }
    std::cerr << "the second registration should have been refused\n";
    return 1;
}
