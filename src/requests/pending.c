/*
 * pending.c - requests that do not block (pending.h), on the call object of
 * call.h; last, the shared listings of one session's waiters (its DESIGN
 * below). A requester that blocks is the same requester waiting on the
 * call's condition instead of being told (calls.c).
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "base/tsan.h"
#include "base/util.h"
#include "requests/call.h"
#include "session/transport.h"
#include "requests/pending.h"

/* The request, if the send worked; else NULL with *rc (the completion will never run). */
static zkl__req *sent(call *k, int send_rc, int *rc)
{
    *rc = send_rc;
    if (send_rc == ZOK)
        return k;
    zkl__call_free(k);
    return NULL;
}

#define NEW_OR_FAIL(k, s, fn, arg, rc)                                                             \
    do {                                                                                           \
        if (!((k) = zkl__call_new_told((s), (fn), (arg)))) {                                       \
            *(rc) = ZSYSTEMERROR;                                                                  \
            return NULL;                                                                           \
        }                                                                                          \
    } while (0)

zkl__req *zkl__req_create(zkl__session *s, const char *path, const void *data, int len, int mode,
                          zkl__req_fn fn, void *arg, int *rc)
{
    call *k;
    NEW_OR_FAIL(k, s, fn, arg, rc);
    return sent(k, zkl__send_create(s, k, path, data, len, mode), rc);
}

zkl__req *zkl__req_multi_create(zkl__session *s, char *const *del, int ndel, const char *path,
                                const void *data, int len, int mode, zkl__req_fn fn, void *arg,
                                int *rc)
{
    call *k;
    NEW_OR_FAIL(k, s, fn, arg, rc);
    return sent(k, zkl__send_multi_create(s, k, del, ndel, path, data, len, mode), rc);
}

/* A new request of kind that sets watch w: NULL on no memory (w given back, *rc set). */
static call *watched_new(zkl__session *s, zkl__watch *w, int kind, zkl__req_fn fn, void *arg,
                         int *rc)
{
    call *k = zkl__call_new_told(s, fn, arg);
    if (!k) {
        zkl__watch_settle(w, NULL, ZSYSTEMERROR);
        *rc = ZSYSTEMERROR;
        return NULL;
    }
    zkl__count_request(s->c, kind);
    return k;
}

/* The send of a request that sets watch w: w given back if it failed. */
static zkl__req *watched_sent(call *k, zkl__watch *w, int send_rc, int *rc)
{
    if (send_rc != ZOK)
        zkl__watch_settle(w, NULL, send_rc);
    return sent(k, send_rc, rc);
}

zkl__req *zkl__req_children(zkl__session *s, const char *path, zkl__watch *w, zkl__req_fn fn,
                            void *arg, int *rc)
{
    call *k = watched_new(s, w, ZKL__REQ_LIST, fn, arg, rc);
    if (!k)
        return NULL;
    return watched_sent(
        k, w,
        ZKL_ZK(s, w ? zoo_awget_children(s->zh, path, zkl__watch_fn, w, zkl__on_strings, k)
                    : zoo_aget_children(s->zh, path, 0, zkl__on_strings, k)),
        rc);
}

/* getData with watch w, its reply to done (the data dropped or kept). */
static zkl__req *wget(zkl__session *s, const char *path, zkl__watch *w, data_completion_t done,
                      zkl__req_fn fn, void *arg, int *rc)
{
    call *k = watched_new(s, w, ZKL__REQ_GET, fn, arg, rc);
    if (!k)
        return NULL;
    return watched_sent(k, w, ZKL_ZK(s, zoo_awget(s->zh, path, zkl__watch_fn, w, done, k)), rc);
}

zkl__req *zkl__req_wget(zkl__session *s, const char *path, zkl__watch *w, zkl__req_fn fn, void *arg,
                        int *rc)
{
    return wget(s, path, w, zkl__on_data_watch, fn, arg, rc);
}

zkl__req *zkl__req_wget_data(zkl__session *s, const char *path, zkl__watch *w, zkl__req_fn fn,
                             void *arg, int *rc)
{
    return wget(s, path, w, zkl__on_data_watch_keep, fn, arg, rc);
}

zkl__req *zkl__req_wexists(zkl__session *s, const char *path, zkl__watch *w, zkl__req_fn fn,
                           void *arg, int *rc)
{
    call *k = watched_new(s, w, ZKL__REQ_EXISTS, fn, arg, rc);
    if (!k)
        return NULL;
    return watched_sent(
        k, w, ZKL_ZK(s, zoo_awexists(s->zh, path, zkl__watch_fn, w, zkl__on_stat_watch, k)), rc);
}

