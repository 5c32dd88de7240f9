/*
 * test_server_quirks.c - a server set up unlike the shared one, as loaded and
 * locked-down production servers are (tests/CMakeLists.txt starts it):
 *  - it throttles (at most one request in process, and a request that waited
 *    over 1 ms is answered ZTHROTTLEDOP, not applied): zklock retries those
 *    as it retries a connection loss, so locks are still got and released;
 *  - it does not let clients read its settings (no `conf` four-letter word):
 *    its `srvr` says it is standalone, which proves a lag of 0;
 *  - an ensemble whose servers allow only srvr (ZooKeeper's default since
 *    3.5.3; the test starts its own): its lag is unknown, so acquires refuse
 *    and say how to set it, said once; queries and observers still work, and
 *    a lag given is taken as it is (issue 58, item 2).
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "zklock/async.h"
#include "zklock/leader.h"
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

Test(quirks, a_standalone_server_that_hides_conf_is_known_by_its_srvr)
{
    zkl_client_options o;
    zkl_client *c;
    zkl_mutex *m;
    zkl_lag_source source = ZKL_LAG_GIVEN;
    char *path = zkt_path("srvr");
    zkl_log_set(keep_warnings, ZKL_LOG_WARN, NULL);
    zkl_client_options_init(&o);
    cr_assert_eq(o.ensemble_lag_ms, ZKL_ENSEMBLE_LAG_FIND, "the default asks the server");
    ok(zkl_client_open(zkt_servers(), &o, &c), "open");
    cr_assert_eq(zkl_client_ensemble_lag(c, &source), 0);
    cr_assert_eq(source, ZKL_LAG_FOUND, "srvr's Mode: standalone was not taken");
    ok(zkl_mutex_create(c, path, &m), "mutex");
    ok(zkl_mutex_acquire(m, 10000), "acquire");
    ok(zkl_mutex_release(m), "release");
    ok(zkl_mutex_destroy(m), "destroy");
    ok(zkl_client_close(c), "close");
    cr_assert_eq(atomic_load(&n_warned), 0, "warned: %s", warned[0]);
    zkl_log_set(NULL, ZKL_LOG_ERROR, NULL);
    free(path);
}

/* Run scripts/zk-server with args on dir; 0 if it worked. */
static int zk_server(const char *args, const char *dir)
{
    char cmd[2400];
    snprintf(cmd, sizeof cmd, "'%s' %s --dir '%s' >/dev/null 2>&1", getenv("ZKL_ZK_SERVER"), args,
             dir);
    return system(cmd);
}

/* The connect string scripts/zk-server wrote in dir. */
static void connect_of(const char *dir, char *out, size_t len)
{
    char file[600];
    FILE *f;
    snprintf(file, sizeof file, "%s/connect", dir);
    f = fopen(file, "r");
    cr_assert(f && fgets(out, (int)len, f), "no connect string in %s", dir);
    fclose(f);
    out[strcspn(out, "\r\n")] = '\0';
}

static void on_obs(zkl_observer *o, zkl_status st, const char *msg, const zkl_leader *ld, void *ud)
{
    (void)o;
    (void)msg;
    (void)ld;
    if (st == ZKL_OK)
        atomic_fetch_add((atomic_int *)ud, 1);
}

static int told(void *p)
{
    return atomic_load((atomic_int *)p) > 0;
}

static void on_async(zkl_op *op, zkl_status st, const char *msg, void *ud)
{
    (void)op;
    (void)msg;
    atomic_store((atomic_int *)ud, st);
}

static int reported(void *p)
{
    return atomic_load((atomic_int *)p) != 1;
}

/*
 * An ensemble with ZooKeeper's default whitelist (srvr only, here with
 * mntr and ruok, which scripts/zk-server uses): its lag cannot be read, and no lease
 * can be bounded. The client opens; acquires (blocking, async, a latch's)
 * refuse with ZKL_EINVAL and say how to set the lag; the warning comes once;
 * queries and the observer work; a lag given is taken. Before issue 58, the
 * lease assumed a standalone server (lag 0) with a warning, and held.
 */
static char stock_dir[512];

/* The stock ensemble is stopped by pid however the test ends. */
static void stop_stock(void)
{
    if (stock_dir[0])
        (void)zk_server("stop", stock_dir);
}

