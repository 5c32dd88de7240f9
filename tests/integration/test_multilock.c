/*
 * test_multilock.c - all or none: a set with one member held elsewhere times
 * out holding nothing and leaving no znode; a free set is taken and released
 * in full; read members; no new member while the set is held; a set lost
 * with its session says so on release, naming a member, and is taken again.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "zkt.h"

Test(multilock, all_or_none, .timeout = 60)
{
    zkl_client *a = zkt_client(0), *b = zkt_client(0);
    zhandle_t *zh = zkt_raw();
    char *p1 = zkt_path("ml1"), *p2 = zkt_path("ml2"), *p3 = zkt_path("ml3"), sem[300];
    zkl_mutex *m1;
    zkl_rwlock *other;
    zkl_rwlock *rw;
    zkl_semaphore_mutex *sm;
    zkl_multilock *ml;
    int64_t t0, took;
    ok(zkl_mutex_create(a, p1, &m1), "create");
    ok(zkl_rwlock_create(a, p2, &rw), "create");
    ok(zkl_semaphore_mutex_create(a, p3, &sm), "create");
    ok(zkl_rwlock_create(b, p2, &other), "create");
    ok(zkl_multilock_create(&ml), "create set");
    cr_assert_eq(zkl_multilock_acquire(ml, 0), ZKL_EINVAL, "empty set");
    ok(zkl_multilock_add_mutex(ml, m1), "add");
    ok(zkl_multilock_add_write(ml, rw), "add");
    ok(zkl_multilock_add_semaphore_mutex(ml, sm), "add");
    cr_assert_eq(zkl_multilock_add_mutex(ml, NULL), ZKL_EINVAL);

    /* b reads the rwlock: a writer there must wait for it */
    ok(zkl_rwlock_read_acquire(other, 5000), "b blocks the second member");
    t0 = zkt_now_ms();
    cr_assert_eq(zkl_multilock_acquire(ml, 800), ZKL_ETIMEDOUT);
    took = zkt_now_ms() - t0;
    /* the failure's own message, not the first member's release (which
     * clears the thread's message) */
    cr_assert(strstr(zkl_errmsg(), "member 2 of 3: timed out"), "%s", zkl_errmsg());
    cr_assert_lt(took, 3000, "one deadline for the whole set: took %lld ms", (long long)took);
    cr_assert_not(zkl_mutex_is_held(m1), "the first member must have been released");
    cr_assert_not(zkl_rwlock_write_is_held(rw));
    cr_assert_not(zkl_semaphore_mutex_is_held(sm));
    ok(zkl_client_drain(a, 5000), "drain");
    cr_assert_eq(zkt_children_settle(zh, p1, 0), 0, "no node left on the first member");
    cr_assert_eq(zkt_children_settle(zh, p2, 1), 1, "only b's node on the second");
    snprintf(sem, sizeof sem, "%s/leases", p3);
    cr_assert_eq(zkt_children_settle(zh, sem, 0), 0);
    cr_assert_eq(zkl_multilock_release(ml), ZKL_ENOTOWNER);

    ok(zkl_rwlock_read_release(other), "b lets go");
    ok(zkl_multilock_acquire(ml, 5000), "the whole set");
    cr_assert(zkl_mutex_is_held(m1) && zkl_rwlock_write_is_held(rw) &&
              zkl_semaphore_mutex_is_held(sm));
    cr_assert_eq(zkl_multilock_destroy(ml), ZKL_EBUSY);
    ok(zkl_multilock_release(ml), "release all");
    cr_assert_not(zkl_mutex_is_held(m1) || zkl_rwlock_write_is_held(rw) ||
                  zkl_semaphore_mutex_is_held(sm));
    ok(zkl_multilock_destroy(ml), "destroy set");
    ok(zkl_mutex_destroy(m1), "destroy");
    ok(zkl_rwlock_destroy(rw), "destroy");
    ok(zkl_semaphore_mutex_destroy(sm), "destroy");
    ok(zkl_rwlock_destroy(other), "destroy");
    ok(zkl_client_close(a), "close");
    ok(zkl_client_close(b), "close");
    zookeeper_close(zh);
    free(p1);
    free(p2);
    free(p3);
}

/* Read members share with other readers and keep writers out until the set
 * is released; a held set takes no new member. Five members: more than the
 * set's first allocation. */
