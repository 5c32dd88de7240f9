/*
 * test_interop.c - zklock beside real Apache Curator 5.4 (Debian's jars,
 * driven by tests/interop/curator-peer) on the same server and paths: holders
 * of both libraries log enter/exit into one file and the checker replays it.
 */
#include <criterion/criterion.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "excl_log.h"
#include "zkt.h"

extern char **environ;

/* Start curator-peer with args; its stdout goes to *out_fd if non-NULL. */
static pid_t peer(int *out_fd, const char *const *args)
{
    const char *exe = getenv("ZKL_CURATOR_PEER");
    const char *argv[32];
    posix_spawn_file_actions_t fa;
    int n = 0, p[2] = {-1, -1};
    pid_t pid;
    cr_assert(exe, "ZKL_CURATOR_PEER is not set (run through ctest)");
    argv[n++] = exe;
    argv[n++] = "--zk";
    argv[n++] = zkt_servers();
    while (*args && n < 31)
        argv[n++] = *args++;
    argv[n] = NULL;
    posix_spawn_file_actions_init(&fa);
    if (out_fd) {
        cr_assert_eq(pipe(p), 0);
        posix_spawn_file_actions_adddup2(&fa, p[1], 1);
        posix_spawn_file_actions_addclose(&fa, p[0]);
        posix_spawn_file_actions_addclose(&fa, p[1]);
    }
    cr_assert_eq(posix_spawn(&pid, exe, &fa, NULL, (char *const *)argv, environ), 0);
    posix_spawn_file_actions_destroy(&fa);
    if (out_fd) {
        close(p[1]);
        *out_fd = p[0];
    }
    return pid;
}

