/*
 * test_acl.c - lock nodes created with a caller-given ACL: creator-all for a
 * digest identity plus world read. A client without that identity can
 * neither take part, nor delete a holder's node (steal the lock), nor revoke
 * it; one with the identity can. A path where the client may not create
 * fails at once; a delete refused for good is logged, not retried forever.
 */
#include <criterion/criterion.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "zkt.h"

static const zkl_acl creator_all_world_read[] = {
    {ZKL_PERM_ALL, "auth", ""},
    {ZKL_PERM_READ, "world", "anyone"},
};

static zkl_client *client_as(const char *digest)
{
    zkl_client_options o;
    zkl_client *c = NULL;
    zkl_client_options_init(&o);
    o.auth_digest = digest;
    o.acl = creator_all_world_read;
    o.acl_len = 2;
    ok(zkl_client_open(zkt_servers(), &o, &c), "open");
    return c;
}

Test(acl, only_the_identity_can_steal_or_revoke, .timeout = 60)
{
    zkl_client *alice = client_as("alice:secret"), *alice2 = client_as("alice:secret");
    zkl_client *mallory = zkt_client(0);
    zhandle_t *raw = zkt_raw();
    char *path = zkt_path("acl"), *node;
    zkl_mutex *ma, *ma2, *mm;
    struct ACL_vector acl;
    struct Stat st;
    int rc;
    ok(zkl_mutex_create(alice, path, &ma), "create");
    ok(zkl_mutex_create(alice2, path, &ma2), "create");
    ok(zkl_mutex_create(mallory, path, &mm), "create");
    ok(zkl_mutex_acquire(ma, 5000), "alice acquires");
    ok(zkl_mutex_node(ma, &node), "node");

    /* the nodes carry the ACL */
    cr_assert_eq(zoo_get_acl(raw, node, &acl, &st), ZOK);
    cr_assert_eq(acl.count, 2);
    deallocate_ACL_vector(&acl);
    cr_assert_eq(zoo_get_acl(raw, path, &acl, &st), ZOK);
    cr_assert_eq(acl.count, 2, "the parent zklock made carries it too");
    deallocate_ACL_vector(&acl);

    /* mallory can read, but cannot steal, revoke or queue */
    cr_assert_eq(zkt_children(raw, path), 1);
    rc = zoo_delete(raw, node, -1);
    cr_assert_eq(rc, ZNOAUTH, "stealing by deleting the holder's node: %s", zerror(rc));
    cr_assert_eq(zkl_revoke(mallory, node), ZKL_ENOAUTH);
    cr_assert_eq(zkl_mutex_acquire(mm, 1000), ZKL_ENOAUTH, "mallory must get a clear error");
    cr_assert(strstr(zkl_errmsg(), "not authenticated") || strstr(zkl_errmsg(), "auth"),
              "message: %s", zkl_errmsg());
    cr_assert(zkl_mutex_is_held(ma));

    /* the same identity in another session takes part normally */
    cr_assert_eq(zkl_mutex_acquire(ma2, 200), ZKL_ETIMEDOUT);
    ok(zkl_revoke(alice2, node), "the identity may revoke");
    ok(zkl_mutex_release(ma), "release");
    ok(zkl_mutex_acquire(ma2, 5000), "alice's other session acquires");
    ok(zkl_mutex_release(ma2), "release");
    ok(zkl_client_drain(alice2, 5000), "drain");
    cr_assert_eq(zkt_children_settle(raw, path, 0), 0);
    free(node);
    ok(zkl_mutex_destroy(ma), "destroy");
    ok(zkl_mutex_destroy(ma2), "destroy");
    ok(zkl_mutex_destroy(mm), "destroy");
    ok(zkl_client_close(alice), "close");
    ok(zkl_client_close(alice2), "close");
    ok(zkl_client_close(mallory), "close");
    zookeeper_close(raw);
    free(path);
}

