/*
 * engine.c - the engine that runs acquires (acq.h): who runs an operation,
 * when, and how it learns that something happened.
 *
 * DESIGN
 *
 * An operation (zkl__acq) is a state machine whose steps never block. It is
 * run by one thread at a time: its blocking owner (the caller of
 * zkl_mutex_acquire and the like, on its own thread, so that a blocking
 * acquire costs what it did before the engine: a reply wakes the caller
 * directly), or, for an async operation, the client's worker in its engine
 * phase. Nothing else touches the fields a step uses.
 *
 * The rest only marks an operation ready, under c->mu: a reply (the request's
 * notice, on a ZooKeeper delivery), a watch event (its token's
 * notice, same thread), a change of the connection state, a cancel or the
 * close (the changed_locked hook readies every live operation), a timer
 * (the blocking owner's timed wait, or the worker's heap of async timers),
 * and a bell or an await (room.c: another client of the process granted the
 * lock two places ahead; it runs under the line's in-process record's
 * mutex, which is taken before c->mu, never under it).
 * Readiness is only "look again": each step checks what it waits for, and
 * yields again if it has not come.
 *
 * State under c->mu: the engine's lists and heap, and each operation's
 * ready, running, queued, done, cancel_req and granted flags and its timer's
 * place in the heap. Lock order: c->mu is never held while a step runs, nor
 * while a request is let go (zkl__req_drop waits out a running notice, which
 * takes c->mu).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <utlist.h>

#include "base/fault.h"
#include "base/status.h"
#include "base/util.h"
#include "base/wakefd.h"
#include "base/tuning.h"
#include "client/fork.h"
#include "core/engine/acq.h"
#include "core/engine/internals.h"
#include "core/engine/room.h"
#include "services/lease.h"
#include "services/revoke.h"
#include "requests/calls.h"

/* ---- the timer heap (async operations only; c->mu held) ---- */

static void heap_set(struct zkl__engine *e, size_t i, zkl__acq *aq)
{
    e->heap[i] = aq;
    aq->heap_at = i + 1;
}

static void heap_up(struct zkl__engine *e, size_t i)
{
    zkl__acq *aq = e->heap[i];
    while (i > 0 && e->heap[(i - 1) / 2]->wake_ms > aq->wake_ms) {
        heap_set(e, i, e->heap[(i - 1) / 2]);
        i = (i - 1) / 2;
    }
    heap_set(e, i, aq);
}

static void heap_down(struct zkl__engine *e, size_t i)
{
    zkl__acq *aq = e->heap[i];
    for (;;) {
        size_t l = 2 * i + 1, m = i;
        int64_t best = aq->wake_ms;
        if (l < e->heap_n && e->heap[l]->wake_ms < best)
            best = e->heap[m = l]->wake_ms;
        if (l + 1 < e->heap_n && e->heap[l + 1]->wake_ms < best)
            m = l + 1;
        if (m == i)
            break;
        heap_set(e, i, e->heap[m]);
        i = m;
    }
    heap_set(e, i, aq);
}

static void heap_remove(struct zkl__engine *e, zkl__acq *aq)
{
    size_t i = aq->heap_at - 1;
    zkl__acq *last;
    if (!aq->heap_at)
        return;
    aq->heap_at = 0;
    last = e->heap[--e->heap_n];
    if (last == aq)
        return;
    heap_set(e, i, last);
    heap_up(e, i);
    heap_down(e, last->heap_at - 1);
}

/* Put aq's timer in the heap (or take it out: none). false: no memory (the
 * operation then only runs when something happens, and is readied at once). */
static bool heap_update(struct zkl__engine *e, zkl__acq *aq)
{
    heap_remove(e, aq);
    if (aq->wake_ms == INT64_MAX)
        return true;
    if (e->heap_n == e->heap_cap) {
        size_t cap = e->heap_cap ? e->heap_cap * 2 : ZKL_ENGINE_HEAP_FIRST;
        zkl__acq **h = realloc(e->heap, cap * sizeof(zkl__acq *));
        if (!h)
            return false;
        e->heap = h;
        e->heap_cap = cap;
    }
    heap_set(e, e->heap_n++, aq);
    heap_up(e, aq->heap_at - 1);
    return true;
}