Test(quirks, an_ensemble_that_hides_its_settings_refuses_acquires, .timeout = 180,
     .fini = stop_stock)
{
    char *dir = stock_dir, servers[512], cmd[1400], *path = zkt_path("stock");
    zkl_client_options o;
    zkl_client *c;
    zkl_mutex *m, *m2;
    zkl_latch *l;
    zkl_observer *obs;
    zkl_participant *v;
    zkl_op *op;
    zkl_lag_source source = ZKL_LAG_GIVEN;
    atomic_int seen = 0, async_st = 1;
    size_t n;
    int rc;
    snprintf(stock_dir, sizeof stock_dir, "%s-stock3", getenv("ZKL_TEST_ZK_DIR"));
    cr_assert_eq(zk_server("start --servers 3 --tick 500 --four-letter-words srvr,mntr,ruok", dir),
                 0, "the ensemble did not start");
    connect_of(dir, servers, sizeof servers);
    zkl_log_set(keep_warnings, ZKL_LOG_WARN, NULL);
    atomic_store(&n_warned, 0);
    zkl_client_options_init(&o);
    o.session_timeout_ms = 10000;
    ok(zkl_client_open(servers, &o, &c), "open");
    cr_assert_eq(zkl_client_ensemble_lag(c, &source), 0);
    cr_assert_eq(source, ZKL_LAG_UNKNOWN, "the lag of a silent ensemble was taken as known");
    ok(zkl_mutex_create(c, path, &m), "mutex");
    cr_assert_eq(zkl_mutex_acquire(m, 5000), ZKL_EINVAL, "acquired with no lease bounded");
    cr_assert(strstr(zkl_errmsg(), "one of an ensemble"), "%s", zkl_errmsg());
    cr_assert(strstr(zkl_errmsg(), "--ensemble-lag"), "%s", zkl_errmsg());
    ok(zkl_mutex_create(c, path, &m2), "a mutex for async acquires");
    ok(zkl_mutex_acquire_async(m2, 5000, on_async, &async_st, &op), "async acquire");
    cr_assert(zkt_wait_for(reported, &async_st, 10000), "the async acquire never reported");
    cr_assert_eq(atomic_load(&async_st), ZKL_EINVAL, "the async acquire: %s",
                 zkl_strerror(atomic_load(&async_st)));
    ok(zkl_op_release(op), "release the handle");
    ok(zkl_mutex_destroy(m2), "destroy");
    ok(zkl_latch_create(c, path, "l", &l), "latch");
    ok(zkl_latch_start(l, NULL, NULL), "start");
    cr_assert_eq(zkl_latch_await(l, 5000), ZKL_EINVAL, "led with no lease bounded: %s",
                 zkl_errmsg());
    ok(zkl_latch_destroy(l), "latch destroy");
    ok(zkl_inspect(c, path, &v, &n), "inspect still works");
    zkl_participants_free(v, n);
    cr_assert_eq(n, 0, "a node was left: %zu", n);
    ok(zkl_leader_observe(c, path, on_obs, &seen, &obs), "observe still works");
    cr_assert(zkt_wait_for(told, &seen, 10000), "the observer told nothing");
    ok(zkl_observer_destroy(obs), "observer destroy");
    ok(zkl_mutex_destroy(m), "destroy");
    ok(zkl_client_close(c), "close");
    cr_assert_eq(atomic_load(&n_warned), 1, "warned %d times", atomic_load(&n_warned));
    cr_assert(strstr(warned[0], "acquires will refuse"), "%s", warned[0]);
    cr_assert(strstr(warned[0], "127.0.0.1:"), "names the server: %s", warned[0]);
    o.ensemble_lag_ms = 1250; /* given (5 x 500 + 250): taken as it is */
    ok(zkl_client_open(servers, &o, &c), "open with a lag given");
    cr_assert_eq(zkl_client_ensemble_lag(c, &source), 1250);
    cr_assert_eq(source, ZKL_LAG_GIVEN);
    ok(zkl_mutex_create(c, path, &m), "mutex");
    ok(zkl_mutex_acquire(m, 10000), "acquire with the lag given");
    ok(zkl_mutex_release(m), "release");
    ok(zkl_mutex_destroy(m), "destroy");
    ok(zkl_client_close(c), "close");
    /* the command refuses too, before it takes anything, and says how */
    snprintf(cmd, sizeof cmd, "'%s' --zk '%s' '%s' true 2>&1", getenv("ZKL_CLI"), servers, path);
    {
        FILE *f = popen(cmd, "r");
        char out[1024];
        size_t k;
        cr_assert(f);
        k = fread(out, 1, sizeof out - 1, f);
        out[k] = '\0';
        rc = pclose(f);
        cr_assert(WIFEXITED(rc) && WEXITSTATUS(rc) == 64, "zklock: status %d: %s", rc, out);
        cr_assert(strstr(out, "--ensemble-lag"), "%s", out);
    }
    zkl_log_set(NULL, ZKL_LOG_ERROR, NULL);
    free(path);
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

Test(quirks, the_command_takes_a_standalone_server_from_its_srvr)
{
    char err[2048];
    cr_assert_eq(run_cli("", err, sizeof err), 0, "%s", err);
    cr_assert_str_empty(err, "a standalone server needs no word: %s", err);
    cr_assert_eq(run_cli("--ensemble-lag 0", err, sizeof err), 0, "%s", err);
    cr_assert_str_empty(err, "a lag given needs no warning: %s", err);
}
