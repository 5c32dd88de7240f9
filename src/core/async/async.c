/*
 * async.c - async handles (async.h, zklock/async.h): a zkl_op over the
 * engine's acquires, run one after another as the recipe's plan says, its
 * report delivered on the worker or queued for zkl_client_dispatch behind
 * an eventfd, cancel, release, and what a handle holds.
 *
 * DESIGN
 *
 * A handle lives from the acquire call to its zkl_op_release. Each of its
 * engine acquires lives until it is done: the worker that ran it then gives
 * its outcome to the plan, frees it, and either starts the next (on the
 * client the plan names) or finishes the handle: the outcome is written and
 * the handle delivered. Fields read across threads (acq, cancel_req, state,
 * deliverer, free_after) are under the home client's c->mu; cancel also takes
 * the running acquire's client lock after it (try-lock: two handles on two
 * clients may cancel each other's way). The outcome is written before
 * delivery and read only after, by the callback or by a release once the
 * callback ran. Callbacks run with no lock held; a release from inside one
 * frees the handle when it returns (hiredis's REDIS_IN_CALLBACK).
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "core/engine/guarded.h"
#include "base/fault.h"
#include "base/log.h"
#include "base/status.h"
#include "base/util.h"
#include "core/engine/acq.h"
#include "core/async/async.h"
#include "core/async/write.h"
#include "core/objects/lockobj.h"
#include "services/lease.h"

static void op_free(zkl_op *op)
{
    if (op->holds != &op->holds_one)
        free(op->holds);
    free(op->msg);
    free(op);
}

static void deliver(zkl_op *op);

static void deliver_report(zkl__report *r)
{
    deliver((zkl_op *)r); /* rep is op's first member */
}

static void deliver(zkl_op *op)
{
    zkl_client *c = op->c;
    zkl__cb_frame frame;
    bool free_after;
    pthread_mutex_lock(&c->mu);
    op->state = ZKL__OP_DELIVERING;
    op->deliverer = pthread_self();
    pthread_mutex_unlock(&c->mu);
    zkl__cb_enter(&frame, c); /* zkl_client_close refuses from inside */
    op->fn(op, op->st, op->st == ZKL_OK ? "" : op->msg ? op->msg : "out of memory", op->ud);
    zkl__cb_leave(&frame);
    pthread_mutex_lock(&c->mu);
    op->state = ZKL__OP_REPORTED;
    free_after = op->free_after;
    pthread_mutex_unlock(&c->mu);
    if (free_after)
        op_free(op);
}

/* The handle is done with st (message msg, taken over), on the worker: report it. */
static void finish(zkl_op *op, zkl_status st, char *msg)
{
    zkl_client *c = op->c;
    op->st = st;
    op->msg = msg;
    op->rep.deliver = deliver_report;
    pthread_mutex_lock(&c->mu);
    op->acq = NULL;
    op->finished = true;
    pthread_mutex_unlock(&c->mu);
    zkl__report_from_worker(c, &op->rep);
}

static void acq_done(struct zkl__acq *acq, void *arg);

/* A test's pause of zkl_client_dispatch between reading the descriptor and
 * taking the queue (a preemption the scheduler may make there). */
static void dispatch_pause_fault(zkl_client *c)
{
    int us = ZKL_FAULT(c, DISPATCH_PAUSE_US, NULL);
    if (us > 0)
        usleep((useconds_t)us);
}

/* A test's point: on the worker, right after a handle's outcome is settled. */
#define after_settle_fault(c) ((void)ZKL_FAULT((c), AFTER_SETTLE, NULL))

/*
 * op's outcome is settled: from here on a cancel is too late (ZKL_EBUSY).
 * True if a cancel came first: it said it won, so the report must say
 * ZKL_ECANCELED. One critical section: a cancel between a look at
 * cancel_req and finish() would say it won a handle reported granted.
 */
static bool settle(zkl_op *op)
{
    bool was;
    pthread_mutex_lock(&op->c->mu);
    was = op->cancel_req;
    op->finished = true;
    pthread_mutex_unlock(&op->c->mu);
    after_settle_fault(op->c);
    return was;
}

