/*
 * test_latch.c - leader election (zklock/leader.h, issue 40): a latch's
 * node is Curator's LeaderLatch's; participants lead one at a time, in
 * turn, each term's token above the last; the observer agrees; leadership
 * ends with the lease, before the server could expire the session, and the
 * latch joins again; callbacks alternate and never come after destroy;
 * misuse is refused.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "faultproxy.h"
#include "zkt.h"

#define MAX_EVENTS 64

/* What one latch's callback saw. */
typedef struct seen {
    pthread_mutex_t mu;
    int n;
    zkl_leader_event ev[MAX_EVENTS];
    int64_t token[MAX_EVENTS];
    int64_t at[MAX_EVENTS];
    bool leader_then[MAX_EVENTS]; /* zkl_latch_is_leader from inside */
} seen;

static void on_leader(zkl_latch *l, zkl_leader_event ev, int64_t token, void *ud)
{
    seen *s = ud;
    bool leads = zkl_latch_is_leader(l);
    pthread_mutex_lock(&s->mu);
    if (s->n < MAX_EVENTS) {
        s->ev[s->n] = ev;
        s->token[s->n] = token;
        s->at[s->n] = zkt_now_ms();
        s->leader_then[s->n] = leads;
        s->n++;
    }
    pthread_mutex_unlock(&s->mu);
}

static int events(seen *s)
{
    int n;
    pthread_mutex_lock(&s->mu);
    n = s->n;
    pthread_mutex_unlock(&s->mu);
    return n;
}

typedef struct wait_n {
    seen *s;
    int n;
} wait_n;

static int has_n(void *p)
{
    wait_n *w = p;
    return events(w->s) >= w->n;
}

/* GAINED and ends alternate, starting with GAINED; each end has its term's token. */
static void check_alternation(seen *s, const char *who)
{
    int i;
    pthread_mutex_lock(&s->mu);
    for (i = 0; i < s->n; i++) {
        bool gained = s->ev[i] == ZKL_LEADER_GAINED;
        cr_assert_eq(gained, i % 2 == 0, "%s: event %d is %s", who, i,
                     zkl_leader_event_name(s->ev[i]));
        if (!gained)
            cr_assert_eq(s->token[i], s->token[i - 1], "%s: an end with another term's token", who);
        else if (i > 0)
            cr_assert_gt(s->token[i], s->token[i - 2], "%s: a term's token did not rise", who);
    }
    pthread_mutex_unlock(&s->mu);
}

/* The one latch of v[0..n) that leads now, or -1; fails on two. */
static int the_leader(zkl_latch **v, int n)
{
    int i, who = -1;
    for (i = 0; i < n; i++)
        if (v[i] && zkl_latch_is_leader(v[i])) {
            cr_assert_eq(who, -1, "latches %d and %d both lead", who, i);
            who = i;
        }
    return who;
}

typedef struct any_arg {
    zkl_latch **v;
    int n;
} any_arg;

static int someone_leads(void *p)
{
    any_arg *a = p;
    return the_leader(a->v, a->n) >= 0;
}

/* The election at path observed once it has members participants (the
 * nodes of those that joined made, of those that left deleted): 10 s at most. */
static void observe(zkl_client *c, const char *path, size_t members, zkl_leader *ld)
{
    int64_t end = zkt_now_ms() + 10000;
    for (;;) {
        ok(zkl_leader_get(c, path, ld), "observe");
        if (ld->members == members || zkt_now_ms() > end)
            break;
        zkl_leader_clear(ld);
        zkt_sleep_ms(20);
    }
    cr_assert_eq(ld->members, members, "%zu participants observed, %zu expected", ld->members,
                 members);
}

/* Three participants on three sessions lead in turn, leaving one by one. */
Test(latch, participants_lead_in_turn, .timeout = 120)
{
    enum { N = 3 };
    char *path = zkt_path("latch-turns");
    static const char *ids[N] = {"alpha", "beta", "gamma"};
    zkl_client *c[N], *obs = zkt_client(0);
    zkl_latch *l[N];
    seen s[N];
    bool led[N] = {false};
    int64_t last = 0;
    any_arg a = {l, N};
    int i, round;
    memset(s, 0, sizeof s);
    for (i = 0; i < N; i++) {
        pthread_mutex_init(&s[i].mu, NULL);
        c[i] = zkt_client(0);
        ok(zkl_latch_create(c[i], path, ids[i], &l[i]), "create");
        ok(zkl_latch_start(l[i], on_leader, &s[i]), "start");
    }
    for (round = 0; round < N; round++) {
        zkl_leader ld;
        int64_t token;
        char *node;
        int who;
        cr_assert(zkt_wait_for(someone_leads, &a, 20000), "round %d: nobody leads", round);
        who = the_leader(l, N);
        cr_assert(!led[who], "%s led twice", ids[who]);
        led[who] = true;
        ok(zkl_latch_token(l[who], &token), "token");
        cr_assert_gt(token, last, "the term's token did not rise");
        last = token;
        ok(zkl_latch_node(l[who], &node), "node");
        cr_assert(strstr(node, "/_c_") && strstr(node, "-latch-"), "node %s", node);
        observe(obs, path, (size_t)(N - round), &ld);
        cr_assert(ld.present, "the observer sees no leader");
        cr_assert_str_eq(ld.id, ids[who]);
        cr_assert_eq(ld.token, token);
        cr_assert_str_eq(ld.node, node);
        zkl_leader_clear(&ld);
        free(node);
        ok(zkl_latch_leave(l[who], ZKL_LATCH_NOTIFY), "leave");
        cr_assert_not(zkl_latch_is_leader(l[who]), "still leads after leaving");
        {
            wait_n w = {&s[who], 2};
            cr_assert(zkt_wait_for(has_n, &w, 10000), "LEFT not told");
        }
        cr_assert_eq(s[who].ev[1], ZKL_LEADER_LEFT);
    }
    {
        zkl_leader ld;
        observe(obs, path, 0, &ld);
        cr_assert_not(ld.present, "a leader with nobody taking part");
        zkl_leader_clear(&ld);
    }
    for (i = 0; i < N; i++) {
        check_alternation(&s[i], ids[i]);
        cr_assert_eq(events(&s[i]), 2, "%s: %d events", ids[i], events(&s[i]));
        cr_assert(s[i].leader_then[0], "%s: not leader inside GAINED", ids[i]);
        ok(zkl_latch_destroy(l[i]), "destroy");
        ok(zkl_client_close(c[i]), "close");
        pthread_mutex_destroy(&s[i].mu);
    }
    ok(zkl_client_close(obs), "close");
    free(path);
}

