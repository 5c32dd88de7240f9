/*
 * test_status.c - every status has a message; NULL handles give ZKL_EINVAL
 * with a detail, never a crash. No server needed.
 */
#include <criterion/criterion.h>
#include <string.h>

#include <zookeeper/zookeeper.h>

#include "base/status.h"
#include "zklock/zklock.h"

Test(status, every_code_has_text)
{
    int st;
    for (st = ZKL_OK; st >= ZKL_ECANCELED; st--) {
        const char *s = zkl_strerror((zkl_status)st);
        cr_assert(s && *s);
        cr_assert_str_neq(s, "unknown status", "code %d", st);
    }
    cr_assert_str_eq(zkl_strerror((zkl_status)-999), "unknown status");
}

/* What each ZooKeeper error becomes, with the call, the path and the
 * client's own words in the message. */
Test(status, zookeeper_codes_map_to_statuses)
{
    static const struct {
        int rc;
        zkl_status st;
    } map[] = {
        {ZCONNECTIONLOSS, ZKL_ECONNLOSS}, {ZOPERATIONTIMEOUT, ZKL_ECONNLOSS},
        {ZSESSIONEXPIRED, ZKL_ELOST},     {ZINVALIDSTATE, ZKL_ELOST},
        {ZSESSIONMOVED, ZKL_ELOST},       {ZNOAUTH, ZKL_ENOAUTH},
        {ZAUTHFAILED, ZKL_EAUTH},         {ZCLOSING, ZKL_ECLOSED},
        {ZBADARGUMENTS, ZKL_EBADPATH},    {ZSYSTEMERROR, ZKL_ENOMEM},
        {ZNODEEXISTS, ZKL_EZK},           {ZBADVERSION, ZKL_EZK},
    };
    size_t i;
    for (i = 0; i < sizeof map / sizeof map[0]; i++) {
        cr_assert_eq(zkl__from_zk(map[i].rc, "list", "/a/b"), map[i].st, "rc %d", map[i].rc);
        cr_assert(strstr(zkl_errmsg(), "list /a/b"), "%s", zkl_errmsg());
        cr_assert(strstr(zkl_errmsg(), zerror(map[i].rc)), "%s", zkl_errmsg());
    }
    cr_assert_eq(zkl__from_zk(ZOK, "list", NULL), ZKL_OK);
}

Test(status, state_names)
{
    cr_assert_str_eq(zkl_conn_state_name(ZKL_STATE_CONNECTED), "CONNECTED");
    cr_assert_str_eq(zkl_conn_state_name(ZKL_STATE_SUSPENDED), "SUSPENDED");
    cr_assert_str_eq(zkl_conn_state_name(ZKL_STATE_RECONNECTED), "RECONNECTED");
    cr_assert_str_eq(zkl_conn_state_name(ZKL_STATE_LOST), "LOST");
    cr_assert_str_eq(zkl_conn_state_name((zkl_conn_state)99), "UNKNOWN");
}

Test(status, null_handles)
{
    zkl_mutex *m = (zkl_mutex *)0x1;
    int64_t tok;
    char **v;
    size_t n;
    char *node;
    cr_assert_eq(zkl_client_close(NULL), ZKL_EINVAL);
    cr_assert_neq(zkl_errmsg()[0], '\0');
    cr_assert_eq(zkl_mutex_create(NULL, "/a", &m), ZKL_EINVAL);
    cr_assert_null(m);
    cr_assert_eq(zkl_mutex_create(NULL, "/a", NULL), ZKL_EINVAL);
    cr_assert_eq(zkl_mutex_acquire(NULL, 0), ZKL_EINVAL);
    cr_assert_eq(zkl_mutex_release(NULL), ZKL_EINVAL);
    cr_assert_eq(zkl_mutex_destroy(NULL), ZKL_EINVAL);
    cr_assert_eq(zkl_mutex_fencing_token(NULL, &tok), ZKL_EINVAL);
    cr_assert_eq(zkl_mutex_participants(NULL, &v, &n), ZKL_EINVAL);
    cr_assert_eq(zkl_mutex_node(NULL, &node), ZKL_EINVAL);
    cr_assert_not(zkl_mutex_is_held(NULL));
    cr_assert_null(zkl_mutex_path(NULL));
    cr_assert_eq(zkl_client_state(NULL), ZKL_STATE_LOST);
    cr_assert_eq(zkl_client_session_id(NULL), 0);
    cr_assert_eq(zkl_client_drain(NULL, 0), ZKL_EINVAL);
    zkl_strings_free(NULL, 3);
}

