/*
 * drivers.c - the recipes' policies (driver.h): who holds, whom to watch.
 * Nothing here talks to ZooKeeper or knows how the core waits.
 */
#include <string.h>

#include "core/driver.h"

static const char *const mutex_markers[] = {ZKL_MUTEX_MARKER, NULL};
static const char *const rw_markers[] = {ZKL_READ_MARKER, ZKL_WRITE_MARKER, NULL};
static const char *const lease_markers[] = {ZKL_LEASE_MARKER, NULL};

zkl__verdict zkl__decide_standard(size_t self, int max_leases)
{
    zkl__verdict v = {false, -1, false, 0};
    if (max_leases < 1)
        max_leases = 1;
    if (self < (size_t)max_leases)
        v.holds = true;
    else
        v.watch = (long)(self - (size_t)max_leases);
    return v;
}

static zkl__verdict standard_decide(const zkl__driver *d, char *const *sorted, size_t n,
                                    size_t self, const void *ctx)
{
    (void)d;
    (void)sorted;
    (void)n;
    (void)ctx;
    return zkl__decide_standard(self, 1);
}

/* Granted when no writer sorts ahead; otherwise watch the nearest writer
 * ahead (not Curator's first writer: the same grants, without waking readers
 * whose own writer is still there). ctx: our own write node, which does not
 * count (a downgrade). */
static zkl__verdict read_decide(const zkl__driver *d, char *const *sorted, size_t n, size_t self,
                                const void *ctx)
{
    const char *own_writer = ctx;
    zkl__verdict v = {true, -1, false, 0};
    size_t i;
    (void)d;
    (void)n;
    for (i = 0; i < self; i++) {
        if (!strstr(sorted[i], ZKL_WRITE_MARKER))
            continue;
        if (own_writer && strcmp(sorted[i], own_writer) == 0)
            continue;
        v.holds = false;
        v.watch = (long)i; /* keeps the last one seen: the nearest ahead */
    }
    return v;
}

/* Granted when the lease nodes number at most the count; else watch them all. */
static zkl__verdict lease_decide(const zkl__driver *d, char *const *sorted, size_t n, size_t self,
                                 const void *ctx)
{
    zkl__verdict v = {false, -1, false, 0};
    (void)d;
    (void)sorted;
    (void)self;
    if (n <= (size_t) * (const int *)ctx)
        v.holds = true;
    else
        v.watch_parent = true;
    return v;
}

const zkl__driver zkl__mutex_driver = {ZKL_MUTEX_MARKER, mutex_markers, 0, standard_decide};
const zkl__driver zkl__read_driver = {ZKL_READ_MARKER, rw_markers, 0, read_decide};
/* A writer is the standard driver over the read/write markers; a writer may
 * downgrade, leaving a read node at its own place in line. */
const zkl__driver zkl__write_driver = {ZKL_WRITE_MARKER, rw_markers, ZKL__D_REPLACED_IN_PLACE,
                                       standard_decide};
const zkl__driver zkl__lease_driver = {ZKL_LEASE_MARKER, lease_markers, 0, lease_decide};

const zkl__driver *zkl__driver_of(const char *name)
{
    if (strstr(name, ZKL_READ_MARKER))
        return &zkl__read_driver;
    if (strstr(name, ZKL_WRITE_MARKER))
        return &zkl__write_driver;
    return &zkl__mutex_driver;
}
