/*
 * test_chroot.c - a connect string whose chroot does not exist yet (issue
 * 17): the chroot is made on first use, as Curator makes its namespace node,
 * for a mutex, a semaphore mutex and a multilock, one level deep or several;
 * where it may not be made, the error names the chroot, not the lock path.
 */
#include <criterion/criterion.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "zkt.h"

/* A client on the test server with options o (NULL: the defaults), chrooted
 * at root (which need not exist). */
static zkl_client *client_with(const char *root, const zkl_client_options *o)
{
    char connect[1200];
    zkl_client *c = NULL;
    snprintf(connect, sizeof connect, "%s%s", zkt_servers(), root);
    ok(zkl_client_open(connect, o, &c), "open with a chroot");
    return c;
}

static zkl_client *client_at(const char *root)
{
    return client_with(root, NULL);
}

/* Delete path and everything under it. */
static void remove_tree(zhandle_t *zh, const char *path)
{
    struct String_vector kids = {0, NULL};
    int i;
    if (zoo_get_children(zh, path, 0, &kids) == ZOK) {
        for (i = 0; i < kids.count; i++) {
            char child[1024];
            snprintf(child, sizeof child, "%s/%s", path, kids.data[i]);
            remove_tree(zh, child);
        }
        deallocate_String_vector(&kids);
    }
    zoo_delete(zh, path, -1);
}

/* path exists as a persistent node (not a container, not ephemeral). */
static void assert_persistent(zhandle_t *zh, const char *path)
{
    struct Stat st;
    cr_assert_eq(zoo_exists(zh, path, 0, &st), ZOK, "%s was not created", path);
    cr_assert_eq(st.ephemeralOwner, 0, "%s is not a plain persistent node", path);
}

/* Each recipe under a fresh missing chroot: acquire, check, release. */
static void recipes_under(const char *suffix)
{
    zhandle_t *zh = zkt_raw();
    char *top = zkt_path("chroot");
    char root[600], inner[800];
    zkl_client *c;
    snprintf(root, sizeof root, "%s%s", top, suffix);
    cr_assert_eq(zoo_exists(zh, top, 0, NULL), ZNONODE);

    c = client_at(root);
    {
        zkl_mutex *m;
        ok(zkl_mutex_create(c, "/locks/m", &m), "mutex create");
        ok(zkl_mutex_acquire(m, 10000), "mutex acquire under a missing chroot");
        assert_persistent(zh, top);
        assert_persistent(zh, root);
        snprintf(inner, sizeof inner, "%s/locks/m", root);
        cr_assert_eq(zkt_children_settle(zh, inner, 1), 1, "the node lives under the chroot");
        ok(zkl_mutex_release(m), "release");
        ok(zkl_mutex_destroy(m), "destroy");
    }
    ok(zkl_client_close(c), "close");
    remove_tree(zh, top);

    c = client_at(root);
    {
        zkl_semaphore_mutex *sm;
        ok(zkl_semaphore_mutex_create(c, "/locks/s", &sm), "semaphore mutex create");
        ok(zkl_semaphore_mutex_acquire(sm, 10000),
           "semaphore mutex acquire under a missing chroot");
        assert_persistent(zh, root);
        ok(zkl_semaphore_mutex_release(sm), "release");
        ok(zkl_semaphore_mutex_destroy(sm), "destroy");
    }
    ok(zkl_client_close(c), "close");
    remove_tree(zh, top);

    c = client_at(root);
    {
        zkl_mutex *a, *b;
        zkl_multilock *ml;
        ok(zkl_mutex_create(c, "/locks/a", &a), "create");
        ok(zkl_mutex_create(c, "/other/b", &b), "create");
        ok(zkl_multilock_create(&ml), "multilock create");
        ok(zkl_multilock_add_mutex(ml, a), "add");
        ok(zkl_multilock_add_mutex(ml, b), "add");
        ok(zkl_multilock_acquire(ml, 10000), "multilock acquire under a missing chroot");
        assert_persistent(zh, root);
        ok(zkl_multilock_release(ml), "release");
        ok(zkl_multilock_destroy(ml), "destroy");
        ok(zkl_mutex_destroy(a), "destroy");
        ok(zkl_mutex_destroy(b), "destroy");
    }
    ok(zkl_client_close(c), "close");
    remove_tree(zh, top);
    zookeeper_close(zh);
    free(top);
}

Test(chroot, missing_chroot_is_created_on_first_use, .timeout = 120)
{
    recipes_under("");
}