/* The engine is there for c (made if need be), and c is not closing. */
static zkl_status client_ready(zkl_client *c, const char *what)
{
    zkl_status st = ZKL_OK;
    pthread_mutex_lock(&c->mu);
    if (!zkl__engine_locked(c))
        st = zkl__fail(ZKL_ENOMEM, "%s: out of memory", what);
    else if (c->closing)
        st = zkl__closed_fail(c, what);
    pthread_mutex_unlock(&c->mu);
    return st;
}

/* Start the acquire a on client c for op; false (and *st) if it could not be. */
static bool start_next(zkl_op *op, zkl_client *c, const zkl__acquire_args *a, zkl_status *st)
{
    struct zkl__acq *acq = zkl__acq_new(c, a, false, acq_done, op);
    bool canceled;
    if (!acq) {
        *st = zkl__fail(ZKL_ENOMEM, "%s: out of memory", op->what);
        return false;
    }
    pthread_mutex_lock(&op->c->mu);
    canceled = op->cancel_req;
    if (!canceled)
        op->acq = acq;
    pthread_mutex_unlock(&op->c->mu);
    if (canceled) {
        zkl__acq_free(acq);
        *st = zkl__fail(ZKL_ECANCELED, "%s: acquiring %s was canceled", op->what, op->path);
        return false;
    }
    zkl__lease_users(c, 0, 1); /* renewed while it waits */
    zkl__acq_start_async(acq);
    return true;
}

/* One of op's acquires ended (on its client's worker, no lock held): the plan says what next. */
static void acq_done(struct zkl__acq *acq, void *arg)
{
    zkl_op *op = arg;
    zkl_client *c = acq->c;
    zkl__acquire_args a;
    zkl__hold got;
    zkl_status st = acq->st, final;
    char *msg = acq->msg;
    bool more;
    zkl__acq_take_hold(acq, &got);
    acq->msg = NULL;
    zkl__lease_users(c, st == ZKL_OK ? 1 : 0, -1);
    pthread_mutex_lock(&op->c->mu);
    op->acq = NULL;
    pthread_mutex_unlock(&op->c->mu);
    zkl__acq_free(acq);
    more = op->plan->next(op, st, st == ZKL_OK ? &got : NULL, &c, &a, &final);
    if (more) {
        if (start_next(op, c, &a, &final))
            goto out;
        zkl__op_let_go(op);
    }
    if (settle(op) && final != ZKL_ECANCELED) { /* a cancel came after the acquire */
        zkl__op_let_go(op);
        final = zkl__fail(ZKL_ECANCELED, "%s: acquiring %s was canceled", op->what, op->path);
    } else if (!more && final == st) { /* the acquire's own outcome and message */
        finish(op, final, final == ZKL_OK ? NULL : msg);
        return;
    }
    finish(op, final, final == ZKL_OK ? NULL : strdup(zkl_errmsg()));
out:
    free(msg);
}

zkl_status zkl__async_start(zkl_client *c, const zkl__plan *plan, const char *what, void *obj,
                            const char *path, int want, int timeout_ms, zkl_op_fn fn, void *ud,
                            zkl_op **out)
{
    zkl__acquire_args a;
    zkl_client *first = c;
    zkl_op *op = calloc(1, sizeof *op);
    zkl_status st;
    if (!op)
        return zkl__fail(ZKL_ENOMEM, "%s: out of memory", what);
    op->c = c;
    op->plan = plan;
    op->what = what;
    op->obj = obj;
    op->path = path;
    op->want = want;
    op->deadline = zkl__deadline(timeout_ms);
    op->started_us = zkl__now_us();
    op->fn = fn;
    op->ud = ud;
    op->holds = want == 1 && !plan->inner
                    ? &op->holds_one
                    : calloc((size_t)want + (plan->inner ? 1 : 0), sizeof *op->holds);
    if (op->holds && plan->inner)
        op->inner = &op->holds[want];
    if (!op->holds)
        st = zkl__fail(ZKL_ENOMEM, "%s: out of memory", what);
    else
        st = client_ready(c, what);
    if (st != ZKL_OK) {
        op_free(op);
        return st;
    }
    plan->next(op, ZKL_OK, NULL, &first, &a, &st);
    *out = op;
    if (!start_next(op, first, &a, &st)) {
        *out = NULL;
        op_free(op);
        return st;
    }
    return ZKL_OK;
}

