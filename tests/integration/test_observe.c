/*
 * test_observe.c - the election observer (zklock/leader.h:
 * zkl_leader_observe, issue 56 item 8): it tells the leader there is, then
 * each new leader and each vacancy, through a yield, a crash (kill -9), a
 * session expiry (the leader's and its own) and an empty election; it
 * costs one listing and one watch per change and none for a join behind
 * the head; its lifecycle is the async handles' (destroy from inside,
 * descriptor delivery, close refused while it lives, fork).
 */
#include <criterion/criterion.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "zkt.h"

#define MAX_TOLD 64

/* What one observer was told. */
typedef struct told {
    pthread_mutex_t mu;
    int n;
    zkl_status st[MAX_TOLD];
    bool present[MAX_TOLD];
    char id[MAX_TOLD][64];
    char node[MAX_TOLD][256];
    int64_t token[MAX_TOLD];
    size_t members[MAX_TOLD];
    bool destroy_inside; /* destroy the observer from its first callback */
    bool overlap;        /* two callbacks ran at once */
    int running;
} told;

static void on_told(zkl_observer *o, zkl_status st, const char *msg, const zkl_leader *ld, void *ud)
{
    told *t = ud;
    int i;
    pthread_mutex_lock(&t->mu);
    if (t->running++)
        t->overlap = true;
    i = t->n;
    if (i < MAX_TOLD) {
        t->st[i] = st;
        t->present[i] = ld && ld->present;
        if (ld && ld->present) {
            snprintf(t->id[i], sizeof t->id[i], "%s", ld->id);
            snprintf(t->node[i], sizeof t->node[i], "%s", ld->node);
            t->token[i] = ld->token;
            t->members[i] = ld->members;
        }
        t->n++;
    }
    pthread_mutex_unlock(&t->mu);
    cr_assert(msg != NULL);
    zkt_sleep_ms(1); /* widen the window for an overlap */
    pthread_mutex_lock(&t->mu);
    t->running--;
    pthread_mutex_unlock(&t->mu);
    if (t->destroy_inside && i == 0)
        ok(zkl_observer_destroy(o), "destroy from inside the callback");
}

static void told_init(told *t)
{
    memset(t, 0, sizeof *t);
    pthread_mutex_init(&t->mu, NULL);
}

static int count(told *t)
{
    int n;
    pthread_mutex_lock(&t->mu);
    n = t->n;
    pthread_mutex_unlock(&t->mu);
    return n;
}

typedef struct want {
    told *t;
    int n;
} want;

static int has(void *p)
{
    want *w = p;
    return count(w->t) >= w->n;
}

/* Wait for the n-th telling (1-based) and check it: id NULL for a vacancy. */
static void expect(told *t, int n, const char *id, int ms)
{
    want w = {t, n};
    cr_assert(zkt_wait_for(has, &w, ms), "telling %d never came (%d told)", n, count(t));
    pthread_mutex_lock(&t->mu);
    cr_assert_eq(t->st[n - 1], ZKL_OK, "telling %d: %s", n, zkl_strerror(t->st[n - 1]));
    if (id) {
        cr_assert(t->present[n - 1], "telling %d: a vacancy, %s expected", n, id);
        cr_assert_str_eq(t->id[n - 1], id, "telling %d", n);
    } else {
        cr_assert(!t->present[n - 1], "telling %d: %s, a vacancy expected", n, t->id[n - 1]);
    }
    pthread_mutex_unlock(&t->mu);
}

/* A latch with id that leads (or waits: lead false). */
static zkl_latch *join(zkl_client *c, const char *path, const char *id, bool lead)
{
    zkl_latch *l;
    ok(zkl_latch_create(c, path, id, &l), "latch");
    ok(zkl_latch_start(l, NULL, NULL), "start");
    if (lead)
        ok(zkl_latch_await(l, 10000), "leads");
    return l;
}

/* The first telling is the leader there is; a yield tells the next; a join
 * behind the head costs the observer nothing; one listing and one watch per
 * change. */
