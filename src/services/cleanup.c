/*
 * cleanup.c - see cleanup.h. State lives in struct zkl__cleanup under c->mu:
 * the background queue (tried by the worker, one delete at a time, backing
 * off while the server is unreachable), the deletes in flight (each freed by
 * its completion, or abandoned when its session closes) and the held-back
 * deletes (sent by the next request's before-send hook, by a multi that
 * carries them, or by the worker when their moment is up).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <utlist.h>

#include "base/fault.h"
#include "base/log.h"
#include "base/path.h"
#include "base/status.h"
#include "base/tsan.h"
#include "base/util.h"
#include "requests/call.h"
#include "requests/calls.h"
#include "requests/rc.h"
#include "services/cleanup.h"

typedef struct bgdel {
    char *path;   /* node to delete, or the parent when prefix is set */
    char *prefix; /* delete every child of path whose name starts with it */
    struct bgdel *prev, *next;
} bgdel;

typedef struct async_delete {
    zkl_client *c;
    zkl__session *s;
    struct async_delete *prev, *next;
    char path[];
} async_delete;

struct zkl__cleanup {
    bgdel *queue;         /* the background queue, oldest first (utlist) */
    async_delete *flying; /* deletes sent, reply still due (utlist) */
    zkl__heldback *held_back;
    _Atomic int n_held_back; /* read without c->mu by every request */
    int64_t retry_at_us;     /* the queue's next try after a failure */
    int failures;            /* tries failed in a row (the backoff) */
    int flying_n;
    int drainers; /* threads waiting for deletes to finish (on c->cv) */
    /* The delete the worker is trying, off the queue, and the request of it
     * in flight (zkl__call_keep_in): reachable from the client, not only
     * from the worker's stack, so that a fork()ed child reaches them
     * (client/fork.c) and frees them with its copy of the client. */
    bgdel *trying;
    struct zkl__call *call;
    /* Held-back deletes a flush took off held_back, until each is sent:
     * reachable as trying is (a flush runs on the worker, or on a thread
     * about to send a request). */
    zkl__heldback *flushing;
    /* Held-back deletes taken off held_back (on flushing, or carried in a
     * create's multi) and not yet done: a drain waits for them too. */
    int taken;
    uint64_t queued;
};

zkl_status zkl__cleanup_init(zkl_client *c)
{
    c->cleanup = calloc(1, sizeof *c->cleanup);
    return c->cleanup ? ZKL_OK : zkl__fail(ZKL_ENOMEM, "out of memory");
}

static void bg_free(bgdel *d)
{
    free(d->path);
    free(d->prefix);
    free(d);
}

void zkl__cleanup_free(zkl_client *c)
{
    bgdel *d, *n;
    zkl__heldback *f, *fn;
    if (!c->cleanup)
        return;
    for (d = c->cleanup->queue; d; d = n) { /* all of it: no unlinking */
        n = d->next;
        bg_free(d);
    }
    /* (set only in a fork()ed child: the parent's worker, gone here, was
     * trying them; a close joins the worker first) */
    if (c->cleanup->trying)
        bg_free(c->cleanup->trying);
    if (c->cleanup->call)
        zkl__call_free(c->cleanup->call);
    /* Held-back deletes are flushed before a close; in a fork()ed child they
     * are the parent's, and only their memory is ours (their sessions go
     * with the client). */
    for (f = c->cleanup->held_back; f; f = fn) {
        fn = f->next;
        free(f);
    }
    for (f = c->cleanup->flushing; f; f = fn) { /* (as trying: set only in a fork()ed child) */
        fn = f->next;
        free(f);
    }
    free(c->cleanup);
    c->cleanup = NULL;
}

/* ---- the background queue ---- */

void zkl__bg_delete_locked(zkl_client *c, const char *path, const char *prefix)
{
    bgdel *d = calloc(1, sizeof *d);
    if (d) {
        d->path = strdup(path);
        d->prefix = prefix ? strdup(prefix) : NULL;
    }
    if (!d || !d->path || (prefix && !d->prefix)) {
        /* Cannot queue: the node still goes with the session. */
        zkl__log(ZKL_LOG_ERROR, "out of memory queueing the delete of %s", path);
        if (d)
            bg_free(d);
        return;
    }
    c->cleanup->queued++;
    DL_APPEND(c->cleanup->queue, d);
    zkl__worker_kick_locked(c);
}

