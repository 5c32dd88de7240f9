/*
 * decide.c - the core's use of a driver (driver.h): the driver's verdict,
 * plus what the core reads from it for itself.
 *
 * The hand-off: a waiter whose watched node goes may take the lock without
 * listing again only if the listing it decided on, less that node, would
 * have made it the holder, and nothing can appear ahead of it meanwhile.
 * Sequences only grow, so the one thing that can is a node put in the
 * watched node's own place: a downgrade (ZKL__D_REPLACED_IN_PLACE), whose
 * deletion therefore proves nothing. The look-ahead serves only the
 * hand-off, so behind such a node it is not worth its request either.
 */
#include <string.h>

#include "core/policy/driver.h"

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