bool zkl__op_keep(zkl_op *op, zkl__hold *h)
{
    if (op->nholds >= op->want)
        return false;
    op->holds[op->nholds++] = *h;
    h->node = NULL;
    return true;
}

zkl_status zkl__op_let_go(zkl_op *op)
{
    zkl_status st = ZKL_OK;
    zkl__err_keep(); /* the failure's message, not the cleanup's */
    if (op->inner && op->inner->node)
        zkl__lock_release(op->inner->c ? op->inner->c : op->c, op->inner);
    while (op->nholds > 0) { /* in reverse order */
        zkl__hold *h = &op->holds[--op->nholds];
        if (zkl__lock_release(h->c ? h->c : op->c, h) != ZKL_OK)
            st = ZKL_ELOST;
    }
    zkl__err_unkeep();
    return st;
}

/* Cancel under op's home lock: the running acquire's own lock too (try-lock). */
static int cancel_locked(zkl_op *op)
{
    struct zkl__acq *acq = op->acq;
    bool won;
    if (!acq) { /* between two acquires, or done */
        if (op->finished || op->cancel_req)
            return 0;
        op->cancel_req = true;
        return 1;
    }
    if (acq->c == op->c)
        won = zkl__acq_cancel_locked(acq);
    else if (pthread_mutex_trylock(&acq->c->mu) == 0) {
        won = zkl__acq_cancel_locked(acq);
        pthread_mutex_unlock(&acq->c->mu);
    } else {
        return -1; /* try again */
    }
    if (won)
        op->cancel_req = true;
    return won;
}

zkl_status zkl_op_cancel(zkl_op *op)
{
    ZKL__REFUSE_IN_LOG();
    int won;
    zkl__clear_err();
    if (!op)
        return zkl__fail(ZKL_EINVAL, "zkl_op_cancel: op is NULL");
    for (;;) {
        pthread_mutex_lock(&op->c->mu);
        won = cancel_locked(op);
        pthread_mutex_unlock(&op->c->mu);
        if (won >= 0)
            break;
        sched_yield();
    }
    if (!won)
        return zkl__fail(ZKL_EBUSY,
                         "zkl_op_cancel: too late, the acquire of %s has ended (granted, or "
                         "failed): its callback says which",
                         op->path);
    return ZKL_OK;
}

zkl_status zkl_op_release(zkl_op *op)
{
    ZKL__REFUSE_IN_LOG();
    zkl_client *c;
    zkl_status st;
    bool inside, ready;
    zkl__clear_err();
    if (!op)
        return zkl__fail(ZKL_EINVAL, "zkl_op_release: op is NULL");
    c = op->c;
    pthread_mutex_lock(&c->mu);
    inside = op->state == ZKL__OP_DELIVERING && pthread_equal(op->deliverer, pthread_self());
    /* in a fork()ed child no report comes: the handle holds nothing, and goes */
    ready = (op->state == ZKL__OP_REPORTED || inside || zkl__forked(c)) && !op->free_after;
    if (ready)
        op->free_after = inside;
    pthread_mutex_unlock(&c->mu);
    if (!ready)
        return zkl__fail(ZKL_EBUSY,
                         "zkl_op_release: the acquire of %s has not reported yet, or its "
                         "callback is running (cancel it, and release it from its callback)",
                         op->path);
    st = op->let_go_st = zkl__op_let_go(op);
    if (st != ZKL_OK)
        zkl__fail(st,
                  "zkl_op_release: the hold on %s was lost before release (its session "
                  "ended, or its lease ran out)",
                  op->path);
    op->plan->end(op);
    if (!inside)
        op_free(op);
    return st;
}

bool zkl_op_is_held(zkl_op *op)
{
    ZKL__REFUSE_IN_LOG_AS(false);
    int i;
    if (!op || op->nholds == 0)
        return false;
    for (i = 0; i < op->nholds; i++)
        if (!zkl__hold_alive(op->holds[i].c, op->holds[i].epoch))
            return false;
    return true;
}

