/*
 * op.c - what the steps of an acquire share (acq.h): readiness, the requests
 * an operation has in flight, its timers, its watches, and how it gives up.
 * The engine (engine.c) runs operations; this file only marks them ready
 * (a reply, a watch, a bell: inproc.h).
 */
#include <stdlib.h>
#include <string.h>
#include <utlist.h>

#include "base/fault.h"
#include "base/status.h"
#include "base/util.h"
#include "base/wakefd.h"
#include "core/engine/acq.h"
#include "core/engine/inproc.h"

void zkl__acq_ready_locked(zkl__acq *op)
{
    struct zkl__engine *e = op->c->engine;
    op->mu_flags |= ZKL__AM_READY;
    if (op->state == ZKL__RUN_DONE)
        return;
    if (zkl__has(op->mu_flags, ZKL__AM_BLOCKING)) {
        if (zkl__has(op->mu_flags, ZKL__AM_ASLEEP)) {
            op->mu_flags &= ~ZKL__AM_ASLEEP; /* one wake-up is enough */
            zkl__wakefd_wake(op->wfd);
        } else if (op->cv) { /* (not yet running: it looks first anyway) */
            pthread_cond_signal(op->cv);
        }
        return;
    }
    if (op->state == ZKL__RUN_QUEUED || op->state == ZKL__RUN_RUNNING)
        return; /* the runner looks at ready when the step yields */
    op->state = ZKL__RUN_QUEUED;
    op->rnext = NULL;
    if (e->ready_end)
        e->ready_end->rnext = op;
    else
        e->ready = op;
    e->ready_end = op;
    zkl__worker_kick_locked(op->c);
}

void zkl__acq_ready_locked_fn(void *arg)
{
    zkl__acq_ready_locked(arg);
}

/*
 * A bell (noted: an await) rang for op arg of client (inproc.h): its flag
 * set, op ready. op is alive: it lets go of its bell and await before it is
 * freed, under the record's mutex this runs under.
 */
static void rung(void *client, void *arg, bool noted)
{
    zkl_client *c = client;
    zkl__acq *op = arg;
    pthread_mutex_lock(&c->mu);
    if (!ZKL_FAULT(c, DEAF_BELLS, NULL)) {
        if (noted)
            op->mu_flags |= ZKL__AM_NOTED;
        else
            op->mu_flags |= ZKL__AM_BELL;
        zkl__acq_ready_locked(op);
    }
    pthread_mutex_unlock(&c->mu);
}

static void bell_rung(void *client, void *arg)
{
    rung(client, arg, false);
}

bool zkl__acq_bell_at(zkl__acq *op, int32_t seq)
{
    if (op->bell_seq >= 0 && op->bell_seq != seq)
        zkl__inproc_drop(op->inproc, op->bell_seq, op); /* a node of an earlier place */
    if (!zkl__inproc_bell(op->inproc, op->name, seq, bell_rung, op->c, op))
        return false;
    op->bell_seq = seq;
    return true;
}

void zkl__acq_noted(void *client, void *arg)
{
    rung(client, arg, true);
}

void zkl__acq_flight_end(zkl__acq *op)
{
    if (zkl__has(op->flags, ZKL__AF_IN_FLIGHT))
        zkl__inproc_create_done(op->inproc);
    op->flags &= ~ZKL__AF_IN_FLIGHT;
}

void zkl__acq_unawait(zkl__acq *op)
{
    if (zkl__has(op->flags, ZKL__AF_AWAITING))
        zkl__inproc_unawait(op->inproc, op->await_seq, op);
    op->flags &= ~ZKL__AF_AWAITING;
}

int32_t zkl__acq_seq(const zkl__acq *op, const char *name)
{
    int32_t seq;
    return zkl__seq_of(name, op->a.driver->sort_markers, &seq) == ZKL_OK ? seq : -1;
}

bool zkl__acq_alone(zkl__acq *op)
{
    bool alone;
    pthread_mutex_lock(&op->c->mu);
    alone = op->c->engine->nlive <= 1;
    pthread_mutex_unlock(&op->c->mu);
    return alone;
}

