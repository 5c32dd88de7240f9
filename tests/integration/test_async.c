/*
 * test_async.c - async acquires (zklock/async.h) on a real server: queue
 * order, cancel against grant, timeouts, session loss, callbacks that act
 * on what called them, descriptor delivery, and the rules of modes.
 */
#include <criterion/criterion.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "zklock/async.h"
#include "zkt.h"

/* What a callback saw: one record per handle. */
typedef struct seen {
    atomic_int calls;
    atomic_int st;
    char msg[256];
    pthread_t thread;
} seen;

static void record(zkl_op *op, zkl_status st, const char *msg, void *ud)
{
    seen *s = ud;
    (void)op;
    snprintf(s->msg, sizeof s->msg, "%s", msg);
    s->thread = pthread_self();
    atomic_store(&s->st, st);
    atomic_fetch_add(&s->calls, 1);
}

static int called(void *p)
{
    return atomic_load(&((seen *)p)->calls) > 0;
}

static void wait_called(seen *s)
{
    cr_assert(zkt_wait_for(called, s, 20000), "the callback never ran");
}

Test(async, grant_token_lease_release, .timeout = 60)
{
    zkl_client *c = zkt_client(0);
    zhandle_t *zh = zkt_raw();
    char *path = zkt_path("async-grant");
    zkl_mutex *m;
    zkl_op *op;
    seen s = {0};
    int64_t token, ms;
    ok(zkl_mutex_create(c, path, &m), "create");
    ok(zkl_mutex_acquire_async(m, 5000, record, &s, &op), "acquire_async");
    wait_called(&s);
    cr_assert_eq(atomic_load(&s.st), ZKL_OK, "%s", s.msg);
    cr_assert(zkl_op_is_held(op));
    ok(zkl_op_fencing_token(op, &token), "token");
    cr_assert_gt(token, 0);
    ok(zkl_op_lease_remaining(op, &ms), "lease");
    cr_assert_gt(ms, 0);
    cr_assert_eq(zkt_children(zh, path), 1);
    /* a second callback would be a bug: give it a moment to show */
    zkt_sleep_ms(50);
    cr_assert_eq(atomic_load(&s.calls), 1);
    ok(zkl_op_release(op), "release");
    cr_assert_eq(zkt_children_settle(zh, path, 0), 0);
    ok(zkl_mutex_destroy(m), "destroy");
    zookeeper_close(zh);
    zkl_client_close(c);
    free(path);
}

/* Queue order: N handles on one path grant one after another, in the order
 * they were asked for; each callback releases its own hold from inside. */
#define NQ 20
static atomic_int order[NQ], next_slot;

static void release_inside(zkl_op *op, zkl_status st, const char *msg, void *ud)
{
    cr_assert_eq(st, ZKL_OK, "%s", msg);
    order[atomic_fetch_add(&next_slot, 1)] = (int)(intptr_t)ud;
    cr_assert_eq(zkl_op_release(op), ZKL_OK, "release from the callback: %s", zkl_errmsg());
}

static int all_granted(void *p)
{
    (void)p;
    return atomic_load(&next_slot) == NQ;
}

Test(async, grants_in_queue_order, .timeout = 60)
{
    zkl_client *holder = zkt_client(0), *c = zkt_client(0);
    zhandle_t *zh = zkt_raw();
    char *path = zkt_path("async-order");
    zkl_mutex *h, *m;
    zkl_op *ops[NQ];
    int i;
    atomic_store(&next_slot, 0);
    ok(zkl_mutex_create(holder, path, &h), "create");
    ok(zkl_mutex_create(c, path, &m), "create");
    ok(zkl_mutex_acquire(h, 5000), "holder");
    for (i = 0; i < NQ; i++) {
        ok(zkl_mutex_acquire_async(m, ZKL_WAIT_FOREVER, release_inside, (void *)(intptr_t)i,
                                   &ops[i]),
           "acquire_async");
        /* in line before the next is asked for */
        cr_assert_eq(zkt_children_settle(zh, path, i + 2), i + 2);
    }
    cr_assert_eq(atomic_load(&next_slot), 0, "granted while another holds");
    ok(zkl_mutex_release(h), "holder release");
    cr_assert(zkt_wait_for(all_granted, NULL, 30000), "only %d of %d granted",
              atomic_load(&next_slot), NQ);
    for (i = 0; i < NQ; i++)
        cr_assert_eq(order[i], i, "grant %d went to waiter %d", i, order[i]);
    cr_assert_eq(zkt_children_settle(zh, path, 0), 0);
    ok(zkl_mutex_destroy(m), "destroy");
    ok(zkl_mutex_destroy(h), "destroy");
    zookeeper_close(zh);
    zkl_client_close(c);
    zkl_client_close(holder);
    free(path);
}

