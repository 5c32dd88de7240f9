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
            int rc;
            atomic_fetch_add(&f->inflight, 1);
            rc = zoo_aexists(f->zh, "/", 0, flood_done, f);
            if (rc != ZOK)
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

/* The warnings zklock logs, kept for the test to read. */
static char warned[4][600];
static atomic_int n_warned;

static void keep_warnings(zkl_log_level level, const char *message, void *ud)
{
    int i;
    (void)ud;
    if (level != ZKL_LOG_WARN || !strstr(message, "lease"))
        return;
    i = atomic_fetch_add(&n_warned, 1);
    if (i < 4)
        snprintf(warned[i], sizeof warned[i], "%s", message);
}

Test(quirks, a_server_that_hides_its_settings_leaves_the_lease_standalone_and_says_so_once)
{
    zkl_client_options o;
    zkl_client *c[2];
    zkl_lag_source source = ZKL_LAG_GIVEN;
    int i;
    zkl_log_set(keep_warnings, ZKL_LOG_WARN, NULL);
    zkl_client_options_init(&o);
    cr_assert_eq(o.ensemble_lag_ms, ZKL_ENSEMBLE_LAG_FIND, "the default asks the server");
    for (i = 0; i < 2; i++) {
        ok(zkl_client_open(zkt_servers(), &o, &c[i]), "open");
        cr_assert_eq(zkl_client_ensemble_lag(c[i], &source), 0);
        cr_assert_eq(source, ZKL_LAG_ASSUMED);
    }
    cr_assert_eq(atomic_load(&n_warned), 1, "said %d times, not once", atomic_load(&n_warned));
    cr_assert(strstr(warned[0], "does not allow the conf four-letter word"), "%s", warned[0]);
    cr_assert(strstr(warned[0], "ensemble_lag_ms"), "%s", warned[0]);
    cr_assert(strstr(warned[0], "127.0.0.1:"), "names the server: %s", warned[0]);
    for (i = 0; i < 2; i++)
        ok(zkl_client_close(c[i]), "close");
    /* a lag given is taken as it is, and nothing is asked or said */
    o.ensemble_lag_ms = 0;
    ok(zkl_client_open(zkt_servers(), &o, &c[0]), "open with a lag given");
    cr_assert_eq(zkl_client_ensemble_lag(c[0], &source), 0);
    cr_assert_eq(source, ZKL_LAG_GIVEN);
    ok(zkl_client_close(c[0]), "close");
    cr_assert_eq(atomic_load(&n_warned), 1);
    zkl_log_set(NULL, ZKL_LOG_ERROR, NULL);
}

/* Run the zklock command on this server; its stderr in err. */
static int run_cli(const char *extra, char *err, size_t len)
{
    char cmd[1024], *path = zkt_path("cli");
    FILE *f;
    size_t n;
    int rc;
    snprintf(cmd, sizeof cmd, "'%s' %s --zk '%s' '%s' true 2>&1 >/dev/null", getenv("ZKL_CLI"),
             extra, zkt_servers(), path);
    f = popen(cmd, "r");
    cr_assert(f, "popen");
    n = fread(err, 1, len - 1, f);
    err[n] = '\0';
    rc = pclose(f);
    free(path);
    return rc;
}

Test(quirks, the_command_warns_that_the_lease_assumes_a_standalone_server)
{
    char err[2048];
    cr_assert_eq(run_cli("", err, sizeof err), 0, "%s", err);
    cr_assert(strstr(err, "zklock: warning: the lease assumes a standalone server"), "%s", err);
    cr_assert(strstr(err, "--ensemble-lag"), "%s", err);
    cr_assert_eq(run_cli("--ensemble-lag 0", err, sizeof err), 0, "%s", err);
    cr_assert_str_empty(err, "a lag given needs no warning: %s", err);
}
