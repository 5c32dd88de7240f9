/*
 * calls.c - blocking ZooKeeper calls (calls.h): the requests of pending.h,
 * sent with no one to tell, and waited for on the call's own condition
 * until the thread's call deadline.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/fault.h"
#include "base/util.h"
#include "requests/call.h"
#include "requests/calls.h"
#include "requests/pending.h"
#include "session/transport.h"

static _Thread_local int64_t call_deadline = INT64_MAX;

int64_t zkl__call_deadline(int64_t deadline)
{
    int64_t prev = call_deadline;
    call_deadline = deadline;
    return prev;
}

/*
 * Wait for the reply, or until this thread's call deadline: then
 * ZOPERATIONTIMEOUT (retryable: the request may still be applied). The
 * waiter still holds its reference: drop it after taking the results.
 */
int zkl__call_wait(zkl__req *k, bool *answered)
{
    int rc;
    pthread_mutex_lock(&k->mu);
    while (!k->done)
        if (zkl__cond_wait_until(&k->cv, &k->mu, call_deadline) == ETIMEDOUT)
            break;
    *answered = k->done != 0;
    rc = k->done ? k->rc : ZOPERATIONTIMEOUT;
    pthread_mutex_unlock(&k->mu);
    return rc;
}

static _Thread_local struct zkl__call **kept_slot;
static _Thread_local pthread_mutex_t *kept_mu;

void zkl__call_keep_in(struct zkl__call **slot, pthread_mutex_t *mu)
{
    kept_slot = slot;
    kept_mu = mu;
}

static void keep(zkl__req *k)
{
    pthread_mutex_lock(kept_mu);
    *kept_slot = k;
    pthread_mutex_unlock(kept_mu);
}

static int req_wait(zkl__req *k)
{
    bool answered;
    int rc, ms;
    if (!kept_slot)
        return zkl__call_wait(k, &answered);
    keep(k);
    rc = zkl__call_wait(k, &answered);
    if ((ms = ZKL_FAULT(k->c, KEPT_CALL_MS, NULL)) > 0)
        zkl__sleep_ms(ms);
    keep(NULL); /* (the caller takes the results and lets go: a few instructions on) */
    return rc;
}

/* Wait for a request sent (k) or not (NULL, with send_rc); the rc. Keeps k. */
static int wait_sent(zkl__req *k, int send_rc)
{
    return k ? req_wait(k) : send_rc;
}

int zkl__zk_children(zkl__session *s, const char *path, zkl__names *out)
{
    int rc;
    zkl__req *k = zkl__req_children(s, path, NULL, NULL, NULL, &rc);
    if (!k)
        return rc;
    rc = req_wait(k);
    if (rc == ZOK)
        zkl__req_take_kids(k, out);
    zkl__call_put(k);
    return rc;
}

int zkl__zk_exists(zkl__session *s, const char *path, struct Stat *stat)
{
    int rc;
    zkl__req *k = zkl__req_exists(s, path, NULL, NULL, &rc);
    if (!k)
        return rc;
    rc = req_wait(k);
    if (rc == ZOK && stat)
        *stat = k->stat;
    zkl__call_put(k);
    return rc;
}

int zkl__zk_get(zkl__session *s, const char *path, char **data, int *len, struct Stat *stat)
{
    call *k = zkl__call_new(s);
    int rc;
    if (!k)
        return ZSYSTEMERROR;
    zkl__count_request(s->c, ZKL__REQ_GET);
    rc = ZKL_ZK(s, zoo_aget(s->zh, path, 0, zkl__on_data, k));
    if (rc != ZOK) {
        zkl__call_free(k);
        return rc;
    }
    rc = req_wait(k);
    if (rc == ZOK) {
        *data = k->data;
        *len = k->datalen;
        k->data = NULL;
        if (stat)
            *stat = k->stat;
    }
    zkl__call_put(k);
    return rc;
}

/* A request whose reply carries nothing but its rc. */
static int wait_void(zkl__req *k, int send_rc)
{
    int rc = wait_sent(k, send_rc);
    if (k)
        zkl__call_put(k);
    return rc;
}

int zkl__zk_delete(zkl__session *s, const char *path)
{
    int rc;
    zkl__req *k = zkl__req_delete(s, path, NULL, NULL, &rc);
    return wait_void(k, rc);
}

int zkl__zk_sync(zkl__session *s, const char *path)
{
    int rc;
    zkl__req *k = zkl__req_sync(s, path, NULL, NULL, &rc);
    return wait_void(k, rc);
}

int zkl__zk_set(zkl__session *s, const char *path, const void *data, int len)
{
    call *k = zkl__call_new(s);
    int rc;
    if (!k)
        return ZSYSTEMERROR;
    zkl__call_proves(k);
    zkl__count_request(s->c, ZKL__REQ_SET);
    rc = ZKL_ZK(s, zoo_aset(s->zh, path, (const char *)data, len, -1, zkl__on_stat, k));
    if (rc != ZOK) {
        zkl__call_free(k);
        return rc;
    }
    return wait_void(k, ZOK);
}

