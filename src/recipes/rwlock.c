/*
 * rwlock.c - zkl_rwlock, Curator's InterProcessReadWriteLock: two reentrant
 * sides over one path, the core's read and write drivers (core/policy/drivers.c),
 * and the downgrade of a writer to a reader (Curator 5.5).
 */
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/path.h"
#include "core/async/async.h"
#include "core/objects/lockobj.h"
#include "recipes/sides.h"
#include "core/objects/reentrant.h"
#include "base/status.h"
#include "zklock/rwlock.h"

struct zkl_rwlock {
    zkl__lockobj obj;
    zkl__side read, write;
};

static bool holds_in(void *self, uint64_t epoch)
{
    zkl_rwlock *l = self;
    return zkl__holders_in_epoch(&l->read.holders, epoch) ||
           zkl__holders_in_epoch(&l->write.holders, epoch) || zkl__side_async_in(&l->read, epoch) ||
           zkl__side_async_in(&l->write, epoch);
}

zkl_status zkl_rwlock_create(zkl_client *c, const char *path, zkl_rwlock **out)
{
    ZKL__REFUSE_IN_LOG();
    zkl_rwlock *l;
    zkl__lockobj *obj;
    zkl__lockstats *rs, *ws;
    zkl_status st;
    zkl__clear_err();
    if (out)
        *out = NULL;
    st = zkl__lockobj_new(sizeof *l, "zkl_rwlock_create", out, c, path, holds_in, &obj);
    if (st != ZKL_OK || !out) /* (new refuses a NULL out) */
        return st;
    l = (zkl_rwlock *)obj; /* its first member */
    /* (readers share: only the write side passes holds on) */
    if ((st = zkl__lockobj_add_part(&l->obj, "read", 0, &rs)) != ZKL_OK ||
        (st = zkl__lockobj_add_part(&l->obj, "write", ZKL__PART_HANDOFFS, &ws)) != ZKL_OK) {
        zkl__lockobj_free(&l->obj);
        return st;
    }
    zkl__side_init(&l->read, c, l->obj.path, &zkl__read_driver);
    zkl__side_init(&l->write, c, l->obj.path, &zkl__write_driver);
    l->read.stats = rs;
    l->write.stats = ws;
    /* Hand-offs between writers and readers need no listing on their path;
     * the look-ahead's request keeps a pair below Curator's count. */
    l->read.lookahead = ZKL__LOOKAHEAD_ON;
    l->write.lookahead = ZKL__LOOKAHEAD_ON;
    *out = l;
    return ZKL_OK;
}

zkl_status zkl_rwlock_destroy(zkl_rwlock *l)
{
    ZKL__REFUSE_IN_LOG();
    unsigned n;
    zkl_status st;
    zkl__clear_err();
    if (!l)
        return zkl__fail(ZKL_EINVAL, "zkl_rwlock_destroy: lock is NULL");
    if ((st = zkl__lockobj_idle(&l->obj, "zkl_rwlock_destroy")) != ZKL_OK)
        return st;
    n = 0; /* (in a fork()ed child its holds and handles are the parent's: it goes) */
    if (!zkl__forked(l->obj.c)) {
        n = zkl__holders_count(&l->read.holders) + zkl__holders_count(&l->write.holders);
        n += (unsigned)(zkl__side_async_ops(&l->read) + zkl__side_async_ops(&l->write));
    }
    if (n > 0)
        return zkl__fail(ZKL_EBUSY, "zkl_rwlock_destroy: %s has %u hold(s) or async handle(s)",
                         l->obj.path, n);
    zkl__lockobj_detach(&l->obj); /* the worker may be about to tell it an event */
    zkl__side_destroy(&l->read);
    zkl__side_destroy(&l->write);
    zkl__lockobj_free(&l->obj);
    return ZKL_OK;
}

/* A side's acquire, counted as a thread inside a call on l (zkl_rwlock_destroy). */
static zkl_status acquire_in(zkl_rwlock *l, zkl__side *sd, int timeout_ms, const void *ctx,
                             const char *fixed_suffix)
{
    zkl_status st;
    zkl__lockobj_enter(&l->obj);
    st = zkl__side_acquire(sd, timeout_ms, ctx, fixed_suffix);
    zkl__lockobj_leave(&l->obj);
    return st;
}

