/*
 * test_mutex.c - zkl_mutex against a real ZooKeeper: mutual exclusion under
 * contention, reentrancy, timeouts, ownership, participants, fencing tokens.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "waiter.h"
#include "zkt.h"

Test(mutex, acquire_release_leaves_nothing)
{
    zkl_client *c = zkt_client(0);
    zhandle_t *zh = zkt_raw();
    char *path = zkt_path("basic");
    zkl_mutex *m;
    ok(zkl_mutex_create(c, path, &m), "create");
    cr_assert_str_eq(zkl_mutex_path(m), path);
    cr_assert_not(zkl_mutex_is_held(m));
    ok(zkl_mutex_acquire(m, 5000), "acquire");
    cr_assert(zkl_mutex_is_held(m));
    cr_assert_eq(zkt_children_settle(zh, path, 1), 1);
    ok(zkl_mutex_release(m), "release");
    cr_assert_not(zkl_mutex_is_held(m));
    cr_assert_eq(zkt_children_settle(zh, path, 0), 0);
    cr_assert_eq(zkl_mutex_release(m), ZKL_ENOTOWNER);
    ok(zkl_mutex_destroy(m), "destroy");
    ok(zkl_client_close(c), "close");
    zookeeper_close(zh);
    free(path);
}

Test(mutex, node_layout_matches_curator)
{
    zkl_client *c = zkt_client(0);
    zhandle_t *zh = zkt_raw();
    char *path = zkt_path("layout");
    zkl_mutex *m;
    char *node = NULL, data[64];
    int len = sizeof data - 1;
    struct Stat st;
    int64_t token;
    const char *name;
    size_t i;
    ok(zkl_mutex_create(c, path, &m), "create");
    ok(zkl_mutex_acquire(m, 5000), "acquire");
    ok(zkl_mutex_node(m, &node), "node");
    cr_assert_eq(strncmp(node, path, strlen(path)), 0);
    name = node + strlen(path) + 1;
    /* ^_c_[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}-lock-[0-9]{10}$ */
    cr_assert_eq(strlen(name), 55, "name %s", name);
    cr_assert_eq(strncmp(name, "_c_", 3), 0);
    cr_assert_eq(name[3 + 14], '4', "uuid version 4: %s", name);
    cr_assert(strchr("89ab", name[3 + 19]), "uuid variant: %s", name);
    cr_assert_eq(strncmp(name + 40, "lock-", 5), 0, "name %s", name);
    for (i = 45; i < 55; i++)
        cr_assert(name[i] >= '0' && name[i] <= '9');
    cr_assert_eq(zoo_get(zh, node, 0, data, &len, &st), ZOK);
    data[len] = '\0';
    cr_assert_gt(len, 6, "node data is the local IP as text, got '%s'", data);
    cr_assert(strspn(data, "0123456789.") == (size_t)len, "node data '%s'", data);
    cr_assert_eq(st.ephemeralOwner, zkl_client_session_id(c));
    ok(zkl_mutex_fencing_token(m, &token), "token");
    cr_assert_eq(token, st.czxid);
    /* the parent is a container: gone soon after the last node goes */
    ok(zkl_mutex_release(m), "release");
    free(node);
    ok(zkl_mutex_destroy(m), "destroy");
    ok(zkl_client_close(c), "close");
    zookeeper_close(zh);
    free(path);
}

Test(mutex, reentrant_three_deep_one_node)
{
    zkl_client *c = zkt_client(0);
    zhandle_t *zh = zkt_raw();
    char *path = zkt_path("reentrant");
    zkl_mutex *m;
    int64_t t1, t2;
    ok(zkl_mutex_create(c, path, &m), "create");
    ok(zkl_mutex_acquire(m, 5000), "acquire 1");
    ok(zkl_mutex_fencing_token(m, &t1), "token");
    ok(zkl_mutex_acquire(m, 0), "acquire 2");
    ok(zkl_mutex_acquire(m, ZKL_WAIT_FOREVER), "acquire 3");
    cr_assert_eq(zkt_children_settle(zh, path, 1), 1, "a re-acquire must not create a node");
    ok(zkl_mutex_fencing_token(m, &t2), "token");
    cr_assert_eq(t1, t2);
    ok(zkl_mutex_release(m), "release 3");
    ok(zkl_mutex_release(m), "release 2");
    cr_assert(zkl_mutex_is_held(m));
    cr_assert_eq(zkt_children_settle(zh, path, 1), 1);
    ok(zkl_mutex_release(m), "release 1");
    cr_assert_eq(zkt_children_settle(zh, path, 0), 0);
    cr_assert_eq(zkl_mutex_release(m), ZKL_ENOTOWNER);
    ok(zkl_mutex_destroy(m), "destroy");
    ok(zkl_client_close(c), "close");
    zookeeper_close(zh);
    free(path);
}