Test(observe, a_yield_tells_the_next_leader, .timeout = 60)
{
    char *path = zkt_path("obs-yield");
    zkl_client *c1 = zkt_client(10000), *c2 = zkt_client(10000), *co = zkt_client(10000);
    zkl_latch *a = join(c1, path, "a", true), *b = join(c2, path, "b", false), *x;
    zkl_observer *o;
    zhandle_t *zh = zkt_raw();
    told t;
    uint64_t lists, gets;
    int64_t tok;
    told_init(&t);
    cr_assert_eq(zkt_children_settle(zh, path, 2), 2);
    ok(zkl_leader_observe(co, path, on_told, &t, &o), "observe");
    expect(&t, 1, "a", 10000);
    ok(zkl_latch_token(a, &tok), "token");
    cr_assert_eq(t.token[0], tok, "the term's token");
    cr_assert_eq(t.members[0], 2, "members");
    lists = zkt_list_requests(co);
    gets = zkt_lock_requests(co);
    x = join(c2, path, "x", false); /* behind the head: no herd */
    cr_assert_eq(zkt_children_settle(zh, path, 3), 3);
    zkt_sleep_ms(300);
    cr_assert_eq(count(&t), 1, "a join behind the head was told");
    cr_assert_eq(zkt_list_requests(co), lists, "a join behind the head woke the observer");
    ok(zkl_latch_yield(a, 60000), "a yields");
    expect(&t, 2, "b", 10000);
    cr_assert_gt(t.token[1], t.token[0], "the next term's token");
    cr_assert_leq(zkt_list_requests(co) - lists, 2, "listings for one change");
    (void)gets;
    ok(zkl_observer_destroy(o), "destroy");
    ok(zkl_latch_destroy(x), "destroy");
    ok(zkl_latch_destroy(b), "destroy");
    ok(zkl_latch_destroy(a), "destroy");
    cr_assert(!t.overlap, "two callbacks ran at once");
    ok(zkl_client_close(co), "close");
    ok(zkl_client_close(c2), "close");
    ok(zkl_client_close(c1), "close");
    zookeeper_close(zh);
    free(path);
}

/* An empty election (its parent not even made): a vacancy first, then the
 * first to join, then a vacancy again when it leaves, and the next join. */
Test(observe, an_empty_election_tells_a_vacancy_then_the_first_to_join, .timeout = 60)
{
    char *path = zkt_path("obs-empty");
    zkl_client *c = zkt_client(10000), *co = zkt_client(10000);
    zkl_observer *o;
    zkl_latch *a;
    told t;
    told_init(&t);
    ok(zkl_leader_observe(co, path, on_told, &t, &o), "observe");
    expect(&t, 1, NULL, 10000);
    a = join(c, path, "a", true); /* makes the parent: the exists watch */
    expect(&t, 2, "a", 10000);
    ok(zkl_latch_leave(a, ZKL_LATCH_SILENT), "leave");
    expect(&t, 3, NULL, 10000); /* the parent stays: the child watch */
    ok(zkl_latch_start(a, NULL, NULL), "joins again");
    expect(&t, 4, "a", 10000);
    cr_assert_str_neq(t.node[1], t.node[3], "the same node told twice");
    ok(zkl_observer_destroy(o), "destroy");
    ok(zkl_latch_destroy(a), "destroy");
    ok(zkl_client_close(co), "close");
    ok(zkl_client_close(c), "close");
    free(path);
}

/* A leader in another process is killed -9: its session ends at the
 * server's timeout, and the observer tells the next leader. */
Test(observe, a_leader_killed_is_followed_by_the_next, .timeout = 90)
{
    char *path = zkt_path("obs-kill");
    zkl_client *c, *co;
    zkl_latch *b;
    zkl_observer *o;
    told t;
    int pfd[2];
    char byte;
    pid_t pid;
    int64_t killed;
    told_init(&t);
    cr_assert_eq(pipe(pfd), 0);
    pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        zkl_client_options opts;
        zkl_client *cc;
        zkl_latch *l;
        close(pfd[0]);
        zkl_client_options_init(&opts);
        opts.session_timeout_ms = 4000;
        if (zkl_client_open(zkt_servers(), &opts, &cc) != ZKL_OK ||
            zkl_latch_create(cc, path, "child", &l) != ZKL_OK ||
            zkl_latch_start(l, NULL, NULL) != ZKL_OK || zkl_latch_await(l, 20000) != ZKL_OK)
            _exit(2);
        if (write(pfd[1], "L", 1) != 1)
            _exit(3);
        pause();
        _exit(0);
    }
    close(pfd[1]);
    cr_assert_eq(read(pfd[0], &byte, 1), 1, "the child never led");
    close(pfd[0]);
    c = zkt_client(10000);
    co = zkt_client(10000);
    b = join(c, path, "b", false);
    ok(zkl_leader_observe(co, path, on_told, &t, &o), "observe");
    expect(&t, 1, "child", 10000);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    killed = zkt_now_ms();
    expect(&t, 2, "b", 30000);
    cr_assert_lt(zkt_now_ms() - killed, 4000 + 8000, "told %lld ms after the kill",
                 (long long)(zkt_now_ms() - killed));
    ok(zkl_observer_destroy(o), "destroy");
    ok(zkl_latch_destroy(b), "destroy");
    ok(zkl_client_close(co), "close");
    ok(zkl_client_close(c), "close");
    free(path);
}

/* The leader's session expires: the next leads, and the observer says so;
 * then the observer's own session expires, and it still tells what follows. */
