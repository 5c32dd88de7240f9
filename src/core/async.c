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
 * (acq, reported) are under c->mu; the outcome is written before the handle
 * is delivered, and read only after (the callback, or release once reported).
 * Callbacks run with no lock held, and nothing of the handle is touched after
 * its callback returns: the callback may release it.
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
    bool reported; /* its callback has run, or is running (c->mu) */
    zkl__hold hold;
    struct zkl_op *qnext;
    char msg[256];
};

/* Run the callback; op may be gone when it returns. */
static void deliver(zkl_op *op)
{
    op->fn(op, op->st, op->st == ZKL_OK ? "" : op->msg, op->ud);
}

/* The engine's report of a finished operation (on the worker, no lock held). */
static void acq_done(zkl__acq *acq, void *arg)
{
    zkl_op *op = arg;
    zkl_client *c = op->c;
    struct zkl__engine *e;
    op->st = acq->st;
    memcpy(op->msg, acq->msg, sizeof op->msg);
    if (acq->st == ZKL_OK) {
        op->hold = acq->hold;
        acq->hold.node = NULL;
    }
    zkl__lease_users(c, acq->st == ZKL_OK ? 1 : 0, -1);
    pthread_mutex_lock(&c->mu);
    op->acq = NULL;
    op->reported = true;
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
    a.token_lazy = false; /* the token is read from the handle, without a request */
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
    bool reported;
    zkl__clear_err();
    if (!op)
        return zkl__fail(ZKL_EINVAL, "zkl_op_release: op is NULL");
    c = op->c;
    pthread_mutex_lock(&c->mu);
    reported = op->reported;
    pthread_mutex_unlock(&c->mu);
    if (!reported)
        return zkl__fail(ZKL_EBUSY,
                         "zkl_op_release: the acquire of %s has not reported yet (cancel it, "
                         "and release it from its callback)",
                         op->sd->path);
    if (op->hold.node)
        st = zkl__lock_release(c, &op->hold);
    pthread_mutex_lock(&c->mu);
    op->sd->async_ops--;
    pthread_mutex_unlock(&c->mu);
    free(op);
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
    *token = op->hold.czxid; /* async creates always bring it back */
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
