/*
 * The C API against the memory store (and a store nobody listens on): locking, fencing,
 * unlocking, objects beside locks, shared locks and semaphores, dot-separated paths, several
 * locks at once (baton_lock_all), and every kind of bad input,
 * each reported with its code and never crashed on.
 */
#define _POSIX_C_SOURCE 200809L /* getpid, clock_gettime */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
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
 * frees memory) nor use its parent's locker; it opens a locker of its own, which sees the
 * parent's lock held. */
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
        baton_guard *other = NULL;
        ok = ok && baton_try_lock(locker, "child", 5, &other) == BATON_WRONG_CONTEXT && !other;
        baton_guard_free(lock);
        baton_locker_free(locker);
        baton_locker *own = NULL;
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

/* Milliseconds on the monotonic clock. */
static long long now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* The largest value the store under test takes (MariaDB's is smaller). */
static size_t store_limit(void) {
    return strncmp(store_url(), "mysql", 5) == 0 ? 48000 : 1048576;
}

/* A value with NUL and bytes that are not UTF-8: values are bytes. */
static const unsigned char ODD[] = {'1', 0, 0xff, 0xfe, '\n', 0x80, 0};

/* Seed 002's calls, each outcome checked: get, insert, a buffer too small, optimistic updates,
 * the locked calls, busy while locked, NotOwner after release, remove, insert_and_lock. */
static void objects_round_trip(const char *strategy) {
    baton_locker *locker = open_store(strategy);
    char name[96];
    snprintf(name, sizeof name, "quote-%s-%ld", strategy, (long)getpid());
    size_t n = strlen(name);
    unsigned char buf[64];
    size_t len = 99;
    uint64_t version = 99, next = 99;
    bool found = true, exists = true;

    /* No object yet. */
    CHECK_CODE(baton_get(locker, name, n, buf, sizeof buf, &len, &version, &found), BATON_OK);
    CHECK(!found && len == 0 && version == 0);
    CHECK_CODE(baton_remove(locker, name, n), BATON_OBJECT_NOT_FOUND);
    CHECK_CODE(baton_update_optimistic(locker, name, n, "x", 1, 0, &next), BATON_OBJECT_NOT_FOUND);

    /* Insert; a second insert finds it. */
    CHECK_CODE(baton_insert(locker, name, n, ODD, sizeof ODD, &version), BATON_OK);
    CHECK(version == 1);
    CHECK_CODE(baton_insert(locker, name, n, "y", 1, &version), BATON_ALREADY_EXISTS);
    CHECK(version == 0);

    /* A buffer too small: nothing copied, the length needed reported; then the value whole. */
    memset(buf, 'z', sizeof buf);
    CHECK_CODE(baton_get(locker, name, n, buf, 3, &len, &version, &found), BATON_BUFFER_TOO_SMALL);
    CHECK(len == sizeof ODD && found && version == 1 && buf[0] == 'z' && buf[2] == 'z');
    CHECK(strstr(baton_last_error(), "7 bytes") != NULL);
    CHECK(strcmp(baton_code_name(BATON_BUFFER_TOO_SMALL), "buffer_too_small") == 0);
    CHECK_CODE(baton_get(locker, name, n, NULL, 0, &len, NULL, NULL), BATON_BUFFER_TOO_SMALL);
    CHECK(len == sizeof ODD);
    CHECK_CODE(baton_get(locker, name, n, buf, len, &len, &version, &found), BATON_OK);
    CHECK(len == sizeof ODD && memcmp(buf, ODD, len) == 0 && version == 1 && found);

    /* Optimistic: the version read writes; a stale one does not. */
    CHECK_CODE(baton_update_optimistic(locker, name, n, "2", 1, version, &next), BATON_OK);
    CHECK(next == 2);
    CHECK_CODE(baton_update_optimistic(locker, name, n, "3", 1, version, &next), BATON_VERSION_MISMATCH);
    CHECK(next == 0);

    /* Locked: the object read with the lock. */
    baton_object *quote = NULL;
    CHECK_CODE(baton_get_and_lock(locker, name, n, &quote), BATON_OK);
    CHECK(baton_object_held(quote) && baton_object_token(quote) > 0);
    CHECK(baton_object_version(quote) == 2);
    CHECK_CODE(baton_object_value(quote, buf, sizeof buf, &len, &exists), BATON_OK);
    CHECK(exists && len == 1 && buf[0] == '2');
    CHECK_CODE(baton_object_value(quote, buf, 0, &len, &exists), BATON_BUFFER_TOO_SMALL);
    CHECK(len == 1 && exists);

    /* Others: reads go on, writes are busy, a lock attempt waits or fails. */
    CHECK_CODE(baton_get(locker, name, n, buf, sizeof buf, &len, &version, &found), BATON_OK);
    CHECK(found && version == 2);
    CHECK_CODE(baton_update_optimistic(locker, name, n, "3", 1, 2, &next), BATON_BUSY);
    CHECK_CODE(baton_remove(locker, name, n), BATON_BUSY);
    baton_object *second = (baton_object *)0x1; /* set to NULL on error */
    CHECK_CODE(baton_try_get_and_lock(locker, name, n, &second), BATON_BUSY);
    CHECK(second == NULL);
    CHECK_CODE(baton_get_and_lock_for(locker, name, n, 0, &second), BATON_TIMED_OUT);
    CHECK_CODE(baton_get_and_lock_for(locker, name, n, 30, &second), BATON_TIMED_OUT);
    second = (baton_object *)0x1;
    CHECK_CODE(baton_get_and_lock_for(locker, name, n, -1, &second), BATON_INVALID_OPTION);
    CHECK(second == NULL);
    CHECK_CODE(baton_get_and_lock(locker, name, n, &second), BATON_TIMED_OUT);

    /* The locked calls. */
    CHECK_CODE(baton_object_get_locked(quote), BATON_OK);
    CHECK_CODE(baton_object_update_and_retain(quote, ODD, sizeof ODD, &version), BATON_OK);
    CHECK(version == 3 && baton_object_held(quote) && baton_object_version(quote) == 3);
    CHECK_CODE(baton_object_value(quote, buf, sizeof buf, &len, NULL), BATON_OK);
    CHECK(len == sizeof ODD && memcmp(buf, ODD, len) == 0);
    CHECK_CODE(baton_object_refresh(quote), BATON_OK);
    CHECK_CODE(baton_object_insert(quote, "x", 1, &version), BATON_ALREADY_EXISTS);
    CHECK(baton_object_held(quote));
    CHECK_CODE(baton_object_update_and_release(quote, "4", 1, &version), BATON_OK);
    CHECK(version == 4 && !baton_object_held(quote));

    /* Released: every locked call is NotOwner; the value stays readable. */
    CHECK_CODE(baton_object_update_and_retain(quote, "5", 1, &version), BATON_NOT_OWNER);
    CHECK_CODE(baton_object_update_and_release(quote, "5", 1, &version), BATON_NOT_OWNER);
    CHECK_CODE(baton_object_insert(quote, "5", 1, &version), BATON_NOT_OWNER);
    CHECK_CODE(baton_object_get_locked(quote), BATON_NOT_OWNER);
    CHECK_CODE(baton_object_refresh(quote), BATON_NOT_OWNER);
    CHECK_CODE(baton_object_remove(quote), BATON_NOT_OWNER);
    CHECK_CODE(baton_object_unlock(quote), BATON_NOT_OWNER);
    CHECK_CODE(baton_object_value(quote, buf, sizeof buf, &len, &exists), BATON_OK);
    CHECK(exists && len == 1 && buf[0] == '4' && baton_object_version(quote) == 4);
    baton_object_free(quote);
    CHECK_CODE(baton_get(locker, name, n, buf, sizeof buf, &len, &version, &found), BATON_OK);
    CHECK(found && len == 1 && buf[0] == '4' && version == 4);

    /* Unlock twice: NotOwner the second time. */
    CHECK_CODE(baton_get_and_lock(locker, name, n, &quote), BATON_OK);
    CHECK_CODE(baton_object_unlock(quote), BATON_OK);
    CHECK_CODE(baton_object_unlock(quote), BATON_NOT_OWNER);
    CHECK(!baton_object_held(quote));
    baton_object_free(quote);

    /* Freeing a held object releases it. */
    CHECK_CODE(baton_get_and_lock(locker, name, n, &quote), BATON_OK);
    baton_object_free(quote);
    CHECK_CODE(baton_try_get_and_lock(locker, name, n, &quote), BATON_OK);

    /* remove_locked: removes and releases. */
    CHECK_CODE(baton_object_remove(quote), BATON_OK);
    CHECK(!baton_object_held(quote));
    CHECK_CODE(baton_object_value(quote, buf, sizeof buf, &len, &exists), BATON_OK);
    CHECK(!exists && len == 0);
    baton_object_free(quote);
    CHECK_CODE(baton_get(locker, name, n, buf, sizeof buf, &len, &version, &found), BATON_OK);
    CHECK(!found && len == 0);
    CHECK_CODE(baton_update_optimistic(locker, name, n, "6", 1, 4, &next), BATON_OBJECT_NOT_FOUND);

    /* A held name without an object: updates are ObjectNotFound, an insert makes it; the
     * removal counted as a write (versions never go back). */
    CHECK_CODE(baton_get_and_lock(locker, name, n, &quote), BATON_OK);
    CHECK_CODE(baton_object_value(quote, NULL, 0, &len, &exists), BATON_OK);
    CHECK(!exists && len == 0);
    CHECK_CODE(baton_object_update_and_retain(quote, "6", 1, &version), BATON_OBJECT_NOT_FOUND);
    CHECK_CODE(baton_object_remove(quote), BATON_OBJECT_NOT_FOUND);
    CHECK(baton_object_held(quote));
    CHECK_CODE(baton_object_insert(quote, "6", 1, &version), BATON_OK);
    CHECK(version == 6);
    CHECK_CODE(baton_object_remove(quote), BATON_OK);
    baton_object_free(quote);

    /* insert_and_lock: inserts and holds; over an object, AlreadyExists and the lock freed. */
    CHECK_CODE(baton_insert_and_lock(locker, name, n, "8", 1, &quote), BATON_OK);
    CHECK(baton_object_held(quote) && baton_object_version(quote) == 8);
    CHECK_CODE(baton_insert(locker, name, n, "9", 1, NULL), BATON_BUSY);
    baton_object_free(quote);
    second = (baton_object *)0x1;
    CHECK_CODE(baton_insert_and_lock(locker, name, n, "9", 1, &second), BATON_ALREADY_EXISTS);
    CHECK(second == NULL);
    CHECK_CODE(baton_try_get_and_lock(locker, name, n, &quote), BATON_OK);
    CHECK_CODE(baton_object_remove(quote), BATON_OK);
    baton_object_free(quote);

    /* The largest value the store takes comes back whole; one byte more is refused. */
    size_t limit = store_limit();
    unsigned char *big = malloc(limit + 1);
    unsigned char *back = malloc(limit + 1);
    CHECK(big != NULL && back != NULL);
    if (big && back) {
        for (size_t i = 0; i <= limit; i++) {
            big[i] = (unsigned char)(i * 7);
        }
        CHECK_CODE(baton_insert(locker, name, n, big, limit + 1, NULL), BATON_INVALID_OPTION);
        CHECK_CODE(baton_insert(locker, name, n, big, limit, &version), BATON_OK);
        CHECK_CODE(baton_get(locker, name, n, back, limit + 1, &len, &version, &found), BATON_OK);
        CHECK(found && len == limit && memcmp(big, back, limit) == 0);
        CHECK_CODE(baton_remove(locker, name, n), BATON_OK);
    }
    free(big);
    free(back);
    baton_locker_free(locker);
}

/* Empty, huge, NUL-bearing and non-UTF-8 names; empty, NULL and huge values; NULL handles and
 * out-parameters: each a typed error, nothing sent or written. */
static void objects_refuse_bad_input(void) {
    baton_locker *locker = open_store(NULL);
    char name[64];
    snprintf(name, sizeof name, "bad-%ld", (long)getpid());
    size_t n = strlen(name);
    unsigned char buf[8];
    size_t len = 0;
    uint64_t version = 0;
    bool found = false;
    baton_object *object = NULL;

    size_t huge = ((size_t)1 << 20) + 1;
    char *big = malloc(huge);
    CHECK(big != NULL);
    if (!big) {
        baton_locker_free(locker);
        return;
    }
    memset(big, 'x', huge);
    struct {
        const char *name;
        size_t len;
    } names[] = {{NULL, 3}, {"", 0}, {"a\0b", 3}, {"\xff\xfe", 2}, {big, huge}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const char *bad = names[i].name;
        size_t bad_len = names[i].len;
        CHECK_CODE(baton_get(locker, bad, bad_len, buf, sizeof buf, &len, &version, &found), BATON_INVALID_NAME);
        CHECK_CODE(baton_insert(locker, bad, bad_len, "v", 1, &version), BATON_INVALID_NAME);
        CHECK_CODE(baton_update_optimistic(locker, bad, bad_len, "v", 1, 1, &version), BATON_INVALID_NAME);
        CHECK_CODE(baton_remove(locker, bad, bad_len), BATON_INVALID_NAME);
        CHECK_CODE(baton_get_and_lock(locker, bad, bad_len, &object), BATON_INVALID_NAME);
        CHECK_CODE(baton_try_get_and_lock(locker, bad, bad_len, &object), BATON_INVALID_NAME);
        CHECK_CODE(baton_get_and_lock_for(locker, bad, bad_len, 10, &object), BATON_INVALID_NAME);
        CHECK_CODE(baton_insert_and_lock(locker, bad, bad_len, "v", 1, &object), BATON_INVALID_NAME);
        CHECK(object == NULL);
    }

    /* Values: empty (NULL or not), NULL with a length, larger than any store takes. */
    struct {
        const void *value;
        size_t len;
    } values[] = {{NULL, 0}, {"", 0}, {NULL, 5}, {big, huge}};
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
        const void *v = values[i].value;
        size_t v_len = values[i].len;
        CHECK_CODE(baton_insert(locker, name, n, v, v_len, &version), BATON_INVALID_OPTION);
        CHECK_CODE(baton_update_optimistic(locker, name, n, v, v_len, 1, &version), BATON_INVALID_OPTION);
        CHECK_CODE(baton_insert_and_lock(locker, name, n, v, v_len, &object), BATON_INVALID_OPTION);
        CHECK(object == NULL);
    }
    CHECK_CODE(baton_insert(locker, name, n, "v", (size_t)-1, &version), BATON_INVALID_OPTION);
    CHECK_CODE(baton_get(locker, name, n, buf, sizeof buf, &len, &version, &found), BATON_OK);
    CHECK(!found); /* nothing was written */
    CHECK_CODE(baton_get_and_lock(locker, name, n, &object), BATON_OK);
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
        const void *v = values[i].value;
        size_t v_len = values[i].len;
        CHECK_CODE(baton_object_insert(object, v, v_len, &version), BATON_INVALID_OPTION);
        CHECK_CODE(baton_object_update_and_retain(object, v, v_len, &version), BATON_INVALID_OPTION);
        CHECK_CODE(baton_object_update_and_release(object, v, v_len, &version), BATON_INVALID_OPTION);
    }
    CHECK(baton_object_held(object)); /* a refused write leaves the lock held */
    /* Out-parameters: value_len is needed, a NULL buffer only with a length of 0. */
    CHECK_CODE(baton_object_value(object, buf, sizeof buf, NULL, NULL), BATON_INVALID_OPTION);
    CHECK_CODE(baton_object_value(object, NULL, 4, &len, NULL), BATON_INVALID_OPTION);
    baton_object_free(object);
    free(big);

    CHECK_CODE(baton_get(locker, name, n, buf, sizeof buf, NULL, &version, &found), BATON_INVALID_OPTION);
    CHECK_CODE(baton_get(locker, name, n, NULL, 4, &len, &version, &found), BATON_INVALID_OPTION);
    CHECK_CODE(baton_get_and_lock(locker, name, n, NULL), BATON_INVALID_OPTION);
    CHECK_CODE(baton_insert_and_lock(locker, name, n, "v", 1, NULL), BATON_INVALID_OPTION);
    CHECK_CODE(baton_get_and_lock_for(locker, name, n, -5, &object), BATON_INVALID_OPTION);
    /* NULL handles. */
    CHECK_CODE(baton_get(NULL, name, n, buf, sizeof buf, &len, &version, &found), BATON_INVALID_OPTION);
    CHECK_CODE(baton_insert(NULL, name, n, "v", 1, &version), BATON_INVALID_OPTION);
    CHECK_CODE(baton_update_optimistic(NULL, name, n, "v", 1, 1, &version), BATON_INVALID_OPTION);
    CHECK_CODE(baton_remove(NULL, name, n), BATON_INVALID_OPTION);
    CHECK_CODE(baton_get_and_lock(NULL, name, n, &object), BATON_INVALID_OPTION);
    CHECK_CODE(baton_insert_and_lock(NULL, name, n, "v", 1, &object), BATON_INVALID_OPTION);
    CHECK_CODE(baton_object_value(NULL, buf, sizeof buf, &len, NULL), BATON_INVALID_OPTION);
    CHECK_CODE(baton_object_get_locked(NULL), BATON_INVALID_OPTION);
    CHECK_CODE(baton_object_update_and_retain(NULL, "v", 1, &version), BATON_INVALID_OPTION);
    CHECK_CODE(baton_object_update_and_release(NULL, "v", 1, &version), BATON_INVALID_OPTION);
    CHECK_CODE(baton_object_insert(NULL, "v", 1, &version), BATON_INVALID_OPTION);
    CHECK_CODE(baton_object_remove(NULL), BATON_INVALID_OPTION);
    CHECK_CODE(baton_object_refresh(NULL), BATON_INVALID_OPTION);
    CHECK_CODE(baton_object_unlock(NULL), BATON_INVALID_OPTION);
    CHECK(baton_object_version(NULL) == 0 && baton_object_token(NULL) == 0);
    CHECK(!baton_object_held(NULL));
    baton_object_free(NULL);

    /* Every kind's name, the three of objects among them. */
    CHECK(strcmp(baton_code_name(BATON_VERSION_MISMATCH), "version_mismatch") == 0);
    CHECK(strcmp(baton_code_name(BATON_OBJECT_NOT_FOUND), "object_not_found") == 0);
    CHECK(strcmp(baton_code_name(BATON_ALREADY_EXISTS), "already_exists") == 0);
    CHECK(BATON_VERSION_MISMATCH == 15 && BATON_OBJECT_NOT_FOUND == 16 && BATON_ALREADY_EXISTS == 17);
    baton_locker_free(locker);
}