Test(mutex, timeout_while_held_leaves_no_node)
{
    zkl_client *a = zkt_client(0), *b = zkt_client(0);
    zhandle_t *zh = zkt_raw();
    char *path = zkt_path("timeout");
    zkl_mutex *ma, *mb;
    int64_t t0, took;
    ok(zkl_mutex_create(a, path, &ma), "create a");
    ok(zkl_mutex_create(b, path, &mb), "create b");
    ok(zkl_mutex_acquire(ma, 5000), "a acquires");
    t0 = zkt_now_ms();
    cr_assert_eq(zkl_mutex_acquire(mb, 700), ZKL_ETIMEDOUT);
    took = zkt_now_ms() - t0;
    cr_assert_geq(took, 650, "gave up early: %lld ms", (long long)took);
    cr_assert_lt(took, 3000, "gave up late: %lld ms", (long long)took);
    cr_assert_not(zkl_mutex_is_held(mb));
    ok(zkl_client_drain(b, 5000), "drain");
    cr_assert_eq(zkt_children_settle(zh, path, 1), 1, "the waiter's node must be gone");
    /* try-once */
    cr_assert_eq(zkl_mutex_acquire(mb, 0), ZKL_ETIMEDOUT);
    ok(zkl_client_drain(b, 5000), "drain");
    cr_assert_eq(zkt_children_settle(zh, path, 1), 1);
    ok(zkl_mutex_release(ma), "release");
    ok(zkl_client_drain(a, 5000), "release returns before the delete lands: wait for it");
    ok(zkl_mutex_acquire(mb, 0), "b acquires once free");
    ok(zkl_mutex_release(mb), "release b");
    cr_assert_eq(zkt_children_settle(zh, path, 0), 0);
    ok(zkl_mutex_destroy(ma), "destroy");
    ok(zkl_mutex_destroy(mb), "destroy");
    ok(zkl_client_close(a), "close");
    ok(zkl_client_close(b), "close");
    zookeeper_close(zh);
    free(path);
}

struct other_thread {
    zkl_mutex *m;
    zkl_status release_st, acquire_st;
    bool held;
};

static void *release_from_other(void *arg)
{
    struct other_thread *o = arg;
    o->held = zkl_mutex_is_held(o->m);
    o->release_st = zkl_mutex_release(o->m);
    return NULL;
}

Test(mutex, release_from_wrong_thread_is_refused)
{
    zkl_client *c = zkt_client(0), *other = zkt_client(0);
    char *path = zkt_path("wrongthread");
    zkl_mutex *m, *m2;
    pthread_t t;
    struct other_thread o = {0};
    ok(zkl_mutex_create(c, path, &m), "create");
    ok(zkl_mutex_acquire(m, 5000), "acquire");
    o.m = m;
    pthread_create(&t, NULL, release_from_other, &o);
    pthread_join(t, NULL);
    cr_assert_not(o.held, "is_held must be per thread");
    cr_assert_eq(o.release_st, ZKL_ENOTOWNER);
    cr_assert(zkl_mutex_is_held(m), "the owner still holds it");
    ok(zkl_mutex_create(other, path, &m2), "create other");
    cr_assert_eq(zkl_mutex_acquire(m2, 0), ZKL_ETIMEDOUT, "still exclusive");
    cr_assert_eq(zkl_mutex_destroy(m), ZKL_EBUSY, "destroy while held");
    ok(zkl_mutex_release(m), "release");
    ok(zkl_mutex_destroy(m), "destroy");
    ok(zkl_mutex_destroy(m2), "destroy");
    ok(zkl_client_close(c), "close");
    ok(zkl_client_close(other), "close");
    free(path);
}