zkl_status zkl_rwlock_read_acquire(zkl_rwlock *l, int timeout_ms)
{
    ZKL__REFUSE_IN_LOG();
    zkl__hold w;
    zkl_status st;
    zkl__clear_err();
    if (!l)
        return zkl__fail(ZKL_EINVAL, "zkl_rwlock_read_acquire: lock is NULL");
    st = zkl__check_timeout(timeout_ms, "zkl_rwlock_read_acquire");
    if (st != ZKL_OK)
        return st;
    if (zkl__side_has_entry(&l->read))
        return acquire_in(l, &l->read, timeout_ms, NULL, NULL);
    st = zkl__side_current(&l->write, &w);
    if (st == ZKL_ENOMEM) /* not "no write hold": a plain read would queue behind our own writer */
        return st;
    if (st != ZKL_OK) /* no write hold, or one lost with its session (its node is gone) */
        return acquire_in(l, &l->read, timeout_ms, NULL, NULL);
    /* Downgrade path (Curator 5.5, CURATOR-621): a plain ephemeral read node
     * named after our write node's sequence, so it takes the writer's place
     * in line and no queued writer can get in when the write side goes. */
    {
        const char *name = zkl__path_basename(w.node);
        const char *seq = strstr(name, ZKL_WRITE_MARKER);
        st = seq ? acquire_in(l, &l->read, timeout_ms, name, seq + strlen(ZKL_WRITE_MARKER))
                 : zkl__fail(ZKL_EZK, "own write node '%s' has no sequence", name);
    }
    free(w.node);
    return st;
}

zkl_status zkl_rwlock_read_acquire_async(zkl_rwlock *l, int timeout_ms, zkl_op_fn fn,
                                         void *userdata, zkl_op **op)
{
    ZKL__REFUSE_IN_LOG();
    zkl__clear_err();
    if (!l) {
        if (op)
            *op = NULL;
        return zkl__fail(ZKL_EINVAL, "zkl_rwlock_read_acquire_async: lock is NULL");
    }
    return zkl__async_side_acquire(&l->read, timeout_ms, fn, userdata,
                                   "zkl_rwlock_read_acquire_async", op);
}

zkl_status zkl_rwlock_write_acquire_async(zkl_rwlock *l, int timeout_ms, zkl_op_fn fn,
                                          void *userdata, zkl_op **op)
{
    ZKL__REFUSE_IN_LOG();
    zkl__clear_err();
    if (!l) {
        if (op)
            *op = NULL;
        return zkl__fail(ZKL_EINVAL, "zkl_rwlock_write_acquire_async: lock is NULL");
    }
    return zkl__async_side_acquire(&l->write, timeout_ms, fn, userdata,
                                   "zkl_rwlock_write_acquire_async", op);
}

zkl__side *zkl__rwlock_side(zkl_rwlock *l, bool write)
{
    return write ? &l->write : &l->read;
}

zkl_status zkl_rwlock_read_release(zkl_rwlock *l)
{
    ZKL__REFUSE_IN_LOG();
    zkl__clear_err();
    if (!l)
        return zkl__fail(ZKL_EINVAL, "zkl_rwlock_read_release: lock is NULL");
    return zkl__side_release(&l->read);
}

zkl_status zkl_rwlock_write_acquire(zkl_rwlock *l, int timeout_ms)
{
    ZKL__REFUSE_IN_LOG();
    zkl_status st;
    zkl__clear_err();
    if (!l)
        return zkl__fail(ZKL_EINVAL, "zkl_rwlock_write_acquire: lock is NULL");
    st = zkl__check_timeout(timeout_ms, "zkl_rwlock_write_acquire");
    if (st != ZKL_OK)
        return st;
    if (zkl__side_has_entry(&l->read) && !zkl__side_has_entry(&l->write))
        return zkl__fail(ZKL_EDEADLOCK,
                         "%s: this thread holds the read lock; a write acquire would wait for "
                         "itself forever (release the read lock first)",
                         l->obj.path);
    return acquire_in(l, &l->write, timeout_ms, NULL, NULL);
}

zkl_status zkl_rwlock_write_release(zkl_rwlock *l)
{
    ZKL__REFUSE_IN_LOG();
    zkl__clear_err();
    if (!l)
        return zkl__fail(ZKL_EINVAL, "zkl_rwlock_write_release: lock is NULL");
    /* a downgraded writer's read node shares the write node's place */
    return zkl__side_release_ex(&l->write, !zkl__side_has_entry(&l->read));
}

zkl_status zkl_rwlock_set_write_local_handoff(zkl_rwlock *l, int max_streak, int max_ms)
{
    ZKL__REFUSE_IN_LOG();
    zkl__clear_err();
    if (!l)
        return zkl__fail(ZKL_EINVAL, "zkl_rwlock_set_write_local_handoff: lock is NULL");
    return zkl__side_local_handoff(&l->write, max_streak, max_ms,
                                   "zkl_rwlock_set_write_local_handoff");
}

uint64_t zkl_rwlock_write_local_handoffs(zkl_rwlock *l)
{
    ZKL__REFUSE_IN_LOG_AS(0);
    return l ? zkl__side_local_handoffs(&l->write) : 0;
}

bool zkl_rwlock_read_is_held(zkl_rwlock *l)
{
    ZKL__REFUSE_IN_LOG_AS(false);
    return l && zkl__side_is_held(&l->read);
}

bool zkl_rwlock_write_is_held(zkl_rwlock *l)
{
    ZKL__REFUSE_IN_LOG_AS(false);
    return l && zkl__side_is_held(&l->write);
}

