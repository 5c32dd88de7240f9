/*
 * async.c - async acquires (zklock/async.h): a zkl_op handle over an engine
 * operation run by the worker, its completion delivered on the worker or
 * queued for zkl_client_dispatch behind an eventfd, cancel, and release.
 *
 * DESIGN
 *
 * A handle lives from the acquire call to its zkl_op_release. Its engine
 * operation (op->acq) lives until it is done: the worker then moves the
 * outcome (status, message, hold) into the handle, frees the operation and
 * delivers. Fields of the handle that cancel and release read across threads
 * (acq, state, deliverer, free_after) are under c->mu; the outcome is written
 * before the handle is delivered and read only after (by the callback, or by
 * a release once the callback ran). Callbacks run with no lock held, and nothing of the handle is
 * touched after its callback returns: the callback may release it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "base/log.h"
#include "base/status.h"
#include "base/util.h"
#include "core/acq.h"
#include "core/async.h"
#include "core/lockobj.h"
#include "services/lease.h"

struct zkl_op {
    zkl_client *c;
    zkl__side *sd;
    zkl__acq *acq; /* until done (c->mu) */
    zkl_op_fn fn;
    void *ud;
    zkl_status st;
    /* its report (c->mu): waiting, its callback running (on deliverer), or run */
    enum { OP_WAITING, OP_DELIVERING, OP_REPORTED } state;
    pthread_t deliverer;
    bool free_after; /* released from inside its callback: freed when it returns */
    zkl__hold hold;
    struct zkl_op *qnext;
    char *msg; /* the failure's (the operation's, taken over) */
};

static void op_free(zkl_op *op)
{
    free(op->msg);
    free(op);
}

/*
 * Run the callback. A release from inside it frees the handle only when it
 * returns (hiredis's REDIS_IN_CALLBACK); one from another thread meanwhile
 * is refused, as before the report.
 */
static void deliver(zkl_op *op)
{
    zkl_client *c = op->c;
    bool free_after;
    pthread_mutex_lock(&c->mu);
    op->state = OP_DELIVERING;
    op->deliverer = pthread_self();
    pthread_mutex_unlock(&c->mu);
    op->fn(op, op->st, op->st == ZKL_OK ? "" : op->msg ? op->msg : "out of memory", op->ud);
    pthread_mutex_lock(&c->mu);
    op->state = OP_REPORTED;
    free_after = op->free_after;
    pthread_mutex_unlock(&c->mu);
    if (free_after)
        op_free(op);
}

/* The engine's report of a finished operation (on the worker, no lock held). */
static void acq_done(zkl__acq *acq, void *arg)
{
    zkl_op *op = arg;
    zkl_client *c = op->c;
    struct zkl__engine *e;
    op->st = acq->st;
    op->msg = acq->msg;
    acq->msg = NULL;
    if (acq->st == ZKL_OK) {
        op->hold = acq->hold;
        acq->hold.node = NULL;
    }
    zkl__lease_users(c, acq->st == ZKL_OK ? 1 : 0, -1);
    pthread_mutex_lock(&c->mu);
    op->acq = NULL;
    e = c->engine;
    if (e->efd >= 0) { /* queued for the loop's thread */
        uint64_t one = 1;
        op->qnext = NULL;
        if (e->reports_end)
            e->reports_end->qnext = op;
        else
            e->reports = op;
        e->reports_end = op;
        pthread_mutex_unlock(&c->mu);
        zkl__acq_free(acq);
        if (write(e->efd, &one, sizeof one) < 0 && errno != EAGAIN)
            zkl__log(ZKL_LOG_ERROR, "event descriptor: %s", strerror(errno));
        return;
    }
    pthread_mutex_unlock(&c->mu);
    zkl__acq_free(acq);
    deliver(op);
}

zkl_status zkl__async_acquire(zkl__side *sd, int timeout_ms, zkl_op_fn fn, void *ud,
                              const char *what, zkl_op **out)
{
    zkl_client *c = sd->c;
    zkl__acquire_args a;
    zkl_op *op;
    zkl_status st;
    if (out)
        *out = NULL;
    if (!fn || !out)
        return zkl__fail(ZKL_EINVAL, "%s: NULL argument", what);
    if ((st = zkl__check_timeout(timeout_ms, what)) != ZKL_OK)
        return st;
    if (sd->revoke_cb)
        return zkl__fail(ZKL_EINVAL,
                         "%s: %s is revocable, and revocable locks are thread mode only", what,
                         sd->path);
    if ((st = zkl__side_mode(sd, ZKL__MODE_ASYNC, what)) != ZKL_OK)
        return st;
    zkl__side_args(sd, timeout_ms, NULL, NULL, &a);

    if (!(op = calloc(1, sizeof *op)))
        return zkl__fail(ZKL_ENOMEM, "%s: out of memory", what);
    op->c = c;
    op->sd = sd;
    op->fn = fn;
    op->ud = ud;
    if (!(op->acq = zkl__acq_new(c, &a, false, acq_done, op))) {
        free(op);
        return zkl__fail(ZKL_ENOMEM, "%s: out of memory", what);
    }
    pthread_mutex_lock(&c->mu);
    if (c->closing) {
        pthread_mutex_unlock(&c->mu);
        zkl__acq_free(op->acq);
        free(op);
        return zkl__fail(ZKL_ECLOSED, "%s: client is closing", what);
    }
    sd->async_ops++;
    pthread_mutex_unlock(&c->mu);
    zkl__lease_users(c, 0, 1); /* renewed while it waits */
    *out = op;
    zkl__acq_start_async(op->acq);
    return ZKL_OK;
}