Test(async, timeout_leaves_no_node, .timeout = 60)
{
    zkl_client *holder = zkt_client(0), *c = zkt_client(0);
    zhandle_t *zh = zkt_raw();
    char *path = zkt_path("async-timeout");
    zkl_mutex *h, *m;
    zkl_op *op;
    seen s = {0};
    int64_t t0;
    ok(zkl_mutex_create(holder, path, &h), "create");
    ok(zkl_mutex_create(c, path, &m), "create");
    ok(zkl_mutex_acquire(h, 5000), "holder");
    t0 = zkt_now_ms();
    ok(zkl_mutex_acquire_async(m, 300, record, &s, &op), "acquire_async");
    cr_assert_lt(zkt_now_ms() - t0, 100, "the async call waited");
    wait_called(&s);
    cr_assert_eq(atomic_load(&s.st), ZKL_ETIMEDOUT);
    cr_assert(strstr(s.msg, "timed out"), "message: %s", s.msg);
    cr_assert_geq(zkt_now_ms() - t0, 290);
    cr_assert_not(zkl_op_is_held(op));
    cr_assert_eq(zkl_op_cancel(op), ZKL_EBUSY, "cancel after the end");
    ok(zkl_op_release(op), "release of a failed handle");
    cr_assert_eq(zkt_children_settle(zh, path, 1), 1, "the waiter's node is left");
    ok(zkl_mutex_release(h), "holder release");
    ok(zkl_mutex_destroy(m), "destroy");
    ok(zkl_mutex_destroy(h), "destroy");
    zookeeper_close(zh);
    zkl_client_close(c);
    zkl_client_close(holder);
    free(path);
}

Test(async, cancel_a_wait, .timeout = 60)
{
    zkl_client *holder = zkt_client(0), *c = zkt_client(0);
    zhandle_t *zh = zkt_raw();
    char *path = zkt_path("async-cancel");
    zkl_mutex *h, *m;
    zkl_op *op;
    seen s = {0};
    ok(zkl_mutex_create(holder, path, &h), "create");
    ok(zkl_mutex_create(c, path, &m), "create");
    ok(zkl_mutex_acquire(h, 5000), "holder");
    ok(zkl_mutex_acquire_async(m, ZKL_WAIT_FOREVER, record, &s, &op), "acquire_async");
    cr_assert_eq(zkt_children_settle(zh, path, 2), 2);
    cr_assert_eq(zkl_op_release(op), ZKL_EBUSY, "release before the report");
    ok(zkl_op_cancel(op), "cancel");
    wait_called(&s);
    cr_assert_eq(atomic_load(&s.st), ZKL_ECANCELED, "%s", s.msg);
    cr_assert(strstr(s.msg, "canceled"), "message: %s", s.msg);
    cr_assert_eq(zkt_children_settle(zh, path, 1), 1, "the canceled node is left");
    ok(zkl_op_release(op), "release");
    ok(zkl_mutex_release(h), "holder release");
    ok(zkl_mutex_destroy(m), "destroy");
    ok(zkl_mutex_destroy(h), "destroy");
    zookeeper_close(zh);
    zkl_client_close(c);
    zkl_client_close(holder);
    free(path);
}

/*
 * Cancel racing the grant, many times: the holder lets go and the waiter's
 * cancel comes at once. Exactly one of the two wins, and says so: cancel
 * ZKL_OK with a ZKL_ECANCELED report, or ZKL_EBUSY with a grant.
 */
Test(async, cancel_races_grant, .timeout = 240)
{
    zkl_client *holder = zkt_client(0), *c = zkt_client(0);
    zhandle_t *zh = zkt_raw();
    char *path = zkt_path("async-race");
    zkl_mutex *h, *m;
    int i, rounds = 1000, canceled = 0, granted = 0;
    ok(zkl_mutex_create(holder, path, &h), "create");
    ok(zkl_mutex_create(c, path, &m), "create");
    for (i = 0; i < rounds; i++) {
        seen s = {0};
        zkl_op *op;
        zkl_status cst;
        ok(zkl_mutex_acquire(h, 5000), "holder");
        ok(zkl_mutex_acquire_async(m, ZKL_WAIT_FOREVER, record, &s, &op), "acquire_async");
        /* let the wait reach the line on some rounds, not on others */
        if (i % 2)
            zkt_sleep_ms(i % 5);
        ok(zkl_mutex_release(h), "holder release");
        if (i % 3 == 0)
            zkt_sleep_ms(i % 4);
        cst = zkl_op_cancel(op);
        wait_called(&s);
        zkt_sleep_ms(0);
        cr_assert_eq(atomic_load(&s.calls), 1, "round %d: %d reports", i, atomic_load(&s.calls));
        if (cst == ZKL_OK) {
            cr_assert_eq(atomic_load(&s.st), ZKL_ECANCELED, "round %d: cancel won, report %s (%s)",
                         i, zkl_strerror(atomic_load(&s.st)), s.msg);
            canceled++;
        } else {
            cr_assert_eq(cst, ZKL_EBUSY);
            cr_assert_eq(atomic_load(&s.st), ZKL_OK, "round %d: cancel lost, report %s (%s)", i,
                         zkl_strerror(atomic_load(&s.st)), s.msg);
            cr_assert(zkl_op_is_held(op));
            granted++;
        }
        ok(zkl_op_release(op), "release");
    }
    cr_log_info("cancel won %d times, the grant %d times", canceled, granted);
    ok(zkl_client_drain(c, 10000), "drain");
    cr_assert_eq(zkt_children_settle(zh, path, 0), 0, "a node is left");
    ok(zkl_mutex_destroy(m), "destroy");
    ok(zkl_mutex_destroy(h), "destroy");
    zookeeper_close(zh);
    zkl_client_close(c);
    zkl_client_close(holder);
    free(path);
}