/* Objects on a store nobody listens on: StoreUnavailable, within the store's timeout (250 ms, three
 * attempts) for the unlocked calls, within the wait (1 s) for the locking ones. A write in one
 * step (unique insert's insert and optimistic update) may instead be Ambiguous, where the
 * kernel cannot rule out that a send reached the store: a typed error either way. */
static void objects_on_a_dead_store_are_unavailable(void) {
    baton_options options;
    baton_options_init(&options);
    options.wait_timeout_ms = 1000;
    baton_locker *locker = NULL;
    CHECK_CODE(baton_locker_open("postgres://baton@127.0.0.1:9/baton?timeout=250ms", &options, &locker),
               BATON_OK);
    unsigned char buf[8];
    size_t len = 0;
    baton_object *object = (baton_object *)0x1;
    long long started = now_ms();
    CHECK_CODE(baton_get(locker, "x", 1, buf, sizeof buf, &len, NULL, NULL), BATON_STORE_UNAVAILABLE);
    CHECK(now_ms() - started < 2000);
    started = now_ms();
    CHECK_CODE(baton_remove(locker, "x", 1), BATON_STORE_UNAVAILABLE);
    CHECK(now_ms() - started < 2000);
    started = now_ms();
    baton_code code = baton_insert(locker, "x", 1, "v", 1, NULL);
    CHECK(code == BATON_STORE_UNAVAILABLE || code == BATON_AMBIGUOUS);
    code = baton_update_optimistic(locker, "x", 1, "v", 1, 1, NULL);
    CHECK(code == BATON_STORE_UNAVAILABLE || code == BATON_AMBIGUOUS);
    CHECK(now_ms() - started < 4000);
    started = now_ms();
    CHECK_CODE(baton_get_and_lock(locker, "x", 1, &object), BATON_STORE_UNAVAILABLE);
    CHECK(now_ms() - started < 2000);
    CHECK(object == NULL);
    started = now_ms();
    CHECK_CODE(baton_insert_and_lock(locker, "x", 1, "v", 1, &object), BATON_STORE_UNAVAILABLE);
    CHECK(now_ms() - started < 2000);
    CHECK(object == NULL);
    baton_locker_free(locker);
}

