/*
 * demo.c - several processes contend on one lock; each holder prints its
 * fencing token, which grows with every hand-off. Run by scripts/demo.
 *
 *   zklock_demo HOSTS PATH ROUNDS [LOG]
 *
 * With LOG, each holder also appends its line to that file while it still
 * holds the lock, so the file is in hold order.
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
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
    int logfd = -1;
    if (argc != 4 && argc != 5) {
        fprintf(stderr, "usage: %s HOSTS PATH ROUNDS [LOG]\n", argv[0]);
        return 2;
    }
    rounds = atoi(argv[3]);
    if (argc == 5 && (logfd = open(argv[4], O_WRONLY | O_APPEND | O_CREAT, 0644)) < 0) {
        perror(argv[4]);
        return 1;
    }
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
        char line[256];
        zkl_mutex_fencing_token(m, &token);
        snprintf(line, sizeof line, "pid %d holds %s, fencing token %lld\n", (int)getpid(), argv[2],
                 (long long)token);
        fputs(line, stdout);
        fflush(stdout);
        if (logfd >= 0 && write(logfd, line, strlen(line)) < 0)
            perror("log");
        nanosleep(&hold, NULL); /* the protected work */
        zkl_mutex_release(m);
    }
    zkl_mutex_destroy(m);
    zkl_client_close(c);
    if (logfd >= 0)
        close(logfd);
    return st == ZKL_OK ? 0 : 1;
}