/*
 * A cancel that comes right after the outcome is settled (on the worker,
 * before the report is delivered: zkt_fault_after_settle) is too late: it
 * says ZKL_EBUSY, and the report says granted. When the outcome was looked
 * at apart from marking it final, such a cancel said it won while the
 * report said granted (once in 1000 rounds of cancel_races_grant, CI's ASan
 * run of 2026-11-26).
 */
struct late_cancel {
    zkl_op *op;
    _Atomic int st;
};

static void cancel_now(zkl_client *c, void *arg)
{
    struct late_cancel *l = arg;
    (void)c;
    atomic_store(&l->st, (int)zkl_op_cancel(l->op));
}

Test(async, a_cancel_after_the_outcome_is_settled_is_too_late, .timeout = 60)
{
    zkl_client *holder = zkt_client(0), *c = zkt_client(0);
    zhandle_t *zh = zkt_raw();
    char *path = zkt_path("async-settled");
    zkl_mutex *h, *m;
    struct late_cancel l = {0};
    seen s = {0};
    atomic_init(&l.st, -1);
    ok(zkl_mutex_create(holder, path, &h), "create");
    ok(zkl_mutex_create(c, path, &m), "create");
    ok(zkl_mutex_acquire(h, 5000), "holder");
    ok(zkl_mutex_acquire_async(m, ZKL_WAIT_FOREVER, record, &s, &l.op), "acquire_async");
    cr_assert_eq(zkt_children_settle(zh, path, 2), 2);
    zkt_fault_after_settle(c, cancel_now, &l);
    ok(zkl_mutex_release(h), "holder release");
    wait_called(&s);
    cr_assert_eq(atomic_load(&l.st), ZKL_EBUSY, "the late cancel returned %d, not ZKL_EBUSY",
                 atomic_load(&l.st));
    cr_assert_eq(atomic_load(&s.st), ZKL_OK, "report %s (%s)", zkl_strerror(atomic_load(&s.st)),
                 s.msg);
    cr_assert(zkl_op_is_held(l.op));
    ok(zkl_op_release(l.op), "release");
    cr_assert_eq(zkt_children_settle(zh, path, 0), 0, "a node is left");
    ok(zkl_mutex_destroy(m), "destroy");
    ok(zkl_mutex_destroy(h), "destroy");
    zookeeper_close(zh);
    zkl_client_close(c);
    zkl_client_close(holder);
    free(path);
}

Test(async, session_loss_while_waiting_and_holding, .timeout = 90)
{
    zkl_client *holder = zkt_client(0), *c = zkt_client(4000);
    zhandle_t *zh = zkt_raw();
    char *path = zkt_path("async-loss");
    zkl_mutex *h, *m;
    zkl_op *op;
    seen s = {0};
    ok(zkl_mutex_create(holder, path, &h), "create");
    ok(zkl_mutex_create(c, path, &m), "create");
    ok(zkl_mutex_acquire(h, 5000), "holder");
    ok(zkl_mutex_acquire_async(m, 30000, record, &s, &op), "acquire_async");
    cr_assert_eq(zkt_children_settle(zh, path, 2), 2);
    zkt_expire_seen(c); /* the wait goes on in the next session, with a new node */
    cr_assert_eq(zkt_children_settle(zh, path, 2), 2, "no new place in line");
    cr_assert_eq(atomic_load(&s.calls), 0, "reported on a session loss while waiting");
    ok(zkl_mutex_release(h), "holder release");
    wait_called(&s);
    cr_assert_eq(atomic_load(&s.st), ZKL_OK, "%s", s.msg);
    cr_assert(zkl_op_is_held(op));
    zkt_expire_seen(c); /* now while holding */
    cr_assert_not(zkl_op_is_held(op), "held after its session ended");
    cr_assert_eq(zkl_op_release(op), ZKL_ELOST);
    cr_assert_eq(zkt_children_settle(zh, path, 0), 0);
    ok(zkl_mutex_destroy(m), "destroy");
    ok(zkl_mutex_destroy(h), "destroy");
    zookeeper_close(zh);
    zkl_client_close(c);
    zkl_client_close(holder);
    free(path);
}

