/*
 * test_fail_each.c - failure paths, SQLite's way: the scenarios below run
 * again and again, with the Nth call of one kind failing in run N, until a
 * run needs no failure. Every call must then give a status (ZKL_ENOMEM or
 * ZKL_ESYS, with a message) or succeed; no crash, no hang, no leak (the
 * ASan and valgrind variants check that), no node left behind.
 *
 * Built twice (tests/CMakeLists.txt), each linked with -Wl,--wrap so that
 * only the calls made from zklock's static library and this program fail:
 *   test_oom       zklock's allocations (support/oom.c);
 *   test_sendfail  zklock's ZooKeeper requests, refused before they are sent
 *                  as libzookeeper_mt refuses one it cannot queue
 *                  (support/sendfail.c, ZKT_FAIL_SENDS defined).
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "zklock/async.h"
#include "zkt.h"

#ifdef ZKT_FAIL_SENDS
#include "sendfail.h"
#define FAULTS (&zkt_sendfail)
#define SUITE sendfail
#define WHAT "request"
#define PREFIX "sendfail"
#define MIN_CALLS 3
#else
#include "oom.h"
#define FAULTS (&zkt_oom)
#define SUITE oom
#define WHAT "allocation"
#define PREFIX "oom"
#define MIN_CALLS 10
#endif

/* OK, or a status that says memory or the system ran short, with a message. */
static void short_or_ok(zkl_status st, const char *what, long n)
{
    if (st == ZKL_OK)
        return;
    cr_assert(st == ZKL_ENOMEM || st == ZKL_ESYS, WHAT " %ld failing: %s gave %s (%s)", n, what,
              zkl_strerror(st), zkl_errmsg());
    cr_assert_neq(zkl_errmsg()[0], '\0', WHAT " %ld failing: %s gave no message", n, what);
}

enum kind {
    MUTEX,
    RWLOCK,
    SEMAPHORE,
    MULTILOCK,
    REVOKE,
    RESESSION,
    CONTENDED,
    SEM_CONTENDED,
    ASYNC,
    LONG_LINE,
    CHROOT,
    GUARDED,
    LATCH
};

/*
 * LONG_LINE: a try behind LINE_NODES nodes of another session, named as
 * Curator's, so that the listing is long enough (over 16 KiB) to be mapped
 * on its own (requests/call.c) rather than taken from malloc.
 */
#define LINE_NODES 320

/* A mutex on path, or NULL if making it failed (as it may). */
static zkl_mutex *mutex_made(zkl_client *c, const char *path, long n)
{
    zkl_mutex *m = NULL;
    zkl_status st = zkl_mutex_create(c, path, &m);
    short_or_ok(st, "zkl_mutex_create", n);
    return st == ZKL_OK ? m : NULL;
}

/* Release what a failure left held, then destroy. */
static void mutex_done(zkl_mutex *m, long n)
{
    if (!m)
        return;
    if (zkl_mutex_is_held(m))
        short_or_ok(zkl_mutex_release(m), "zkl_mutex_release", n);
    cr_assert_eq(zkl_mutex_destroy(m), ZKL_OK, "%s", zkl_errmsg());
}

/* A mutex acquired twice (the second acquire carries the first release's
 * delete), with its token. */
static void mutex_cycle(zkl_client *c, const char *path, long n)
{
    zkl_mutex *m = mutex_made(c, path, n);
    zkl_status st = m ? ZKL_OK : ZKL_ENOMEM;
    int64_t token;
    int i;
    for (i = 0; st == ZKL_OK && i < 2; i++) {
        st = zkl_mutex_acquire(m, 10000);
        short_or_ok(st, "zkl_mutex_acquire", n);
        if (st != ZKL_OK)
            break;
        short_or_ok(zkl_mutex_fencing_token(m, &token), "zkl_mutex_fencing_token", n);
        st = zkl_mutex_release(m);
        short_or_ok(st, "zkl_mutex_release", n);
    }
    mutex_done(m, n);
}

static void long_line_cycle(zkl_client *c, const char *path, long n)
{
    zkl_mutex *m = mutex_made(c, path, n);
    zkl_status st;
    if (!m)
        return;
    st = zkl_mutex_acquire(m, 0);
    if (st != ZKL_ETIMEDOUT)
        short_or_ok(st, "zkl_mutex_acquire behind a long line", n);
    cr_assert_neq(st, ZKL_OK, "held behind %d nodes", LINE_NODES);
    mutex_done(m, n);
}