/* After fork(), the child cannot write through its parent's object, nor release it (freeing
 * it there only frees memory). */
static void a_forked_child_leaves_the_parents_object_alone(void) {
    char url[128];
    snprintf(url, sizeof url, "sqlite:///tmp/baton-c-fork-object-%ld.db", (long)getpid());
    baton_locker *locker = NULL;
    CHECK_CODE(baton_locker_open(url, NULL, &locker), BATON_OK);
    baton_object *object = NULL;
    CHECK_CODE(baton_insert_and_lock(locker, "forked", 6, "1", 1, &object), BATON_OK);
    fflush(NULL);
    pid_t child = fork();
    if (child == 0) {
        uint64_t version = 0;
        int ok = baton_object_update_and_retain(object, "2", 1, &version) == BATON_NOT_OWNER;
        ok = ok && baton_object_unlock(object) == BATON_NOT_OWNER;
        baton_object_free(object);
        baton_locker_free(locker);
        _exit(ok ? 0 : 1);
    }
    CHECK(child > 0);
    int status = -1;
    CHECK(waitpid(child, &status, 0) == child);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    uint64_t version = 0;
    CHECK_CODE(baton_object_update_and_release(object, "3", 1, &version), BATON_OK);
    CHECK(version == 2);
    baton_object_free(object);
    baton_locker_free(locker);
    const char *suffixes[] = {"", "-wal", "-shm"};
    for (size_t i = 0; i < 3; i++) {
        char path[160];
        snprintf(path, sizeof path, "/tmp/baton-c-fork-object-%ld.db%s", (long)getpid(), suffixes[i]);
        remove(path);
    }
}