/* A callback that acquires again from inside itself, a few times over. */
static zkl_mutex *chain_m;
static atomic_int chain_left, chain_failed;

static void chain(zkl_op *op, zkl_status st, const char *msg, void *ud)
{
    zkl_op *next;
    (void)ud;
    if (st != ZKL_OK || zkl_op_release(op) != ZKL_OK) {
        cr_log_error("chain: %s", msg);
        atomic_store(&chain_failed, 1);
        return;
    }
    if (atomic_fetch_sub(&chain_left, 1) > 1 &&
        zkl_mutex_acquire_async(chain_m, 5000, chain, NULL, &next) != ZKL_OK)
        atomic_store(&chain_failed, 1);
}

static int chain_over(void *p)
{
    (void)p;
    return atomic_load(&chain_left) == 0 || atomic_load(&chain_failed);
}

Test(async, callback_acquires_again, .timeout = 60)
{
    zkl_client *c = zkt_client(0);
    zhandle_t *zh = zkt_raw();
    char *path = zkt_path("async-chain");
    zkl_op *op;
    atomic_store(&chain_left, 10);
    atomic_store(&chain_failed, 0);
    ok(zkl_mutex_create(c, path, &chain_m), "create");
    ok(zkl_mutex_acquire_async(chain_m, 5000, chain, NULL, &op), "acquire_async");
    cr_assert(zkt_wait_for(chain_over, NULL, 20000), "the chain stopped");
    cr_assert_eq(atomic_load(&chain_failed), 0);
    ok(zkl_client_drain(c, 10000), "drain");
    cr_assert_eq(zkt_children_settle(zh, path, 0), 0);
    ok(zkl_mutex_destroy(chain_m), "destroy");
    zookeeper_close(zh);
    zkl_client_close(c);
    free(path);
}

Test(async, descriptor_delivery_on_the_loop_thread, .timeout = 60)
{
    zkl_client *c = zkt_client(0);
    char *path = zkt_path("async-fd");
    zkl_rwlock *rw;
    zkl_op *r1, *r2, *w;
    seen s1 = {0}, s2 = {0}, sw = {0};
    struct pollfd p;
    int fd, fd2, ran, total = 0;
    int64_t end = zkt_now_ms() + 30000;
    cr_assert_eq(zkl_client_dispatch(c, &ran), ZKL_EINVAL, "dispatch before event_fd");
    ok(zkl_client_event_fd(c, &fd), "event_fd");
    ok(zkl_client_event_fd(c, &fd2), "event_fd again");
    cr_assert_eq(fd, fd2);
    ok(zkl_rwlock_create(c, path, &rw), "create");
    /* The parent is made first, so that the three creates land in the order
     * sent: readers ahead of the writer. On a fresh path the three race to
     * make the parent, and each creates its node once the parent is there,
     * in whatever order their steps run: under valgrind the writer's create
     * was sometimes the first to land (sequence 0), so the writer held the
     * lock, rightly, and the readers waited out their 20 s behind it (the
     * order of async acquires of one client is not promised; see
     * docs/RELIABILITY.md, "Explained"). */
    {
        zhandle_t *zh = zkt_raw();
        cr_assert_eq(zkt_make_path(zh, path, ZOO_CONTAINER), ZOK);
        zookeeper_close(zh);
    }
    ok(zkl_rwlock_read_acquire_async(rw, 20000, record, &s1, &r1), "read 1");
    ok(zkl_rwlock_read_acquire_async(rw, 20000, record, &s2, &r2), "read 2");
    ok(zkl_rwlock_write_acquire_async(rw, 300, record, &sw, &w), "write");
    while (total < 3 && zkt_now_ms() < end) {
        p.fd = fd;
        p.events = POLLIN;
        if (poll(&p, 1, 100) > 0) {
            ok(zkl_client_dispatch(c, &ran), "dispatch");
            total += ran;
        }
    }
    cr_assert_eq(total, 3);
    cr_assert_eq(atomic_load(&s1.st), ZKL_OK, "%s", s1.msg);
    cr_assert_eq(atomic_load(&s2.st), ZKL_OK, "%s", s2.msg);
    cr_assert_eq(atomic_load(&sw.st), ZKL_ETIMEDOUT, "the writer got in beside readers");
    cr_assert(pthread_equal(s1.thread, pthread_self()), "not run on the dispatching thread");
    cr_assert(pthread_equal(sw.thread, pthread_self()), "not run on the dispatching thread");
    ok(zkl_op_release(r1), "release");
    ok(zkl_op_release(r2), "release");
    ok(zkl_op_release(w), "release");
    ok(zkl_rwlock_destroy(rw), "destroy");
    zkl_client_close(c);
    free(path);
}

