/*
 * events.c - the client's connection events: queued by the session watcher
 * under c->mu, told by the worker to the user's state callback and to the
 * recipes' listeners (their lost-lock notices), oldest first; and the
 * frames that say a thread is inside a user callback.
 */
#include <stdlib.h>

#include "session/client.h"

static _Thread_local zkl__cb_frame *cb_top; /* the innermost callback this thread runs */

void zkl__cb_enter(zkl__cb_frame *f, zkl_client *c)
{
    f->c = c;
    f->up = cb_top;
    cb_top = f;
}

void zkl__cb_leave(zkl__cb_frame *f)
{
    cb_top = f->up;
}

bool zkl__in_callback(const zkl_client *c)
{
    const zkl__cb_frame *f;
    for (f = cb_top; f; f = f->up)
        if (f->c == c)
            return true;
    return false;
}

void zkl__event_push_locked(zkl_client *c, const zkl__session *s, zkl_conn_state st)
{
    c->conn.state = st;
    if (st == ZKL_STATE_LOST)
        atomic_fetch_add(&c->tally.sessions_lost, 1);
    else if (st == ZKL_STATE_LEASE_EXPIRED)
        atomic_store(&c->conn.lease_expired_epoch, s->epoch);
    if (c->conn.evq_len == ZKL_EVQ_MAX) { /* callback far behind: keep the newest */
        c->conn.evq_head = (c->conn.evq_head + 1) % ZKL_EVQ_MAX;
        c->conn.evq_len--;
    }
    c->conn.evq[(c->conn.evq_head + c->conn.evq_len) % ZKL_EVQ_MAX].state = st;
    c->conn.evq[(c->conn.evq_head + c->conn.evq_len) % ZKL_EVQ_MAX].epoch = s->epoch;
    c->conn.evq_len++;
}

void zkl__events_clear_locked(zkl_client *c)
{
    c->conn.evq_len = 0;
    c->conn.evq_head = 0;
}

static void dispatch_listeners(zkl_client *c, zkl__event ev)
{
    int i, j;
    pthread_mutex_lock(&c->lsn.mu);
    for (i = 0; i < c->lsn.n; i++) {
        zkl__listener l = c->lsn.v[i];
        if (!l.removed)
            l.fn(ev.state, ev.epoch, l.ctx);
    }
    for (i = j = 0; i < c->lsn.n; i++) /* drop those removed meanwhile */
        if (!c->lsn.v[i].removed)
            c->lsn.v[j++] = c->lsn.v[i];
    c->lsn.n = j;
    pthread_mutex_unlock(&c->lsn.mu);
}

int64_t zkl__events_turn(zkl_client *c)
{
    zkl__event ev;
    if (c->conn.evq_len == 0)
        return INT64_MAX;
    ev = c->conn.evq[c->conn.evq_head];
    c->conn.evq_head = (c->conn.evq_head + 1) % ZKL_EVQ_MAX;
    c->conn.evq_len--;
    if ((ev.state == ZKL_STATE_LOST || ev.state == ZKL_STATE_LEASE_EXPIRED) &&
        c->hooks.holds_lost_locked) /* counted before anyone is told */
        c->hooks.holds_lost_locked(c, ev.epoch, ev.state == ZKL_STATE_LEASE_EXPIRED);
    pthread_mutex_unlock(&c->mu);
    if (c->cfg.opts.on_state)
        c->cfg.opts.on_state(c, ev.state, c->cfg.opts.state_userdata);
    dispatch_listeners(c, ev);
    pthread_mutex_lock(&c->mu);
    return 0;
}

int zkl__listener_add(zkl_client *c, zkl__listener_fn fn, void *ctx)
{
    int id;
    zkl__listener *l;
    pthread_mutex_lock(&c->lsn.mu);
    if (c->lsn.n == c->lsn.cap) {
        int cap = c->lsn.cap ? c->lsn.cap * 2 : 8;
        zkl__listener *v = realloc(c->lsn.v, (size_t)cap * sizeof *v);
        if (!v) {
            pthread_mutex_unlock(&c->lsn.mu);
            return 0;
        }
        c->lsn.v = v;
        c->lsn.cap = cap;
    }
    id = ++c->lsn.next_id;
    l = &c->lsn.v[c->lsn.n++];
    l->fn = fn;
    l->ctx = ctx;
    l->id = id;
    l->removed = false;
    pthread_mutex_unlock(&c->lsn.mu);
    return id;
}

void zkl__listener_remove(zkl_client *c, int id)
{
    int i;
    pthread_mutex_lock(&c->lsn.mu); /* recursive: fine from inside a listener */
    for (i = 0; i < c->lsn.n; i++)
        if (c->lsn.v[i].id == id)
            c->lsn.v[i].removed = true;
    pthread_mutex_unlock(&c->lsn.mu);
}