Test(multilock, read_members_and_no_changes_while_held, .timeout = 60)
{
    enum { N = 5 };
    zkl_client *a = zkt_client(0), *b = zkt_client(0);
    char *p[N], *px = zkt_path("mlx");
    zkl_rwlock *rw[N], *other;
    zkl_mutex *extra;
    zkl_multilock *ml;
    int i;
    ok(zkl_multilock_create(&ml), "create set");
    for (i = 0; i < N; i++) {
        p[i] = zkt_path("mlr");
        ok(zkl_rwlock_create(a, p[i], &rw[i]), "create");
        ok(zkl_multilock_add_read(ml, rw[i]), "add");
    }
    ok(zkl_mutex_create(a, px, &extra), "create");
    ok(zkl_multilock_acquire(ml, 5000), "the set");
    for (i = 0; i < N; i++)
        cr_assert(zkl_rwlock_read_is_held(rw[i]), "member %d", i);
    cr_assert_eq(zkl_multilock_add_mutex(ml, extra), ZKL_EBUSY);
    cr_assert(strstr(zkl_errmsg(), "acquired"), "%s", zkl_errmsg());

    ok(zkl_rwlock_create(b, p[N - 1], &other), "create");
    ok(zkl_rwlock_read_acquire(other, 5000), "another reader shares a member");
    ok(zkl_rwlock_read_release(other), "release");
    cr_assert_eq(zkl_rwlock_write_acquire(other, 300), ZKL_ETIMEDOUT,
                 "a writer waits for the set's readers");
    ok(zkl_multilock_release(ml), "release the set");
    ok(zkl_rwlock_write_acquire(other, 5000), "the writer gets in after it");
    ok(zkl_rwlock_write_release(other), "release");
    ok(zkl_multilock_add_mutex(ml, extra), "a released set takes members again");

    ok(zkl_multilock_destroy(ml), "destroy set");
    for (i = 0; i < N; i++) {
        ok(zkl_rwlock_destroy(rw[i]), "destroy");
        free(p[i]);
    }
    ok(zkl_rwlock_destroy(other), "destroy");
    ok(zkl_mutex_destroy(extra), "destroy");
    ok(zkl_client_close(a), "close");
    ok(zkl_client_close(b), "close");
    free(px);
}

/* The session ends under a held set: release reports the loss (naming the
 * first member that failed, the last one added) and lets go of every member;
 * the set can be taken again in the next session, and no node is left. */
Test(multilock, lost_with_its_session, .timeout = 60)
{
    zkl_client *a = zkt_client(4000);
    zhandle_t *zh = zkt_raw();
    char *p1 = zkt_path("mll1"), *p2 = zkt_path("mll2"), leases[300];
    zkl_mutex *m;
    zkl_semaphore_mutex *sm;
    zkl_multilock *ml;
    snprintf(leases, sizeof leases, "%s/leases", p2);
    ok(zkl_mutex_create(a, p1, &m), "create");
    ok(zkl_semaphore_mutex_create(a, p2, &sm), "create");
    ok(zkl_multilock_create(&ml), "create set");
    ok(zkl_multilock_add_mutex(ml, m), "add");
    ok(zkl_multilock_add_semaphore_mutex(ml, sm), "add");
    ok(zkl_multilock_acquire(ml, 5000), "the set");
    zkt_expire_seen(a);
    cr_assert_not(zkl_mutex_is_held(m) || zkl_semaphore_mutex_is_held(sm),
                  "a lost set reads as not held");
    cr_assert_eq(zkl_multilock_release(ml), ZKL_ELOST);
    cr_assert(strstr(zkl_errmsg(), "member 2: "), "%s", zkl_errmsg());
    cr_assert_eq(zkl_multilock_release(ml), ZKL_ENOTOWNER, "released once, in full");
    cr_assert_eq(zkt_children_settle(zh, p1, 0), 0, "the nodes went with the session");
    cr_assert_eq(zkt_children_settle(zh, leases, 0), 0);

    ok(zkl_multilock_acquire(ml, 15000), "the set again, in the next session");
    cr_assert(zkl_mutex_is_held(m) && zkl_semaphore_mutex_is_held(sm));
    ok(zkl_multilock_release(ml), "release");
    ok(zkl_client_drain(a, 5000), "drain");
    cr_assert_eq(zkt_children_settle(zh, p1, 0), 0);
    cr_assert_eq(zkt_children_settle(zh, leases, 0), 0);
    ok(zkl_multilock_destroy(ml), "destroy set");
    ok(zkl_mutex_destroy(m), "destroy");
    ok(zkl_semaphore_mutex_destroy(sm), "destroy");
    ok(zkl_client_close(a), "close");
    zookeeper_close(zh);
    free(p1);
    free(p2);
}