Test(async, modes_do_not_mix, .timeout = 60)
{
    zkl_client *c = zkt_client(0);
    char *path = zkt_path("async-modes"), *path2 = zkt_path("async-modes2");
    zkl_mutex *m, *t;
    zkl_op *op = (zkl_op *)&op;
    seen s = {0};
    ok(zkl_mutex_create(c, path, &m), "create");
    ok(zkl_mutex_create(c, path2, &t), "create");
    /* bad input */
    cr_assert_eq(zkl_mutex_acquire_async(NULL, 0, record, &s, &op), ZKL_EINVAL);
    cr_assert_null(op, "the handle is cleared on failure");
    cr_assert_eq(zkl_mutex_acquire_async(m, 0, NULL, &s, &op), ZKL_EINVAL);
    cr_assert_eq(zkl_mutex_acquire_async(m, -5, record, &s, &op), ZKL_EINVAL);
    cr_assert_eq(zkl_op_cancel(NULL), ZKL_EINVAL);
    cr_assert_eq(zkl_op_release(NULL), ZKL_EINVAL);
    cr_assert_not(zkl_op_is_held(NULL));
    cr_assert_eq(zkl_client_event_fd(NULL, NULL), ZKL_EINVAL);
    /* async first: a blocking acquire is refused, and says why */
    ok(zkl_mutex_acquire_async(m, 5000, record, &s, &op), "acquire_async");
    wait_called(&s);
    cr_assert_eq(zkl_mutex_acquire(m, 0), ZKL_EBUSY);
    cr_assert(strstr(zkl_errmsg(), "async mode"), "message: %s", zkl_errmsg());
    cr_assert_eq(zkl_mutex_destroy(m), ZKL_EBUSY, "destroyed with a handle out");
    ok(zkl_op_release(op), "release");
    ok(zkl_mutex_destroy(m), "destroy");
    /* thread first: an async acquire is refused */
    ok(zkl_mutex_acquire(t, 5000), "acquire");
    cr_assert_eq(zkl_mutex_acquire_async(t, 0, record, &s, &op), ZKL_EBUSY);
    cr_assert(strstr(zkl_errmsg(), "thread mode"), "message: %s", zkl_errmsg());
    ok(zkl_mutex_release(t), "release");
    ok(zkl_mutex_destroy(t), "destroy");
    zkl_client_close(c);
    free(path);
    free(path2);
}

#define NMANY 500
static atomic_int many_done;

static void many_cb(zkl_op *op, zkl_status st, const char *msg, void *ud)
{
    (void)ud;
    if (st != ZKL_OK)
        cr_log_error("many: %s", msg);
    zkl_op_release(op);
    atomic_fetch_add(&many_done, 1);
}

static int many_over(void *p)
{
    (void)p;
    return atomic_load(&many_done) == NMANY;
}

static atomic_int gone_notes;

static void count_gone(zkl_log_level level, const char *message, void *ud)
{
    (void)level;
    (void)ud;
    if (strstr(message, "is gone while the session lives"))
        atomic_fetch_add(&gone_notes, 1);
}

/*
 * Many waits outstanding from one thread, no thread per waiter. The waits of
 * one session share their listings (requests/pending.c): each costs its
 * create and its watch, and a listing sent after its create, which shows its
 * node (a listing sent before it would not: the wait would take its node for
 * gone and join the line again).
 */
Test(async, many_waits_from_one_thread, .timeout = 120)
{
    zkl_client *holder, *c;
    zhandle_t *zh = zkt_raw();
    char *path = zkt_path("async-many");
    zkl_mutex *h, *m;
    zkl_op *op;
    uint64_t req0, reqs;
    int i;
    atomic_store(&many_done, 0);
    atomic_store(&gone_notes, 0);
    zkl_log_set(count_gone, ZKL_LOG_WARN, NULL);
    holder = zkt_client(0);
    c = zkt_client(0);
    ok(zkl_mutex_create(holder, path, &h), "create");
    ok(zkl_mutex_create(c, path, &m), "create");
    ok(zkl_mutex_acquire(h, 5000), "holder");
    req0 = zkt_requests_settle(c);
    for (i = 0; i < NMANY; i++)
        ok(zkl_mutex_acquire_async(m, ZKL_WAIT_FOREVER, many_cb, NULL, &op), "acquire_async");
    cr_assert_eq(zkt_children_settle(zh, path, NMANY + 1), NMANY + 1);
    reqs = zkt_requests_settle(c) - req0;
    cr_log_info("%d waits, %.2f requests each", NMANY, (double)reqs / NMANY);
    /* one listing each would be 3 a wait (create, listing, watch) */
    cr_assert_lt(reqs, 2.5 * NMANY, "%.2f requests a wait: listings not shared",
                 (double)reqs / NMANY);
    cr_assert_eq(atomic_load(&gone_notes), 0, "a wait saw a listing without its own node");
    cr_assert_eq(zkt_children(zh, path), NMANY + 1);
    ok(zkl_mutex_release(h), "holder release");
    cr_assert(zkt_wait_for(many_over, NULL, 90000), "%d of %d granted", atomic_load(&many_done),
              NMANY);
    ok(zkl_client_drain(c, 10000), "drain");
    cr_assert_eq(zkt_children_settle(zh, path, 0), 0);
    cr_assert_eq(atomic_load(&gone_notes), 0, "a wait saw a listing without its own node");
    zkl_log_set(NULL, ZKL_LOG_WARN, NULL);
    ok(zkl_mutex_destroy(m), "destroy");
    ok(zkl_mutex_destroy(h), "destroy");
    zookeeper_close(zh);
    zkl_client_close(c);
    zkl_client_close(holder);
    free(path);
}