/* The first hold of op, alive, or why not. */
static zkl_status first_hold(zkl_op *op, const char *fn, zkl__hold **h)
{
    *h = NULL;
    if (op->nholds == 0)
        return zkl__fail(ZKL_ENOTOWNER, "%s: the handle holds nothing (not granted, or not yet)",
                         fn);
    *h = &op->holds[0];
    if (!zkl__hold_alive((*h)->c, (*h)->epoch))
        return zkl__fail(ZKL_ELOST, "%s: the hold on %s was lost with its session or lease", fn,
                         op->path);
    return ZKL_OK;
}

zkl_status zkl_op_fencing_token(zkl_op *op, int64_t *token)
{
    ZKL__REFUSE_IN_LOG();
    zkl__hold *h = NULL, ask;
    zkl_status st;
    int64_t z;
    zkl__clear_err();
    if (!op || !token)
        return zkl__fail(ZKL_EINVAL, "zkl_op_fencing_token: NULL argument");
    if ((st = first_hold(op, "zkl_op_fencing_token", &h)) != ZKL_OK || !h)
        return st;
    /* The create rode in a multi: asked, then remembered. Two threads at
     * once may each ask; each stores the same zxid (atomically: the handle
     * is any thread's). */
    if ((z = __atomic_load_n(&h->czxid, __ATOMIC_ACQUIRE)) == 0) {
        ask = *h;
        ask.czxid = 0;
        if ((st = zkl__hold_token(h->c, &ask, &z)) != ZKL_OK)
            return st;
        __atomic_store_n(&h->czxid, z, __ATOMIC_RELEASE);
    }
    *token = z;
    return ZKL_OK;
}

zkl_status zkl_op_guarded_write(zkl_op *op, zkl_write *w, size_t n, size_t *failed)
{
    ZKL__REFUSE_IN_LOG();
    zkl__hold *h = NULL;
    zkl_status st;
    zkl__clear_err();
    if (failed)
        *failed = SIZE_MAX;
    if (!op)
        return zkl__fail(ZKL_EINVAL, "zkl_op_guarded_write: handle is NULL");
    if ((st = zkl__guard_check_writes(w, n, failed, "zkl_op_guarded_write")) != ZKL_OK ||
        (st = first_hold(op, "zkl_op_guarded_write", &h)) != ZKL_OK)
        return st;
    return zkl__guarded_write(op->holds, op->nholds, w, n, failed, "zkl_op_guarded_write");
}

zkl_status zkl_op_guarded_write_async(zkl_op *op, zkl_write *w, size_t n, size_t *failed,
                                      zkl_write_fn fn, void *userdata)
{
    ZKL__REFUSE_IN_LOG();
    static const char name[] = "zkl_op_guarded_write_async";
    zkl__hold *h = NULL;
    zkl_status st;
    size_t unused;
    zkl__clear_err();
    if (!failed)
        failed = &unused;
    *failed = SIZE_MAX;
    if (!op || !fn)
        return zkl__fail(ZKL_EINVAL, "%s: %s is NULL", name, op ? "fn" : "handle");
    if ((st = zkl__guard_check_writes(w, n, failed, name)) != ZKL_OK ||
        (st = first_hold(op, name, &h)) != ZKL_OK)
        return st;
    return zkl__guarded_write_async(op->c, op->holds, op->nholds, w, n, fn, userdata, failed, name);
}

zkl_status zkl_op_node(zkl_op *op, char **node)
{
    ZKL__REFUSE_IN_LOG();
    zkl__hold *h = NULL;
    zkl_status st;
    zkl__clear_err();
    if (!op || !node)
        return zkl__fail(ZKL_EINVAL, "zkl_op_node: NULL argument");
    if ((st = first_hold(op, "zkl_op_node", &h)) != ZKL_OK || !h)
        return st;
    if (!(*node = strdup(h->node)))
        return zkl__fail(ZKL_ENOMEM, "out of memory");
    return ZKL_OK;
}