/* await, the token as the node's czxid, the id as its data, and Curator's name. */
Test(latch, await_token_and_node, .timeout = 60)
{
    zhandle_t *zh = zkt_raw();
    char *path = zkt_path("latch-await");
    zkl_client *c = zkt_client(0);
    zkl_latch *l;
    int64_t token;
    char *node, data[64];
    int len = sizeof data;
    struct Stat st;
    ok(zkl_latch_create(c, path, "me", &l), "create");
    cr_assert_eq(zkl_latch_await(l, 100), ZKL_ECANCELED, "await before start");
    cr_assert_eq(zkl_latch_token(l, &token), ZKL_ENOTOWNER);
    ok(zkl_latch_start(l, NULL, NULL), "start");
    cr_assert_eq(zkl_latch_start(l, NULL, NULL), ZKL_EBUSY, "started twice");
    ok(zkl_latch_await(l, 10000), "await");
    cr_assert(zkl_latch_is_leader(l));
    ok(zkl_latch_token(l, &token), "token");
    ok(zkl_latch_node(l, &node), "node");
    cr_assert_eq(zoo_get(zh, node, 0, data, &len, &st), ZOK);
    cr_assert_eq(st.czxid, token, "the token is the node's czxid");
    cr_assert_eq(len, 2);
    cr_assert(memcmp(data, "me", 2) == 0, "the id is the node's data");
    cr_assert_neq(st.ephemeralOwner, 0, "ephemeral");
    free(node);
    ok(zkl_latch_leave(l, ZKL_LATCH_SILENT), "leave");
    cr_assert_eq(zkl_latch_await(l, 100), ZKL_ECANCELED, "await after leave");
    cr_assert_eq(zkt_children_settle(zh, path, 0), 0, "a node left behind");
    ok(zkl_latch_start(l, NULL, NULL), "start again");
    ok(zkl_latch_await(l, 10000), "await again");
    ok(zkl_latch_token(l, &token), "token");
    ok(zkl_latch_destroy(l), "destroy while leading");
    cr_assert_eq(zkt_children_settle(zh, path, 0), 0, "a node left behind");
    ok(zkl_client_close(c), "close");
    zookeeper_close(zh);
    free(path);
}

/* A follower's await times out; the leader's guarded write lands, a follower's is refused. */
Test(latch, follower_waits_and_cannot_write, .timeout = 60)
{
    char *path = zkt_path("latch-follow");
    zkl_client *a = zkt_client(0), *b = zkt_client(0);
    zkl_latch *la, *lb;
    zkl_write w;
    char item[300];
    ok(zkl_latch_create(a, path, "a", &la), "create");
    ok(zkl_latch_create(b, path, "b", &lb), "create");
    ok(zkl_latch_start(la, NULL, NULL), "start");
    ok(zkl_latch_await(la, 10000), "a leads");
    ok(zkl_latch_start(lb, NULL, NULL), "start");
    cr_assert_eq(zkl_latch_await(lb, 500), ZKL_ETIMEDOUT);
    cr_assert_not(zkl_latch_is_leader(lb));
    snprintf(item, sizeof item, "%s-item", path);
    memset(&w, 0, sizeof w);
    w.type = ZKL_WRITE_CREATE;
    w.path = item;
    cr_assert_eq(zkl_latch_guarded_write(lb, &w, 1, NULL), ZKL_ENOTOWNER);
    ok(zkl_latch_guarded_write(la, &w, 1, NULL), "the leader's write");
    w.type = ZKL_WRITE_DELETE;
    w.version = ZKL_ANY_VERSION;
    ok(zkl_latch_guarded_write(la, &w, 1, NULL), "the leader's delete");
    ok(zkl_latch_leave(la, ZKL_LATCH_SILENT), "a leaves");
    ok(zkl_latch_await(lb, 10000), "b leads next");
    ok(zkl_latch_destroy(la), "destroy");
    ok(zkl_latch_destroy(lb), "destroy");
    ok(zkl_client_close(a), "close");
    ok(zkl_client_close(b), "close");
    free(path);
}

/*
 * The server freezes under a leader: leadership ends with its lease
 * (LEASE_ENDED, is_leader false) while the server, frozen, cannot have
 * expired the session; after the thaw the latch joins again with a new
 * session and leads again, its token higher.
 */
Test(latch, leadership_ends_with_the_lease, .timeout = 90)
{
    char *path = zkt_path("latch-lease");
    zkl_client *c = zkt_client(4000);
    zkl_latch *l;
    seen s;
    wait_n two = {&s, 2}, three = {&s, 3};
    int64_t frozen;
    memset(&s, 0, sizeof s);
    pthread_mutex_init(&s.mu, NULL);
    ok(zkl_latch_create(c, path, "leased", &l), "create");
    ok(zkl_latch_start(l, on_leader, &s), "start");
    ok(zkl_latch_await(l, 10000), "leads");
    frozen = zkt_now_ms();
    zkt_server_freeze();
    cr_assert(zkt_wait_for(has_n, &two, 15000), "no end of leadership while frozen");
    cr_assert_not(zkl_latch_is_leader(l), "leads after its end");
    zkt_server_thaw();
    cr_assert_eq(s.ev[1], ZKL_LEADER_LEASE_ENDED, "ended as %s", zkl_leader_event_name(s.ev[1]));
    cr_assert_lt(s.at[1] - frozen, 4000, "ended %lld ms into the freeze: the session could be gone",
                 (long long)(s.at[1] - frozen));
    cr_assert(zkt_wait_for(has_n, &three, 30000), "did not lead again after the thaw");
    ok(zkl_latch_await(l, 10000), "leads again");
    check_alternation(&s, "leased");
    ok(zkl_latch_destroy(l), "destroy");
    ok(zkl_client_close(c), "close");
    pthread_mutex_destroy(&s.mu);
    free(path);
}

static void destroy_inside(zkl_latch *l, zkl_leader_event ev, int64_t token, void *ud)
{
    atomic_int *calls = ud;
    (void)token;
    if (ev == ZKL_LEADER_GAINED)
        cr_assert_eq(zkl_latch_destroy(l), ZKL_OK, "destroy from inside");
    atomic_fetch_add(calls, 1);
}

static int called(void *p)
{
    return atomic_load((atomic_int *)p) > 0;
}

/* Destroy from inside GAINED: freed on return, no callback after; the node goes. */
Test(latch, destroy_from_inside_the_callback, .timeout = 60)
{
    zhandle_t *zh = zkt_raw();
    char *path = zkt_path("latch-inside");
    zkl_client *c = zkt_client(0);
    zkl_latch *l;
    atomic_int calls = 0;
    ok(zkl_latch_create(c, path, "x", &l), "create");
    ok(zkl_latch_start(l, destroy_inside, &calls), "start");
    cr_assert(zkt_wait_for(called, &calls, 10000), "never led");
    zkt_sleep_ms(300);
    cr_assert_eq(atomic_load(&calls), 1, "a callback after destroy");
    cr_assert_eq(zkt_children_settle(zh, path, 0), 0, "a node left behind");
    ok(zkl_client_close(c), "close: the latch is freed");
    zookeeper_close(zh);
    free(path);
}

