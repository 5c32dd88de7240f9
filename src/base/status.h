/*
 * status.h - how zklock code reports a failure: set the thread's
 * detail message and return the code in one expression.
 */
#ifndef ZKL_STATUS_INTERNAL_H
#define ZKL_STATUS_INTERNAL_H

#include "zklock/status.h"

/*
 * Internal outcome, never returned by the API: our place in line went with
 * the session (or was deleted); the core starts over with a new node.
 */
#define ZKL__RESTART ((zkl_status)-1000)

zkl_status zkl__fail(zkl_status st, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void zkl__clear_err(void);
/* Put fmt's text before this thread's message (a caller naming its part); returns st. */
zkl_status zkl__fail_prefix(zkl_status st, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/*
 * Keep this thread's message as it is until the matching unkeep: the
 * cleanup after a failure (returning what was taken) runs API calls that
 * would clear or replace it. Nests.
 */
void zkl__err_keep(void);
void zkl__err_unkeep(void);
/* Map a ZooKeeper return code to a status, with "what path: zerror" as detail. */
zkl_status zkl__from_zk(int rc, const char *what, const char *path);

#endif