/* ---- readiness ---- */

/* The changed_locked hook: every live operation looks again. */
static void changed_locked(zkl_client *c)
{
    zkl__acq *aq;
    DL_FOREACH(c->engine->live, aq)
    zkl__acq_ready_locked(aq);
}

static int64_t engine_turn(zkl_client *c, int64_t now_us);

static void engine_free(zkl_client *c)
{
    struct zkl__engine *e = c->engine;
    if (!e)
        return;
    if (zkl__forked(c)) {
        /* A child's: reports the parent's worker had not delivered stay
         * reachable (client/fork.c), undelivered: delivery would call the
         * parent's callbacks. (Freed with the engine, valgrind found an
         * observer's report lost in test_observe's forked child.) */
        zkl__fork_keep(e->posted);
        zkl__fork_keep(e->reports);
        zkl__fork_keep(e->in_hand);
        zkl__fork_keep(e->delivering);
        zkl__fork_keep(e->live); /* and the operations it ran (test_latch's fork test) */
    }
    if (e->efd >= 0)
        close(e->efd);
    free(e->heap);
    free(e);
    c->engine = NULL;
}

/* The client's engine, made with its first operation. Caller holds c->mu. */
struct zkl__engine *zkl__engine_locked(zkl_client *c)
{
    if (c->engine)
        return c->engine;
    c->engine = calloc(1, sizeof *c->engine);
    if (!c->engine)
        return NULL;
    c->engine->efd = -1;
    c->hooks.changed_locked = changed_locked;
    c->hooks.engine_turn = engine_turn;
    c->hooks.engine_free = engine_free;
    return c->engine;
}

/* ---- life ---- */

zkl__acq *zkl__acq_new(zkl_client *c, const zkl__acquire_args *a, bool blocking,
                       zkl__acq_done_fn done_fn, void *arg)
{
    zkl__acq *aq = calloc(1, sizeof *aq);
    int64_t floor = zkl__now_ms() + ZKL_CALL_MIN_MS;
    if (!aq)
        return NULL;
    aq->c = c;
    aq->a = *a;
    aq->step = zkl__step_start;
    aq->wake_ms = INT64_MAX;
    aq->wfd = -1;
    /* every request on the way gives up at the deadline, but gets at least
     * ZKL_CALL_MIN_MS: "try once" must be able to make its round trips */
    aq->call_until = a->deadline > floor ? a->deadline : floor;
    zkl__acq_flag(&aq->mu_flags, ZKL__AM_BLOCKING, blocking);
    zkl__room_note(ZKL__NOTE_SEATED, aq, NULL);
    aq->done_fn = done_fn;
    aq->done_arg = arg;
    pthread_mutex_lock(&c->mu);
    if (!zkl__engine_locked(c)) {
        pthread_mutex_unlock(&c->mu);
        zkl__room_note(ZKL__NOTE_UNSEATED, aq, NULL);
        free(aq);
        return NULL;
    }
    DL_APPEND(c->engine->live, aq);
    c->engine->nlive++;
    pthread_mutex_unlock(&c->mu);
    return aq;
}

void zkl__acq_free(zkl__acq *aq)
{
    zkl_client *c;
    if (!aq)
        return;
    c = aq->c;
    zkl__room_note(ZKL__NOTE_UNSEATED, aq, NULL); /* nothing of the room may point at aq */
    zkl__making_free(aq); /* an acquire freed as it made its node (the chroot, say) */
    pthread_mutex_lock(&c->mu);
    heap_remove(c->engine, aq);
    DL_DELETE(c->engine->live, aq);
    c->engine->nlive--;
    pthread_mutex_unlock(&c->mu);
    free(aq->held);
    zkl__revwatch_stop(aq->rev); /* a grant its owner did not take (NULL: none) */
    free(aq->msg);
    free(aq->blocker);
    free(aq);
}