zkl_status zkl_op_cancel(zkl_op *op)
{
    bool won = false;
    zkl__clear_err();
    if (!op)
        return zkl__fail(ZKL_EINVAL, "zkl_op_cancel: op is NULL");
    pthread_mutex_lock(&op->c->mu);
    if (op->acq)
        won = zkl__acq_cancel_locked(op->acq);
    pthread_mutex_unlock(&op->c->mu);
    if (!won)
        return zkl__fail(ZKL_EBUSY,
                         "zkl_op_cancel: too late, the acquire of %s has ended (granted, or "
                         "failed): its callback says which",
                         op->sd->path);
    return ZKL_OK;
}

zkl_status zkl_op_release(zkl_op *op)
{
    zkl_client *c;
    zkl_status st = ZKL_OK;
    bool inside, ready;
    zkl__clear_err();
    if (!op)
        return zkl__fail(ZKL_EINVAL, "zkl_op_release: op is NULL");
    c = op->c;
    pthread_mutex_lock(&c->mu);
    inside = op->state == OP_DELIVERING && pthread_equal(op->deliverer, pthread_self());
    ready = (op->state == OP_REPORTED || inside) && !op->free_after;
    if (ready)
        op->free_after = inside;
    pthread_mutex_unlock(&c->mu);
    if (!ready)
        return zkl__fail(ZKL_EBUSY,
                         "zkl_op_release: the acquire of %s has not reported yet, or its "
                         "callback is running (cancel it, and release it from its callback)",
                         op->sd->path);
    if (op->hold.node)
        st = zkl__lock_release(c, &op->hold);
    pthread_mutex_lock(&c->mu);
    op->sd->async_ops--;
    pthread_mutex_unlock(&c->mu);
    if (!inside)
        op_free(op);
    return st;
}

bool zkl_op_is_held(zkl_op *op)
{
    return op && op->hold.node && zkl__hold_alive(op->c, op->hold.epoch);
}

/* The granted hold of op, or why not. */
static zkl_status granted(zkl_op *op, const char *fn)
{
    if (!op->hold.node)
        return zkl__fail(ZKL_ENOTOWNER, "%s: the handle holds nothing (not granted, or not yet)",
                         fn);
    if (!zkl__hold_alive(op->c, op->hold.epoch))
        return zkl__fail(ZKL_ELOST, "%s: the hold on %s was lost with its session or lease", fn,
                         op->sd->path);
    return ZKL_OK;
}

zkl_status zkl_op_fencing_token(zkl_op *op, int64_t *token)
{
    zkl_status st;
    zkl__clear_err();
    if (!op || !token)
        return zkl__fail(ZKL_EINVAL, "zkl_op_fencing_token: NULL argument");
    if ((st = granted(op, "zkl_op_fencing_token")) != ZKL_OK)
        return st;
    if (op->hold.czxid == 0) { /* the create rode in a multi: ask once, remember */
        if ((st = zkl__hold_token(op->c, &op->hold, &op->hold.czxid)) != ZKL_OK)
            return st;
    }
    *token = op->hold.czxid;
    return ZKL_OK;
}

zkl_status zkl_op_lease_remaining(zkl_op *op, int64_t *ms)
{
    zkl__clear_err();
    if (!op || !ms)
        return zkl__fail(ZKL_EINVAL, "zkl_op_lease_remaining: NULL argument");
    if (!op->hold.node)
        return zkl__fail(ZKL_ENOTOWNER,
                         "zkl_op_lease_remaining: the handle holds nothing (not granted)");
    return zkl__lease_remaining(op->c, op->hold.epoch, op->sd->path, ms);
}

zkl_status zkl_client_event_fd(zkl_client *c, int *fd)
{
    struct zkl__engine *e;
    zkl__clear_err();
    if (!c || !fd)
        return zkl__fail(ZKL_EINVAL, "zkl_client_event_fd: NULL argument");
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

zkl_status zkl_client_dispatch(zkl_client *c, int *ran)
{
    zkl_op *list, *op;
    uint64_t n;
    int count = 0, efd;
    zkl__clear_err();
    if (ran)
        *ran = 0;
    if (!c)
        return zkl__fail(ZKL_EINVAL, "zkl_client_dispatch: client is NULL");
    pthread_mutex_lock(&c->mu);
    efd = c->engine ? c->engine->efd : -1;
    list = efd >= 0 ? c->engine->reports : NULL;
    if (efd >= 0)
        c->engine->reports = c->engine->reports_end = NULL;
    pthread_mutex_unlock(&c->mu);
    if (efd < 0)
        return zkl__fail(ZKL_EINVAL, "zkl_client_dispatch: no event descriptor (call "
                                     "zkl_client_event_fd first)");
    if (read(efd, &n, sizeof n) < 0 && errno != EAGAIN)
        zkl__log(ZKL_LOG_ERROR, "event descriptor: %s", strerror(errno));
    while ((op = list) != NULL) {
        list = op->qnext;
        deliver(op); /* may release op */
        count++;
    }
    if (ran)
        *ran = count;
    return ZKL_OK;
}
