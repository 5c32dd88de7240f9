/*
 * test_lease.c - every hold has a lease (issue 18): a holder cut off from the
 * server reads as not held, and is told LEASE_EXPIRED, before the server
 * expires its session (the time taken from the server's own log line), and
 * so before anyone else can be granted; renewals cost nothing while nothing
 * is held and about one sync per third of the session timeout while
 * something is; the lease queries and the margin option's checks.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "faultproxy.h"
#include "serverlog.h"
#include "zklock/async.h"
#include "zkt.h"

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The server's own "Expiring session" time for sid (wall ms), 0 if none yet. */
static int64_t server_expiry_ms(int64_t sid)
{
    const char *dir = getenv("ZKL_TEST_ZK_DIR");
    cr_assert(dir, "ZKL_TEST_ZK_DIR is not set");
    return zkt_log_expiry_ms(dir, sid, 0);
}

struct holder {
    zkl_mutex *m;
    zkl_status acquire_st, release_st;
    int64_t token;
    atomic_int holding;
    atomic_int stop_polling;
    _Atomic int64_t stopped_at;     /* wall ms: first poll that saw it not held */
    _Atomic int64_t lease_cb_at;    /* wall ms: the LEASE_EXPIRED hold-state callback */
    _Atomic int64_t lost_cb_at;     /* wall ms: LOST */
    atomic_int lease_cb_after_lost; /* the order was wrong */
};

static void hold_state(void *lock, zkl_conn_state st, void *ud)
{
    struct holder *h = ud;
    (void)lock;
    if (st == ZKL_STATE_LEASE_EXPIRED && !atomic_load(&h->lease_cb_at)) {
        atomic_store(&h->lease_cb_at, wall_ms());
        if (atomic_load(&h->lost_cb_at))
            atomic_store(&h->lease_cb_after_lost, 1);
    }
    if (st == ZKL_STATE_LOST && !atomic_load(&h->lost_cb_at))
        atomic_store(&h->lost_cb_at, wall_ms());
}

/* The holding thread: acquires, then checks is_held every millisecond. */
static void *hold_and_poll(void *arg)
{
    struct holder *h = arg;
    h->acquire_st = zkl_mutex_acquire(h->m, 10000);
    if (h->acquire_st == ZKL_OK)
        zkl_mutex_fencing_token(h->m, &h->token);
    atomic_store(&h->holding, 1);
    while (h->acquire_st == ZKL_OK && !atomic_load(&h->stop_polling)) {
        if (!atomic_load(&h->stopped_at) && !zkl_mutex_is_held(h->m))
            atomic_store(&h->stopped_at, wall_ms());
        zkt_sleep_ms(1);
    }
    if (h->acquire_st == ZKL_OK)
        h->release_st = zkl_mutex_release(h->m);
    return NULL;
}

struct waiter {
    zkl_mutex *m;
    zkl_status st;
    int64_t token;
    atomic_int done, release_now;
    zkl_status release_st;
    _Atomic int64_t granted_at;
};

static void *wait_for_it(void *arg)
{
    struct waiter *w = arg;
    w->st = zkl_mutex_acquire(w->m, 20000);
    if (w->st == ZKL_OK) {
        atomic_store(&w->granted_at, wall_ms());
        zkl_mutex_fencing_token(w->m, &w->token);
    }
    atomic_store(&w->done, 1);
    while (w->st == ZKL_OK && !atomic_load(&w->release_now))
        zkt_sleep_ms(5);
    if (w->st == ZKL_OK)
        w->release_st = zkl_mutex_release(w->m);
    return NULL;
}

static int flag_set(void *arg)
{
    return atomic_load((atomic_int *)arg);
}

/* Figures of the rounds, printed at the end of the test. */
struct figures {
    int64_t slack_min, slack_max;     /* server expiry - holder stop */
    int64_t handoff_min, handoff_max; /* waiter grant - holder stop */
    int64_t live_max;                 /* waiter grant - cut */
};

/*
 * One round: a holder through the proxy, a waiter straight to the server;
 * every packet the holder sends is then dropped. The holder must stop
 * (is_held false, LEASE_EXPIRED) at least 200 ms before the server's log
 * says it expired the session, and the waiter be granted only after that.
 */
/* A lock sample of c's metrics (zklock/metrics.h) for the mutex at path; -1: none. */
static long long lock_metric(zkl_client *c, const char *name, const char *path)
{
    static char text[1 << 16];
    char prefix[512];
    const char *at;
    ok(zkl_client_metrics(c, text, sizeof text, NULL), "metrics");
    snprintf(prefix, sizeof prefix, ",path=\"%s\",side=\"mutex\"} ", path);
    at = strstr(text, name); /* (its family's first sample; one client, one series) */
    at = at ? strstr(at, prefix) : NULL;
    return at ? strtoll(at + strlen(prefix), NULL, 10) : -1;
}