/* Misuse and bad input. */
Test(latch, bad_input_is_refused, .timeout = 60)
{
    char *path = zkt_path("latch-bad");
    zkl_client *c = zkt_client(0);
    zkl_latch *l = (zkl_latch *)&l;
    char big[ZKL_NODE_DATA_MAX + 2];
    zkl_leader ld;
    int64_t token;
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    cr_assert_eq(zkl_latch_create(NULL, path, "a", &l), ZKL_EINVAL);
    cr_assert_null(l, "cleared on failure");
    cr_assert_eq(zkl_latch_create(c, "no-slash", "a", &l), ZKL_EBADPATH);
    cr_assert_eq(zkl_latch_create(c, path, big, &l), ZKL_EINVAL);
    cr_assert_eq(zkl_latch_create(c, path, "a", NULL), ZKL_EINVAL);
    cr_assert_eq(zkl_latch_start(NULL, NULL, NULL), ZKL_EINVAL);
    cr_assert_eq(zkl_latch_await(NULL, 0), ZKL_EINVAL);
    cr_assert_not(zkl_latch_is_leader(NULL));
    cr_assert_eq(zkl_latch_token(NULL, &token), ZKL_EINVAL);
    cr_assert_eq(zkl_latch_leave(NULL, ZKL_LATCH_SILENT), ZKL_EINVAL);
    cr_assert_eq(zkl_latch_destroy(NULL), ZKL_EINVAL);
    cr_assert_eq(zkl_leader_get(c, path, NULL), ZKL_EINVAL);
    cr_assert_eq(zkl_leader_get(NULL, path, &ld), ZKL_EINVAL);
    cr_assert_eq(zkl_leader_get(c, "bad", &ld), ZKL_EBADPATH);
    ok(zkl_latch_create(c, path, NULL, &l), "an empty id");
    cr_assert_eq(zkl_latch_leave(l, 7), ZKL_EINVAL);
    cr_assert_eq(zkl_latch_await(l, -5), ZKL_EINVAL);
    ok(zkl_latch_leave(l, ZKL_LATCH_SILENT), "leave before start");
    cr_assert_eq(zkl_client_close(c), ZKL_EBUSY, "close with a latch");
    ok(zkl_latch_destroy(l), "destroy");
    cr_assert_str_eq(zkl_leader_event_name(ZKL_LEADER_LEASE_ENDED), "LEASE_ENDED");
    cr_assert_str_eq(zkl_leader_event_name((zkl_leader_event)99), "UNKNOWN");
    ok(zkl_client_close(c), "close");
    free(path);
}

/*
 * A waiting latch destroyed: its wait is canceled and its node goes; on the
 * worker's delivery the destroy waits for that, and the client closes at
 * once; with descriptor delivery the close refuses until a dispatch.
 */
Test(latch, destroy_while_waiting, .timeout = 60)
{
    zhandle_t *zh = zkt_raw();
    char *path = zkt_path("latch-waiting");
    zkl_client *a = zkt_client(0), *b = zkt_client(0), *d = zkt_client(0);
    zkl_latch *la, *lb, *ld;
    int fd, ran;
    ok(zkl_latch_create(a, path, "a", &la), "create");
    ok(zkl_latch_start(la, NULL, NULL), "start");
    ok(zkl_latch_await(la, 10000), "a leads");
    ok(zkl_latch_create(b, path, "b", &lb), "create");
    ok(zkl_latch_start(lb, NULL, NULL), "start");
    cr_assert_eq(zkt_children_settle(zh, path, 2), 2, "b is in line");
    ok(zkl_latch_destroy(lb), "destroy while waiting");
    ok(zkl_client_close(b), "close at once");
    cr_assert_eq(zkt_children_settle(zh, path, 1), 1, "b's node left behind");
    ok(zkl_client_event_fd(d, &fd), "event_fd");
    ok(zkl_latch_create(d, path, "d", &ld), "create");
    ok(zkl_latch_start(ld, NULL, NULL), "start");
    cr_assert_eq(zkt_children_settle(zh, path, 2), 2, "d is in line");
    ok(zkl_latch_destroy(ld), "destroy while waiting");
    cr_assert_eq(zkl_client_close(d), ZKL_EBUSY, "closed before the cancel's report");
    /* issue 57, item 7: the refusal says what to do (65709ca: "1 lock object(s) still exist") */
    cr_assert(strstr(zkl_errmsg(), "call it, then close") &&
                  strstr(zkl_errmsg(), "zkl_client_dispatch"),
              "%s", zkl_errmsg());
    while (zkl_client_close(d) == ZKL_EBUSY) {
        zkt_sleep_ms(10);
        ok(zkl_client_dispatch(d, &ran), "dispatch");
    }
    cr_assert_eq(zkt_children_settle(zh, path, 1), 1, "d's node left behind");
    ok(zkl_latch_destroy(la), "destroy");
    ok(zkl_client_close(a), "close");
    zookeeper_close(zh);
    free(path);
}

static void slow_gained(zkl_latch *l, zkl_leader_event ev, int64_t token, void *ud)
{
    (void)l;
    (void)token;
    if (ev == ZKL_LEADER_GAINED) {
        atomic_store((atomic_int *)ud, 1);
        zkt_sleep_ms(500);
    }
}

static int flag_set(void *p)
{
    return atomic_load((atomic_int *)p);
}

/*
 * Another thread ends leadership while GAINED is still being told: the
 * leave returns at once (the handle goes when the report returns: a leave
 * that waited for it there deadlocked, found by the failure sweep), and the
 * node goes.
 */
Test(latch, leave_while_gained_is_told, .timeout = 60)
{
    zhandle_t *zh = zkt_raw();
    char *path = zkt_path("latch-slow");
    zkl_client *c = zkt_client(0);
    zkl_latch *l;
    atomic_int in = 0;
    int64_t t0;
    ok(zkl_latch_create(c, path, "slow", &l), "create");
    ok(zkl_latch_start(l, slow_gained, &in), "start");
    cr_assert(zkt_wait_for(flag_set, &in, 10000), "never led");
    t0 = zkt_now_ms();
    ok(zkl_latch_leave(l, ZKL_LATCH_SILENT), "leave");
    cr_assert_lt(zkt_now_ms() - t0, 300, "the leave waited for the callback");
    cr_assert_not(zkl_latch_is_leader(l));
    zkt_sleep_ms(600);
    cr_assert_eq(zkt_children_settle(zh, path, 0), 0, "the node left behind");
    ok(zkl_latch_destroy(l), "destroy");
    ok(zkl_client_close(c), "close");
    zookeeper_close(zh);
    free(path);
}

/* What a fork()ed child of a leader checks (0: all held). */
static int child_of_a_leader(zkl_client *c, zkl_latch *l)
{
    int64_t token;
    zkl_write w;
    memset(&w, 0, sizeof w);
    w.type = ZKL_WRITE_CHECK;
    w.path = "/zkltest"; /* (a valid write: the refusal is for the hold) */
    w.version = ZKL_ANY_VERSION;
    if (zkl_latch_is_leader(l))
        return 10; /* a second leader */
    if (zkl_latch_token(l, &token) != ZKL_ENOTOWNER ||
        zkl_latch_guarded_write(l, &w, 1, NULL) != ZKL_ENOTOWNER)
        return 11;
    if (zkl_latch_await(l, 100) == ZKL_OK)
        return 12;
    if (zkl_latch_destroy(l) != ZKL_OK)
        return 13;
    if (zkl_client_close(c) != ZKL_OK)
        return 14;
    return 0;
}

