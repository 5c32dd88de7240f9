/*
 * test_multilock.c - all or none: a set with one member held elsewhere times
 * out holding nothing and leaving no znode; a free set is taken and released
 * in full; read members; no new member while the set is held; a set lost
 * with its session says so on release, naming a member, and is taken again.
 */
#include <criterion/criterion.h>
#include <pthread.h>
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

/* Issue 57, item 5 (Curator's TestInterProcessMultiMutex.testSomeReleasesFail):
 * the thread that acquired a set lets one member go by hand, then releases
 * the set: every member it still holds is released, and the first failure
 * is returned. On 65709ca the release refused and kept member 2 held. */
/* A set of two mutexes on c at p1 and p2, taken by the calling thread. */
static zkl_multilock *two_taken(zkl_client *c, const char *p1, const char *p2, zkl_mutex **m1,
                                zkl_mutex **m2)
{
    zkl_multilock *ml;
    ok(zkl_mutex_create(c, p1, m1), "create");
    ok(zkl_mutex_create(c, p2, m2), "create");
    ok(zkl_multilock_create(&ml), "create set");
    ok(zkl_multilock_add_mutex(ml, *m1), "add");
    ok(zkl_multilock_add_mutex(ml, *m2), "add");
    ok(zkl_multilock_acquire(ml, 5000), "the set");
    return ml;
}

Test(multilock, some_releases_fail, .timeout = 60)
{
    zkl_client *a = zkt_client(0), *b = zkt_client(0);
    char *p1 = zkt_path("mlf1"), *p2 = zkt_path("mlf2");
    zkl_mutex *m1, *m2, *other;
    zkl_multilock *ml = two_taken(a, p1, p2, &m1, &m2);
    ok(zkl_mutex_create(b, p2, &other), "create");
    ok(zkl_mutex_release(m1), "member 1 by hand");
    cr_assert_eq(zkl_multilock_release(ml), ZKL_ENOTOWNER, "member 1's release fails");
    cr_assert(strstr(zkl_errmsg(), "member 1"), "%s", zkl_errmsg());
    cr_assert_not(zkl_mutex_is_held(m2), "member 2 must be released all the same");
    ok(zkl_mutex_acquire(other, 5000), "another client takes member 2");
    ok(zkl_mutex_release(other), "release");
    cr_assert_eq(zkl_multilock_release(ml), ZKL_ENOTOWNER, "released once, in full");
    ok(zkl_multilock_destroy(ml), "destroy set");
    ok(zkl_mutex_destroy(m1), "destroy");
    ok(zkl_mutex_destroy(m2), "destroy");
    ok(zkl_mutex_destroy(other), "destroy");
    ok(zkl_client_close(a), "close");
    ok(zkl_client_close(b), "close");
    free(p1);
    free(p2);
}

static void *release_elsewhere(void *arg)
{
    return (void *)(intptr_t)zkl_multilock_release(arg);
}

/* A thread that never acquired the set: refused, and nothing changes. */
Test(multilock, a_foreign_thread_release_changes_nothing, .timeout = 60)
{
    zkl_client *a = zkt_client(0);
    char *p1 = zkt_path("mlx1"), *p2 = zkt_path("mlx2");
    zkl_mutex *m1, *m2;
    zkl_multilock *ml = two_taken(a, p1, p2, &m1, &m2);
    pthread_t t;
    void *rc;
    cr_assert_eq(pthread_create(&t, NULL, release_elsewhere, ml), 0);
    pthread_join(t, &rc);
    cr_assert_eq((zkl_status)(intptr_t)rc, ZKL_ENOTOWNER);
    cr_assert(zkl_mutex_is_held(m1) && zkl_mutex_is_held(m2), "nothing changed");
    ok(zkl_multilock_release(ml), "the acquiring thread releases it");
    cr_assert_not(zkl_mutex_is_held(m1) || zkl_mutex_is_held(m2));
    ok(zkl_multilock_destroy(ml), "destroy set");
    ok(zkl_mutex_destroy(m1), "destroy");
    ok(zkl_mutex_destroy(m2), "destroy");
    ok(zkl_client_close(a), "close");
    free(p1);
    free(p2);
}