Test(status, open_rejects_bad_arguments)
{
    zkl_client *c = (zkl_client *)0x1;
    zkl_client_options o;
    cr_assert_eq(zkl_client_open(NULL, NULL, &c), ZKL_EINVAL);
    cr_assert_null(c);
    cr_assert_eq(zkl_client_open("", NULL, &c), ZKL_EINVAL);
    cr_assert_eq(zkl_client_open("127.0.0.1:1", NULL, NULL), ZKL_EINVAL);
    zkl_client_options_init(&o);
    o.session_timeout_ms = 0;
    cr_assert_eq(zkl_client_open("127.0.0.1:1", &o, &c), ZKL_EINVAL);
    zkl_client_options_init(&o);
    o.auth_digest = "nocolon";
    cr_assert_eq(zkl_client_open("127.0.0.1:1", &o, &c), ZKL_EINVAL);
    zkl_client_options_init(&o);
    o.node_data_len = 3;
    cr_assert_eq(zkl_client_open("127.0.0.1:1", &o, &c), ZKL_EINVAL);
    o.node_data = "abc";
    o.node_data_len = ZKL_NODE_DATA_MAX + 1;
    cr_assert_eq(zkl_client_open("127.0.0.1:1", &o, &c), ZKL_EINVAL);
    cr_assert(strstr(zkl_errmsg(), "node_data_len"), "%s", zkl_errmsg());
}

Test(status, log_hook_can_be_set_and_cleared)
{
    zkl_log_set(zkl_log_stderr, ZKL_LOG_ERROR, NULL);
    zkl_log_set(NULL, ZKL_LOG_DEBUG, NULL);
}

