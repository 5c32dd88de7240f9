/*
 * grant.c - the ends of an acquire (acq.h): a session to start in, the lease
 * and the hold at the grant, the guaranteed cleanup of our node on every
 * other way out, the backoff after connection trouble, and the restart in a
 * new session when our place in line is lost.
 */
#include <stdlib.h>
#include <string.h>

#include "base/fault.h"
#include "base/log.h"
#include "base/status.h"
#include "base/util.h"
#include "base/tuning.h"
#include "core/engine/acq.h"
#include "core/engine/inproc.h"
#include "requests/rc.h"
#include "services/cleanup.h"
#include "services/lease.h"
#include "services/revoke.h"

/* Done with st: its message kept for whoever reads it (maybe on another thread). */
static zkl__step_result finish(zkl__acq *op, zkl_status st)
{
    op->st = st;
    if (st != ZKL_OK && !op->msg)
        op->msg = strdup(zkl_errmsg()); /* NULL: "out of memory" is said instead */
    op->step = NULL;
    return ZKL__STEP_YIELD;
}

/* Let go of everything of the place in line but the node (the caller's to delete). */
static void leave_place(zkl__acq *op)
{
    /* a node of ours leaves the line without holding: inproc.h */
    if (op->node && op->name && (op->a.driver->facts & ZKL__D_HEAD_HOLDS))
        zkl__inproc_left(op->inproc, zkl__acq_seq(op, op->name));
    zkl__acq_flight_end(op);
    zkl__acq_unawait(op);
    zkl__acq_untrack(op);
    zkl__armed_clear(&op->prim);
    zkl__armed_clear(&op->ahead);
    zkl__armed_clear(&op->self);
    zkl__names_free(&op->kids);
    op->flags &= ~ZKL__AF_HAVE_KIDS;
    op->flags &= ~ZKL__AF_UNLISTED;
    free(op->want);
    op->want = NULL;
    free(op->mk);
    op->mk = NULL;
    if (zkl__has(op->flags, ZKL__AF_UNCERTAIN)) /* an earlier try may have reached the server */
        zkl__bg_delete(op->c, op->a.path, op->prefix);
    op->flags &= ~ZKL__AF_UNCERTAIN;
}

static void drop_session(zkl__acq *op)
{
    if (op->s)
        zkl__session_put(op->s);
    op->s = NULL;
}

zkl__step_result zkl__step_start(zkl__acq *op)
{
    zkl_client *c = op->c;
    zkl_status st;
    if (c->cfg.lag_source == ZKL_LAG_UNKNOWN) /* (set at open, before any acquire) */
        return finish(op, zkl__fail(ZKL_EINVAL,
                                    "acquiring %s: no lease can be bounded: %s; set "
                                    "ensemble_lag_ms (zklock --ensemble-lag MS) to syncLimit x "
                                    "tickTime + tickTime/2 (0 for a standalone server), or add "
                                    "conf to the server's 4lw.commands.whitelist",
                                    op->a.path, c->cfg.lag_note));
    if (op->a.not_before) { /* a back-off first: a timer, woken early by a cancel */
        if (zkl__acq_canceled(op))
            return finish(op, zkl__fail(ZKL_ECANCELED, "acquiring %s was canceled", op->a.path));
        if (!zkl__acq_sleep(op, op->a.not_before))
            return ZKL__STEP_YIELD;
        op->a.not_before = 0;
    }
    pthread_mutex_lock(&c->mu);
    st = zkl__session_try_get_locked(c, &op->s);
    pthread_mutex_unlock(&c->mu);
    if (st == ZKL__RESTART && zkl__acq_canceled(op)) {
        drop_session(op);
        return finish(op, zkl__fail(ZKL_ECANCELED, "acquiring %s was canceled", op->a.path));
    }
    if (st == ZKL__RESTART) { /* lost: the worker is opening the next session */
        if (zkl__acq_sleep(op, op->a.deadline))
            return finish(op, zkl__fail(ZKL_ETIMEDOUT, "no live session before the deadline"));
        return ZKL__STEP_YIELD;
    }
    if (st != ZKL_OK)
        return finish(op, st);
    op->epoch = op->s->epoch;
    op->prefix[0] = '\0';
    op->parents = 0;
    op->attempt = 0;
    op->flags &= ~(ZKL__AF_ALONE | ZKL__AF_CARRIED);
    op->step = zkl__step_create;
    return ZKL__STEP_AGAIN;
}