/* Read, write with its token, downgrade (a read taken while writing). */
static void rwlock_cycle(zkl_client *c, const char *path, long n)
{
    zkl_rwlock *l = NULL;
    zkl_status st;
    int64_t token;
    st = zkl_rwlock_create(c, path, &l);
    short_or_ok(st, "zkl_rwlock_create", n);
    if (st != ZKL_OK)
        return;
    st = zkl_rwlock_read_acquire(l, 10000);
    short_or_ok(st, "zkl_rwlock_read_acquire", n);
    if (st == ZKL_OK)
        short_or_ok(zkl_rwlock_read_release(l), "zkl_rwlock_read_release", n);
    st = zkl_rwlock_write_acquire(l, 10000);
    short_or_ok(st, "zkl_rwlock_write_acquire", n);
    if (st == ZKL_OK) {
        short_or_ok(zkl_rwlock_write_fencing_token(l, &token), "zkl_rwlock_write_fencing_token", n);
        short_or_ok(zkl_rwlock_read_acquire(l, 10000), "zkl_rwlock_read_acquire (downgrade)", n);
        short_or_ok(zkl_rwlock_write_release(l), "zkl_rwlock_write_release", n);
    }
    if (zkl_rwlock_read_is_held(l))
        short_or_ok(zkl_rwlock_read_release(l), "zkl_rwlock_read_release", n);
    if (zkl_rwlock_write_is_held(l))
        short_or_ok(zkl_rwlock_write_release(l), "zkl_rwlock_write_release", n);
    cr_assert_eq(zkl_rwlock_destroy(l), ZKL_OK, "%s", zkl_errmsg());
}

/* Two leases at once, then one with its token. */
static void semaphore_cycle(zkl_client *c, const char *path, long n)
{
    zkl_semaphore *s = NULL;
    zkl_lease *two[2] = {NULL, NULL}, *one = NULL;
    zkl_status st;
    st = zkl_semaphore_create(c, path, 2, &s);
    short_or_ok(st, "zkl_semaphore_create", n);
    if (st != ZKL_OK)
        return;
    st = zkl_semaphore_acquire_many(s, 2, 10000, two);
    short_or_ok(st, "zkl_semaphore_acquire_many", n);
    if (st == ZKL_OK) {
        short_or_ok(zkl_lease_return(two[0]), "zkl_lease_return", n);
        short_or_ok(zkl_lease_return(two[1]), "zkl_lease_return", n);
    }
    st = zkl_semaphore_acquire(s, 10000, &one);
    short_or_ok(st, "zkl_semaphore_acquire", n);
    if (st == ZKL_OK) {
        cr_assert_gt(zkl_lease_fencing_token(one), 0);
        short_or_ok(zkl_lease_return(one), "zkl_lease_return", n);
    }
    cr_assert_eq(zkl_semaphore_destroy(s), ZKL_OK, "%s", zkl_errmsg());
}

/* Members under path: a mutex, a rwlock's read side, a semaphore mutex. */
static void multilock_cycle(zkl_client *c, const char *path, long n)
{
    char mp[300], rp[300], sp[300];
    zkl_multilock *ml = NULL;
    zkl_mutex *m = NULL;
    zkl_rwlock *l = NULL;
    zkl_semaphore_mutex *sm = NULL;
    zkl_status st;
    snprintf(mp, sizeof mp, "%s/m", path);
    snprintf(rp, sizeof rp, "%s/r", path);
    snprintf(sp, sizeof sp, "%s/s", path);
    st = zkl_multilock_create(&ml);
    short_or_ok(st, "zkl_multilock_create", n);
    if (st == ZKL_OK && !(m = mutex_made(c, mp, n)))
        st = ZKL_ENOMEM;
    if (st == ZKL_OK)
        short_or_ok(st = zkl_rwlock_create(c, rp, &l), "zkl_rwlock_create", n);
    if (st == ZKL_OK)
        short_or_ok(st = zkl_semaphore_mutex_create(c, sp, &sm), "zkl_semaphore_mutex_create", n);
    if (st == ZKL_OK)
        short_or_ok(st = zkl_multilock_add_mutex(ml, m), "zkl_multilock_add_mutex", n);
    if (st == ZKL_OK)
        short_or_ok(st = zkl_multilock_add_read(ml, l), "zkl_multilock_add_read", n);
    if (st == ZKL_OK)
        short_or_ok(st = zkl_multilock_add_semaphore_mutex(ml, sm),
                    "zkl_multilock_add_semaphore_mutex", n);
    if (st == ZKL_OK)
        short_or_ok(st = zkl_multilock_acquire(ml, 10000), "zkl_multilock_acquire", n);
    if (st == ZKL_OK) {
        /* all or none: every member is held */
        cr_assert(zkl_mutex_is_held(m) && zkl_rwlock_read_is_held(l));
        short_or_ok(zkl_multilock_release(ml), "zkl_multilock_release", n);
    }
    /* all or none: a failed acquire holds nothing, a failed release nothing either */
    cr_assert(!m || !zkl_mutex_is_held(m), WHAT " %ld failing: a member is still held", n);
    cr_assert(!l || !zkl_rwlock_read_is_held(l), WHAT " %ld failing: a member is still held", n);
    if (ml)
        cr_assert_eq(zkl_multilock_destroy(ml), ZKL_OK, "%s", zkl_errmsg());
    if (sm)
        cr_assert_eq(zkl_semaphore_mutex_destroy(sm), ZKL_OK, "%s", zkl_errmsg());
    if (l)
        cr_assert_eq(zkl_rwlock_destroy(l), ZKL_OK, "%s", zkl_errmsg());
    mutex_done(m, n);
}

