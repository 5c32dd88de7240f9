/*
 * revoke.c - see revoke.h. An entry is shared by its owner (until stop), the
 * ZooKeeper client (one reference for a pending getData, one for an armed
 * watch) and the worker while it calls out; it is freed when the last one
 * lets go. Replies and watch events only set flags under c->mu; the worker
 * (zkl__revs_work) sends the getData calls and runs the callbacks.
 */
#include <stdlib.h>
#include <zookeeper/zookeeper.h>

#include "base/status.h"
#include "requests/calls.h"
#include "zklock/revoke.h"
#include <string.h>

#include "base/log.h"
#include "services/revoke.h"
#include "base/tsan.h"
#include "base/util.h"

struct zkl__revwatch {
    zkl_client *c;
    char *node;
    uint64_t epoch;
    zkl__revoke_cb cb;
    void *ctx;
    int refs;
    int zk_refs;            /* of refs, held by the ZooKeeper client ... */
    zkl__session *armed_on; /* ... for this session */
    bool registered, rearm, fire, fired, running;
    zkl__revwatch *next;
};

/* Caller holds c->mu. */
static void unref_locked(zkl__revwatch *r)
{
    zkl__revwatch **pp;
    if (--r->refs > 0)
        return;
    for (pp = &r->c->revs; *pp; pp = &(*pp)->next)
        if (*pp == r) {
            *pp = r->next;
            break;
        }
    free(r->node);
    free(r);
}

static void zk_unref_locked(zkl__revwatch *r)
{
    r->zk_refs--;
    unref_locked(r);
}

static void rev_watcher(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
    zkl__revwatch *r = ctx;
    zkl_client *c;
    (void)zh;
    (void)state;
    (void)path;
    ZKL_RECEIVED(r);
    if (type == ZOO_SESSION_EVENT)
        return;
    c = r->c;
    pthread_mutex_lock(&c->mu);
    if (type == ZOO_CHANGED_EVENT && r->registered) {
        r->rearm = true;
        c->revs_dirty = true;
        pthread_cond_signal(&c->wcv);
    }
    zk_unref_locked(r);
    pthread_mutex_unlock(&c->mu);
}

static void rev_data(int rc, const char *value, int len, const struct Stat *stat, const void *data)
{
    zkl__revwatch *r = (zkl__revwatch *)data;
    zkl_client *c;
    (void)stat;
    ZKL_RECEIVED(r);
    c = r->c;
    pthread_mutex_lock(&c->mu);
    if (rc == ZOK) {
        if (r->registered && !r->fired && len == (int)strlen(ZKL_REVOKE_MARKER) &&
            memcmp(value, ZKL_REVOKE_MARKER, (size_t)len) == 0) {
            r->fire = true;
            c->revs_dirty = true;
            pthread_cond_signal(&c->wcv);
        }
    } else {
        zk_unref_locked(r); /* no watch was left */
        if (zkl__zk_retryable(rc) && r->registered)
            r->rearm = true; /* armed again on reconnect */
    }
    zk_unref_locked(r);
    pthread_mutex_unlock(&c->mu);
}

zkl__revwatch *zkl__revwatch_start(zkl_client *c, const char *node, uint64_t epoch,
                                   zkl__revoke_cb cb, void *ctx)
{
    zkl__revwatch *r = calloc(1, sizeof *r);
    if (!r || !(r->node = strdup(node))) {
        free(r);
        return NULL;
    }
    r->c = c;
    r->epoch = epoch;
    r->cb = cb;
    r->ctx = ctx;
    r->refs = 1;
    r->registered = true;
    r->rearm = true;
    pthread_mutex_lock(&c->mu);
    r->next = c->revs;
    c->revs = r;
    c->revs_dirty = true;
    pthread_cond_signal(&c->wcv);
    pthread_mutex_unlock(&c->mu);
    return r;
}