Test(status, null_arguments_everywhere)
{
    zkl_rwlock *rw = (zkl_rwlock *)0x1;
    zkl_semaphore *s = (zkl_semaphore *)0x1;
    zkl_semaphore_mutex *sm = (zkl_semaphore_mutex *)0x1;
    zkl_multilock *ml = NULL;
    zkl_lease *lease = NULL, *leases[2];
    zkl_participant *parts;
    zkl_client_stats stats;
    int64_t tok;
    char **v;
    size_t n;

    cr_assert_eq(zkl_rwlock_create(NULL, "/a", &rw), ZKL_EINVAL);
    cr_assert_null(rw);
    cr_assert_eq(zkl_rwlock_create(NULL, "/a", NULL), ZKL_EINVAL);
    cr_assert_eq(zkl_rwlock_destroy(NULL), ZKL_EINVAL);
    cr_assert_eq(zkl_rwlock_read_acquire(NULL, 0), ZKL_EINVAL);
    cr_assert_eq(zkl_rwlock_read_release(NULL), ZKL_EINVAL);
    cr_assert_eq(zkl_rwlock_write_acquire(NULL, 0), ZKL_EINVAL);
    cr_assert_eq(zkl_rwlock_write_release(NULL), ZKL_EINVAL);
    cr_assert_not(zkl_rwlock_read_is_held(NULL));
    cr_assert_not(zkl_rwlock_write_is_held(NULL));
    cr_assert_eq(zkl_rwlock_write_fencing_token(NULL, &tok), ZKL_EINVAL);
    cr_assert_eq(zkl_rwlock_read_fencing_token(NULL, &tok), ZKL_EINVAL);
    cr_assert_eq(zkl_rwlock_participants(NULL, &v, &n), ZKL_EINVAL);
    cr_assert_eq(zkl_rwlock_on_state(NULL, NULL, NULL), ZKL_EINVAL);
    cr_assert_null(zkl_rwlock_path(NULL));

    cr_assert_eq(zkl_semaphore_create(NULL, "/a", 1, &s), ZKL_EINVAL);
    cr_assert_null(s);
    cr_assert_eq(zkl_semaphore_destroy(NULL), ZKL_EINVAL);
    cr_assert_eq(zkl_semaphore_acquire(NULL, 0, &lease), ZKL_EINVAL);
    cr_assert_eq(zkl_semaphore_acquire_many(NULL, 2, 0, leases), ZKL_EINVAL);
    cr_assert_eq(zkl_semaphore_participants(NULL, &v, &n), ZKL_EINVAL);
    cr_assert_eq(zkl_semaphore_on_state(NULL, NULL, NULL), ZKL_EINVAL);
    cr_assert_eq(zkl_lease_return(NULL), ZKL_EINVAL);
    cr_assert_not(zkl_lease_is_valid(NULL));
    cr_assert_null(zkl_lease_node(NULL));
    cr_assert_eq(zkl_lease_fencing_token(NULL), 0);

    cr_assert_eq(zkl_semaphore_mutex_create(NULL, "/a", &sm), ZKL_EINVAL);
    cr_assert_null(sm);
    cr_assert_eq(zkl_semaphore_mutex_create(NULL, "/a", NULL), ZKL_EINVAL);
    cr_assert_eq(zkl_semaphore_mutex_destroy(NULL), ZKL_EINVAL);
    cr_assert_eq(zkl_semaphore_mutex_acquire(NULL, 0), ZKL_EINVAL);
    cr_assert_eq(zkl_semaphore_mutex_release(NULL), ZKL_EINVAL);
    cr_assert_not(zkl_semaphore_mutex_is_held(NULL));

    cr_assert_eq(zkl_multilock_create(NULL), ZKL_EINVAL);
    cr_assert_eq(zkl_multilock_add_mutex(NULL, NULL), ZKL_EINVAL);
    cr_assert_eq(zkl_multilock_add_read(NULL, NULL), ZKL_EINVAL);
    cr_assert_eq(zkl_multilock_add_write(NULL, NULL), ZKL_EINVAL);
    cr_assert_eq(zkl_multilock_add_semaphore_mutex(NULL, NULL), ZKL_EINVAL);
    cr_assert_eq(zkl_multilock_acquire(NULL, 0), ZKL_EINVAL);
    cr_assert_eq(zkl_multilock_release(NULL), ZKL_EINVAL);
    cr_assert_eq(zkl_multilock_destroy(NULL), ZKL_EINVAL);
    cr_assert_eq(zkl_multilock_create(&ml), ZKL_OK);
    cr_assert_eq(zkl_multilock_add_mutex(ml, NULL), ZKL_EINVAL);
    cr_assert_eq(zkl_multilock_acquire(ml, -7), ZKL_EINVAL);
    cr_assert_eq(zkl_multilock_acquire(ml, 0), ZKL_EINVAL, "an empty set");
    cr_assert_eq(zkl_multilock_release(ml), ZKL_ENOTOWNER);
    cr_assert_eq(zkl_multilock_destroy(ml), ZKL_OK);

    cr_assert_eq(zkl_inspect(NULL, "/a", &parts, &n), ZKL_EINVAL);
    zkl_participants_free(NULL, 0);
    cr_assert_eq(zkl_revoke(NULL, "/a"), ZKL_EINVAL);
    cr_assert_eq(zkl_mutex_make_revocable(NULL, NULL, NULL), ZKL_EINVAL);
    cr_assert_eq(zkl_mutex_on_state(NULL, NULL, NULL), ZKL_EINVAL);
    cr_assert_eq(zkl_client_stats_get(NULL, &stats), ZKL_EINVAL);
    cr_assert_eq(zkl_client_cancel(NULL), ZKL_EINVAL);
    cr_assert_eq(zkl_client_session_timeout(NULL), 0);
    zkl_client_options_init(NULL);
}