zkl_status zkl_rwlock_write_fencing_token(zkl_rwlock *l, int64_t *token)
{
    ZKL__REFUSE_IN_LOG();
    zkl_status st;
    zkl__clear_err();
    if (!l || !token)
        return zkl__fail(ZKL_EINVAL, "zkl_rwlock_write_fencing_token: NULL argument");
    zkl__lockobj_enter(&l->obj); /* (the first may ask the server) */
    st = zkl__side_token(&l->write, token);
    zkl__lockobj_leave(&l->obj);
    return st;
}

zkl_status zkl_rwlock_read_fencing_token(zkl_rwlock *l, int64_t *token)
{
    ZKL__REFUSE_IN_LOG();
    zkl_status st;
    zkl__clear_err();
    if (!l || !token)
        return zkl__fail(ZKL_EINVAL, "zkl_rwlock_read_fencing_token: NULL argument");
    zkl__lockobj_enter(&l->obj); /* (the first may ask the server) */
    st = zkl__side_token(&l->read, token);
    zkl__lockobj_leave(&l->obj);
    return st;
}

static zkl_status side_node(zkl_rwlock *l, bool write, char **node)
{
    const char *fn = write ? "zkl_rwlock_write_node" : "zkl_rwlock_read_node";
    zkl_status st;
    zkl__clear_err();
    if (!l || !node)
        return zkl__fail(ZKL_EINVAL, "%s: NULL argument", fn);
    zkl__lockobj_enter(&l->obj);
    st = zkl__side_node(write ? &l->write : &l->read, node);
    zkl__lockobj_leave(&l->obj);
    return st;
}

zkl_status zkl_rwlock_write_node(zkl_rwlock *l, char **node)
{
    ZKL__REFUSE_IN_LOG();
    return side_node(l, true, node);
}

zkl_status zkl_rwlock_read_node(zkl_rwlock *l, char **node)
{
    ZKL__REFUSE_IN_LOG();
    return side_node(l, false, node);
}

/* The calling thread's hold of side sd of l, guarding w. */
static zkl_status guarded(zkl_rwlock *l, bool write, zkl_write *w, size_t n, size_t *failed)
{
    const char *fn = write ? "zkl_rwlock_write_guarded_write" : "zkl_rwlock_read_guarded_write";
    zkl_status st;
    zkl__clear_err();
    if (failed)
        *failed = SIZE_MAX;
    if (!l)
        return zkl__fail(ZKL_EINVAL, "%s: lock is NULL", fn);
    zkl__lockobj_enter(&l->obj);
    st = zkl__side_guarded(write ? &l->write : &l->read, w, n, failed, fn);
    zkl__lockobj_leave(&l->obj);
    return st;
}

zkl_status zkl_rwlock_read_guarded_write(zkl_rwlock *l, zkl_write *w, size_t n, size_t *failed)
{
    ZKL__REFUSE_IN_LOG();
    return guarded(l, false, w, n, failed);
}

zkl_status zkl_rwlock_write_guarded_write(zkl_rwlock *l, zkl_write *w, size_t n, size_t *failed)
{
    ZKL__REFUSE_IN_LOG();
    return guarded(l, true, w, n, failed);
}

zkl_status zkl_rwlock_participants(zkl_rwlock *l, char ***paths, size_t *n)
{
    ZKL__REFUSE_IN_LOG();
    zkl_status st;
    zkl__clear_err();
    if (!l || !paths || !n)
        return zkl__fail(ZKL_EINVAL, "zkl_rwlock_participants: NULL argument");
    zkl__lockobj_enter(&l->obj);
    st = zkl__participants(l->obj.c, l->obj.path, zkl__read_driver.sort_markers, paths, n);
    zkl__lockobj_leave(&l->obj);
    return st;
}

const char *zkl_rwlock_path(const zkl_rwlock *l)
{
    return l ? l->obj.path : NULL;
}

zkl_status zkl_rwlock_on_state(zkl_rwlock *l, zkl_hold_state_fn fn, void *userdata)
{
    ZKL__REFUSE_IN_LOG();
    zkl__clear_err();
    if (!l)
        return zkl__fail(ZKL_EINVAL, "zkl_rwlock_on_state: lock is NULL");
    return zkl__lockobj_on_state(&l->obj, fn, userdata);
}

zkl_status zkl_rwlock_write_lease_remaining(zkl_rwlock *l, int64_t *ms)
{
    ZKL__REFUSE_IN_LOG();
    zkl__clear_err();
    if (!l || !ms)
        return zkl__fail(ZKL_EINVAL, "zkl_rwlock_write_lease_remaining: NULL argument");
    return zkl__side_lease_remaining(&l->write, ms);
}

zkl_status zkl_rwlock_read_lease_remaining(zkl_rwlock *l, int64_t *ms)
{
    ZKL__REFUSE_IN_LOG();
    zkl__clear_err();
    if (!l || !ms)
        return zkl__fail(ZKL_EINVAL, "zkl_rwlock_read_lease_remaining: NULL argument");
    return zkl__side_lease_remaining(&l->read, ms);
}
