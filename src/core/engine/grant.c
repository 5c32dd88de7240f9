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
#include "core/engine/room.h"
#include "requests/rc.h"
#include "services/cleanup.h"
#include "services/lease.h"
#include "services/revoke.h"

/* Done with st: its message kept for whoever reads it (maybe on another thread). */
static zkl__step_result finish(zkl__acq *aq, zkl_status st)
{
    aq->st = st;
    if (st != ZKL_OK && !aq->msg)
        aq->msg = strdup(zkl_errmsg()); /* NULL: "out of memory" is said instead */
    aq->step = NULL;
    return ZKL__STEP_YIELD;
}

/* Let go of everything of the place in line but the node (the caller's to delete). */
static void leave_place(zkl__acq *aq)
{
    zkl__room_note(ZKL__NOTE_LEFT, aq, NULL); /* a node of ours leaves without holding */
    zkl__acq_untrack(aq);
    zkl__armed_clear(&aq->prim);
    zkl__armed_clear(&aq->ahead);
    zkl__armed_clear(&aq->self);
    zkl__names_free(&aq->kids);
    aq->flags &= ~ZKL__AF_HAVE_KIDS;
    aq->flags &= ~ZKL__AF_UNLISTED;
    /* an earlier try may have reached the server (set only while creating) */
    if (zkl__has(aq->flags, ZKL__AF_UNCERTAIN) && aq->making)
        zkl__bg_delete(aq->c, aq->a.path, aq->making->prefix);
    aq->flags &= ~ZKL__AF_UNCERTAIN;
    zkl__making_free(aq);
}

static void drop_session(zkl__acq *aq)
{
    if (aq->s)
        zkl__session_put(aq->s);
    aq->s = NULL;
}

zkl__step_result zkl__step_start(zkl__acq *aq)
{
    zkl_client *c = aq->c;
    zkl_status st;
    if (c->cfg.lag_source == ZKL_LAG_UNKNOWN) /* (set at open, before any acquire) */
        return finish(aq, zkl__fail(ZKL_EINVAL,
                                    "acquiring %s: no lease can be bounded: %s; set "
                                    "ensemble_lag_ms (zklock --ensemble-lag MS) to syncLimit x "
                                    "tickTime + tickTime/2 (0 for a standalone server), or add "
                                    "conf to the server's 4lw.commands.whitelist",
                                    aq->a.path, c->cfg.lag_note));
    if (aq->a.not_before) { /* a back-off first: a timer, woken early by a cancel */
        if (zkl__acq_canceled(aq))
            return finish(aq, zkl__fail(ZKL_ECANCELED, "acquiring %s was canceled", aq->a.path));
        if (!zkl__acq_sleep(aq, aq->a.not_before))
            return ZKL__STEP_YIELD;
        aq->a.not_before = 0;
    }
    pthread_mutex_lock(&c->mu);
    st = zkl__session_try_get_locked(c, &aq->s);
    pthread_mutex_unlock(&c->mu);
    if (st == ZKL__RESTART && zkl__acq_canceled(aq)) {
        drop_session(aq);
        return finish(aq, zkl__fail(ZKL_ECANCELED, "acquiring %s was canceled", aq->a.path));
    }
    if (st == ZKL__RESTART) { /* lost: the worker is opening the next session */
        if (zkl__acq_sleep(aq, aq->a.deadline))
            return finish(aq, zkl__fail(ZKL_ETIMEDOUT, "no live session before the deadline"));
        return ZKL__STEP_YIELD;
    }
    if (st != ZKL_OK)
        return finish(aq, st);
    aq->epoch = aq->s->epoch;
    /* (a new session makes a new prefix: a restart's leave_place freed the
     * making that held the last one) */
    aq->parents = 0;
    aq->attempt = 0;
    aq->flags &= ~(ZKL__AF_ALONE | ZKL__AF_CARRIED);
    aq->step = zkl__step_create;
    return ZKL__STEP_AGAIN;
}