static atomic_int revoke_calls;

static void on_revoke(void *lock, void *ud)
{
    (void)ud;
    (void)lock; /* the owning thread releases: a mutex hold is its thread's */
    atomic_fetch_add(&revoke_calls, 1);
}

static void on_hold_state(void *lock, zkl_conn_state st, void *ud)
{
    (void)lock;
    (void)st;
    (void)ud;
}

/* A revocable mutex with a hold-state callback: its node, the participants,
 * zkl_inspect, and a revoke of its own node, which the callback hears. */
static void revoke_cycle(zkl_client *c, const char *path, long n)
{
    zkl_mutex *m = mutex_made(c, path, n);
    zkl_participant *pv = NULL;
    char **v = NULL, *node = NULL;
    size_t k = 0;
    zkl_status st;
    int i;
    atomic_store(&revoke_calls, 0);
    if (!m)
        return;
    short_or_ok(st = zkl_mutex_make_revocable(m, on_revoke, NULL), "zkl_mutex_make_revocable", n);
    if (st == ZKL_OK)
        short_or_ok(st = zkl_mutex_on_state(m, on_hold_state, NULL), "zkl_mutex_on_state", n);
    if (st == ZKL_OK)
        short_or_ok(st = zkl_mutex_acquire(m, 10000), "zkl_mutex_acquire", n);
    if (st == ZKL_OK) {
        short_or_ok(st = zkl_mutex_participants(m, &v, &k), "zkl_mutex_participants", n);
        if (st == ZKL_OK) {
            cr_assert_eq(k, 1);
            zkl_strings_free(v, k);
        }
        short_or_ok(st = zkl_inspect(c, path, &pv, &k), "zkl_inspect", n);
        if (st == ZKL_OK) {
            cr_assert(k == 1 && pv[0].holds);
            zkl_participants_free(pv, k);
        }
        short_or_ok(st = zkl_mutex_node(m, &node), "zkl_mutex_node", n);
        if (st == ZKL_OK)
            short_or_ok(st = zkl_revoke(c, node), "zkl_revoke", n);
        /* a hold handed out is revocable: the callback comes */
        for (i = 0; st == ZKL_OK && i < 250 && !atomic_load(&revoke_calls); i++)
            zkt_sleep_ms(20);
        cr_assert(st != ZKL_OK || atomic_load(&revoke_calls) == 1,
                  WHAT " %ld failing: the revoke was not delivered", n);
        free(node);
    }
    mutex_done(m, n);
}

/* A hold lost with its session (expired on the server), then a new session
 * for the next acquire. */
static void resession_cycle(zkl_client *c, const char *path, long n)
{
    zkl_mutex *m = mutex_made(c, path, n);
    zkl_status st;
    long armed;
    int i;
    if (!m)
        return;
    st = zkl_mutex_acquire(m, 10000);
    short_or_ok(st, "zkl_mutex_acquire", n);
    if (st == ZKL_OK) {
        armed = zkt_countdown_arm(FAULTS, 0); /* the helper's own calls may not fail */
        zkt_expire(c);
        zkt_countdown_arm(FAULTS, armed);
        for (i = 0; i < 500 && zkl_mutex_is_held(m); i++)
            zkt_sleep_ms(20);
        cr_assert(!zkl_mutex_is_held(m), WHAT " %ld failing: a lost hold still held", n);
        st = zkl_mutex_release(m);
        cr_assert(st == ZKL_ELOST, WHAT " %ld failing: releasing a lost hold gave %s", n,
                  zkl_strerror(st));
    }
    /* whether or not the first acquire got through, the session may be gone */
    st = zkl_mutex_acquire(m, 10000);
    short_or_ok(st, "zkl_mutex_acquire (new session)", n);
    if (st == ZKL_OK)
        short_or_ok(zkl_mutex_release(m), "zkl_mutex_release", n);
    mutex_done(m, n);
}

/*
 * One place in a line: a mutex on path, or (sem) one lease of a one-lease
 * semaphore there, taken and given back. Its own lock object on the shared
 * client, so it queues behind the others; statuses are kept for the test's
 * thread to check.
 */
struct place {
    zkl_client *c;
    const char *path;
    bool sem;
    zkl_mutex *m;
    zkl_semaphore *s;
    zkl_lease *lease;
    pthread_t t;
    zkl_status create, acquire, release, destroy;
    char msg[256];
};

static void place_take(struct place *p)
{
    p->create = p->sem ? zkl_semaphore_create(p->c, p->path, 1, &p->s)
                       : zkl_mutex_create(p->c, p->path, &p->m);
    if (p->create != ZKL_OK)
        p->acquire = p->create;
    else
        p->acquire =
            p->sem ? zkl_semaphore_acquire(p->s, 10000, &p->lease) : zkl_mutex_acquire(p->m, 10000);
}

