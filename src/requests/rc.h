/*
 * rc.h - the one reading of a ZooKeeper rc that every caller shares: done,
 * try again (the request may or may not have been applied, or the server
 * throttled it), the session is
 * gone (start over in the next one), our own memory ran out, or a plain
 * error to report.
 */
#ifndef ZKL_REQUESTS_RC_H
#define ZKL_REQUESTS_RC_H

#include <zookeeper/zookeeper.h>

#include "base/status.h"

typedef enum zkl__rc_kind {
    ZKL__RC_OK,
    /* connection loss, or no reply by the call deadline (applied or not);
     * or ZTHROTTLEDOP, a server's "not applied, try later" (3.7 and up with
     * zookeeper.throttled_op_wait_time set), which a retry that first looks
     * for what it may have done treats no worse */
    ZKL__RC_RETRY,
    ZKL__RC_SESSION, /* the session is gone or going: start over in the next */
    /* ZSYSTEMERROR: a call of ours found no memory (for the call, or to copy
     * the reply), or the ZooKeeper client none to queue it; always memory */
    ZKL__RC_NOMEM,
    ZKL__RC_ERROR, /* anything else: report it */
} zkl__rc_kind;

static inline zkl__rc_kind zkl__rc_kind_of(int rc)
{
    switch (rc) {
    case ZOK: return ZKL__RC_OK;
    case ZCONNECTIONLOSS:
    case ZOPERATIONTIMEOUT:
    case ZTHROTTLEDOP: return ZKL__RC_RETRY;
    case ZSESSIONEXPIRED:
    case ZINVALIDSTATE:
    case ZSESSIONMOVED:
    case ZCLOSING: return ZKL__RC_SESSION;
    case ZSYSTEMERROR: return ZKL__RC_NOMEM;
    default: return ZKL__RC_ERROR;
    }
}

/*
 * The status of an rc that ends an acquire step (not ZOK, not retryable):
 * ZKL__RESTART for a session gone, ZKL_ENOMEM for our memory, else the
 * ZooKeeper error of "what path", each with its message.
 */
zkl_status zkl__rc_status(int rc, const char *what, const char *path);

#endif