/* ---- requests whose reply goes to the caller's own completion ---- */

/* The caller's own completion or watcher, run once the handle is let go
 * (session/transport.h): what it is given is copied first. Each is run
 * once: a watcher's session events are not passed on (zkl__zk_send_wget). */
typedef struct tramp {
    zkl__zk_owned owned; /* a watcher's, until it fires (first: freed as one) */
    zkl__session *s;     /* a watcher's */
    void_completion_t vdone;
    string_completion_t sdone;
    data_completion_t ddone;
    watcher_fn watcher;
    const void *ctx;
    zkl__delivery run; /* the call, deferred */
    /* a data completion's value, if it fits (else run.q, allocated): the
     * revocation marker always does, so no allocation can lose a revoke */
    char value[ZKL_TRAMP_VALUE_INLINE];
} tramp;

static tramp *tramp_new(void_completion_t v, string_completion_t st, data_completion_t d,
                        const void *ctx, watcher_fn w)
{
    tramp *t = calloc(1, sizeof *t);
    if (t) {
        t->vdone = v;
        t->sdone = st;
        t->ddone = d;
        t->ctx = ctx;
        t->watcher = w;
    }
    return t;
}

static void tramp_run(zkl__delivery *d)
{
    tramp *t = d->p;
    if (t->vdone)
        t->vdone(d->a, t->ctx);
    else if (t->sdone)
        t->sdone(d->a, NULL, t->ctx);
    else if (t->ddone)
        t->ddone(d->a, d->q ? d->q : (d->x > 0 ? t->value : NULL), (int)d->x, NULL, t->ctx);
    else
        t->watcher(NULL, d->a, d->b, NULL, (void *)t->ctx);
    free(d->q);
    free(t);
}

static void tramp_defer(tramp *t, int a, int b, const char *value, int len)
{
    t->run = (zkl__delivery){.fn = tramp_run, .p = t, .a = a, .b = b};
    if (value && len > 0 && len <= (int)sizeof t->value) {
        memcpy(t->value, value, (size_t)len);
        t->run.x = len;
    } else if (value && len > 0 && (t->run.q = malloc((size_t)len))) {
        memcpy(t->run.q, value, (size_t)len);
        t->run.x = len; /* (out of memory: told as no data) */
    }
    if (!zkl__defer(&t->run))
        tramp_run(&t->run);
}

static void void_tramp(int rc, const void *data)
{
    tramp_defer((tramp *)data, rc, 0, NULL, 0);
}

static void string_tramp(int rc, const char *value, const void *data)
{
    (void)value;
    tramp_defer((tramp *)data, rc, 0, NULL, 0);
}

static void data_tramp(int rc, const char *value, int len, const struct Stat *stat,
                       const void *data)
{
    (void)stat;
    tramp_defer((tramp *)data, rc, 0, value, len);
}

static void watch_tramp(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
    (void)zh;
    (void)path;
    tramp *t = ctx;
    if (type == ZOO_SESSION_EVENT)
        return; /* the session's own watcher has it; the node's event comes once */
    zkl__zk_owned_set(t->s, &t->owned, false); /* (under the handle's mutex) */
    tramp_defer(t, type, state, NULL, 0);
}

int zkl__zk_send_delete(zkl__session *s, const char *path, void_completion_t done, const void *ctx)
{
    zkl__count_request(s->c, ZKL__REQ_DELETE);
    tramp *t = tramp_new(done, NULL, NULL, ctx, NULL);
    if (!t)
        return ZSYSTEMERROR;
    int rc = ZKL_ZK(s, zoo_adelete(s->zh, path, -1, void_tramp, t));
    if (rc != ZOK)
        free(t);
    return rc;
}

int zkl__zk_send_sync(zkl__session *s, string_completion_t done, const void *ctx)
{
    zkl__count_request(s->c, ZKL__REQ_SYNC);
    tramp *t = tramp_new(NULL, done, NULL, ctx, NULL);
    if (!t)
        return ZSYSTEMERROR;
    int rc = ZKL_ZK(s, zoo_async(s->zh, "/", string_tramp, t));
    if (rc != ZOK)
        free(t);
    return rc;
}

int zkl__zk_send_wget(zkl__session *s, const char *path, watcher_fn watcher, void *wctx,
                      data_completion_t done, const void *ctx)
{
    zkl__count_request(s->c, ZKL__REQ_GET);
    tramp *t = tramp_new(NULL, NULL, done, ctx, NULL),
          *tw = tramp_new(NULL, NULL, NULL, wctx, watcher);
    if (!t || !tw) {
        free(t);
        free(tw);
        return ZSYSTEMERROR;
    }
    tw->s = s;
    zkl__zk_enter(s);
    int rc = zoo_awget(s->zh, path, watch_tramp, tw, data_tramp, t);
    if (rc == ZOK)
        zkl__zk_owned_set(s, &tw->owned, true); /* (before the watch can fire: the mutex is held) */
    zkl__zk_leave(s);
    if (rc != ZOK) {
        free(t);
        free(tw);
    }
    return rc;
}
