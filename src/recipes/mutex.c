/*
 * mutex.c - zkl_mutex, Curator's InterProcessMutex: the standard driver (hold
 * at index 0, watch the node just before ours; core/policy/drivers.c) over the
 * lock-internals core, behind the shared reentrancy layer. Nothing here talks
 * to ZooKeeper.
 */
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/path.h"
#include "core/async/async.h"
#include "core/objects/lockobj.h"
#include "core/objects/reentrant.h"
#include "recipes/sides.h"
#include "base/status.h"
#include "zklock/mutex.h"

struct zkl_mutex {
    zkl__lockobj obj;
    zkl__side side;
    zkl_revoke_fn revoke_fn;
    void *revoke_ud;
};

static bool holds_in(void *self, uint64_t epoch)
{
    zkl_mutex *m = self;
    return zkl__holders_in_epoch(&m->side.holders, epoch) || zkl__side_async_in(&m->side, epoch);
}

zkl_status zkl_mutex_create(zkl_client *c, const char *path, zkl_mutex **out)
{
    ZKL__REFUSE_IN_LOG();
    zkl_mutex *m;
    zkl__lockobj *obj;
    zkl__lockstats *stats;
    zkl_status st;
    zkl__clear_err();
    if (out)
        *out = NULL;
    st = zkl__lockobj_new(sizeof *m, "zkl_mutex_create", out, c, path, holds_in, &obj);
    if (st != ZKL_OK || !out) /* (new refuses a NULL out) */
        return st;
    m = (zkl_mutex *)obj; /* its first member */
    if ((st = zkl__lockobj_add_part(&m->obj, "mutex", ZKL__PART_HANDOFFS, &stats)) != ZKL_OK) {
        zkl__lockobj_free(&m->obj);
        return st;
    }
    zkl__side_init(&m->side, c, m->obj.path, &zkl__mutex_driver);
    m->side.lookahead = ZKL__LOOKAHEAD_IF_CARRIED;
    m->side.stats = stats;
    *out = m;
    return ZKL_OK;
}

zkl_status zkl_mutex_destroy(zkl_mutex *m)
{
    ZKL__REFUSE_IN_LOG();
    unsigned n;
    zkl_status st;
    zkl__clear_err();
    if (!m)
        return zkl__fail(ZKL_EINVAL, "zkl_mutex_destroy: mutex is NULL");
    if ((st = zkl__lockobj_idle(&m->obj, "zkl_mutex_destroy")) != ZKL_OK)
        return st;
    /* (in a fork()ed child its holds and handles are the parent's: it goes) */
    n = zkl__forked(m->obj.c) ? 0 : zkl__holders_count(&m->side.holders);
    if (n > 0)
        return zkl__fail(ZKL_EBUSY, "zkl_mutex_destroy: %s is held by %u thread(s)", m->obj.path,
                         n);
    n = zkl__forked(m->obj.c) ? 0 : (unsigned)zkl__side_async_ops(&m->side);
    if (n > 0)
        return zkl__fail(ZKL_EBUSY, "zkl_mutex_destroy: %s has %u async handle(s) not released",
                         m->obj.path, n);
    zkl__lockobj_detach(&m->obj); /* the worker may be about to tell it an event */
    zkl__side_destroy(&m->side);
    zkl__lockobj_free(&m->obj);
    return ZKL_OK;
}

zkl_status zkl_mutex_acquire(zkl_mutex *m, int timeout_ms)
{
    ZKL__REFUSE_IN_LOG();
    zkl_status st;
    zkl__clear_err();
    if (!m)
        return zkl__fail(ZKL_EINVAL, "zkl_mutex_acquire: mutex is NULL");
    st = zkl__check_timeout(timeout_ms, "zkl_mutex_acquire");
    if (st != ZKL_OK)
        return st;
    zkl__lockobj_enter(&m->obj);
    st = zkl__side_acquire(&m->side, timeout_ms, NULL, NULL);
    zkl__lockobj_leave(&m->obj);
    return st;
}

zkl_status zkl_mutex_acquire_async(zkl_mutex *m, int timeout_ms, zkl_op_fn fn, void *userdata,
                                   zkl_op **op)
{
    ZKL__REFUSE_IN_LOG();
    zkl__clear_err();
    if (!m) {
        if (op)
            *op = NULL;
        return zkl__fail(ZKL_EINVAL, "zkl_mutex_acquire_async: mutex is NULL");
    }
    return zkl__async_side_acquire(&m->side, timeout_ms, fn, userdata, "zkl_mutex_acquire_async",
                                   op);
}

zkl_status zkl_mutex_release(zkl_mutex *m)
{
    ZKL__REFUSE_IN_LOG();
    zkl__clear_err();
    if (!m)
        return zkl__fail(ZKL_EINVAL, "zkl_mutex_release: mutex is NULL");
    return zkl__side_release(&m->side);
}

bool zkl_mutex_is_held(zkl_mutex *m)
{
    ZKL__REFUSE_IN_LOG_AS(false);
    return m && zkl__side_is_held(&m->side);
}

zkl_status zkl_mutex_lease_remaining(zkl_mutex *m, int64_t *ms)
{
    ZKL__REFUSE_IN_LOG();
    zkl__clear_err();
    if (!m || !ms)
        return zkl__fail(ZKL_EINVAL, "zkl_mutex_lease_remaining: NULL argument");
    return zkl__side_lease_remaining(&m->side, ms);
}

