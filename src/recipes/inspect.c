/*
 * inspect.c - zkl_inspect: list a lock path, sort it as Curator does, and ask
 * each recipe's own driver whether a node holds, so the answer is the one the
 * contenders themselves reach.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "core/policy/driver.h"
#include "core/engine/internals.h"
#include "base/path.h"
#include "base/seq.h"
#include "base/fault.h"
#include "base/status.h"
#include "base/tuning.h"
#include "base/util.h"
#include "requests/calls.h"
#include "requests/retry.h"
#include "zklock/inspect.h"
#include "zklock/leader.h"

/* Every lock marker a mutex or read/write lock path may hold, for one sort. */
static const char *const all_markers[] = {ZKL_READ_MARKER, ZKL_WRITE_MARKER, ZKL_MUTEX_MARKER,
                                          ZKL_LATCH_MARKER, NULL};

/* The children of path (none if it is gone), connection losses retried. */
static int list(zkl_client *c, zkl__session *s, const char *path, zkl__names *kids)
{
    zkl__list_arg arg = {path, kids};
    int rc = zkl__retry_on(s, zkl__now_ms() + c->cfg.opts.connect_timeout_ms, zkl__list_try, &arg);
    if (rc == ZNONODE) {
        kids->n = 0;
        kids->v = NULL;
        rc = ZOK;
    }
    return rc;
}

/* Append one node (fetched now); a node gone meanwhile is skipped. holds:
 * the driver's verdict; in_way: the name sorts ahead of a lock node (which
 * a child that is not one then blocks, and holds says so). */
static int add(zkl__session *s, const char *parent, const char *name, char kind, bool holds,
               bool in_way, zkl_participant **v, size_t *n, size_t *cap)
{
    struct Stat st;
    char *data = NULL, *node = zkl__path_join(parent, name);
    int len = 0, rc;
    zkl_participant *p;
    if (!node)
        return ZSYSTEMERROR;
    rc = zkl__zk_get(s, node, &data, &len, &st);
    if (rc == ZNONODE) {
        free(node);
        return ZOK;
    }
    if (rc != ZOK) {
        free(node);
        return rc;
    }
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 8;
        zkl_participant *nv = realloc(*v, nc * sizeof *nv);
        if (!nv) {
            free(node);
            free(data);
            return ZSYSTEMERROR;
        }
        *v = nv;
        *cap = nc;
    }
    p = &(*v)[(*n)++];
    p->node = node;
    p->data = malloc((size_t)len + 1);
    if (p->data) {
        if (len > 0)
            memcpy(p->data, data, (size_t)len);
        p->data[len] = '\0';
    }
    free(data);
    p->data_len = (size_t)len;
    p->token = st.czxid;
    p->owner = st.ephemeralOwner;
    p->kind = st.ephemeralOwner ? kind : 'X'; /* persistent: not a lock node */
    p->holds = p->kind == 'X' ? in_way : holds;
    return p->data ? ZOK : ZSYSTEMERROR;
}

/*
 * Where a child that is not a lock node would be in the way, over the sorted
 * list: ahead of the last lock node in it, or ahead of the next one made
 * (its sequence one past the highest here; 0 if none).
 */
typedef struct lock_bound {
    size_t last; /* 1 + index of the last lock node (0: none) */
    char next[ZKL_SEQ_DIGITS + 2];
} lock_bound;

static void bound_of(char *const *sorted, size_t n, lock_bound *b)
{
    int32_t seq, top = -1;
    size_t j;
    b->last = 0;
    for (j = 0; j < n; j++)
        if (zkl__seq_of(sorted[j], all_markers, &seq) == ZKL_OK) {
            b->last = j + 1;
            if (seq > top)
                top = seq;
        }
    snprintf(b->next, sizeof b->next, "%010d", top < INT32_MAX ? top + 1 : top);
}

static bool in_the_way(const lock_bound *b, char *const *sorted, size_t i)
{
    return i + 1 < b->last || strcmp(zkl__sort_key(sorted[i], all_markers), b->next) < 0;
}

