/*
 * drivers.c - the recipes' policies (driver.h): who holds, whom to watch;
 * and, last, the core's reading of a driver's verdict (zkl__decide).
 * Nothing here talks to ZooKeeper or knows how the core waits.
 */
#include <string.h>

#include "core/policy/driver.h"

static const char *const mutex_markers[] = {ZKL_MUTEX_MARKER, NULL};
static const char *const rw_markers[] = {ZKL_READ_MARKER, ZKL_WRITE_MARKER, NULL};
static const char *const lease_markers[] = {ZKL_LEASE_MARKER, NULL};
static const char *const latch_markers[] = {ZKL_LATCH_MARKER, NULL};

zkl__verdict zkl__decide_standard(const zkl__line *l)
{
    zkl__verdict v = {false, -1, false, 0};
    if (l->rank == 0)
        v.holds = true;
    else
        v.watch = (long)l->m - 2; /* the nearest ahead: the view keeps every name */
    return v;
}

static zkl__verdict standard_decide(const zkl__driver *d, const zkl__line *l, const void *ctx)
{
    (void)d;
    (void)ctx;
    return zkl__decide_standard(l);
}

/* A reader's view keeps only writers, less its own (ctx: our own write
 * node, which does not count: a downgrade). */
static bool counts_writer(const char *name, const void *ctx)
{
    const char *own_writer = ctx;
    return strstr(name, ZKL_WRITE_MARKER) && !(own_writer && strcmp(name, own_writer) == 0);
}

/* Granted when no writer sorts ahead; otherwise watch the nearest writer
 * ahead (not Curator's first writer: the same grants, without waking readers
 * whose own writer is still there). */
static zkl__verdict read_decide(const zkl__driver *d, const zkl__line *l, const void *ctx)
{
    zkl__verdict v = {true, -1, false, 0};
    (void)d;
    (void)ctx;
    if (l->m > 1) {
        v.holds = false;
        v.watch = (long)l->m - 2;
    }
    return v;
}

/* Granted when the lease nodes number at most the count; else watch them all. */
static zkl__verdict lease_decide(const zkl__driver *d, const zkl__line *l, const void *ctx)
{
    zkl__verdict v = {false, -1, false, 0};
    (void)d;
    if (l->n <= (size_t) * (const int *)ctx)
        v.holds = true;
    else
        v.watch_parent = true;
    return v;
}

const zkl__driver zkl__mutex_driver = {ZKL_MUTEX_MARKER, mutex_markers, ZKL__D_HEAD_HOLDS, NULL,
                                       standard_decide};
const zkl__driver zkl__read_driver = {ZKL_READ_MARKER, rw_markers, 0, counts_writer, read_decide};
/* A writer is the standard driver over the read/write markers; a writer may
 * downgrade, leaving a read node at its own place in line. */
const zkl__driver zkl__write_driver = {ZKL_WRITE_MARKER, rw_markers, ZKL__D_REPLACED_IN_PLACE, NULL,
                                       standard_decide};
/* The lease count needs no names ahead: a view of none costs no comparison. */
static bool counts_none(const char *name, const void *ctx)
{
    (void)name;
    (void)ctx;
    return false;
}
const zkl__driver zkl__lease_driver = {ZKL_LEASE_MARKER, lease_markers, 0, counts_none,
                                       lease_decide};

const zkl__driver *zkl__driver_of(const char *name)
{
    if (strstr(name, ZKL_READ_MARKER))
        return &zkl__read_driver;
    if (strstr(name, ZKL_WRITE_MARKER))
        return &zkl__write_driver;
    if (strstr(name, ZKL_LATCH_MARKER))
        return &zkl__latch_driver;
    return &zkl__mutex_driver;
}

bool zkl__view(const zkl__driver *d, char *const *names, size_t n, const char *self,
               const void *ctx, zkl__line *out)
{
    return zkl__line_of(names, n, self, d->sort_markers, d->counts, ctx, out);
}
/* A latch is the standard driver over its own marker: the first node leads,
 * the others watch the one just before theirs (LeaderLatch.checkLeadership). */
const zkl__driver zkl__latch_driver = {ZKL_LATCH_MARKER, latch_markers, ZKL__D_HEAD_HOLDS, NULL,
                                       standard_decide};

/*
 * The core's use of a driver: the driver's verdict, plus what the core
 * reads from it for itself.
 *
 * The hand-off: a waiter whose watched node goes may take the lock without
 * listing again only if the listing it decided on, less that node, would
 * have made it the holder, and nothing can appear ahead of it meanwhile.
 * Sequences only grow, so the one thing that can is a node put in the
 * watched node's own place: a downgrade (ZKL__D_REPLACED_IN_PLACE), whose
 * deletion therefore proves nothing. The look-ahead serves only the
 * hand-off, so behind such a node it is not worth its request either.
 */
/*
 * Whether the view less the name at index gone (ahead of us) would make self
 * hold. The view less one name is not quite the view of the listing less
 * it (a counted name farther ahead would come into view), but every driver
 * decides from its place and from whether a counted name is ahead, which
 * the shorter view still tells.
 */
static bool holds_without(const zkl__driver *d, const zkl__line *l, const void *ctx, size_t gone)
{
    zkl__line w = *l;
    memmove(&w.v[gone], &w.v[gone + 1], (w.m - gone - 1) * sizeof *w.v);
    w.m--;
    w.n--;
    w.rank--;
    return d->decide(d, &w, ctx).holds;
}

zkl__verdict zkl__decide(const zkl__driver *d, const zkl__line *l, const void *ctx)
{
    zkl__verdict v = d->decide(d, l, ctx);
    v.flags = 0;
    if (v.holds || v.watch_parent || v.watch < 0 || (size_t)v.watch + 1 >= l->m)
        return v;
    if ((d->facts & ZKL__D_REPLACED_IN_PLACE) && strstr(l->v[v.watch], d->lock_name)) {
        v.flags |= ZKL__V_NO_LOOKAHEAD;
        return v;
    }
    if (holds_without(d, l, ctx, (size_t)v.watch))
        v.flags |= ZKL__V_HANDOFF;
    return v;
}