void zkl__bg_delete(zkl_client *c, const char *path, const char *prefix)
{
    pthread_mutex_lock(&c->mu);
    zkl__bg_delete_locked(c, path, prefix);
    pthread_mutex_unlock(&c->mu);
}

/* Every child of d->path with d->prefix; ZOK when none is left. The
 * listing goes behind a sync: a create of ours still pending at the leader
 * may be missing from a follower's listing (core/engine/create.c). */
static int delete_prefixed(zkl__session *s, const bgdel *d)
{
    zkl__names kids = {0};
    size_t i;
    int rc = zkl__zk_sync(s, d->path);
    if (rc == ZOK)
        rc = zkl__zk_children(s, d->path, &kids);
    if (rc == ZNONODE)
        return ZOK;
    for (i = 0; i < kids.n && rc == ZOK; i++) {
        if (strncmp(kids.v[i], d->prefix, strlen(d->prefix)) == 0) {
            char *p = zkl__path_join(d->path, kids.v[i]);
            rc = p ? zkl__zk_delete(s, p) : ZSYSTEMERROR;
            if (rc == ZNONODE)
                rc = ZOK;
            free(p);
        }
    }
    zkl__names_free(&kids);
    return rc;
}

/* One try at a queued delete; ZOK when it is done for good. */
static int bg_try(zkl__session *s, const bgdel *d)
{
    int rc;
    if (d->prefix)
        return delete_prefixed(s, d);
    rc = zkl__zk_delete(s, d->path);
    return rc == ZNONODE ? ZOK : rc;
}

int64_t zkl__bg_turn(zkl_client *c, int64_t now_us)
{
    struct zkl__cleanup *k = c->cleanup;
    bgdel *d = k->queue;
    zkl__session *s = c->conn.sess;
    bool fault;
    int rc;
    if (!d || !c->conn.connected || s->expired)
        return INT64_MAX; /* a state change wakes the worker */
    if (now_us < k->retry_at_us)
        return k->retry_at_us;
    fault = ZKL_FAULT(c, BG_DELETE_LOST, NULL) != 0;
    DL_DELETE(k->queue, d);
    k->trying = d;
    s->refs++;
    pthread_mutex_unlock(&c->mu);
    zkl__call_keep_in(&k->call, &c->mu);
    rc = fault ? ZCONNECTIONLOSS : bg_try(s, d);
    zkl__call_keep_in(NULL, NULL);
    zkl__session_put(s);
    pthread_mutex_lock(&c->mu);
    k->trying = NULL;
    if (rc == ZOK ||
        !(zkl__rc_kind_of(rc) == ZKL__RC_RETRY || rc == ZSESSIONEXPIRED || rc == ZINVALIDSTATE)) {
        if (rc != ZOK)
            zkl__log(ZKL_LOG_ERROR, "giving up deleting %s: %s", d->path, zerror(rc));
        bg_free(d);
        k->failures = 0;
        k->retry_at_us = 0;
    } else { /* back to the front; retried after a pause */
        DL_PREPEND(k->queue, d);
        k->failures++;
        k->retry_at_us = zkl__now_us() + zkl__retry_delay_ms(k->failures, 5) * 1000;
    }
    pthread_cond_broadcast(&c->cv);
    return 0;
}

/* ---- deletes in flight ---- */

/* Caller holds c->mu. */
static void flying_done_locked(async_delete *d)
{
    struct zkl__cleanup *k = d->c->cleanup;
    DL_DELETE(k->flying, d);
    k->flying_n--;
    if (k->drainers > 0) /* not the lock waiters: nothing for them here */
        pthread_cond_broadcast(&d->c->cv);
}