Test(observe, expiries_of_the_leader_and_of_the_observer, .timeout = 120)
{
    char *path = zkt_path("obs-expire");
    zkl_client *c1 = zkt_client(4000), *c2 = zkt_client(10000), *co = zkt_client(4000);
    zkl_latch *a = join(c1, path, "a", true), *b = join(c2, path, "b", false);
    zkl_observer *o;
    zhandle_t *zh = zkt_raw();
    told t;
    told_init(&t);
    cr_assert_eq(zkt_children_settle(zh, path, 2), 2);
    ok(zkl_leader_observe(co, path, on_told, &t, &o), "observe");
    expect(&t, 1, "a", 10000);
    zkt_expire_seen(c1); /* a joins again, behind b */
    expect(&t, 2, "b", 20000);
    zkt_expire_seen(co); /* the observer's watch goes with its session */
    zkt_sleep_ms(500);
    ok(zkl_latch_yield(b, 60000), "b yields");
    expect(&t, 3, "a", 20000);
    ok(zkl_observer_destroy(o), "destroy");
    ok(zkl_latch_destroy(b), "destroy");
    ok(zkl_latch_destroy(a), "destroy");
    ok(zkl_client_close(co), "close");
    ok(zkl_client_close(c2), "close");
    ok(zkl_client_close(c1), "close");
    zookeeper_close(zh);
    free(path);
}

/* A selector's election (lock- nodes) is observed as its participants judge it. */
Test(observe, a_selector_election, .timeout = 60)
{
    char *path = zkt_path("obs-sel");
    zkl_client *c = zkt_client(10000), *co = zkt_client(10000);
    zkl_latch *s;
    zkl_observer *o;
    told t;
    told_init(&t);
    ok(zkl_selector_create(c, path, "sel", &s), "selector");
    ok(zkl_latch_start(s, NULL, NULL), "start");
    ok(zkl_latch_await(s, 10000), "leads");
    ok(zkl_leader_observe(co, path, on_told, &t, &o), "observe");
    expect(&t, 1, "sel", 10000);
    cr_assert(strstr(t.node[0], "-lock-") != NULL, "node %s", t.node[0]);
    ok(zkl_latch_leave(s, ZKL_LATCH_SILENT), "leave");
    expect(&t, 2, NULL, 10000);
    ok(zkl_observer_destroy(o), "destroy");
    ok(zkl_latch_destroy(s), "destroy");
    ok(zkl_client_close(co), "close");
    ok(zkl_client_close(c), "close");
    free(path);
}

/* A child that is no participant's, ahead of the line: no leader, until it goes. */
Test(observe, a_child_in_the_way_is_no_leader, .timeout = 60)
{
    char *path = zkt_path("obs-way"), way[512];
    zkl_client *c = zkt_client(10000), *co = zkt_client(10000);
    zhandle_t *zh = zkt_raw();
    zkl_latch *a;
    zkl_observer *o;
    told t;
    told_init(&t);
    cr_assert_eq(zkt_make_path(zh, path, 0), ZOK);
    snprintf(way, sizeof way, "%s/0", path);
    cr_assert_eq(zoo_create(zh, way, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0), ZOK);
    a = join(c, path, "a", false);
    cr_assert_eq(zkt_children_settle(zh, path, 2), 2);
    ok(zkl_leader_observe(co, path, on_told, &t, &o), "observe");
    expect(&t, 1, NULL, 10000);
    cr_assert_eq(zoo_delete(zh, way, -1), ZOK);
    expect(&t, 2, "a", 10000);
    ok(zkl_observer_destroy(o), "destroy");
    ok(zkl_latch_destroy(a), "destroy");
    ok(zkl_client_close(co), "close");
    ok(zkl_client_close(c), "close");
    zookeeper_close(zh);
    free(path);
}

/* Descriptor delivery: nothing runs until zkl_client_dispatch, which runs
 * the tellings in order; destroy from inside the callback frees it after. */
Test(observe, by_dispatch_and_destroyed_from_inside, .timeout = 60)
{
    char *path = zkt_path("obs-dispatch");
    zkl_client *c = zkt_client(10000), *co = zkt_client(10000);
    zkl_latch *a = join(c, path, "a", true);
    zkl_observer *o;
    told t;
    struct pollfd pf;
    int fd, ran = 0;
    told_init(&t);
    t.destroy_inside = true;
    ok(zkl_client_event_fd(co, &fd), "event fd");
    ok(zkl_leader_observe(co, path, on_told, &t, &o), "observe");
    pf.fd = fd;
    pf.events = POLLIN;
    cr_assert_eq(poll(&pf, 1, 10000), 1, "nothing to dispatch");
    cr_assert_eq(count(&t), 0, "told before the dispatch");
    ok(zkl_client_dispatch(co, &ran), "dispatch");
    cr_assert_eq(ran, 1);
    expect(&t, 1, "a", 1);
    ok(zkl_latch_leave(a, ZKL_LATCH_SILENT), "leave");
    zkt_sleep_ms(300);
    (void)zkl_client_dispatch(co, &ran);
    cr_assert_eq(count(&t), 1, "told after the destroy");
    ok(zkl_client_close(co), "close: the observer is gone");
    ok(zkl_latch_destroy(a), "destroy");
    ok(zkl_client_close(c), "close");
    free(path);
}

