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

#include "core/driver.h"

/* Whether the listing less the node at index gone would make self hold. */
static bool holds_without(const zkl__driver *d, char **sorted, size_t n, size_t self,
                          const void *ctx, size_t gone)
{
    char *keep = sorted[gone];
    zkl__verdict v;
    memmove(&sorted[gone], &sorted[gone + 1], (n - gone - 1) * sizeof *sorted);
    v = d->decide(d, sorted, n - 1, gone < self ? self - 1 : self, ctx);
    memmove(&sorted[gone + 1], &sorted[gone], (n - gone - 1) * sizeof *sorted);
    sorted[gone] = keep;
    return v.holds;
}

zkl__verdict zkl__decide(const zkl__driver *d, char **sorted, size_t n, size_t self,
                         const void *ctx)
{
    zkl__verdict v = d->decide(d, sorted, n, self, ctx);
    v.flags = 0;
    if (v.holds || v.watch_parent || v.watch < 0 || (size_t)v.watch >= n)
        return v;
    if ((d->facts & ZKL__D_REPLACED_IN_PLACE) && strstr(sorted[v.watch], d->lock_name)) {
        v.flags |= ZKL__V_NO_LOOKAHEAD;
        return v;
    }
    if (holds_without(d, sorted, n, self, ctx, (size_t)v.watch))
        v.flags |= ZKL__V_HANDOFF;
    return v;
}
