/*
 * test_restart.c - the standalone test server restarts (SIGTERM, start again
 * on the same data) while a holder holds and two sessions wait. The restart is
 * shorter than the session timeout, so every session survives: nobody sees
 * LOST, the waiters keep their places and get the lock in order, and nothing
 * is left behind. The test has a server of its own (tests/CMakeLists.txt)
 * that allows SESSION_MS: a JVM restart under valgrind on a busy machine has
 * taken 6.6 s, which left no margin under the shared server's 10 s cap.
 *
 * How soon a client is back after the server is depends on the ZooKeeper C
 * client's reconnect loop, not on zklock, so the test waits for every client
 * to report RECONNECTED (bounded by RECONNECT_MS, well inside the session
 * timeout) and prints how long that took. If one is not back in time, the
 * test prints the clients' recent log lines, which say why.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "zkt.h"

#define SESSION_MS 30000
#define RECONNECT_MS (SESSION_MS * 2 / 3)

/* The ZooKeeper client's recent log lines (INFO and up), kept for a failure report. */
#define RING_LINES 200
static char ring[RING_LINES][240];
static unsigned ring_next;
static pthread_mutex_t ring_mu = PTHREAD_MUTEX_INITIALIZER;

static void ring_log(zkl_log_level level, const char *message, void *ud)
{
    (void)level;
    (void)ud;
    if (strstr(message, "Client environment:"))
        return; /* a dozen lines per session, never the cause */
    pthread_mutex_lock(&ring_mu);
    snprintf(ring[ring_next++ % RING_LINES], sizeof ring[0], "%s", message);
    pthread_mutex_unlock(&ring_mu);
}

/* Print the client's recent log and the server's, for a failure report. */
static void ring_print(void)
{
    char cmd[1200];
    unsigned i, first;
    pthread_mutex_lock(&ring_mu);
    first = ring_next > RING_LINES ? ring_next - RING_LINES : 0;
    fprintf(stderr, "--- the last %u client log lines ---\n", ring_next - first);
    for (i = first; i < ring_next; i++)
        fprintf(stderr, "%s\n", ring[i % RING_LINES]);
    fprintf(stderr, "--- end of the client log; the server's log follows ---\n");
    pthread_mutex_unlock(&ring_mu);
    snprintf(cmd, sizeof cmd, "tail -n 60 '%s/server1/zookeeper.log' >&2",
             getenv("ZKL_TEST_ZK_DIR"));
    if (system(cmd) != 0)
        fprintf(stderr, "(no server log)\n");
}

static void log_to_ring(void)
{
    zkl_log_set(ring_log, ZKL_LOG_INFO, NULL);
}

static void zk_server(const char *args)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "'%s' %s --dir '%s' >/dev/null 2>&1", getenv("ZKL_ZK_SERVER"), args,
             getenv("ZKL_TEST_ZK_DIR"));
    cr_assert_eq(system(cmd), 0, "zk-server %s failed", args);
}

static atomic_int lost_events, reconnects, order_next;

static void on_state(zkl_client *c, zkl_conn_state st, void *ud)
{
    (void)c;
    (void)ud;
    if (st == ZKL_STATE_LOST)
        atomic_fetch_add(&lost_events, 1);
    if (st == ZKL_STATE_RECONNECTED)
        atomic_fetch_add(&reconnects, 1);
}

static int all_reconnected(void *n)
{
    return atomic_load(&reconnects) >= *(int *)n;
}

struct waiter {
    zkl_mutex *m;
    zkl_status st;
    int order; /* in which order it got the lock */
};

static void *waiter_main(void *arg)
{
    struct waiter *w = arg;
    w->st = zkl_mutex_acquire(w->m, 60000);
    if (w->st == ZKL_OK) {
        w->order = atomic_fetch_add(&order_next, 1);
        zkt_sleep_ms(100);
        zkl_mutex_release(w->m);
    }
    return NULL;
}

