/*
 * zkt.c - see zkt.h.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/engine/acq.h"
#include "core/async/async.h"
#include "session/client.h"
#include "expire.h"
#include "zkt.h"

static char servers[1024];
static pthread_once_t servers_once = PTHREAD_ONCE_INIT;

static void read_servers(void)
{
    const char *env = getenv("ZKL_TEST_SERVERS");
    const char *dir = getenv("ZKL_TEST_ZK_DIR");
    char file[1024];
    FILE *f;
    if (env && *env) {
        snprintf(servers, sizeof servers, "%s", env);
        return;
    }
    if (!dir)
        return;
    snprintf(file, sizeof file, "%s/connect", dir);
    f = fopen(file, "r");
    if (!f)
        return;
    if (!fgets(servers, sizeof servers, f))
        servers[0] = '\0';
    fclose(f);
    servers[strcspn(servers, "\r\n")] = '\0';
}

const char *zkt_servers(void)
{
    pthread_once(&servers_once, read_servers);
    cr_assert(servers[0], "no test server: set ZKL_TEST_SERVERS or ZKL_TEST_ZK_DIR "
                          "(run through ctest)");
    return servers;
}

zkl_client *zkt_client_cb(int session_timeout_ms, zkl_state_fn fn, void *ud)
{
    zkl_client_options o;
    zkl_client *c = NULL;
    zkl_status st;
    zkl_client_options_init(&o);
    o.session_timeout_ms = session_timeout_ms > 0 ? session_timeout_ms : 4000;
    o.connect_timeout_ms = 10000;
    o.on_state = fn;
    o.state_userdata = ud;
    st = zkl_client_open(zkt_servers(), &o, &c);
    cr_assert_eq(st, ZKL_OK, "open: %s (%s)", zkl_strerror(st), zkl_errmsg());
    return c;
}

zkl_client *zkt_client(int session_timeout_ms)
{
    return zkt_client_cb(session_timeout_ms, NULL, NULL);
}

int zkt_make_path(zhandle_t *zh, const char *path, int mode)
{
    int rc = ZNONODE, tries;
    for (tries = 0; tries < 5 && rc == ZNONODE; tries++) {
        rc = zoo_create(zh, "/zkltest", "", 0, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
        cr_assert(rc == ZOK || rc == ZNODEEXISTS, "/zkltest: %s", zerror(rc));
        rc = zoo_create(zh, path, "", 0, &ZOO_OPEN_ACL_UNSAFE, mode, NULL, 0);
    }
    return rc;
}

char *zkt_path(const char *what)
{
    static atomic_int counter;
    char *p = malloc(256);
    unsigned r;
    FILE *f = fopen("/dev/urandom", "r");
    cr_assert(f && fread(&r, sizeof r, 1, f) == 1);
    fclose(f);
    snprintf(p, 256, "/zkltest/%s-%d-%d-%08x", what, (int)getpid(), atomic_fetch_add(&counter, 1),
             r);
    return p;
}

static void raw_watcher(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
    (void)zh;
    (void)type;
    (void)path;
    if (state == ZOO_CONNECTED_STATE)
        atomic_store((atomic_int *)ctx, 1);
}

static zhandle_t *raw_open(const clientid_t *cid)
{
    static atomic_int flags[64];
    static atomic_int next;
    atomic_int *connected = &flags[atomic_fetch_add(&next, 1) % 64];
    zhandle_t *zh;
    int i;
    atomic_store(connected, 0);
    if (!getenv("ZKT_LOG")) /* (the ZooKeeper client's level is the process's) */
        zoo_set_debug_level((ZooLogLevel)0);
    zh = zookeeper_init(zkt_servers(), raw_watcher, 10000, cid, connected, 0);
    cr_assert(zh);
    for (i = 0; i < 1000 && !atomic_load(connected); i++)
        zkt_sleep_ms(10);
    cr_assert(atomic_load(connected), "raw handle did not connect");
    return zh;
}

zhandle_t *zkt_raw(void)
{
    return raw_open(NULL);
}

/* The number of children of path in *n (0 if it is gone); the rc. */
static int children_rc(zhandle_t *zh, const char *path, int *n)
{
    struct String_vector sv;
    int rc = zoo_get_children(zh, path, 0, &sv);
    *n = 0;
    if (rc == ZNONODE)
        return ZOK;
    if (rc == ZOK) {
        *n = sv.count;
        deallocate_String_vector(&sv);
    }
    return rc;
}

int zkt_children(zhandle_t *zh, const char *path)
{
    int n, rc = children_rc(zh, path, &n);
    cr_assert_eq(rc, ZOK, "get_children %s: %s", path, zerror(rc));
    return n;
}

static long seq_of(const char *name)
{
    size_t n = strlen(name);
    return n >= 10 ? strtol(name + n - 10, NULL, 10) : -1;
}