static void place_leave(struct place *p)
{
    if (p->acquire == ZKL_OK)
        p->release = p->sem ? zkl_lease_return(p->lease) : zkl_mutex_release(p->m);
    if (p->create != ZKL_OK || p->acquire != ZKL_OK || p->release != ZKL_OK)
        snprintf(p->msg, sizeof p->msg, "%s", zkl_errmsg());
    p->destroy = p->s ? zkl_semaphore_destroy(p->s) : p->m ? zkl_mutex_destroy(p->m) : ZKL_OK;
}

static void *waiter_main(void *arg)
{
    struct place *p = arg;
    place_take(p);
    if (p->acquire == ZKL_OK)
        zkt_sleep_ms(10);
    place_leave(p);
    return NULL;
}

static void place_check(const struct place *p, long n)
{
    const zkl_status sts[3] = {p->create, p->acquire, p->release};
    int i;
    for (i = 0; i < 3; i++)
        cr_assert(sts[i] == ZKL_OK || ((sts[i] == ZKL_ENOMEM || sts[i] == ZKL_ESYS) && p->msg[0]),
                  WHAT " %ld failing: %s %d gave %s (%s)", n, p->sem ? "a lease" : "a mutex", i,
                  zkl_strerror(sts[i]), p->msg);
    cr_assert_eq(p->destroy, ZKL_OK, WHAT " %ld failing: destroying gave %s", n,
                 zkl_strerror(p->destroy));
}

/* A holder with two waiters in line behind it; the holder lets go once both
 * wait. A mutex's first waiter watches the holder, the second the first; a
 * semaphore's waiters watch the lease list. */
static void contended_cycle(zkl_client *c, const char *path, long n, bool sem)
{
    struct place p[3];
    int i;
    memset(p, 0, sizeof p);
    for (i = 0; i < 3; i++) {
        p[i].c = c;
        p[i].path = path;
        p[i].sem = sem;
    }
    place_take(&p[0]);
    for (i = 1; i < 3; i++) {
        cr_assert_eq(pthread_create(&p[i].t, NULL, waiter_main, &p[i]), 0);
        zkt_sleep_ms(40); /* in line one after the other */
    }
    place_leave(&p[0]);
    for (i = 1; i < 3; i++)
        pthread_join(p[i].t, NULL);
    for (i = 0; i < 3; i++)
        place_check(&p[i], n);
}

/* What an async acquire reported. */
struct report {
    atomic_int calls;
    zkl_status st;
    char msg[256];
};

static void on_report(zkl_op *op, zkl_status st, const char *msg, void *ud)
{
    struct report *r = ud;
    (void)op;
    r->st = st;
    snprintf(r->msg, sizeof r->msg, "%s", msg);
    atomic_fetch_add(&r->calls, 1);
}

static int reported(void *p)
{
    return atomic_load(&((struct report *)p)->calls) > 0;
}

/* Let go of op once its report is seen. The report is counted inside the
 * callback, which may still be running when the test sees it: release
 * refuses then (ZKL_EBUSY, documented), so it is asked again. */
static zkl_status op_release_reported(zkl_op *op)
{
    zkl_status st;
    for (int i = 0; (st = zkl_op_release(op)) == ZKL_EBUSY && i < 1000; i++)
        zkt_sleep_ms(2);
    return st;
}

/* Wait for r's report (dispatching if the client delivers through its descriptor). */
static void report_wait(zkl_client *c, struct report *r, bool fd, long n)
{
    int64_t end = zkt_now_ms() + 20000;
    while (!reported(r) && zkt_now_ms() < end) {
        if (fd)
            short_or_ok(zkl_client_dispatch(c, NULL), "zkl_client_dispatch", n);
        zkt_sleep_ms(2);
    }
    cr_assert_eq(atomic_load(&r->calls), 1, WHAT " %ld failing: %d reports", n,
                 atomic_load(&r->calls));
}

/* An async wait for path behind a blocking holder, reported on the worker
 * or (fd) through the descriptor; cancel: canceled once in line. */
