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
    if (c->reg.forked) /* its descriptor is the parent's worker's too */
        return;
    pthread_cond_signal(&c->wk.cv); /* the worker waits on it while a session cannot be opened */
    if (c->wk.wake_us != 0 && !c->wk.kicked && c->wk.wfd >= 0) {
        c->wk.kicked = true;
        zkl__wakefd_wake(c->wk.wfd);
    }
}

void zkl__worker_alarm_locked(zkl_client *c, int64_t at)
{
    if (c->reg.forked) /* (its alarm is the parent's worker's) */
        return;
    if (c->wk.alarm_us == 0) { /* running (a kick is cheap then), or asleep with no alarm */
        zkl__worker_kick_locked(c);
        return;
    }
    if (at >= c->wk.alarm_us)
        return; /* it wakes by then anyway */
    if (zkl__alarmfd_set(c->wk.afd, at))
        c->wk.alarm_us = at;
    else
        zkl__worker_kick_locked(c);
}

void zkl__worker_alarm_back_locked(zkl_client *c)
{
    if (!c->reg.forked && c->wk.alarm_us != 0 && c->wk.alarm_us < c->wk.wake_us &&
        zkl__alarmfd_set(c->wk.afd, c->wk.wake_us))
        c->wk.alarm_us = c->wk.wake_us;
}

bool zkl__worker_sleeps_past_locked(const zkl_client *c, int64_t at)
{
    return c->wk.wake_us == 0 || at < c->wk.wake_us;
}

bool zkl__on_worker(zkl_client *c)
{
    /* (worker_started is false in a forked child: the worker is the parent's) */
    return c->wk.started && pthread_equal(pthread_self(), c->wk.thread);
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
