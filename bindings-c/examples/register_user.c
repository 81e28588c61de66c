/*
 * Registering a unique user name under a lock, in C: the lock is taken before the name is
 * checked and written, and released after.
 *
 *   register_user [STORE_URL] [USER]     (default: sqlite:///tmp/baton-example.db snap)
 */
#include <stdio.h>
#include <string.h>

#include <baton.h>

static int fail(const char *what, baton_code code) {
    fprintf(stderr, "%s: %s (%s)\n", what, baton_last_error(), baton_code_name(code));
    return 1;
}

int main(int argc, char **argv) {
    const char *url = argc > 1 ? argv[1] : "sqlite:///tmp/baton-example.db";
    const char *user = argc > 2 ? argv[2] : "snap";

    baton_options options;
    baton_options_init(&options);
    options.ttl_ms = 10000;          /* the lease, renewed in the background while held */
    options.wait_timeout_ms = 5000;  /* how long baton_lock waits for another holder */

    baton_locker *locker = NULL;
    baton_code code = baton_locker_open(url, &options, &locker);
    if (code != BATON_OK) {
        return fail("opening the store", code);
    }

    char name[300];
    int len = snprintf(name, sizeof name, "users::%s", user);
    baton_guard *lock = NULL;
    code = baton_lock(locker, name, (size_t)len, &lock);
    if (code != BATON_OK) {
        baton_locker_free(locker);
        return fail("locking", code);
    }
    printf("locked %s with fencing token %llu\n", name,
           (unsigned long long)baton_guard_token(lock));

    /* ... check that the user does not exist yet, then create it ... */

    code = baton_unlock(lock);  /* BATON_OK: the critical section was protected throughout */
    baton_guard_free(lock);
    baton_locker_free(locker);
    if (code != BATON_OK) {
        return fail("unlocking", code);
    }
    printf("unlocked %s\n", name);
    return 0;
}