char *zkt_child_in_line(zhandle_t *zh, const char *path, int i)
{
    struct String_vector kids = {0};
    const char *pick[64];
    char *out;
    int rc = zoo_get_children(zh, path, 0, &kids), n, j, k;
    cr_assert_eq(rc, ZOK, "get_children %s: %s", path, zerror(rc));
    n = kids.count < 64 ? kids.count : 64;
    for (j = 0; j < n; j++) { /* insertion sort by sequence */
        const char *x = kids.data[j];
        for (k = j; k > 0 && seq_of(pick[k - 1]) > seq_of(x); k--)
            pick[k] = pick[k - 1];
        pick[k] = x;
    }
    cr_assert_lt(i, n, "%s has %d nodes in line, none %d-th", path, n, i);
    out = malloc(strlen(path) + strlen(pick[i]) + 2);
    cr_assert(out);
    sprintf(out, "%s/%s", path, pick[i]);
    deallocate_String_vector(&kids);
    return out;
}

void zkt_refused_at_once(zkl_client *c, zhandle_t *zh, const char *path, zkl_status want,
                         const char *why)
{
    char deep[512];
    const char *paths[2];
    int i;
    snprintf(deep, sizeof deep, "%s/sub/lock", path);
    paths[0] = path; /* the lock node itself is refused */
    paths[1] = deep; /* a parent on the way is refused */
    for (i = 0; i < 2; i++) {
        zkl_mutex *m;
        zkl_status st;
        int64_t t0 = zkt_now_ms();
        cr_assert_eq(zkl_mutex_create(c, paths[i], &m), ZKL_OK, "create: %s", zkl_errmsg());
        st = zkl_mutex_acquire(m, 20000);
        cr_assert_eq(st, want, "%s: %s (%s)", paths[i], zkl_strerror(st), zkl_errmsg());
        cr_assert(strstr(zkl_errmsg(), path), "the message names the path: %s", zkl_errmsg());
        cr_assert(!why || strstr(zkl_errmsg(), why), "and says why: %s", zkl_errmsg());
        cr_assert_lt(zkt_now_ms() - t0, 5000, "%s: refused only after %lld ms", paths[i],
                     (long long)(zkt_now_ms() - t0));
        cr_assert_not(zkl_mutex_is_held(m));
        cr_assert_eq(zkl_mutex_destroy(m), ZKL_OK);
    }
    cr_assert_eq(zkl_client_drain(c, 5000), ZKL_OK);
    cr_assert_eq(zkt_children(zh, path), 0, "nothing was created under %s", path);
}

int zkt_children_settle(zhandle_t *zh, const char *path, int want)
{
    int64_t end = zkt_now_ms() + 10000;
    int n, rc;
    /* a raw handle still reconnecting (after a server restart, say) may
     * time a request out: that is not yet an answer */
    while (((rc = children_rc(zh, path, &n)) != ZOK || n != want) && zkt_now_ms() < end) {
        if (rc != ZOK && rc != ZCONNECTIONLOSS && rc != ZOPERATIONTIMEOUT)
            break;
        zkt_sleep_ms(10);
    }
    cr_assert_eq(rc, ZOK, "get_children %s: %s", path, zerror(rc));
    return n;
}

uint64_t zkt_lock_requests(zkl_client *c)
{
    zkl_client_stats st;
    cr_assert_eq(zkl_client_stats_get(c, &st), ZKL_OK);
    return st.requests - zkt_lease_syncs(c);
}

uint64_t zkt_list_requests(zkl_client *c)
{
    return atomic_load(&c->tally.req_kind[ZKL__REQ_LIST]);
}

uint64_t zkt_exists_requests(zkl_client *c)
{
    return atomic_load(&c->tally.req_kind[ZKL__REQ_EXISTS]);
}

uint64_t zkt_requests_settle(zkl_client *c)
{
    uint64_t last, now;
    int64_t end = zkt_now_ms() + 15000, quiet_since;
    last = zkt_lock_requests(c);
    quiet_since = zkt_now_ms();
    while (zkt_now_ms() - quiet_since < 300) {
        cr_assert_lt(zkt_now_ms(), end, "the client never stopped sending requests");
        zkt_sleep_ms(20);
        now = zkt_lock_requests(c);
        if (now != last) {
            last = now;
            quiet_since = zkt_now_ms();
        }
    }
    return last;
}

void zkt_expire(zkl_client *c)
{
    clientid_t cid = zkl__session_client_id(c);
    cr_assert_eq(zkt_expire_session(zkt_servers(), &cid), 0, "could not expire the session");
}

void zkt_fault_create_reply_lost(zkl_client *c, int n)
{
    zkt_fault_set(c, ZKL__FAULT_CREATE_REPLY_LOST, n);
}

void zkt_fault_create_lands_late(zkl_client *c, int n)
{
    zkt_fault_set(c, ZKL__FAULT_CREATE_LANDS_LATE, n);
}

