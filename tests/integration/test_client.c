/*
 * test_client.c - the client against a real server: open, close, states,
 * unreachable servers, session replacement after expiry, the data of lock
 * nodes.
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

#include "zkt.h"

#ifndef PR_FUTEX_HASH
#define PR_FUTEX_HASH 78
#define PR_FUTEX_HASH_SET_SLOTS 1
#define PR_FUTEX_HASH_GET_SLOTS 2
#endif

Test(client, open_and_close)
{
    zkl_client *c = zkt_client(0);
    cr_assert_eq(zkl_client_state(c), ZKL_STATE_CONNECTED);
    cr_assert_neq(zkl_client_session_id(c), 0);
    cr_assert_gt(zkl_client_session_timeout(c), 0);
    cr_assert_eq(zkl_client_close(c), ZKL_OK);
}

/* A standalone server that allows `conf` says it has no ensemble lag. */
Test(client, the_lease_lag_is_read_from_the_server)
{
    zkl_lag_source source = ZKL_LAG_UNKNOWN;
    zkl_client *c = zkt_client(0);
    cr_assert_eq(zkl_client_ensemble_lag(c, &source), 0);
    cr_assert_eq(source, ZKL_LAG_FOUND);
    cr_assert_eq(zkl_client_close(c), ZKL_OK);
    cr_assert_eq(zkl_client_ensemble_lag(NULL, &source), -1);
}

/*
 * Blocking waits leave the futex hash (sleep on eventfds) from 3 clients a
 * chain of the process's private hash on (session/client.h), read when a
 * worker starts: 48 with Linux 6.16+'s 16 chains on 2 CPUs. Here the test
 * process grows its hash (an application may), and the next client's start
 * reads the new size. Without a private hash: 128, as before there was one.
 */
Test(client, many_clients_start_at_three_a_chain_of_the_futex_hash)
{
    zkl_client *c = zkt_client(0), *d;
    int slots = prctl(PR_FUTEX_HASH, PR_FUTEX_HASH_GET_SLOTS, 0, 0, 0);
    cr_assert_eq(zkt_many_clients_threshold(), slots > 0 ? 3 * slots : 128, "slots %d: from %d",
                 slots, zkt_many_clients_threshold());
    if (slots > 0 && prctl(PR_FUTEX_HASH, PR_FUTEX_HASH_SET_SLOTS, 64, 0, 0) == 0) {
        d = zkt_client(0);
        cr_assert_eq(zkt_many_clients_threshold(), 192, "64 slots: from %d",
                     zkt_many_clients_threshold());
        cr_assert_eq(zkl_client_close(d), ZKL_OK);
    }
    cr_assert_eq(zkl_client_close(c), ZKL_OK);
}

Test(client, unreachable_server_fails_in_time)
{
    zkl_client_options o;
    zkl_client *c = NULL;
    int64_t t0 = zkt_now_ms();
    zkl_status st;
    zkl_client_options_init(&o);
    o.connect_timeout_ms = 1500;
    /* port 1 on loopback: nothing listens there */
    st = zkl_client_open("127.0.0.1:1", &o, &c);
    cr_assert_eq(st, ZKL_ECONNECT, "got %s", zkl_strerror(st));
    cr_assert_null(c);
    cr_assert(strstr(zkl_errmsg(), "127.0.0.1:1"), "message: %s", zkl_errmsg());
    cr_assert_lt(zkt_now_ms() - t0, 5000);
}

Test(client, close_refuses_while_locks_exist)
{
    zkl_client *c = zkt_client(0);
    zkl_mutex *m;
    cr_assert_eq(zkl_mutex_create(c, "/zkltest/busy", &m), ZKL_OK);
    cr_assert_eq(zkl_client_close(c), ZKL_EBUSY);
    cr_assert_eq(zkl_mutex_destroy(m), ZKL_OK);
    cr_assert_eq(zkl_client_close(c), ZKL_OK);
}

struct states {
    atomic_int lost, reconnected, suspended;
};

static void on_state(zkl_client *c, zkl_conn_state st, void *ud)
{
    struct states *s = ud;
    (void)c;
    if (st == ZKL_STATE_LOST)
        atomic_fetch_add(&s->lost, 1);
    /* only count the reconnect into the new session, after LOST: moving the
     * session to the expiring handle may first cause a plain reconnect */
    if (st == ZKL_STATE_RECONNECTED && atomic_load(&s->lost))
        atomic_fetch_add(&s->reconnected, 1);
    if (st == ZKL_STATE_SUSPENDED)
        atomic_fetch_add(&s->suspended, 1);
}

static int reconnected(void *arg)
{
    struct states *s = arg;
    return atomic_load(&s->reconnected) > 0;
}

