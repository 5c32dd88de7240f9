/*
 * async_side.c - the async acquire of a mutex or of one side of a read/write
 * lock: one acquire of the engine, its hold the handle's. The side counts
 * its handles (a destroy refuses while any is out) and its granted holds of
 * the current session (its hold-state notices).
 */
#include "base/status.h"
#include "base/util.h"
#include "core/async/async.h"
#include "core/objects/lockobj.h"

static bool side_next(zkl_op *op, zkl_status st, zkl__hold *got, zkl_client **c,
                      zkl__acquire_args *a, zkl_status *final)
{
    zkl__side *sd = op->obj;
    (void)c;
    if (op->stage++ == 0) { /* the one acquire */
        zkl__side_args(sd, 0, NULL, NULL, a);
        a->deadline = op->deadline;
        a->not_before = sd->not_before;
        return true;
    }
    *final = st;
    if (st == ZKL_OK) {
        zkl__op_keep(op, got);
        zkl__side_async_granted(sd, op->holds[0].epoch);
        op->at = 1; /* counted */
        zkl__stats_acquired(sd->stats, sd->c, &op->holds[0], sd, zkl__now_us() - op->started_us);
    } else {
        zkl__stats_failed(sd->stats, st);
    }
    return false;
}

static void side_end(zkl_op *op)
{
    zkl__side *sd = op->obj;
    if (op->at)
        zkl__stats_released(sd->stats, sd->c, &op->holds[0], op->let_go_st);
    zkl__side_async_ended(sd, op->at != 0, op->holds[0].epoch);
}

void zkl__side_async_granted(zkl__side *sd, uint64_t epoch)
{
    pthread_mutex_lock(&sd->c->mu);
    if (sd->async_epoch != epoch) {
        sd->async_epoch = epoch;
        sd->async_held = 0;
    }
    sd->async_held++;
    pthread_mutex_unlock(&sd->c->mu);
}

void zkl__side_async_ended(zkl__side *sd, bool granted, uint64_t epoch)
{
    pthread_mutex_lock(&sd->c->mu);
    sd->async_ops--;
    if (granted && sd->async_epoch == epoch)
        sd->async_held--;
    pthread_mutex_unlock(&sd->c->mu);
}

zkl_status zkl__side_async_begin(zkl__side *sd, const char *what)
{
    zkl_status st;
    bool cohort;
    if (sd->revoke_cb)
        return zkl__fail(ZKL_EINVAL,
                         "%s: %s is revocable, and revocable locks are thread mode only", what,
                         sd->path);
    pthread_mutex_lock(&sd->c->mu);
    cohort = sd->cohort != NULL;
    pthread_mutex_unlock(&sd->c->mu);
    if (cohort)
        return zkl__fail(ZKL_EINVAL,
                         "%s: %s has local hand-off, which passes holds between threads; "
                         "async acquires cannot use it",
                         what, sd->path);
    if ((st = zkl__side_mode(sd, ZKL__MODE_ASYNC, what)) != ZKL_OK)
        return st;
    pthread_mutex_lock(&sd->c->mu);
    sd->async_ops++;
    pthread_mutex_unlock(&sd->c->mu);
    return ZKL_OK;
}

bool zkl__side_async_in(zkl__side *sd, uint64_t epoch)
{
    bool in;
    pthread_mutex_lock(&sd->c->mu);
    in = sd->async_epoch == epoch && sd->async_held > 0;
    pthread_mutex_unlock(&sd->c->mu);
    return in;
}

zkl_status zkl__async_side_acquire(zkl__side *sd, int timeout_ms, zkl_op_fn fn, void *ud,
                                   const char *what, zkl_op **out)
{
    static const zkl__plan plan = {side_next, side_end, false};
    zkl_status st;
    if (out)
        *out = NULL;
    if (!fn || !out)
        return zkl__fail(ZKL_EINVAL, "%s: NULL argument", what);
    if ((st = zkl__check_timeout(timeout_ms, what)) != ZKL_OK)
        return st;
    if ((st = zkl__side_async_begin(sd, what)) != ZKL_OK)
        return st;
    st = zkl__async_start(sd->c, &plan, what, sd, sd->path, 1, timeout_ms, fn, ud, out);
    if (st != ZKL_OK)
        zkl__side_async_ended(sd, false, 0);
    return st;
}