/*
 * Waits on more paths than a session has slots for shared listings
 * (ZKL_LIST_SLOTS, 16): the paths that find their slot taken by another
 * path list on their own, the others share, and every path's line comes out
 * right either way.
 */
#define NPATHS 40
#define PER_PATH 4

static atomic_int paths_done;

static void paths_cb(zkl_op *op, zkl_status st, const char *msg, void *ud)
{
    (void)ud;
    if (st != ZKL_OK)
        cr_log_error("paths: %s", msg);
    zkl_op_release(op);
    atomic_fetch_add(&paths_done, 1);
}

static int paths_over(void *p)
{
    (void)p;
    return atomic_load(&paths_done) == NPATHS * PER_PATH;
}

Test(async, waits_on_more_paths_than_slots, .timeout = 120)
{
    zkl_client *holder, *c;
    zhandle_t *zh = zkt_raw();
    char *base = zkt_path("async-paths"), path[NPATHS][256];
    zkl_mutex *h[NPATHS], *m[NPATHS];
    zkl_op *op;
    int i, j;
    atomic_store(&paths_done, 0);
    atomic_store(&gone_notes, 0);
    zkl_log_set(count_gone, ZKL_LOG_WARN, NULL);
    holder = zkt_client(0);
    c = zkt_client(0);
    for (i = 0; i < NPATHS; i++) {
        snprintf(path[i], sizeof path[i], "%s/p%d", base, i);
        ok(zkl_mutex_create(holder, path[i], &h[i]), "create");
        ok(zkl_mutex_create(c, path[i], &m[i]), "create");
        ok(zkl_mutex_acquire(h[i], 5000), "holder");
    }
    for (j = 0; j < PER_PATH; j++) /* the paths interleaved, as a server's requests would be */
        for (i = 0; i < NPATHS; i++)
            ok(zkl_mutex_acquire_async(m[i], ZKL_WAIT_FOREVER, paths_cb, NULL, &op), "async");
    for (i = 0; i < NPATHS; i++)
        cr_assert_eq(zkt_children_settle(zh, path[i], PER_PATH + 1), PER_PATH + 1, "%s", path[i]);
    cr_assert_eq(atomic_load(&paths_done), 0, "granted while another holds");
    for (i = 0; i < NPATHS; i++)
        ok(zkl_mutex_release(h[i]), "holder release");
    cr_assert(zkt_wait_for(paths_over, NULL, 60000), "%d of %d granted", atomic_load(&paths_done),
              NPATHS * PER_PATH);
    ok(zkl_client_drain(c, 10000), "drain");
    for (i = 0; i < NPATHS; i++) {
        cr_assert_eq(zkt_children_settle(zh, path[i], 0), 0, "%s", path[i]);
        ok(zkl_mutex_destroy(m[i]), "destroy");
        ok(zkl_mutex_destroy(h[i]), "destroy");
    }
    cr_assert_eq(atomic_load(&gone_notes), 0, "a wait saw a listing without its own node");
    zkl_log_set(NULL, ZKL_LOG_WARN, NULL);
    zookeeper_close(zh);
    zkl_client_close(c);
    zkl_client_close(holder);
    free(base);
}