/* Shared locks and semaphores (bakery and column prefix carry them): readers together, a writer
 * alone, a semaphore's permits, and the modes that cannot share a name. */
static void shared_locks_and_semaphores(const char *strategy) {
    baton_locker *locker = open_store(strategy);
    baton_locker *other = NULL;
    CHECK_CODE(baton_locker_clone(locker, &other), BATON_OK);
    char name[80];
    snprintf(name, sizeof name, "catalog-%s-%ld", strategy, (long)getpid());
    size_t len = strlen(name);

    baton_guard *r1 = NULL, *r2 = NULL, *r3 = NULL, *w = (baton_guard *)0x1;
    CHECK_CODE(baton_lock_shared(locker, name, len, &r1), BATON_OK);
    CHECK_CODE(baton_try_lock_shared(other, name, len, &r2), BATON_OK);  /* two readers */
    CHECK(baton_guard_held(r1) && baton_guard_held(r2));
    baton_mode mode = BATON_MODE_EXCLUSIVE;
    uint32_t permits = 0;
    CHECK_CODE(baton_guard_mode(r1, &mode, &permits), BATON_OK);
    CHECK(mode == BATON_MODE_SHARED && permits == 1);
    CHECK_CODE(baton_try_lock(other, name, len, &w), BATON_BUSY);  /* a writer waits for both */
    CHECK(w == NULL);
    CHECK_CODE(baton_lock_for(other, name, len, 50, &w), BATON_TIMED_OUT);
    /* The writer gave up: readers are admitted again. */
    CHECK_CODE(baton_lock_shared_for(other, name, len, 1000, &r3), BATON_OK);
    CHECK_CODE(baton_unlock(r1), BATON_OK);
    CHECK_CODE(baton_unlock(r1), BATON_NOT_OWNER);  /* double unlock */
    baton_guard_free(r1);
    baton_guard_free(r2);
    CHECK_CODE(baton_try_lock(other, name, len, &w), BATON_BUSY);  /* r3 still reads */
    baton_guard_free(r3);

    CHECK_CODE(baton_lock(other, name, len, &w), BATON_OK);  /* the writer, alone */
    CHECK_CODE(baton_guard_mode(w, &mode, NULL), BATON_OK);
    CHECK(mode == BATON_MODE_EXCLUSIVE);
    CHECK_CODE(baton_try_lock_shared(locker, name, len, &r1), BATON_BUSY);
    CHECK(r1 == NULL);
    CHECK_CODE(baton_lock_shared_for(locker, name, len, 50, &r1), BATON_TIMED_OUT);
    baton_guard_free(w);

    /* A semaphore of 3 admits 3; a fourth try is busy; a release gives a permit back. */
    char slots[80];
    snprintf(slots, sizeof slots, "encoders-%s-%ld", strategy, (long)getpid());
    size_t slots_len = strlen(slots);
    baton_semaphore *sem = NULL, *same = NULL, *four = NULL;
    CHECK_CODE(baton_semaphore_open(locker, slots, slots_len, 3, &sem), BATON_OK);
    CHECK_CODE(baton_semaphore_open(other, slots, slots_len, 3, &same), BATON_OK);
    CHECK(baton_semaphore_permits(sem) == 3);
    baton_guard *p[4] = {NULL, NULL, NULL, (baton_guard *)0x1};
    CHECK_CODE(baton_semaphore_acquire(sem, &p[0]), BATON_OK);
    CHECK_CODE(baton_semaphore_try_acquire(same, &p[1]), BATON_OK);
    CHECK_CODE(baton_semaphore_acquire_for(sem, 1000, &p[2]), BATON_OK);
    CHECK_CODE(baton_guard_mode(p[2], &mode, &permits), BATON_OK);
    CHECK(mode == BATON_MODE_COUNTED && permits == 3);
    CHECK(baton_guard_token(p[0]) > 0);
    CHECK_CODE(baton_semaphore_try_acquire(same, &p[3]), BATON_BUSY);
    CHECK(p[3] == NULL);
    CHECK_CODE(baton_semaphore_acquire_for(sem, 50, &p[3]), BATON_TIMED_OUT);
    CHECK_CODE(baton_unlock(p[1]), BATON_OK);  /* a permit back */
    CHECK_CODE(baton_unlock(p[1]), BATON_NOT_OWNER);  /* double release */
    baton_guard_free(p[1]);
    CHECK_CODE(baton_semaphore_try_acquire(sem, &p[1]), BATON_OK);

    /* One name, two sizes; a semaphore's name as a shared or exclusive lock, and back. */
    CHECK_CODE(baton_semaphore_open(other, slots, slots_len, 4, &four), BATON_OK);
    CHECK_CODE(baton_semaphore_try_acquire(four, &p[3]), BATON_INVALID_OPTION);
    CHECK(strstr(baton_last_error(), "3") != NULL && strstr(baton_last_error(), "4") != NULL);
    CHECK(p[3] == NULL);
    CHECK_CODE(baton_try_lock_shared(other, slots, slots_len, &r1), BATON_INVALID_OPTION);
    CHECK_CODE(baton_lock_shared_for(other, slots, slots_len, 50, &r1), BATON_INVALID_OPTION);
    CHECK_CODE(baton_try_lock(other, slots, slots_len, &w), BATON_INVALID_OPTION);
    CHECK(r1 == NULL && w == NULL);
    CHECK_CODE(baton_lock_shared(locker, name, len, &r1), BATON_OK);
    baton_semaphore *on_reader = NULL;
    CHECK_CODE(baton_semaphore_open(other, name, len, 2, &on_reader), BATON_OK);
    CHECK_CODE(baton_semaphore_try_acquire(on_reader, &p[3]), BATON_INVALID_OPTION);
    CHECK(p[3] == NULL);
    baton_guard_free(r1);

    for (int i = 0; i < 3; i++) {
        baton_guard_free(p[i]);
    }
    /* Every permit back: the other size may have the name now. */
    CHECK_CODE(baton_semaphore_try_acquire(four, &p[3]), BATON_OK);
    baton_guard_free(p[3]);
    baton_semaphore_free(on_reader);
    baton_semaphore_free(four);
    baton_semaphore_free(same);
    baton_semaphore_free(sem);
    baton_locker_free(other);
    baton_locker_free(locker);
}

