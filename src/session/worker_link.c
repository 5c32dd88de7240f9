/*
 * worker_link.c - the client's worker as the lower floors see it: kick it
 * awake, ask whether it sleeps past a moment, and whether the caller runs on
 * it (and so must not wait for it). The worker itself is client/worker.c.
 */
#include <pthread.h>

#include "base/status.h"
#include "base/wakefd.h"
#include "session/client.h"

void zkl__worker_kick_locked(zkl_client *c)
{
    if (c->forked) /* its descriptor is the parent's worker's too */
        return;
    pthread_cond_signal(&c->wcv); /* the worker waits on it while a session cannot be opened */
    if (c->worker_wake_us != 0 && !c->worker_kicked && c->wfd >= 0) {
        c->worker_kicked = true;
        zkl__wakefd_wake(c->wfd);
    }
}

bool zkl__worker_sleeps_past_locked(const zkl_client *c, int64_t at)
{
    return c->worker_wake_us == 0 || at < c->worker_wake_us;
}

bool zkl__on_worker(zkl_client *c)
{
    /* (worker_started is false in a forked child: the worker is the parent's) */
    return c->worker_started && pthread_equal(pthread_self(), c->worker);
}

zkl_status zkl__refuse_on_worker(zkl_client *c, const char *fn)
{
    if (!zkl__on_worker(c))
        return ZKL_OK;
    return zkl__fail(ZKL_EDEADLOCK,
                     "%s: called on the client's worker thread (from inside a zklock callback), "
                     "which this call would wait for; use the async acquire, or call it from "
                     "another thread",
                     fn);
}
