/*
 * fault.h - the one test hook, as SQLite's sqlite3FaultSim: test builds
 * (ZKL_FAULTS) ask a function the test set at named sites; in every other
 * build each ask is a constant and the code around it folds away. No field,
 * no #ifdef at a site.
 *
 * Three kinds of site, one table:
 *  - faults (ZKL_FAULT): the answer says whether, or how much, to break
 *    here; 0: not at all;
 *  - points (ZKL_FAULT too): the library tells the test where it is (a
 *    listing answered, a handle settled, a sync sent), and the test may run
 *    something there or count it;
 *  - tunables (ZKL_TUNE): an answer of 0 or more replaces the value of
 *    base/tuning.h; -1 keeps it.
 *
 * The hook runs on whatever thread reaches the site, sometimes with c->mu
 * held (said per site): it may take a lock of its own and nothing of
 * zklock's, except at the sites marked "free", where no lock is held and a
 * test may call the library. c is NULL at process-wide sites.
 */
#ifndef ZKL_BASE_FAULT_H
#define ZKL_BASE_FAULT_H

#include <stddef.h>

struct zkl_client;

#define ZKL__FAULT_SITES(X)                                                                        \
    /* faults */                                                                                   \
    X(CREATE_SEND_LOST)  /* a create fails with connection loss before it is sent */               \
    X(CREATE_REPLY_LOST) /* a successful create's reply is lost */                                 \
    X(CREATE_LANDS_LATE) /* a create's reply is lost, and the create, pending at the ensemble's    \
                            leader, lands only when the next sync goes through it: a listing       \
                            before that (a follower behind) does not show it */                    \
    X(NEXT_UUID)         /* io: char[37], the UUID of this protected create; answer 1 if set */    \
    X(DELETE_LOST)       /* a foreground lock-node delete fails with connection loss */            \
    X(BG_DELETE_LOST)    /* a background delete try fails so (c->mu held) */                       \
    X(KEPT_CALL_MS)      /* a blocking call kept in a slot (zkl__call_keep_in), answered, sleeps   \
                            this long before it lets go of the slot (no lock) */                   \
    X(HELD_BACK_SEND_MS) /* a held-back delete sent apart (a flush's, or one a failed multi        \
                            carried) waits this long before it is sent (no lock) */                \
    X(DEAF_BELLS)        /* the bells of c's waits are not heard (c->mu held) */                   \
    X(NOTE_DELAY_MS)     /* a waiter sleeps this long before its node is noted made */             \
    X(DISPATCH_PAUSE_US) /* zkl_client_dispatch pauses between its two steps */                    \
    X(EVENT_DELAY_MS)    /* the session watcher sleeps before it records a loss */                 \
    X(SLEEP_ON_CV)       /* c's worker and waits sleep on condition variables, not eventfds */     \
    X(CHROOT_STALL_MS)   /* the chroot's handle waits this long after it connects (a timer) */     \
    X(WRITE_SENT_MS)     /* an async guarded write's sender pauses after the send */               \
    X(POLLER_STALL_MS)   /* st: c's poller sleeps between its poll and what it found (no lock) */  \
    X(HANDOVER_MS)       /* st: a thread leaving c's handle sleeps before it hands the poller      \
                            what it deferred (no lock) */                                          \
    X(DELIVER_STALL_MS)  /* st: c's poller, with replies in hand, sleeps before it delivers        \
                            them (its pl.round_mu held) */                                         \
    X(GONE_STALL_MS)     /* a node watch told of its node's delete sleeps this long before its     \
                            callback, on the worker (no lock) */                                   \
    /* points */                                                                                   \
    X(LISTING_WANTED) /* answer 1 if the test runs something after the next listing */             \
    X(AFTER_LISTING)  /* free: a wait's listing was answered, on the acquiring thread; or an       \
                         inspection's (zkl_inspect, zkl_leader_get), on the caller's */            \
    X(AFTER_SETTLE)   /* free: an async handle's outcome is settled, on the worker */              \
    X(CHROOT_PART)    /* free: io: char *, an ancestor of the chroot made or found, on the         \
                         stepping thread, before the next is sent */                               \
    X(LEASE_SYNC)     /* the lease sends a sync (counted by tests apart from the lock's) */        \
    X(COHORT_QUEUED)  /* process-wide (c NULL): a thread queued behind a local holder, under       \
                         the cohort's mutex (a test waits for it instead of sleeping) */           \
    X(FREED)          /* c is being freed: forget what was asked of it */                          \
    /* tunables (base/tuning.h) */                                                                 \
    X(HOLD_BACK_US)  /* ZKL_HOLD_BACK_*: a release's delete hold-back */                           \
    X(JOIN_AWAIT_MS) /* ZKL_JOIN_AWAIT_MS */                                                       \
    X(MANY_CLIENTS)  /* process-wide (c NULL): the client count for eventfd sleeps */              \
    X(HINTS) /* the in-process room's parts on: ZKL__HINT_* (core/engine/inproc.h, read in room.c) \
              */

typedef enum zkl__fault_site {
#define ZKL__FAULT_ENUM(name) ZKL__FAULT_##name,
    ZKL__FAULT_SITES(ZKL__FAULT_ENUM)
#undef ZKL__FAULT_ENUM
        ZKL__FAULT_NSITES
} zkl__fault_site;

/* The test's function: its answer at site (io: the site's in-out, or NULL). */
typedef int (*zkl__fault_fn)(struct zkl_client *c, zkl__fault_site site, void *io);

#ifdef ZKL_FAULTS
/* Set (or with NULL clear) the hook, for the whole process. */
void zkl__fault_set(zkl__fault_fn fn);
int zkl__fault(struct zkl_client *c, zkl__fault_site site, void *io);
#define ZKL_FAULT(c, site, io) zkl__fault((c), ZKL__FAULT_##site, (io))
#define ZKL_TUNE(c, site, value) zkl__tune((c), ZKL__FAULT_##site, (value))
static inline long long zkl__tune(struct zkl_client *c, zkl__fault_site site, long long value)
{
    int v = zkl__fault(c, site, NULL);
    return v >= 0 ? v : value;
}
#else
#define ZKL_FAULT(c, site, io) ((void)(c), (void)(io), 0)
#define ZKL_TUNE(c, site, value) ((void)(c), (value))
#endif

#endif
