/*
 * fencing.c - why a lock needs fencing tokens, with zkl_mutex.
 *
 *   zklock_example_fencing HOSTS [PATH]
 *
 * Worker threads, each with its own ZooKeeper session as separate processes
 * would have, take turns doing a read-modify-write on a shared resource under
 * one mutex. A lock alone cannot stop a holder that stalls (a GC pause, a
 * stopped VM, a swapped-out process) for longer than its session timeout:
 * ZooKeeper ends the session, the next in line gets the lock, and the stalled
 * holder wakes up still believing it holds it. So every write carries the
 * writer's fencing token (the creation zxid of its lock node, larger for each
 * later holder) and the resource itself refuses a token lower than the
 * highest it has seen. Exits 0 if no proper write was refused, no update was
 * lost, and a stale token was refused.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include <zklock/zklock.h>

#define WORKERS 4
#define ROUNDS 5

/* Stands for a storage service. It checks tokens because it cannot see locks. */
struct resource {
    pthread_mutex_t mu;
    int64_t highest; /* highest token accepted so far */
    long value;
    int refused;
};

static struct resource res = {PTHREAD_MUTEX_INITIALIZER, 0, 0, 0};
static const char *hosts, *path = "/zklock-examples/fencing";

/* Store value if token is not stale; equal tokens are one holder writing again. */
static bool resource_write(int64_t token, long value)
{
    bool ok;
    pthread_mutex_lock(&res.mu);
    ok = token >= res.highest;
    if (ok) {
        res.highest = token;
        res.value = value;
    } else {
        res.refused++;
    }
    pthread_mutex_unlock(&res.mu);
    return ok;
}

static long resource_read(void)
{
    long v;
    pthread_mutex_lock(&res.mu);
    v = res.value;
    pthread_mutex_unlock(&res.mu);
    return v;
}

static void *worker(void *arg)
{
    zkl_client *c = NULL;
    zkl_mutex *m = NULL;
    const char *what = "open";
    (void)arg;
    if (zkl_client_open(hosts, NULL, &c) != ZKL_OK || zkl_mutex_create(c, path, &m) != ZKL_OK)
        goto fail;
    for (int i = 0; i < ROUNDS; i++) {
        struct timespec work = {0, 2 * 1000000L};
        int64_t token, left;
        what = "acquire";
        if (zkl_mutex_acquire(m, ZKL_WAIT_FOREVER) != ZKL_OK)
            goto fail;
        what = "fencing token";
        if (zkl_mutex_fencing_token(m, &token) != ZKL_OK) {
            zkl_mutex_release(m);
            goto fail;
        }
        /* Without the lock, two workers could read the same value here. */
        long v = resource_read();
        nanosleep(&work, NULL);
        /* Just before the side effect: is there time left on the lease? (The
         * token still guards a write that outlives it on its way.) */
        what = "lease";
        if (zkl_mutex_lease_remaining(m, &left) != ZKL_OK || left < 100) {
            zkl_mutex_release(m);
            goto fail;
        }
        if (!resource_write(token, v + 1))
            fprintf(stderr, "fencing: write with token %lld refused\n", (long long)token);
        what = "release";
        if (zkl_mutex_release(m) != ZKL_OK)
            goto fail;
    }
    zkl_mutex_destroy(m);
    zkl_client_close(c);
    return NULL;
fail:
    fprintf(stderr, "fencing: %s: %s\n", what, zkl_errmsg());
    if (m)
        zkl_mutex_destroy(m);
    if (c)
        zkl_client_close(c);
    return (void *)1;
}

int main(int argc, char **argv)
{
    zkl_client *c;
    zkl_mutex *m;
    pthread_t t[WORKERS];
    int64_t stale;
    int failed = 0;
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: %s HOSTS [PATH]\n", argv[0]);
        return 2;
    }
    hosts = argv[1];
    if (argc == 3)
        path = argv[2];

    /* The holder that will stall: it takes the lock first and writes. */
    if (zkl_client_open(hosts, NULL, &c) != ZKL_OK || zkl_mutex_create(c, path, &m) != ZKL_OK ||
        zkl_mutex_acquire(m, ZKL_WAIT_FOREVER) != ZKL_OK ||
        zkl_mutex_fencing_token(m, &stale) != ZKL_OK) {
        fprintf(stderr, "fencing: %s\n", zkl_errmsg());
        return 1;
    }
    resource_write(stale, 0);
    /*
     * Now it stalls past its session timeout, and the lock passes on while it
     * still thinks it holds the lock. Releasing stands in for that here: the
     * workers get the lock next, as they would after the session expired.
     */
    if (zkl_mutex_release(m) != ZKL_OK) {
        fprintf(stderr, "fencing: release: %s\n", zkl_errmsg());
        return 1;
    }

    for (int i = 0; i < WORKERS; i++)
        pthread_create(&t[i], NULL, worker, NULL);
    for (int i = 0; i < WORKERS; i++) {
        void *r;
        pthread_join(t[i], &r);
        failed |= r != NULL;
    }
    if (res.refused != 0 || res.value != WORKERS * ROUNDS) {
        fprintf(stderr, "fencing: %d proper writes refused, value %ld (want %d)\n", res.refused,
                res.value, WORKERS * ROUNDS);
        failed = 1;
    }

    /* The stalled holder wakes up and writes with its old token. */
    if (resource_write(stale, -1)) {
        fprintf(stderr, "fencing: stale token %lld was accepted\n", (long long)stale);
        failed = 1;
    } else {
        printf("fencing: %d writes accepted up to token %lld; stale token %lld refused\n",
               WORKERS * ROUNDS, (long long)res.highest, (long long)stale);
    }
    zkl_mutex_destroy(m);
    zkl_client_close(c);
    return failed;
}
