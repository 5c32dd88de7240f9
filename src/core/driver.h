/*
 * driver.h - the drivers of the lock-internals core (Curator's
 * LockInternalsDriver): the policy of each recipe, declared in one place with
 * the node markers it sorts by. A driver answers one question from a sorted
 * listing: does our node hold the lock, and if not, what do we wait for. What
 * the core makes of that (the hand-off on a deletion, the look-ahead) is the
 * core's own business: zkl__decide.
 */
#ifndef ZKL_CORE_DRIVER_H
#define ZKL_CORE_DRIVER_H

#include <stdbool.h>
#include <stddef.h>

/* The node names after the protected prefix, as Curator spells them. */
#define ZKL_MUTEX_MARKER "lock-"
#define ZKL_READ_MARKER "__READ__"
#define ZKL_WRITE_MARKER "__WRIT__"
#define ZKL_LEASE_MARKER "lease-"

/* The core's own reading of a verdict (zkl__decide), never set by a driver. */
enum {
    /* The deletion of the watched node alone makes us the holder: the
     * waiter need not list again (the hand-off). */
    ZKL__V_HANDOFF = 1u << 0,
    /* Looking ahead (watching the node before the watched one) cannot
     * help: its going could never make the watched node's deletion grant. */
    ZKL__V_NO_LOOKAHEAD = 1u << 1,
};

/* What a driver decides from the sorted children, our own at index self. */
typedef struct zkl__verdict {
    bool holds;        /* our node holds the lock */
    long watch;        /* if not: index of the one child to watch (>= 0), or -1 to list again */
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
};

typedef struct zkl__driver {
    const char *lock_name;           /* ZKL_*_MARKER: the node name after the protected prefix */
    const char *const *sort_markers; /* markers for Curator's sort key, NULL-terminated */
    unsigned facts;                  /* ZKL__D_* */
    /* Decide from children sorted by Curator's order; ctx is the recipe's
     * (the lease count, a reader's own writer), may be NULL. */
    zkl__verdict (*decide)(const struct zkl__driver *d, char *const *sorted, size_t n, size_t self,
                           const void *ctx);
} zkl__driver;

/* The recipes' drivers (drivers.c). */
extern const zkl__driver zkl__mutex_driver; /* Curator's standard driver, one holder */
extern const zkl__driver zkl__read_driver;  /* ctx: the basename of our own write node, or NULL */
extern const zkl__driver zkl__write_driver;
extern const zkl__driver zkl__lease_driver; /* ctx: const int *, the number of leases */

/* The standard decision (Curator's StandardLockInternalsDriver). */
zkl__verdict zkl__decide_standard(size_t self, int max_leases);

/* The driver of a lock node's name (read, write, else the mutex's), for
 * listings of a mutex or a read/write lock. */
const zkl__driver *zkl__driver_of(const char *name);

/*
 * Ask d about the listing (sorted, n, our index self) and add the core's
 * flags. sorted is reordered during the call and restored before it returns.
 */
zkl__verdict zkl__decide(const zkl__driver *d, char **sorted, size_t n, size_t self,
                         const void *ctx);

#endif