void zkt_fault_create_send_lost(zkl_client *c, int n)
{
    zkt_fault_set(c, ZKL__FAULT_CREATE_SEND_LOST, n);
}

void zkt_fault_delete_lost(zkl_client *c, int n)
{
    zkt_fault_set(c, ZKL__FAULT_DELETE_LOST, n);
}

void zkt_fault_bg_delete_lost(zkl_client *c, int n)
{
    zkt_fault_set(c, ZKL__FAULT_BG_DELETE_LOST, n);
}

void zkt_fault_deaf_bells(zkl_client *c)
{
    zkt_fault_set(c, ZKL__FAULT_DEAF_BELLS, 1);
}

void zkt_fault_await_ms(zkl_client *c, int ms)
{
    zkt_fault_set(c, ZKL__FAULT_JOIN_AWAIT_MS, ms);
}

void zkt_fault_note_delay(zkl_client *c, int ms)
{
    zkt_fault_set(c, ZKL__FAULT_NOTE_DELAY_MS, ms);
}

void zkt_fault_dispatch_pause(zkl_client *c, int us)
{
    zkt_fault_set(c, ZKL__FAULT_DISPATCH_PAUSE_US, us);
}

void zkt_state_event(zkl_client *c, zkl_conn_state st)
{
    pthread_mutex_lock(&c->mu);
    zkl__event_push_locked(c, c->conn.sess, st);
    zkl__worker_kick_locked(c);
    pthread_mutex_unlock(&c->mu);
}

int zkt_reports_queued(zkl_client *c)
{
    int n = 0;
    const zkl__report *r;
    pthread_mutex_lock(&c->mu);
    for (r = c->engine ? c->engine->reports : NULL; r; r = r->next)
        n++;
    pthread_mutex_unlock(&c->mu);
    return n;
}

void zkt_fault_sleep_on_cv(zkl_client *c)
{
    zkt_fault_set(c, ZKL__FAULT_SLEEP_ON_CV, 1);
}

int zkt_many_clients_threshold(void)
{
    return zkl__many_clients_threshold();
}

struct session_seen {
    zkl_client *c;
    uint64_t epoch;
};

static int session_ended(void *arg)
{
    struct session_seen *w = arg;
    int ended;
    pthread_mutex_lock(&w->c->mu);
    ended = w->c->conn.sess->epoch != w->epoch || w->c->conn.sess->expired;
    pthread_mutex_unlock(&w->c->mu);
    return ended;
}

void zkt_expire_seen(zkl_client *c)
{
    struct session_seen w = {c, 0};
    pthread_mutex_lock(&c->mu);
    w.epoch = c->conn.sess->epoch;
    pthread_mutex_unlock(&c->mu);
    zkt_expire(c);
    cr_assert(zkt_wait_for(session_ended, &w, 10000), "the client never saw its session end");
}

void zkt_fault_session_event_delay(zkl_client *c, int ms)
{
    zkt_fault_set(c, ZKL__FAULT_EVENT_DELAY_MS, ms);
}

void zkt_defer_window(zkl_client *c, int us)
{
    zkt_fault_set(c, ZKL__FAULT_HOLD_BACK_US, us > 0 ? us : -1);
}

uint64_t zkt_worker_wakes(zkl_client *c)
{
    uint64_t n;
    pthread_mutex_lock(&c->mu);
    n = c->wk.wakes;
    pthread_mutex_unlock(&c->mu);
    return n;
}

static pid_t server_pid(void)
{
    const char *dir = getenv("ZKL_TEST_ZK_DIR");
    char file[1024];
    long pid = 0;
    FILE *f;
    cr_assert(dir, "ZKL_TEST_ZK_DIR is not set");
    snprintf(file, sizeof file, "%s/server1/pid", dir);
    f = fopen(file, "r");
    cr_assert(f, "no %s", file);
    cr_assert_eq(fscanf(f, "%ld", &pid), 1);
    fclose(f);
    cr_assert_gt(pid, 1);
    return (pid_t)pid;
}

void zkt_server_freeze(void)
{
    cr_assert_eq(kill(server_pid(), SIGSTOP), 0);
}

void zkt_server_thaw(void)
{
    kill(server_pid(), SIGCONT);
}

int64_t zkt_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void zkt_log_from_env(void)
{
    if (getenv("ZKT_LOG"))
        zkl_log_set(zkl_log_stderr, (zkl_log_level)atoi(getenv("ZKT_LOG")), NULL);
}

void zkt_sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

int zkt_wait_for(int (*cond)(void *), void *arg, int ms)
{
    int64_t end = zkt_now_ms() + ms;
    int v;
    while (!(v = cond(arg)) && zkt_now_ms() < end)
        zkt_sleep_ms(20);
    return v;
}

void zkt_ok_at(zkl_status st, const char *what, const char *file, int line)
{
    cr_assert_eq(st, ZKL_OK, "%s:%d: %s: %s (%s)", file, line, what, zkl_strerror(st),
                 zkl_errmsg());
}