Test(async, semaphore_leases_all_or_none, .timeout = 60)
{
    zkl_client *c = zkt_client(0), *other = zkt_client(0);
    zhandle_t *zh = zkt_raw();
    char *path = zkt_path("async-sem"), leases[300], locks[300];
    zkl_semaphore *s, *s2;
    zkl_op *a, *b, *d;
    seen sa = {0}, sb = {0}, sd = {0};
    int64_t token;
    snprintf(leases, sizeof leases, "%s/leases", path);
    snprintf(locks, sizeof locks, "%s/locks", path);
    ok(zkl_semaphore_create(c, path, 2, &s), "create");
    ok(zkl_semaphore_create(other, path, 2, &s2), "create");
    cr_assert_eq(zkl_semaphore_acquire_async(s, 3, 0, record, &sa, &a), ZKL_EINVAL);
    ok(zkl_semaphore_acquire_async(s, 2, 5000, record, &sa, &a), "two leases");
    wait_called(&sa);
    cr_assert_eq(atomic_load(&sa.st), ZKL_OK, "%s", sa.msg);
    cr_assert(zkl_op_is_held(a));
    cr_assert_eq(zkt_children_settle(zh, leases, 2), 2);
    /* none left: another client's ask times out, and leaves nothing */
    ok(zkl_semaphore_acquire_async(s2, 1, 300, record, &sb, &b), "one more");
    wait_called(&sb);
    cr_assert_eq(atomic_load(&sb.st), ZKL_ETIMEDOUT, "%s", sb.msg);
    ok(zkl_op_release(b), "release the timed-out handle");
    cr_assert_eq(zkl_semaphore_destroy(s), ZKL_EBUSY, "destroyed with a handle out");
    ok(zkl_op_release(a), "return both");
    ok(zkl_semaphore_acquire_async(s2, 2, 5000, record, &sd, &d), "two again");
    wait_called(&sd);
    cr_assert_eq(atomic_load(&sd.st), ZKL_OK, "%s", sd.msg);
    ok(zkl_op_fencing_token(d, &token), "token");
    cr_assert_gt(token, 0);
    ok(zkl_op_release(d), "return both");
    ok(zkl_client_drain(c, 5000), "drain");
    ok(zkl_client_drain(other, 5000), "drain");
    cr_assert_eq(zkt_children_settle(zh, leases, 0), 0, "a lease was left");
    cr_assert_eq(zkt_children_settle(zh, locks, 0), 0, "an internal lock node was left");
    ok(zkl_semaphore_destroy(s), "destroy");
    ok(zkl_semaphore_destroy(s2), "destroy");
    zookeeper_close(zh);
    zkl_client_close(c);
    zkl_client_close(other);
    free(path);
}

/* A hold-state notice reaches an async hold's object when its session ends. */
static atomic_int notices;
static void on_hold_state(void *lock, zkl_conn_state st, void *ud)
{
    (void)lock;
    (void)ud;
    if (st == ZKL_STATE_LOST)
        atomic_fetch_add(&notices, 1);
}

static int noticed(void *p)
{
    (void)p;
    return atomic_load(&notices) > 0;
}

Test(async, hold_state_notice_for_an_async_hold, .timeout = 60)
{
    zkl_client *c = zkt_client(4000);
    char *path = zkt_path("async-notice");
    zkl_mutex *m;
    zkl_op *op;
    seen s = {0};
    atomic_store(&notices, 0);
    ok(zkl_mutex_create(c, path, &m), "create");
    ok(zkl_mutex_on_state(m, on_hold_state, NULL), "on_state");
    ok(zkl_mutex_acquire_async(m, 5000, record, &s, &op), "acquire_async");
    wait_called(&s);
    cr_assert_eq(atomic_load(&s.st), ZKL_OK, "%s", s.msg);
    zkt_expire_seen(c);
    cr_assert(zkt_wait_for(noticed, NULL, 10000), "no LOST notice for the async hold");
    cr_assert_eq(zkl_op_release(op), ZKL_ELOST);
    ok(zkl_mutex_destroy(m), "destroy");
    zkl_client_close(c);
    free(path);
}

/*
 * Shutting down with waits outstanding: close refuses while objects live;
 * zkl_client_cancel ends every wait, each reported once (ZKL_ECANCELED);
 * then handles, objects and client go, and no node is left.
 */
#define NSHUT 50
Test(async, shutdown_with_waits_outstanding, .timeout = 60)
{
    zkl_client *holder = zkt_client(0), *c = zkt_client(0);
    zhandle_t *zh = zkt_raw();
    char *path = zkt_path("async-shutdown");
    zkl_mutex *h, *m;
    zkl_op *ops[NSHUT];
    seen s[NSHUT];
    int i;
    memset(s, 0, sizeof s);
    ok(zkl_mutex_create(holder, path, &h), "create");
    ok(zkl_mutex_create(c, path, &m), "create");
    ok(zkl_mutex_acquire(h, 5000), "holder");
    for (i = 0; i < NSHUT; i++)
        ok(zkl_mutex_acquire_async(m, ZKL_WAIT_FOREVER, record, &s[i], &ops[i]), "acquire_async");
    cr_assert_eq(zkt_children_settle(zh, path, NSHUT + 1), NSHUT + 1);
    cr_assert_eq(zkl_client_close(c), ZKL_EBUSY, "closed with waits outstanding");
    ok(zkl_client_cancel(c), "cancel");
    for (i = 0; i < NSHUT; i++) {
        wait_called(&s[i]);
        cr_assert_eq(atomic_load(&s[i].st), ZKL_ECANCELED, "wait %d: %s", i, s[i].msg);
    }
    zkt_sleep_ms(50);
    for (i = 0; i < NSHUT; i++) {
        cr_assert_eq(atomic_load(&s[i].calls), 1, "wait %d reported %d times", i,
                     atomic_load(&s[i].calls));
        ok(zkl_op_release(ops[i]), "release");
    }
    ok(zkl_mutex_destroy(m), "destroy");
    ok(zkl_client_close(c), "close");
    cr_assert_eq(zkt_children_settle(zh, path, 1), 1, "a waiter's node is left");
    ok(zkl_mutex_release(h), "holder release");
    ok(zkl_mutex_destroy(h), "destroy");
    zookeeper_close(zh);
    zkl_client_close(holder);
    free(path);
}

