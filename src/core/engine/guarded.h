/*
 * guarded.h - guarded writes (zklock/guard.h) over the core's holds: what
 * every recipe's guarded call comes down to.
 */
#ifndef ZKL_CORE_GUARDED_H
#define ZKL_CORE_GUARDED_H

#include <stddef.h>

#include "base/tuning.h"
#include "core/engine/hold.h"
#include "session/client.h"
#include "zklock/guard.h"

/*
 * The writes w[0..n) in one multi behind a check of each of holds[0..nh)
 * (one client, one session), on the calling thread. The statuses and
 * *failed (may be NULL) are zklock/guard.h's; fn names the public call in
 * messages.
 */
zkl_status zkl__guarded_write(const zkl__hold *holds, int nh, zkl_write *w, size_t n,
                              size_t *failed, const char *fn);

/*
 * The writes' own checks (w NULL, n out of 1..ZKL_GUARDED_MAX, a bad write:
 * *failed, may be NULL, names it), which every guarded write makes first,
 * before it asks whether its hold is held: bad input is ZKL_EINVAL or
 * ZKL_EBADPATH whatever the hold's state.
 */
zkl_status zkl__guard_check_writes(const zkl_write *w, size_t n, size_t *failed, const char *fn);

/* A guarded write made ready to send: the holds' client, their session (a
 * reference, for zkl__session_put) and the nodes to check (the holds'). */
typedef struct zkl__guard {
    zkl_client *c;
    zkl__session *s;
    char *nodes[ZKL_GUARD_CHECKS_MAX];
    int n;
} zkl__guard;

/*
 * The checks before anything is sent (the writes, the holds: one client,
 * one session, alive), and *g ready: ZKL_OK, or the status and *failed
 * zklock/guard.h gives, with nothing to put back.
 */
zkl_status zkl__guard_prepare(const zkl__hold *holds, int nh, const zkl_write *w, size_t n,
                              size_t *failed, const char *fn, zkl__guard *g);
/*
 * The multi's answer (rc, and bad: the part the server refused, checks of
 * nodes[0..nh) first, -1: none) as zklock/guard.h's status and *failed.
 * Nothing was applied unless ZKL_OK or ZKL_ECONNLOSS.
 */
zkl_status zkl__guard_outcome(char *const *nodes, int nh, const zkl_write *w, int rc, int bad,
                              size_t *failed, const char *fn);

#endif