zkl__req *zkl__req_exists(zkl__session *s, const char *path, zkl__req_fn fn, void *arg, int *rc)
{
    call *k;
    NEW_OR_FAIL(k, s, fn, arg, rc);
    zkl__count_request(s->c, ZKL__REQ_EXISTS);
    return sent(k, ZKL_ZK(s, zoo_aexists(s->zh, path, 0, zkl__on_stat, k)), rc);
}

zkl__req *zkl__req_delete(zkl__session *s, const char *path, zkl__req_fn fn, void *arg, int *rc)
{
    call *k;
    NEW_OR_FAIL(k, s, fn, arg, rc);
    zkl__call_proves(k);
    zkl__count_request(s->c, ZKL__REQ_DELETE);
    return sent(k, ZKL_ZK(s, zoo_adelete(s->zh, path, -1, zkl__on_void, k)), rc);
}

zkl__req *zkl__req_sync(zkl__session *s, const char *path, zkl__req_fn fn, void *arg, int *rc)
{
    call *k;
    NEW_OR_FAIL(k, s, fn, arg, rc);
    zkl__call_proves(k);
    zkl__count_request(s->c, ZKL__REQ_SYNC);
    return sent(k, ZKL_ZK(s, zoo_async(s->zh, path, zkl__on_string, k)), rc);
}

bool zkl__req_done(zkl__req *k, int *rc)
{
    bool done;
    pthread_mutex_lock(&k->mu);
    done = k->done;
    *rc = k->rc;
    pthread_mutex_unlock(&k->mu);
    return done;
}

/* Results are read only once the call is done (zkl__req_done, under k->mu). */
void zkl__req_take_created(zkl__req *k, char **created, struct Stat *stat)
{
    if (created) {
        *created = k->created;
        k->created = NULL;
    }
    if (stat)
        *stat = k->stat;
}

void zkl__req_take_kids(zkl__req *k, zkl__names *out)
{
    *out = k->kids;
    k->kids.v = NULL;
    k->kids.n = 0;
}

struct Stat zkl__req_stat(const zkl__req *k)
{
    return k->stat;
}

void zkl__req_take_data(zkl__req *k, char **data, int *len)
{
    *data = k->data;
    *len = k->datalen;
    k->data = NULL;
    k->datalen = 0;
}

void zkl__req_settle(const zkl__req *k, zkl__watch *w, int rc)
{
    zkl__watch_settle(w, k, rc);
}

void zkl__req_drop(zkl__req *k)
{
    pthread_mutex_lock(&k->mu);
    k->notify = NULL;
    while (k->notifying)
        pthread_cond_wait(&k->cv, &k->mu);
    pthread_mutex_unlock(&k->mu);
    zkl__call_put(k);
}

/* ---- shared listings ---- */

/*
 * Shared listings (pending.h, zkl__req_children_shared): the
 * waiters of one session that need a listing of one path share one
 * getChildren, group-commit style.
 *
 * DESIGN
 *
 * A waiter needs a listing sent after something of its own: its create (the
 * listing must show its node), or a watch event (the listing must be newer).
 * ZooKeeper answers one session's requests in order, so any listing of the
 * path sent on the session after that moment will do. Hence the rule: per
 * session and path, at most one shared listing is in flight. A waiter that
 * asks while none is gets one sent at once (it leads; nothing is delayed).
 * One that asks while one is in flight joins the next, which goes out when
 * the one in flight is answered, after every joiner's own requests. A line
 * of a thousand async waits over 64 sessions then costs each session a few
 * listings, not one per wait; a lone waiter costs what it did.
 *
 * Each waiter gets a call of its own (a follower), with its two references
 * as ever: the requester's, and the one the listing's completion lets go of
 * after it filled it. The getChildren itself has no call: its context is the
 * path's group, one allocation (the path inline, room for one follower), so
 * that a lone waiter costs about what a listing of its own did (10000
 * pending waits on as many paths are the case to keep cheap). The answer's
 * names are copied once, and each follower holds a reference to the block.
 *
 * Threads and locks: a session's table (struct zkl__lists, s->lists, made
 * at its first shared listing) has a mutex that guards its slots and its
 * closed flag. It is a small table of slots, by the path's hash: a path whose slot
 * another path's group holds gets a listing of its own, as before sharing.
 * Its memory stays bounded however many paths wait at once (10000 pending
 * waits on as many paths keep what they cost before: no table grows with
 * them), and the paths that have many waiters find their group. The next listing is sent by
 * the completion of the one before, on a ZooKeeper delivery: the
 * one ZooKeeper call that thread makes, and an asynchronous one. Followers
 * are told with no lock held (zkl__call_done takes c->mu). The session
 * closes the table (its hook lists_closing) before it closes its handle;
 * from then on, joiners are answered ZCLOSING instead of being sent. Once
 * the handle is closed every listing is answered, and the table is freed
 * (lists_free).
 */
