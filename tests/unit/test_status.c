/*
 * test_status.c - every status has a message; NULL handles give ZKL_EINVAL
 * with a detail, never a crash. No server needed.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include <zookeeper/zookeeper.h>

#include "base/log.h"
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

/* A logger's context, alive until the program tears the logger down. */
struct logger {
    atomic_int alive, entered, late, calls;
};

static void nap_ms(int ms)
{
    struct timespec ts = {0, (long)ms * 1000000L};
    nanosleep(&ts, NULL);
}

/* Slow, as a logger that writes to a file is: it reads its context after
 * the pause, as a real one would write through it. */
static void slow_logger(zkl_log_level level, const char *message, void *ud)
{
    struct logger *l = ud;
    (void)level, (void)message;
    atomic_store(&l->entered, 1);
    nap_ms(20);
    if (!atomic_load(&l->alive))
        atomic_fetch_add(&l->late, 1);
}

static void quiet_logger(zkl_log_level level, const char *message, void *ud)
{
    (void)level, (void)message, (void)ud;
}

static atomic_int ticking;

static void *ticker(void *arg)
{
    (void)arg;
    while (atomic_load(&ticking))
        zkl__log(ZKL_LOG_ERROR, "tick");
    return NULL;
}

/* Issue 57, item 1: a program swaps its logger and tears the old one's
 * context down when zkl_log_set returns; no call of the old logger may
 * still be running then (on 65709ca the old one ran on, past the swap). */
Test(status, a_replaced_logger_is_not_running_when_the_swap_returns)
{
    for (int round = 0; round < 5; round++) {
        struct logger old = {.alive = 1};
        pthread_t t;
        zkl_log_set(slow_logger, ZKL_LOG_ERROR, &old);
        atomic_store(&ticking, 1);
        cr_assert_eq(pthread_create(&t, NULL, ticker, NULL), 0);
        while (!atomic_load(&old.entered))
            nap_ms(1);
        zkl_log_set(quiet_logger, ZKL_LOG_ERROR, NULL);
        atomic_store(&old.alive, 0); /* the program frees it now */
        atomic_store(&ticking, 0);
        pthread_join(t, NULL);
        zkl_log_set(NULL, ZKL_LOG_OFF, NULL);
        cr_assert_eq(atomic_load(&old.late), 0, "round %d: the old logger ran after the swap",
                     round);
    }
}

static void swapping_logger(zkl_log_level level, const char *message, void *ud)
{
    struct logger *l = ud;
    (void)level, (void)message;
    atomic_fetch_add(&l->calls, 1);
    zkl_log_set(NULL, ZKL_LOG_OFF, NULL); /* would wait for itself */
    if (strstr(zkl_errmsg(), "inside the log callback"))
        atomic_fetch_add(&l->entered, 1);
}

/* zkl_log_set from inside the log callback changes nothing, at once. */
Test(status, a_swap_from_inside_the_log_callback_changes_nothing)
{
    struct logger l = {.alive = 1};
    zkl_log_set(swapping_logger, ZKL_LOG_ERROR, &l);
    zkl__log(ZKL_LOG_ERROR, "one");
    zkl__log(ZKL_LOG_ERROR, "two");
    zkl_log_set(NULL, ZKL_LOG_OFF, NULL);
    cr_assert_eq(atomic_load(&l.calls), 2, "the hook was replaced from inside its own call");
    cr_assert_eq(atomic_load(&l.entered), 2, "zkl_errmsg did not say why");
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