bool zkl__acq_cancel_locked(zkl__acq *aq)
{
    bool live = aq->state != ZKL__RUN_DONE && !(aq->mu_flags & ZKL__AM_GRANTED);
    if (live) {
        aq->mu_flags |= ZKL__AM_CANCEL;
        zkl__acq_ready_locked(aq);
    }
    return live;
}

/* Run aq's steps until one yields or the last is done. */
static void run_steps(zkl__acq *aq)
{
    while (aq->step) {
        aq->wake_ms = INT64_MAX;
        if (aq->step(aq) == ZKL__STEP_YIELD)
            break;
    }
}

#define may_use_fd(c) (!ZKL_FAULT((c), SLEEP_ON_CV, NULL))

/*
 * The blocking owner's sleep until aq is ready or aq->wake_ms: on cv, or in
 * a process of many clients on an eventfd made at its first sleep
 * (base/wakefd.h: out of the futex hash; an acquire that never waits makes
 * none). A sleep on an eventfd costs more than one on a futex in a short
 * chain: lockbench contended at 16 sessions, 6 alternating rounds, client
 * CPU per hand-off median 462 us on cv, 500 on eventfds; at 1024 sessions,
 * 3 rounds, 1057/607/650 on cv against 606/558/510 (64 and 256 sessions:
 * level within the noise). So only from zkl__many_clients() on: 3 clients a
 * chain of the futex hash (48 here; session/client.h), and only with the
 * client's in-process hints on (zkl_client_set_process_hints).
 * Returns false at wake_ms. Caller holds c->mu; let go while it sleeps.
 */
static bool sleep_blocking_locked(zkl__acq *aq, pthread_cond_t *cv, bool *no_fd)
{
    zkl_client *c = aq->c;
    if (aq->wfd < 0 && !*no_fd && may_use_fd(c)) {
        if (!zkl__room_ask(ZKL__ASK_OWN_FD, aq, NULL, NULL, 0))
            *no_fd = true; /* for this acquire */
        else
            *no_fd = (aq->wfd = zkl__wakefd_new()) < 0;
    }
    if (aq->wfd < 0 || !may_use_fd(c))
        return zkl__cond_wait_until(cv, &c->mu, aq->wake_ms) != ETIMEDOUT;
    aq->mu_flags |= ZKL__AM_ASLEEP;
    pthread_mutex_unlock(&c->mu);
    zkl__wakefd_sleep_until_us(aq->wfd, aq->wake_ms == INT64_MAX ? INT64_MAX : aq->wake_ms * 1000);
    pthread_mutex_lock(&c->mu);
    aq->mu_flags &= ~ZKL__AM_ASLEEP;
    return zkl__has(aq->mu_flags, ZKL__AM_READY) || zkl__now_ms() < aq->wake_ms;
}

/* Run a blocking aq to its end on the caller's thread. */
static void run_blocking(zkl__acq *aq)
{
    zkl_client *c = aq->c;
    pthread_cond_t cv;
    bool no_fd = false;
    zkl__cond_init(&cv);
    pthread_mutex_lock(&c->mu);
    /* cleared below, before the function returns */
    // cppcheck-suppress autoVariables
    aq->cv = &cv;
    pthread_mutex_unlock(&c->mu);
    for (;;) {
        run_steps(aq);
        pthread_mutex_lock(&c->mu);
        if (!aq->step) {
            aq->state = ZKL__RUN_DONE;
            pthread_mutex_unlock(&c->mu);
            break;
        }
        while (!zkl__has(aq->mu_flags, ZKL__AM_READY))
            if (!sleep_blocking_locked(aq, &cv, &no_fd))
                break;
        aq->mu_flags &= ~ZKL__AM_READY;
        pthread_mutex_unlock(&c->mu);
    }
    pthread_mutex_lock(&c->mu); /* done: nothing wakes it any more (asleep is false) */
    aq->cv = NULL;
    zkl__wakefd_close(aq->wfd);
    aq->wfd = -1;
    pthread_mutex_unlock(&c->mu);
    pthread_cond_destroy(&cv);
    if (aq->st != ZKL_OK) /* the step that failed may have run on another thread */
        zkl__fail(aq->st, "%s", aq->msg ? aq->msg : "out of memory");
}

