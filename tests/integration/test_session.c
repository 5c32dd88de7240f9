/*
 * test_session.c - sessions and their edges against a real server: a stalled
 * server (SIGSTOP) makes a holder SUSPENDED and then LOST, the log stays
 * quiet by default, vanished container parents, digest auth, chroot, a
 * release whose delete fails being finished in the background, and an acquire
 * given up on a stalled server leaving no node.
 */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "zkt.h"

#define MAX_EVENTS 32
struct timeline {
    atomic_int n;
    zkl_conn_state ev[MAX_EVENTS];
    int64_t at[MAX_EVENTS];
    zkl_mutex *m;
    int held_at_lost; /* is_held as seen from the LOST callback: -1 unset */
};

static void record(zkl_client *c, zkl_conn_state st, void *ud)
{
    struct timeline *t = ud;
    int i = atomic_load(&t->n);
    (void)c;
    if (i < MAX_EVENTS) {
        t->ev[i] = st;
        t->at[i] = zkt_now_ms();
        atomic_store(&t->n, i + 1);
    }
}

static int find(struct timeline *t, zkl_conn_state st)
{
    int i, n = atomic_load(&t->n);
    for (i = 0; i < n; i++)
        if (t->ev[i] == st)
            return i;
    return -1;
}

static int saw_lost(void *arg)
{
    return find(arg, ZKL_STATE_LOST) >= 0;
}

static int saw_reconnect_after_lost(void *arg)
{
    struct timeline *t = arg;
    int i, n = atomic_load(&t->n), lost = find(t, ZKL_STATE_LOST);
    for (i = lost + 1; lost >= 0 && i < n; i++)
        if (t->ev[i] == ZKL_STATE_RECONNECTED)
            return 1;
    return 0;
}

static void thaw(void)
{
    zkt_server_thaw();
}

/* The server stalls: the holder must see SUSPENDED, then LOST within about a
 * session timeout, and must not believe it holds the lock after that. */
Test(session, stalled_server_suspends_then_loses, .fini = thaw, .timeout = 90)
{
    struct timeline t = {0};
    zkl_client *c = zkt_client_cb(2000, record, &t);
    char *path = zkt_path("stall");
    zkl_mutex *m;
    int64_t frozen_at;
    int s, l;
    ok(zkl_mutex_create(c, path, &m), "create");
    ok(zkl_mutex_acquire(m, 5000), "acquire");
    frozen_at = zkt_now_ms();
    zkt_server_freeze();
    cr_assert(zkt_wait_for(saw_lost, &t, 15000), "no LOST while the server was frozen");
    s = find(&t, ZKL_STATE_SUSPENDED);
    l = find(&t, ZKL_STATE_LOST);
    cr_assert(s >= 0 && s < l, "SUSPENDED must come before LOST");
    cr_assert_lt(t.at[s] - frozen_at, 2500, "SUSPENDED late: %lld ms",
                 (long long)(t.at[s] - frozen_at));
    cr_assert_not(zkl_mutex_is_held(m), "a hold must not outlive LOST");
    {
        /* no session to be had: a timed acquire says so in its time */
        char *other = zkt_path("stall2");
        zkl_mutex *m2;
        int64_t t0;
        zkl_status st;
        ok(zkl_mutex_create(c, other, &m2), "create");
        t0 = zkt_now_ms();
        st = zkl_mutex_acquire(m2, 300);
        cr_assert_eq(st, ZKL_ETIMEDOUT, "acquire with no session: %s (%s)", zkl_strerror(st),
                     zkl_errmsg());
        cr_assert_lt(zkt_now_ms() - t0, 3000, "a 300 ms acquire took %lld ms",
                     (long long)(zkt_now_ms() - t0));
        ok(zkl_mutex_destroy(m2), "destroy");
        free(other);
    }
    zkt_server_thaw();
    cr_assert(zkt_wait_for(saw_reconnect_after_lost, &t, 20000), "no new session after the thaw");
    cr_assert_eq(zkl_mutex_release(m), ZKL_ELOST);
    ok(zkl_mutex_acquire(m, 10000), "lock again in the new session");
    ok(zkl_mutex_release(m), "release");
    ok(zkl_mutex_destroy(m), "destroy");
    ok(zkl_client_close(c), "close");
    free(path);
}

Test(session, quiet_by_default, .init = cr_redirect_stderr)
{
    zkl_client_options o;
    zkl_client *c = NULL;
    zkl_client_options_init(&o);
    o.connect_timeout_ms = 800;
    cr_assert_eq(zkl_client_open("127.0.0.1:1", &o, &c), ZKL_ECONNECT);
    c = zkt_client(0);
    ok(zkl_client_close(c), "close");
    fflush(stderr);
    cr_assert_stderr_eq_str("", "the ZooKeeper client wrote to stderr");
}