static void cut_round(int round, struct figures *fig)
{
    fp_proxy *fp = fp_start(zkt_servers());
    zkl_client_options o;
    zkl_client *a = NULL, *b = zkt_client(4000);
    zhandle_t *zh = zkt_raw();
    char *path = zkt_path("lease");
    struct holder h;
    struct waiter w;
    pthread_t th, tw;
    int64_t sid, cut_at, expiry = 0, end, slack, handoff;

    memset(&h, 0, sizeof h);
    memset(&w, 0, sizeof w);
    cr_assert(fp, "fp_start");
    zkl_client_options_init(&o);
    o.session_timeout_ms = 2000;
    ok(zkl_client_open(fp_connect_string(fp), &o, &a), "open through the proxy");
    ok(zkl_mutex_create(a, path, &h.m), "create");
    ok(zkl_mutex_on_state(h.m, hold_state, &h), "on_state");
    ok(zkl_mutex_create(b, path, &w.m), "create");
    pthread_create(&th, NULL, hold_and_poll, &h);
    cr_assert(zkt_wait_for(flag_set, &h.holding, 10000));
    ok(h.acquire_st, "holder acquires");
    sid = zkl_client_session_id(a);
    pthread_create(&tw, NULL, wait_for_it, &w);
    cr_assert_eq(zkt_children_settle(zh, path, 2), 2, "round %d: the waiter never queued", round);
    zkt_sleep_ms(700); /* a renewal or two: the cut falls anywhere in the cycle */

    cut_at = wall_ms();
    fp_drop_requests(fp, true);
    end = zkt_now_ms() + 15000;
    while (!(expiry = server_expiry_ms(sid)) || !atomic_load(&w.done)) {
        cr_assert_lt(zkt_now_ms(), end, "round %d: no expiry or no grant within 15 s", round);
        zkt_sleep_ms(20);
    }
    fp_drop_requests(fp, false);
    atomic_store(&h.stop_polling, 1);
    pthread_join(th, NULL);

    ok(w.st, "waiter acquires");
    cr_assert(atomic_load(&h.stopped_at), "round %d: the holder never read its hold as gone",
              round);
    cr_assert(atomic_load(&h.lease_cb_at), "round %d: no LEASE_EXPIRED callback", round);
    cr_assert_not(atomic_load(&h.lease_cb_after_lost), "round %d: LEASE_EXPIRED after LOST", round);
    cr_assert_eq(h.release_st, ZKL_ELOST, "round %d: releasing a lapsed hold says it was lost",
                 round);
    cr_assert_eq(lock_metric(a, "zklock_holds_lost_total", path), 1, "round %d: metrics", round);
    cr_assert_eq(lock_metric(a, "zklock_lease_expiries_total", path), 1,
                 "round %d: the lost hold's lease expiry is not in the metrics", round);
    slack = expiry - atomic_load(&h.stopped_at);
    handoff = atomic_load(&w.granted_at) - atomic_load(&h.stopped_at);
    cr_assert_geq(slack, 200,
                  "round %d: the holder stopped only %lld ms before the server expired its "
                  "session",
                  round, (long long)slack);
    cr_assert_geq(expiry - atomic_load(&h.lease_cb_at), 200,
                  "round %d: LEASE_EXPIRED came only %lld ms before the expiry", round,
                  (long long)(expiry - atomic_load(&h.lease_cb_at)));
    cr_assert_gt(handoff, 0, "round %d: the waiter was granted %lld ms before the holder stopped",
                 round, (long long)-handoff);
    cr_assert_gt(w.token, h.token, "round %d: fencing tokens must increase", round);
    cr_assert_leq(atomic_load(&w.granted_at) - cut_at, 2000 + 2000,
                  "round %d: granted again only %lld ms after the cut", round,
                  (long long)(atomic_load(&w.granted_at) - cut_at));
    if (round == 0 || slack < fig->slack_min)
        fig->slack_min = slack;
    if (round == 0 || slack > fig->slack_max)
        fig->slack_max = slack;
    if (round == 0 || handoff < fig->handoff_min)
        fig->handoff_min = handoff;
    if (round == 0 || handoff > fig->handoff_max)
        fig->handoff_max = handoff;
    if (atomic_load(&w.granted_at) - cut_at > fig->live_max)
        fig->live_max = atomic_load(&w.granted_at) - cut_at;

    atomic_store(&w.release_now, 1);
    pthread_join(tw, NULL);
    ok(w.release_st, "waiter releases");
    ok(zkl_client_drain(b, 5000), "drain");
    cr_assert_eq(zkt_children_settle(zh, path, 0), 0, "round %d: a node was left", round);
    ok(zkl_mutex_destroy(h.m), "destroy");
    ok(zkl_mutex_destroy(w.m), "destroy");
    ok(zkl_client_close(a), "close");
    ok(zkl_client_close(b), "close");
    fp_stop(fp);
    zookeeper_close(zh);
    free(path);
}

