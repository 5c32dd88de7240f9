/*
 * lock.c - zklock's part of a link shape: a client, and a mutex taken and
 * given back in rounds, each hold logged for the exclusion check
 * (tests/support/excl_log.h) that test_links.sh runs over two processes.
 */
#include <fcntl.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>
#include <zklock/zklock.h>

#include "excl_log.h"
#include "links.h"

static zkl_client *client;
static zkl_mutex *mutex;

int links_lock_open(const char *hosts, const char *path)
{
    if (zkl_client_open(hosts, NULL, &client) != ZKL_OK ||
        zkl_mutex_create(client, path, &mutex) != ZKL_OK) {
        fprintf(stderr, "links: zklock: %s\n", zkl_errmsg());
        return -1;
    }
    return 0;
}

int links_lock_rounds(const char *log, const char *who, int rounds)
{
    int fd = open(log, O_WRONLY | O_APPEND | O_CREAT, 0644), rc = 0; /* (both processes') */
    if (fd < 0) {
        perror(log);
        return -1;
    }
    for (int i = 0; i < rounds; i++) {
        int64_t token = 0;
        if (zkl_mutex_acquire(mutex, 30000) != ZKL_OK ||
            zkl_mutex_fencing_token(mutex, &token) != ZKL_OK) {
            fprintf(stderr, "links: zklock: %s\n", zkl_errmsg());
            rc = -1;
            break;
        }
        excl_log(fd, 'M', "enter", who, token);
        struct timespec ts = {0, 20 * 1000000L};
        nanosleep(&ts, NULL);
        excl_log(fd, 'M', "exit", who, token);
        if (zkl_mutex_release(mutex) != ZKL_OK) {
            fprintf(stderr, "links: zklock: %s\n", zkl_errmsg());
            rc = -1;
            break;
        }
    }
    close(fd);
    return rc;
}

void links_lock_close(void)
{
    if (mutex)
        zkl_mutex_destroy(mutex);
    if (client)
        zkl_client_close(client);
    mutex = NULL;
    client = NULL;
}
