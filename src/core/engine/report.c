/*
 * report.c - the client's delivery (report.h): a report runs on the worker,
 * or waits in the engine's queue behind the event descriptor for
 * zkl_client_dispatch (zklock/async.h). The queues are under c->mu; the
 * descriptor is written after the queue is let go, and read by dispatch
 * before it takes the queue (core/async/async.c says why that order).
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"
#include "core/engine/acq.h"
#include "core/engine/report.h"

/* Append r to the list (*head, *tail). */
static void enqueue(zkl__report **head, zkl__report **tail, zkl__report *r)
{
    r->next = NULL;
    if (*tail)
        (*tail)->next = r;
    else
        *head = r;
    *tail = r;
}

/* Queue r for the loop's thread, c->mu held; let go of it, and signal. */
static void queue_for_dispatch_unlock(zkl_client *c, zkl__report *r)
{
    struct zkl__engine *e = c->engine;
    uint64_t one = 1;
    int efd = e->efd;
    enqueue(&e->reports, &e->reports_end, r);
    pthread_mutex_unlock(&c->mu);
    if (write(efd, &one, sizeof one) < 0 && errno != EAGAIN)
        zkl__log(ZKL_LOG_ERROR, "event descriptor: %s", strerror(errno));
}

void zkl__report_post(zkl_client *c, zkl__report *r)
{
    pthread_mutex_lock(&c->mu);
    if (c->engine->efd >= 0) {
        queue_for_dispatch_unlock(c, r);
        return;
    }
    enqueue(&c->engine->posted, &c->engine->posted_end, r);
    zkl__worker_kick_locked(c);
    pthread_mutex_unlock(&c->mu);
}

void zkl__report_from_worker(zkl_client *c, zkl__report *r)
{
    pthread_mutex_lock(&c->mu);
    if (c->engine->efd >= 0) {
        queue_for_dispatch_unlock(c, r);
        return;
    }
    pthread_mutex_unlock(&c->mu);
    r->deliver(r);
}

zkl__report *zkl__reports_take(zkl_client *c)
{
    zkl__report *list;
    pthread_mutex_lock(&c->mu);
    list = c->engine->reports;
    c->engine->reports = c->engine->reports_end = NULL;
    pthread_mutex_unlock(&c->mu);
    return list;
}

bool zkl__reports_by_dispatch(zkl_client *c)
{
    bool fd;
    pthread_mutex_lock(&c->mu);
    fd = c->engine && c->engine->efd >= 0;
    pthread_mutex_unlock(&c->mu);
    return fd;
}
