/*
 * async_epoll.c - a server on a plain epoll loop that takes a per-key lock
 * for every request, with thousands of waits outstanding from one thread.
 *
 *   zklock_example_async_epoll HOSTS [PATH] [REQUESTS] [KEYS]
 *
 * REQUESTS (default 2000) requests arrive at once, spread over KEYS (default
 * 20) keys; each needs the lock PATH/key-N before it may touch that key's
 * record. The client delivers completions through its event descriptor
 * (zkl_client_event_fd), which the loop watches beside its own; the loop
 * thread runs every callback (zkl_client_dispatch). A granted request holds
 * its key for one turn of the loop, then releases. Exits 0 when every
 * request was served and no key ever had two of them inside.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#include <zklock/zklock.h>

#define MAX_KEYS 256

typedef struct request {
    int key;
    zkl_op *op;
    struct request *next; /* granted, to release next turn */
} request;

static zkl_mutex *keys[MAX_KEYS];
static int inside[MAX_KEYS];
static int served, failed, violations;
static request *to_release;

/* A completion, on the loop's thread: the key is ours (or the wait failed). */
static void granted(zkl_op *op, zkl_status st, const char *msg, void *ud)
{
    request *r = ud;
    if (st != ZKL_OK) {
        fprintf(stderr, "async_epoll: request for key %d: %s\n", r->key, msg);
        failed++;
        zkl_op_release(op);
        return;
    }
    if (++inside[r->key] > 1)
        violations++;
    r->next = to_release; /* the work spans a turn of the loop */
    to_release = r;
}

static void release_done(void)
{
    while (to_release) {
        request *r = to_release;
        to_release = r->next;
        inside[r->key]--;
        if (zkl_op_release(r->op) != ZKL_OK)
            fprintf(stderr, "async_epoll: release: %s\n", zkl_errmsg());
        served++;
    }
}

static int count_threads(void)
{
    char line[256];
    int n = -1;
    FILE *f = fopen("/proc/self/status", "r");
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "Threads:", 8) == 0)
            n = atoi(line + 8);
    if (f)
        fclose(f);
    return n;
}

int main(int argc, char **argv)
{
    const char *path = argc > 2 ? argv[2] : "/zklock-examples/async-epoll";
    int nreq = argc > 3 ? atoi(argv[3]) : 2000, nkeys = argc > 4 ? atoi(argv[4]) : 20;
    zkl_client *c;
    request *reqs;
    int ep, fd, i, threads;
    struct epoll_event ev = {.events = EPOLLIN};
    if (argc < 2 || nreq < 1 || nkeys < 1 || nkeys > MAX_KEYS) {
        fprintf(stderr, "usage: %s HOSTS [PATH] [REQUESTS] [KEYS<=%d]\n", argv[0], MAX_KEYS);
        return 2;
    }
    if (zkl_client_open(argv[1], NULL, &c) != ZKL_OK || zkl_client_event_fd(c, &fd) != ZKL_OK) {
        fprintf(stderr, "async_epoll: %s\n", zkl_errmsg());
        return 1;
    }
    for (i = 0; i < nkeys; i++) {
        char p[512];
        snprintf(p, sizeof p, "%s/key-%d", path, i);
        if (zkl_mutex_create(c, p, &keys[i]) != ZKL_OK) {
            fprintf(stderr, "async_epoll: %s\n", zkl_errmsg());
            return 1;
        }
    }
    ep = epoll_create1(EPOLL_CLOEXEC);
    ev.data.fd = fd;
    epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
    threads = count_threads();
    /* every request arrives at once: nreq waits outstanding from this thread */
    reqs = calloc((size_t)nreq, sizeof *reqs);
    for (i = 0; reqs && i < nreq; i++) {
        reqs[i].key = i % nkeys;
        if (zkl_mutex_acquire_async(keys[reqs[i].key], 60000, granted, &reqs[i], &reqs[i].op) !=
            ZKL_OK) {
            fprintf(stderr, "async_epoll: acquire: %s\n", zkl_errmsg());
            failed++;
        }
    }
    if (count_threads() != threads) {
        fprintf(stderr, "async_epoll: %d threads for %d waits (%d before)\n", count_threads(), nreq,
                threads);
        failed++;
    }
    while (reqs && served + failed < nreq) {
        struct epoll_event got;
        int n = epoll_wait(ep, &got, 1, to_release ? 0 : 1000);
        release_done(); /* last turn's grants are done with their keys */
        if (n > 0 && zkl_client_dispatch(c, NULL) != ZKL_OK)
            break;
    }
    for (i = 0; i < nkeys; i++)
        zkl_mutex_destroy(keys[i]);
    zkl_client_close(c);
    free(reqs);
    printf("async_epoll: %d requests on %d keys from one thread (%d threads in all): %d served, "
           "%d failed, %d exclusion violations\n",
           nreq, nkeys, threads, served, failed, violations);
    return served == nreq && violations == 0 ? 0 : 1;
}