/*
 * A path with a listing in flight on session s: cur[0..ncur) are answered by
 * it (cur is &one, or an array taken from next); next[0..n) joined after it
 * went out, and are answered by the one after.
 */
/* A session's paths with a listing in flight, by hash. */
typedef struct zkl__lists {
    pthread_mutex_t mu;
    struct zkl__lgroup *slots[ZKL_LIST_SLOTS];
    bool closed; /* the handle is closing: send no more */
} zkl__lists;

struct zkl__lgroup {
    zkl__session *s;
    zkl__lists *l; /* s's table */
    size_t slot;   /* its place in l->slots */
    call **cur, *one;
    size_t ncur;
    call **next;
    size_t n, cap;
    /* the answer of the listing in flight (one at a time), deferred */
    zkl__delivery answer;
    zkl__names kids;
    char path[];
};

typedef struct zkl__lgroup lgroup;

static void on_listing(int rc, const struct String_vector *sv, const void *data);

/* Send g's listing for g->cur (counted as one request). g->l->mu held. */
static int send_listing(lgroup *g)
{
    if (g->l->closed)
        return ZCLOSING;
    zkl__count_request(g->s->c, ZKL__REQ_LIST);
    ZKL_PUBLISH(g);
    return ZKL_ZK(g->s, zoo_aget_children(g->s->zh, g->path, 0, on_listing, g));
}

/* Tell followers v[0..n) the answer (no lock held). */
static void answer(call **v, size_t n, int rc, int reply_rc, const zkl__names *kids)
{
    size_t i;
    for (i = 0; i < n; i++) {
        if (rc == ZOK && kids)
            zkl__names_share(kids, &v[i]->kids);
        v[i]->reply_rc = reply_rc;
        zkl__call_done(v[i], rc);
    }
}

static void group_free(lgroup *g)
{
    if (g->cur != &g->one)
        free(g->cur);
    free(g->next);
    free(g);
}

static void listing_answered(lgroup *g, int rc, int reply_rc, zkl__names kids);

static void listing_answered_later(zkl__delivery *d)
{
    lgroup *g = d->p;
    listing_answered(g, d->a, d->b, g->kids);
}

/* The shared listing is answered: its names copied, the rest after the
 * handle is let go (listing_answered). */
static void on_listing(int rc, const struct String_vector *sv, const void *data)
{
    lgroup *g = (lgroup *)data;
    int reply_rc = rc;
    zkl__names kids = {0};
    ZKL_RECEIVED(data);
    if (rc == ZOK && zkl__names_copy(sv, &kids) != 0)
        rc = ZSYSTEMERROR;
    g->answer = (zkl__delivery){.fn = listing_answered_later, .p = g, .a = rc, .b = reply_rc};
    g->kids = kids;
    if (!zkl__defer(&g->answer))
        listing_answered(g, rc, reply_rc, kids);
}

/* Its followers are told, and the next one is sent. */
static void listing_answered(lgroup *g, int rc, int reply_rc, zkl__names kids)
{
    call **mine, **failed = NULL;
    size_t n_mine, n_failed = 0;
    int next_rc = ZOK;
    bool done;
    pthread_mutex_lock(&g->l->mu);
    mine = g->cur; /* ours now (freed below unless it is &g->one) */
    n_mine = g->ncur;
    g->cur = &g->one;
    g->ncur = 0;
    done = g->n == 0;
    if (!done) { /* they joined after this one went out: the next one is theirs */
        g->cur = g->next;
        g->ncur = g->n;
        g->next = NULL;
        g->n = g->cap = 0;
        if ((next_rc = send_listing(g)) != ZOK) {
            failed = g->cur;
            n_failed = g->ncur;
            g->cur = &g->one;
            g->ncur = 0;
            done = true;
        }
    }
    if (done)
        g->l->slots[g->slot] = NULL;
    pthread_mutex_unlock(&g->l->mu);
    answer(mine, n_mine, rc, reply_rc, &kids);
    if (mine != &g->one)
        free(mine);
    answer(failed, n_failed, next_rc, next_rc, NULL);
    free(failed);
    if (done)
        group_free(g);
    zkl__names_free(&kids);
}

