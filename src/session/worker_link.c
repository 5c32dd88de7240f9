/*
 * worker_link.c - the client's worker as the lower floors see it: kick it
 * awake, move its alarm, ask whether it sleeps past a moment, and whether
 * the caller runs on it (and so must not wait for it). The worker itself is client/worker.c.
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

void zkl__worker_alarm_locked(zkl_client *c, int64_t at)
{
    if (c->forked) /* (its alarm is the parent's worker's) */
        return;
    if (c->worker_alarm_us == 0) { /* running (a kick is cheap then), or asleep with no alarm */
        zkl__worker_kick_locked(c);
        return;
    }
    if (at >= c->worker_alarm_us)
        return; /* it wakes by then anyway */
    if (zkl__alarmfd_set(c->afd, at))
        c->worker_alarm_us = at;
    else
        zkl__worker_kick_locked(c);
}

void zkl__worker_alarm_back_locked(zkl_client *c)
{
    if (!c->forked && c->worker_alarm_us != 0 && c->worker_alarm_us < c->worker_wake_us &&
        zkl__alarmfd_set(c->afd, c->worker_wake_us))
        c->worker_alarm_us = c->worker_wake_us;
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