static atomic_int log_lines;
static void count_log(zkl_log_level level, const char *msg, void *ud)
{
    (void)level;
    (void)ud;
    if (msg && *msg)
        atomic_fetch_add(&log_lines, 1);
}

Test(session, log_goes_to_the_callback, .init = cr_redirect_stderr)
{
    zkl_client *c;
    zkl_log_set(count_log, ZKL_LOG_DEBUG, NULL);
    c = zkt_client(0);
    ok(zkl_client_close(c), "close");
    zkl_log_set(NULL, ZKL_LOG_OFF, NULL);
    cr_assert_gt(atomic_load(&log_lines), 0, "the callback got nothing");
    fflush(stderr);
    cr_assert_stderr_eq_str("");
}

struct captured {
    pthread_mutex_t mu;
    int n[5];          /* lines per level */
    char adopted[256]; /* zklock's own line about the adoption, if any */
};

static void capture_log(zkl_log_level level, const char *msg, void *ud)
{
    struct captured *cap = ud;
    pthread_mutex_lock(&cap->mu);
    if (level >= ZKL_LOG_ERROR && level <= ZKL_LOG_DEBUG)
        cap->n[level]++;
    if (strstr(msg, "adopted"))
        snprintf(cap->adopted, sizeof cap->adopted, "%s", msg);
    pthread_mutex_unlock(&cap->mu);
}

/* The ZooKeeper client's lines come at their own level, zklock's own lines
 * come through the same callback, and a level filters both. */
Test(session, log_levels_reach_the_callback, .init = cr_redirect_stderr)
{
    struct captured cap = {.mu = PTHREAD_MUTEX_INITIALIZER};
    zkl_client_options o;
    zkl_client *c = NULL;
    zhandle_t *zh;
    char *path = zkt_path("loglevels");
    zkl_mutex *m;

    zkl_log_set(capture_log, ZKL_LOG_DEBUG, &cap);
    zkl_client_options_init(&o);
    o.connect_timeout_ms = 300;
    cr_assert_eq(zkl_client_open("127.0.0.1:1", &o, &c), ZKL_ECONNECT);
    cr_assert_gt(cap.n[ZKL_LOG_ERROR], 0, "a refused connection is an ERROR line");

    c = zkt_client(0);
    zh = zkt_raw();
    /* the parent first: else the fault is spent on a create that finds none */
    cr_assert_eq(zkt_make_path(zh, path, 0), ZOK);
    ok(zkl_mutex_create(c, path, &m), "create");
    zkt_fault_create_reply_lost(c, 1);
    ok(zkl_mutex_acquire(m, 10000), "acquire through a lost reply");
    cr_assert(strstr(cap.adopted, path), "no line about the adoption: '%s'", cap.adopted);
    ok(zkl_mutex_release(m), "release");

    cap.adopted[0] = '\0';
    zkl_log_set(capture_log, ZKL_LOG_WARN, &cap);
    zkt_fault_create_reply_lost(c, 1);
    ok(zkl_mutex_acquire(m, 10000), "acquire through a lost reply");
    cr_assert_str_eq(cap.adopted, "", "an INFO line got through a WARN level");
    ok(zkl_mutex_release(m), "release");
    zkl_log_set(NULL, ZKL_LOG_OFF, NULL);
    ok(zkl_mutex_destroy(m), "destroy");
    ok(zkl_client_close(c), "close");
    zookeeper_close(zh);
    free(path);
    fflush(stderr);
    cr_assert_stderr_eq_str("", "a callback was set: nothing goes to stderr");
}

/* zkl_log_stderr writes "zklock LEVEL: message" lines. */
Test(session, stderr_log_sink, .init = cr_redirect_stderr)
{
    zkl_client_options o;
    zkl_client *c = NULL;
    char line[64] = "";
    zkl_log_set(zkl_log_stderr, ZKL_LOG_ERROR, NULL);
    zkl_client_options_init(&o);
    o.connect_timeout_ms = 300;
    cr_assert_eq(zkl_client_open("127.0.0.1:1", &o, &c), ZKL_ECONNECT);
    zkl_log_set(NULL, ZKL_LOG_OFF, NULL);
    fflush(stderr);
    cr_assert(fgets(line, sizeof line, cr_get_redirected_stderr()), "nothing on stderr");
    cr_assert_eq(strncmp(line, "zklock ERROR: ", 14), 0, "'%s'", line);
}