static void restart_server(void)
{
    zk_server("start-one 1"); /* in case a failed test left it down */
    zkl_log_set(NULL, ZKL_LOG_OFF, NULL);
}

Test(restart, sessions_and_waiters_survive_a_short_restart, .timeout = 120, .init = log_to_ring,
     .fini = restart_server)
{
    zkl_client *h = zkt_client_cb(SESSION_MS, on_state, NULL);
    zkl_client *c1 = zkt_client_cb(SESSION_MS, on_state, NULL);
    zkl_client *c2 = zkt_client_cb(SESSION_MS, on_state, NULL);
    zhandle_t *raw;
    char *path = zkt_path("restart");
    zkl_mutex *mh, *m1, *m2;
    struct waiter w1 = {0}, w2 = {0};
    pthread_t t1, t2;
    int64_t id_h = zkl_client_session_id(h), t0, down_ms, back_ms;
    int clients = 3;
    zkl_status st;
    char **v;
    size_t n;
    cr_assert_eq(zkl_client_session_timeout(h), SESSION_MS,
                 "the restart server must grant %d ms sessions (zkr fixture)", SESSION_MS);
    ok(zkl_mutex_create(h, path, &mh), "create");
    ok(zkl_mutex_create(c1, path, &m1), "create");
    ok(zkl_mutex_create(c2, path, &m2), "create");
    ok(zkl_mutex_acquire(mh, 5000), "holder");
    w1.m = m1;
    w2.m = m2;
    raw = zkt_raw();
    pthread_create(&t1, NULL, waiter_main, &w1);
    cr_assert_eq(zkt_children_settle(raw, path, 2), 2, "the first waiter never queued");
    zkt_requests_settle(c1);
    pthread_create(&t2, NULL, waiter_main, &w2);
    cr_assert_eq(zkt_children_settle(raw, path, 3), 3, "the second waiter never queued");
    zkt_requests_settle(c2);
    ok(zkl_mutex_participants(mh, &v, &n), "participants");
    cr_assert_eq(n, 3);
    zkl_strings_free(v, n);

    atomic_store(&reconnects, 0);
    t0 = zkt_now_ms();
    zk_server("stop-one --term 1");
    zkt_sleep_ms(1500);
    zk_server("start-one 1");
    down_ms = zkt_now_ms() - t0;
    printf("restart: server down and back in %lld ms (session timeout %d ms)\n", (long long)down_ms,
           SESSION_MS);
    cr_assert_lt(down_ms, SESSION_MS / 2, "the restart took too long to test a short one");
    t0 = zkt_now_ms();
    if (!zkt_wait_for(all_reconnected, &clients, RECONNECT_MS)) {
        ring_print();
        cr_assert_fail("only %d of %d clients reconnected within %d ms of the server's return",
                       atomic_load(&reconnects), clients, RECONNECT_MS);
    }
    back_ms = zkt_now_ms() - t0;
    printf("restart: every client reconnected %lld ms after the server was back\n",
           (long long)back_ms);

    /* the holder still holds, in the same session */
    cr_assert(zkl_mutex_is_held(mh));
    cr_assert_eq(zkl_client_session_id(h), id_h, "the session must survive the restart");
    st = zkl_mutex_participants(mh, &v, &n);
    if (st != ZKL_OK)
        ring_print();
    ok(st, "participants after the restart");
    cr_assert_eq(n, 3, "every node must survive the restart");
    zkl_strings_free(v, n);
    ok(zkl_mutex_release(mh), "holder releases");
    pthread_join(t1, NULL);
    pthread_join(t2, NULL);
    ok(w1.st, "first waiter");
    ok(w2.st, "second waiter");
    cr_assert_eq(w1.order, 0, "the first in line must get it first");
    cr_assert_eq(w2.order, 1);
    cr_assert_eq(atomic_load(&lost_events), 0, "no session may be lost by a short restart");
    ok(zkl_client_drain(c2, 5000), "drain");
    cr_assert_eq(zkt_children_settle(raw, path, 0), 0);
    zookeeper_close(raw);
    ok(zkl_mutex_destroy(mh), "destroy");
    ok(zkl_mutex_destroy(m1), "destroy");
    ok(zkl_mutex_destroy(m2), "destroy");
    ok(zkl_client_close(h), "close");
    ok(zkl_client_close(c1), "close");
    ok(zkl_client_close(c2), "close");
    free(path);
}