Test(lease, holder_cut_off_stops_before_the_server_expires_it, .timeout = 180)
{
    struct figures fig = {0};
    int i;
    for (i = 0; i < 3; i++)
        cut_round(i, &fig);
    cr_log_info("3 rounds, T = 2000 ms: holder stopped %lld..%lld ms before the server's expiry, "
                "%lld..%lld ms before the next grant; granted again at most %lld ms after the cut",
                (long long)fig.slack_min, (long long)fig.slack_max, (long long)fig.handoff_min,
                (long long)fig.handoff_max, (long long)fig.live_max);
}

static uint64_t requests(zkl_client *c)
{
    zkl_client_stats st;
    ok(zkl_client_stats_get(c, &st), "stats");
    return st.requests;
}

/* Nothing held: no renewal. Something held: about one sync per T/3. */
Test(lease, renewals_only_while_something_is_held, .timeout = 60)
{
    zkl_client *c = zkt_client(2000);
    char *path = zkt_path("renew");
    zkl_mutex *m;
    uint64_t r0, r1, renewals;
    int64_t left, end0, end1;
    ok(zkl_mutex_create(c, path, &m), "create");
    cr_assert_eq(zkl_client_lease_end(c, &end0), ZKL_ELOST, "no lease before anything is held");
    r0 = requests(c);
    zkt_sleep_ms(3000);
    cr_assert_eq(requests(c), r0, "requests sent while nothing was held");

    ok(zkl_mutex_acquire(m, 5000), "acquire");
    ok(zkl_client_lease_end(c, &end0), "lease end");
    ok(zkl_mutex_lease_remaining(m, &left), "lease remaining");
    cr_assert(left > 0 && left <= 2000, "lease left %lld ms of a 2000 ms session", (long long)left);
    r0 = requests(c);
    zkt_sleep_ms(3000);
    r1 = requests(c);
    ok(zkl_client_lease_end(c, &end1), "lease end");
    cr_assert_gt(end1, end0 + 2000, "the lease was not renewed (%lld -> %lld)", (long long)end0,
                 (long long)end1);
    /* 3 s at one per 667 ms: 4 or 5 renewals */
    renewals = r1 - r0;
    cr_assert(renewals >= 3 && renewals <= 6, "%llu renewals in 3 s", (unsigned long long)renewals);
    cr_assert(zkl_mutex_is_held(m));
    ok(zkl_mutex_release(m), "release");
    cr_assert_eq(zkl_mutex_lease_remaining(m, &left), ZKL_ENOTOWNER);
    zkt_sleep_ms(800); /* a renewal in flight lands */
    r0 = requests(c);
    zkt_sleep_ms(2000);
    cr_assert_eq(requests(c), r0, "requests sent after the release");
    cr_log_info("lease renewals: %llu syncs in 3 s held (T = 2000 ms), none idle",
                (unsigned long long)renewals);
    ok(zkl_mutex_destroy(m), "destroy");
    ok(zkl_client_close(c), "close");
    free(path);
}

/*
 * A proof is as good as a renewal: while a client's own requests keep
 * proving the lease (here another lock taken and let go every 100 ms), it
 * sends no renewal, and the lease still moves on.
 */