/* After a restart's pause: the session's news came, or the pause is over. */
static zkl__step_result step_news(zkl__acq *aq)
{
    zkl_client *c = aq->c;
    bool news;
    pthread_mutex_lock(&c->mu);
    news = c->conn.sess->epoch != aq->epoch || c->conn.sess->expired ||
           c->conn.state_gen != aq->since_gen || c->closing || c->canceled ||
           zkl__has(aq->mu_flags, ZKL__AM_CANCEL);
    pthread_mutex_unlock(&c->mu);
    if (!news && !zkl__acq_sleep(aq, aq->until))
        return ZKL__STEP_YIELD;
    aq->step = zkl__step_start;
    return ZKL__STEP_AGAIN;
}

zkl__step_result zkl__acq_restart(zkl__acq *aq)
{
    zkl_client *c = aq->c;
    int64_t until;
    leave_place(aq);
    if (aq->node) { /* gone with its session, or soon: the worker makes sure */
        zkl__bg_delete(c, aq->node, NULL);
        free(aq->node);
        aq->node = NULL;
    }
    drop_session(aq);
    if (aq->a.no_restart)
        return finish(aq, zkl__fail(ZKL_ELOST,
                                    "lost our place in line for %s (session lost, or node deleted)",
                                    aq->a.path));
    if (zkl__now_ms() >= aq->a.deadline)
        return finish(aq, zkl__fail(ZKL_ETIMEDOUT, "lost our place in line for %s, and out of time",
                                    aq->a.path));
    zkl__log(ZKL_LOG_INFO, "lost our place in line for %s: trying again", aq->a.path);
    /* The server refused the session, or our node went, while the client
     * still counts the session alive: its end is usually on the way. Trying
     * again at once would only spin on the dying session (and queue a
     * cleanup each time) until the client hears of it. */
    until = zkl__now_ms() + zkl__retry_delay_ms(aq->restarts++, 4);
    aq->until = until < aq->a.deadline ? until : aq->a.deadline;
    aq->since_gen = zkl__state_gen(c);
    aq->step = step_news;
    return ZKL__STEP_AGAIN;
}

/* Our node's foreground delete is answered (or not in time): else the background's. */
static zkl__step_result step_deleted(zkl__acq *aq)
{
    int rc;
    if (!zkl__acq_answered(aq))
        return ZKL__STEP_YIELD;
    rc = aq->rcs[0];
    zkl__acq_untrack(aq);
    if (rc != ZOK && rc != ZNONODE)
        zkl__bg_delete(aq->c, aq->node, NULL);
    free(aq->node);
    aq->node = NULL;
    drop_session(aq);
    aq->step = NULL;
    return ZKL__STEP_YIELD;
}

zkl__step_result zkl__acq_fail(zkl__acq *aq, zkl_status st)
{
    zkl__req *k;
    int rc;
    if (st == ZKL__RESTART)
        return zkl__acq_restart(aq);
    finish(aq, st);
    leave_place(aq);
    if (!aq->node) {
        drop_session(aq);
        return ZKL__STEP_YIELD;
    }
    /* Timeout, error or no memory: our node must go, whatever happens. The
     * caller's deadline may be spent: the delete gets a moment of its own
     * (a round trip), then the worker takes over. Cut off from the servers,
     * the worker takes over at once: the delete could go only once the link
     * is back, and the caller's timeout is not stretched for it (the node
     * never held: it is no holder, only a place in line until it goes). */
    k = ZKL_FAULT(aq->c, DELETE_LOST, NULL) || !zkl__connected(aq->c)
            ? NULL
            : zkl__req_delete(aq->s, aq->node, zkl__acq_notify, aq, &rc);
    if (!k) {
        zkl__bg_delete(aq->c, aq->node, NULL);
        free(aq->node);
        aq->node = NULL;
        drop_session(aq);
        return ZKL__STEP_YIELD;
    }
    zkl__acq_track(aq, k, ZOK);
    aq->call_until = zkl__now_ms() + ZKL_GIVE_UP_DELETE_MS;
    aq->step = step_deleted;
    return ZKL__STEP_AGAIN;
}