/* The listing as driver d sorts it (its own markers: a latch's view puts
 * other recipes' nodes where its own sort does), made once per driver. */
typedef struct by_driver {
    const zkl__driver *d;
    char **sorted;
} by_driver;

static char **sorted_for(by_driver *cache, const zkl__driver *d, const zkl__names *kids)
{
    char **sorted;
    int i;
    for (i = 0; i < 4 && cache[i].d; i++)
        if (cache[i].d == d)
            return cache[i].sorted;
    if (i == 4 || !(sorted = malloc((kids->n ? kids->n : 1) * sizeof *sorted)))
        return NULL;
    if (kids->n)
        memcpy(sorted, kids->v, kids->n * sizeof *sorted);
    if (zkl__sort_names(sorted, kids->n, d->sort_markers) != ZKL_OK) {
        free(sorted);
        return NULL;
    }
    cache[i].d = d;
    cache[i].sorted = sorted;
    return sorted;
}

/* The verdict of kids' name as its own driver reaches it (ZSYSTEMERROR: no memory). */
static int verdict_of(by_driver *cache, const zkl__driver *d, const zkl__names *kids,
                      const char *name, zkl__verdict *vd)
{
    char **sorted = sorted_for(cache, d, kids);
    size_t j;
    zkl__line l;
    if (!sorted)
        return ZSYSTEMERROR;
    for (j = 0; j < kids->n && sorted[j] != name; j++)
        ;
    zkl__line_at(sorted, kids->n, j, d->counts, NULL, &l);
    *vd = d->decide(d, &l, NULL);
    return ZOK;
}

static int queue(zkl__session *s, const char *path, zkl__names *kids, zkl_participant **v,
                 size_t *n, size_t *cap)
{
    size_t i;
    int rc = ZOK;
    lock_bound b;
    by_driver cache[4] = {{0}};
    if (zkl__sort_names(kids->v, kids->n, all_markers) != ZKL_OK)
        return ZSYSTEMERROR;
    bound_of(kids->v, kids->n, &b);
    for (i = 0; i < kids->n && rc == ZOK; i++) {
        const char *name = kids->v[i];
        const zkl__driver *d = zkl__driver_of(name);
        zkl__verdict vd = {0};
        if ((rc = verdict_of(cache, d, kids, name, &vd)) != ZOK)
            break;
        char kind = d == &zkl__read_driver    ? 'R'
                    : d == &zkl__write_driver ? 'W'
                    : d == &zkl__latch_driver ? 'L'
                                              : 'M';
        rc = add(s, path, name, kind, vd.holds, in_the_way(&b, kids->v, i), v, n, cap);
    }
    for (i = 0; i < 4; i++)
        free(cache[i].sorted);
    return rc;
}

