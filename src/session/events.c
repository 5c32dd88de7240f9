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
    c->state = st;
    if (st == ZKL_STATE_LOST)
        atomic_fetch_add(&c->sessions_lost, 1);
    else if (st == ZKL_STATE_LEASE_EXPIRED)
        atomic_store(&c->lease_expired_epoch, s->epoch);
    if (c->evq_len == ZKL_EVQ_MAX) { /* callback far behind: keep the newest */
        c->evq_head = (c->evq_head + 1) % ZKL_EVQ_MAX;
        c->evq_len--;
    }
    c->evq[(c->evq_head + c->evq_len) % ZKL_EVQ_MAX].state = st;
    c->evq[(c->evq_head + c->evq_len) % ZKL_EVQ_MAX].epoch = s->epoch;
    c->evq_len++;
}

void zkl__events_clear_locked(zkl_client *c)
{
    c->evq_len = 0;
    c->evq_head = 0;
}

static void dispatch_listeners(zkl_client *c, zkl__event ev)
{
    int i, j;
    pthread_mutex_lock(&c->listen_mu);
    for (i = 0; i < c->n_listeners; i++) {
        zkl__listener l = c->listeners[i];
        if (!l.removed)
            l.fn(ev.state, ev.epoch, l.ctx);
    }
    for (i = j = 0; i < c->n_listeners; i++) /* drop those removed meanwhile */
        if (!c->listeners[i].removed)
            c->listeners[j++] = c->listeners[i];
    c->n_listeners = j;
    pthread_mutex_unlock(&c->listen_mu);
}

int64_t zkl__events_turn(zkl_client *c)
{
    zkl__event ev;
    if (c->evq_len == 0)
        return INT64_MAX;
    ev = c->evq[c->evq_head];
    c->evq_head = (c->evq_head + 1) % ZKL_EVQ_MAX;
    c->evq_len--;
    if ((ev.state == ZKL_STATE_LOST || ev.state == ZKL_STATE_LEASE_EXPIRED) &&
        c->hooks.holds_lost_locked) /* counted before anyone is told */
        c->hooks.holds_lost_locked(c, ev.epoch, ev.state == ZKL_STATE_LEASE_EXPIRED);
    pthread_mutex_unlock(&c->mu);
    if (c->opts.on_state)
        c->opts.on_state(c, ev.state, c->opts.state_userdata);
    dispatch_listeners(c, ev);
    pthread_mutex_lock(&c->mu);
    return 0;
}

int zkl__listener_add(zkl_client *c, zkl__listener_fn fn, void *ctx)
{
    int id;
    zkl__listener *l;
    pthread_mutex_lock(&c->listen_mu);
    if (c->n_listeners == c->cap_listeners) {
        int cap = c->cap_listeners ? c->cap_listeners * 2 : 8;
        zkl__listener *v = realloc(c->listeners, (size_t)cap * sizeof *v);
        if (!v) {
            pthread_mutex_unlock(&c->listen_mu);
            return 0;
        }
        c->listeners = v;
        c->cap_listeners = cap;
    }
    id = ++c->next_listener_id;
    l = &c->listeners[c->n_listeners++];
    l->fn = fn;
    l->ctx = ctx;
    l->id = id;
    l->removed = false;
    pthread_mutex_unlock(&c->listen_mu);
    return id;
}

void zkl__listener_remove(zkl_client *c, int id)
{
    int i;
    pthread_mutex_lock(&c->listen_mu); /* recursive: fine from inside a listener */
    for (i = 0; i < c->n_listeners; i++)
        if (c->listeners[i].id == id)
            c->listeners[i].removed = true;
    pthread_mutex_unlock(&c->listen_mu);
}
