/*
 * guarded.h - guarded writes (zklock/guard.h) over the core's holds: what
 * every recipe's guarded call comes down to.
 */
#ifndef ZKL_CORE_GUARDED_H
#define ZKL_CORE_GUARDED_H

#include <stddef.h>

#include "core/engine/hold.h"
#include "zklock/guard.h"

/* Lock nodes one transaction checks, at most (a multilock's members). */
#define ZKL_GUARD_CHECKS_MAX 64

/*
 * The writes w[0..n) in one multi behind a check of each of holds[0..nh)
 * (one client, one session), on the calling thread. The statuses and
 * *failed (may be NULL) are zklock/guard.h's; fn names the public call in
 * messages.
 */
zkl_status zkl__guarded_write(const zkl__hold *holds, int nh, zkl_write *w, size_t n,
                              size_t *failed, const char *fn);

#endif
