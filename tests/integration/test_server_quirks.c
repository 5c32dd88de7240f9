/*
 * test_server_quirks.c - a server set up unlike the shared one, as loaded and
 * locked-down production servers are (tests/CMakeLists.txt starts it):
 *  - it throttles (at most one request in process, and a request that waited
 *    over 1 ms is answered ZTHROTTLEDOP, not applied): zklock retries those
 *    as it retries a connection loss, so locks are still got and released;
 *  - it does not let clients read its settings (no `conf` four-letter word):
 *    the lease then assumes a standalone server and says so once.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "zkt.h"

static void ok(zkl_status st, const char *what)
{
    cr_assert_eq(st, ZKL_OK, "%s: %s (%s)", what, zkl_strerror(st), zkl_errmsg());
}

/* Load from a raw handle: bursts of reads that keep the server's one slot busy. */
typedef struct flood {
    zhandle_t *zh;
    atomic_int inflight, throttled, stop;
} flood;

static void flood_done(int rc, const struct Stat *stat, const void *data)
{
    flood *f = (flood *)data;
    (void)stat;
    if (rc == ZTHROTTLEDOP)
        atomic_fetch_add(&f->throttled, 1);
    atomic_fetch_sub(&f->inflight, 1);
}

static void *flood_run(void *arg)
{
    flood *f = arg;
    while (!atomic_load(&f->stop)) {
        while (atomic_load(&f->inflight) < 256) {
            atomic_fetch_add(&f->inflight, 1);
            if (zoo_aexists(f->zh, "/", 0, flood_done, f) != ZOK)
                atomic_fetch_sub(&f->inflight, 1);
        }
        zkt_sleep_ms(30); /* a pause between bursts, where a retry gets through */
    }
    while (atomic_load(&f->inflight) > 0)
        zkt_sleep_ms(10);
    return NULL;
}

Test(quirks, a_throttling_server_is_retried_through, .timeout = 240)
{
    zkl_client_options o;
    zkl_client *c;
    zkl_mutex *m;
    zhandle_t *zh = zkt_raw();
    char *path = zkt_path("throttled");
    flood f = {.zh = zkt_raw()};
    pthread_t t;
    int i, rounds = 100;
    int64_t token, last = 0;
    zkl_client_options_init(&o);
    o.retry_max = 40; /* a burst may throttle several tries in a row */
    ok(zkl_client_open(zkt_servers(), &o, &c), "open");
    ok(zkl_mutex_create(c, path, &m), "create");
    cr_assert_eq(pthread_create(&t, NULL, flood_run, &f), 0);
    for (i = 0; i < rounds; i++) {
        ok(zkl_mutex_acquire(m, 60000), "acquire while the server throttles");
        ok(zkl_mutex_fencing_token(m, &token), "token");
        cr_assert_gt(token, last, "each hold has a node of its own");
        last = token;
        ok(zkl_mutex_release(m), "release while the server throttles");
    }
    atomic_store(&f.stop, 1);
    pthread_join(t, NULL);
    cr_log_info("%d of the load's reads were throttled", atomic_load(&f.throttled));
    cr_assert_gt(atomic_load(&f.throttled), 0, "the server throttled nothing: no test");
    cr_assert_eq(zkt_children_settle(zh, path, 0), 0, "a lock node was left");
    ok(zkl_mutex_destroy(m), "destroy");
    ok(zkl_client_close(c), "close");
    zookeeper_close(f.zh);
    zookeeper_close(zh);
    free(path);
}
