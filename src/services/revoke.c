/*
 * revoke.c - see revoke.h. An entry is shared by its owner (until stop), the
 * ZooKeeper client (one reference for a pending getData, one for an armed
 * watch) and the worker while it calls out; it is freed when the last one
 * lets go. Replies and watch events only set flags under c->mu; the worker's
 * revocation phase (zkl__revs_turn) sends the getData calls and runs the
 * callbacks.
 */
#include <stdlib.h>
#include <string.h>
#include <utlist.h>
#include <zookeeper/zookeeper.h>

#include "base/fault.h"
#include "base/log.h"
#include "base/status.h"
#include "base/tsan.h"
#include "base/seq.h"
#include "base/tuning.h"
#include "base/util.h"
#include "requests/calls.h"
#include "requests/rc.h"
#include "requests/retry.h"
#include "services/revoke.h"
#include "zklock/revoke.h"

/* the marker reaches rev_data with no allocation on the st transport */
_Static_assert(sizeof ZKL_REVOKE_MARKER - 1 <= ZKL_TRAMP_VALUE_INLINE,
               "the revocation marker must fit a trampoline's value");

struct zkl__revwatch {
    zkl_client *c;
    char *node;
    uint64_t epoch;
    zkl__revoke_cb cb;      /* the marker was written (NULL: not looked for) */
    zkl__revoke_cb gone_cb; /* the node was deleted (NULL: not told) */
    void *ctx;
    int refs;
    int zk_refs;            /* of refs, held by the ZooKeeper client ... */
    zkl__session *armed_on; /* ... for this session */
    bool registered, rearm, fire, gone, fired, running;
    zkl__revwatch *next;
};

struct zkl__revs {
    zkl__revwatch *list; /* utlist */
    int64_t retry_at_us; /* a watch that could not be sent is tried again then (0: none) */
    int failures;        /* watches not sent in a row (the retry's back-off) */
    uint64_t connects;   /* c->conn.connects when the watches were last armed */
    bool dirty;          /* something for the phase to do */
};

zkl_status zkl__revs_init(zkl_client *c)
{
    c->revs = calloc(1, sizeof *c->revs);
    return c->revs ? ZKL_OK : zkl__fail(ZKL_ENOMEM, "out of memory");
}

void zkl__revs_free(zkl_client *c)
{
    zkl__revwatch *r, *next;
    if (!c->revs)
        return;
    LL_FOREACH_SAFE(c->revs->list, r, next)
    {
        free(r->node);
        free(r);
    }
    free(c->revs);
    c->revs = NULL;
}

/* Caller holds c->mu. */
static void unref_locked(zkl__revwatch *r)
{
    if (--r->refs > 0)
        return;
    LL_DELETE(r->c->revs->list, r);
    free(r->node);
    free(r);
}

static void zk_unref_locked(zkl__revwatch *r)
{
    r->zk_refs--;
    unref_locked(r);
}

/* Caller holds c->mu. */
static void poke_locked(zkl_client *c)
{
    c->revs->dirty = true;
    zkl__worker_kick_locked(c);
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
        poke_locked(c);
    }
    if (type == ZOO_DELETED_EVENT && r->registered && r->gone_cb && !r->fired) {
        r->gone = true;
        poke_locked(c);
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
        if (r->registered && r->cb && !r->fired && len == (int)strlen(ZKL_REVOKE_MARKER) &&
            memcmp(value, ZKL_REVOKE_MARKER, (size_t)len) == 0) {
            r->fire = true;
            poke_locked(c);
        }
    } else {
        zk_unref_locked(r); /* no watch was left */
        if (zkl__rc_kind_of(rc) == ZKL__RC_RETRY && r->registered)
            r->rearm = true; /* armed again on reconnect */
        if (rc == ZNONODE && r->registered && r->gone_cb && !r->fired) {
            r->gone = true; /* deleted before the watch was set */
            poke_locked(c);
        }
    }
    zk_unref_locked(r);
    pthread_mutex_unlock(&c->mu);
}

zkl__revwatch *zkl__revwatch_start(zkl_client *c, const char *node, uint64_t epoch,
                                   zkl__revoke_cb cb, void *ctx)
{
    return zkl__nodewatch_start(c, node, epoch, cb, NULL, ctx);
}

zkl__revwatch *zkl__nodewatch_start(zkl_client *c, const char *node, uint64_t epoch,
                                    zkl__revoke_cb revoked, zkl__revoke_cb gone, void *ctx)
{
    zkl__revwatch *r = calloc(1, sizeof *r);
    if (!r || !(r->node = strdup(node))) {
        free(r);
        return NULL;
    }
    r->c = c;
    r->epoch = epoch;
    r->cb = revoked;
    r->gone_cb = gone;
    r->ctx = ctx;
    r->refs = 1;
    r->registered = true;
    r->rearm = true;
    pthread_mutex_lock(&c->mu);
    LL_PREPEND(c->revs->list, r);
    poke_locked(c);
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
    while (r->running && !zkl__on_worker(c))
        pthread_cond_wait(&c->cv, &c->mu);
    unref_locked(r);
    pthread_mutex_unlock(&c->mu);
}