/* After a restart's pause: the session's news came, or the pause is over. */
static zkl__step_result step_news(zkl__acq *op)
{
    zkl_client *c = op->c;
    bool news;
    pthread_mutex_lock(&c->mu);
    news = c->conn.sess->epoch != op->epoch || c->conn.sess->expired ||
           c->conn.state_gen != op->since_gen || c->closing || c->canceled ||
           zkl__has(op->mu_flags, ZKL__AM_CANCEL);
    pthread_mutex_unlock(&c->mu);
    if (!news && !zkl__acq_sleep(op, op->until))
        return ZKL__STEP_YIELD;
    op->step = zkl__step_start;
    return ZKL__STEP_AGAIN;
}

zkl__step_result zkl__acq_restart(zkl__acq *op)
{
    zkl_client *c = op->c;
    int64_t until;
    leave_place(op);
    if (op->node) { /* gone with its session, or soon: the worker makes sure */
        zkl__bg_delete(c, op->node, NULL);
        free(op->node);
        op->node = NULL;
    }
    drop_session(op);
    if (op->a.no_restart)
        return finish(op, zkl__fail(ZKL_ELOST,
                                    "lost our place in line for %s (session lost, or node deleted)",
                                    op->a.path));
    if (zkl__now_ms() >= op->a.deadline)
        return finish(op, zkl__fail(ZKL_ETIMEDOUT, "lost our place in line for %s, and out of time",
                                    op->a.path));
    zkl__log(ZKL_LOG_INFO, "lost our place in line for %s: trying again", op->a.path);
    /* The server refused the session, or our node went, while the client
     * still counts the session alive: its end is usually on the way. Trying
     * again at once would only spin on the dying session (and queue a
     * cleanup each time) until the client hears of it. */
    until = zkl__now_ms() + zkl__retry_delay_ms(op->restarts++, 4);
    op->until = until < op->a.deadline ? until : op->a.deadline;
    op->since_gen = zkl__state_gen(c);
    op->step = step_news;
    return ZKL__STEP_AGAIN;
}

/* Our node's foreground delete is answered (or not in time): else the background's. */
static zkl__step_result step_deleted(zkl__acq *op)
{
    int rc;
    if (!zkl__acq_answered(op))
        return ZKL__STEP_YIELD;
    rc = op->rcs[0];
    zkl__acq_untrack(op);
    if (rc != ZOK && rc != ZNONODE)
        zkl__bg_delete(op->c, op->node, NULL);
    free(op->node);
    op->node = NULL;
    drop_session(op);
    op->step = NULL;
    return ZKL__STEP_YIELD;
}

zkl__step_result zkl__acq_fail(zkl__acq *op, zkl_status st)
{
    zkl__req *k;
    int rc;
    if (st == ZKL__RESTART)
        return zkl__acq_restart(op);
    finish(op, st);
    leave_place(op);
    if (!op->node) {
        drop_session(op);
        return ZKL__STEP_YIELD;
    }
    /* Timeout, error or no memory: our node must go, whatever happens. The
     * caller's deadline may be spent: the delete gets a moment of its own
     * (a round trip), then the worker takes over. Cut off from the servers,
     * the worker takes over at once: the delete could go only once the link
     * is back, and the caller's timeout is not stretched for it (the node
     * never held: it is no holder, only a place in line until it goes). */
    k = ZKL_FAULT(op->c, DELETE_LOST, NULL) || !zkl__connected(op->c)
            ? NULL
            : zkl__req_delete(op->s, op->node, zkl__acq_notify, op, &rc);
    if (!k) {
        zkl__bg_delete(op->c, op->node, NULL);
        free(op->node);
        op->node = NULL;
        drop_session(op);
        return ZKL__STEP_YIELD;
    }
    zkl__acq_track(op, k, ZOK);
    op->call_until = zkl__now_ms() + ZKL_GIVE_UP_DELETE_MS;
    op->step = step_deleted;
    return ZKL__STEP_AGAIN;
}