/* The blocking acquire of internals.h: one operation, run on this thread. */
zkl_status zkl__lock_acquire(zkl_client *c, const zkl__acquire_args *a, zkl__hold *hold)
{
    zkl__acq *aq;
    zkl_status st = zkl__refuse_on_worker(c, "a blocking acquire");
    if (zkl__forked(c))
        return zkl__closed_fail(c, a->path);
    if (st != ZKL_OK)
        return zkl__fail_prefix(st, "%s: ", a->path);
    if (!(aq = zkl__acq_new(c, a, true, NULL, NULL)))
        return zkl__fail(ZKL_ENOMEM, "out of memory");
    zkl__lease_users(c, 0, 1); /* renewed while we wait: a hand-off then needs no sync */
    run_blocking(aq);
    st = aq->st;
    if (st == ZKL_OK) {
        zkl__acq_take_hold(aq, hold);
    }
    zkl__lease_users(c, st == ZKL_OK ? 1 : 0, -1);
    zkl__acq_free(aq);
    return st;
}

void zkl__acq_start_async(zkl__acq *aq)
{
    pthread_mutex_lock(&aq->c->mu);
    zkl__acq_ready_locked(aq);
    pthread_mutex_unlock(&aq->c->mu);
}

/* Run one ready async operation (c->mu held; released while it runs). */
static void run_async_locked(zkl_client *c, zkl__acq *aq)
{
    aq->state = ZKL__RUN_RUNNING;
    aq->mu_flags &= ~ZKL__AM_READY;
    pthread_mutex_unlock(&c->mu);
    run_steps(aq);
    pthread_mutex_lock(&c->mu);
    aq->state = ZKL__RUN_IDLE;
    if (!aq->step) {
        aq->state = ZKL__RUN_DONE;
        heap_remove(c->engine, aq);
        pthread_mutex_unlock(&c->mu);
        aq->done_fn(aq, aq->done_arg); /* may free aq */
        pthread_mutex_lock(&c->mu);
        return;
    }
    if (!heap_update(c->engine, aq))
        aq->mu_flags |= ZKL__AM_READY; /* no room for its timer: keep looking */
    if (zkl__has(aq->mu_flags, ZKL__AM_READY)) {
        aq->mu_flags &= ~ZKL__AM_READY;
        zkl__acq_ready_locked(aq);
    }
}

/* The worker's engine phase: due timers, then up to a batch of ready operations. */
/* Deliver the reports posted for the worker (c->mu held, let go meanwhile). */
static void deliver_posted_locked(zkl_client *c)
{
    struct zkl__engine *e = c->engine;
    zkl__report *r = e->posted;
    e->delivering = r;
    e->posted = e->posted_end = NULL;
    pthread_mutex_unlock(&c->mu);
    for (; r; r = e->delivering) {
        e->in_hand = r;
        e->delivering = r->next;
        r->deliver(r); /* may free r */
        e->in_hand = NULL;
    }
    pthread_mutex_lock(&c->mu);
}

static int64_t engine_turn(zkl_client *c, int64_t now_us)
{
    struct zkl__engine *e = c->engine;
    int64_t now_ms = now_us / 1000;
    int n;
    if (e->posted) {
        deliver_posted_locked(c);
        return 0;
    }
    while (e->heap_n && e->heap[0]->wake_ms <= now_ms) {
        zkl__acq *aq = e->heap[0];
        heap_remove(e, aq);
        zkl__acq_ready_locked(aq);
    }
    if (!e->ready)
        return e->heap_n ? e->heap[0]->wake_ms * 1000 : INT64_MAX;
    for (n = 0; n < ZKL_ENGINE_TURN_OPS && e->ready; n++) {
        zkl__acq *aq = e->ready;
        e->ready = aq->rnext;
        if (!e->ready)
            e->ready_end = NULL;
        run_async_locked(c, aq);
    }
    return 0;
}