Test(lease, requests_that_prove_the_lease_spare_the_renewals, .timeout = 60)
{
    zkl_client *c = zkt_client(2000);
    char *p1 = zkt_path("proved-held"), *p2 = zkt_path("proved-busy");
    zkl_mutex *held, *busy;
    uint64_t s0, syncs;
    int64_t end0, end1, t0;
    int cycles = 0;
    ok(zkl_mutex_create(c, p1, &held), "create");
    ok(zkl_mutex_create(c, p2, &busy), "create");
    ok(zkl_mutex_acquire(held, 5000), "acquire");
    ok(zkl_client_lease_end(c, &end0), "lease end");
    s0 = zkt_lease_syncs(c);
    t0 = zkt_now_ms();
    while (zkt_now_ms() - t0 < 3000) {
        ok(zkl_mutex_acquire(busy, 5000), "acquire the busy one");
        ok(zkl_mutex_release(busy), "release the busy one");
        zkt_sleep_ms(100);
        cycles++;
    }
    syncs = zkt_lease_syncs(c) - s0;
    ok(zkl_client_lease_end(c, &end1), "lease end");
    cr_assert_gt(end1, end0 + 2000, "the lease did not move (%lld -> %lld)", (long long)end0,
                 (long long)end1);
    cr_assert(zkl_mutex_is_held(held));
    /* renewals alone: 4 or 5 in 3 s (renewals_only_while_something_is_held) */
    cr_assert_leq(syncs, 1, "%llu renewals while %d acquires proved the lease",
                  (unsigned long long)syncs, cycles);
    ok(zkl_mutex_release(held), "release");
    ok(zkl_mutex_destroy(held), "destroy");
    ok(zkl_mutex_destroy(busy), "destroy");
    ok(zkl_client_close(c), "close");
    free(p1);
    free(p2);
}

/* Each side of a read/write lock reports its own hold's lease. */
Test(lease, rwlock_sides_report_their_lease)
{
    zkl_client *c = zkt_client(2000);
    char *path = zkt_path("rwlease");
    zkl_rwlock *l;
    int64_t left;
    ok(zkl_rwlock_create(c, path, &l), "create");
    cr_assert_eq(zkl_rwlock_write_lease_remaining(l, &left), ZKL_ENOTOWNER, "nothing held");
    ok(zkl_rwlock_write_acquire(l, 5000), "write");
    ok(zkl_rwlock_write_lease_remaining(l, &left), "write side's lease");
    cr_assert(left > 0 && left <= 2000, "lease left %lld ms of a 2000 ms session", (long long)left);
    cr_assert_eq(zkl_rwlock_read_lease_remaining(l, &left), ZKL_ENOTOWNER, "no read hold");
    ok(zkl_rwlock_write_release(l), "release");
    ok(zkl_rwlock_read_acquire(l, 5000), "read");
    ok(zkl_rwlock_read_lease_remaining(l, &left), "read side's lease");
    cr_assert(left > 0 && left <= 2000, "lease left %lld ms", (long long)left);
    cr_assert_eq(zkl_rwlock_read_lease_remaining(NULL, &left), ZKL_EINVAL);
    cr_assert_eq(zkl_rwlock_read_lease_remaining(l, NULL), ZKL_EINVAL);
    cr_assert_eq(zkl_rwlock_write_lease_remaining(NULL, &left), ZKL_EINVAL);
    cr_assert_eq(zkl_rwlock_write_lease_remaining(l, NULL), ZKL_EINVAL);
    cr_assert(strstr(zkl_errmsg(), "NULL"), "%s", zkl_errmsg());
    ok(zkl_rwlock_read_release(l), "release");
    ok(zkl_rwlock_destroy(l), "destroy");
    ok(zkl_client_close(c), "close");
    free(path);
}

Test(lease, margin_that_cannot_work_is_refused)
{
    zkl_client_options o;
    zkl_client *c = NULL;
    zkl_status st;
    zkl_client_options_init(&o);
    o.session_timeout_ms = 4000;
    o.lease_margin_ms = 1001;
    st = zkl_client_open(zkt_servers(), &o, &c);
    cr_assert_eq(st, ZKL_EINVAL);
    cr_assert(strstr(zkl_errmsg(), "lease_margin_ms"), "%s", zkl_errmsg());
    cr_assert_null(c);
    o.lease_margin_ms = -1;
    cr_assert_eq(zkl_client_open(zkt_servers(), &o, &c), ZKL_EINVAL);
    o.lease_margin_ms = 1000;
    ok(zkl_client_open(zkt_servers(), &o, &c), "a quarter fits");
    ok(zkl_client_close(c), "close");
    o.lease_margin_ms = 500;
    o.ensemble_lag_ms = 501; /* together past a quarter */
    cr_assert_eq(zkl_client_open(zkt_servers(), &o, &c), ZKL_EINVAL);
    cr_assert(strstr(zkl_errmsg(), "ensemble_lag_ms"), "%s", zkl_errmsg());
    o.ensemble_lag_ms = -2; /* (-1 is ZKL_ENSEMBLE_LAG_FIND) */
    cr_assert_eq(zkl_client_open(zkt_servers(), &o, &c), ZKL_EINVAL);
    o.ensemble_lag_ms = 500;
    ok(zkl_client_open(zkt_servers(), &o, &c), "margin and lag fill a quarter");
    ok(zkl_client_close(c), "close");
    {
        int64_t x;
        cr_assert_eq(zkl_client_lease_end(NULL, &x), ZKL_EINVAL);
        cr_assert_eq(zkl_mutex_lease_remaining(NULL, &x), ZKL_EINVAL);
        cr_assert_eq(zkl_lease_remaining(NULL, &x), ZKL_EINVAL);
    }
}

