/*
 * test_revoke.c - revocation between zklock processes, and lost-lock notices
 * on the lock objects themselves.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "zkt.h"

static atomic_int revoked;
static void *revoked_lock;

static void on_revoke(void *lock, void *ud)
{
    (void)ud;
    revoked_lock = lock;
    atomic_store(&revoked, 1);
}

static int flag(void *p)
{
    return atomic_load((atomic_int *)p);
}

Test(revoke, holder_is_asked_and_releases, .timeout = 60)
{
    zkl_client *holder = zkt_client(0), *asker = zkt_client(0);
    zhandle_t *zh = zkt_raw();
    char *path = zkt_path("revoke"), **v, *node;
    zkl_mutex *m, *other;
    size_t n;
    char data[32];
    int len = sizeof data;
    atomic_store(&revoked, 0);
    ok(zkl_mutex_create(holder, path, &m), "create");
    ok(zkl_mutex_create(asker, path, &other), "create");
    ok(zkl_mutex_make_revocable(m, on_revoke, NULL), "revocable");
    ok(zkl_mutex_acquire(m, 5000), "acquire");
    ok(zkl_mutex_node(m, &node), "node");
    cr_assert_eq(zoo_get(zh, node, 0, data, &len, NULL), ZOK);
    cr_assert_eq(len, 0, "a revocable node carries no data (Curator)");
    /* the asker finds the holder and asks */
    ok(zkl_mutex_participants(other, &v, &n), "participants");
    cr_assert_eq(n, 1);
    cr_assert_str_eq(v[0], node);
    ok(zkl_revoke(asker, v[0]), "revoke");
    zkl_strings_free(v, n);
    cr_assert(zkt_wait_for(flag, &revoked, 10000), "the holder's callback never ran");
    cr_assert_eq(revoked_lock, m);
    len = sizeof data;
    cr_assert_eq(zoo_get(zh, node, 0, data, &len, NULL), ZOK);
    cr_assert_eq(len, 10);
    cr_assert_eq(memcmp(data, "__REVOKE__", 10), 0);
    ok(zkl_mutex_release(m), "the holder agrees and releases");
    ok(zkl_mutex_acquire(other, 5000), "the asker gets it");
    ok(zkl_mutex_release(other), "release");
    ok(zkl_revoke(asker, node), "revoking a released node is fine");
    cr_assert_eq(zkl_revoke(asker, "relative"), ZKL_EBADPATH);
    cr_assert_eq(zkl_revoke(NULL, node), ZKL_EINVAL);
    free(node);
    ok(zkl_mutex_destroy(m), "destroy");
    ok(zkl_mutex_destroy(other), "destroy");
    ok(zkl_client_close(holder), "close");
    ok(zkl_client_close(asker), "close");
    zookeeper_close(zh);
    free(path);
}

Test(revoke, other_data_changes_do_not_revoke, .timeout = 30)
{
    zkl_client *c = zkt_client(0);
    zhandle_t *zh = zkt_raw();
    char *path = zkt_path("norevoke"), *node;
    zkl_mutex *m;
    atomic_store(&revoked, 0);
    ok(zkl_mutex_create(c, path, &m), "create");
    ok(zkl_mutex_make_revocable(m, on_revoke, NULL), "revocable");
    ok(zkl_mutex_acquire(m, 5000), "acquire");
    ok(zkl_mutex_node(m, &node), "node");
    cr_assert_eq(zoo_set(zh, node, "hello", 5, -1), ZOK);
    zkt_sleep_ms(500);
    cr_assert_not(atomic_load(&revoked), "only the exact marker revokes");
    cr_assert_eq(zoo_set(zh, node, "__REVOKE__", 10, -1), ZOK);
    cr_assert(zkt_wait_for(flag, &revoked, 10000), "the watch was not re-armed after a change");
    ok(zkl_mutex_release(m), "release");
    free(node);
    ok(zkl_mutex_destroy(m), "destroy");
    ok(zkl_client_close(c), "close");
    zookeeper_close(zh);
    free(path);
}