/* The test's own allocations, reachable in the child, which exits without
 * freeing them (the raw handle's threads are the parent's). */
zhandle_t *zkt_latch_fork_zh;
char *zkt_latch_fork_path;

/* Fork; the child runs child_of_a_leader and must exit 0 (99: valgrind
 * found an error in it). */
static void fork_a_leader(zkl_client *c, zkl_latch *l)
{
    int status;
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0)
        _exit(child_of_a_leader(c, l));
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFEXITED(status), "the child crashed (status %d)", status);
    cr_assert_eq(WEXITSTATUS(status), 0, "the child's check %d failed (99: valgrind's)",
                 WEXITSTATUS(status));
}

/* A fork()ed child of a leader does not lead, and goes without touching
 * the parent's term. */
Test(latch, a_forked_child_does_not_lead, .timeout = 60)
{
    zhandle_t *zh = zkt_latch_fork_zh = zkt_raw();
    char *path = zkt_latch_fork_path = zkt_path("latch-fork");
    zkl_client *c = zkt_client(0);
    zkl_latch *l;
    int64_t token, after;
    ok(zkl_latch_create(c, path, "parent", &l), "create");
    ok(zkl_latch_start(l, NULL, NULL), "start");
    ok(zkl_latch_await(l, 10000), "leads");
    ok(zkl_latch_token(l, &token), "token");
    fork_a_leader(c, l);
    cr_assert(zkl_latch_is_leader(l), "the parent lost its term");
    ok(zkl_latch_token(l, &after), "token");
    cr_assert_eq(after, token);
    cr_assert_eq(zkt_children(zh, path), 1);
    ok(zkl_latch_destroy(l), "destroy");
    ok(zkl_client_close(c), "close");
    zookeeper_close(zh);
    free(path);
}

/*
 * The same, forked while the poller (st) has a reply in hand: each delivery
 * waits 1.5 s first, so the reply to the getData that watches the leader's
 * node (sent once it leads) is held when the fork comes. The fork waits the
 * poller's round out; before it did, that reply was on the poller's stack
 * alone, which the child does not have, and valgrind found it lost in the
 * child (which then exits 99). Elsewhere this checks only the child.
 */
Test(latch, a_fork_waits_for_the_reply_the_poller_holds, .timeout = 60)
{
    zhandle_t *zh = zkt_latch_fork_zh = zkt_raw();
    char *path = zkt_latch_fork_path = zkt_path("latch-fork-held");
    zkl_client *c = zkt_client(0);
    zkl_latch *l;
    zkt_fault_set(c, ZKL__FAULT_DELIVER_STALL_MS, 1500);
    ok(zkl_latch_create(c, path, "parent", &l), "create");
    ok(zkl_latch_start(l, NULL, NULL), "start");
    ok(zkl_latch_await(l, 30000), "leads");
    zkt_sleep_ms(300); /* its getData sent and answered: the poller holds the reply */
    fork_a_leader(c, l);
    /* (the stalls may outlast the parent's lease: its term is not checked here) */
    zkt_fault_set(c, ZKL__FAULT_DELIVER_STALL_MS, 0);
    ok(zkl_latch_destroy(l), "destroy");
    ok(zkl_client_close(c), "close");
    zookeeper_close(zh);
    free(path);
}

/* a's latch leads at path (its callback records into s), b's waits behind it: a's node. */
static char *a_leads_b_waits(zhandle_t *zh, const char *path, zkl_client *a, zkl_client *b, seen *s,
                             zkl_latch **la, zkl_latch **lb)
{
    char *node;
    ok(zkl_latch_create(a, path, "a", la), "create");
    ok(zkl_latch_start(*la, on_leader, s), "start");
    ok(zkl_latch_await(*la, 10000), "a leads");
    ok(zkl_latch_create(b, path, "b", lb), "create");
    ok(zkl_latch_start(*lb, NULL, NULL), "start");
    cr_assert_eq(zkt_children_settle(zh, path, 2), 2, "b is in line");
    ok(zkl_latch_node(*la, &node), "node");
    return node;
}

/*
 * An operator deletes the leader's node (Curator's history: a latch that
 * goes on believing it leads): the term ends (LOST) as soon as the delete is
 * seen, before the next participant leads, and the latch joins again behind
 * it with a new node.
 */
Test(latch, leader_node_deleted_by_an_operator, .timeout = 60)
{
    zhandle_t *zh = zkt_raw();
    char *path = zkt_path("latch-deleted"), *node;
    zkl_client *a = zkt_client(0), *b = zkt_client(0);
    zkl_latch *la, *lb;
    seen s;
    wait_n two = {&s, 2};
    memset(&s, 0, sizeof s);
    pthread_mutex_init(&s.mu, NULL);
    node = a_leads_b_waits(zh, path, a, b, &s, &la, &lb);
    cr_assert_eq(zoo_delete(zh, node, -1), ZOK, "the operator's delete");
    ok(zkl_latch_await(lb, 10000), "b leads once a's node is gone");
    cr_assert(zkt_wait_for(has_n, &two, 10000), "a was not told its leadership ended");
    cr_assert_eq(s.ev[1], ZKL_LEADER_LOST, "ended as %s", zkl_leader_event_name(s.ev[1]));
    cr_assert_not(zkl_latch_is_leader(la), "a still believes it leads beside b");
    cr_assert_eq(zkt_children_settle(zh, path, 2), 2, "a joined again behind b");
    ok(zkl_latch_leave(lb, ZKL_LATCH_SILENT), "b leaves");
    ok(zkl_latch_await(la, 10000), "a leads again");
    check_alternation(&s, "a");
    ok(zkl_latch_destroy(la), "destroy");
    ok(zkl_latch_destroy(lb), "destroy");
    ok(zkl_client_close(a), "close");
    ok(zkl_client_close(b), "close");
    zookeeper_close(zh);
    pthread_mutex_destroy(&s.mu);
    free(node);
    free(path);
}

/*
 * Issue 56, item 1: a waiter whose own node is gone is not made leader. A
 * leads, B waits next, C after B, each in a session of its own. An operator
 * deletes B's node; C lists again and now watches A. When A leaves, only C
 * leads: B's node is watched from the moment it is next in line, so B hears
 * of its delete before A's, and joins again behind C. On e5a0a8b (as on
 * 65709ca) B was handed the leadership without a listing, GAINED beside C.
 */