Test(acl, bad_acl_options_are_refused)
{
    zkl_client_options o;
    zkl_client *c = (zkl_client *)0x1;
    zkl_acl bad[] = {{0, "world", "anyone"}};
    zkl_acl noscheme[] = {{ZKL_PERM_READ, NULL, "anyone"}};
    zkl_client_options_init(&o);
    o.acl = bad;
    o.acl_len = 1;
    cr_assert_eq(zkl_client_open(zkt_servers(), &o, &c), ZKL_EINVAL);
    cr_assert_null(c);
    o.acl = noscheme;
    cr_assert_eq(zkl_client_open(zkt_servers(), &o, &c), ZKL_EINVAL);
    o.acl = NULL;
    o.acl_len = 2;
    cr_assert_eq(zkl_client_open(zkt_servers(), &o, &c), ZKL_EINVAL);
}

/* A lock path at or under a node this client may not create children in
 * fails at once with ZKL_ENOAUTH, naming the path: no retries, no wait for
 * the timeout, no node. */
Test(acl, no_create_permission_fails_at_once, .timeout = 60)
{
    zhandle_t *zh = zkt_raw();
    char *top = zkt_path("readonly");
    struct ACL read_only[] = {{ZOO_PERM_READ, ZOO_ANYONE_ID_UNSAFE}};
    struct ACL_vector ro = {1, read_only};
    zkl_client *c = zkt_client(0);
    cr_assert_eq(zkt_make_path(zh, top, 0), ZOK);
    cr_assert_eq(zoo_set_acl(zh, top, -1, &ro), ZOK);
    zkt_refused_at_once(c, zh, top, ZKL_ENOAUTH, NULL);
    ok(zkl_client_close(c), "close");
    zookeeper_close(zh);
    free(top);
}

static atomic_int gave_up;
static void count_give_up(zkl_log_level level, const char *msg, void *ud)
{
    (void)ud;
    if (level == ZKL_LOG_ERROR && strstr(msg, "giving up deleting"))
        atomic_fetch_add(&gave_up, 1);
}

/* A release whose delete the server refuses for good (someone took DELETE
 * off the parent's ACL) is not retried forever: it is logged as an ERROR and
 * dropped, and drain returns. The node then lives as long as its session, so
 * closing the client removes it. */
Test(acl, delete_refused_for_good_is_logged_not_retried, .timeout = 60)
{
    zhandle_t *zh = zkt_raw();
    char *path = zkt_path("nodelete");
    struct ACL no_delete[] = {
        {ZOO_PERM_READ | ZOO_PERM_WRITE | ZOO_PERM_CREATE | ZOO_PERM_ADMIN, ZOO_ANYONE_ID_UNSAFE}};
    struct ACL_vector nd = {1, no_delete};
    zkl_client *c = zkt_client(0);
    zkl_mutex *m;
    int64_t t0;
    cr_assert_eq(zkt_make_path(zh, path, 0), ZOK);
    ok(zkl_mutex_create(c, path, &m), "create");
    ok(zkl_mutex_acquire(m, 5000), "acquire");
    cr_assert_eq(zoo_set_acl(zh, path, -1, &nd), ZOK);
    zkl_log_set(count_give_up, ZKL_LOG_ERROR, NULL);
    ok(zkl_mutex_release(m), "release returns before the delete's reply");
    t0 = zkt_now_ms();
    ok(zkl_client_drain(c, 10000), "drain");
    cr_assert_lt(zkt_now_ms() - t0, 5000, "drain took %lld ms", (long long)(zkt_now_ms() - t0));
    zkl_log_set(NULL, ZKL_LOG_OFF, NULL);
    cr_assert_eq(atomic_load(&gave_up), 1, "one ERROR line for the refused delete");
    cr_assert_eq(zkt_children(zh, path), 1, "the node stays with its session");
    ok(zkl_mutex_destroy(m), "destroy");
    ok(zkl_client_close(c), "close");
    cr_assert_eq(zkt_children_settle(zh, path, 0), 0, "closing the session removes it");
    zookeeper_close(zh);
    free(path);
}
