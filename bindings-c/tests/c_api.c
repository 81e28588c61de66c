/*
 * The C API against the memory store (and a store nobody listens on): locking, fencing,
 * unlocking, and every kind of bad input, each reported with its code and never crashed on.
 */
#define _POSIX_C_SOURCE 200809L /* getpid */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <baton.h>

static int failures = 0;

#define CHECK(cond)                                                              \
    do {                                                                         \
        if (!(cond)) {                                                           \
            fprintf(stderr, "%s:%d: CHECK failed: %s (last error: %s)\n",        \
                    __FILE__, __LINE__, #cond, baton_last_error());              \
            failures++;                                                          \
        }                                                                        \
    } while (0)

#define CHECK_CODE(expr, want)                                                   \
    do {                                                                         \
        baton_code got_ = (expr);                                                \
        if (got_ != (want)) {                                                    \
            fprintf(stderr, "%s:%d: %s gave %s, wanted %s (last error: %s)\n",   \
                    __FILE__, __LINE__, #expr, baton_code_name(got_),            \
                    baton_code_name(want), baton_last_error());                  \
            failures++;                                                          \
        }                                                                        \
    } while (0)

/* The store under test: BATON_TEST_URL, or the memory store. */
static const char *store_url(void) {
    const char *url = getenv("BATON_TEST_URL");
    return url && *url ? url : "memory:";
}

static baton_locker *open_store(const char *strategy) {
    baton_options options;
    baton_options_init(&options);
    options.wait_timeout_ms = 200;
    options.strategy = strategy;
    baton_locker *locker = NULL;
    CHECK_CODE(baton_locker_open(store_url(), &options, &locker), BATON_OK);
    CHECK(locker != NULL);
    return locker;
}

static void locks_exclude_and_fence(const char *strategy) {
    baton_locker *locker = open_store(strategy);
    baton_locker *other = NULL;
    CHECK_CODE(baton_locker_clone(locker, &other), BATON_OK);
    char name[64];
    snprintf(name, sizeof name, "users::snap-%s-%ld", strategy, (long)getpid());

    baton_guard *first = NULL;
    CHECK_CODE(baton_lock(locker, name, strlen(name), &first), BATON_OK);
    CHECK(baton_guard_held(first));
    CHECK(baton_guard_remaining_ms(first) > 0);
    CHECK_CODE(baton_guard_check(first), BATON_OK);
    uint64_t token = baton_guard_token(first);

    baton_guard *second = (baton_guard *)0x1;  /* set to NULL on error */
    CHECK_CODE(baton_try_lock(other, name, strlen(name), &second), BATON_BUSY);
    CHECK(second == NULL);
    CHECK(strstr(baton_last_error(), "users::snap") != NULL);
    CHECK_CODE(baton_lock_for(other, name, strlen(name), 50, &second), BATON_TIMED_OUT);

    CHECK_CODE(baton_unlock(first), BATON_OK);
    CHECK(!baton_guard_held(first));
    CHECK_CODE(baton_unlock(first), BATON_NOT_OWNER);  /* double unlock */
    CHECK_CODE(baton_guard_check(first), BATON_NOT_OWNER);
    bool ended = false;
    CHECK_CODE(baton_guard_wait_lost(first, 0, &ended), BATON_OK);
    CHECK(ended);
    baton_guard_free(first);

    CHECK_CODE(baton_lock(other, name, strlen(name), &second), BATON_OK);
    CHECK(baton_guard_token(second) > token);
    baton_guard_free(second);  /* unlocks */
    CHECK_CODE(baton_try_lock(locker, name, strlen(name), &first), BATON_OK);
    baton_guard_free(first);

    baton_locker_free(other);
    baton_locker_free(locker);
}

static void bad_names_are_refused(void) {
    baton_locker *locker = open_store(NULL);
    baton_guard *lock = NULL;
    CHECK_CODE(baton_lock(locker, NULL, 3, &lock), BATON_INVALID_NAME);
    CHECK_CODE(baton_lock(locker, "", 0, &lock), BATON_INVALID_NAME);
    CHECK_CODE(baton_lock(locker, "a\0b", 3, &lock), BATON_INVALID_NAME);
    CHECK_CODE(baton_lock(locker, "\xff\xfe", 2, &lock), BATON_INVALID_NAME);
    size_t huge = 1 << 20;
    char *big = malloc(huge);
    CHECK(big != NULL);
    if (big) {
        memset(big, 'x', huge);
        CHECK_CODE(baton_lock(locker, big, huge, &lock), BATON_INVALID_NAME);
        free(big);
    }
    CHECK(lock == NULL);
    baton_locker_free(locker);
}

static void bad_arguments_are_refused(void) {
    baton_locker *locker = NULL;
    baton_guard *lock = NULL;
    CHECK_CODE(baton_locker_open(NULL, NULL, &locker), BATON_INVALID_OPTION);
    CHECK_CODE(baton_locker_open("memory:", NULL, NULL), BATON_INVALID_OPTION);
    CHECK_CODE(baton_locker_open("nosuch://x", NULL, &locker), BATON_INVALID_OPTION);
    CHECK(locker == NULL);

    baton_options options;
    baton_options_init(&options);
    options.ttl_ms = 0;
    CHECK_CODE(baton_locker_open("memory:", &options, &locker), BATON_INVALID_OPTION);
    options.ttl_ms = -5;
    CHECK_CODE(baton_locker_open("memory:", &options, &locker), BATON_INVALID_OPTION);
    baton_options_init(&options);
    options.wait_timeout_ms = -1;
    CHECK_CODE(baton_locker_open("memory:", &options, &locker), BATON_INVALID_OPTION);
    baton_options_init(&options);
    options.strategy = "queue";
    CHECK_CODE(baton_locker_open("memory:", &options, &locker), BATON_INVALID_OPTION);
    options.strategy = "\xff";
    CHECK_CODE(baton_locker_open("memory:", &options, &locker), BATON_INVALID_OPTION);
    baton_options_init(&options);
    options.consistency = "most";
    CHECK_CODE(baton_locker_open("memory:", &options, &locker), BATON_INVALID_OPTION);

    CHECK_CODE(baton_lock(NULL, "x", 1, &lock), BATON_INVALID_OPTION);
    locker = open_store(NULL);
    CHECK_CODE(baton_lock(locker, "x", 1, NULL), BATON_INVALID_OPTION);
    CHECK_CODE(baton_lock_for(locker, "x", 1, -1, &lock), BATON_INVALID_OPTION);
    CHECK_CODE(baton_unlock(NULL), BATON_INVALID_OPTION);
    CHECK_CODE(baton_guard_check(NULL), BATON_INVALID_OPTION);
    CHECK_CODE(baton_guard_on_lost(NULL, NULL, NULL), BATON_INVALID_OPTION);
    CHECK(baton_guard_token(NULL) == 0);
    CHECK(!baton_guard_held(NULL));
    CHECK(baton_guard_remaining_ms(NULL) == 0);
    baton_guard_free(NULL);
    baton_locker_free(NULL);
    baton_options_init(NULL);
    baton_locker_free(locker);

    CHECK(strcmp(baton_code_name(BATON_OK), "ok") == 0);
    CHECK(strcmp(baton_code_name(BATON_TIMED_OUT), "timed_out") == 0);
    CHECK(strcmp(baton_code_name(999), "unknown") == 0);
    baton_clear_error();
    CHECK(strcmp(baton_last_error(), "") == 0);
}

static void a_dead_store_is_unavailable(void) {
    baton_options options;
    baton_options_init(&options);
    options.wait_timeout_ms = 0;
    baton_locker *locker = NULL;
    /* Port 9 (discard) on loopback: nothing listens. */
    CHECK_CODE(baton_locker_open("postgres://baton@127.0.0.1:9/baton?timeout=1s", &options, &locker),
               BATON_OK);
    baton_guard *lock = NULL;
    CHECK_CODE(baton_lock(locker, "x", 1, &lock), BATON_STORE_UNAVAILABLE);
    CHECK(lock == NULL);
    baton_locker_free(locker);
}

/* After fork(), the child cannot unlock its parent's lock (and freeing the handle there only
 * frees memory); it opens a locker of its own, which sees the parent's lock held. */
static void a_forked_child_leaves_the_parents_lock_alone(void) {
    char url[128];
    snprintf(url, sizeof url, "sqlite:///tmp/baton-c-fork-%ld.db", (long)getpid());
    baton_locker *locker = NULL;
    CHECK_CODE(baton_locker_open(url, NULL, &locker), BATON_OK);
    baton_guard *lock = NULL;
    CHECK_CODE(baton_lock(locker, "forked", 6, &lock), BATON_OK);
    fflush(NULL);
    pid_t child = fork();
    if (child == 0) {
        int ok = baton_unlock(lock) == BATON_NOT_OWNER;
        baton_guard_free(lock);
        baton_locker_free(locker);
        baton_locker *own = NULL;
        baton_guard *other = NULL;
        ok = ok && baton_locker_open(url, NULL, &own) == BATON_OK;
        ok = ok && baton_try_lock(own, "forked", 6, &other) == BATON_BUSY;
        ok = ok && baton_try_lock(own, "child", 5, &other) == BATON_OK;
        ok = ok && baton_unlock(other) == BATON_OK;
        baton_guard_free(other);
        baton_locker_free(own);
        _exit(ok ? 0 : 1);
    }
    CHECK(child > 0);
    int status = -1;
    CHECK(waitpid(child, &status, 0) == child);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK_CODE(baton_guard_check(lock), BATON_OK);
    CHECK_CODE(baton_unlock(lock), BATON_OK);
    baton_guard_free(lock);
    baton_locker_free(locker);
    char path[128];
    snprintf(path, sizeof path, "/tmp/baton-c-fork-%ld.db", (long)getpid());
    remove(path);
    strcat(path, "-wal");
    remove(path);
    path[strlen(path) - 4] = 0;
    strcat(path, "-shm");
    remove(path);
}

int main(void) {
    const char *strategies[] = {"unique-insert", "bakery", "column-prefix"};
    for (size_t i = 0; i < sizeof strategies / sizeof strategies[0]; i++) {
        locks_exclude_and_fence(strategies[i]);
    }
    bad_names_are_refused();
    bad_arguments_are_refused();
    if (strcmp(store_url(), "memory:") == 0) {  /* once, not per store */
        a_dead_store_is_unavailable();
        a_forked_child_leaves_the_parents_lock_alone();
    }
    if (failures) {
        fprintf(stderr, "%d check(s) failed\n", failures);
        return 1;
    }
    printf("c_api: all checks passed\n");
    return 0;
}