static void async_wait(zkl_client *c, zkl_mutex *holder, const char *path, bool fd, bool cancel,
                       long n)
{
    zkl_mutex *m = mutex_made(c, path, n);
    struct report r = {0};
    zkl_op *op = NULL;
    zkl_status st = m ? ZKL_OK : ZKL_ENOMEM;
    int64_t token;
    bool held = false;
    if (st == ZKL_OK && holder)
        held = (st = zkl_mutex_acquire(holder, 10000)) == ZKL_OK;
    short_or_ok(st, "zkl_mutex_acquire (holder)", n);
    if (m)
        short_or_ok(st = zkl_mutex_acquire_async(m, 10000, on_report, &r, &op),
                    "zkl_mutex_acquire_async", n);
    if (m && st == ZKL_OK) {
        zkt_sleep_ms(30); /* in line behind the holder */
        if (cancel)
            cr_assert(zkl_op_cancel(op) == ZKL_OK || zkl_op_cancel(op) == ZKL_EBUSY);
        if (held)
            short_or_ok(zkl_mutex_release(holder), "zkl_mutex_release (holder)", n);
        held = false;
        report_wait(c, &r, fd, n);
        if (r.st != ZKL_ECANCELED)
            cr_assert(r.st == ZKL_OK || ((r.st == ZKL_ENOMEM || r.st == ZKL_ESYS) && r.msg[0]),
                      WHAT " %ld failing: the async acquire gave %s (%s)", n, zkl_strerror(r.st),
                      r.msg);
        if (r.st == ZKL_OK)
            short_or_ok(zkl_op_fencing_token(op, &token), "zkl_op_fencing_token", n);
        short_or_ok(op_release_reported(op), "zkl_op_release", n);
    }
    if (held)
        short_or_ok(zkl_mutex_release(holder), "zkl_mutex_release (holder)", n);
    mutex_done(m, n);
}

/* An async multilock of two mutexes (paths path-a and path-b), taken and let go. */
static void async_set(zkl_client *c, const char *path, long n)
{
    char pa[300], pb[300];
    zkl_mutex *ma, *mb;
    zkl_multilock *ml = NULL;
    struct report r = {0};
    zkl_op *op;
    zkl_status st;
    snprintf(pa, sizeof pa, "%s-a", path);
    snprintf(pb, sizeof pb, "%s-b", path);
    ma = mutex_made(c, pa, n);
    mb = mutex_made(c, pb, n);
    if (!ma || !mb) { /* (checked in mutex_made) */
        mutex_done(ma, n);
        mutex_done(mb, n);
        return;
    }
    st = zkl_multilock_create(&ml);
    short_or_ok(st, "zkl_multilock_create", n);
    if (st == ZKL_OK) {
        if ((st = zkl_multilock_add_mutex(ml, ma)) == ZKL_OK)
            st = zkl_multilock_add_mutex(ml, mb);
        short_or_ok(st, "zkl_multilock_add_mutex", n);
    }
    if (st == ZKL_OK)
        short_or_ok(st = zkl_multilock_acquire_async(ml, 10000, on_report, &r, &op),
                    "zkl_multilock_acquire_async", n);
    if (st == ZKL_OK) {
        report_wait(c, &r, false, n);
        cr_assert(r.st == ZKL_OK || ((r.st == ZKL_ENOMEM || r.st == ZKL_ESYS) && r.msg[0]),
                  WHAT " %ld failing: the async multilock gave %s (%s)", n, zkl_strerror(r.st),
                  r.msg);
        short_or_ok(op_release_reported(op), "zkl_op_release", n);
    }
    if (ml)
        cr_assert_eq(zkl_multilock_destroy(ml), ZKL_OK, "%s", zkl_errmsg());
    mutex_done(ma, n);
    mutex_done(mb, n);
}

/* A report that also lets the handle go, from inside the callback. */
static void on_report_release(zkl_op *op, zkl_status st, const char *msg, void *ud)
{
    /* first: once reported, the mutex is destroyed (its handle must be let go);
     * ZKL_ELOST is as good: the handle is freed either way, msg when we return */
    zkl_op_release(op);
    on_report(op, st, msg, ud);
}

/*
 * A short line of LINE async waits on one path behind the holder, started
 * back to back: the later ones join the listing after the first's
 * (requests/pending.c), so its failures (a joiner's, the next listing's send)
 * are among those failed in turn. Each grant releases from its callback.
 */
#define LINE 3
static void async_line(zkl_client *c, zkl_mutex *holder, const char *path, long n)
{
    zkl_mutex *m[LINE];
    struct report r[LINE];
    zkl_op *op;
    bool held = false;
    int i;
    memset(r, 0, sizeof r);
    if (holder)
        short_or_ok(zkl_mutex_acquire(holder, 10000), "zkl_mutex_acquire (holder)", n);
    held = holder && zkl_mutex_is_held(holder);
    for (i = 0; i < LINE; i++) {
        zkl_status st = (m[i] = mutex_made(c, path, n)) ? ZKL_OK : ZKL_ENOMEM;
        if (m[i])
            short_or_ok(st = zkl_mutex_acquire_async(m[i], 10000, on_report_release, &r[i], &op),
                        "zkl_mutex_acquire_async", n);
        if (st != ZKL_OK)
            atomic_store(&r[i].calls, 1); /* no wait, no report (r[i].st stays ZKL_OK) */
    }
    zkt_sleep_ms(30); /* in line behind the holder */
    if (held)
        short_or_ok(zkl_mutex_release(holder), "zkl_mutex_release (holder)", n);
    for (i = 0; i < LINE; i++) {
        report_wait(c, &r[i], false, n);
        cr_assert(r[i].st == ZKL_OK ||
                      ((r[i].st == ZKL_ENOMEM || r[i].st == ZKL_ESYS) && r[i].msg[0]),
                  WHAT " %ld failing: wait %d of the line gave %s (%s)", n, i,
                  zkl_strerror(r[i].st), r[i].msg);
    }
    for (i = 0; i < LINE; i++)
        mutex_done(m[i], n);
}