static void modes_refuse_bad_input(void) {
    baton_locker *locker = open_store("bakery");
    baton_semaphore *sem = (baton_semaphore *)0x1;
    baton_guard *lock = (baton_guard *)0x1;
    const char *n = "slots";
    /* Permits from 1 to 10000. */
    CHECK_CODE(baton_semaphore_open(locker, n, 5, 0, &sem), BATON_INVALID_OPTION);
    CHECK(sem == NULL);
    CHECK_CODE(baton_semaphore_open(locker, n, 5, -1, &sem), BATON_INVALID_OPTION);
    CHECK_CODE(baton_semaphore_open(locker, n, 5, 10001, &sem), BATON_INVALID_OPTION);
    CHECK(strstr(baton_last_error(), "10001") != NULL);
    CHECK_CODE(baton_semaphore_open(locker, n, 5, INT64_MIN, &sem), BATON_INVALID_OPTION);
    CHECK_CODE(baton_semaphore_open(locker, n, 5, INT64_MAX, &sem), BATON_INVALID_OPTION);
    CHECK_CODE(baton_semaphore_open(locker, n, 5, (int64_t)UINT32_MAX + 3, &sem),
               BATON_INVALID_OPTION);
    CHECK_CODE(baton_semaphore_open(locker, n, 5, 10000, &sem), BATON_OK);
    CHECK(baton_semaphore_permits(sem) == 10000);
    CHECK_CODE(baton_semaphore_acquire_for(sem, -1, &lock), BATON_INVALID_OPTION);
    CHECK(lock == NULL);
    CHECK_CODE(baton_semaphore_acquire(sem, NULL), BATON_INVALID_OPTION);
    baton_semaphore_free(sem);

    /* Names: as every lock name. */
    CHECK_CODE(baton_semaphore_open(locker, NULL, 3, 2, &sem), BATON_INVALID_NAME);
    CHECK_CODE(baton_semaphore_open(locker, "", 0, 2, &sem), BATON_INVALID_NAME);
    CHECK_CODE(baton_semaphore_open(locker, "a\0b", 3, 2, &sem), BATON_INVALID_NAME);
    CHECK_CODE(baton_semaphore_open(locker, "\xff\xfe", 2, 2, &sem), BATON_INVALID_NAME);
    CHECK_CODE(baton_lock_shared(locker, NULL, 3, &lock), BATON_INVALID_NAME);
    CHECK_CODE(baton_lock_shared(locker, "", 0, &lock), BATON_INVALID_NAME);
    CHECK_CODE(baton_try_lock_shared(locker, "a\0b", 3, &lock), BATON_INVALID_NAME);
    CHECK_CODE(baton_lock_shared_for(locker, "\xff\xfe", 2, 10, &lock), BATON_INVALID_NAME);
    size_t huge = 1 << 20;
    char *big = malloc(huge);
    CHECK(big != NULL);
    if (big) {
        memset(big, 'x', huge);
        CHECK_CODE(baton_semaphore_open(locker, big, huge, 2, &sem), BATON_INVALID_NAME);
        CHECK_CODE(baton_lock_shared(locker, big, huge, &lock), BATON_INVALID_NAME);
        free(big);
    }
    CHECK(sem == NULL && lock == NULL);

    /* NULL handles and out-parameters, negative waits. */
    CHECK_CODE(baton_semaphore_open(NULL, n, 5, 2, &sem), BATON_INVALID_OPTION);
    CHECK_CODE(baton_semaphore_open(locker, n, 5, 2, NULL), BATON_INVALID_OPTION);
    CHECK_CODE(baton_semaphore_acquire(NULL, &lock), BATON_INVALID_OPTION);
    CHECK_CODE(baton_semaphore_try_acquire(NULL, &lock), BATON_INVALID_OPTION);
    CHECK_CODE(baton_semaphore_acquire_for(NULL, 10, &lock), BATON_INVALID_OPTION);
    CHECK_CODE(baton_lock_shared(NULL, n, 5, &lock), BATON_INVALID_OPTION);
    CHECK_CODE(baton_try_lock_shared(locker, n, 5, NULL), BATON_INVALID_OPTION);
    CHECK_CODE(baton_lock_shared_for(locker, n, 5, -1, &lock), BATON_INVALID_OPTION);
    CHECK(baton_semaphore_permits(NULL) == 0);
    baton_semaphore_free(NULL);
    baton_mode mode;
    CHECK_CODE(baton_guard_mode(NULL, &mode, NULL), BATON_INVALID_OPTION);
    CHECK_CODE(baton_lock_shared(locker, n, 5, &lock), BATON_OK);
    CHECK_CODE(baton_guard_mode(lock, NULL, NULL), BATON_INVALID_OPTION);
    baton_guard_free(lock);
    baton_locker_free(locker);

    /* Unique insert (the default) is exclusive only: it says to use bakery or column-prefix. */
    locker = open_store(NULL);
    CHECK_CODE(baton_lock_shared(locker, n, 5, &lock), BATON_INVALID_OPTION);
    CHECK(strstr(baton_last_error(), "bakery") != NULL);
    CHECK_CODE(baton_try_lock_shared(locker, n, 5, &lock), BATON_INVALID_OPTION);
    CHECK_CODE(baton_lock_shared_for(locker, n, 5, 10, &lock), BATON_INVALID_OPTION);
    CHECK_CODE(baton_semaphore_open(locker, n, 5, 3, &sem), BATON_INVALID_OPTION);
    CHECK(strstr(baton_last_error(), "bakery") != NULL);
    CHECK(sem == NULL && lock == NULL);
    baton_locker_free(locker);
}