Test(session, vanished_parent_is_recreated)
{
    zkl_client *c = zkt_client(0);
    zhandle_t *zh = zkt_raw();
    char *path = zkt_path("vanish");
    char deep[300];
    zkl_mutex *m;
    struct Stat st;
    int rc;
    snprintf(deep, sizeof deep, "%s/a/b", path);
    ok(zkl_mutex_create(c, deep, &m), "create");
    ok(zkl_mutex_acquire(m, 5000), "acquire (creates three levels of parents)");
    cr_assert_eq(zoo_exists(zh, deep, 0, &st), ZOK);
    cr_assert_eq(st.ephemeralOwner, 0);
    ok(zkl_mutex_release(m), "release");
    ok(zkl_client_drain(c, 5000), "drain");
    /* what the container reaper does: the parents go (the server's own
     * reaper, every second here, may get there first: gone either way) */
    rc = zoo_delete(zh, deep, -1);
    cr_assert(rc == ZOK || rc == ZNONODE, "delete %s: %s", deep, zerror(rc));
    snprintf(deep, sizeof deep, "%s/a", path);
    rc = zoo_delete(zh, deep, -1);
    cr_assert(rc == ZOK || rc == ZNONODE, "delete %s: %s", deep, zerror(rc));
    cr_assert_eq(zoo_exists(zh, deep, 0, NULL), ZNONODE);
    ok(zkl_mutex_acquire(m, 5000), "acquire after the parents vanished");
    ok(zkl_mutex_release(m), "release");
    ok(zkl_mutex_destroy(m), "destroy");
    ok(zkl_client_close(c), "close");
    zookeeper_close(zh);
    free(path);
}

Test(session, digest_auth_and_chroot)
{
    zkl_client_options o;
    zkl_client *c = NULL;
    zkl_mutex *m;
    zhandle_t *zh = zkt_raw();
    char connect[1200], *root = zkt_path("chroot");
    cr_assert_eq(zkt_make_path(zh, root, 0), ZOK);
    snprintf(connect, sizeof connect, "%s%s", zkt_servers(), root);
    zkl_client_options_init(&o);
    o.auth_digest = "zklock:secret";
    ok(zkl_client_open(connect, &o, &c), "open with auth and chroot");
    ok(zkl_mutex_create(c, "/inner", &m), "create");
    ok(zkl_mutex_acquire(m, 5000), "acquire");
    {
        char inner[1300];
        snprintf(inner, sizeof inner, "%s/inner", root);
        cr_assert_eq(zkt_children_settle(zh, inner, 1), 1, "the node lives under the chroot");
    }
    ok(zkl_mutex_release(m), "release");
    ok(zkl_mutex_destroy(m), "destroy");
    ok(zkl_client_close(c), "close");
    zookeeper_close(zh);
    free(root);
}

/* Two sessions' mutexes: destroy both, close both. */
static void destroy_pair(zkl_mutex *m, zkl_mutex *m2, zkl_client *c, zkl_client *other)
{
    ok(zkl_mutex_destroy(m), "destroy");
    ok(zkl_mutex_destroy(m2), "destroy");
    ok(zkl_client_close(c), "close");
    ok(zkl_client_close(other), "close");
}

Test(session, failed_release_delete_finishes_in_background)
{
    zkl_client *c = zkt_client(0), *other = zkt_client(0);
    zhandle_t *zh = zkt_raw();
    char *path = zkt_path("bgdelete");
    zkl_mutex *m, *m2;
    ok(zkl_mutex_create(c, path, &m), "create");
    ok(zkl_mutex_create(other, path, &m2), "create");
    ok(zkl_mutex_acquire(m, 5000), "acquire");
    zkt_fault_delete_lost(c, 1);
    ok(zkl_mutex_release(m), "release (delete fails in the foreground)");
    cr_assert_not(zkl_mutex_is_held(m));
    /* the next contender gets it once the background delete lands */
    ok(zkl_mutex_acquire(m2, 10000), "another session acquires");
    ok(zkl_client_drain(c, 5000), "drain");
    cr_assert_eq(zkt_children_settle(zh, path, 1), 1);
    ok(zkl_mutex_release(m2), "release");
    cr_assert_eq(zkt_children_settle(zh, path, 0), 0);
    /* the same for a timed-out waiter's node */
    ok(zkl_mutex_acquire(m2, 5000), "hold");
    zkt_fault_delete_lost(c, 1);
    cr_assert_eq(zkl_mutex_acquire(m, 200), ZKL_ETIMEDOUT);
    ok(zkl_client_drain(c, 5000), "drain");
    cr_assert_eq(zkt_children_settle(zh, path, 1), 1, "the timed-out waiter's node must go");
    ok(zkl_mutex_release(m2), "release");
    destroy_pair(m, m2, c, other);
    zookeeper_close(zh);
    free(path);
}