static int lost_seen(void *arg)
{
    (void)arg;
    return atomic_load(&lost_events) > 0;
}

/*
 * The server stays down longer than a session timeout: the client declares
 * its session LOST (Curator's rule) and cannot open the next one. An acquire
 * meanwhile returns ZKL_ETIMEDOUT in its own time, saying it is not connected;
 * once the server is back the client opens a new session by itself and the
 * same lock object works again.
 */
Test(restart, no_session_while_the_server_is_down_then_a_new_one, .timeout = 120,
     .fini = restart_server)
{
    zkl_client *c = zkt_client_cb(2000, on_state, NULL);
    char *path = zkt_path("downlong");
    zkl_mutex *m;
    zkl_client_stats stats;
    int64_t id = zkl_client_session_id(c), t0, took;
    zkl_status st;
    ok(zkl_mutex_create(c, path, &m), "create");
    ok(zkl_mutex_acquire(m, 5000), "acquire");
    ok(zkl_mutex_release(m), "release");
    ok(zkl_client_drain(c, 5000), "drain");
    atomic_store(&lost_events, 0);
    zk_server("stop-one --term 1");
    cr_assert(zkt_wait_for(lost_seen, NULL, 15000), "the session was never declared lost");
    t0 = zkt_now_ms();
    st = zkl_mutex_acquire(m, 300);
    took = zkt_now_ms() - t0;
    cr_assert_eq(st, ZKL_ETIMEDOUT, "acquire with no server: %s (%s)", zkl_strerror(st),
                 zkl_errmsg());
    cr_assert_lt(took, 1500, "an acquire with no session took %lld ms", (long long)took);
    cr_assert(strstr(zkl_errmsg(), "not connected"), "the message must say why: %s", zkl_errmsg());
    cr_assert(!zkl_mutex_is_held(m));
    zk_server("start-one 1");
    ok(zkl_mutex_acquire(m, 20000), "acquire in the new session");
    cr_assert_neq(zkl_client_session_id(c), id, "a new session");
    ok(zkl_mutex_release(m), "release");
    ok(zkl_client_stats_get(c, &stats), "stats");
    cr_assert_geq(stats.sessions, 2);
    ok(zkl_mutex_destroy(m), "destroy");
    ok(zkl_client_close(c), "close");
    free(path);
}

/* ---- a wait for ever rides out an outage longer than its retry budget ---- */

static atomic_int spinning;

static void *spin(void *arg)
{
    (void)arg;
    while (atomic_load(&spinning))
        ;
    return NULL;
}

struct forever {
    zkl_mutex *m;
    int timeout_ms;
    zkl_status st;
    int64_t took_ms;
    char msg[256];
    atomic_int done;
};

static void *forever_main(void *arg)
{
    struct forever *f = arg;
    int64_t t0 = zkt_now_ms();
    f->st = zkl_mutex_acquire(f->m, f->timeout_ms);
    f->took_ms = zkt_now_ms() - t0;
    snprintf(f->msg, sizeof f->msg, "%s", zkl_errmsg());
    if (f->st == ZKL_OK)
        zkl_mutex_release(f->m);
    atomic_store(&f->done, 1);
    return NULL;
}

/*
 * Curator's testWaitingProcessKilledServer, slower than the retries: a
 * client whose retries add up to about 150 ms waits for ever behind a
 * holder while the server is down for 3 s (two busy loops on the cores). It
 * neither gives up (it returned ECONNLOSS once the retries ran out) nor
 * loses its place: once the holder lets go it holds. A finite wait on the
 * same budget ends by its own timeout or by the retries, never later.
 */