/* Async waits: delivered on the worker, a short line, then through the descriptor with a cancel. */
static void async_cycle(zkl_client *c, const char *path, long n)
{
    zkl_mutex *holder = mutex_made(c, path, n);
    int fd;
    zkl_status st;
    async_set(c, path, n);
    async_wait(c, holder, path, false, false, n);
    async_line(c, holder, path, n);
    st = zkl_client_event_fd(c, &fd);
    short_or_ok(st, "zkl_client_event_fd", n);
    if (st == ZKL_OK)
        async_wait(c, holder, path, true, true, n);
    mutex_done(holder, n);
}

/* Under a chroot that does not exist yet (the client's connect string ends
 * in path + "/root", made again in every run): an async acquire, whose
 * chroot job runs on the worker, then the blocking cycle. */
static void chroot_cycle(zkl_client *c, long n)
{
    async_wait(c, NULL, "/m", false, false, n);
    mutex_cycle(c, "/m", n);
}

/* A create and a delete of node item, in w[0..2). */
static void made_and_gone(zkl_write *w, const char *item)
{
    memset(w, 0, 2 * sizeof *w);
    w[0].type = ZKL_WRITE_CREATE;
    w[0].path = item;
    w[1].type = ZKL_WRITE_DELETE;
    w[1].path = item;
    w[1].version = ZKL_ANY_VERSION;
}

static void on_written(zkl_status st, size_t failed, const char *msg, void *ud)
{
    (void)failed;
    on_report(NULL, st, msg, ud);
}

/* The same through an async handle's hold of path-h, the answer on the worker. */
static void guarded_async_cycle(zkl_client *c, const char *path, long n)
{
    char lock[300], item[400];
    zkl_mutex *m;
    struct report r = {0}, a = {0};
    zkl_op *op = NULL;
    zkl_write w[2];
    zkl_status st;
    snprintf(lock, sizeof lock, "%s-h", path);
    snprintf(item, sizeof item, "%s-item-async", path);
    made_and_gone(w, item);
    st = (m = mutex_made(c, lock, n)) ? ZKL_OK : ZKL_ENOMEM;
    if (m)
        short_or_ok(st = zkl_mutex_acquire_async(m, 10000, on_report, &r, &op),
                    "zkl_mutex_acquire_async", n);
    if (m && st == ZKL_OK) {
        report_wait(c, &r, false, n);
        cr_assert(r.st == ZKL_OK || ((r.st == ZKL_ENOMEM || r.st == ZKL_ESYS) && r.msg[0]),
                  WHAT " %ld failing: the async acquire gave %s (%s)", n, zkl_strerror(r.st),
                  r.msg);
        if (r.st == ZKL_OK)
            short_or_ok(st = zkl_op_guarded_write_async(op, w, 2, NULL, on_written, &a),
                        "zkl_op_guarded_write_async", n);
        if (r.st == ZKL_OK && st == ZKL_OK) {
            report_wait(c, &a, false, n);
            cr_assert(a.st == ZKL_OK || ((a.st == ZKL_ENOMEM || a.st == ZKL_ESYS) && a.msg[0]),
                      WHAT " %ld failing: the async guarded write gave %s (%s)", n,
                      zkl_strerror(a.st), a.msg);
        }
        short_or_ok(op_release_reported(op), "zkl_op_release", n);
    }
    mutex_done(m, n);
}

/* A guarded transaction while a mutex is held: a create and a delete of one
 * node beside the lock path, behind the check of the lock node; then the
 * same without waiting, through an async handle's hold. */
static void guarded_cycle(zkl_client *c, const char *path, long n)
{
    zkl_mutex *m = mutex_made(c, path, n);
    zkl_status st = m ? zkl_mutex_acquire(m, 10000) : ZKL_ENOMEM;
    char item[400];
    zkl_write w[2];
    snprintf(item, sizeof item, "%s-item", path);
    made_and_gone(w, item);
    if (m)
        short_or_ok(st, "zkl_mutex_acquire", n);
    if (st == ZKL_OK)
        short_or_ok(zkl_mutex_guarded_write(m, w, 2, NULL), "zkl_mutex_guarded_write", n);
    mutex_done(m, n);
    guarded_async_cycle(c, path, n);
}

static void on_lead(zkl_latch *l, zkl_leader_event ev, int64_t token, void *ud)
{
    (void)l;
    (void)ev;
    (void)token;
    atomic_fetch_add((atomic_int *)ud, 1);
}

/* A latch that leads (await, token, node), while a second waits behind it;
 * the first leaves telling its callback, the second leads, both go. */