/* A background delete that keeps meeting connection loss is tried again,
 * with a growing pause (50 ms doubling), until it lands; drain waits for it,
 * and the contender behind gets the lock only then. */
Test(session, background_delete_is_retried_until_it_lands)
{
    zkl_client *c = zkt_client(0), *other = zkt_client(0);
    zhandle_t *zh = zkt_raw();
    char *path = zkt_path("bgretry");
    zkl_mutex *m, *m2;
    int64_t t0, took;
    ok(zkl_mutex_create(c, path, &m), "create");
    ok(zkl_mutex_create(other, path, &m2), "create");
    ok(zkl_mutex_acquire(m, 5000), "acquire");
    zkt_fault_delete_lost(c, 1);
    zkt_fault_bg_delete_lost(c, 3);
    t0 = zkt_now_ms();
    ok(zkl_mutex_release(m), "release (delete fails in the foreground)");
    cr_assert_eq(zkl_mutex_acquire(m2, 0), ZKL_ETIMEDOUT, "the node must stay until deleted");
    ok(zkl_client_drain(c, 5000), "drain");
    took = zkt_now_ms() - t0;
    /* three failed tries: pauses of 100, 200 and 400 ms before the fourth */
    cr_assert_geq(took, 600, "the retries came without a pause (%lld ms)", (long long)took);
    cr_assert_eq(zkt_children_settle(zh, path, 0), 0, "the node must be gone after drain");
    ok(zkl_mutex_acquire(m2, 5000), "another session acquires");
    ok(zkl_mutex_release(m2), "release");
    destroy_pair(m, m2, c, other);
    zookeeper_close(zh);
    free(path);
}

/* An acquire that gives up while the server is stalled leaves no node behind:
 * the stalled server still applies the create it has queued once it runs
 * again, and the client must find that node by its prefix and delete it.
 * Another session holds the lock meanwhile, so the parent (a container) is
 * not empty and stays. */
Test(session, acquire_given_up_on_a_stalled_server_leaves_no_node, .fini = thaw, .timeout = 90)
{
    zkl_client *c = zkt_client(20000), *b = zkt_client(0); /* c outlives the stall */
    char *path = zkt_path("stallgiveup"), **nodes;
    zkl_mutex *m, *mb;
    zkl_status st;
    size_t n;
    int64_t t0, took;
    ok(zkl_mutex_create(c, path, &m), "create");
    ok(zkl_mutex_create(b, path, &mb), "create");
    ok(zkl_mutex_acquire(mb, 5000), "b holds");
    zkt_server_freeze();
    t0 = zkt_now_ms();
    st = zkl_mutex_acquire(m, 700);
    took = zkt_now_ms() - t0;
    zkt_server_thaw();
    cr_assert(st == ZKL_ETIMEDOUT || st == ZKL_ECONNLOSS, "acquire on a stalled server: %s (%s)",
              zkl_strerror(st), zkl_errmsg());
    cr_assert_lt(took, 3000, "a 700 ms acquire took %lld ms", (long long)took);
    cr_assert_not(zkl_mutex_is_held(m));
    zkt_server_freeze();
    t0 = zkt_now_ms();
    cr_assert_eq(zkl_client_drain(c, 300), ZKL_ETIMEDOUT,
                 "the cleanup cannot finish while stalled");
    took = zkt_now_ms() - t0;
    zkt_server_thaw();
    cr_assert(strstr(zkl_errmsg(), "pending"), "%s", zkl_errmsg());
    cr_assert_lt(took, 3000, "a 300 ms drain took %lld ms", (long long)took);
    ok(zkl_client_drain(c, 15000), "the uncertain create is cleaned up");
    /* listed through c's session, so after the create the server had queued */
    ok(zkl_mutex_participants(m, &nodes, &n), "participants");
    zkl_strings_free(nodes, n);
    cr_assert_eq(n, 1, "%zu node(s) where only b's should be", n);
    ok(zkl_mutex_release(mb), "b lets go");
    ok(zkl_mutex_acquire(m, 10000), "lock again");
    ok(zkl_mutex_release(m), "release");
    ok(zkl_mutex_destroy(m), "destroy");
    ok(zkl_mutex_destroy(mb), "destroy");
    ok(zkl_client_close(c), "close");
    ok(zkl_client_close(b), "close");
    free(path);
}