/* A backoff: over when its time is up or the connection state changes. */
static zkl__step_result step_backoff(zkl__acq *aq)
{
    if (!zkl__acq_changed(aq) && !zkl__acq_sleep(aq, aq->until))
        return ZKL__STEP_YIELD;
    if (zkl__acq_canceled(aq) || zkl__now_ms() >= aq->a.deadline)
        return zkl__acq_fail(aq, zkl__acq_gave_up(aq, aq->doing));
    aq->step = aq->resume;
    return ZKL__STEP_AGAIN;
}

zkl__step_result zkl__acq_backoff(zkl__acq *aq, zkl__step step, const char *doing)
{
    if (!zkl__backoff_until(aq->c, &aq->attempt, aq->a.deadline, &aq->until))
        return zkl__acq_fail(aq, zkl__acq_gave_up(aq, doing));
    aq->resume = step;
    aq->doing = doing;
    aq->since_gen = zkl__state_gen(aq->c);
    aq->step = step_backoff;
    return ZKL__STEP_AGAIN;
}

/* The lease is good: the hold, with its revocation watch, unless canceled first. */
static zkl__step_result commit(zkl__acq *aq)
{
    zkl_client *c = aq->c;
    struct zkl__revwatch *rev = NULL;
    bool canceled;
    if (aq->a.revoke_cb &&
        !(rev = zkl__revwatch_start(c, aq->node, aq->epoch, aq->a.revoke_cb, aq->a.revoke_ctx)))
        /* a hold that cannot be revoked as asked is not handed out */
        return zkl__acq_fail(aq, zkl__fail(ZKL_ENOMEM, "out of memory"));
    pthread_mutex_lock(&c->mu);
    canceled = zkl__has(aq->mu_flags, ZKL__AM_CANCEL);
    zkl__acq_flag(&aq->mu_flags, ZKL__AM_GRANTED, !canceled);
    pthread_mutex_unlock(&c->mu);
    if (canceled) {
        zkl__revwatch_stop(rev);
        return zkl__acq_fail(aq, zkl__fail(ZKL_ECANCELED, "acquiring %s was canceled", aq->a.path));
    }
    zkl__room_note(ZKL__NOTE_GRANTED, aq, NULL); /* for the waiters behind us: room.h */
    aq->held = aq->node; /* no longer a place in line: the hold's (zkl__acq_take_hold) */
    aq->node = NULL;
    aq->rev = rev;
    aq->granted_us = zkl__now_us();
    leave_place(aq);
    drop_session(aq);
    return finish(aq, ZKL_OK);
}

void zkl__acq_take_hold(zkl__acq *aq, zkl__hold *out)
{
    memset(out, 0, sizeof *out);
    out->c = aq->c;
    out->node = aq->held;
    out->czxid = aq->czxid;
    out->epoch = aq->epoch;
    out->rev = aq->rev;
    out->alone = zkl__has(aq->flags, ZKL__AF_ALONE);
    out->granted_us = aq->granted_us;
    out->woke_us = aq->woke_us;
    aq->held = NULL;
    aq->rev = NULL;
}

static zkl__step_result step_leased(zkl__acq *aq)
{
    int rc;
    if (!zkl__acq_answered(aq))
        return ZKL__STEP_YIELD;
    rc = aq->rcs[0];
    zkl__acq_untrack(aq);
    if (rc == ZOK)
        rc = zkl__lease_after_sync(aq->c, aq->s);
    if (rc == ZOK)
        return commit(aq);
    if (zkl__rc_kind_of(rc) != ZKL__RC_RETRY)
        return zkl__acq_fail(aq, zkl__rc_status(rc, "sync", aq->a.path));
    return zkl__acq_backoff(aq, zkl__step_grant, "waiting for");
}

/*
 * A grant needs a lease with at least a renewal interval left: usually the
 * renewals made while we waited (or the create) give it; after a long
 * silence a sync does. Connection trouble is retried until the deadline.
 */
zkl__step_result zkl__step_grant(zkl__acq *aq)
{
    zkl__req *k;
    int rc;
    if (zkl__lease_check(aq->c, aq->s) == ZOK)
        return commit(aq);
    k = zkl__req_sync(aq->s, "/", zkl__acq_notify, aq, &rc);
    zkl__acq_track(aq, k, rc);
    aq->step = step_leased;
    return ZKL__STEP_AGAIN;
}