static baton_locker *open_paths(const char *strategy) {
    baton_options options;
    baton_options_init(&options);
    CHECK(!options.paths);  /* flat names by default */
    options.wait_timeout_ms = 200;
    options.strategy = strategy;
    options.paths = true;
    baton_locker *locker = NULL;
    CHECK_CODE(baton_locker_open(store_url(), &options, &locker), BATON_OK);
    CHECK(locker != NULL);
    return locker;
}

/* The name of `lock` equals `want`. */
static int named(const baton_guard *lock, const char *want) {
    const char *name = NULL;
    size_t len = 0;
    if (baton_guard_name(lock, &name, &len) != BATON_OK) {
        return 0;
    }
    return len == strlen(want) && memcmp(name, want, len) == 0;
}

/* Whether `name` can be taken now, on `locker` (taken and given back). */
static int free_now(const baton_locker *locker, const char *name) {
    baton_guard *lock = NULL;
    baton_code code = baton_try_lock(locker, name, strlen(name), &lock);
    baton_guard_free(lock);
    return code == BATON_OK;
}

static void paths_conflict_along_the_tree(const char *strategy) {
    baton_locker *locker = open_paths(strategy);
    baton_locker *other = NULL;
    CHECK_CODE(baton_locker_clone(locker, &other), BATON_OK);
    char root[64], mid[96], leaf[128], sibling[96], prefixed[96];
    snprintf(root, sizeof root, "app%s%ld", strategy, (long)getpid());
    snprintf(mid, sizeof mid, "%s.cache", root);
    snprintf(leaf, sizeof leaf, "%s.cache.users", root);
    snprintf(sibling, sizeof sibling, "%s.db", root);
    snprintf(prefixed, sizeof prefixed, "%sle.cache", root);  /* "apple": no ancestor */

    baton_guard *cache = NULL, *lock = (baton_guard *)0x1;
    CHECK_CODE(baton_lock(locker, mid, strlen(mid), &cache), BATON_OK);
    CHECK(named(cache, mid));
    /* The ancestor and the descendant wait for it; a sibling and a longer root do not. */
    CHECK_CODE(baton_try_lock(other, root, strlen(root), &lock), BATON_BUSY);
    CHECK(lock == NULL);
    CHECK_CODE(baton_lock_for(other, leaf, strlen(leaf), 50, &lock), BATON_TIMED_OUT);
    CHECK_CODE(baton_try_lock_shared(other, leaf, strlen(leaf), &lock), BATON_BUSY);
    CHECK(free_now(other, sibling));
    CHECK(free_now(other, prefixed));
    baton_guard_free(cache);
    CHECK(free_now(other, root));

    /* The other way: a descendant held keeps its ancestors out; readers share the tree. */
    baton_guard *users = NULL, *r1 = NULL, *r2 = NULL;
    CHECK_CODE(baton_lock(locker, leaf, strlen(leaf), &users), BATON_OK);
    CHECK_CODE(baton_try_lock_shared(other, mid, strlen(mid), &lock), BATON_BUSY);
    CHECK(!free_now(other, root));
    CHECK(free_now(other, sibling));
    baton_guard_free(users);
    CHECK_CODE(baton_lock_shared(locker, root, strlen(root), &r1), BATON_OK);
    CHECK_CODE(baton_lock_shared(other, leaf, strlen(leaf), &r2), BATON_OK);
    CHECK(!free_now(other, mid));
    baton_guard_free(r1);
    baton_guard_free(r2);

    /* Invalid paths are invalid names. */
    const char *bad[] = {"a..b", "a.", ".a", "a|b", "a.b|c"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        lock = (baton_guard *)0x1;
        CHECK_CODE(baton_lock(locker, bad[i], strlen(bad[i]), &lock), BATON_INVALID_NAME);
        CHECK(lock == NULL);
        CHECK_CODE(baton_lock_shared_for(locker, bad[i], strlen(bad[i]), 10, &lock),
                   BATON_INVALID_NAME);
    }
    /* Objects are not for paths lockers. */
    baton_object *object = (baton_object *)0x1;
    CHECK_CODE(baton_get_and_lock(locker, root, strlen(root), &object), BATON_INVALID_OPTION);
    CHECK(object == NULL);
    baton_locker_free(other);
    baton_locker_free(locker);
}