/* Run r's callback (revoked, or gone), once, c->mu released meanwhile. */
static void fire_locked(zkl_client *c, zkl__revwatch *r)
{
    zkl__revoke_cb cb = r->fire ? r->cb : r->gone_cb;
    bool gone = !r->fire;
    int stall;
    r->fire = r->gone = false;
    r->fired = true;
    r->refs++; /* ours while the callback runs */
    r->running = true;
    pthread_mutex_unlock(&c->mu);
    if (gone && (stall = ZKL_FAULT(c, GONE_STALL_MS, NULL)) > 0)
        zkl__sleep_ms(stall);
    cb(r->ctx);
    pthread_mutex_lock(&c->mu);
    r->running = false;
    pthread_cond_broadcast(&c->cv);
    unref_locked(r);
}

/* Arm r's watch on session s with a getData (c->mu held). */
static void arm_locked(zkl_client *c, zkl__revwatch *r, zkl__session *s)
{
    int rc;
    r->rearm = false;
    r->refs += 2; /* the reply and the watch */
    r->zk_refs += 2;
    r->armed_on = s;
    ZKL_PUBLISH(r);
    rc = zkl__zk_send_wget(s, r->node, rev_watcher, r, rev_data, r);
    if (rc == ZOK) {
        c->revs->failures = 0;
        return;
    }
    /* Not sent (the client could not queue it): a hold made revocable must
     * still hear a revoke, so the phase tries again, backing off; a marker
     * written meanwhile is read by the getData that arms the watch. */
    r->zk_refs -= 2;
    r->refs -= 2;
    r->rearm = true;
    c->revs->failures++;
    c->revs->retry_at_us = zkl__now_us() + zkl__retry_delay_ms(c->revs->failures, 6) * 1000;
    zkl__log(ZKL_LOG_WARN, "revocation watch on %s: %s; trying again", r->node, zerror(rc));
}

int64_t zkl__revs_turn(zkl_client *c, int64_t now_us)
{
    struct zkl__revs *v = c->revs;
    zkl__revwatch *r;
    if (v->connects != c->conn.connects) { /* (re)connected: armed again */
        v->connects = c->conn.connects;
        v->dirty = true;
    }
    if (v->retry_at_us > 0 && now_us >= v->retry_at_us) { /* a watch not sent: again now */
        v->retry_at_us = 0;
        v->dirty = true;
    }
    if (!v->dirty) /* nothing to do before the retry, if one is pending */
        return v->retry_at_us > 0 ? v->retry_at_us : INT64_MAX;
    v->dirty = false;
    LL_FOREACH(v->list, r)
    {
        zkl__session *s;
        if (!r->registered)
            continue;
        if (r->fire || r->gone) {
            fire_locked(c, r);
            v->dirty = true; /* the list may have changed: look again */
            return 0;
        }
        if (r->rearm && (s = zkl__session_live_locked(c, r->epoch)) != NULL)
            arm_locked(c, r, s);
    }
    return 0;
}

void zkl__revs_closed_locked(zkl_client *c, zkl__session *s)
{
    zkl__revwatch *r, *next;
    LL_FOREACH_SAFE(c->revs->list, r, next)
    {
        if (r->armed_on == s && r->zk_refs > 0) {
            r->refs -= r->zk_refs - 1;
            r->zk_refs = 0;
            unref_locked(r);
        }
    }
}

static int set_marker(zkl__session *s, void *node)
{
    return zkl__zk_set(s, node, ZKL_REVOKE_MARKER, (int)strlen(ZKL_REVOKE_MARKER));
}

zkl_status zkl_revoke(zkl_client *c, const char *node)
{
    ZKL__REFUSE_IN_LOG();
    zkl_status st;
    int rc;
    zkl__clear_err();
    if (!c || !node)
        return zkl__fail(ZKL_EINVAL, "zkl_revoke: NULL argument");
    if (node[0] != '/')
        return zkl__fail(ZKL_EBADPATH, "zkl_revoke: node path must be absolute: '%.200s'", node);
    if (strstr(strrchr(node, '/'), ZKL_LATCH_MARKER)) /* issue 56, item 5 */
        return zkl__fail(ZKL_EINVAL,
                         "zkl_revoke: '%.200s' is a leader latch's node: latches are not "
                         "revocable, and a write of its data would use up the one-shot watch of "
                         "a Curator LeaderLatch waiting behind it, which would then never see it "
                         "go (leave the election instead: zkl_latch_leave)",
                         node);
    st = zkl__retrying(c, zkl__now_ms() + c->cfg.opts.connect_timeout_ms, set_marker, (void *)node,
                       &rc);
    if (st != ZKL_OK)
        return st;
    if (rc == ZNONODE) /* already released: nothing to revoke (as Curator's Revoker) */
        return ZKL_OK;
    return rc == ZOK ? ZKL_OK : zkl__from_zk(rc, "revoke", node);
}
