/*
 * The C side of the interoperation test with the `baton` command:
 *   hold_c URL NAME try     one attempt: exit 0 if acquired (and unlocked), 75 if busy
 *   hold_c URL NAME FILE    lock, create FILE, hold until FILE is removed (or 60 s), unlock
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <baton.h>

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: hold_c URL NAME try|FILE\n");
        return 64;
    }
    baton_locker *locker = NULL;
    baton_guard *lock = NULL;
    baton_code code = baton_locker_open(argv[1], NULL, &locker);
    if (code == BATON_OK) {
        code = strcmp(argv[3], "try") == 0 ? baton_try_lock(locker, argv[2], strlen(argv[2]), &lock)
                                           : baton_lock(locker, argv[2], strlen(argv[2]), &lock);
    }
    if (code == BATON_BUSY) {
        baton_locker_free(locker);
        return 75;
    }
    if (code != BATON_OK) {
        fprintf(stderr, "hold_c: %s\n", baton_last_error());
        baton_locker_free(locker);
        return 1;
    }
    if (strcmp(argv[3], "try") != 0) {
        FILE *f = fopen(argv[3], "w");
        if (f) {
            fprintf(f, "%llu\n", (unsigned long long)baton_guard_token(lock));
            fclose(f);
        }
        struct timespec tick = {0, 10 * 1000 * 1000};
        for (int i = 0; i < 6000 && access(argv[3], F_OK) == 0; i++) {
            nanosleep(&tick, NULL); /* polling a file */
        }
    }
    code = baton_unlock(lock);
    baton_guard_free(lock);
    baton_locker_free(locker);
    return code == BATON_OK ? 0 : 1;
}