zkl_status zkl_op_lease_remaining(zkl_op *op, int64_t *ms)
{
    ZKL__REFUSE_IN_LOG();
    zkl__hold *h = NULL;
    zkl_status st;
    zkl__clear_err();
    if (!op || !ms)
        return zkl__fail(ZKL_EINVAL, "zkl_op_lease_remaining: NULL argument");
    if (op->nholds == 0)
        return zkl__fail(ZKL_ENOTOWNER,
                         "zkl_op_lease_remaining: the handle holds nothing (not granted)");
    if ((st = first_hold(op, "zkl_op_lease_remaining", &h)) != ZKL_OK)
        return st;
    return zkl__lease_remaining(h->c, h->epoch, op->path, ms);
}

zkl_status zkl_client_event_fd(zkl_client *c, int *fd)
{
    ZKL__REFUSE_IN_LOG();
    struct zkl__engine *e;
    zkl__clear_err();
    if (!c || !fd)
        return zkl__fail(ZKL_EINVAL, "zkl_client_event_fd: NULL argument");
    if (zkl__forked(c)) /* the descriptor is the parent's too */
        return zkl__closed_fail(c, "zkl_client_event_fd");
    pthread_mutex_lock(&c->mu);
    e = zkl__engine_locked(c);
    if (e && e->efd < 0)
        e->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    *fd = e ? e->efd : -1;
    pthread_mutex_unlock(&c->mu);
    if (!e)
        return zkl__fail(ZKL_ENOMEM, "zkl_client_event_fd: out of memory");
    if (*fd < 0)
        return zkl__fail(ZKL_ESYS, "zkl_client_event_fd: eventfd: %s", strerror(errno));
    return ZKL_OK;
}

void zkl__op_blocker(zkl_op *op, char *buf, size_t len)
{
    pthread_mutex_lock(&op->c->mu);
    snprintf(buf, len, "%s", op->acq && op->acq->blocker ? op->acq->blocker : "");
    pthread_mutex_unlock(&op->c->mu);
}

zkl_status zkl_client_dispatch(zkl_client *c, int *ran)
{
    ZKL__REFUSE_IN_LOG();
    struct zkl__engine *e;
    zkl__report *list, *r;
    uint64_t n;
    int count = 0, efd, busy = 0;
    zkl__clear_err();
    if (ran)
        *ran = 0;
    if (!c)
        return zkl__fail(ZKL_EINVAL, "zkl_client_dispatch: client is NULL");
    if (zkl__forked(c)) /* reading the descriptor would take the parent's wake-up */
        return zkl__closed_fail(c, "zkl_client_dispatch");
    pthread_mutex_lock(&c->mu);
    e = c->engine;
    efd = e ? e->efd : -1;
    if (efd >= 0 && e->dispatching)
        busy = pthread_equal(e->dispatcher, pthread_self()) ? 1 : 2;
    else if (efd >= 0) {
        e->dispatching = true;
        e->dispatcher = pthread_self();
    }
    pthread_mutex_unlock(&c->mu);
    if (efd < 0)
        return zkl__fail(ZKL_EINVAL, "zkl_client_dispatch: no event descriptor (call "
                                     "zkl_client_event_fd first)");
    /* One thread runs the reports, one at a time: a latch's callbacks
     * alternate, and a destroy from inside one waits for no other thread.
     * From inside a report it runs nothing (the outer call runs the rest,
     * and the descriptor is not read, so it stays readable for them). */
    if (busy == 1)
        return ZKL_OK;
    if (busy == 2)
        return zkl__fail(ZKL_EBUSY, "zkl_client_dispatch: another thread is dispatching this "
                                    "client's reports; one thread (the loop's) dispatches");
    /* The descriptor is read before the queue is taken, never after: a
     * report queued between the two is taken now, and one queued after the
     * take writes the descriptor after this read, so it stays readable
     * whenever a report waits (read after the take, the signal of a report
     * queued in between was swallowed and the report stranded). */
    if (read(efd, &n, sizeof n) < 0 && errno != EAGAIN)
        zkl__log(ZKL_LOG_ERROR, "event descriptor: %s", strerror(errno));
    dispatch_pause_fault(c);
    list = zkl__reports_take(c);
    while ((r = list) != NULL) {
        list = r->next;
        r->deliver(r); /* may free r */
        count++;
    }
    pthread_mutex_lock(&c->mu);
    e->dispatching = false;
    pthread_mutex_unlock(&c->mu);
    if (ran)
        *ran = count;
    return ZKL_OK;
}