zkl_status zkl_mutex_fencing_token(zkl_mutex *m, int64_t *token)
{
    ZKL__REFUSE_IN_LOG();
    zkl_status st;
    zkl__clear_err();
    if (!m || !token)
        return zkl__fail(ZKL_EINVAL, "zkl_mutex_fencing_token: NULL argument");
    zkl__lockobj_enter(&m->obj); /* (the first may ask the server) */
    st = zkl__side_token(&m->side, token);
    zkl__lockobj_leave(&m->obj);
    return st;
}

zkl_status zkl_mutex_node(zkl_mutex *m, char **node)
{
    ZKL__REFUSE_IN_LOG();
    zkl__clear_err();
    if (!m || !node)
        return zkl__fail(ZKL_EINVAL, "zkl_mutex_node: NULL argument");
    return zkl__side_node(&m->side, node);
}

zkl_status zkl_mutex_guarded_write(zkl_mutex *m, zkl_write *w, size_t n, size_t *failed)
{
    ZKL__REFUSE_IN_LOG();
    zkl_status st;
    zkl__clear_err();
    if (failed)
        *failed = SIZE_MAX;
    if (!m)
        return zkl__fail(ZKL_EINVAL, "zkl_mutex_guarded_write: mutex is NULL");
    zkl__lockobj_enter(&m->obj);
    st = zkl__side_guarded(&m->side, w, n, failed, "zkl_mutex_guarded_write");
    zkl__lockobj_leave(&m->obj);
    return st;
}

zkl_status zkl_mutex_participants(zkl_mutex *m, char ***paths, size_t *n)
{
    ZKL__REFUSE_IN_LOG();
    zkl_status st;
    zkl__clear_err();
    if (!m || !paths || !n)
        return zkl__fail(ZKL_EINVAL, "zkl_mutex_participants: NULL argument");
    zkl__lockobj_enter(&m->obj);
    st = zkl__participants(m->obj.c, m->obj.path, zkl__mutex_driver.sort_markers, paths, n);
    zkl__lockobj_leave(&m->obj);
    return st;
}

zkl__side *zkl__mutex_side(zkl_mutex *m)
{
    return &m->side;
}

const char *zkl_mutex_path(const zkl_mutex *m)
{
    return m ? m->obj.path : NULL;
}

static void on_revoke(void *ctx)
{
    zkl_mutex *m = ctx;
    zkl_revoke_fn fn = m->revoke_fn;
    zkl__side_end_streak(&m->side); /* the node is wanted: no passing it on */
    if (fn)
        fn(m, m->revoke_ud);
}

zkl_status zkl_mutex_make_revocable(zkl_mutex *m, zkl_revoke_fn fn, void *userdata)
{
    ZKL__REFUSE_IN_LOG();
    zkl__clear_err();
    if (!m)
        return zkl__fail(ZKL_EINVAL, "zkl_mutex_make_revocable: mutex is NULL");
    m->revoke_fn = fn;
    m->revoke_ud = userdata;
    m->side.revoke_cb = fn ? on_revoke : NULL;
    m->side.revoke_ctx = m;
    m->side.data = fn ? "" : NULL; /* Curator: revocable nodes carry no data */
    m->side.data_len = 0;
    return ZKL_OK;
}

zkl_status zkl_mutex_set_lookahead(zkl_mutex *m, zkl_lookahead mode)
{
    ZKL__REFUSE_IN_LOG();
    zkl__clear_err();
    if (!m)
        return zkl__fail(ZKL_EINVAL, "zkl_mutex_set_lookahead: mutex is NULL");
    switch (mode) {
    case ZKL_LOOKAHEAD_OFF: m->side.lookahead = ZKL__LOOKAHEAD_OFF; break;
    case ZKL_LOOKAHEAD_ON: m->side.lookahead = ZKL__LOOKAHEAD_ON; break;
    case ZKL_LOOKAHEAD_AUTO: m->side.lookahead = ZKL__LOOKAHEAD_IF_CARRIED; break;
    default: return zkl__fail(ZKL_EINVAL, "zkl_mutex_set_lookahead: unknown mode %d", (int)mode);
    }
    return ZKL_OK;
}

zkl_status zkl_mutex_set_local_handoff(zkl_mutex *m, int max_streak, int max_ms)
{
    ZKL__REFUSE_IN_LOG();
    zkl__clear_err();
    if (!m)
        return zkl__fail(ZKL_EINVAL, "zkl_mutex_set_local_handoff: mutex is NULL");
    return zkl__side_local_handoff(&m->side, max_streak, max_ms, "zkl_mutex_set_local_handoff");
}

uint64_t zkl_mutex_local_handoffs(zkl_mutex *m)
{
    ZKL__REFUSE_IN_LOG_AS(0);
    return m ? zkl__side_local_handoffs(&m->side) : 0;
}

zkl_status zkl_mutex_on_state(zkl_mutex *m, zkl_hold_state_fn fn, void *userdata)
{
    ZKL__REFUSE_IN_LOG();
    zkl__clear_err();
    if (!m)
        return zkl__fail(ZKL_EINVAL, "zkl_mutex_on_state: mutex is NULL");
    return zkl__lockobj_on_state(&m->obj, fn, userdata);
}
