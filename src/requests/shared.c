/*
 * shared.c - shared listings (pending.h, zkl__req_children_shared): the
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
 * Each waiter gets a call of its own (a follower: never sent, so not counted
 * as a request), with its two references as ever: the requester's, and the
 * one the listing's completion lets go of after it filled it. The lead call
 * (the getChildren itself) carries its followers and belongs to its
 * completion alone. The answer's names are copied once, and each follower
 * holds a reference to the one block.
 *
 * Threads and locks: s->lists_mu guards s->lists (a uthash table of paths
 * with a listing in flight) and s->lists_closed. The next listing is sent by
 * the completion of the one before, on the ZooKeeper completion thread: the
 * one ZooKeeper call that thread makes, and an asynchronous one. Followers
 * are told with no lock held (zkl__call_done takes c->mu). The session sets
 * lists_closed before it closes its handle; from then on, joiners are
 * answered ZCLOSING instead of being sent.
 */
#include <stdlib.h>
#include <string.h>

#define HASH_NONFATAL_OOM 1 /* an add that fails leaves the table as it was */
#include <uthash.h>

#include "base/tsan.h"
#include "base/util.h"
#include "requests/call.h"
#include "requests/pending.h"

/* A path with a listing in flight on the session; next: who waits for the one after it. */
struct zkl__lgroup {
    zkl__session *s;
    char *path;
    call **next;
    size_t n, cap;
    UT_hash_handle hh;
};

typedef struct zkl__lgroup lgroup;

static void on_listing(int rc, const struct String_vector *sv, const void *data);

/* A lead call for the followers v[0..n); sent, or NULL with *rc (nothing sent). s->lists_mu held.
 */
static call *send_lead(lgroup *g, call **v, size_t n, int *rc)
{
    call *lead = calloc(1, sizeof *lead);
    if (!lead) {
        *rc = ZSYSTEMERROR;
        return NULL;
    }
    pthread_mutex_init(&lead->mu, NULL);
    zkl__cond_init(&lead->cv);
    lead->c = g->s->c;
    lead->group = g;
    lead->followers = v;
    lead->nfollowers = n;
    atomic_fetch_add(&g->s->c->requests, 1);
    ZKL_HANDOFF(lead);
    *rc = g->s->lists_closed ? ZCLOSING : zoo_aget_children(g->s->zh, g->path, 0, on_listing, lead);
    if (*rc == ZOK)
        return lead;
    lead->followers = NULL;
    zkl__call_free(lead);
    return NULL;
}

/* Tell followers v[0..n) the answer (no lock held); frees v. */
static void answer(call **v, size_t n, int rc, int reply_rc, const zkl__names *kids)
{
    size_t i;
    for (i = 0; i < n; i++) {
        if (rc == ZOK && kids)
            zkl__names_share(kids, &v[i]->kids);
        v[i]->reply_rc = reply_rc;
        zkl__call_done(v[i], rc);
    }
    free(v);
}

/* The shared listing is answered: its followers are told, and the next one is sent. */
static void on_listing(int rc, const struct String_vector *sv, const void *data)
{
    call *lead = (call *)data, **mine, **next = NULL;
    lgroup *g;
    zkl__session *s;
    size_t n_mine, n_next = 0;
    int reply_rc = rc, next_rc = ZOK;
    ZKL_RECEIVED(data);
    g = lead->group;
    s = g->s;
    mine = lead->followers;
    n_mine = lead->nfollowers;
    lead->followers = NULL;
    if (rc == ZOK && zkl__names_copy(sv, &lead->kids) != 0)
        rc = ZSYSTEMERROR;
    pthread_mutex_lock(&s->lists_mu);
    if (g->n > 0) { /* they joined after this one went out: the next one is theirs */
        next = g->next;
        n_next = g->n;
        g->next = NULL;
        g->n = g->cap = 0;
        if (send_lead(g, next, n_next, &next_rc))
            next = NULL; /* the new lead has them */
    }
    if (!n_next || next) { /* nothing in flight for the path any more */
        HASH_DEL(s->lists, g);
        free(g->path);
        free(g);
    }
    pthread_mutex_unlock(&s->lists_mu);
    answer(mine, n_mine, rc, reply_rc, &lead->kids);
    if (next)
        answer(next, n_next, next_rc, next_rc, NULL);
    zkl__call_free(lead);
}

/* A follower: a call of its own that no request stands behind. */
static call *follower_new(zkl__session *s, zkl__req_fn fn, void *arg)
{
    call *k = calloc(1, sizeof *k);
    if (!k)
        return NULL;
    pthread_mutex_init(&k->mu, NULL);
    zkl__cond_init(&k->cv);
    k->refs = 2;
    k->c = s->c;
    k->epoch = s->epoch;
    k->notify = fn;
    k->arg = arg;
    ZKL_HANDOFF(k);
    return k;
}

/* Add f to g's next listing; false on no memory. s->lists_mu held. */
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

zkl__req *zkl__req_children_shared(zkl__session *s, const char *path, zkl__req_fn fn, void *arg,
                                   int *rc)
{
    call *f = follower_new(s, fn, arg), **one = NULL;
    lgroup *g = NULL;
    size_t len = strlen(path);
    if (!f) {
        *rc = ZSYSTEMERROR;
        return NULL;
    }
    if (s->c->hooks.before_send) /* held-back deletes go out first, as before any request */
        s->c->hooks.before_send(s->c);
    pthread_mutex_lock(&s->lists_mu);
    HASH_FIND(hh, s->lists, path, len, g);
    if (g) { /* one in flight, sent before our own requests: the next one is ours */
        *rc = join_next(g, f) ? ZOK : ZSYSTEMERROR;
        pthread_mutex_unlock(&s->lists_mu);
        if (*rc == ZOK)
            return f;
        zkl__call_free(f);
        return NULL;
    }
    *rc = ZSYSTEMERROR;
    if ((g = calloc(1, sizeof *g)) && (g->path = strdup(path)) && (one = malloc(sizeof(call *)))) {
        g->s = s;
        HASH_ADD_KEYPTR(hh, s->lists, g->path, len, g);
        one[0] = f;
        if (g->hh.tbl && send_lead(g, one, 1, rc))
            one = NULL;
        else if (g->hh.tbl)
            HASH_DEL(s->lists, g);
    }
    if (one || *rc != ZOK) {
        if (g)
            free(g->path);
        free(g);
    }
    pthread_mutex_unlock(&s->lists_mu);
    if (*rc == ZOK)
        return f;
    free(one);
    zkl__call_free(f);
    return NULL;
}