static void lock_all_takes_all_or_nothing(const char *strategy, int paths) {
    baton_locker *locker = paths ? open_paths(strategy) : open_store(strategy);
    baton_locker *other = NULL;
    CHECK_CODE(baton_locker_clone(locker, &other), BATON_OK);
    char root[64], b[96], ax[96], c[96], bz[96];
    snprintf(root, sizeof root, "all%s%d%ld", strategy, paths, (long)getpid());
    snprintf(b, sizeof b, "%s.b", root);
    snprintf(ax, sizeof ax, "%s.a.x", root);
    snprintf(c, sizeof c, "%s.c", root);
    snprintf(bz, sizeof bz, "%s.b.z", root);

    /* Taken in one order whatever the order given; NUL-terminated names (lengths NULL). */
    const char *names[] = {c, b, ax};
    baton_guard *out[3] = {NULL, NULL, NULL};
    CHECK_CODE(baton_lock_all(locker, names, NULL, 3, 1000, out), BATON_OK);
    CHECK(named(out[0], ax) && named(out[1], b) && named(out[2], c));
    for (int i = 0; i < 3; i++) {
        CHECK(baton_guard_held(out[i]));
        CHECK(!free_now(other, names[i]));
    }
    if (paths) {
        CHECK(!free_now(other, root));  /* an ancestor of each */
        CHECK(!free_now(other, bz));
    }
    CHECK_CODE(baton_unlock(out[1]), BATON_OK);  /* each an ordinary guard */
    CHECK_CODE(baton_unlock(out[1]), BATON_NOT_OWNER);
    CHECK(free_now(other, b));
    for (int i = 0; i < 3; i++) {
        baton_guard_free(out[i]);
    }
    CHECK(free_now(other, ax) && free_now(other, c));

    /* One of them held elsewhere: a short wait times out and nothing stays held. */
    baton_guard *held = NULL;
    CHECK_CODE(baton_lock(other, c, strlen(c), &held), BATON_OK);
    size_t lens[] = {strlen(c), strlen(b), strlen(ax)};
    out[0] = out[1] = out[2] = (baton_guard *)0x1;
    CHECK_CODE(baton_lock_all(locker, names, lens, 3, 60, out), BATON_TIMED_OUT);
    CHECK(out[0] == NULL && out[1] == NULL && out[2] == NULL);
    CHECK(free_now(other, ax) && free_now(other, b));
    CHECK_CODE(baton_lock_all(locker, names, lens, 3, 0, out), BATON_TIMED_OUT);
    CHECK(free_now(other, ax) && free_now(other, b));
    baton_guard_free(held);

    /* Readers together (unique insert has no shared locks). */
    if (strcmp(strategy, "unique-insert") != 0) {
        baton_guard *r[3] = {NULL, NULL, NULL}, *s[3] = {NULL, NULL, NULL};
        CHECK_CODE(baton_lock_all_shared(locker, names, lens, 3, 1000, r), BATON_OK);
        CHECK_CODE(baton_lock_all_shared(other, names, lens, 3, 1000, s), BATON_OK);
        baton_mode mode = BATON_MODE_EXCLUSIVE;
        CHECK_CODE(baton_guard_mode(s[2], &mode, NULL), BATON_OK);
        CHECK(mode == BATON_MODE_SHARED && named(s[2], c));
        CHECK(!free_now(other, b));
        for (int i = 0; i < 3; i++) {
            baton_guard_free(r[i]);
            baton_guard_free(s[i]);
        }
    }

    /* A name twice; with paths, a path beside its ancestor. */
    const char *twice[] = {b, c, b};
    CHECK_CODE(baton_lock_all(locker, twice, NULL, 3, 100, out), BATON_INVALID_OPTION);
    CHECK(out[0] == NULL && out[1] == NULL && out[2] == NULL);
    const char *related[] = {bz, c, b};
    CHECK_CODE(baton_lock_all(locker, related, NULL, 3, 100, out),
               paths ? BATON_INVALID_OPTION : BATON_OK);
    for (int i = 0; i < 3; i++) {
        baton_guard_free(out[i]);
    }
    CHECK(free_now(other, b) && free_now(other, bz) && free_now(other, c));
    baton_locker_free(other);
    baton_locker_free(locker);
}