static void latch_cycle(zkl_client *c, const char *path, long n)
{
    zkl_latch *l = NULL, *next = NULL;
    atomic_int told = 0;
    zkl_status st;
    int64_t token;
    char *node;
    short_or_ok(st = zkl_latch_create(c, path, "first", &l), "zkl_latch_create", n);
    if (st != ZKL_OK)
        return;
    short_or_ok(st = zkl_latch_start(l, on_lead, &told), "zkl_latch_start", n);
    if (st == ZKL_OK)
        short_or_ok(st = zkl_latch_await(l, 10000), "zkl_latch_await", n);
    if (st == ZKL_OK) {
        short_or_ok(zkl_latch_token(l, &token), "zkl_latch_token", n);
        if ((st = zkl_latch_node(l, &node)) == ZKL_OK)
            free(node);
        short_or_ok(st, "zkl_latch_node", n);
        short_or_ok(st = zkl_latch_create(c, path, "next", &next), "zkl_latch_create", n);
        if (st == ZKL_OK)
            short_or_ok(st = zkl_latch_start(next, NULL, NULL), "zkl_latch_start", n);
        short_or_ok(zkl_latch_leave(l, ZKL_LATCH_NOTIFY), "zkl_latch_leave", n);
        if (st == ZKL_OK)
            short_or_ok(zkl_latch_await(next, 10000), "zkl_latch_await (next)", n);
    }
    if (next)
        cr_assert_eq(zkl_latch_destroy(next), ZKL_OK, "%s", zkl_errmsg());
    cr_assert_eq(zkl_latch_destroy(l), ZKL_OK, "%s", zkl_errmsg());
}

/* path + "/root", the CHROOT kind's chroot. */
static void chroot_of(char *buf, size_t size, const char *path)
{
    snprintf(buf, size, "%s/root", path);
}

/*
 * One client: open, one recipe's cycle, drain, close. Returns how many
 * calls of the failing kind zklock made meanwhile.
 */
static long scenario(const char *path, enum kind k, long fail_at)
{
    zkl_client_options o;
    zkl_client *c = NULL;
    zkl_status st;
    char connect[1400], root[400];
    chroot_of(root, sizeof root, path);
    snprintf(connect, sizeof connect, "%s%s", zkt_servers(), k == CHROOT ? root : "");
    zkl_client_options_init(&o);
    o.connect_timeout_ms = 10000;
    zkt_countdown_reset(FAULTS);
    zkt_countdown_arm(FAULTS, fail_at);
    st = zkl_client_open(connect, &o, &c);
    short_or_ok(st, "zkl_client_open", fail_at);
    if (st != ZKL_OK)
        goto out;
    if (k == MUTEX)
        mutex_cycle(c, path, fail_at);
    else if (k == RWLOCK)
        rwlock_cycle(c, path, fail_at);
    else if (k == SEMAPHORE)
        semaphore_cycle(c, path, fail_at);
    else if (k == MULTILOCK)
        multilock_cycle(c, path, fail_at);
    else if (k == REVOKE)
        revoke_cycle(c, path, fail_at);
    else if (k == CONTENDED || k == SEM_CONTENDED)
        contended_cycle(c, path, fail_at, k == SEM_CONTENDED);
    else if (k == ASYNC)
        async_cycle(c, path, fail_at);
    else if (k == LONG_LINE)
        long_line_cycle(c, path, fail_at);
    else if (k == CHROOT)
        chroot_cycle(c, fail_at);
    else if (k == GUARDED)
        guarded_cycle(c, path, fail_at);
    else if (k == LATCH)
        latch_cycle(c, path, fail_at);
    else
        resession_cycle(c, path, fail_at);
    /* a delete that could not be queued goes with the session: drain may
     * find nothing to wait for, or time out only if the server is gone */
    short_or_ok(zkl_client_drain(c, 10000), "zkl_client_drain", fail_at);
    cr_assert_eq(zkl_client_close(c), ZKL_OK, "%s", zkl_errmsg());
out:
    zkt_countdown_arm(FAULTS, 0);
    return zkt_countdown_seen(FAULTS);
}

/* Nodes under path once settled (a path that is gone has none). */
static int nodes_under(zhandle_t *zh, const char *path)
{
    int n = zkt_children_settle(zh, path, 0);
    return n > 0 ? n : 0;
}

static int nodes_under2(zhandle_t *zh, const char *path, const char *a, const char *b)
{
    char pa[300], pb[300];
    snprintf(pa, sizeof pa, "%s/%s", path, a);
    snprintf(pb, sizeof pb, "%s/%s", path, b);
    return nodes_under(zh, pa) + nodes_under(zh, pb);
}