Test(restart, a_wait_for_ever_rides_out_a_restart_slower_than_its_retries, .timeout = 120,
     .init = log_to_ring, .fini = restart_server)
{
    zkl_client *h = zkt_client_cb(SESSION_MS, on_state, NULL), *w;
    zkl_client_options o;
    char *path = zkt_path("forever");
    zkl_mutex *mh, *mw, *mf;
    struct forever f = {0}, fin = {0};
    pthread_t t, tf, spinners[2];
    zhandle_t *raw = zkt_raw();
    /* two busy loops on the cores; not under valgrind, which runs one thread
     * at a time (they would starve every other) */
    int i, clients = 2, nspin = getenv("ZKT_VALGRIND") ? 0 : 2;
    zkl_client_options_init(&o);
    o.session_timeout_ms = SESSION_MS;
    o.retry_base_ms = 50;
    o.retry_max_ms = 100;
    o.retry_max = 2;
    o.on_state = on_state;
    ok(zkl_client_open(zkt_servers(), &o, &w), "open the waiting client");
    ok(zkl_mutex_create(h, path, &mh), "create");
    ok(zkl_mutex_create(w, path, &mw), "create");
    ok(zkl_mutex_create(w, path, &mf), "create");
    ok(zkl_mutex_acquire(mh, 5000), "holder");
    f.m = mw;
    f.timeout_ms = ZKL_WAIT_FOREVER;
    pthread_create(&t, NULL, forever_main, &f);
    cr_assert_eq(zkt_children_settle(raw, path, 2), 2, "the waiter never queued");
    fin.m = mf;
    fin.timeout_ms = 8000;
    pthread_create(&tf, NULL, forever_main, &fin);
    cr_assert_eq(zkt_children_settle(raw, path, 3), 3, "the finite waiter never queued");
    zookeeper_close(raw);
    atomic_store(&reconnects, 0);
    atomic_store(&spinning, 1);
    for (i = 0; i < nspin; i++)
        pthread_create(&spinners[i], NULL, spin, NULL);
    zk_server("stop-one --term 1");
    zkt_sleep_ms(3000);
    zk_server("start-one 1");
    if (!zkt_wait_for(all_reconnected, &clients, RECONNECT_MS)) {
        ring_print();
        cr_assert_fail("only %d of %d clients reconnected", atomic_load(&reconnects), clients);
    }
    atomic_store(&spinning, 0);
    for (i = 0; i < nspin; i++)
        pthread_join(spinners[i], NULL);
    pthread_join(tf, NULL);
    cr_assert(fin.st == ZKL_ETIMEDOUT || fin.st == ZKL_ECONNLOSS, "the finite waiter: %s (%s)",
              zkl_strerror(fin.st), fin.msg);
    /* (its node's delete may take a moment past the timeout; more under valgrind) */
    cr_assert_lt(fin.took_ms, 8000 + (nspin ? 2000 : 6000),
                 "the finite wait outlived its timeout: %lld ms", (long long)fin.took_ms);
    zkt_sleep_ms(200);
    cr_assert(!atomic_load(&f.done), "the wait for ever ended while the holder held: %s (%s)",
              zkl_strerror(f.st), f.msg);
    ok(zkl_mutex_release(mh), "holder releases");
    pthread_join(t, NULL);
    ok(f.st, "the wait for ever, once the holder let go");
    cr_assert_eq(atomic_load(&lost_events), 0, "no session may be lost by the restart");
    ok(zkl_mutex_destroy(mh), "destroy");
    ok(zkl_mutex_destroy(mw), "destroy");
    ok(zkl_mutex_destroy(mf), "destroy");
    ok(zkl_client_close(h), "close");
    ok(zkl_client_close(w), "close");
    free(path);
}