Test(chroot, missing_chroot_several_levels_deep_is_created, .timeout = 120)
{
    recipes_under("/a/b/c");
}

/* Two clients race to make the same chroot: both get their locks. */
Test(chroot, two_clients_making_one_chroot_at_once, .timeout = 60)
{
    zhandle_t *zh = zkt_raw();
    char *top = zkt_path("chroot2");
    char root[600];
    zkl_client *c1, *c2;
    zkl_mutex *m1, *m2;
    snprintf(root, sizeof root, "%s/x/y", top);
    c1 = client_at(root);
    c2 = client_at(root);
    ok(zkl_mutex_create(c1, "/l1", &m1), "create");
    ok(zkl_mutex_create(c2, "/l2", &m2), "create");
    ok(zkl_mutex_acquire(m1, 10000), "first");
    ok(zkl_mutex_acquire(m2, 10000), "second");
    ok(zkl_mutex_release(m1), "release");
    ok(zkl_mutex_release(m2), "release");
    ok(zkl_mutex_destroy(m1), "destroy");
    ok(zkl_mutex_destroy(m2), "destroy");
    ok(zkl_client_close(c1), "close");
    ok(zkl_client_close(c2), "close");
    remove_tree(zh, top);
    zookeeper_close(zh);
    free(top);
}

/* An ancestor of the chroot goes after it was found and before its child is
 * made (an empty container the server reaped, another client's delete): the
 * child's create finds no parent, and the chroot is made again from the top
 * (services/chroot.c), not refused. */
static void delete_node(zkl_client *c, void *arg)
{
    zhandle_t *zh = zkt_raw();
    (void)c;
    cr_assert_eq(zoo_delete(zh, arg, -1), ZOK, "could not delete %s", (char *)arg);
    zookeeper_close(zh);
}

Test(chroot, ancestor_gone_while_making_the_chroot, .timeout = 60)
{
    zhandle_t *zh = zkt_raw();
    char *top = zkt_path("chroot-gone");
    char root[600];
    zkl_client *c;
    zkl_mutex *m;
    snprintf(root, sizeof root, "%s/a", top);
    cr_assert_eq(zkt_make_path(zh, top, 0), ZOK);
    c = client_at(root);
    zkt_fault_after_chroot_part(c, top, delete_node, top);
    ok(zkl_mutex_create(c, "/m", &m), "create");
    ok(zkl_mutex_acquire(m, 10000), "acquire while an ancestor of the chroot goes");
    assert_persistent(zh, top);
    assert_persistent(zh, root);
    ok(zkl_mutex_release(m), "release");
    ok(zkl_mutex_destroy(m), "destroy");
    ok(zkl_client_close(c), "close");
    remove_tree(zh, top);
    zookeeper_close(zh);
    free(top);
}

/* The chroot's parent may be read but not written: the acquire fails at once,
 * and the message names the chroot as what is missing. */