static int peer_wait(pid_t pid)
{
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* Read one line from the peer's stdout (blocking). */
static void peer_line(int fd, char *buf, size_t n)
{
    size_t i = 0;
    while (i + 1 < n) {
        char ch;
        if (read(fd, &ch, 1) != 1)
            break;
        if (ch == '\n')
            break;
        buf[i++] = ch;
    }
    buf[i] = '\0';
}

static char *log_file(const char *what)
{
    char *p = malloc(512);
    snprintf(p, 512, "%s/interop-%s-%d.log",
             getenv("ZKL_TEST_ZK_DIR") ? getenv("ZKL_TEST_ZK_DIR") : "/tmp", what, (int)getpid());
    return p;
}

/* Wait until a Curator holder has logged (the JVM may still be compiling), so
 * the C holders really contend with it. */
static void wait_for_curator(const char *file)
{
    int64_t end = zkt_now_ms() + 60000;
    while (zkt_now_ms() < end) {
        FILE *f = fopen(file, "r");
        char line[256];
        int seen = 0;
        while (f && fgets(line, sizeof line, f))
            if (strstr(line, " j-"))
                seen = 1;
        if (f)
            fclose(f);
        if (seen)
            return;
        zkt_sleep_ms(20);
    }
    cr_assert_fail("the Curator peer never got the lock");
}

/* ---- C workers writing the same log ---- */

enum kind { K_MUTEX, K_READ, K_WRITE, K_SEM, K_LATCH, K_SELECTOR };

struct cworker {
    const char *path;
    int fd, rounds, hold_ms, id;
    enum kind kind;
    atomic_int errors;
};

static void *c_worker(void *arg)
{
    struct cworker *w = arg;
    zkl_client *c = zkt_client(10000);
    char who[64];
    int i;
    snprintf(who, sizeof who, "c-%d-%d", (int)getpid(), w->id);
    if (w->kind == K_MUTEX) {
        zkl_mutex *m;
        ok(zkl_mutex_create(c, w->path, &m), "create");
        for (i = 0; i < w->rounds; i++) {
            int64_t tok;
            if (zkl_mutex_acquire(m, 60000) != ZKL_OK) {
                atomic_fetch_add(&w->errors, 1);
                continue;
            }
            zkl_mutex_fencing_token(m, &tok);
            excl_log(w->fd, 'M', "enter", who, 0);
            zkt_sleep_ms(w->hold_ms);
            excl_log(w->fd, 'M', "exit", who, 0);
            zkl_mutex_release(m);
        }
        ok(zkl_mutex_destroy(m), "destroy");
    } else if (w->kind == K_SELECTOR) { /* a term per round, requeued as Curator's autoRequeue */
        zkl_latch *l;
        ok(zkl_selector_create(c, w->path, who, &l), "create");
        ok(zkl_latch_start(l, NULL, NULL), "start");
        for (i = 0; i < w->rounds; i++) {
            int64_t tok = 0;
            if (zkl_latch_await(l, 60000) != ZKL_OK || zkl_latch_token(l, &tok) != ZKL_OK) {
                atomic_fetch_add(&w->errors, 1);
                break;
            }
            excl_log(w->fd, 'M', "enter", who, tok);
            zkt_sleep_ms(w->hold_ms);
            excl_log(w->fd, 'M', "exit", who, tok);
            if (i + 1 < w->rounds)
                ok(zkl_latch_yield(l, 0), "yield");
        }
        ok(zkl_latch_destroy(l), "destroy");
    } else if (w->kind == K_LATCH) { /* a term per round: lead, log, leave */
        zkl_latch *l;
        ok(zkl_latch_create(c, w->path, who, &l), "create");
        for (i = 0; i < w->rounds; i++) {
            int64_t tok = 0;
            ok(zkl_latch_start(l, NULL, NULL), "start");
            if (zkl_latch_await(l, 60000) != ZKL_OK || zkl_latch_token(l, &tok) != ZKL_OK) {
                atomic_fetch_add(&w->errors, 1);
                zkl_latch_leave(l, ZKL_LATCH_SILENT);
                continue;
            }
            excl_log(w->fd, 'M', "enter", who, tok);
            zkt_sleep_ms(w->hold_ms);
            excl_log(w->fd, 'M', "exit", who, tok);
            ok(zkl_latch_leave(l, ZKL_LATCH_SILENT), "leave");
        }
        ok(zkl_latch_destroy(l), "destroy");
    } else if (w->kind == K_SEM) {
        zkl_semaphore *s;
        ok(zkl_semaphore_create(c, w->path, 3, &s), "create");
        for (i = 0; i < w->rounds; i++) {
            zkl_lease *l;
            if (zkl_semaphore_acquire(s, 60000, &l) != ZKL_OK) {
                atomic_fetch_add(&w->errors, 1);
                continue;
            }
            excl_log(w->fd, 'S', "enter", who, 0);
            zkt_sleep_ms(w->hold_ms);
            excl_log(w->fd, 'S', "exit", who, 0);
            zkl_lease_return(l);
        }
        ok(zkl_semaphore_destroy(s), "destroy");
    } else {
        zkl_rwlock *l;
        ok(zkl_rwlock_create(c, w->path, &l), "create");
        for (i = 0; i < w->rounds; i++) {
            bool write = w->kind == K_WRITE;
            zkl_status st =
                write ? zkl_rwlock_write_acquire(l, 60000) : zkl_rwlock_read_acquire(l, 60000);
            if (st != ZKL_OK) {
                atomic_fetch_add(&w->errors, 1);
                continue;
            }
            excl_log(w->fd, write ? 'W' : 'R', "enter", who, 0);
            zkt_sleep_ms(w->hold_ms);
            excl_log(w->fd, write ? 'W' : 'R', "exit", who, 0);
            if (write)
                zkl_rwlock_write_release(l);
            else
                zkl_rwlock_read_release(l);
        }
        ok(zkl_rwlock_destroy(l), "destroy");
    }
    ok(zkl_client_close(c), "close");
    return NULL;
}

static void run_c(struct cworker *w, int n, pthread_t *t)
{
    int i;
    for (i = 0; i < n; i++)
        pthread_create(&t[i], NULL, c_worker, &w[i]);
}

static void join_c(struct cworker *w, int n, pthread_t *t)
{
    int i;
    for (i = 0; i < n; i++) {
        pthread_join(t[i], NULL);
        cr_assert_eq(atomic_load(&w[i].errors), 0, "C worker %d failed to acquire", i);
    }
}

/*
 * Two C workers of kind k (rounds, hold_ms each) and a Curator peer running
 * command with two threads (peer_rounds, peer_hold_ms each), all logging to
 * file (fd) for path: the log's replay, once all are done.
 */
static excl_report two_and_two(const char *path, const char *file, int fd, enum kind k, int rounds,
                               int hold_ms, const char *command, int peer_rounds, int peer_hold_ms)
{
    struct cworker w[2];
    pthread_t t[2];
    char pr[16], ph[16];
    excl_report r;
    pid_t p;
    int i;
    memset(w, 0, sizeof w);
    for (i = 0; i < 2; i++) {
        w[i].path = path;
        w[i].fd = fd;
        w[i].rounds = rounds;
        w[i].hold_ms = hold_ms;
        w[i].id = i;
        w[i].kind = k;
    }
    snprintf(pr, sizeof pr, "%d", peer_rounds);
    snprintf(ph, sizeof ph, "%d", peer_hold_ms);
    {
        const char *args[] = {"--threads", "2", command, path, pr, file, ph, NULL};
        p = peer(NULL, args);
    }
    wait_for_curator(file);
    run_c(w, 2, t);
    join_c(w, 2, t);
    cr_assert_eq(peer_wait(p), 0, "curator peer failed");
    r = excl_check(file, 0);
    cr_assert_eq(r.malformed, 0);
    return r;
}

Test(interop, mutex_with_curator, .timeout = 300)
{
    char *path = zkt_path("imutex"), *file = log_file("mutex");
    int fd = excl_open(file);
    excl_report r;
    cr_assert_geq(fd, 0);
    r = two_and_two(path, file, fd, K_MUTEX, 40, 2, "mutex", 60, 4);
    cr_assert_eq(r.enters, 200, "C and Curator holds: %d", r.enters);
    cr_assert_eq(r.violations, 0, "a C and a Curator mutex held at once: %s", r.first_error);
    cr_assert_gt(r.handoffs_c_to_j, 0, "the lock never passed from C to Curator");
    cr_assert_gt(r.handoffs_j_to_c, 0, "the lock never passed from Curator to C");
    close(fd);
    unlink(file);
    free(file);
    free(path);
}

/* An election's log (two_and_two): terms terms, one leader at a time,
 * tokens rising, leadership passing both ways. */
static void one_leader_at_a_time(const excl_report *r, int terms)
{
    cr_assert_eq(r->enters, terms, "C and Curator terms: %d", r->enters);
    cr_assert_eq(r->violations, 0, "two leaders at once: %s", r->first_error);
    cr_assert_eq(r->token_regressions, 0, "a term's token not above the last");
    cr_assert_gt(r->handoffs_c_to_j, 0, "leadership never passed from C to Curator");
    cr_assert_gt(r->handoffs_j_to_c, 0, "leadership never passed from Curator to C");
}

/* Two zklock participants of kind (K_LATCH, K_SELECTOR) and two Curator ones
 * (the peer's command name) in one election at a path named name: one leader
 * at a time on the clock (the leaders' own log lines), each term's token
 * above the last, leadership passing both ways. 20 ms terms: long enough
 * that a second leader overlaps (seen failing so). */
static void election_with_curator(enum kind kind, const char *name)
{
    char *path = zkt_path(name), *file = log_file(name);
    int fd = excl_open(file);
    excl_report r;
    cr_assert_geq(fd, 0);
    r = two_and_two(path, file, fd, kind, 15, 20, name, 15, 20);
    one_leader_at_a_time(&r, 60);
    close(fd);
    unlink(file);
    free(file);
    free(path);
}

/* zklock latches and Curator LeaderLatches in one election. */
Test(interop, latch_with_curator, .timeout = 300)
{
    election_with_curator(K_LATCH, "latch");
}

/* zklock selectors and Curator LeaderSelectors (autoRequeue) in one election. */
Test(interop, selector_with_curator, .timeout = 300)
{
    election_with_curator(K_SELECTOR, "selector");
}

/* Each side's observer names the other's leader: Curator's getLeader a C
 * latch's id, zkl_leader_get a Curator LeaderLatch's node. */
Test(interop, observers_agree_with_curator, .timeout = 180)
{
    char *path = zkt_path("ilatch-obs"), line[512];
    zkl_client *c = zkt_client(10000);
    zkl_latch *l;
    zkl_leader ld;
    int out;
    pid_t p;
    ok(zkl_latch_create(c, path, "c-leader", &l), "create");
    ok(zkl_latch_start(l, NULL, NULL), "start");
    ok(zkl_latch_await(l, 10000), "the C latch leads");
    {
        const char *args[] = {"leader", path, NULL};
        p = peer(&out, args);
    }
    peer_line(out, line, sizeof line);
    cr_assert_eq(peer_wait(p), 0, "curator peer failed");
    close(out);
    cr_assert_str_eq(line, "LEADER c-leader", "Curator's getLeader: %s", line);
    ok(zkl_latch_leave(l, ZKL_LATCH_SILENT), "leave");
    {
        const char *args[] = {"latch-hold", path, "j-leader", "30", NULL};
        p = peer(&out, args);
    }
    peer_line(out, line, sizeof line);
    cr_assert(strncmp(line, "LEADING ", 8) == 0, "the Curator latch: %s", line);
    ok(zkl_leader_get(c, path, &ld), "observe");
    cr_assert(ld.present, "no leader observed");
    cr_assert_str_eq(ld.id, "j-leader");
    cr_assert_str_eq(ld.node, line + 8, "observed %s, Curator leads with %s", ld.node, line + 8);
    zkl_leader_clear(&ld);
    ok(zkl_latch_start(l, NULL, NULL), "the C latch joins behind it");
    cr_assert_eq(zkl_latch_await(l, 300), ZKL_ETIMEDOUT, "led beside Curator's leader");
    kill(p, SIGTERM); /* the JVM closes its session: its node goes */
    peer_wait(p);
    close(out);
    ok(zkl_latch_await(l, 20000), "the C latch leads after Curator's");
    ok(zkl_latch_destroy(l), "destroy");
    ok(zkl_client_close(c), "close");
    free(path);
}

/* Told to an observer (zkl_leader_observe): the last leader, and how many tellings. */
typedef struct obs_told {
    pthread_mutex_t mu;
    int n;
    bool present;
    char id[64], node[512];
} obs_told;

static void obs_fn(zkl_observer *o, zkl_status st, const char *msg, const zkl_leader *ld, void *ud)
{
    obs_told *t = ud;
    (void)o;
    (void)msg;
    pthread_mutex_lock(&t->mu);
    t->present = st == ZKL_OK && ld->present;
    snprintf(t->id, sizeof t->id, "%s", t->present ? ld->id : "");
    snprintf(t->node, sizeof t->node, "%s", t->present ? ld->node : "");
    t->n++;
    pthread_mutex_unlock(&t->mu);
}

typedef struct obs_want {
    obs_told *t;
    const char *id; /* "": a vacancy */
} obs_want;

static int obs_sees(void *p)
{
    obs_want *w = p;
    int yes;
    pthread_mutex_lock(&w->t->mu);
    yes = w->t->n > 0 && strcmp(w->t->id, w->id) == 0;
    pthread_mutex_unlock(&w->t->mu);
    return yes;
}

/*
 * Issue 56, item 8: the observer tells a Curator LeaderLatch's leadership
 * (its node and id), and the C latch that leads after it.
 */
Test(interop, the_observer_tells_a_curator_leader, .timeout = 180)
{
    char *path = zkt_path("ilatch-observe"), line[512];
    zkl_client *c = zkt_client(10000), *co = zkt_client(10000);
    zkl_latch *l;
    zkl_observer *o;
    obs_told t;
    obs_want j = {&t, "j-leader"}, cl = {&t, "c-after"};
    int out;
    pid_t p;
    memset(&t, 0, sizeof t);
    pthread_mutex_init(&t.mu, NULL);
    ok(zkl_leader_observe(co, path, obs_fn, &t, &o), "observe");
    {
        const char *args[] = {"latch-hold", path, "j-leader", "30", NULL};
        p = peer(&out, args);
    }
    peer_line(out, line, sizeof line);
    cr_assert(strncmp(line, "LEADING ", 8) == 0, "the Curator latch: %s", line);
    cr_assert(zkt_wait_for(obs_sees, &j, 10000), "Curator's leader was not told");
    pthread_mutex_lock(&t.mu);
    cr_assert_str_eq(t.node, line + 8, "told %s, Curator leads with %s", t.node, line + 8);
    pthread_mutex_unlock(&t.mu);
    ok(zkl_latch_create(c, path, "c-after", &l), "create");
    ok(zkl_latch_start(l, NULL, NULL), "the C latch joins behind it");
    kill(p, SIGTERM); /* the JVM closes its session: its node goes */
    peer_wait(p);
    close(out);
    cr_assert(zkt_wait_for(obs_sees, &cl, 20000), "the C leader after Curator's was not told");
    ok(zkl_observer_destroy(o), "destroy");
    ok(zkl_latch_destroy(l), "destroy");
    ok(zkl_client_close(co), "close");
    ok(zkl_client_close(c), "close");
    pthread_mutex_destroy(&t.mu);
    free(path);
}

/*
 * Issue 56, item 5: a Curator LeaderLatch waits behind a C leader on one
 * getData watch, which any data change of the leader's node uses up (its
 * watcher acts on NodeDeleted only). zkl_revoke refuses a latch's node, so
 * no request of zklock's blinds it: when the C latch leaves, Curator's
 * leads (on e5a0a8b the revoke wrote the marker, and Curator's latch never
 * led: the test's 20 s passed).
 */
Test(interop, a_revoke_does_not_blind_a_curator_follower, .timeout = 180)
{
    char *path = zkt_path("ilatch-blind"), line[512], *node;
    zkl_client *c = zkt_client(10000);
    zkl_latch *l;
    zhandle_t *zh;
    struct pollfd pf;
    int out;
    pid_t p;
    ok(zkl_latch_create(c, path, "c-leader", &l), "create");
    ok(zkl_latch_start(l, NULL, NULL), "start");
    ok(zkl_latch_await(l, 10000), "the C latch leads");
    ok(zkl_latch_node(l, &node), "node");
    {
        const char *args[] = {"latch-hold", path, "j-follower", "1", NULL};
        p = peer(&out, args);
    }
    zh = zkt_raw();
    cr_assert_eq(zkt_children_settle(zh, path, 2), 2, "Curator's latch never joined");
    zookeeper_close(zh);
    cr_assert_eq(zkl_revoke(c, node), ZKL_EINVAL, "a revoke of a latch node: %s", zkl_errmsg());
    cr_assert(strstr(zkl_errmsg(), "LeaderLatch"), "%s", zkl_errmsg());
    ok(zkl_latch_leave(l, ZKL_LATCH_SILENT), "the C latch leaves");
    pf.fd = out;
    pf.events = POLLIN;
    cr_assert_eq(poll(&pf, 1, 20000), 1, "Curator's latch never led once the C latch left");
    peer_line(out, line, sizeof line);
    cr_assert(strncmp(line, "LEADING ", 8) == 0, "the Curator latch: %s", line);
    cr_assert_eq(peer_wait(p), 0, "curator peer failed");
    close(out);
    ok(zkl_latch_destroy(l), "destroy");
    ok(zkl_client_close(c), "close");
    free(node);
    free(path);
}

Test(interop, rwlock_with_curator, .timeout = 300)
{
    char *path = zkt_path("irw"), *file = log_file("rw");
    int fd = excl_open(file);
    struct cworker w[3];
    pthread_t t[3];
    pid_t pr, pw;
    excl_report r;
    int i;
    memset(w, 0, sizeof w);
    for (i = 0; i < 3; i++) {
        w[i].path = path;
        w[i].fd = fd;
        w[i].rounds = 25;
        w[i].hold_ms = 5;
        w[i].id = i;
        w[i].kind = i == 2 ? K_WRITE : K_READ;
    }
    {
        const char *ra[] = {"--threads", "2", "read", path, "25", file, "5", NULL};
        const char *wa[] = {"write", path, "20", file, "3", NULL};
        pr = peer(NULL, ra);
        pw = peer(NULL, wa);
    }
    wait_for_curator(file);
    run_c(w, 3, t);
    join_c(w, 3, t);
    cr_assert_eq(peer_wait(pr), 0, "curator readers failed");
    cr_assert_eq(peer_wait(pw), 0, "curator writer failed");
    r = excl_check(file, 0);
    cr_assert_eq(r.malformed, 0);
    cr_assert_eq(r.enters, 75 + 50 + 20);
    cr_assert_eq(r.violations, 0, "%s", r.first_error);
    cr_assert_geq(r.max_readers, 2, "readers never shared");
    close(fd);
    unlink(file);
    free(file);
    free(path);
}

Test(interop, semaphore_with_curator, .timeout = 300)
{
    char *path = zkt_path("isem"), *file = log_file("sem");
    int fd = excl_open(file);
    struct cworker w[3];
    pthread_t t[3];
    pid_t p;
    excl_report r;
    int i;
    memset(w, 0, sizeof w);
    for (i = 0; i < 3; i++) {
        w[i].path = path;
        w[i].fd = fd;
        w[i].rounds = 15;
        w[i].hold_ms = 20;
        w[i].id = i;
        w[i].kind = K_SEM;
    }
    {
        const char *args[] = {"--threads", "3", "semaphore", path, "3", "15", file, "20", NULL};
        p = peer(NULL, args);
    }
    wait_for_curator(file);
    run_c(w, 3, t);
    join_c(w, 3, t);
    cr_assert_eq(peer_wait(p), 0, "curator peer failed");
    r = excl_check(file, 3);
    cr_assert_eq(r.malformed, 0);
    cr_assert_eq(r.enters, 90);
    cr_assert_eq(r.violations, 0, "%s", r.first_error);
    cr_assert_eq(r.max_shared, 3, "the lease count was never reached (max %d)", r.max_shared);
    close(fd);
    unlink(file);
    free(file);
    free(path);
}

Test(interop, curator_sees_c_queue_and_c_waits_for_curator, .timeout = 120)
{
    zkl_client *c = zkt_client(0);
    char *path = zkt_path("iqueue"), line[512], *mine;
    zkl_mutex *m;
    int out;
    pid_t p;
    ok(zkl_mutex_create(c, path, &m), "create");
    ok(zkl_mutex_acquire(m, 5000), "C holds");
    ok(zkl_mutex_node(m, &mine), "node");
    {
        const char *args[] = {"participants", path, NULL};
        p = peer(&out, args);
    }
    peer_line(out, line, sizeof line);
    cr_assert_eq(peer_wait(p), 0);
    close(out);
    cr_assert_str_eq(line, mine, "Curator lists the C holder first");
    free(mine);
    ok(zkl_mutex_release(m), "release");
    {
        const char *args[] = {"hold", path, "1.5", NULL};
        p = peer(&out, args);
    }
    peer_line(out, line, sizeof line);
    cr_assert_eq(strncmp(line, "HELD ", 5), 0, "peer said '%s'", line);
    {
        int64_t t0 = zkt_now_ms(), waited;
        ok(zkl_mutex_acquire(m, 20000), "C waits for the Curator holder");
        waited = zkt_now_ms() - t0;
        cr_assert_gt(waited, 800, "C got the lock while Curator held it (%lld ms)",
                     (long long)waited);
    }
    peer_line(out, line, sizeof line);
    cr_assert_str_eq(line, "RELEASED");
    cr_assert_eq(peer_wait(p), 0);
    close(out);
    ok(zkl_mutex_release(m), "release");
    ok(zkl_mutex_destroy(m), "destroy");
    ok(zkl_client_close(c), "close");
    free(path);
}

static atomic_int c_revoked;
static void c_on_revoke(void *lock, void *ud)
{
    (void)lock;
    (void)ud;
    atomic_store(&c_revoked, 1);
}

static int c_flag(void *p)
{
    return atomic_load((atomic_int *)p);
}

Test(interop, curator_revokes_a_c_holder, .timeout = 120)
{
    zkl_client *c = zkt_client(0);
    char *path = zkt_path("irevc"), *node, line[64];
    zkl_mutex *m;
    pid_t p;
    int out;
    atomic_store(&c_revoked, 0);
    ok(zkl_mutex_create(c, path, &m), "create");
    ok(zkl_mutex_make_revocable(m, c_on_revoke, NULL), "revocable");
    ok(zkl_mutex_acquire(m, 5000), "acquire");
    ok(zkl_mutex_node(m, &node), "node");
    {
        const char *args[] = {"revoke", node, NULL};
        p = peer(&out, args);
    }
    peer_line(out, line, sizeof line);
    cr_assert_eq(peer_wait(p), 0);
    close(out);
    cr_assert(zkt_wait_for(c_flag, &c_revoked, 10000), "Curator's revoke never reached C");
    ok(zkl_mutex_release(m), "release");
    free(node);
    ok(zkl_mutex_destroy(m), "destroy");
    ok(zkl_client_close(c), "close");
    free(path);
}

Test(interop, c_revokes_a_curator_holder, .timeout = 120)
{
    zkl_client *c = zkt_client(0);
    char *path = zkt_path("irevj"), line[512];
    pid_t p;
    int out;
    {
        const char *args[] = {"hold-revocable", path, "30", NULL};
        p = peer(&out, args);
    }
    peer_line(out, line, sizeof line);
    cr_assert_eq(strncmp(line, "HELD ", 5), 0, "peer said '%s'", line);
    ok(zkl_revoke(c, line + 5), "revoke the Curator holder");
    peer_line(out, line, sizeof line);
    cr_assert_str_eq(line, "RELEASED", "Curator did not honour the revoke");
    cr_assert_eq(peer_wait(p), 0);
    close(out);
    ok(zkl_client_close(c), "close");
    free(path);
}
