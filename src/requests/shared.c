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
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "base/tsan.h"
#include "base/util.h"
#include "requests/call.h"
#include "session/transport.h"
#include "requests/pending.h"

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
