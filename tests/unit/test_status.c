/*
 * test_status.c - every status has a message; NULL handles give ZKL_EINVAL
 * with a detail, never a crash. No server needed.
 */
#include <criterion/criterion.h>

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

Test(status, state_names)
{
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
}

Test(status, log_hook_can_be_set_and_cleared)
{
    zkl_log_set(zkl_log_stderr, ZKL_LOG_ERROR, NULL);
    zkl_log_set(NULL, ZKL_LOG_DEBUG, NULL);
}