/* A backoff: over when its time is up or the connection state changes. */
static zkl__step_result step_backoff(zkl__acq *op)
{
    if (!zkl__acq_changed(op) && !zkl__acq_sleep(op, op->until))
        return ZKL__STEP_YIELD;
    if (zkl__acq_canceled(op) || zkl__now_ms() >= op->a.deadline)
        return zkl__acq_fail(op, zkl__acq_gave_up(op, op->doing));
    op->step = op->resume;
    return ZKL__STEP_AGAIN;
}

zkl__step_result zkl__acq_backoff(zkl__acq *op, zkl__step step, const char *doing)
{
    if (!zkl__backoff_until(op->c, &op->attempt, op->a.deadline, &op->until))
        return zkl__acq_fail(op, zkl__acq_gave_up(op, doing));
    op->resume = step;
    op->doing = doing;
    op->since_gen = zkl__state_gen(op->c);
    op->step = step_backoff;
    return ZKL__STEP_AGAIN;
}

/* The lease is good: the hold, with its revocation watch, unless canceled first. */
static zkl__step_result commit(zkl__acq *op)
{
    zkl_client *c = op->c;
    struct zkl__revwatch *rev = NULL;
    bool canceled;
    if (op->a.revoke_cb &&
        !(rev = zkl__revwatch_start(c, op->node, op->epoch, op->a.revoke_cb, op->a.revoke_ctx)))
        /* a hold that cannot be revoked as asked is not handed out */
        return zkl__acq_fail(op, zkl__fail(ZKL_ENOMEM, "out of memory"));
    pthread_mutex_lock(&c->mu);
    canceled = zkl__has(op->mu_flags, ZKL__AM_CANCEL);
    zkl__acq_flag(&op->mu_flags, ZKL__AM_GRANTED, !canceled);
    pthread_mutex_unlock(&c->mu);
    if (canceled) {
        zkl__revwatch_stop(rev);
        return zkl__acq_fail(op, zkl__fail(ZKL_ECANCELED, "acquiring %s was canceled", op->a.path));
    }
    if (op->a.driver->facts & ZKL__D_HEAD_HOLDS) /* for the waiters behind us: inproc.h */
        zkl__inproc_granted(op->inproc, op->name, zkl__acq_seq(op, op->name),
                            zkl__session_id(op->s));
    op->hold.c = op->c;
    op->hold.node = op->node;
    op->hold.czxid = op->czxid;
    op->hold.epoch = op->epoch;
    op->hold.alone = zkl__has(op->flags, ZKL__AF_ALONE);
    op->hold.granted_us = zkl__now_us();
    op->hold.woke_us = op->woke_us;
    op->hold.rev = rev;
    op->node = NULL;
    leave_place(op);
    drop_session(op);
    return finish(op, ZKL_OK);
}

static zkl__step_result step_leased(zkl__acq *op)
{
    int rc;
    if (!zkl__acq_answered(op))
        return ZKL__STEP_YIELD;
    rc = op->rcs[0];
    zkl__acq_untrack(op);
    if (rc == ZOK)
        rc = zkl__lease_after_sync(op->c, op->s);
    if (rc == ZOK)
        return commit(op);
    if (zkl__rc_kind_of(rc) != ZKL__RC_RETRY)
        return zkl__acq_fail(op, zkl__rc_status(rc, "sync", op->a.path));
    return zkl__acq_backoff(op, zkl__step_grant, "waiting for");
}

/*
 * A grant needs a lease with at least a renewal interval left: usually the
 * renewals made while we waited (or the create) give it; after a long
 * silence a sync does. Connection trouble is retried until the deadline.
 */
zkl__step_result zkl__step_grant(zkl__acq *op)
{
    zkl__req *k;
    int rc;
    if (zkl__lease_check(op->c, op->s) == ZOK)
        return commit(op);
    k = zkl__req_sync(op->s, "/", zkl__acq_notify, op, &rc);
    zkl__acq_track(op, k, rc);
    op->step = step_leased;
    return ZKL__STEP_AGAIN;
}
