/*
 * test_oom.c - running out of memory, SQLite's way: the scenario below runs
 * again and again, with zklock's Nth allocation failing in run N, until a
 * run needs no failure. Every call must then give a status (ZKL_ENOMEM or
 * ZKL_ESYS, with a message) or succeed; no crash, no hang, no leak (the
 * ASan variant checks that), no node left behind.
 *
 * The failures reach zklock's code only: this program is linked with
 * -Wl,--wrap for the allocators, which redirects the calls made from the
 * objects linked into it (zklock's static library, this file), not those
 * made inside libzookeeper_mt or libc.
 */
#include <criterion/criterion.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "oom.h"
#include "zkt.h"

/* OK, or a status that says memory or the system ran short, with a message. */
static void short_or_ok(zkl_status st, const char *what, long n)
{
    if (st == ZKL_OK)
        return;
    cr_assert(st == ZKL_ENOMEM || st == ZKL_ESYS, "allocation %ld failing: %s gave %s (%s)", n,
              what, zkl_strerror(st), zkl_errmsg());
    cr_assert_neq(zkl_errmsg()[0], '\0', "allocation %ld failing: %s gave no message", n, what);
}

enum kind { MUTEX, RWLOCK, SEMAPHORE, MULTILOCK, REVOKE, RESESSION };

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
    cr_assert(!m || !zkl_mutex_is_held(m), "allocation %ld failing: a member is still held", n);
    cr_assert(!l || !zkl_rwlock_read_is_held(l), "allocation %ld failing: a member is still held",
              n);
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
                  "allocation %ld failing: the revoke was not delivered", n);
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
        armed = zkt_oom_arm(0); /* the helper's own calls may not fail */
        zkt_expire(c);
        zkt_oom_arm(armed);
        for (i = 0; i < 500 && zkl_mutex_is_held(m); i++)
            zkt_sleep_ms(20);
        cr_assert(!zkl_mutex_is_held(m), "allocation %ld failing: a lost hold still held", n);
        st = zkl_mutex_release(m);
        cr_assert(st == ZKL_ELOST, "allocation %ld failing: releasing a lost hold gave %s", n,
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
 * One client: open, one recipe's cycle, drain, close. Returns how many
 * allocations zklock made meanwhile.
 */
static long scenario(const char *path, enum kind k, long fail_at)
{
    zkl_client_options o;
    zkl_client *c = NULL;
    zkl_status st;
    zkl_client_options_init(&o);
    o.connect_timeout_ms = 10000;
    zkt_oom_reset();
    zkt_oom_arm(fail_at);
    st = zkl_client_open(zkt_servers(), &o, &c);
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
    else
        resession_cycle(c, path, fail_at);
    /* a delete that could not be queued goes with the session: drain may
     * find nothing to wait for, or time out only if the server is gone */
    short_or_ok(zkl_client_drain(c, 10000), "zkl_client_drain", fail_at);
    cr_assert_eq(zkl_client_close(c), ZKL_OK, "%s", zkl_errmsg());
out:
    zkt_oom_arm(0);
    return zkt_oom_seen();
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
    if (k == SEMAPHORE)
        return nodes_under2(zh, path, "leases", "locks");
    if (k == MULTILOCK) /* under each member's path */
        return nodes_under2(zh, path, "m", "r") + nodes_under2(zh, path, "s/leases", "s/locks");
    return nodes_under(zh, path);
}

static void fail_each_allocation(enum kind k, const char *what)
{
    zhandle_t *zh = zkt_raw();
    char *path = zkt_path(what);
    long total, n;
    int unfailed = 0;
    /* a run with no failure (fail_at beyond any count) counts the allocations */
    total = scenario(path, k, 1L << 40);
    cr_assert_gt(total, 10, "the wrapped allocators saw %ld allocations", total);
    for (n = 1; n <= total + 20 && unfailed < 3; n++) {
        scenario(path, k, n);
        cr_assert_leq(left_behind(zh, path, k), 0, "allocation %ld failing left a node", n);
        /* threads make the count vary a little: stop after a few runs that
         * needed no failure */
        unfailed = zkt_oom_failed() ? 0 : unfailed + 1;
    }
    cr_log_info("%s: %ld allocations per cycle; each failed in turn", what, total);
    zookeeper_close(zh);
    free(path);
}

Test(oom, every_allocation_of_a_mutex_cycle_may_fail, .timeout = 600)
{
    fail_each_allocation(MUTEX, "oom-mutex");
}

Test(oom, every_allocation_of_a_rwlock_cycle_may_fail, .timeout = 600)
{
    fail_each_allocation(RWLOCK, "oom-rwlock");
}

Test(oom, every_allocation_of_a_semaphore_cycle_may_fail, .timeout = 600)
{
    fail_each_allocation(SEMAPHORE, "oom-semaphore");
}

Test(oom, every_allocation_of_a_multilock_cycle_may_fail, .timeout = 600)
{
    fail_each_allocation(MULTILOCK, "oom-multilock");
}

Test(oom, every_allocation_around_a_session_expiry_may_fail, .timeout = 600)
{
    fail_each_allocation(RESESSION, "oom-resession");
}

Test(oom, every_allocation_of_a_revocation_and_inspection_cycle_may_fail, .timeout = 600)
{
    fail_each_allocation(REVOKE, "oom-revoke");
}
