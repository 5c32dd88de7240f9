/*
 * driver.h - the drivers of the lock-internals core (Curator's
 * LockInternalsDriver): the policy of each recipe, declared in one place with
 * the node markers it sorts by. A driver answers one question from our view
 * of the line (base/seq.h: our place, the nearest names ahead that count for
 * it): does our node hold the lock, and if not, what do we wait for. What
 * the core makes of that (the hand-off on a deletion, the look-ahead) is the
 * core's own business: zkl__decide.
 *
 * Curator's drivers read the whole sorted listing; ours need only their
 * place, the listing's size and the nearest ZKL_LINE_AHEAD names ahead that
 * count, which one pass over an unsorted listing finds (zkl__line_of). A
 * driver must decide from those alone: that is what keeps a listing's cost
 * linear in the line.
 */
#ifndef ZKL_CORE_DRIVER_H
#define ZKL_CORE_DRIVER_H

#include <stdbool.h>
#include <stddef.h>

#include "base/seq.h"

/* (the node names after the protected prefix, ZKL_*_MARKER: base/seq.h) */

/* The core's own reading of a verdict (zkl__decide), never set by a driver. */
enum {
    /* The deletion of the watched node alone makes us the holder: the
     * waiter need not list again (the hand-off). */
    ZKL__V_HANDOFF = 1u << 0,
    /* Looking ahead (watching the node before the watched one) cannot
     * help: its going could never make the watched node's deletion grant. */
    ZKL__V_NO_LOOKAHEAD = 1u << 1,
};

/* What a driver decides from our view of the line. */
typedef struct zkl__verdict {
    bool holds;        /* our node holds the lock */
    long watch;        /* if not: the one child to watch, an index into the view's v (>= 0),
                          or -1 to list again */
    bool watch_parent; /* if not: watch the child list itself (the semaphore's lease count) */
    unsigned flags;    /* ZKL__V_*: the core's, from zkl__decide */
} zkl__verdict;

/* Facts about a recipe's nodes that the core's hand-off must respect. */
enum {
    /*
     * A node of this driver's own kind may be replaced, at its own place in
     * line, by a node of another kind (Curator 5.5's downgrade: a writer's
     * read node takes the writer's sequence). The deletion of such a node
     * proves nothing about who is ahead of us.
     */
    ZKL__D_REPLACED_IN_PLACE = 1u << 0,
    /*
     * A grant means the node was first in the line: nothing sorted ahead of
     * it then, and nothing can later (core/engine/room.h). Drivers with a count above
     * one, or that count only some names, are not such.
     */
    ZKL__D_HEAD_HOLDS = 1u << 1,
};

typedef struct zkl__driver {
    const char *lock_name;           /* ZKL_*_MARKER: the node name after the protected prefix */
    const char *const *sort_markers; /* markers for Curator's sort key, NULL-terminated */
    unsigned facts;                  /* ZKL__D_* */
    /* Which names ahead the driver's view keeps (NULL: all); ctx as for decide. */
    zkl__counts_fn counts;
    /* Decide from our view of the line; ctx is the recipe's (the lease
     * count, a reader's own writer), may be NULL. */
    zkl__verdict (*decide)(const struct zkl__driver *d, const zkl__line *l, const void *ctx);
} zkl__driver;

/* The recipes' drivers (drivers.c). */
extern const zkl__driver zkl__mutex_driver; /* Curator's standard driver, one holder */
extern const zkl__driver zkl__read_driver;  /* ctx: the basename of our own write node, or NULL */
extern const zkl__driver zkl__write_driver;
extern const zkl__driver zkl__lease_driver; /* ctx: const int *, the number of leases */
extern const zkl__driver zkl__latch_driver; /* Curator's LeaderLatch: index 0 leads */

/* The standard decision (Curator's StandardLockInternalsDriver, one holder). */
zkl__verdict zkl__decide_standard(const zkl__line *l);

/* d's view of self in an unsorted listing (zkl__line_of); false if self is not in it. */
bool zkl__view(const zkl__driver *d, char *const *names, size_t n, const char *self,
               const void *ctx, zkl__line *out);

/* The driver of a lock node's name (read, write, a latch's, else the
 * mutex's), for listings of a mutex, a read/write lock or an election. */
const zkl__driver *zkl__driver_of(const char *name);

/* Ask d about its view l and add the core's flags (drivers.c, last). */
zkl__verdict zkl__decide(const zkl__driver *d, const zkl__line *l, const void *ctx);

#endif
