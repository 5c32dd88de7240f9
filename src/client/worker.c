/*
 * worker.c - the client's worker thread, a loop of ordered phases in the
 * manner of libuv's uv_run. Each phase belongs to one subsystem, owns its own
 * queue, and answers either "I did something" (0: the loop starts over from
 * the first phase) or the time it next wants to run; the worker sleeps until
 * the earliest of those, or until someone wakes it (zkl__worker_kick_locked).
 *
 * DESIGN
 *
 * Layers (docs/ARCHITECTURE.md), every arrow pointing down:
 *
 *   recipes   mutex, rwlock, semaphore, multilock, inspect
 *   core      the lock-internals engine, drivers, reentrancy
 *   client    zkl_client_open/close, this worker
 *   services  cleanup (deletes), revocation, lease
 *   requests  blocking and async ZooKeeper calls, retry, rc reading
 *   session   the zhandle, epochs, events, watch tokens
 *   base      status, log, path, seq, util
 *
 * The lower layers call up only through the hooks of session/client.h, which
 * zkl_client_open points at the services.
 *
 * Threads: the caller's threads (acquire, release, queries), the client's
 * poller (ZooKeeper's I/O and its deliveries: session/transport.c), and
 * this worker. Completions and
 * watchers only record under c->mu and signal (c->cv for waiters, a kick for
 * the worker); they never make a call or run user code. The worker runs user
 * state callbacks, revocation callbacks, renewals and background deletes.
 *
 * Lock order: lsn.mu (recursive; held while listeners run) before c->mu;
 * c->mu before a call's own mutex (requests/calls.c); a recipe's own mutex
 * (the semaphore's) before c->mu. No user code runs under c->mu; every
 * phase releases it before calling out and takes it again after.
 *
 * Phase order, each run with c->mu held:
 *   1. events     tell queued connection events (user first, then recipes)
 *   2. revocation run revoke callbacks, arm revocation watches
 *   3. engine     run the core's ready operations and due timers (async
 *                 acquires: core/engine/engine.c, through a hook)
 *   4. lease      act on a lapsed lease (end the session), send renewals
 *   5. held back  send held-back deletes whose moment is up
 *   6. session    declare a long suspension lost; replace a lost session
 *   7. cleanup    try the next background delete
 */
#include <errno.h>
#include <string.h>

#include "base/fault.h"
#include "base/log.h"
#include "base/status.h"
#include "base/tuning.h"
#include "base/util.h"
#include "base/wakefd.h"
#include "client/worker.h"
#include "services/cleanup.h"
#include "services/lease.h"
#include "services/revoke.h"

typedef int64_t (*phase_fn)(zkl_client *c, int64_t now_us);

static int64_t events_phase(zkl_client *c, int64_t now_us)
{
    (void)now_us;
    return zkl__events_turn(c);
}

/* The core's engine, once it has run an operation (a hook: the core is above). */
static int64_t engine_phase(zkl_client *c, int64_t now_us)
{
    return c->hooks.engine_turn ? c->hooks.engine_turn(c, now_us) : INT64_MAX;
}

static const phase_fn phases[] = {
    events_phase,        zkl__revs_turn,    engine_phase, zkl__lease_turn,
    zkl__held_back_turn, zkl__session_turn, zkl__bg_turn,
};

/*
 * Where the worker sleeps: in ppoll on its eventfd (base/wakefd.h), not on a
 * condition variable, out of the process's futex hash. It is idle most of
 * its life. lockbench contended, 3 alternating rounds: at 1024 sessions
 * client CPU per hand-off 1034/1390/1392 -> 740/1138/942 us, at 16 no worse
 * (439/486/381 -> 434/367/298). A kick writes the eventfd once while the
 * worker sleeps; wk.cv is still signalled, for the wait of a session that
 * cannot be opened (session/session.c) and for a worker without an eventfd (none
 * could be made).
 *
 * Beside the eventfd it polls its alarm, a timerfd set to when it wakes. Work
 * due a moment from now, not now, moves the alarm earlier instead of waking
 * it (zkl__worker_alarm_locked): a contended release's held-back delete,
 * which the releasing client's next acquire nearly always takes before it is
 * due, then puts the alarm back. Kicked for it, the worker woke once a
 * release and took c->mu while the next acquire wanted it (docs/design/
 * scale-log.md, 2026-11-28).
 */
#define on_fd(c) ((c)->wk.wfd >= 0 && !ZKL_FAULT((c), SLEEP_ON_CV, NULL))

static void *worker_main(void *arg)
{
    zkl_client *c = arg;
    pthread_mutex_lock(&c->mu);
    while (!c->closing) {
        int64_t now = zkl__now_us(), wake = now + ZKL_WORKER_IDLE_US;
        size_t i;
        for (i = 0; i < sizeof phases / sizeof phases[0]; i++) {
            int64_t at = phases[i](c, now);
            if (at == 0)
                break;
            if (at < wake)
                wake = at;
        }
        if (i < sizeof phases / sizeof phases[0])
            continue; /* a phase did something: from the top */
        /* its own condition: watch events and call ends do not wake it;
         * what queues work due before wake does (worker_wake_us) */
        c->wk.wake_us = wake;
        c->wk.kicked = false;
        if (on_fd(c)) {
            if (zkl__alarmfd_set(c->wk.afd, wake))
                c->wk.alarm_us = wake;
            pthread_mutex_unlock(&c->mu);
            zkl__wakefd_sleep_alarm(c->wk.wfd, c->wk.afd, wake);
            pthread_mutex_lock(&c->mu);
            c->wk.alarm_us = 0;
        } else {
            zkl__cond_wait_until_us(&c->wk.cv, &c->mu, wake);
        }
        c->wk.wake_us = 0;
        c->wk.wakes++;
    }
    pthread_mutex_unlock(&c->mu);
    return NULL;
}

zkl_status zkl__worker_start(zkl_client *c)
{
    c->wk.wfd = zkl__wakefd_new();
    c->wk.afd = zkl__alarmfd_new(); /* -1: none, the worker is kicked instead */
    if (pthread_create(&c->wk.thread, NULL, worker_main, c) != 0) {
        zkl__wakefd_close(c->wk.wfd);
        zkl__wakefd_close(c->wk.afd);
        c->wk.wfd = c->wk.afd = -1;
        return zkl__fail(ZKL_ESYS, "could not start the client thread");
    }
    c->wk.started = true;
    zkl__clients_count(1);
    return ZKL_OK;
}

void zkl__worker_stop(zkl_client *c)
{
    int rc;
    pthread_mutex_lock(&c->mu);
    c->closing = true;
    zkl__changed_locked(c);
    zkl__worker_kick_locked(c);
    pthread_mutex_unlock(&c->mu);
    /* (never on the worker itself: zkl_client_close refuses there) */
    if ((rc = pthread_join(c->wk.thread, NULL)) != 0)
        zkl__log(ZKL_LOG_ERROR, "joining the client's worker: %s", strerror(rc));
    zkl__clients_count(-1);
    zkl__wakefd_close(c->wk.wfd);
    zkl__wakefd_close(c->wk.afd);
    c->wk.wfd = c->wk.afd = -1;
}
