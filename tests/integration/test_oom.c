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

#include "zkt.h"

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t m);
void *__real_realloc(void *p, size_t n);
char *__real_strdup(const char *s);
char *__real_strndup(const char *s, size_t n);

static atomic_long countdown; /* 0: off; otherwise the allocation to fail, counting down */
static atomic_long seen;      /* allocations while armed */
static atomic_int failed;     /* the run's one failure happened */

static int fail_now(void)
{
    long left;
    if (atomic_load(&countdown) == 0)
        return 0;
    atomic_fetch_add(&seen, 1);
    left = atomic_fetch_sub(&countdown, 1);
    if (left == 1) {
        atomic_store(&failed, 1);
        return 1;
    }
    if (left <= 0)
        atomic_store(&countdown, 0);
    return 0;
}

void *__wrap_malloc(size_t n);
void *__wrap_malloc(size_t n)
{
    return fail_now() ? NULL : __real_malloc(n);
}

void *__wrap_calloc(size_t n, size_t m);
void *__wrap_calloc(size_t n, size_t m)
{
    return fail_now() ? NULL : __real_calloc(n, m);
}

void *__wrap_realloc(void *p, size_t n);
void *__wrap_realloc(void *p, size_t n)
{
    return fail_now() ? NULL : __real_realloc(p, n);
}

char *__wrap_strdup(const char *s);
char *__wrap_strdup(const char *s)
{
    return fail_now() ? NULL : __real_strdup(s);
}

char *__wrap_strndup(const char *s, size_t n);
char *__wrap_strndup(const char *s, size_t n)
{
    return fail_now() ? NULL : __real_strndup(s, n);
}

/* OK, or a status that says memory or the system ran short, with a message. */
static void short_or_ok(zkl_status st, const char *what, long n)
{
    if (st == ZKL_OK)
        return;
    cr_assert(st == ZKL_ENOMEM || st == ZKL_ESYS, "allocation %ld failing: %s gave %s (%s)", n,
              what, zkl_strerror(st), zkl_errmsg());
    cr_assert_neq(zkl_errmsg()[0], '\0', "allocation %ld failing: %s gave no message", n, what);
}

enum kind { MUTEX, RWLOCK, SEMAPHORE };

/* A mutex acquired twice (the second acquire carries the first release's
 * delete), with its token. */
static void mutex_cycle(zkl_client *c, const char *path, long n)
{
    zkl_mutex *m = NULL;
    zkl_status st;
    int64_t token;
    int i;
    st = zkl_mutex_create(c, path, &m);
    short_or_ok(st, "zkl_mutex_create", n);
    for (i = 0; st == ZKL_OK && i < 2; i++) {
        st = zkl_mutex_acquire(m, 10000);
        short_or_ok(st, "zkl_mutex_acquire", n);
        if (st != ZKL_OK)
            break;
        short_or_ok(zkl_mutex_fencing_token(m, &token), "zkl_mutex_fencing_token", n);
        st = zkl_mutex_release(m);
        short_or_ok(st, "zkl_mutex_release", n);
    }
    if (m) {
        if (zkl_mutex_is_held(m))
            short_or_ok(zkl_mutex_release(m), "zkl_mutex_release", n);
        cr_assert_eq(zkl_mutex_destroy(m), ZKL_OK, "%s", zkl_errmsg());
    }
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
    atomic_store(&seen, 0);
    atomic_store(&failed, 0);
    atomic_store(&countdown, fail_at);
    st = zkl_client_open(zkt_servers(), &o, &c);
    short_or_ok(st, "zkl_client_open", fail_at);
    if (st != ZKL_OK)
        goto out;
    if (k == MUTEX)
        mutex_cycle(c, path, fail_at);
    else if (k == RWLOCK)
        rwlock_cycle(c, path, fail_at);
    else
        semaphore_cycle(c, path, fail_at);
    /* a delete that could not be queued goes with the session: drain may
     * find nothing to wait for, or time out only if the server is gone */
    short_or_ok(zkl_client_drain(c, 10000), "zkl_client_drain", fail_at);
    cr_assert_eq(zkl_client_close(c), ZKL_OK, "%s", zkl_errmsg());
out:
    atomic_store(&countdown, 0);
    return atomic_load(&seen);
}

/* Nodes under path once settled (a path that is gone has none). */
static int nodes_under(zhandle_t *zh, const char *path)
{
    int n = zkt_children_settle(zh, path, 0);
    return n > 0 ? n : 0;
}

/* Nodes left under a recipe's path (the semaphore's under its two parents). */
static int left_behind(zhandle_t *zh, const char *path, enum kind k)
{
    char leases[300], locks[300];
    if (k != SEMAPHORE)
        return nodes_under(zh, path);
    snprintf(leases, sizeof leases, "%s/leases", path);
    snprintf(locks, sizeof locks, "%s/locks", path);
    return nodes_under(zh, leases) + nodes_under(zh, locks);
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
        unfailed = atomic_load(&failed) ? 0 : unfailed + 1;
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