/* In a ZooKeeper delivery: record the outcome; no ZooKeeper call here. */
static void on_async_delete(int rc, const void *data)
{
    async_delete *d = (async_delete *)data;
    zkl_client *c;
    ZKL_RECEIVED(data);
    c = d->c;
    pthread_mutex_lock(&c->mu);
    if (rc != ZOK && rc != ZNONODE)
        zkl__bg_delete_locked(c, d->path, NULL);
    flying_done_locked(d);
    pthread_mutex_unlock(&c->mu);
    free(d);
}

void zkl__cleanup_closed_locked(zkl_client *c, zkl__session *s)
{
    struct zkl__cleanup *k = c->cleanup;
    async_delete *d, *next;
    /* zookeeper_close does not call every pending completion: the nodes go
     * to the background in case the session lives on */
    DL_FOREACH_SAFE(k->flying, d, next)
    {
        if (d->s != s)
            continue;
        /* d is in the list, so its head is not NULL (beyond the analyzer) */
        DL_DELETE(k->flying, d); // NOLINT(clang-analyzer-core.NullDereference)
        k->flying_n--;
        zkl__bg_delete_locked(c, d->path, NULL);
        free(d);
    }
    pthread_cond_broadcast(&c->cv); /* drain waits on the count */
}

int zkl__delete_async(zkl__session *s, const char *path)
{
    size_t n = strlen(path);
    async_delete *d = malloc(sizeof *d + n + 1);
    zkl_client *c = s->c;
    int rc;
    if (!d)
        return ZSYSTEMERROR;
    d->c = c;
    d->s = s;
    memcpy(d->path, path, n + 1);
    pthread_mutex_lock(&c->mu);
    c->cleanup->flying_n++;
    DL_PREPEND(c->cleanup->flying, d);
    pthread_mutex_unlock(&c->mu);
    ZKL_PUBLISH(d);
    rc = zkl__zk_send_delete(s, path, on_async_delete, d);
    if (rc != ZOK) {
        pthread_mutex_lock(&c->mu);
        flying_done_locked(d);
        pthread_mutex_unlock(&c->mu);
        free(d);
    }
    return rc;
}

/* ---- held-back deletes ---- */

void zkl__hold_back_delete(zkl__session *s, const char *path, int window_us)
{
    zkl_client *c = s->c;
    size_t n = strlen(path);
    zkl__heldback *d = malloc(sizeof *d + n + 1);
    if (!d) { /* no memory to hold it back: send it now */
        if (zkl__delete_async(s, path) != ZOK)
            zkl__bg_delete(c, path, NULL);
        return;
    }
    memcpy(d->path, path, n + 1);
    d->s = s;
    d->due_us = zkl__now_us() + window_us;
    d->next = NULL;
    pthread_mutex_lock(&c->mu);
    s->refs++;
    LL_APPEND(c->cleanup->held_back, d);
    atomic_fetch_add(&c->cleanup->n_held_back, 1);
    zkl__worker_alarm_locked(c, d->due_us); /* not woken now: its alarm */
    pthread_mutex_unlock(&c->mu);
}

/* Unlink the held-back deletes that match (s, or due by due_us) into a list,
 * at most max. Caller holds c->mu. */
static zkl__heldback *take_locked(zkl_client *c, const zkl__session *s, int64_t due_us, int max)
{
    struct zkl__cleanup *k = c->cleanup;
    zkl__heldback *take = NULL, *d, *next;
    int n = 0;
    LL_FOREACH_SAFE(k->held_back, d, next)
    {
        if (n >= max)
            break;
        if ((s && d->s != s) || d->due_us > due_us)
            continue;
        LL_DELETE(k->held_back, d);
        d->next = NULL;
        LL_APPEND(take, d);
        n++;
        k->taken++;
        atomic_fetch_sub(&k->n_held_back, 1);
    }
    if (take && !k->held_back)
        zkl__worker_alarm_back_locked(c); /* taken before its moment: not woken for it */
    return take;
}

void zkl__take_held_back(zkl__session *s, zkl__heldback **into)
{
    zkl_client *c = s->c;
    if (atomic_load(&c->cleanup->n_held_back) == 0)
        return;
    pthread_mutex_lock(&c->mu);
    *into = take_locked(c, s, INT64_MAX, ZKL_MULTI_MAX); /* reachable from *into at once */
    pthread_mutex_unlock(&c->mu);
}

