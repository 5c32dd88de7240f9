/*
 * async_libuv.c - the per-key lock server of async_epoll.c on libuv: the
 * client's event descriptor is a uv_poll_t of the loop, and every callback
 * runs on the loop's thread.
 *
 *   zklock_example_async_libuv HOSTS [PATH] [REQUESTS] [KEYS]
 *
 * REQUESTS (default 2000) requests over KEYS (default 20) keys arrive at
 * once; each takes the lock PATH/key-N, holds it until the loop's check
 * phase of that turn, and releases. Exits 0 when every request was served
 * and no key ever had two of them inside.
 */
#include <stdio.h>
#include <stdlib.h>
#include <uv.h>

#include <zklock/zklock.h>

#define MAX_KEYS 256

typedef struct request {
    int key;
    zkl_op *op;
    struct request *next;
} request;

static zkl_client *client;
static zkl_mutex *keys[MAX_KEYS];
static int inside[MAX_KEYS];
static int nreq, served, failed, violations;
static request *to_release;
static uv_poll_t poller;
static uv_check_t checker;

static void granted(zkl_op *op, zkl_status st, const char *msg, void *ud)
{
    request *r = ud;
    if (st != ZKL_OK) {
        fprintf(stderr, "async_libuv: request for key %d: %s\n", r->key, msg);
        failed++;
        zkl_op_release(op);
        return;
    }
    if (++inside[r->key] > 1)
        violations++;
    r->next = to_release;
    to_release = r;
}

/* The descriptor is readable: run the ready completions here. */
static void on_ready(uv_poll_t *h, int status, int events)
{
    (void)h;
    (void)events;
    if (status < 0 || zkl_client_dispatch(client, NULL) != ZKL_OK)
        uv_stop(uv_default_loop());
}

/* After this turn's callbacks: the granted requests are done with their keys. */
static void on_check(uv_check_t *h)
{
    (void)h;
    while (to_release) {
        request *r = to_release;
        to_release = r->next;
        inside[r->key]--;
        zkl_op_release(r->op);
        served++;
    }
    if (served + failed >= nreq) {
        uv_poll_stop(&poller);
        uv_check_stop(&checker);
    }
}

int main(int argc, char **argv)
{
    const char *path = argc > 2 ? argv[2] : "/zklock-examples/async-libuv";
    int nkeys = argc > 4 ? atoi(argv[4]) : 20, fd, i;
    uv_loop_t *loop = uv_default_loop();
    request *reqs;
    nreq = argc > 3 ? atoi(argv[3]) : 2000;
    if (argc < 2 || nreq < 1 || nkeys < 1 || nkeys > MAX_KEYS) {
        fprintf(stderr, "usage: %s HOSTS [PATH] [REQUESTS] [KEYS<=%d]\n", argv[0], MAX_KEYS);
        return 2;
    }
    if (zkl_client_open(argv[1], NULL, &client) != ZKL_OK ||
        zkl_client_event_fd(client, &fd) != ZKL_OK) {
        fprintf(stderr, "async_libuv: %s\n", zkl_errmsg());
        return 1;
    }
    for (i = 0; i < nkeys; i++) {
        char p[512];
        snprintf(p, sizeof p, "%s/key-%d", path, i);
        if (zkl_mutex_create(client, p, &keys[i]) != ZKL_OK) {
            fprintf(stderr, "async_libuv: %s\n", zkl_errmsg());
            return 1;
        }
    }
    uv_poll_init(loop, &poller, fd);
    uv_poll_start(&poller, UV_READABLE, on_ready);
    uv_check_init(loop, &checker);
    uv_check_start(&checker, on_check);
    reqs = calloc((size_t)nreq, sizeof *reqs);
    for (i = 0; reqs && i < nreq; i++) {
        reqs[i].key = i % nkeys;
        if (zkl_mutex_acquire_async(keys[reqs[i].key], 60000, granted, &reqs[i], &reqs[i].op) !=
            ZKL_OK) {
            fprintf(stderr, "async_libuv: acquire: %s\n", zkl_errmsg());
            failed++;
        }
    }
    uv_run(loop, UV_RUN_DEFAULT);
    uv_close((uv_handle_t *)&poller, NULL);
    uv_close((uv_handle_t *)&checker, NULL);
    uv_run(loop, UV_RUN_DEFAULT);
    uv_loop_close(loop);
    for (i = 0; i < nkeys; i++)
        zkl_mutex_destroy(keys[i]);
    zkl_client_close(client);
    free(reqs);
    printf("async_libuv: %d requests on %d keys from the loop's thread: %d served, %d failed, "
           "%d exclusion violations\n",
           nreq, nkeys, served, failed, violations);
    return served == nreq && violations == 0 ? 0 : 1;
}