Test(async, multilock_all_or_none_across_clients, .timeout = 60)
{
    zkl_client *a = zkt_client(0), *b = zkt_client(0), *c = zkt_client(0);
    zhandle_t *zh = zkt_raw();
    char *p1 = zkt_path("async-ml-m"), *p2 = zkt_path("async-ml-rw");
    zkl_mutex *m1, *m2;
    zkl_rwlock *rw1, *rw2;
    zkl_semaphore_mutex *sm;
    zkl_multilock *s1, *s2, *s3;
    zkl_op *o1, *o2;
    seen r1 = {0}, r2 = {0}, r3 = {0};
    ok(zkl_mutex_create(a, p1, &m1), "create");
    ok(zkl_rwlock_create(b, p2, &rw1), "create");
    ok(zkl_mutex_create(c, p1, &m2), "create");
    ok(zkl_rwlock_create(c, p2, &rw2), "create");
    ok(zkl_multilock_create(&s1), "set");
    ok(zkl_multilock_add_mutex(s1, m1), "add");
    ok(zkl_multilock_add_write(s1, rw1), "add");
    ok(zkl_multilock_create(&s2), "set");
    ok(zkl_multilock_add_mutex(s2, m2), "add");
    ok(zkl_multilock_add_write(s2, rw2), "add");
    /* the first set's members live on two clients */
    ok(zkl_multilock_acquire_async(s1, 5000, record, &r1, &o1), "first set");
    wait_called(&r1);
    cr_assert_eq(atomic_load(&r1.st), ZKL_OK, "%s", r1.msg);
    cr_assert(zkl_op_is_held(o1));
    cr_assert_eq(zkl_multilock_destroy(s1), ZKL_EBUSY, "destroyed while acquired");
    /* the second cannot have both in time, and holds nothing after */
    ok(zkl_multilock_acquire_async(s2, 300, record, &r2, &o2), "second set");
    wait_called(&r2);
    cr_assert_eq(atomic_load(&r2.st), ZKL_ETIMEDOUT, "%s", r2.msg);
    cr_assert_not(zkl_op_is_held(o2));
    ok(zkl_op_release(o2), "release the failed handle");
    cr_assert_eq(zkt_children_settle(zh, p1, 1), 1, "the second set kept its first member");
    cr_assert_eq(zkt_children_settle(zh, p2, 1), 1);
    ok(zkl_op_release(o1), "release the first set");
    ok(zkl_multilock_acquire_async(s2, 5000, record, &r3, &o2), "second set again");
    wait_called(&r3);
    cr_assert_eq(atomic_load(&r3.st), ZKL_OK, "%s", r3.msg);
    ok(zkl_op_release(o2), "release");
    /* a semaphore mutex member is thread mode only */
    ok(zkl_semaphore_mutex_create(c, p1, &sm), "semaphore mutex");
    ok(zkl_multilock_create(&s3), "set");
    ok(zkl_multilock_add_semaphore_mutex(s3, sm), "add");
    cr_assert_eq(zkl_multilock_acquire_async(s3, 0, record, &r3, &o2), ZKL_EINVAL);
    cr_assert(strstr(zkl_errmsg(), "thread mode"), "message: %s", zkl_errmsg());
    ok(zkl_multilock_destroy(s3), "destroy");
    ok(zkl_semaphore_mutex_destroy(sm), "destroy");
    ok(zkl_client_drain(a, 5000), "drain");
    ok(zkl_client_drain(b, 5000), "drain");
    ok(zkl_client_drain(c, 5000), "drain");
    cr_assert_eq(zkt_children_settle(zh, p1, 0), 0, "a node was left");
    cr_assert_eq(zkt_children_settle(zh, p2, 0), 0, "a node was left");
    ok(zkl_multilock_destroy(s1), "destroy");
    ok(zkl_multilock_destroy(s2), "destroy");
    ok(zkl_mutex_destroy(m1), "destroy");
    ok(zkl_mutex_destroy(m2), "destroy");
    ok(zkl_rwlock_destroy(rw1), "destroy");
    ok(zkl_rwlock_destroy(rw2), "destroy");
    zookeeper_close(zh);
    zkl_client_close(a);
    zkl_client_close(b);
    zkl_client_close(c);
    free(p1);
    free(p2);
}
