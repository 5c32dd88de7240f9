/*
 * watch.c - watch tokens: one per data or child watch a waiter sets, shared
 * by the waiter and the ZooKeeper client (two references), kept on their
 * session's list so that a closed session's tokens are freed with it.
 */
#include <errno.h>
#include <stdlib.h>
#include <utlist.h>

#include "base/tsan.h"
#include "base/util.h"
#include "session/client.h"
#include "session/transport.h"

zkl__watch *zkl__watch_new(zkl__session *s)
{
    zkl__watch *w = calloc(1, sizeof *w);
    zkl_client *c = s->c;
    if (!w)
        return NULL;
    w->s = s;
    w->refs = 2;
    pthread_mutex_lock(&c->mu);
    DL_PREPEND(s->watches, w);
    pthread_mutex_unlock(&c->mu);
    ZKL_PUBLISH(w);
    return w;
}

/* Caller holds c->mu. */
static void watch_unref_locked(zkl__watch *w)
{
    if (--w->refs > 0)
        return;
    DL_DELETE(w->s->watches, w);
    free(w);
}

void zkl__watch_notify(zkl__watch *w, void (*fn)(void *arg), void *arg)
{
    zkl_client *c = w->s->c;
    pthread_mutex_lock(&c->mu);
    w->notify_locked = fn;
    w->notify_arg = arg;
    pthread_mutex_unlock(&c->mu);
}

void zkl__watch_drop(zkl__watch *w)
{
    zkl_client *c = w->s->c;
    pthread_mutex_lock(&c->mu);
    w->notify_locked = NULL; /* its owner is going: a late event tells nobody */
    watch_unref_locked(w);
    pthread_mutex_unlock(&c->mu);
}

void zkl__watch_unregistered(zkl__watch *w)
{
    zkl_client *c = w->s->c;
    pthread_mutex_lock(&c->mu);
    watch_unref_locked(w);
    pthread_mutex_unlock(&c->mu);
}

void zkl__watches_free_locked(zkl__session *s)
{
    zkl__watch *w, *next;
    DL_FOREACH_SAFE(s->watches, w, next)
    {
        DL_DELETE(s->watches, w);
        free(w);
    }
}

static void watch_fire(zkl__watch *w, int type);

static void watch_fire_later(zkl__delivery *d)
{
    watch_fire(d->p, d->a);
}

void zkl__watch_fn(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
    zkl__watch *w = ctx;
    ZKL_RECEIVED(w);
    (void)zh;
    (void)state;
    (void)path;
    /* Session events reach every watcher but leave it registered; the
     * session watcher already bumped state_gen for those. */
    if (type == ZOO_SESSION_EVENT)
        return;
    w->fire = (zkl__delivery){.fn = watch_fire_later, .p = w, .a = type};
    if (!zkl__defer(&w->fire))
        watch_fire(w, type);
}

static void watch_fire(zkl__watch *w, int type)
{
    zkl_client *c = w->s->c;
    pthread_mutex_lock(&c->mu);
    c->tally.watch_events++;
    w->fired = true;
    w->deleted = type == ZOO_DELETED_EVENT;
    pthread_cond_broadcast(&c->cv);
    if (w->notify_locked)
        w->notify_locked(w->notify_arg);
    watch_unref_locked(w);
    pthread_mutex_unlock(&c->mu);
}

bool zkl__watch_fired(zkl__watch *w, uint64_t gen, bool *deleted_only)
{
    zkl_client *c = w->s->c;
    bool fired;
    pthread_mutex_lock(&c->mu);
    fired = w->fired;
    *deleted_only = fired && w->deleted && c->conn.state_gen == gen && !c->conn.sess->expired &&
                    !c->canceled && w->s == c->conn.sess;
    pthread_mutex_unlock(&c->mu);
    return fired;
}
