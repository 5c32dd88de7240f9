/*
 * internals.c - the lock-internals core's entry points for the recipes
 * (see internals.h), beside the blocking acquire (engine.c, where it is
 * run): the release with its guaranteed cleanup, and the queries on a path.
 *
 * The acquire's steps (create.c, wait.c, grant.c) follow Curator's
 * LockInternals.attemptLock, with three changes that matter under faults:
 * the first listing rides with the create (one round trip instead of two),
 * a node found by its protected prefix after a lost create reply is adopted
 * only if its ephemeralOwner is our session (CURATOR-498), and a listing
 * taken after our session changed is never trusted (CURATOR-604).
 *
 * DESIGN
 *
 * The core stands on the client, services, requests, session and base
 * layers and is called only by the recipes (docs/ARCHITECTURE.md). A
 * blocking acquire is an operation of the engine (engine.c's DESIGN) run on
 * the caller's own thread, which sleeps on a condition of its own under
 * c->mu between steps; no step blocks and none holds c->mu across a call
 * out. Above it, a recipe's own lock (the reentrancy table's, the
 * semaphore's) may be held while the core takes c->mu, never the other way
 * round; no user callback runs on this thread. Releases and the queries
 * below use the requests layer's blocking calls.
 */
#include <stdlib.h>
#include <string.h>

#include "base/fault.h"
#include "base/log.h"
#include "base/path.h"
#include "base/seq.h"
#include "base/status.h"
#include "base/util.h"
#include "core/engine/acq.h"
#include "requests/calls.h"
#include "requests/rc.h"
#include "requests/retry.h"
#include "services/cleanup.h"
#include "services/lease.h"
#include "services/revoke.h"

/* How long a release holds its delete back (a test may tune it: base/fault.h). */
static int hold_back_us(zkl_client *c, bool alone)
{
    return (int)ZKL_TUNE(c, HOLD_BACK_US,
                         alone ? ZKL_HOLD_BACK_ALONE_US : ZKL_HOLD_BACK_CONTENDED_US);
}

/* A release in a fork()ed child: the hold is the parent's; nothing is sent. */
static zkl_status release_forked(zkl_client *c, zkl__hold *hold)
{
    (void)c;
    free(hold->node);
    hold->node = NULL;
    hold->rev = NULL; /* (the parent's revocation watch) */
    return zkl__fail(ZKL_ELOST, "the hold is the parent's: this process is a fork() child of "
                                "the one that holds it, and holds nothing");
}

zkl_status zkl__lock_release(zkl_client *c, zkl__hold *hold)
{
    bool alive;
    zkl__session *s = NULL;
    if (zkl__forked(c))
        return release_forked(c, hold);
    alive = zkl__hold_alive(c, hold->epoch);
    zkl__revwatch_stop(hold->rev);
    hold->rev = NULL;
    if (hold->node) {
        /* A lost hold's node is gone with its session, or (lost locally) goes
         * when the server expires it; the worker deletes it sooner if it can.
         * Either way the caller is not kept waiting. */
        if (!alive || zkl__session_get(c, zkl__now_ms(), &s) != ZKL_OK)
            s = NULL;
        /* Not waiting for the reply: others get the lock only once the
         * server has applied the delete, and this session's next request
         * is ordered after it. A delete that fails goes to the background. */
        if (!s || ZKL_FAULT(c, DELETE_LOST, NULL))
            zkl__bg_delete(c, hold->node, NULL);
        else
            /* Hold the delete back a moment, so that our next request
             * (typically the next acquire's create) carries it: one request
             * and one disk sync for both. Sent apart, the server syncs them
             * one after the other, and the next holder's delete queues
             * behind the second sync. If we were alone when we got it, only
             * whoever queued since can be kept waiting, and for longer; with
             * others in line, every one of them waits the window, so it is
             * short: a caller that re-acquires at once fits in it. */
            zkl__hold_back_delete(s, hold->node, hold_back_us(c, hold->alone));
        if (s)
            zkl__session_put(s);
        free(hold->node);
        hold->node = NULL;
    }
    zkl__lease_users(c, -1, 0);
    if (!alive)
        return zkl__fail(ZKL_ELOST, "the hold was lost before release (its session ended, or "
                                    "its lease ran out)");
    return ZKL_OK;
}