Test(mutex, bad_paths_are_refused)
{
    zkl_client *c = zkt_client(0);
    zkl_mutex *m = NULL;
    const char *bad[] = {"", "relative/path", "/", "/a//b", "/a/", "/a/../b", "/zookeeper/x"};
    size_t i;
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cr_assert_eq(zkl_mutex_create(c, bad[i], &m), ZKL_EBADPATH, "'%s'", bad[i]);
        cr_assert_null(m);
    }
    cr_assert_eq(zkl_mutex_create(c, NULL, &m), ZKL_EINVAL);
    cr_assert_eq(zkl_mutex_acquire((zkl_mutex *)NULL, 0), ZKL_EINVAL);
    ok(zkl_mutex_create(c, "/zkltest/neg", &m), "create");
    cr_assert_eq(zkl_mutex_acquire(m, -5), ZKL_EINVAL);
    ok(zkl_mutex_destroy(m), "destroy");
    ok(zkl_client_close(c), "close");
}

/* A path the server cannot hold lock nodes under (an ephemeral node, or one
 * below it): the acquire fails at once with the server's reason and the
 * path, instead of waiting out its timeout, and creates nothing. */
Test(mutex, path_on_an_ephemeral_node_fails_at_once, .timeout = 60)
{
    zkl_client *c = zkt_client(0);
    zhandle_t *zh = zkt_raw();
    char *eph = zkt_path("eph");
    cr_assert_eq(zkt_make_path(zh, eph, ZOO_EPHEMERAL), ZOK);
    zkt_refused_at_once(c, zh, eph, ZKL_EZK, "ephemeral");
    ok(zkl_client_close(c), "close");
    zookeeper_close(zh);
    free(eph);
}

Test(mutex, participants_in_queue_order)
{
    zkl_client *a = zkt_client(0), *b = zkt_client(0);
    char *path = zkt_path("participants");
    zkl_mutex *ma, *mb;
    char **v, *node;
    size_t n;
    ok(zkl_mutex_create(a, path, &ma), "create");
    ok(zkl_mutex_create(b, path, &mb), "create");
    ok(zkl_mutex_participants(ma, &v, &n), "participants of a free lock");
    cr_assert_eq(n, 0);
    zkl_strings_free(v, n);
    ok(zkl_mutex_acquire(ma, 5000), "acquire");
    cr_assert_eq(zkl_mutex_acquire(mb, 200), ZKL_ETIMEDOUT);
    ok(zkl_mutex_participants(mb, &v, &n), "participants");
    cr_assert_eq(n, 1);
    ok(zkl_mutex_node(ma, &node), "node");
    cr_assert_str_eq(v[0], node);
    zkl_strings_free(v, n);
    free(node);
    cr_assert_eq(zkl_mutex_node(mb, &node), ZKL_ENOTOWNER);
    ok(zkl_mutex_release(ma), "release");
    ok(zkl_mutex_destroy(ma), "destroy");
    ok(zkl_mutex_destroy(mb), "destroy");
    ok(zkl_client_close(a), "close");
    ok(zkl_client_close(b), "close");
    free(path);
}

/* ---- contention: 8 sessions x 300 acquisitions, one shared slot ---- */

#define THREADS 8
#define ROUNDS 300

struct shared {
    const char *path;
    zkl_lookahead lookahead;
    atomic_int inside;
    atomic_int violations;
    atomic_int done;
    atomic_llong last_token;
    atomic_int token_regressions;
};

static void *contender(void *arg)
{
    struct shared *sh = arg;
    zkl_client *c = zkt_client(10000);
    zkl_mutex *m;
    int i;
    ok(zkl_mutex_create(c, sh->path, &m), "create");
    ok(zkl_mutex_set_lookahead(m, sh->lookahead), "lookahead");
    for (i = 0; i < ROUNDS; i++) {
        int64_t tok;
        long long prev;
        ok(zkl_mutex_acquire(m, 60000), "acquire");
        if (atomic_fetch_add(&sh->inside, 1) != 0)
            atomic_fetch_add(&sh->violations, 1);
        ok(zkl_mutex_fencing_token(m, &tok), "token");
        prev = atomic_exchange(&sh->last_token, tok);
        if (tok <= prev)
            atomic_fetch_add(&sh->token_regressions, 1);
        atomic_fetch_sub(&sh->inside, 1);
        ok(zkl_mutex_release(m), "release");
    }
    ok(zkl_mutex_destroy(m), "destroy");
    ok(zkl_client_close(c), "close");
    atomic_fetch_add(&sh->done, 1);
    return NULL;
}

