/*
 * lockobj.c - see lockobj.h.
 */
#include <stdlib.h>
#include <string.h>
#include <utlist.h>

#include "base/path.h"
#include "base/status.h"
#include "base/util.h"
#include "core/engine/room.h"
#include "core/objects/lockobj.h"

zkl_status zkl__lockobj_new(size_t size, const char *fn, const void *out, zkl_client *c,
                            const char *path, bool (*mine)(void *self, uint64_t epoch),
                            zkl__lockobj **obj)
{
    zkl__lockobj *o;
    zkl_status st;
    *obj = NULL;
    if (!out)
        return zkl__fail(ZKL_EINVAL, "%s: out is NULL", fn);
    if (!c)
        return zkl__fail(ZKL_EINVAL, "%s: client is NULL", fn);
    st = zkl__path_validate(path);
    if (st != ZKL_OK)
        return st;
    if (!(o = calloc(1, size)) || !(o->path = strdup(path))) {
        free(o);
        return zkl__fail(ZKL_ENOMEM, "out of memory");
    }
    o->c = c;
    o->size = size;
    o->self = o;
    o->mine = mine;
    /* what is noted of the line outlives an acquire while the object lives
     * (room.h; NULL with the room off, or without memory: only hints are lost) */
    zkl__room_note(ZKL__NOTE_OBJECT, NULL, &(zkl__room_obj){c, o->path, &o->inproc});
    zkl__client_ref(c);
    pthread_mutex_lock(&c->mu);
    DL_APPEND(c->objs, o);
    c->hooks.holds_lost_locked = zkl__stats_lost_locked; /* its holds' losses, when told */
    pthread_mutex_unlock(&c->mu);
    *obj = o;
    return ZKL_OK;
}

zkl_status zkl__lockobj_add_part(zkl__lockobj *o, const char *side, unsigned traits,
                                 zkl__lockstats **stats)
{
    zkl__series *s = zkl__series_get(o->c, o->path, side, traits);
    if (!s)
        return zkl__fail(ZKL_ENOMEM, "out of memory");
    o->part[o->nparts++] = s;
    *stats = &s->stats;
    return ZKL_OK;
}

void zkl__lockobj_detach(zkl__lockobj *o)
{
    /* (in a fork()ed child no worker calls it, and lsn.mu may be held by
     * a thread that is not here) */
    if (o->listener && !zkl__forked(o->c))
        zkl__listener_remove(o->c, o->listener);
    o->listener = 0;
}

void zkl__lockobj_free(zkl__lockobj *o)
{
    if (!o)
        return;
    zkl__lockobj_detach(o);
    zkl__stats_forget(o->c, o, o->size); /* holds never released (lost, or a fork's) */
    for (int i = 0; i < o->nparts; i++)
        zkl__series_put(o->c, o->part[i]);
    pthread_mutex_lock(&o->c->mu);
    DL_DELETE(o->c->objs, o);
    pthread_mutex_unlock(&o->c->mu);
    zkl__client_unref(o->c);
    zkl__room_note(ZKL__NOTE_OBJECT_GONE, NULL, &(zkl__room_obj){o->c, o->path, &o->inproc});
    free(o->path);
    free(o);
}

void zkl__lockobj_enter(zkl__lockobj *o)
{
    pthread_mutex_lock(&o->c->mu);
    o->inside++;
    pthread_mutex_unlock(&o->c->mu);
}

void zkl__lockobj_leave(zkl__lockobj *o)
{
    pthread_mutex_lock(&o->c->mu);
    o->inside--;
    pthread_mutex_unlock(&o->c->mu);
}

zkl_status zkl__lockobj_idle(zkl__lockobj *o, const char *fn)
{
    int n;
    if (zkl__forked(o->c)) /* those threads are the parent's */
        return ZKL_OK;
    pthread_mutex_lock(&o->c->mu);
    n = o->inside;
    pthread_mutex_unlock(&o->c->mu);
    if (n == 0)
        return ZKL_OK;
    return zkl__fail(ZKL_EBUSY,
                     "%s: %d thread(s) are inside a call on %s (an acquire waiting, or a query "
                     "of the server): cancel them (zkl_client_cancel) and destroy it once they "
                     "have returned",
                     fn, n, o->path);
}

/* A connection event: told to the callback if the object holds in its session. */
static void on_event(zkl_conn_state st, uint64_t epoch, void *ctx)
{
    zkl__lockobj *o = ctx;
    if (st != ZKL_STATE_CONNECTED && o->state_fn && o->mine(o->self, epoch))
        o->state_fn(o->self, st, o->state_ud);
}

zkl_status zkl__lockobj_on_state(zkl__lockobj *o, zkl_hold_state_fn fn, void *userdata)
{
    if (o->listener)
        zkl__listener_remove(o->c, o->listener);
    o->listener = 0;
    o->state_fn = fn;
    o->state_ud = userdata;
    if (fn && !(o->listener = zkl__listener_add(o->c, on_event, o)))
        return zkl__fail(ZKL_ENOMEM, "out of memory");
    return ZKL_OK;
}

zkl_status zkl__check_timeout(int timeout_ms, const char *fn)
{
    if (timeout_ms < ZKL_WAIT_FOREVER)
        return zkl__fail(ZKL_EINVAL, "%s: timeout %d ms is negative", fn, timeout_ms);
    return ZKL_OK;
}