/* The zklock command's exit status once it ends, or -1 while it runs. */
static int exited(pid_t pid, bool wait_for_it)
{
    int status;
    pid_t r = waitpid(pid, &status, wait_for_it ? 0 : WNOHANG);
    if (r == 0)
        return -1;
    cr_assert_eq(r, pid, "waitpid");
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static int has_exited(void *pidp)
{
    int *st = pidp;
    if (st[1] < 0)
        st[1] = exited(st[0], false);
    return st[1] >= 0;
}

/*
 * Issue 57, item 6, as users met it: `zklock -w 60` waits behind a holder,
 * with a connect string of its one server, and the server crashes (SIGKILL)
 * and starts again 12 s later: longer than the client's default retries last
 * (10 tries, about 6.5 s of backoff). The wait rides it out, and once the
 * holder lets go COMMAND runs. On 65709ca zklock exited 69 in the outage,
 * "gave up waiting for ... after 11 tries".
 */
Test(restart, a_zklock_wait_rides_out_a_crash_of_its_one_server, .timeout = 150,
     .init = log_to_ring, .fini = restart_server)
{
    zkl_client *h = zkt_client_cb(SESSION_MS, on_state, NULL);
    char *path = zkt_path("crash");
    char errfile[] = "/tmp/zkl-restart-err-XXXXXX", err[1024] = "";
    zkl_mutex *mh;
    zhandle_t *raw = zkt_raw();
    int clients = 1, child[2] = {0, -1}, fd;
    zkl_status st;
    posix_spawn_file_actions_t fa;
    char *argv[] = {
        getenv("ZKL_CLI"), "--zk", (char *)zkt_servers(), "-w", "60", path, "--", "true", NULL};
    FILE *f;
    cr_assert(argv[0], "ZKL_CLI is not set");
    ok(zkl_mutex_create(h, path, &mh), "create");
    ok(zkl_mutex_acquire(mh, 5000), "holder");
    fd = mkstemp(errfile);
    cr_assert_geq(fd, 0, "mkstemp");
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fd, 2);
    cr_assert_eq(posix_spawn(&child[0], argv[0], &fa, NULL, argv, NULL), 0, "spawn zklock");
    posix_spawn_file_actions_destroy(&fa);
    close(fd);
    cr_assert_eq(zkt_children_settle(raw, path, 2), 2, "zklock never queued");
    zookeeper_close(raw);
    atomic_store(&reconnects, 0);
    zk_server("stop-one 1");
    zkt_sleep_ms(12000);
    zk_server("start-one 1");
    if (!zkt_wait_for(all_reconnected, &clients, RECONNECT_MS)) {
        ring_print();
        cr_assert_fail("the holder never reconnected");
    }
    f = fopen(errfile, "r");
    if (f) {
        err[fread(err, 1, sizeof err - 1, f)] = '\0';
        fclose(f);
    }
    cr_assert(!has_exited(child), "zklock gave up in the outage: exit %d: %s", child[1], err);
    /* (a restart slower than the holder's lease, as under ASan on a busy
     * machine, ends its hold: the release then says so, and lets go all the same) */
    st = zkl_mutex_release(mh);
    cr_assert(st == ZKL_OK || st == ZKL_ELOST, "holder releases: %s (%s)", zkl_strerror(st),
              zkl_errmsg());
    if (!zkt_wait_for(has_exited, child, 20000)) {
        kill(child[0], SIGKILL);
        exited(child[0], true);
        cr_assert_fail("zklock was not granted within 20 s of the release");
    }
    f = fopen(errfile, "r");
    if (f) {
        err[fread(err, 1, sizeof err - 1, f)] = '\0';
        fclose(f);
    }
    unlink(errfile);
    cr_assert_eq(child[1], 0, "zklock: exit %d: %s", child[1], err);
    ok(zkl_mutex_destroy(mh), "destroy");
    ok(zkl_client_close(h), "close");
    free(path);
}