Test(latch, a_waiter_whose_node_was_deleted_is_not_made_leader, .timeout = 60)
{
    zhandle_t *zh = zkt_raw();
    char *path = zkt_path("latch-waiter-deleted"), *node;
    zkl_client *a = zkt_client(0), *b = zkt_client(0), *c = zkt_client(0);
    zkl_latch *la, *lb, *lc, *all[3];
    seen sa, sb, sc;
    int64_t t0;
    memset(&sa, 0, sizeof sa);
    memset(&sb, 0, sizeof sb);
    memset(&sc, 0, sizeof sc);
    pthread_mutex_init(&sa.mu, NULL);
    pthread_mutex_init(&sb.mu, NULL);
    pthread_mutex_init(&sc.mu, NULL);
    ok(zkl_latch_create(a, path, "a", &la), "create");
    ok(zkl_latch_start(la, on_leader, &sa), "start");
    ok(zkl_latch_await(la, 10000), "a leads");
    ok(zkl_latch_create(b, path, "b", &lb), "create");
    ok(zkl_latch_start(lb, on_leader, &sb), "start");
    cr_assert_eq(zkt_children_settle(zh, path, 2), 2, "b is in line");
    ok(zkl_latch_create(c, path, "c", &lc), "create");
    ok(zkl_latch_start(lc, on_leader, &sc), "start");
    cr_assert_eq(zkt_children_settle(zh, path, 3), 3, "c is in line");
    zkt_sleep_ms(300); /* every wait has armed its watches */
    node = zkt_child_in_line(zh, path, 1);
    cr_assert_eq(zoo_delete(zh, node, -1), ZOK, "the operator's delete of b's node");
    zkt_sleep_ms(500); /* c lists again and watches a; b joins again behind c */
    ok(zkl_latch_leave(la, ZKL_LATCH_SILENT), "a leaves");
    ok(zkl_latch_await(lc, 10000), "c leads");
    all[0] = la;
    all[1] = lb;
    all[2] = lc;
    t0 = zkt_now_ms();
    while (zkt_now_ms() - t0 < 1500) {
        cr_assert_eq(the_leader(all, 3), 2, "c is not the one leader");
        zkt_sleep_ms(5);
    }
    cr_assert_eq(events(&sb), 0, "b, whose node was deleted, was told %s",
                 zkl_leader_event_name(sb.ev[0]));
    cr_assert_eq(zkt_children_settle(zh, path, 2), 2, "b joined again behind c");
    ok(zkl_latch_leave(lc, ZKL_LATCH_SILENT), "c leaves");
    ok(zkl_latch_await(lb, 10000), "b leads after c");
    check_alternation(&sb, "b");
    check_alternation(&sc, "c");
    ok(zkl_latch_destroy(la), "destroy");
    ok(zkl_latch_destroy(lb), "destroy");
    ok(zkl_latch_destroy(lc), "destroy");
    ok(zkl_client_close(a), "close");
    ok(zkl_client_close(b), "close");
    ok(zkl_client_close(c), "close");
    zookeeper_close(zh);
    pthread_mutex_destroy(&sa.mu);
    pthread_mutex_destroy(&sb.mu);
    pthread_mutex_destroy(&sc.mu);
    free(node);
    free(path);
}

/*
 * Issue 56, item 2 (5 terms): a guarded write that the server refuses because the
 * term's node is gone (an operator's delete) ends the term then and there:
 * right after its ZKL_ELOST the latch no longer leads and hands out no
 * token, whether or not the node's watch has answered yet; it is told LOST
 * once, and joins again. On e5a0a8b is_leader still read true, until the
 * watch answered.
 */
Test(latch, a_guarded_write_refused_for_the_term_ends_it, .timeout = 90)
{
    zhandle_t *zh = zkt_raw();
    char *path = zkt_path("latch-write-lost"), *node;
    zkl_client *a = zkt_client(0);
    zkl_latch *la;
    zkl_write w;
    seen s;
    int r, lost = 0, i;
    int64_t token;
    memset(&s, 0, sizeof s);
    pthread_mutex_init(&s.mu, NULL);
    memset(&w, 0, sizeof w);
    w.type = ZKL_WRITE_CHECK;
    w.path = path;
    w.version = ZKL_ANY_VERSION;
    /* the node's watch answers 300 ms late: the write's refusal comes first */
    zkt_fault_set(a, ZKL__FAULT_GONE_STALL_MS, 300);
    ok(zkl_latch_create(a, path, "a", &la), "create");
    ok(zkl_latch_start(la, on_leader, &s), "start");
    for (r = 0; r < 5; r++) {
        ok(zkl_latch_await(la, 10000), "a leads");
        ok(zkl_latch_node(la, &node), "node");
        cr_assert_eq(zoo_delete(zh, node, -1), ZOK, "the operator's delete");
        free(node);
        cr_assert_eq(zkl_latch_guarded_write(la, &w, 1, NULL), ZKL_ELOST, "%s", zkl_errmsg());
        cr_assert_not(zkl_latch_is_leader(la), "round %d: it leads on after ELOST", r);
        cr_assert_eq(zkl_latch_token(la, &token), ZKL_ENOTOWNER, "round %d: a token after ELOST",
                     r);
    }
    ok(zkl_latch_await(la, 10000), "a leads again");
    pthread_mutex_lock(&s.mu);
    for (i = 0; i < s.n; i++)
        lost += s.ev[i] == ZKL_LEADER_LOST;
    pthread_mutex_unlock(&s.mu);
    cr_assert_eq(lost, 5, "told LOST %d times for 5 terms", lost);
    check_alternation(&s, "a");
    ok(zkl_latch_destroy(la), "destroy");
    ok(zkl_client_close(a), "close");
    zookeeper_close(zh);
    pthread_mutex_destroy(&s.mu);
    free(path);
}

/*
 * Issue 56, item 7: leader.h says a latch that left may start again, and it
 * may at once: a waiting latch left and started again, 20 times in a row,
 * takes part each time (on e5a0a8b: ZKL_EBUSY "already takes part" for 5 to
 * 174 ms, until the canceled wait's report came). Each left wait's node
 * goes; the last start's waits on, and leads once the leader leaves.
 */
Test(latch, a_latch_that_left_starts_again_at_once, .timeout = 60)
{
    zhandle_t *zh = zkt_raw();
    char *path = zkt_path("latch-restart");
    zkl_client *a = zkt_client(0), *b = zkt_client(0);
    zkl_latch *la, *lb;
    seen s;
    int i;
    memset(&s, 0, sizeof s);
    pthread_mutex_init(&s.mu, NULL);
    free(a_leads_b_waits(zh, path, a, b, &s, &la, &lb));
    for (i = 0; i < 20; i++) {
        ok(zkl_latch_leave(lb, ZKL_LATCH_SILENT), "leave");
        ok(zkl_latch_start(lb, NULL, NULL), "start again at once");
    }
    cr_assert_eq(zkt_children_settle(zh, path, 2), 2, "the left waits' nodes stay");
    ok(zkl_latch_leave(la, ZKL_LATCH_SILENT), "a leaves");
    ok(zkl_latch_await(lb, 10000), "b leads");
    ok(zkl_latch_destroy(lb), "destroy");
    ok(zkl_latch_destroy(la), "destroy");
    ok(zkl_client_close(b), "close at once: every left wait has reported");
    ok(zkl_client_close(a), "close");
    cr_assert_eq(zkt_children_settle(zh, path, 0), 0, "a node was left");
    zookeeper_close(zh);
    pthread_mutex_destroy(&s.mu);
    free(path);
}

