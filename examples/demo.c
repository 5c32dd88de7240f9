/*
 * demo.c - several processes contend on one lock; each holder prints its
 * fencing token, which grows with every hand-off. Run by scripts/demo.
 *
 *   zklock_demo HOSTS PATH ROUNDS
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "zklock/zklock.h"

int main(int argc, char **argv)
{
    zkl_client *c;
    zkl_mutex *m;
    zkl_status st;
    int rounds, i;
    if (argc != 4) {
        fprintf(stderr, "usage: %s HOSTS PATH ROUNDS\n", argv[0]);
        return 2;
    }
    rounds = atoi(argv[3]);
    st = zkl_client_open(argv[1], NULL, &c);
    if (st != ZKL_OK) {
        fprintf(stderr, "demo: %s\n", zkl_errmsg());
        return 1;
    }
    st = zkl_mutex_create(c, argv[2], &m);
    if (st != ZKL_OK) {
        fprintf(stderr, "demo: %s\n", zkl_errmsg());
        zkl_client_close(c);
        return 1;
    }
    for (i = 0; i < rounds; i++) {
        int64_t token;
        struct timespec hold = {0, 50 * 1000000L};
        st = zkl_mutex_acquire(m, ZKL_WAIT_FOREVER);
        if (st != ZKL_OK) {
            fprintf(stderr, "demo: acquire: %s\n", zkl_errmsg());
            break;
        }
        zkl_mutex_fencing_token(m, &token);
        printf("pid %d holds %s, fencing token %lld\n", (int)getpid(), argv[2], (long long)token);
        fflush(stdout);
        nanosleep(&hold, NULL); /* the protected work */
        zkl_mutex_release(m);
    }
    zkl_mutex_destroy(m);
    zkl_client_close(c);
    return st == ZKL_OK ? 0 : 1;
}
