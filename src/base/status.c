/*
 * status.c - zkl_strerror and the thread-local failure detail behind
 * zkl_errmsg(). Every failing path sets the detail through zkl__fail(), so a
 * caller gets both a code to branch on and a sentence to print.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <zookeeper/zookeeper.h>

#include "base/status.h"

static _Thread_local char errmsg[512];

const char *zkl_strerror(zkl_status st)
{
    switch (st) {
    case ZKL_OK: return "success";
    case ZKL_EINVAL: return "invalid argument";
    case ZKL_EBADPATH: return "invalid lock path";
    case ZKL_ENOMEM: return "out of memory";
    case ZKL_ETIMEDOUT: return "timed out";
    case ZKL_ECONNECT: return "could not connect to ZooKeeper";
    case ZKL_ECONNLOSS: return "connection to ZooKeeper lost";
    case ZKL_ELOST: return "session lost: the lock is no longer held";
    case ZKL_ENOTOWNER: return "lock not held by the calling thread";
    case ZKL_EDEADLOCK: return "request would deadlock";
    case ZKL_ECLOSED: return "client closed";
    case ZKL_EBUSY: return "still in use";
    case ZKL_ENOAUTH: return "not authorised by the node's ACL";
    case ZKL_EAUTH: return "authentication failed";
    case ZKL_EZK: return "ZooKeeper error";
    case ZKL_ESYS: return "system error";
    case ZKL_ECANCELED: return "canceled";
    }
    return "unknown status";
}

const char *zkl_errmsg(void)
{
    return errmsg;
}

static _Thread_local int kept;

void zkl__err_keep(void)
{
    kept++;
}

void zkl__err_unkeep(void)
{
    if (kept > 0)
        kept--;
}

zkl_status zkl__fail(zkl_status st, const char *fmt, ...)
{
    va_list ap;
    /* (clang 14's valist checker calls ap uninitialized right after va_start) */
    // NOLINTBEGIN(clang-analyzer-valist.Uninitialized)
    va_start(ap, fmt);
    if (!kept)
        vsnprintf(errmsg, sizeof errmsg, fmt, ap);
    va_end(ap);
    // NOLINTEND(clang-analyzer-valist.Uninitialized)
    return st;
}

zkl_status zkl__fail_prefix(zkl_status st, const char *fmt, ...)
{
    char head[256], tail[sizeof errmsg];
    va_list ap;
    // NOLINTBEGIN(clang-analyzer-valist.Uninitialized): as in zkl__fail
    va_start(ap, fmt);
    if (!kept)
        vsnprintf(head, sizeof head, fmt, ap);
    va_end(ap);
    // NOLINTEND(clang-analyzer-valist.Uninitialized)
    if (kept)
        return st;
    size_t h = strlen(head);
    memcpy(tail, errmsg, sizeof tail);
    if (h >= sizeof errmsg)
        h = sizeof errmsg - 1;
    memcpy(errmsg, head, h);
    memcpy(errmsg + h, tail, sizeof errmsg - h - 1); /* truncated if long */
    errmsg[sizeof errmsg - 1] = '\0';
    return st;
}

void zkl__clear_err(void)
{
    if (kept)
        return;
    errmsg[0] = '\0';
}

zkl_status zkl__from_zk(int rc, const char *what, const char *path)
{
    zkl_status st;
    switch (rc) {
    case ZOK: return ZKL_OK;
    case ZCONNECTIONLOSS:
    case ZOPERATIONTIMEOUT: st = ZKL_ECONNLOSS; break;
    case ZSESSIONEXPIRED:
    case ZINVALIDSTATE:
    case ZSESSIONMOVED: st = ZKL_ELOST; break;
    case ZNOAUTH: st = ZKL_ENOAUTH; break;
    case ZAUTHFAILED: st = ZKL_EAUTH; break;
    case ZCLOSING: st = ZKL_ECLOSED; break;
    case ZBADARGUMENTS: st = ZKL_EBADPATH; break;
    case ZSYSTEMERROR: /* our calls' own allocation failed, or the ZooKeeper client's */
        return zkl__fail(ZKL_ENOMEM, "%s %s: out of memory (%s)", what, path ? path : "",
                         zerror(rc));
    default: st = ZKL_EZK; break;
    }
    return zkl__fail(st, "%s %s: %s", what, path ? path : "", zerror(rc));
}
