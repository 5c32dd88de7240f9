/*
 * mutex.c - zkl_mutex, Curator's InterProcessMutex: the standard driver (hold
 * at index 0, watch the node just before ours) over the lock-internals core,
 * plus a per-thread reentrancy table. Everything about ZooKeeper lives in the
 * core; this file is the thin layer Curator's InterProcessMutex is.
 */
#include <stdlib.h>
#include <string.h>

#include "../common/holders.h"
#include "../common/internals.h"
#include "../common/path.h"
#include "../common/status_internal.h"
#include "../common/util.h"
#include "zklock/mutex.h"

static const char *const mutex_markers[] = {"lock-", NULL};

static zkl__verdict mutex_decide(const zkl__driver *d, char *const *sorted, size_t n, size_t self,
                                 const void *ctx)
{
    (void)d;
    (void)ctx;
    return zkl__decide_standard(sorted, n, self, 1);
}

const zkl__driver zkl__mutex_driver = {"lock-", mutex_markers, mutex_decide};

struct zkl_mutex {
    zkl_client *c;
    char *path;
    zkl__holders holders;
};

zkl_status zkl_mutex_create(zkl_client *c, const char *path, zkl_mutex **out)
{
    zkl_mutex *m;
    zkl_status st;
    zkl__clear_err();
    if (!out)
        return zkl__fail(ZKL_EINVAL, "zkl_mutex_create: out is NULL");
    *out = NULL;
    if (!c)
        return zkl__fail(ZKL_EINVAL, "zkl_mutex_create: client is NULL");
    st = zkl__path_validate(path);
    if (st != ZKL_OK)
        return st;
    m = calloc(1, sizeof *m);
    if (!m || !(m->path = strdup(path))) {
        free(m);
        return zkl__fail(ZKL_ENOMEM, "out of memory");
    }
    m->c = c;
    zkl__holders_init(&m->holders);
    zkl__client_ref(c);
    *out = m;
    return ZKL_OK;
}

zkl_status zkl_mutex_destroy(zkl_mutex *m)
{
    unsigned n;
    if (!m)
        return zkl__fail(ZKL_EINVAL, "zkl_mutex_destroy: mutex is NULL");
    n = zkl__holders_count(&m->holders);
    if (n > 0)
        return zkl__fail(ZKL_EBUSY, "zkl_mutex_destroy: %s is held by %u thread(s)", m->path, n);
    zkl__holders_destroy(&m->holders);
    zkl__client_unref(m->c);
    free(m->path);
    free(m);
    return ZKL_OK;
}

zkl_status zkl_mutex_acquire(zkl_mutex *m, int timeout_ms)
{
    zkl__acquire_args a;
    zkl__hold hold = {0};
    zkl_status st;
    int re;
    zkl__clear_err();
    if (!m)
        return zkl__fail(ZKL_EINVAL, "zkl_mutex_acquire: mutex is NULL");
    if (timeout_ms < ZKL_WAIT_FOREVER)
        return zkl__fail(ZKL_EINVAL, "zkl_mutex_acquire: timeout %d ms is negative", timeout_ms);
    re = zkl__holders_reenter(&m->holders, m->c);
    if (re > 0)
        return ZKL_OK;
    if (re < 0)
        return zkl__fail(ZKL_ELOST, "%s: this thread's hold was lost with its session; release it",
                         m->path);
    memset(&a, 0, sizeof a);
    a.path = m->path;
    a.driver = &zkl__mutex_driver;
    a.deadline = zkl__deadline(timeout_ms);
    st = zkl__lock_acquire(m->c, &a, &hold);
    if (st != ZKL_OK)
        return st;
    st = zkl__holders_add(&m->holders, &hold);
    if (st != ZKL_OK)
        zkl__lock_release(m->c, &hold);
    return st;
}

zkl_status zkl_mutex_release(zkl_mutex *m)
{
    zkl__hold last;
    zkl_status st;
    zkl__clear_err();
    if (!m)
        return zkl__fail(ZKL_EINVAL, "zkl_mutex_release: mutex is NULL");
    st = zkl__holders_leave(&m->holders, &last);
    if (st != ZKL_OK)
        return st;
    if (!last.node) /* still held at a lower level */
        return zkl__epoch_alive(m->c, last.epoch)
                   ? ZKL_OK
                   : zkl__fail(ZKL_ELOST, "%s: the hold was lost with its session", m->path);
    return zkl__lock_release(m->c, &last);
}

bool zkl_mutex_is_held(zkl_mutex *m)
{
    zkl__hold h;
    bool held;
    if (!m || zkl__holders_get(&m->holders, &h) != ZKL_OK)
        return false;
    held = zkl__epoch_alive(m->c, h.epoch);
    free(h.node);
    return held;
}

/* The calling thread's hold, checked alive; the caller frees h->node. */
static zkl_status current_hold(zkl_mutex *m, zkl__hold *h)
{
    zkl_status st = zkl__holders_get(&m->holders, h);
    if (st != ZKL_OK)
        return st;
    if (!zkl__epoch_alive(m->c, h->epoch)) {
        free(h->node);
        h->node = NULL;
        return zkl__fail(ZKL_ELOST, "%s: the hold was lost with its session", m->path);
    }
    return ZKL_OK;
}

zkl_status zkl_mutex_fencing_token(zkl_mutex *m, int64_t *token)
{
    zkl__hold h;
    zkl_status st;
    zkl__clear_err();
    if (!m || !token)
        return zkl__fail(ZKL_EINVAL, "zkl_mutex_fencing_token: NULL argument");
    st = current_hold(m, &h);
    if (st != ZKL_OK)
        return st;
    *token = h.czxid;
    free(h.node);
    return ZKL_OK;
}

zkl_status zkl_mutex_node(zkl_mutex *m, char **node)
{
    zkl__hold h;
    zkl_status st;
    zkl__clear_err();
    if (!m || !node)
        return zkl__fail(ZKL_EINVAL, "zkl_mutex_node: NULL argument");
    st = current_hold(m, &h);
    if (st != ZKL_OK)
        return st;
    *node = h.node;
    return ZKL_OK;
}

zkl_status zkl_mutex_participants(zkl_mutex *m, char ***paths, size_t *n)
{
    zkl__clear_err();
    if (!m || !paths || !n)
        return zkl__fail(ZKL_EINVAL, "zkl_mutex_participants: NULL argument");
    return zkl__participants(m->c, m->path, mutex_markers, paths, n);
}

const char *zkl_mutex_path(const zkl_mutex *m)
{
    return m ? m->path : NULL;
}