/* ---- lost-lock notices ---- */

struct notices {
    atomic_int lost, suspended;
};

static void on_hold_state(void *lock, zkl_conn_state st, void *ud)
{
    struct notices *n = ud;
    (void)lock;
    if (st == ZKL_STATE_LOST)
        atomic_fetch_add(&n->lost, 1);
    if (st == ZKL_STATE_SUSPENDED)
        atomic_fetch_add(&n->suspended, 1);
}

static char client_events[256];
static void on_client_state(zkl_client *c, zkl_conn_state st, void *ud)
{
    size_t n = strlen(client_events);
    (void)c;
    (void)ud;
    snprintf(client_events + n, sizeof client_events - n, "%s@%lld ", zkl_conn_state_name(st),
             (long long)(zkt_now_ms() % 100000));
}

static int got_lost(void *p)
{
    return atomic_load(&((struct notices *)p)->lost) > 0;
}

Test(revoke, lost_notice_on_each_recipe, .timeout = 60)
{
    zkl_client *c = zkt_client_cb(2000, on_client_state, NULL);
    char *pm = zkt_path("lostm"), *pr = zkt_path("lostr"), *ps = zkt_path("losts"),
         *pidle = zkt_path("lostidle");
    zkl_mutex *m, *idle;
    zkl_rwlock *rw;
    zkl_semaphore *s;
    zkl_lease *lease;
    struct notices nm = {0}, nr = {0}, ns = {0}, nidle = {0};
    ok(zkl_mutex_create(c, pm, &m), "create");
    ok(zkl_mutex_create(c, pidle, &idle), "create");
    ok(zkl_rwlock_create(c, pr, &rw), "create");
    ok(zkl_semaphore_create(c, ps, 2, &s), "create");
    ok(zkl_mutex_on_state(m, on_hold_state, &nm), "listen");
    ok(zkl_mutex_on_state(idle, on_hold_state, &nidle), "listen");
    ok(zkl_rwlock_on_state(rw, on_hold_state, &nr), "listen");
    ok(zkl_semaphore_on_state(s, on_hold_state, &ns), "listen");
    ok(zkl_mutex_acquire(m, 5000), "acquire");
    ok(zkl_rwlock_read_acquire(rw, 5000), "read");
    ok(zkl_semaphore_acquire(s, 5000, &lease), "lease");
    zkt_expire(c);
    cr_assert(zkt_wait_for(got_lost, &nm, 15000), "mutex: no LOST notice; client saw: %s",
              client_events);
    cr_assert(zkt_wait_for(got_lost, &nr, 5000), "rwlock: no LOST notice");
    cr_assert(zkt_wait_for(got_lost, &ns, 5000), "semaphore: no LOST notice");
    cr_assert_eq(atomic_load(&nidle.lost), 0, "a lock held by nobody is not told");
    cr_assert_not(zkl_mutex_is_held(m));
    cr_assert_not(zkl_rwlock_read_is_held(rw));
    cr_assert_not(zkl_lease_is_valid(lease));
    cr_assert_eq(zkl_mutex_release(m), ZKL_ELOST);
    cr_assert_eq(zkl_rwlock_read_release(rw), ZKL_ELOST);
    cr_assert_eq(zkl_lease_return(lease), ZKL_ELOST);
    ok(zkl_mutex_on_state(m, NULL, NULL), "stop listening");
    ok(zkl_mutex_destroy(m), "destroy");
    ok(zkl_mutex_destroy(idle), "destroy");
    ok(zkl_rwlock_destroy(rw), "destroy");
    ok(zkl_semaphore_destroy(s), "destroy");
    ok(zkl_client_close(c), "close");
    free(pm);
    free(pr);
    free(ps);
    free(pidle);
}