zkl_status zkl_inspect(zkl_client *c, const char *path, zkl_participant **out, size_t *n)
{
    ZKL__REFUSE_IN_LOG();
    zkl__session *s;
    zkl__names kids = {0};
    zkl_participant *v = NULL;
    size_t cnt = 0, cap = 0, i;
    int rc;
    bool semaphore = false;
    zkl_status st;
    int64_t prev;
    zkl__clear_err();
    if (!c || !out || !n)
        return zkl__fail(ZKL_EINVAL, "zkl_inspect: NULL argument");
    st = zkl__path_validate(path);
    if (st != ZKL_OK)
        return st;
    st = zkl__session_get(c, zkl__now_ms() + c->cfg.opts.connect_timeout_ms, &s);
    if (st != ZKL_OK)
        return st;
    prev = zkl__call_deadline(zkl__now_ms() + c->cfg.opts.connect_timeout_ms);
    rc = list(c, s, path, &kids);
    (void)ZKL_FAULT(c, AFTER_LISTING, NULL);
    if (rc == ZOK && kids.n > 0) {
        semaphore = true;
        for (i = 0; i < kids.n; i++)
            if (strcmp(kids.v[i], "locks") != 0 && strcmp(kids.v[i], "leases") != 0)
                semaphore = false;
    }
    if (rc == ZOK && semaphore) {
        char *leases = zkl__path_join(path, "leases"), *locks = zkl__path_join(path, "locks");
        zkl__names_free(&kids);
        rc = leases && locks ? list(c, s, leases, &kids) : ZSYSTEMERROR;
        /* in the order they were taken, as the lock's waiters are */
        if (rc == ZOK && zkl__sort_names(kids.v, kids.n, zkl__lease_driver.sort_markers) != ZKL_OK)
            rc = ZSYSTEMERROR;
        for (i = 0; rc == ZOK && i < kids.n; i++)
            rc = add(s, leases, kids.v[i], 'S', true, true, &v, &cnt, &cap);
        zkl__names_free(&kids);
        if (rc == ZOK)
            rc = list(c, s, locks, &kids);
        if (rc == ZOK) {
            size_t first = cnt;
            rc = queue(s, locks, &kids, &v, &cnt, &cap);
            for (i = first; i < cnt; i++)
                v[i].holds = false; /* waiters for a lease, whoever counts now */
        }
        free(leases);
        free(locks);
    } else if (rc == ZOK) {
        rc = queue(s, path, &kids, &v, &cnt, &cap);
    }
    zkl__names_free(&kids);
    zkl__call_deadline(prev);
    zkl__session_put(s);
    if (rc != ZOK) {
        zkl_participants_free(v, cnt);
        return zkl__from_zk(rc, "inspect", path); /* ZSYSTEMERROR: out of memory */
    }
    *out = v ? v : calloc(1, sizeof *v);
    *n = cnt;
    return *out ? ZKL_OK : zkl__fail(ZKL_ENOMEM, "out of memory");
}

void zkl_participants_free(zkl_participant *v, size_t n)
{
    size_t i;
    if (!v)
        return;
    for (i = 0; i < n; i++) {
        free(v[i].node);
        free(v[i].data);
    }
    free(v);
}

/*
 * The leader in one listing's participants (out zeroed): a latch's election
 * is of its latch- nodes, whatever else is under the path (a mutex held
 * there is not its leader); with none, a selector's (lock- nodes). false if
 * participants exist but none leads in the listing: a head deleted between
 * the listing and its read (a hand-off), or a child not a participant's in
 * the way.
 */
static bool leader_of(zkl_participant *v, size_t n, zkl_leader *out)
{
    size_t i;
    char kind = 'M';
    for (i = 0; i < n; i++)
        if (v[i].kind == 'L')
            kind = 'L';
    for (i = 0; i < n; i++)
        if (v[i].kind == kind)
            out->members++;
    for (i = 0; i < n && !out->present; i++)
        if (v[i].kind == kind && v[i].holds) {
            out->present = true;
            out->id = v[i].data;
            out->id_len = v[i].data_len;
            out->token = v[i].token;
            out->node = v[i].node;
            v[i].data = v[i].node = NULL; /* taken over */
        }
    return out->present || out->members == 0;
}

zkl_status zkl_leader_get(zkl_client *c, const char *path, zkl_leader *out)
{
    ZKL__REFUSE_IN_LOG();
    zkl_participant *v = NULL;
    size_t n = 0;
    zkl_status st;
    int tries = 0;
    bool settled;
    zkl__clear_err();
    if (!out)
        return zkl__fail(ZKL_EINVAL, "zkl_leader_get: NULL argument");
    memset(out, 0, sizeof *out);
    if (!c || !path)
        return zkl__fail(ZKL_EINVAL, "zkl_leader_get: NULL argument");
    do { /* a listing taken mid hand-off is taken again */
        zkl_leader_clear(out);
        if ((st = zkl_inspect(c, path, &v, &n)) != ZKL_OK)
            return st;
        settled = leader_of(v, n, out);
        zkl_participants_free(v, n);
    } while (!settled && ++tries < ZKL_OBSERVE_RELISTS);
    return ZKL_OK;
}

void zkl_leader_clear(zkl_leader *leader)
{
    if (!leader)
        return;
    free(leader->id);
    free(leader->node);
    memset(leader, 0, sizeof *leader);
}