void zkl__acq_notify(void *arg)
{
    zkl__acq *op = arg;
    pthread_mutex_lock(&op->c->mu);
    zkl__acq_ready_locked(op);
    pthread_mutex_unlock(&op->c->mu);
}

void zkl__acq_track(zkl__acq *op, zkl__req *k, int send_rc)
{
    op->k[op->nk] = k;
    op->rcs[op->nk] = send_rc;
    op->nk++;
}

bool zkl__acq_answered(zkl__acq *op)
{
    bool all = true;
    int i;
    for (i = 0; i < op->nk; i++)
        if (op->k[i] && !zkl__req_done(op->k[i], &op->rcs[i]))
            all = false;
    if (all)
        return true;
    if (zkl__now_ms() < op->call_until) {
        if (op->call_until < op->wake_ms)
            op->wake_ms = op->call_until;
        return false;
    }
    /* a silent link can hold a reply back for most of a session timeout:
     * retryable, as the request may still be applied */
    for (i = 0; i < op->nk; i++)
        if (op->k[i] && !zkl__req_done(op->k[i], &op->rcs[i]))
            op->rcs[i] = ZOPERATIONTIMEOUT;
    return true;
}

bool zkl__acq_listing(zkl__acq *op, int *rc)
{
    if (!zkl__acq_answered(op))
        return false;
    *rc = op->rcs[0];
    if (*rc == ZOK)
        zkl__req_take_kids(op->k[0], &op->kids);
    zkl__acq_untrack(op);
    return true;
}

void zkl__acq_untrack(zkl__acq *op)
{
    int i;
    for (i = 0; i < op->nk; i++)
        if (op->k[i])
            zkl__req_drop(op->k[i]);
    op->nk = 0;
    op->k[0] = op->k[1] = op->k[2] = NULL;
}

bool zkl__acq_sleep(zkl__acq *op, int64_t at)
{
    if (zkl__now_ms() >= at)
        return true;
    if (at < op->wake_ms)
        op->wake_ms = at;
    return false;
}

bool zkl__acq_changed(zkl__acq *op)
{
    zkl_client *c = op->c;
    bool changed;
    pthread_mutex_lock(&c->mu);
    changed = c->conn.state_gen != op->since_gen || c->canceled || c->closing ||
              zkl__has(op->mu_flags, ZKL__AM_CANCEL);
    pthread_mutex_unlock(&c->mu);
    return changed;
}

bool zkl__armed_new(zkl__acq *op, zkl__armed *x, const char *name)
{
    x->name = name ? strdup(name) : NULL;
    if ((name && !x->name) || !(x->w = zkl__watch_new(op->s))) {
        zkl__armed_clear(x);
        return false;
    }
    zkl__watch_notify(x->w, zkl__acq_ready_locked_fn, op);
    return true;
}

void zkl__armed_clear(zkl__armed *x)
{
    if (x->w)
        zkl__watch_drop(x->w);
    free(x->name);
    x->w = NULL;
    x->name = NULL;
    x->ours = false;
    x->persistent = false;
    x->owner = 0;
}

int64_t zkl__session_id(zkl__session *s)
{
    int64_t id;
    pthread_mutex_lock(&s->c->mu);
    id = s->id;
    pthread_mutex_unlock(&s->c->mu);
    return id;
}

bool zkl__acq_canceled(zkl__acq *op)
{
    bool canceled;
    pthread_mutex_lock(&op->c->mu);
    canceled = op->c->canceled || zkl__has(op->mu_flags, ZKL__AM_CANCEL);
    pthread_mutex_unlock(&op->c->mu);
    return canceled;
}

zkl_status zkl__acq_gave_up(zkl__acq *op, const char *doing)
{
    zkl_client *c = op->c;
    if (zkl__acq_canceled(op))
        return zkl__fail(ZKL_ECANCELED, "%s %s was canceled", doing, op->a.path);
    /* (a wait's retries end only at its deadline: session/backoff.c) */
    return zkl__fail(ZKL_ETIMEDOUT, "timed out %s %s%s", doing, op->a.path, zkl__conn_note(c));
}
