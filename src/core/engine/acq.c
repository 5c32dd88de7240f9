/*
 * acq.c - what the steps of an acquire share (acq.h): readiness, the requests
 * an operation has in flight, its timers, its watches, and how it gives up.
 * The engine (engine.c) runs operations; this file only marks them ready
 * (a reply, a watch; a bell rings through the room: room.c).
 */
#include <stdlib.h>
#include <string.h>
#include <utlist.h>

#include "base/status.h"
#include "base/util.h"
#include "base/wakefd.h"
#include "core/engine/acq.h"

void zkl__acq_ready_locked(zkl__acq *aq)
{
    struct zkl__engine *e = aq->c->engine;
    aq->mu_flags |= ZKL__AM_READY;
    if (aq->state == ZKL__RUN_DONE)
        return;
    if (zkl__has(aq->mu_flags, ZKL__AM_BLOCKING)) {
        if (zkl__has(aq->mu_flags, ZKL__AM_ASLEEP)) {
            aq->mu_flags &= ~ZKL__AM_ASLEEP; /* one wake-up is enough */
            zkl__wakefd_wake(aq->wfd);
        } else if (aq->cv) { /* (not yet running: it looks first anyway) */
            pthread_cond_signal(aq->cv);
        }
        return;
    }
    if (aq->state == ZKL__RUN_QUEUED || aq->state == ZKL__RUN_RUNNING)
        return; /* the runner looks at ready when the step yields */
    aq->state = ZKL__RUN_QUEUED;
    aq->rnext = NULL;
    if (e->ready_end)
        e->ready_end->rnext = aq;
    else
        e->ready = aq;
    e->ready_end = aq;
    zkl__worker_kick_locked(aq->c);
}

void zkl__acq_ready_locked_fn(void *arg)
{
    zkl__acq_ready_locked(arg);
}

int32_t zkl__acq_seq(const zkl__acq *aq, const char *name)
{
    int32_t seq;
    return zkl__seq_of(name, aq->a.driver->sort_markers, &seq) == ZKL_OK ? seq : -1;
}

bool zkl__acq_alone(zkl__acq *aq)
{
    bool alone;
    pthread_mutex_lock(&aq->c->mu);
    alone = aq->c->engine->nlive <= 1;
    pthread_mutex_unlock(&aq->c->mu);
    return alone;
}

void zkl__acq_notify(void *arg)
{
    zkl__acq *aq = arg;
    pthread_mutex_lock(&aq->c->mu);
    zkl__acq_ready_locked(aq);
    pthread_mutex_unlock(&aq->c->mu);
}

void zkl__acq_track(zkl__acq *aq, zkl__req *k, int send_rc)
{
    aq->k[aq->nk] = k;
    aq->rcs[aq->nk] = send_rc;
    aq->nk++;
}

bool zkl__acq_answered(zkl__acq *aq)
{
    bool all = true;
    int i;
    for (i = 0; i < aq->nk; i++)
        if (aq->k[i] && !zkl__req_done(aq->k[i], &aq->rcs[i]))
            all = false;
    if (all)
        return true;
    if (zkl__now_ms() < aq->call_until) {
        if (aq->call_until < aq->wake_ms)
            aq->wake_ms = aq->call_until;
        return false;
    }
    /* a silent link can hold a reply back for most of a session timeout:
     * retryable, as the request may still be applied */
    for (i = 0; i < aq->nk; i++)
        if (aq->k[i] && !zkl__req_done(aq->k[i], &aq->rcs[i]))
            aq->rcs[i] = ZOPERATIONTIMEOUT;
    return true;
}

bool zkl__acq_listing(zkl__acq *aq, int *rc)
{
    if (!zkl__acq_answered(aq))
        return false;
    *rc = aq->rcs[0];
    if (*rc == ZOK)
        zkl__req_take_kids(aq->k[0], &aq->kids);
    zkl__acq_untrack(aq);
    return true;
}

void zkl__acq_untrack(zkl__acq *aq)
{
    int i;
    for (i = 0; i < aq->nk; i++)
        if (aq->k[i])
            zkl__req_drop(aq->k[i]);
    aq->nk = 0;
    aq->k[0] = aq->k[1] = aq->k[2] = NULL;
}

bool zkl__acq_sleep(zkl__acq *aq, int64_t at)
{
    if (zkl__now_ms() >= at)
        return true;
    if (at < aq->wake_ms)
        aq->wake_ms = at;
    return false;
}

bool zkl__acq_changed(zkl__acq *aq)
{
    zkl_client *c = aq->c;
    bool changed;
    pthread_mutex_lock(&c->mu);
    changed = c->conn.state_gen != aq->since_gen || c->canceled || c->closing ||
              zkl__has(aq->mu_flags, ZKL__AM_CANCEL);
    pthread_mutex_unlock(&c->mu);
    return changed;
}

bool zkl__armed_new(zkl__acq *aq, zkl__armed *x, const char *name)
{
    /* our own node's name lives as long as the node, which outlives its
     * slot: every path that lets go of the node clears the slots first
     * (grant.c's leave_place) */
    x->borrowed = name && name == aq->name;
    x->name = x->borrowed ? (char *)aq->name : name ? strdup(name) : NULL;
    if ((name && !x->name) || !(x->w = zkl__watch_new(aq->s))) {
        zkl__armed_clear(x);
        return false;
    }
    zkl__watch_notify(x->w, zkl__acq_ready_locked_fn, aq);
    return true;
}

void zkl__armed_clear(zkl__armed *x)
{
    if (x->w)
        zkl__watch_drop(x->w);
    if (!x->borrowed)
        free(x->name);
    x->w = NULL;
    x->name = NULL;
    x->borrowed = false;
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

bool zkl__acq_canceled(zkl__acq *aq)
{
    bool canceled;
    pthread_mutex_lock(&aq->c->mu);
    canceled = aq->c->canceled || zkl__has(aq->mu_flags, ZKL__AM_CANCEL);
    pthread_mutex_unlock(&aq->c->mu);
    return canceled;
}

zkl_status zkl__acq_gave_up(zkl__acq *aq, const char *doing)
{
    zkl_client *c = aq->c;
    if (zkl__acq_canceled(aq))
        return zkl__fail(ZKL_ECANCELED, "%s %s was canceled", doing, aq->a.path);
    /* (a wait's retries end only at its deadline: session/backoff.c) */
    return zkl__fail(ZKL_ETIMEDOUT, "timed out %s %s%s", doing, aq->a.path, zkl__conn_note(c));
}