static void contend(zkl_lookahead lookahead)
{
    struct shared sh = {0};
    pthread_t t[THREADS];
    zhandle_t *zh = zkt_raw();
    char *path = zkt_path("contention");
    int i;
    sh.path = path;
    sh.lookahead = lookahead;
    for (i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, contender, &sh);
    for (i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    cr_assert_eq(atomic_load(&sh.done), THREADS);
    cr_assert_eq(atomic_load(&sh.violations), 0, "two holders at once");
    cr_assert_eq(atomic_load(&sh.token_regressions), 0, "fencing token did not increase");
    cr_assert_eq(zkt_children_settle(zh, path, 0), 0, "znodes left behind");
    zookeeper_close(zh);
    free(path);
}

Test(mutex, eight_sessions_never_two_holders, .timeout = 300)
{
    contend(ZKL_LOOKAHEAD_AUTO); /* the default */
}

/* The look-ahead hands the lock over without a listing: exclusion must hold all the same. */
Test(mutex, eight_sessions_with_lookahead_never_two_holders, .timeout = 300)
{
    contend(ZKL_LOOKAHEAD_ON);
}

/* ---- look-ahead: what it may and may not conclude ---- */

/* Acquires on its own thread, holds until told, releases there (holds are per thread). */
/* The lock's requests of c: not the lease's renewals, which come every T/3
 * while anything is held or wanted, whatever the lock does. */
static uint64_t requests_of(zkl_client *c)
{
    return zkt_lock_requests(c);
}

/*
 * A holds; X (gives up soon), B and C queue behind, C with the look-ahead
 * (watching B, and X ahead of it). X's going is no reason for C to hold; A's
 * going makes B the head, and C, having seen A hold (core/engine/inproc.h), takes
 * the lock on B's release with no further request.
 */
Test(mutex, lookahead_grants_only_what_the_line_allows, .timeout = 60)
{
    zkl_client *ca = zkt_client(0), *cx = zkt_client(0), *cb = zkt_client(0), *cc = zkt_client(0);
    zhandle_t *zh = zkt_raw();
    char *path = zkt_path("lookahead");
    zkl_mutex *ma, *mx, *mb, *mc;
    zkt_waiter x = {0}, b = {0}, w = {0};
    uint64_t before;
    ok(zkl_mutex_create(ca, path, &ma), "create a");
    ok(zkl_mutex_create(cx, path, &mx), "create x");
    ok(zkl_mutex_create(cb, path, &mb), "create b");
    ok(zkl_mutex_create(cc, path, &mc), "create c");
    ok(zkl_mutex_set_lookahead(mc, ZKL_LOOKAHEAD_ON), "lookahead");
    ok(zkl_mutex_acquire(ma, 5000), "a acquires");
    zkt_waiter_start(&x, mx, 1500, NULL);
    cr_assert_eq(zkt_children_settle(zh, path, 2), 2);
    zkt_waiter_start(&b, mb, 30000, NULL);
    cr_assert_eq(zkt_children_settle(zh, path, 3), 3);
    zkt_waiter_start(&w, mc, 30000, NULL);
    cr_assert_eq(zkt_children_settle(zh, path, 4), 4);

    pthread_join(x.t, NULL);
    cr_assert_eq(x.st, ZKL_ETIMEDOUT);
    zkt_sleep_ms(500);
    cr_assert_not(atomic_load(&b.done), "b must wait: a holds");
    cr_assert_not(atomic_load(&w.done), "c must wait: the node ahead of its own left, a holds");

    ok(zkl_mutex_release(ma), "a releases");
    zkt_waiter_until_done(&b);
    ok(b.st, "b acquires after a");
    before = zkt_requests_settle(cc);
    cr_assert_not(atomic_load(&w.done), "c must wait: b holds");
    zkt_waiter_release(&b);
    zkt_waiter_until_done(&w);
    ok(w.st, "c acquires after b");
    cr_assert_eq(requests_of(cc), before, "the hand-off to c needed no listing");
    zkt_waiter_release(&w);
    cr_assert_eq(zkt_children_settle(zh, path, 0), 0, "znodes left behind");
    ok(zkl_mutex_destroy(ma), "destroy");
    ok(zkl_mutex_destroy(mx), "destroy");
    ok(zkl_mutex_destroy(mb), "destroy");
    ok(zkl_mutex_destroy(mc), "destroy");
    ok(zkl_client_close(ca), "close");
    ok(zkl_client_close(cx), "close");
    ok(zkl_client_close(cb), "close");
    ok(zkl_client_close(cc), "close");
    zookeeper_close(zh);
    free(path);
}

Test(mutex, set_lookahead_refuses_null_and_unknown_modes)
{
    zkl_client *c = zkt_client(0);
    zkl_mutex *m;
    cr_assert_eq(zkl_mutex_set_lookahead(NULL, ZKL_LOOKAHEAD_ON), ZKL_EINVAL);
    ok(zkl_mutex_create(c, "/zkltest/modes", &m), "create");
    cr_assert_eq(zkl_mutex_set_lookahead(m, (zkl_lookahead)3), ZKL_EINVAL);
    cr_assert(strstr(zkl_errmsg(), "unknown mode 3"), "message: %s", zkl_errmsg());
    ok(zkl_mutex_set_lookahead(m, ZKL_LOOKAHEAD_OFF), "off");
    ok(zkl_mutex_set_lookahead(m, ZKL_LOOKAHEAD_AUTO), "auto");
    ok(zkl_mutex_destroy(m), "destroy");
    ok(zkl_client_close(c), "close");
}

/* ---- a release's delete held back for the next request ---- */

/*
 * p->m[0] (x) holds; a (waiter a, or relock r) and then b queue. x's release
 * gives a the lock with b in line (a contended hold); returns once a holds.
 */
static void line_behind_x(zkt_party *p, zkt_waiter *a, zkt_relock *r, zkt_waiter *b)
{
    ok(zkl_mutex_acquire(p->m[0], 5000), "x acquires");
    if (r)
        zkt_relock_start(r, p->c[1], p->m[1]);
    else
        zkt_waiter_start(a, p->m[1], 30000, NULL);
    cr_assert_eq(zkt_children_settle(p->zh, p->path, 2), 2);
    zkt_waiter_start(b, p->m[2], 30000, NULL);
    cr_assert_eq(zkt_children_settle(p->zh, p->path, 3), 3);
    ok(zkl_mutex_release(p->m[0]), "x releases");
    a = r ? &r->w : a;
    zkt_waiter_until_done(a);
    ok(a->st, "a acquires after x, b in line");
}

/*
 * A contended release followed at once by an acquire: the delete goes in one
 * request with the new create (a window of 20 s here, so that the test does
 * not depend on timing). B, next in line, gets the lock as soon as that
 * request is applied, not when the window ends.
 */
Test(mutex, contended_release_rides_with_the_next_acquire, .timeout = 60)
{
    zkt_party p;
    zkt_relock r = {0};
    zkt_waiter b = {0};
    int64_t t0;
    zkt_party_open(&p, 3, "relock", 0);
    zkt_defer_window(p.c[1], 20 * 1000 * 1000);
    line_behind_x(&p, NULL, &r, &b);
    t0 = zkt_now_ms();
    atomic_store(&r.w.release_now, 1); /* a: release, acquire again (behind b) */
    zkt_waiter_until_done(&b);
    ok(b.st, "b acquires after a");
    cr_assert_lt(zkt_now_ms() - t0, 15000, "b waited for the window, not for a's next request");
    zkt_requests_settle(p.c[1]); /* a waits behind b, its watches set (slow under valgrind) */
    zkt_waiter_release(&b);
    zkt_relock_join(&r);
    /* delete+create as one multi, the watch on b (then the head, so its
     * going needs no listing) and on a's own node (the proof that it is
     * still there at b's going: wait.c, handed_over). With the hints, no
     * listing: b's sequence is just below a's (wait.c, known predecessor);
     * without them, one. Sent apart, and listed, it would be five */
    cr_assert_eq(r.after - r.before, zkl_client_process_hints(p.c[1]) ? 3 : 4,
                 "requests for a's release and acquire: %llu",
                 (unsigned long long)(r.after - r.before));
    ok(zkl_client_drain(p.c[1], 5000), "drain sends a's last delete, still held back");
    zkt_party_close(&p);
}

/*
 * A contended release with no request after it: the client's worker sends
 * the delete when the window ends (300 ms here, to be measurable; 0.1 ms by
 * default), and not before. The release sets the worker's alarm (its
 * timerfd; in the last round, asleep on its condition variable as when no
 * eventfd can be made, it is kicked instead). a's and b's blocking waits
 * sleep on eventfds in the first round (as in a process of many clients),
 * on condition variables in the others. Not woken, the worker would look
 * around only at its next lease renewal or after its idle 10 s, which a
 * 30 s session puts 10 s apart; a blocking wait not woken would time out.
 */
Test(mutex, contended_release_goes_out_when_its_window_ends, .timeout = 60)
{
    zkt_party p;
    zkt_waiter a, b;
    int64_t t0, waited;
    int round;
    zkt_party_open(&p, 3, "window", 30000);
    for (round = 0; round < 3; round++) {
        memset(&a, 0, sizeof a);
        memset(&b, 0, sizeof b);
        zkt_defer_window(p.c[1], round != 1 ? 300 * 1000 : 0);
        zkt_many_clients_from(round == 0 ? 0 : -1);
        if (round == 2) {
            int i;
            for (i = 0; i < p.n; i++)
                zkt_fault_sleep_on_cv(p.c[i]);
        }
        line_behind_x(&p, &a, NULL, &b);
        t0 = zkt_now_ms();
        zkt_waiter_release(&a);
        zkt_waiter_until_done(&b);
        waited = zkt_now_ms() - t0;
        ok(b.st, "b acquires after a");
        /* Not sent at all, b would time out (30 s); the upper bounds leave
         * room for a slow run (ASan on a busy machine once took 3 s). */
        if (round != 1)
            cr_assert(waited >= 250 && waited < 6000, "300 ms window (round %d): b waited %lld ms",
                      round, (long long)waited);
        else
            cr_assert_lt(waited, 6000, "default window: b waited %lld ms", (long long)waited);
        zkt_waiter_release(&b);
        cr_assert_eq(zkt_children_settle(p.zh, p.path, 0), 0, "znodes left behind");
    }
    zkt_many_clients_from(-1);
    zkt_party_close(&p);
}

/* One side of two clients taking turns: n times acquire, hold hold_ms, release. */
struct turns {
    zkl_mutex *m;
    int n, hold_ms;
    zkl_status st;
    _Atomic int64_t got_at; /* zkt_now_ms() of the last grant */
};

static void *take_turns(void *arg)
{
    struct turns *t = arg;
    int i;
    for (i = 0; i < t->n && t->st == ZKL_OK; i++) {
        if ((t->st = zkl_mutex_acquire(t->m, 10000)) != ZKL_OK)
            break;
        atomic_store(&t->got_at, zkt_now_ms());
        zkt_sleep_ms(t->hold_ms);
        t->st = zkl_mutex_release(t->m);
    }
    return NULL;
}

/*
 * zkl_client_drain waits for a held-back delete that another thread has
 * already taken to send: here the worker, the release's window over, held
 * in the send by a fault. The delete was started, so the drain is not done
 * until its reply. (The drain counted only deletes on the wire, so it
 * returned at once with the node still there.)
 */
Test(mutex, drain_waits_for_a_delete_another_thread_is_sending, .timeout = 60)
{
    zkl_client *c = zkt_client(0);
    zhandle_t *zh = zkt_raw();
    char *path = zkt_path("drain-taken");
    zkl_mutex *m;
    ok(zkl_mutex_create(c, path, &m), "create");
    zkt_fault_set(c, ZKL__FAULT_HELD_BACK_SEND_MS, 2000);
    ok(zkl_mutex_acquire(m, 5000), "acquire");
    ok(zkl_mutex_release(m), "release");
    zkt_sleep_ms(300); /* the window (1 ms) over: the worker took it, and waits in the fault */
    cr_assert_eq(zkt_children(zh, path), 1, "the delete went early");
    ok(zkl_client_drain(c, 10000), "drain");
    cr_assert_eq(zkt_children(zh, path), 0, "the drain returned before the delete was done");
    zkt_fault_set(c, ZKL__FAULT_HELD_BACK_SEND_MS, 0);
    ok(zkl_mutex_destroy(m), "destroy");
    ok(zkl_client_close(c), "close");
    zookeeper_close(zh);
    free(path);
}

/*
 * Two clients take turns on one lock, each releasing with the other in line
 * (a contended release: its delete held back, for 50 ms here) and acquiring
 * again at once, so that its create carries the delete long before its
 * moment. The releasing client's worker is not woken for it: the release
 * moves the worker's alarm without waking it, and the create that takes the
 * delete puts the alarm back (client/worker.c). Kicked for each delete, as
 * it used to be, the worker woke once a turn (12 times); with the alarm
 * moved but never put back, once for each window that ran out (6 times).
 * A lease renewal may fall in the turns: at most 2. a's last release has no
 * create after it: its alarm rings when the window ends, and b gets its
 * last turn then. An alarm that does not ring leaves the delete to the
 * worker's next wake-up, the lease's renewal (2.8 s later, in a run with
 * the alarm never set).
 */
Test(mutex, a_delete_taken_before_its_moment_leaves_the_worker_asleep, .timeout = 60)
{
    zkt_party p;
    pthread_t t;
    struct turns b = {0};
    uint64_t w0, w1;
    int64_t t0;
    int i;
    zkt_party_open(&p, 2, "asleep", 30000);
    for (i = 0; i < p.n; i++)
        zkt_defer_window(p.c[i], 50 * 1000);
    ok(zkl_mutex_acquire(p.m[0], 5000), "a acquires");
    b.m = p.m[1];
    b.n = 13;
    b.hold_ms = 20;
    cr_assert_eq(pthread_create(&t, NULL, take_turns, &b), 0);
    cr_assert_eq(zkt_children_settle(p.zh, p.path, 2), 2, "b in line");
    w0 = zkt_worker_wakes(p.c[0]);
    for (i = 0; i < 12; i++) {
        zkt_sleep_ms(20);
        ok(zkl_mutex_release(p.m[0]), "a releases, b in line");
        ok(zkl_mutex_acquire(p.m[0], 10000), "a acquires again, after b");
    }
    w1 = zkt_worker_wakes(p.c[0]);
    t0 = zkt_now_ms();
    ok(zkl_mutex_release(p.m[0]), "a's last release: no create to carry it");
    pthread_join(t, NULL);
    ok(b.st, "b's turns");
    cr_assert_leq(w1 - w0, 2, "a's worker woke %llu times in 12 turns",
                  (unsigned long long)(w1 - w0));
    cr_assert_lt(atomic_load(&b.got_at) - t0, 2000, "b's last turn came %lld ms after a's release",
                 (long long)(atomic_load(&b.got_at) - t0));
    zkt_party_close(&p);
}

/* Threads of one process sharing one zkl_mutex object contend through ZooKeeper. */
struct same_obj {
    zkl_mutex *m;
    atomic_int inside, violations;
};

static void *same_object(void *arg)
{
    struct same_obj *s = arg;
    int i;
    for (i = 0; i < 40; i++) {
        ok(zkl_mutex_acquire(s->m, 30000), "acquire");
        if (atomic_fetch_add(&s->inside, 1) != 0)
            atomic_fetch_add(&s->violations, 1);
        atomic_fetch_sub(&s->inside, 1);
        ok(zkl_mutex_release(s->m), "release");
    }
    return NULL;
}

Test(mutex, threads_sharing_one_object_exclude, .timeout = 120)
{
    zkl_client *c = zkt_client(0);
    char *path = zkt_path("sameobj");
    struct same_obj s = {0};
    pthread_t t[4];
    int i;
    ok(zkl_mutex_create(c, path, &s.m), "create");
    for (i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, same_object, &s);
    for (i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    cr_assert_eq(atomic_load(&s.violations), 0);
    ok(zkl_mutex_destroy(s.m), "destroy");
    ok(zkl_client_close(c), "close");
    free(path);
}
