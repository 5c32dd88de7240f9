/*
 * semaphore_mutex.c - zkl_semaphore_mutex, Curator's
 * InterProcessSemaphoreMutex: one lease of a one-lease semaphore, kept by the
 * object rather than by a thread, so any thread may release it.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "session/client.h"
#include "base/status.h"
#include "core/engine/internals.h"
#include "recipes/sides.h"
#include "zklock/semaphore.h"

struct zkl_semaphore_mutex {
    zkl_client *c;
    zkl_semaphore *sem;
    pthread_mutex_t mu;
    zkl_lease *lease;
};

/* m's client was open in the parent of this fork()ed process (client/fork.c). */
static bool forked(const zkl_semaphore_mutex *m)
{
    return zkl__forked(m->c);
}

zkl_status zkl_semaphore_mutex_create(zkl_client *c, const char *path, zkl_semaphore_mutex **out)
{
    ZKL__REFUSE_IN_LOG();
    zkl_semaphore_mutex *m;
    zkl_status st;
    zkl__clear_err();
    if (!out)
        return zkl__fail(ZKL_EINVAL, "zkl_semaphore_mutex_create: out is NULL");
    *out = NULL;
    m = calloc(1, sizeof *m);
    if (!m)
        return zkl__fail(ZKL_ENOMEM, "out of memory");
    st = zkl_semaphore_create(c, path, 1, &m->sem);
    if (st != ZKL_OK) {
        free(m);
        return st;
    }
    pthread_mutex_init(&m->mu, NULL);
    m->c = c;
    *out = m;
    return ZKL_OK;
}

zkl_status zkl_semaphore_mutex_destroy(zkl_semaphore_mutex *m)
{
    ZKL__REFUSE_IN_LOG();
    bool held;
    zkl_status st;
    zkl__clear_err();
    if (!m)
        return zkl__fail(ZKL_EINVAL, "zkl_semaphore_mutex_destroy: mutex is NULL");
    held = false; /* (in a fork()ed child its lease is the parent's: it goes) */
    if (!forked(m)) {
        pthread_mutex_lock(&m->mu);
        held = m->lease != NULL;
        pthread_mutex_unlock(&m->mu);
    }
    if (held)
        return zkl__fail(ZKL_EBUSY, "zkl_semaphore_mutex_destroy: still held");
    /* refuses while a thread waits in an acquire (its semaphore's): nothing freed */
    if ((st = zkl_semaphore_destroy(m->sem)) != ZKL_OK)
        return zkl__fail_prefix(st, "zkl_semaphore_mutex_destroy: ");
    pthread_mutex_destroy(&m->mu);
    free(m);
    return ZKL_OK;
}

zkl_status zkl_semaphore_mutex_acquire(zkl_semaphore_mutex *m, int timeout_ms)
{
    ZKL__REFUSE_IN_LOG();
    zkl_lease *lease, *stale;
    zkl_status st;
    zkl__clear_err();
    if (!m)
        return zkl__fail(ZKL_EINVAL, "zkl_semaphore_mutex_acquire: mutex is NULL");
    st = zkl_semaphore_acquire(m->sem, timeout_ms, &lease);
    if (st != ZKL_OK)
        return st;
    pthread_mutex_lock(&m->mu);
    stale = m->lease; /* only possible if that one was lost with its session */
    m->lease = lease;
    pthread_mutex_unlock(&m->mu);
    if (stale)
        zkl_lease_return(stale);
    return ZKL_OK;
}

zkl_status zkl__semaphore_mutex_hold(zkl_semaphore_mutex *m, zkl__hold *h)
{
    zkl_status st;
    memset(h, 0, sizeof *h);
    pthread_mutex_lock(&m->mu);
    st = m->lease ? zkl__hold_copy(zkl__lease_hold(m->lease), h)
                  : zkl__fail(ZKL_ENOTOWNER, "the semaphore mutex is not held");
    pthread_mutex_unlock(&m->mu);
    return st;
}

zkl_status zkl_semaphore_mutex_release(zkl_semaphore_mutex *m)
{
    ZKL__REFUSE_IN_LOG();
    zkl_lease *lease;
    zkl__clear_err();
    if (!m)
        return zkl__fail(ZKL_EINVAL, "zkl_semaphore_mutex_release: mutex is NULL");
    if (forked(m)) { /* one thread here; m->mu may be held by one that is not */
        lease = m->lease;
        m->lease = NULL;
    } else {
        pthread_mutex_lock(&m->mu);
        lease = m->lease;
        m->lease = NULL;
        pthread_mutex_unlock(&m->mu);
    }
    if (!lease)
        return zkl__fail(ZKL_ENOTOWNER, "zkl_semaphore_mutex_release: not acquired");
    return zkl_lease_return(lease);
}

bool zkl_semaphore_mutex_is_held(zkl_semaphore_mutex *m)
{
    ZKL__REFUSE_IN_LOG_AS(false);
    bool held;
    if (!m || forked(m)) /* (a fork()ed child holds nothing) */
        return false;
    pthread_mutex_lock(&m->mu);
    held = zkl_lease_is_valid(m->lease);
    pthread_mutex_unlock(&m->mu);
    return held;
}