void zkl__revwatch_stop(zkl__revwatch *r)
{
    zkl_client *c;
    if (!r)
        return;
    c = r->c;
    pthread_mutex_lock(&c->mu);
    r->registered = false;
    /* The owner may free what ctx points to once we return: wait out a
     * callback that is running now, unless we are inside it. */
    while (r->running && !pthread_equal(pthread_self(), c->worker))
        pthread_cond_wait(&c->cv, &c->mu);
    unref_locked(r);
    pthread_mutex_unlock(&c->mu);
}

void zkl__revs_work(zkl_client *c)
{
    zkl__revwatch *r;
    bool again = true;
    c->revs_dirty = false;
    while (again) {
        again = false;
        for (r = c->revs; r; r = r->next) {
            if (!r->registered)
                continue;
            if (r->fire) {
                r->fire = false;
                r->fired = true;
                r->refs++; /* ours while the callback runs */
                r->running = true;
                pthread_mutex_unlock(&c->mu);
                r->cb(r->ctx);
                pthread_mutex_lock(&c->mu);
                r->running = false;
                pthread_cond_broadcast(&c->cv);
                unref_locked(r);
                again = true; /* the list may have changed */
                break;
            }
            if (r->rearm && c->connected && c->sess->epoch == r->epoch && !c->sess->expired) {
                int rc;
                r->rearm = false;
                r->refs += 2; /* the reply and the watch */
                r->zk_refs += 2;
                r->armed_on = c->sess;
                ZKL_HANDOFF(r);
                atomic_fetch_add(&c->requests, 1);
                rc = zoo_awget(c->sess->zh, r->node, rev_watcher, r, rev_data, r);
                if (rc != ZOK) {
                    /* Not sent (the client could not queue it): a hold made
                     * revocable must still hear a revoke, so the worker tries
                     * again, backing off; a marker written meanwhile is read
                     * by the getData that arms the watch. */
                    r->zk_refs -= 2;
                    r->refs -= 2;
                    r->rearm = true;
                    c->revs_failures++;
                    c->revs_retry_at = zkl__now_ms() + zkl__retry_delay_ms(c->revs_failures, 6);
                    zkl__log(ZKL_LOG_WARN, "revocation watch on %s: %s; trying again", r->node,
                             zerror(rc));
                } else {
                    c->revs_failures = 0;
                }
            }
        }
    }
}

void zkl__revs_session_gone(zkl_client *c, zkl__session *s)
{
    zkl__revwatch *r = c->revs, *next;
    for (; r; r = next) {
        next = r->next;
        if (r->armed_on == s && r->zk_refs > 0) {
            r->refs -= r->zk_refs - 1;
            r->zk_refs = 0;
            unref_locked(r);
        }
    }
}

void zkl__revs_free_all(zkl_client *c)
{
    zkl__revwatch *r, *next;
    for (r = c->revs; r; r = next) {
        next = r->next;
        free(r->node);
        free(r);
    }
    c->revs = NULL;
}

zkl_status zkl_revoke(zkl_client *c, const char *node)
{
    zkl__session *s;
    zkl_status st;
    int rc, attempt = 0;
    int64_t deadline, prev;
    zkl__clear_err();
    if (!c || !node)
        return zkl__fail(ZKL_EINVAL, "zkl_revoke: NULL argument");
    if (node[0] != '/')
        return zkl__fail(ZKL_EBADPATH, "zkl_revoke: node path must be absolute: '%.200s'", node);
    deadline = zkl__now_ms() + c->opts.connect_timeout_ms;
    st = zkl__session_get(c, deadline, &s);
    if (st != ZKL_OK)
        return st;
    prev = zkl__call_deadline(deadline);
    do {
        rc = zkl__zk_set(s, node, ZKL_REVOKE_MARKER, (int)strlen(ZKL_REVOKE_MARKER));
    } while (zkl__zk_retryable(rc) && zkl__backoff(c, &attempt, deadline));
    zkl__call_deadline(prev);
    zkl__session_put(s);
    if (rc == ZNONODE) /* already released: nothing to revoke (as Curator's Revoker) */
        return ZKL_OK;
    return rc == ZOK ? ZKL_OK : zkl__from_zk(rc, "revoke", node);
}