/*
 * Issue 56, item 7: a foreign child that sorts first ("0", made by hand)
 * blocks the election, as it blocks Curator's; the await's timeout names it
 * (the mutex's has since turn 3). Once it is deleted, the latch leads.
 */
Test(latch, a_foreign_child_ahead_is_named_by_the_timeout, .timeout = 60)
{
    zhandle_t *zh = zkt_raw();
    char *path = zkt_path("latch-foreign"), child[512];
    zkl_client *a = zkt_client(0);
    zkl_latch *la;
    snprintf(child, sizeof child, "%s/0", path);
    cr_assert_eq(zkt_make_path(zh, path, ZOO_PERSISTENT), ZOK, "the election's path");
    cr_assert_eq(zoo_create(zh, child, "", 0, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0), ZOK, "the child");
    ok(zkl_latch_create(a, path, "a", &la), "create");
    ok(zkl_latch_start(la, NULL, NULL), "start");
    cr_assert_eq(zkl_latch_await(la, 1500), ZKL_ETIMEDOUT, "%s", zkl_errmsg());
    cr_assert(strstr(zkl_errmsg(), "'0'") && strstr(zkl_errmsg(), "is not a participant's"),
              "the message does not name the child: %s", zkl_errmsg());
    cr_assert_eq(zoo_delete(zh, child, -1), ZOK, "the child deleted");
    ok(zkl_latch_await(la, 10000), "a leads");
    ok(zkl_latch_destroy(la), "destroy");
    ok(zkl_client_close(a), "close");
    zoo_delete(zh, path, -1);
    zookeeper_close(zh);
    free(path);
}

typedef struct leaver {
    zkl_latch *l;
    zkl_client *c;
} leaver;

static void leave_now(zkl_client *c, void *arg)
{
    leaver *x = arg;
    (void)c;
    ok(zkl_latch_leave(x->l, ZKL_LATCH_SILENT), "the leader leaves, mid listing");
    ok(zkl_client_drain(x->c, 5000), "its node is gone");
}

/*
 * Issue 56, item 4: the observer's answer during a hand-off. The leader
 * leaves between the observer's listing and its read of the head: the
 * answer is the next leader, not "no leader" with participants there (on
 * e5a0a8b: present false, 2 members).
 */
Test(latch, the_observer_sees_a_leader_through_a_hand_off, .timeout = 60)
{
    zhandle_t *zh = zkt_raw();
    char *path = zkt_path("latch-observe-handoff");
    zkl_client *a = zkt_client(0), *b = zkt_client(0), *o = zkt_client(0);
    zkl_latch *la, *lb;
    zkl_leader ld;
    seen s;
    memset(&s, 0, sizeof s);
    pthread_mutex_init(&s.mu, NULL);
    leaver x;
    free(a_leads_b_waits(zh, path, a, b, &s, &la, &lb));
    x.l = la;
    x.c = a;
    zkt_fault_after_list(o, leave_now, &x);
    ok(zkl_leader_get(o, path, &ld), "observe");
    cr_assert(ld.present, "no leader seen, with %zu participants", ld.members);
    cr_assert_str_eq(ld.id, "b", "the leader seen: %s", ld.id);
    zkl_leader_clear(&ld);
    ok(zkl_latch_destroy(la), "destroy");
    ok(zkl_latch_destroy(lb), "destroy");
    ok(zkl_client_close(a), "close");
    ok(zkl_client_close(b), "close");
    ok(zkl_client_close(o), "close");
    zookeeper_close(zh);
    pthread_mutex_destroy(&s.mu);
    free(path);
}

/*
 * Issue 56, item 4: a mutex held on a latch's path is not the election's
 * leader: the observer names the latch's (on e5a0a8b: the mutex holder).
 */
Test(latch, the_observer_names_the_latch_not_a_mutex_beside_it, .timeout = 60)
{
    char *path = zkt_path("latch-observe-mutex");
    zkl_client *a = zkt_client(0), *m = zkt_client(0);
    zkl_latch *la;
    zkl_mutex *mx;
    zkl_leader ld;
    ok(zkl_mutex_create(m, path, &mx), "create");
    ok(zkl_mutex_acquire(mx, 10000), "the mutex is held first");
    ok(zkl_latch_create(a, path, "a", &la), "create");
    ok(zkl_latch_start(la, NULL, NULL), "start");
    ok(zkl_latch_await(la, 10000), "a leads (its election is of latch- nodes)");
    ok(zkl_leader_get(m, path, &ld), "observe");
    cr_assert(ld.present && strcmp(ld.id, "a") == 0, "the leader seen: %s",
              ld.present ? ld.id : "(none)");
    cr_assert_eq(ld.members, 1, "participants: %zu", ld.members);
    zkl_leader_clear(&ld);
    ok(zkl_latch_destroy(la), "destroy");
    ok(zkl_mutex_release(mx), "release");
    ok(zkl_mutex_destroy(mx), "destroy");
    ok(zkl_client_close(a), "close");
    ok(zkl_client_close(m), "close");
    free(path);
}

/*
 * After a reconnect, the leader's belief rests on an answer of the server
 * given after it (CURATOR-498's lesson): its node deleted while it was cut
 * off (an operator's delete, outside the protocol: the next participant
 * leads at once) ends its term as soon as it is connected again, within the
 * lease, told LOST, and it joins again behind the new leader.
 */
Test(latch, a_delete_while_cut_off_is_seen_on_reconnect, .timeout = 90)
{
    zhandle_t *zh = zkt_raw();
    char *path = zkt_path("latch-cutdel"), *node;
    fp_proxy *fp = fp_start(zkt_servers());
    zkl_client_options o;
    zkl_client *a, *b = zkt_client(0);
    zkl_latch *la, *lb;
    seen s;
    wait_n two = {&s, 2};
    int64_t thawed;
    cr_assert(fp, "proxy");
    memset(&s, 0, sizeof s);
    pthread_mutex_init(&s.mu, NULL);
    zkl_client_options_init(&o);
    o.session_timeout_ms = 10000;
    ok(zkl_client_open(fp_connect_string(fp), &o, &a), "open through the proxy");
    node = a_leads_b_waits(zh, path, a, b, &s, &la, &lb);
    fp_stall(fp, true); /* a hears nothing, shorter than its lease */
    zkt_sleep_ms(300);
    cr_assert_eq(zoo_delete(zh, node, -1), ZOK, "the operator's delete");
    ok(zkl_latch_await(lb, 10000), "b leads once a's node is gone");
    cr_assert(zkl_latch_is_leader(la), "a, cut off within its lease, cannot know yet");
    zkt_sleep_ms(1500); /* a's connection is declared lost (a third of 10 s), */
    fp_cut(fp);         /* and it reconnects to the same session */
    fp_stall(fp, false);
    thawed = zkt_now_ms();
    cr_assert(zkt_wait_for(has_n, &two, 10000), "a was not told its leadership ended");
    cr_assert_eq(s.ev[1], ZKL_LEADER_LOST, "ended as %s", zkl_leader_event_name(s.ev[1]));
    cr_assert_lt(zkt_now_ms() - thawed, 5000, "seen %lld ms after the reconnect",
                 (long long)(zkt_now_ms() - thawed));
    cr_assert_not(zkl_latch_is_leader(la), "a still believes it leads beside b");
    cr_assert_eq(zkt_children_settle(zh, path, 2), 2, "a joined again behind b");
    ok(zkl_latch_destroy(la), "destroy");
    ok(zkl_latch_destroy(lb), "destroy");
    ok(zkl_client_close(a), "close");
    ok(zkl_client_close(b), "close");
    fp_stop(fp);
    zookeeper_close(zh);
    pthread_mutex_destroy(&s.mu);
    free(node);
    free(path);
}