static void lock_all_refuses_bad_input(int paths) {
    baton_locker *locker = paths ? open_paths("bakery") : open_store("bakery");
    char good[64];
    snprintf(good, sizeof good, "bad%d%ld", paths, (long)getpid());
    baton_guard *out[3];
    const char *names[3] = {good, "x", "y"};
    size_t lens[3] = {strlen(good), 1, 1};

    /* No names. */
    out[0] = (baton_guard *)0x1;
    CHECK_CODE(baton_lock_all(locker, names, lens, 0, 100, out), BATON_INVALID_OPTION);
    CHECK_CODE(baton_lock_all(locker, NULL, NULL, 0, 100, out), BATON_INVALID_OPTION);
    CHECK(out[0] == (baton_guard *)0x1);  /* an array of 0: nothing written */

    /* A NUL inside, not UTF-8, over 255 bytes, empty, NULL: each an invalid name, the good
     * name (first in the order) left free. */
    char huge[300];
    memset(huge, 'h', sizeof huge);
    const char *bad[] = {"a\0b", "\xff\xfe", huge, "", NULL};
    size_t bad_lens[] = {3, 2, sizeof huge, 0, 1};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        names[1] = bad[i];
        lens[1] = bad_lens[i];
        out[0] = out[1] = (baton_guard *)0x1;
        CHECK_CODE(baton_lock_all(locker, names, lens, 2, 100, out), BATON_INVALID_NAME);
        CHECK(out[0] == NULL && out[1] == NULL);
        CHECK(free_now(locker, good));
    }
    names[1] = NULL;
    CHECK_CODE(baton_lock_all(locker, names, NULL, 2, 100, out), BATON_INVALID_NAME);
    names[1] = "\xff\xfe";
    CHECK_CODE(baton_lock_all_shared(locker, names, NULL, 2, 100, out), BATON_INVALID_NAME);
    names[1] = "x";

    /* NULL handles and arrays, a negative wait, a count no array has. */
    CHECK_CODE(baton_lock_all(NULL, names, lens, 2, 100, out), BATON_INVALID_OPTION);
    CHECK(out[0] == NULL && out[1] == NULL);
    CHECK_CODE(baton_lock_all(locker, NULL, lens, 2, 100, out), BATON_INVALID_OPTION);
    CHECK_CODE(baton_lock_all(locker, names, lens, 2, 100, NULL), BATON_INVALID_OPTION);
    CHECK_CODE(baton_lock_all(locker, names, lens, 2, -1, out), BATON_INVALID_OPTION);
    CHECK_CODE(baton_lock_all(locker, names, lens, SIZE_MAX, 100, out), BATON_INVALID_OPTION);
    CHECK(free_now(locker, good));
    const char *name = NULL;
    size_t len = 0;
    CHECK_CODE(baton_guard_name(NULL, &name, &len), BATON_INVALID_OPTION);
    CHECK_CODE(baton_lock(locker, good, strlen(good), &out[0]), BATON_OK);
    CHECK_CODE(baton_guard_name(out[0], NULL, &len), BATON_INVALID_OPTION);
    CHECK_CODE(baton_guard_name(out[0], &name, NULL), BATON_INVALID_OPTION);
    baton_guard_free(out[0]);
    baton_locker_free(locker);

    /* Shared needs bakery or column prefix, as one shared lock does. */
    if (!paths) {
        locker = open_store(NULL);
        CHECK_CODE(baton_lock_all_shared(locker, names, lens, 2, 100, out), BATON_INVALID_OPTION);
        CHECK(strstr(baton_last_error(), "bakery") != NULL);
        baton_locker_free(locker);
    }
}

static void unique_insert_refuses_paths(void) {
    baton_options options;
    baton_options_init(&options);
    options.paths = true;
    baton_locker *locker = (baton_locker *)0x1;
    CHECK_CODE(baton_locker_open(store_url(), &options, &locker), BATON_INVALID_OPTION);
    CHECK(locker == NULL);
    options.strategy = "unique-insert";
    CHECK_CODE(baton_locker_open(store_url(), &options, &locker), BATON_INVALID_OPTION);
    CHECK(locker == NULL);
}

int main(void) {
    const char *strategies[] = {"unique-insert", "bakery", "column-prefix"};
    for (size_t i = 0; i < sizeof strategies / sizeof strategies[0]; i++) {
        locks_exclude_and_fence(strategies[i]);
        objects_round_trip(strategies[i]);
    }
    shared_locks_and_semaphores("bakery");
    shared_locks_and_semaphores("column-prefix");
    modes_refuse_bad_input();
    paths_conflict_along_the_tree("bakery");
    paths_conflict_along_the_tree("column-prefix");
    lock_all_takes_all_or_nothing("unique-insert", 0);
    lock_all_takes_all_or_nothing("bakery", 0);
    lock_all_takes_all_or_nothing("bakery", 1);
    lock_all_takes_all_or_nothing("column-prefix", 1);
    lock_all_refuses_bad_input(0);
    lock_all_refuses_bad_input(1);
    unique_insert_refuses_paths();
    bad_names_are_refused();
    bad_arguments_are_refused();
    objects_refuse_bad_input();
    if (strcmp(store_url(), "memory:") == 0) {  /* once, not per store */
        a_dead_store_is_unavailable();
        objects_on_a_dead_store_are_unavailable();
        a_forked_child_leaves_the_parents_lock_alone();
        a_forked_child_leaves_the_parents_object_alone();
    }
    if (failures) {
        fprintf(stderr, "%d check(s) failed\n", failures);
        return 1;
    }
    printf("c_api: all checks passed\n");
    return 0;
}