Test(client, new_session_after_expiry)
{
    struct states s = {0};
    zkl_client *c = zkt_client_cb(2000, on_state, &s);
    int64_t id = zkl_client_session_id(c);
    zkt_expire(c);
    cr_assert(zkt_wait_for(reconnected, &s, 15000), "no RECONNECTED after expiry");
    cr_assert_geq(atomic_load(&s.lost), 1);
    cr_assert_neq(zkl_client_session_id(c), id);
    cr_assert_neq(zkl_client_session_id(c), 0);
    cr_assert_eq(zkl_client_state(c), ZKL_STATE_RECONNECTED);
    cr_assert_eq(zkl_client_close(c), ZKL_OK);
}

Test(client, canceled_client_ends_waits_and_refuses_new_ones, .timeout = 30)
{
    zkl_client *a = zkt_client(0), *b = zkt_client(0);
    char *path = zkt_path("cancel");
    zkl_mutex *ma, *mb;
    zhandle_t *raw = zkt_raw();
    zkl_client_stats st;
    cr_assert_eq(zkl_mutex_create(a, path, &ma), ZKL_OK);
    cr_assert_eq(zkl_mutex_create(b, path, &mb), ZKL_OK);
    cr_assert_eq(zkl_mutex_acquire(ma, 5000), ZKL_OK);
    cr_assert_eq(zkl_client_cancel(b), ZKL_OK);
    cr_assert_eq(zkl_mutex_acquire(mb, ZKL_WAIT_FOREVER), ZKL_ECANCELED,
                 "a canceled client must not wait");
    cr_assert_eq(zkl_client_drain(b, 5000), ZKL_OK);
    cr_assert_eq(zkt_children_settle(raw, path, 1), 1, "only the holder's node");
    /* the holder's client still works; its counters moved */
    cr_assert_eq(zkl_client_stats_get(a, &st), ZKL_OK);
    cr_assert_geq(st.requests, 2, "create and list at least");
    cr_assert_eq(st.sessions, 1);
    cr_assert_eq(zkl_mutex_release(ma), ZKL_OK);
    cr_assert_eq(zkl_mutex_destroy(ma), ZKL_OK);
    cr_assert_eq(zkl_mutex_destroy(mb), ZKL_OK);
    cr_assert_eq(zkl_client_close(a), ZKL_OK);
    cr_assert_eq(zkl_client_close(b), ZKL_OK);
    zookeeper_close(raw);
    free(path);
}

/* The data of a lock node as the server has it (len -1: no node). */
static int node_data_of(zkl_mutex *m, char *buf, int cap)
{
    zhandle_t *zh = zkt_raw();
    char *node = NULL;
    int len = cap;
    cr_assert_eq(zkl_mutex_node(m, &node), ZKL_OK, "%s", zkl_errmsg());
    if (zoo_get(zh, node, 0, buf, &len, NULL) != ZOK)
        len = -1;
    free(node);
    zookeeper_close(zh);
    return len;
}

/* node_data goes into every lock node as given (bytes, not text), empty data
 * too; without it the node holds the local address, as Curator's do. */
Test(client, lock_nodes_carry_the_node_data)
{
    static const char data[] = "worker-7\0bin";
    const struct {
        const void *data;
        size_t len;
    } cases[] = {{data, sizeof data - 1}, {"", 0}};
    char buf[64], *path = zkt_path("nodedata");
    zkl_mutex *m;
    zkl_client *c;
    size_t i;
    int len;
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        zkl_client_options o;
        zkl_client_options_init(&o);
        o.node_data = cases[i].data;
        o.node_data_len = cases[i].len;
        cr_assert_eq(zkl_client_open(zkt_servers(), &o, &c), ZKL_OK, "%s", zkl_errmsg());
        cr_assert_eq(zkl_mutex_create(c, path, &m), ZKL_OK, "%s", zkl_errmsg());
        cr_assert_eq(zkl_mutex_acquire(m, 10000), ZKL_OK, "%s", zkl_errmsg());
        len = node_data_of(m, buf, (int)sizeof buf);
        cr_assert_eq(len, (int)cases[i].len, "case %zu: %d bytes on the node", i, len);
        cr_assert(len == 0 || memcmp(buf, cases[i].data, (size_t)len) == 0, "case %zu", i);
        cr_assert_eq(zkl_mutex_release(m), ZKL_OK);
        cr_assert_eq(zkl_mutex_destroy(m), ZKL_OK);
        cr_assert_eq(zkl_client_close(c), ZKL_OK);
    }
    c = zkt_client(0);
    cr_assert_eq(zkl_mutex_create(c, path, &m), ZKL_OK, "%s", zkl_errmsg());
    cr_assert_eq(zkl_mutex_acquire(m, 10000), ZKL_OK, "%s", zkl_errmsg());
    len = node_data_of(m, buf, (int)sizeof buf - 1);
    cr_assert_gt(len, 0, "the default data is the local address");
    buf[len] = '\0';
    {
        struct in_addr a;
        cr_assert_eq(inet_pton(AF_INET, buf, &a), 1, "not an IPv4 address: '%s'", buf);
    }
    cr_assert_eq(zkl_mutex_release(m), ZKL_OK);
    cr_assert_eq(zkl_mutex_destroy(m), ZKL_OK);
    cr_assert_eq(zkl_client_close(c), ZKL_OK);
    free(path);
}