/* Add f to g's next listing; false on no memory. g->l->mu held. */
static bool join_next(lgroup *g, call *f)
{
    if (g->n == g->cap) {
        size_t cap = g->cap ? g->cap * 2 : 8;
        call **v = realloc(g->next, cap * sizeof(call *));
        if (!v)
            return false;
        g->next = v;
        g->cap = cap;
    }
    g->next[g->n++] = f;
    return true;
}

/* A new group in slot of l (s's) for path with f as its first listing's one follower,
 * sent; *rc. l->mu held. */
static void lead_new(zkl__session *s, zkl__lists *l, size_t slot, const char *path, size_t len,
                     call *f, int *rc)
{
    lgroup *g = calloc(1, sizeof *g + len + 1);
    *rc = ZSYSTEMERROR;
    if (!g)
        return;
    memcpy(g->path, path, len + 1);
    g->s = s;
    g->l = l;
    g->slot = slot;
    g->one = f;
    g->cur = &g->one;
    g->ncur = 1;
    if ((*rc = send_listing(g)) == ZOK)
        l->slots[slot] = g;
    else
        free(g);
}

/* The slot of path in a session's table (FNV-1a). */
static size_t slot_of(const char *path, size_t *len)
{
    uint32_t h = 2166136261u;
    const char *p;
    for (p = path; *p; p++)
        h = (h ^ (unsigned char)*p) * 16777619u;
    *len = (size_t)(p - path);
    return h % ZKL_LIST_SLOTS;
}

/* s's table, made at its first shared listing; NULL: no memory. */
static zkl__lists *lists_of(zkl__session *s)
{
    zkl__lists *l = atomic_load(&s->lists), *fresh;
    if (l)
        return l;
    if (!(fresh = calloc(1, sizeof *fresh)))
        return NULL;
    pthread_mutex_init(&fresh->mu, NULL);
    if (atomic_compare_exchange_strong(&s->lists, &l, fresh))
        return fresh;
    pthread_mutex_destroy(&fresh->mu); /* another thread made it first: l is that one */
    free(fresh);
    return l;
}

void zkl__lists_closing(zkl__session *s)
{
    zkl__lists *l = atomic_load(&s->lists);
    if (!l)
        return;
    pthread_mutex_lock(&l->mu);
    l->closed = true;
    pthread_mutex_unlock(&l->mu);
}

void zkl__lists_free(zkl__session *s)
{
    zkl__lists *l = atomic_exchange(&s->lists, NULL);
    if (!l)
        return;
    /* Every listing was answered: no group is left. In a fork()ed child
     * (client/fork.c) the parent's are not ours to free, and the mutex may be
     * held by a thread that is not there: destroying it then fails, harmlessly. */
    pthread_mutex_destroy(&l->mu);
    free(l);
}

zkl__req *zkl__req_children_shared(zkl__session *s, const char *path, zkl__req_fn fn, void *arg,
                                   int *rc)
{
    zkl__lists *l = lists_of(s);
    call *f;
    lgroup *g;
    size_t len, slot = slot_of(path, &len);
    if (!l) /* no memory for the table: a listing of our own */
        return zkl__req_children(s, path, NULL, fn, arg, rc);
    /* a follower: a call of its own (held-back deletes go out first, as
     * before any request) that no request stands behind */
    if (!(f = zkl__call_new_told(s, fn, arg))) { /* (before the lock: the hook sends) */
        *rc = ZSYSTEMERROR;
        return NULL;
    }
    pthread_mutex_lock(&l->mu);
    g = l->slots[slot];
    if (g && strcmp(g->path, path) != 0) {
        /* the slot is another path's: a listing of our own, as if unshared */
        pthread_mutex_unlock(&l->mu);
        zkl__call_free(f);
        return zkl__req_children(s, path, NULL, fn, arg, rc);
    }
    if (g) /* one in flight, sent before our own requests: the next one is ours */
        *rc = join_next(g, f) ? ZOK : ZSYSTEMERROR;
    else
        lead_new(s, l, slot, path, len, f, rc);
    pthread_mutex_unlock(&l->mu);
    if (*rc == ZOK)
        return f;
    zkl__call_free(f);
    return NULL;
}