/* An async report, with the wall time it came at. */
struct areport {
    atomic_int calls, st;
    atomic_llong at;
};

static void on_areport(zkl_op *op, zkl_status st, const char *msg, void *ud)
{
    struct areport *r = ud;
    (void)op;
    if (st != ZKL_OK)
        cr_log_error("async: %s", msg);
    atomic_store(&r->at, wall_ms());
    atomic_store(&r->st, st);
    atomic_fetch_add(&r->calls, 1);
}

/*
 * The lease of an async hold: its holder is cut off (every packet dropped);
 * the handle reads as not held, and its lease as lost, at least 200 ms before
 * the server expires the session, and the async waiter behind it is granted
 * only after that.
 */
Test(lease, async_hold_is_cut_off_before_the_server_expires_it, .timeout = 120)
{
    fp_proxy *fp = fp_start(zkt_servers());
    zkl_client_options o;
    zkl_client *a = NULL, *b = zkt_client(4000);
    zhandle_t *zh = zkt_raw();
    char *path = zkt_path("lease-async");
    zkl_mutex *hm, *wm;
    zkl_op *hop, *wop;
    struct areport hr = {0}, wr = {0};
    int64_t sid, stopped = 0, expiry = 0, end, ms;
    cr_assert(fp, "fp_start");
    zkl_client_options_init(&o);
    o.session_timeout_ms = 2000;
    ok(zkl_client_open(fp_connect_string(fp), &o, &a), "open through the proxy");
    ok(zkl_mutex_create(a, path, &hm), "create");
    ok(zkl_mutex_create(b, path, &wm), "create");
    ok(zkl_mutex_acquire_async(hm, 10000, on_areport, &hr, &hop), "holder");
    cr_assert(zkt_wait_for(flag_set, &hr.calls, 10000));
    cr_assert_eq(atomic_load(&hr.st), ZKL_OK);
    ok(zkl_op_lease_remaining(hop, &ms), "lease");
    sid = zkl_client_session_id(a);
    ok(zkl_mutex_acquire_async(wm, 20000, on_areport, &wr, &wop), "waiter");
    cr_assert_eq(zkt_children_settle(zh, path, 2), 2, "the waiter never queued");
    zkt_sleep_ms(500);
    fp_drop_requests(fp, true);
    end = zkt_now_ms() + 15000;
    while (!(expiry = server_expiry_ms(sid)) || !atomic_load(&wr.calls)) {
        cr_assert_lt(zkt_now_ms(), end, "no expiry or no grant within 15 s");
        if (!stopped && !zkl_op_is_held(hop))
            stopped = wall_ms();
        zkt_sleep_ms(5);
    }
    fp_drop_requests(fp, false);
    cr_assert(stopped, "the handle never read its hold as gone");
    cr_assert_eq(zkl_op_lease_remaining(hop, &ms), ZKL_ELOST);
    cr_assert_eq(atomic_load(&wr.st), ZKL_OK, "the waiter was not granted");
    cr_assert_geq(expiry - stopped, 200, "the handle stopped only %lld ms before the expiry",
                  (long long)(expiry - stopped));
    cr_assert_gt(atomic_load(&wr.at), stopped, "the waiter was granted before the holder stopped");
    cr_log_info("async hold: stopped %lld ms before the server's expiry, %lld ms before the next "
                "grant",
                (long long)(expiry - stopped), (long long)(atomic_load(&wr.at) - stopped));
    cr_assert_eq(zkl_op_release(hop), ZKL_ELOST);
    ok(zkl_op_release(wop), "release");
    ok(zkl_client_drain(b, 5000), "drain");
    cr_assert_eq(zkt_children_settle(zh, path, 0), 0, "a node was left");
    ok(zkl_mutex_destroy(hm), "destroy");
    ok(zkl_mutex_destroy(wm), "destroy");
    ok(zkl_client_close(a), "close");
    ok(zkl_client_close(b), "close");
    fp_stop(fp);
    zookeeper_close(zh);
    free(path);
}