/* Misuse: NULL arguments, a bad path, a close while it lives. */
Test(observe, misuse_is_refused, .timeout = 60)
{
    char *path = zkt_path("obs-misuse");
    zkl_client *c = zkt_client(10000);
    zkl_observer *o = (zkl_observer *)&o;
    told t;
    told_init(&t);
    cr_assert_eq(zkl_leader_observe(NULL, path, on_told, &t, &o), ZKL_EINVAL);
    cr_assert_null(o, "*out not cleared");
    cr_assert_eq(zkl_leader_observe(c, NULL, on_told, &t, &o), ZKL_EINVAL);
    cr_assert_eq(zkl_leader_observe(c, "no-slash", on_told, &t, &o), ZKL_EBADPATH);
    cr_assert_eq(zkl_leader_observe(c, path, NULL, &t, &o), ZKL_EINVAL);
    cr_assert_eq(zkl_leader_observe(c, path, on_told, &t, NULL), ZKL_EINVAL);
    cr_assert_eq(zkl_observer_destroy(NULL), ZKL_EINVAL);
    ok(zkl_leader_observe(c, path, on_told, &t, &o), "observe");
    cr_assert_eq(zkl_client_close(c), ZKL_EBUSY, "closed under a live observer");
    ok(zkl_observer_destroy(o), "destroy");
    ok(zkl_client_close(c), "close");
    free(path);
}

/* zkl_client_cancel stops the observer: its last telling says so. */
Test(observe, a_client_cancel_stops_it_with_a_last_word, .timeout = 60)
{
    char *path = zkt_path("obs-cancel");
    zkl_client *co = zkt_client(10000);
    zkl_observer *o;
    told t;
    want two = {&t, 2};
    told_init(&t);
    ok(zkl_leader_observe(co, path, on_told, &t, &o), "observe");
    expect(&t, 1, NULL, 10000);
    ok(zkl_client_cancel(co), "cancel");
    cr_assert(zkt_wait_for(has, &two, 10000), "no last word");
    cr_assert_eq(t.st[1], ZKL_ECANCELED, "%s", zkl_strerror(t.st[1]));
    ok(zkl_observer_destroy(o), "destroy");
    ok(zkl_client_close(co), "close");
    free(path);
}

/* In a fork()ed child the observer tells nothing, and destroy frees it. */
Test(observe, a_forked_child_frees_it, .timeout = 60)
{
    char *path = zkt_path("obs-fork");
    zkl_client *c = zkt_client(10000), *co = zkt_client(10000);
    zkl_latch *a = join(c, path, "a", true);
    zkl_observer *o;
    told t;
    pid_t pid;
    int status;
    told_init(&t);
    ok(zkl_leader_observe(co, path, on_told, &t, &o), "observe");
    expect(&t, 1, "a", 10000);
    pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) { /* its exit code says which check failed (path freed first:
                     * under valgrind a leak's code would hide it) */
        zkl_observer *o2;
        int before = count(&t), rc = 0;
        if (zkl_leader_observe(co, path, on_told, &t, &o2) != ZKL_ECLOSED)
            rc = 2;
        zkl_latch_leave(a, ZKL_LATCH_SILENT);
        zkt_sleep_ms(300);
        if (!rc && count(&t) != before)
            rc = 3;
        if (zkl_observer_destroy(o) != ZKL_OK || zkl_latch_destroy(a) != ZKL_OK ||
            zkl_client_close(co) != ZKL_OK || zkl_client_close(c) != ZKL_OK)
            rc = rc ? rc : 4;
        free(path);
        _exit(rc);
    }
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
              "child: %s %d (2: observed after the fork, 3: told after the fork, 4: a destroy "
              "or close failed, 99: valgrind's)",
              WIFEXITED(status) ? "exit" : "signal",
              WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
    ok(zkl_latch_leave(a, ZKL_LATCH_SILENT), "leave");
    expect(&t, 2, NULL, 10000);
    ok(zkl_observer_destroy(o), "destroy");
    ok(zkl_latch_destroy(a), "destroy");
    ok(zkl_client_close(co), "close");
    ok(zkl_client_close(c), "close");
    free(path);
}