/*
 * Both participants lose their connection at once, shorter than the lease
 * (the server frozen for 1.5 s): no flapping, the leader keeps its term
 * (same token, never told an end), the other still waits, and afterwards
 * exactly one leads.
 */
Test(latch, short_disconnect_keeps_the_term, .timeout = 90)
{
    char *path = zkt_path("latch-blip");
    zkl_client *a = zkt_client(10000), *b = zkt_client(10000);
    zkl_latch *la, *lb;
    seen s;
    int64_t before, after;
    memset(&s, 0, sizeof s);
    pthread_mutex_init(&s.mu, NULL);
    ok(zkl_latch_create(a, path, "a", &la), "create");
    ok(zkl_latch_start(la, on_leader, &s), "start");
    ok(zkl_latch_await(la, 10000), "a leads");
    ok(zkl_latch_create(b, path, "b", &lb), "create");
    ok(zkl_latch_start(lb, NULL, NULL), "start");
    ok(zkl_latch_token(la, &before), "token");
    zkt_server_freeze();
    zkt_sleep_ms(1500);
    cr_assert(zkl_latch_is_leader(la), "leadership dropped within the lease");
    cr_assert_not(zkl_latch_is_leader(lb), "two leaders during the disconnect");
    zkt_server_thaw();
    zkt_sleep_ms(1500); /* both reconnected */
    cr_assert(zkl_latch_is_leader(la), "leadership dropped after the reconnect");
    cr_assert_not(zkl_latch_is_leader(lb), "two leaders after the reconnect");
    ok(zkl_latch_token(la, &after), "token");
    cr_assert_eq(after, before, "the term changed");
    cr_assert_eq(events(&s), 1, "the leader was told %d events", events(&s));
    ok(zkl_latch_destroy(la), "destroy");
    ok(zkl_latch_await(lb, 10000), "b leads next");
    ok(zkl_latch_destroy(lb), "destroy");
    ok(zkl_client_close(a), "close");
    ok(zkl_client_close(b), "close");
    pthread_mutex_destroy(&s.mu);
    free(path);
}

/*
 * The leader's session expires (CURATOR-696): the next term is led through
 * a new node of the new session, never the old session's, with a higher
 * token.
 */
Test(latch, expired_session_leads_again_with_a_new_node, .timeout = 90)
{
    zhandle_t *zh = zkt_raw();
    char *path = zkt_path("latch-expired"), *node1, *node2;
    zkl_client *c = zkt_client(4000);
    zkl_latch *l;
    seen s;
    wait_n three = {&s, 3};
    struct Stat st;
    int64_t t1, t2;
    memset(&s, 0, sizeof s);
    pthread_mutex_init(&s.mu, NULL);
    ok(zkl_latch_create(c, path, "x", &l), "create");
    ok(zkl_latch_start(l, on_leader, &s), "start");
    ok(zkl_latch_await(l, 10000), "leads");
    ok(zkl_latch_token(l, &t1), "token");
    ok(zkl_latch_node(l, &node1), "node");
    zkt_expire_seen(c);
    cr_assert(zkt_wait_for(has_n, &three, 30000), "did not lead again after the expiry");
    cr_assert_eq(s.ev[1], ZKL_LEADER_LOST, "ended as %s", zkl_leader_event_name(s.ev[1]));
    ok(zkl_latch_await(l, 10000), "leads again");
    ok(zkl_latch_token(l, &t2), "token");
    ok(zkl_latch_node(l, &node2), "node");
    cr_assert_gt(t2, t1, "the new term's token is not higher");
    cr_assert_str_neq(node1, node2, "the old session's node was reused");
    cr_assert_eq(zoo_exists(zh, node2, 0, &st), ZOK);
    cr_assert_eq(st.ephemeralOwner, zkl_client_session_id(c), "not the live session's node");
    cr_assert_eq(zoo_exists(zh, node1, 0, &st), ZNONODE, "the old node is still there");
    ok(zkl_latch_destroy(l), "destroy");
    ok(zkl_client_close(c), "close");
    zookeeper_close(zh);
    pthread_mutex_destroy(&s.mu);
    free(node1);
    free(node2);
    free(path);
}

static int deep_delete(zhandle_t *zh, const char *path)
{
    struct String_vector kids;
    char child[600];
    int i, rc, tries;
    /* the latches join again as soon as their nodes go, maybe before the
     * parent's delete: then it is not empty, and the children go again.
     * The parent is a container: empty, the server may remove it first
     * (ZNONODE, after its children went: deleted all the same; under
     * valgrind, on a fresh clone, the latches came back that slowly) */
    for (tries = 0; tries < 50; tries++) {
        if ((rc = zoo_get_children(zh, path, 0, &kids)) != ZOK)
            return tries > 0 && rc == ZNONODE ? ZOK : rc;
        for (i = 0; i < kids.count; i++) {
            snprintf(child, sizeof child, "%s/%s", path, kids.data[i]);
            (void)zoo_delete(zh, child, -1);
        }
        deallocate_String_vector(&kids);
        if ((rc = zoo_delete(zh, path, -1)) == ZNONODE)
            return ZOK;
        if (rc != ZNOTEMPTY)
            return rc;
    }
    return rc;
}

/*
 * The election's parent is deleted with every node in it (CURATOR-724):
 * each latch makes the parent and a node again, and exactly one leads.
 */
Test(latch, parent_deleted, .timeout = 90)
{
    zhandle_t *zh = zkt_raw();
    char *path = zkt_path("latch-parent");
    zkl_client *a = zkt_client(0), *b = zkt_client(0);
    zkl_latch *la, *lb;
    zkl_latch *v[2];
    any_arg arg = {v, 2};
    ok(zkl_latch_create(a, path, "a", &la), "create");
    ok(zkl_latch_create(b, path, "b", &lb), "create");
    v[0] = la;
    v[1] = lb;
    ok(zkl_latch_start(la, NULL, NULL), "start");
    ok(zkl_latch_await(la, 10000), "a leads");
    ok(zkl_latch_start(lb, NULL, NULL), "start");
    cr_assert_eq(zkt_children_settle(zh, path, 2), 2, "b is in line");
    cr_assert_eq(deep_delete(zh, path), ZOK, "the parent deleted");
    cr_assert_eq(zkt_children_settle(zh, path, 2), 2, "the latches did not make it again");
    cr_assert(zkt_wait_for(someone_leads, &arg, 20000), "nobody leads after");
    zkt_sleep_ms(500);
    cr_assert_geq(the_leader(v, 2), 0, "nobody leads");
    ok(zkl_latch_destroy(la), "destroy");
    ok(zkl_latch_destroy(lb), "destroy");
    ok(zkl_client_close(a), "close");
    ok(zkl_client_close(b), "close");
    zookeeper_close(zh);
    free(path);
}

