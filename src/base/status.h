/*
 * status_internal.h - how zklock code reports a failure: set the thread's
 * detail message and return the code in one expression.
 */
#ifndef ZKL_STATUS_INTERNAL_H
#define ZKL_STATUS_INTERNAL_H

#include "zklock/status.h"

zkl_status zkl__fail(zkl_status st, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void zkl__clear_err(void);
/* Map a ZooKeeper return code to a status, with "what path: zerror" as detail. */
zkl_status zkl__from_zk(int rc, const char *what, const char *path);

/* True for the ZooKeeper codes after which the same call may succeed later. */
static inline int zkl__zk_retryable(int rc)
{
    return rc == -4 /* ZCONNECTIONLOSS */ || rc == -7 /* ZOPERATIONTIMEOUT */;
}

#endif