/* Nodes left under a recipe's path (the semaphore's under its two parents). */
static int left_behind(zhandle_t *zh, const char *path, enum kind k)
{
    if (k == SEMAPHORE || k == SEM_CONTENDED)
        return nodes_under2(zh, path, "leases", "locks");
    if (k == ASYNC) { /* the lock path, and the set's two beside it */
        char pa[300], pb[300];
        snprintf(pa, sizeof pa, "%s-a", path);
        snprintf(pb, sizeof pb, "%s-b", path);
        return nodes_under(zh, path) + nodes_under(zh, pa) + nodes_under(zh, pb);
    }
    if (k == CHROOT) { /* the lock's nodes; then the chroot goes, for the next run to make */
        char root[400], m[420];
        int n;
        chroot_of(root, sizeof root, path);
        snprintf(m, sizeof m, "%s/m", root);
        n = nodes_under(zh, m);
        (void)zoo_delete(zh, m, -1);
        (void)zoo_delete(zh, root, -1);
        (void)zoo_delete(zh, path, -1);
        return n;
    }
    if (k == GUARDED) { /* the lock path, and the async hold's beside it */
        char ph[300];
        snprintf(ph, sizeof ph, "%s-h", path);
        return nodes_under(zh, path) + nodes_under(zh, ph);
    }
    if (k == LONG_LINE) /* the other session's line stays */
        return zkt_children_settle(zh, path, LINE_NODES) - LINE_NODES;
    if (k == MULTILOCK) /* under each member's path */
        return nodes_under2(zh, path, "m", "r") + nodes_under2(zh, path, "s/leases", "s/locks");
    return nodes_under(zh, path);
}

static void fail_each(enum kind k, const char *what)
{
    zhandle_t *zh = zkt_raw();
    char *path = zkt_path(what);
    long total, n;
    int unfailed = 0, i;
    for (i = 0; k == LONG_LINE && i < LINE_NODES; i++) {
        char node[400];
        snprintf(node, sizeof node, "%s/_c_00000000-0000-4000-8000-000000000000-lock-", path);
        cr_assert_eq(i ? ZOK : zkt_make_path(zh, path, ZOO_CONTAINER), ZOK);
        cr_assert_eq(
            zoo_create(zh, node, "", 0, &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL_SEQUENTIAL, NULL, 0),
            ZOK);
    }
    /* a run with no failure (fail_at beyond any count) counts the calls */
    total = scenario(path, k, 1L << 40);
    cr_assert_gt(total, MIN_CALLS, "the wrappers saw %ld calls", total);
#ifndef ZKT_FAIL_SENDS
    if (k == LONG_LINE)
        cr_assert_gt(zkt_oom_maps_made, 0, "the listing of %d nodes was not mapped", LINE_NODES);
#endif
    for (n = 1; n <= total + 20 && unfailed < 3; n++) {
        scenario(path, k, n);
        cr_assert_leq(left_behind(zh, path, k), 0, WHAT " %ld failing left a node", n);
#ifndef ZKT_FAIL_SENDS
        cr_assert_eq(zkt_oom_maps_live, 0, WHAT " %ld failing left a mapping", n);
#endif
        /* threads make the count vary a little: stop after a few runs that
         * needed no failure */
        unfailed = zkt_countdown_failed(FAULTS) ? 0 : unfailed + 1;
    }
    cr_log_info("%s: %ld " WHAT "s per cycle; each failed in turn", what, total);
    zookeeper_close(zh);
    free(path);
}

Test(SUITE, mutex_cycle, .timeout = 600)
{
    fail_each(MUTEX, PREFIX "-mutex");
}

Test(SUITE, rwlock_cycle, .timeout = 600)
{
    fail_each(RWLOCK, PREFIX "-rwlock");
}

Test(SUITE, semaphore_cycle, .timeout = 600)
{
    fail_each(SEMAPHORE, PREFIX "-semaphore");
}

Test(SUITE, multilock_cycle, .timeout = 600)
{
    fail_each(MULTILOCK, PREFIX "-multilock");
}

Test(SUITE, around_a_session_expiry, .timeout = 600)
{
    fail_each(RESESSION, PREFIX "-resession");
}

Test(SUITE, revocation_and_inspection_cycle, .timeout = 600)
{
    fail_each(REVOKE, PREFIX "-revoke");
}

Test(SUITE, contended_cycle, .timeout = 600)
{
    fail_each(CONTENDED, PREFIX "-contended");
}

Test(SUITE, contended_semaphore_cycle, .timeout = 600)
{
    fail_each(SEM_CONTENDED, PREFIX "-semaphore-contended");
}

Test(SUITE, chroot_cycle, .timeout = 600)
{
    fail_each(CHROOT, PREFIX "-chroot");
}

Test(SUITE, guarded_cycle, .timeout = 600)
{
    fail_each(GUARDED, PREFIX "-guarded");
}

Test(SUITE, latch_cycle, .timeout = 600)
{
    fail_each(LATCH, PREFIX "-latch");
}

Test(SUITE, async_cycle, .timeout = 600)
{
    fail_each(ASYNC, PREFIX "-async");
}

#ifndef ZKT_FAIL_SENDS /* the mapping of a long listing; its requests are mutex_cycle's */
Test(SUITE, behind_a_long_line, .timeout = 600)
{
    fail_each(LONG_LINE, PREFIX "-long-line");
}
#endif