/* Nodes under path, now. */
static int nodes_now(zhandle_t *zh, const char *path)
{
    return zkt_children(zh, path);
}

/*
 * A term's token comes with its grant: yielding with no back-off joins again
 * at once, while the release's delete is still held back (it would ride in
 * the new create's multi, whose reply has no czxid); each GAINED then read
 * the token with a request of its own on the delivery's thread. The latch's
 * creates go alone instead: no exists request in five turns.
 */
Test(latch, a_terms_token_costs_no_request, .timeout = 60)
{
    char *path = zkt_path("latch-token");
    zkl_client *c = zkt_client(0);
    zkl_latch *l;
    seen s;
    wait_n six = {&s, 11}; /* GAINED, then 5 x (LEFT, GAINED) */
    uint64_t before;
    int i;
    memset(&s, 0, sizeof s);
    pthread_mutex_init(&s.mu, NULL);
    ok(zkl_latch_create(c, path, "x", &l), "create");
    ok(zkl_latch_start(l, on_leader, &s), "start");
    ok(zkl_latch_await(l, 10000), "leads");
    before = zkt_exists_requests(c);
    for (i = 0; i < 5; i++) {
        ok(zkl_latch_yield(l, 0), "yield");
        ok(zkl_latch_await(l, 10000), "leads again");
    }
    cr_assert(zkt_wait_for(has_n, &six, 10000), "told %d events", events(&s));
    cr_assert_eq(zkt_exists_requests(c) - before, 0, "exists requests for the terms' tokens: %llu",
                 (unsigned long long)(zkt_exists_requests(c) - before));
    check_alternation(&s, "x");
    ok(zkl_latch_destroy(l), "destroy");
    ok(zkl_client_close(c), "close");
    pthread_mutex_destroy(&s.mu);
    free(path);
}

/*
 * A leader yields with a back-off: LEFT is told, the other leads at once,
 * the yielder has no node during the back-off and joins after it; a leave
 * during a back-off cancels the join.
 */
Test(latch, yield_with_a_back_off, .timeout = 60)
{
    zhandle_t *zh = zkt_raw();
    char *path = zkt_path("latch-yield");
    zkl_client *a = zkt_client(0), *b = zkt_client(0);
    zkl_latch *la, *lb;
    seen s;
    wait_n two = {&s, 2};
    int64_t t0;
    memset(&s, 0, sizeof s);
    pthread_mutex_init(&s.mu, NULL);
    ok(zkl_latch_create(a, path, "a", &la), "create");
    ok(zkl_latch_create(b, path, "b", &lb), "create");
    cr_assert_eq(zkl_latch_yield(la, 0), ZKL_ENOTOWNER, "yield before leading");
    ok(zkl_latch_start(la, on_leader, &s), "start");
    ok(zkl_latch_await(la, 10000), "a leads");
    ok(zkl_latch_start(lb, NULL, NULL), "start");
    cr_assert_eq(zkt_children_settle(zh, path, 2), 2, "b is in line");
    cr_assert_eq(zkl_latch_yield(la, -1), ZKL_EINVAL);
    cr_assert_eq(zkl_latch_yield(la, 3600001), ZKL_EINVAL);
    cr_assert_eq(zkl_latch_yield(lb, 0), ZKL_ENOTOWNER, "a follower yields");
    t0 = zkt_now_ms();
    ok(zkl_latch_yield(la, 1500), "a yields for 1.5 s");
    cr_assert_not(zkl_latch_is_leader(la));
    cr_assert(zkt_wait_for(has_n, &two, 10000), "LEFT not told");
    cr_assert_eq(s.ev[1], ZKL_LEADER_LEFT);
    ok(zkl_latch_await(lb, 10000), "b leads");
    cr_assert_eq(nodes_now(zh, path), 1, "a joined during its back-off");
    cr_assert_lt(zkt_now_ms() - t0, 1200, "b was slow to lead");
    cr_assert_eq(zkt_children_settle(zh, path, 2), 2, "a did not join after its back-off");
    cr_assert_geq(zkt_now_ms() - t0, 1400, "a joined %lld ms after yielding",
                  (long long)(zkt_now_ms() - t0));
    ok(zkl_latch_leave(lb, ZKL_LATCH_SILENT), "b leaves");
    ok(zkl_latch_await(la, 10000), "a leads again");
    ok(zkl_latch_yield(la, 60000), "a yields for a minute");
    ok(zkl_latch_leave(la, ZKL_LATCH_SILENT), "and leaves meanwhile");
    cr_assert_eq(zkl_latch_await(la, 100), ZKL_ECANCELED, "the join was not canceled");
    cr_assert_eq(zkt_children_settle(zh, path, 0), 0, "a node left behind");
    check_alternation(&s, "a");
    ok(zkl_latch_destroy(la), "destroy");
    ok(zkl_latch_destroy(lb), "destroy");
    ok(zkl_client_close(a), "close");
    ok(zkl_client_close(b), "close");
    zookeeper_close(zh);
    pthread_mutex_destroy(&s.mu);
    free(path);
}

/* A selector's nodes are the mutex's (Curator's LeaderSelector), with the id as data. */
Test(latch, selector_uses_the_mutex_layout, .timeout = 60)
{
    zhandle_t *zh = zkt_raw();
    char *path = zkt_path("selector"), *node, data[32];
    zkl_client *c = zkt_client(0);
    zkl_latch *l;
    zkl_leader ld;
    int len = sizeof data;
    ok(zkl_selector_create(c, path, "sel", &l), "create");
    ok(zkl_latch_start(l, NULL, NULL), "start");
    ok(zkl_latch_await(l, 10000), "leads");
    ok(zkl_latch_node(l, &node), "node");
    cr_assert(strstr(node, "/_c_") && strstr(node, "-lock-"), "node %s", node);
    cr_assert_eq(zoo_get(zh, node, 0, data, &len, NULL), ZOK);
    cr_assert(len == 3 && memcmp(data, "sel", 3) == 0, "the id is the node's data");
    ok(zkl_leader_get(c, path, &ld), "observe");
    cr_assert(ld.present && strcmp(ld.node, node) == 0, "the observer sees the selector");
    zkl_leader_clear(&ld);
    ok(zkl_latch_yield(l, 0), "requeue");
    ok(zkl_latch_await(l, 10000), "leads again, alone");
    ok(zkl_latch_destroy(l), "destroy");
    ok(zkl_client_close(c), "close");
    zookeeper_close(zh);
    free(node);
    free(path);
}