Test(chroot, chroot_that_may_not_be_created_is_named, .timeout = 60)
{
    zhandle_t *zh = zkt_raw();
    char *parent = zkt_path("noperm");
    char root[600];
    zkl_client *c;
    zkl_mutex *m;
    zkl_status st;
    int64_t t0;
    int rc = ZNONODE, tries;
    for (tries = 0; tries < 5 && rc == ZNONODE; tries++) { /* /zkltest may be reaped meanwhile */
        zoo_create(zh, "/zkltest", "", 0, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
        rc = zoo_create(zh, parent, "", 0, &ZOO_READ_ACL_UNSAFE, 0, NULL, 0);
    }
    cr_assert_eq(rc, ZOK, "%s: %s", parent, zerror(rc));
    snprintf(root, sizeof root, "%s/app", parent);
    c = client_at(root);
    ok(zkl_mutex_create(c, "/locks/x", &m), "create");
    t0 = zkt_now_ms();
    st = zkl_mutex_acquire(m, 20000);
    cr_assert_eq(st, ZKL_ENOAUTH, "got %s (%s)", zkl_strerror(st), zkl_errmsg());
    cr_assert_lt(zkt_now_ms() - t0, 10000, "a refusal must not wait out the timeout");
    cr_assert(strstr(zkl_errmsg(), root), "the message names the chroot: %s", zkl_errmsg());
    cr_assert(strstr(zkl_errmsg(), "chroot"), "and says it is the chroot: %s", zkl_errmsg());
    cr_assert_not(zkl_mutex_is_held(m));
    cr_assert_eq(zoo_exists(zh, root, 0, NULL), ZNONODE);
    ok(zkl_mutex_destroy(m), "destroy");
    ok(zkl_client_close(c), "close");
    cr_assert_eq(zoo_delete(zh, parent, -1), ZOK);
    zookeeper_close(zh);
    free(parent);
}

/* An async acquire's outcome. */
struct report {
    _Atomic int calls;
    _Atomic int st;
};

static void on_report(zkl_op *op, zkl_status st, const char *msg, void *ud)
{
    struct report *r = ud;
    (void)op;
    if (st != ZKL_OK)
        cr_log_info("async acquire: %s", msg);
    atomic_store(&r->st, st);
    atomic_fetch_add(&r->calls, 1);
}

static int reported(void *arg)
{
    return atomic_load(&((struct report *)arg)->calls) > 0;
}

/*
 * The chroot is made by steps that never block the worker (issue 38): while
 * an async acquire's chroot handle waits (3 s after it connects, a fault),
 * the worker goes on renewing the lease (a renewal every 667 ms at a 2 s
 * session timeout), and the acquire is granted after the wait.
 */
Test(chroot, making_the_chroot_leaves_the_worker_free, .timeout = 60)
{
    zhandle_t *zh = zkt_raw();
    char *top = zkt_path("chroot-async");
    zkl_client_options o;
    struct report r = {0, -1};
    zkl_client *c;
    zkl_mutex *m;
    zkl_op *op = NULL;
    uint64_t n0, n1;
    int64_t t0;
    zkl_client_options_init(&o);
    o.session_timeout_ms = 2000;
    c = client_with(top, &o);
    zkt_fault_set(c, ZKL__FAULT_CHROOT_STALL_MS, 3000);
    ok(zkl_mutex_create(c, "/locks/m", &m), "create");
    t0 = zkt_now_ms();
    ok(zkl_mutex_acquire_async(m, 20000, on_report, &r, &op), "acquire async");
    zkt_sleep_ms(400);
    n0 = zkt_lease_syncs(c);
    zkt_sleep_ms(2000);
    n1 = zkt_lease_syncs(c);
    cr_assert_not(reported(&r), "granted before the chroot's handle waited out its 3 s");
    cr_assert_geq(n1 - n0, 2, "%llu lease renewals in 2 s while the chroot was being made",
                  (unsigned long long)(n1 - n0));
    cr_assert(zkt_wait_for(reported, &r, 15000), "no outcome");
    cr_assert_eq(atomic_load(&r.st), ZKL_OK);
    cr_assert_geq(zkt_now_ms() - t0, 3000, "the chroot's handle did not wait");
    assert_persistent(zh, top);
    cr_log_info("%llu renewals in 2 s while the chroot was being made",
                (unsigned long long)(n1 - n0));
    ok(zkl_op_release(op), "release");
    ok(zkl_mutex_destroy(m), "destroy");
    ok(zkl_client_close(c), "close");
    remove_tree(zh, top);
    zookeeper_close(zh);
    free(top);
}

/* An async acquire canceled while its chroot is being made ends at once,
 * ZKL_ECANCELED, and makes nothing. */
Test(chroot, cancel_while_making_the_chroot, .timeout = 60)
{
    zhandle_t *zh = zkt_raw();
    char *top = zkt_path("chroot-cancel");
    struct report r = {0, -1};
    zkl_client *c = client_at(top);
    zkl_mutex *m;
    zkl_op *op = NULL;
    int64_t t0;
    zkt_fault_set(c, ZKL__FAULT_CHROOT_STALL_MS, 10000);
    ok(zkl_mutex_create(c, "/locks/m", &m), "create");
    ok(zkl_mutex_acquire_async(m, 20000, on_report, &r, &op), "acquire async");
    zkt_sleep_ms(300);
    t0 = zkt_now_ms();
    ok(zkl_op_cancel(op), "cancel");
    cr_assert(zkt_wait_for(reported, &r, 5000), "no outcome after the cancel");
    cr_assert_eq(atomic_load(&r.st), ZKL_ECANCELED, "got %s",
                 zkl_strerror((zkl_status)atomic_load(&r.st)));
    cr_assert_lt(zkt_now_ms() - t0, 2000, "the cancel waited for the chroot's handle");
    cr_assert_eq(zoo_exists(zh, top, 0, NULL), ZNONODE, "the chroot was made all the same");
    ok(zkl_op_release(op), "release of a canceled handle");
    ok(zkl_mutex_destroy(m), "destroy");
    ok(zkl_client_close(c), "close");
    zookeeper_close(zh);
    free(top);
}