/* Send d's delete, unless applied: a node of a session that is gone goes
 * with it, or (lost only locally) is deleted through the current session
 * by the worker. */
static void held_back_send(zkl__heldback *d, bool applied)
{
    zkl_client *c = d->s->c;
    int ms;
    if (applied)
        return;
    if ((ms = ZKL_FAULT(c, HELD_BACK_SEND_MS, NULL)) > 0)
        zkl__sleep_ms(ms);
    if (!zkl__epoch_alive(c, d->s->epoch) || zkl__delete_async(d->s, d->path) != ZOK)
        zkl__bg_delete(c, d->path, NULL);
}

/*
 * d, done, off *list and freed in one hold of c->mu: reachable from the
 * client (or from the acquire that carried it) until its free, so that a
 * fork()ed child never finds it on this thread's stack alone (client/fork.c).
 * Its session reference goes in the same hold, unless it is the last: that
 * one goes through zkl__session_put, which closes the session (meanwhile
 * the session is on the poller's list, session/transport.c).
 */
static void held_back_release(zkl_client *c, zkl__heldback **list, zkl__heldback *d)
{
    struct zkl__cleanup *k = c->cleanup;
    zkl__session *last = d->s;
    pthread_mutex_lock(&c->mu);
    LL_DELETE(*list, d);
    free(d);
    if (last->refs > 1) { /* (as zkl__hold_back_delete took it) */
        last->refs--;
        last = NULL;
    }
    if (--k->taken == 0 && k->drainers > 0)
        pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
    if (last)
        zkl__session_put(last);
}

void zkl__held_back_done(zkl_client *c, zkl__heldback **list, bool applied)
{
    zkl__heldback *d;
    while ((d = *list) != NULL) { /* (only the carrying acquire's thread changes *list) */
        held_back_send(d, applied);
        held_back_release(c, list, d);
    }
}

void zkl__flush_held_back(zkl_client *c, bool due_only)
{
    struct zkl__cleanup *k = c->cleanup;
    int64_t due = due_only ? zkl__now_us() : INT64_MAX;
    zkl__heldback *d;
    /* one at a time, on the flushing list until it is done (a fork()ed
     * child reaches it there: client/fork.c) */
    for (;;) {
        pthread_mutex_lock(&c->mu);
        if ((d = take_locked(c, NULL, due, 1)) != NULL)
            LL_PREPEND(k->flushing, d);
        pthread_mutex_unlock(&c->mu);
        if (!d)
            return;
        held_back_send(d, false);
        held_back_release(c, &k->flushing, d);
    }
}

void zkl__cleanup_before_send(zkl_client *c)
{
    if (atomic_load(&c->cleanup->n_held_back) > 0)
        zkl__flush_held_back(c, false);
}

int64_t zkl__held_back_turn(zkl_client *c, int64_t now_us)
{
    const zkl__heldback *d;
    int64_t due = INT64_MAX;
    LL_FOREACH(c->cleanup->held_back, d)
    if (d->due_us < due)
        due = d->due_us;
    if (due > now_us)
        return due;
    pthread_mutex_unlock(&c->mu);
    zkl__flush_held_back(c, true);
    pthread_mutex_lock(&c->mu);
    return 0;
}

/* ---- waiting for it all ---- */

uint64_t zkl__cleanup_queued_locked(const zkl_client *c)
{
    return c->cleanup->queued;
}

zkl_status zkl__cleanup_drain(zkl_client *c, int64_t deadline, bool all)
{
    struct zkl__cleanup *k = c->cleanup;
    zkl_status st = ZKL_OK;
    zkl__flush_held_back(c, false);
    pthread_mutex_lock(&c->mu);
    k->drainers++;
    while (k->flying_n > 0 || k->taken > 0 || (all && (k->queue || k->trying))) {
        if (zkl__cond_wait_until(&c->cv, &c->mu, deadline) == ETIMEDOUT) {
            st = zkl__fail(ZKL_ETIMEDOUT, "background deletes still pending");
            break;
        }
    }
    k->drainers--;
    pthread_mutex_unlock(&c->mu);
    return st;
}