typedef struct exists_arg {
    const char *node;
    struct Stat *stat;
} exists_arg;

static int exists_try(zkl__session *s, void *arg)
{
    exists_arg *e = arg;
    return zkl__zk_exists(s, e->node, e->stat);
}

/* exists(path), connection losses retried within the connect timeout; *rc: the answer. */
static zkl_status stat_of(zkl_client *c, const char *path, struct Stat *stat, int *rc)
{
    exists_arg arg = {path, stat};
    return zkl__retrying(c, zkl__now_ms() + c->cfg.opts.connect_timeout_ms, exists_try, &arg, rc);
}

zkl_status zkl__hold_token(zkl_client *c, const zkl__hold *hold, int64_t *token)
{
    struct Stat stat = {0};
    int rc;
    zkl_status st;
    if (hold->czxid) {
        *token = hold->czxid;
        return ZKL_OK;
    }
    st = stat_of(c, hold->node, &stat, &rc);
    if (st != ZKL_OK)
        return st;
    if (rc == ZNONODE || !zkl__hold_alive(c, hold->epoch))
        return zkl__fail(ZKL_ELOST, "%s: the hold was lost with its session", hold->node);
    if (rc != ZOK)
        return zkl__from_zk(rc, "exists", hold->node);
    *token = stat.czxid;
    return ZKL_OK;
}

zkl_status zkl__hold_copy(const zkl__hold *from, zkl__hold *to)
{
    *to = *from;
    to->mark = NULL; /* a copy to read: the hold's tally stays with the hold */
    to->node = from->node ? strdup(from->node) : NULL;
    if (from->node && !to->node)
        return zkl__fail(ZKL_ENOMEM, "out of memory");
    return ZKL_OK;
}

zkl_status zkl__child_count(zkl_client *c, const char *path, int *n)
{
    struct Stat stat = {0};
    int rc;
    zkl_status st = stat_of(c, path, &stat, &rc);
    if (st != ZKL_OK)
        return st;
    if (rc == ZNONODE) {
        *n = 0;
        return ZKL_OK;
    }
    if (rc != ZOK)
        return zkl__from_zk(rc, "exists", path);
    *n = stat.numChildren;
    return ZKL_OK;
}

/* kids' names as full paths under path, each its own string (zkl_strings_free). */
static zkl_status full_paths(const char *path, const zkl__names *kids, char ***out)
{
    size_t i;
    char **v = calloc(kids->n ? kids->n : 1, sizeof *v);
    if (!v)
        return zkl__fail(ZKL_ENOMEM, "out of memory");
    for (i = 0; i < kids->n; i++) {
        if (!(v[i] = zkl__path_join(path, kids->v[i]))) {
            zkl_strings_free(v, i);
            return zkl__fail(ZKL_ENOMEM, "out of memory");
        }
    }
    *out = v;
    return ZKL_OK;
}

zkl_status zkl__participants(zkl_client *c, const char *path, const char *const *markers,
                             char ***out, size_t *n)
{
    zkl__names kids = {0};
    zkl__list_arg arg = {path, &kids};
    int rc;
    zkl_status st =
        zkl__retrying(c, zkl__now_ms() + c->cfg.opts.connect_timeout_ms, zkl__list_try, &arg, &rc);
    if (st != ZKL_OK)
        return st;
    if (rc == ZNONODE) {
        rc = ZOK;
        kids.n = 0;
    }
    if (rc != ZOK)
        return zkl__from_zk(rc, "list", path);
    if (zkl__sort_names(kids.v, kids.n, markers) != ZKL_OK)
        st = zkl__fail(ZKL_ENOMEM, "out of memory sorting the listing of %s", path);
    if (st == ZKL_OK)
        st = full_paths(path, &kids, out);
    if (st == ZKL_OK)
        *n = kids.n;
    zkl__names_free(&kids);
    return st;
}
