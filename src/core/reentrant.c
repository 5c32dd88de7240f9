/*
 * reentrant.c - see reentrant.h.
 */
#include <stdlib.h>
#include <string.h>

#include "services/lease.h"
#include "core/reentrant.h"
#include "base/status.h"
#include "base/util.h"

void zkl__side_init(zkl__side *sd, zkl_client *c, const char *path, const zkl__driver *d)
{
    memset(sd, 0, sizeof *sd);
    sd->c = c;
    sd->path = path;
    sd->driver = d;
    zkl__holders_init(&sd->holders);
}

void zkl__side_destroy(zkl__side *sd)
{
    zkl__holders_destroy(&sd->holders);
}

void zkl__side_args(const zkl__side *sd, int timeout_ms, const void *ctx, const char *fixed_suffix,
                    zkl__acquire_args *a)
{
    memset(a, 0, sizeof *a);
    a->path = sd->path;
    a->driver = sd->driver;
    a->ctx = ctx;
    a->data = sd->data;
    a->data_len = sd->data_len;
    a->deadline = zkl__deadline(timeout_ms);
    a->fixed_suffix = fixed_suffix;
    a->token_lazy = true;
    a->lookahead = sd->lookahead;
    a->revoke_cb = sd->revoke_cb;
    a->revoke_ctx = sd->revoke_ctx;
}

zkl_status zkl__side_mode(zkl__side *sd, int mode, const char *fn)
{
    int was;
    pthread_mutex_lock(&sd->c->mu);
    was = sd->mode;
    if (was == ZKL__MODE_NONE)
        sd->mode = mode;
    pthread_mutex_unlock(&sd->c->mu);
    if (was == ZKL__MODE_NONE || was == mode)
        return ZKL_OK;
    return zkl__fail(ZKL_EBUSY,
                     "%s: %s is in %s mode (its first acquire was %s); a lock object is "
                     "in one mode for its life",
                     fn, sd->path, was == ZKL__MODE_ASYNC ? "async" : "thread",
                     was == ZKL__MODE_ASYNC ? "async: holds belong to zkl_op handles"
                                            : "blocking: holds belong to threads");
}

int zkl__side_async_ops(zkl__side *sd)
{
    int n;
    pthread_mutex_lock(&sd->c->mu);
    n = sd->async_ops;
    pthread_mutex_unlock(&sd->c->mu);
    return n;
}

zkl_status zkl__side_acquire(zkl__side *sd, int timeout_ms, const void *ctx,
                             const char *fixed_suffix)
{
    zkl__acquire_args a;
    zkl__hold hold = {0};
    zkl_status st;
    int re;
    st = zkl__side_mode(sd, ZKL__MODE_THREAD, "acquire");
    if (st != ZKL_OK)
        return st;
    re = zkl__holders_reenter(&sd->holders, sd->c);
    if (re > 0)
        return ZKL_OK;
    if (re < 0)
        return zkl__fail(ZKL_ELOST, "%s: this thread's hold was lost with its session; release it",
                         sd->path);
    zkl__side_args(sd, timeout_ms, ctx, fixed_suffix, &a);
    st = zkl__lock_acquire(sd->c, &a, &hold);
    if (st != ZKL_OK)
        return st;
    st = zkl__holders_add(&sd->holders, &hold);
    if (st != ZKL_OK)
        zkl__lock_release(sd->c, &hold);
    return st;
}

zkl_status zkl__side_release(zkl__side *sd)
{
    zkl__hold last;
    zkl_status st = zkl__holders_leave(&sd->holders, &last);
    if (st != ZKL_OK)
        return st;
    if (!last.node) /* still held at a lower level */
        return zkl__hold_alive(sd->c, last.epoch)
                   ? ZKL_OK
                   : zkl__fail(ZKL_ELOST, "%s: the hold was lost with its session", sd->path);
    return zkl__lock_release(sd->c, &last);
}

bool zkl__side_has_entry(zkl__side *sd)
{
    return zkl__holders_has(&sd->holders, NULL);
}

bool zkl__side_is_held(zkl__side *sd)
{
    uint64_t epoch;
    return zkl__holders_has(&sd->holders, &epoch) && zkl__hold_alive(sd->c, epoch);
}

zkl_status zkl__side_current(zkl__side *sd, zkl__hold *h)
{
    zkl_status st = zkl__holders_get(&sd->holders, h);
    if (st != ZKL_OK)
        return st;
    if (!zkl__hold_alive(sd->c, h->epoch)) {
        free(h->node);
        h->node = NULL;
        return zkl__fail(ZKL_ELOST, "%s: the hold was lost with its session", sd->path);
    }
    return ZKL_OK;
}

zkl_status zkl__side_token(zkl__side *sd, int64_t *token)
{
    zkl__hold h;
    zkl_status st = zkl__side_current(sd, &h);
    if (st != ZKL_OK)
        return st;
    if (h.czxid == 0) { /* the create rode in a multi: ask once, remember */
        st = zkl__hold_token(sd->c, &h, &h.czxid);
        if (st == ZKL_OK)
            zkl__holders_set_token(&sd->holders, h.czxid);
    }
    *token = h.czxid;
    free(h.node);
    return st;
}

zkl_status zkl__side_node(zkl__side *sd, char **node)
{
    zkl__hold h;
    zkl_status st = zkl__side_current(sd, &h);
    if (st != ZKL_OK)
        return st;
    *node = h.node;
    return ZKL_OK;
}

zkl_status zkl__side_lease_remaining(zkl__side *sd, int64_t *ms)
{
    uint64_t epoch;
    if (!zkl__holders_has(&sd->holders, &epoch))
        return zkl__fail(ZKL_ENOTOWNER, "%s: this thread does not hold it", sd->path);
    return zkl__lease_remaining(sd->c, epoch, sd->path, ms);
}
