/*
 * retry.c - see retry.h, and rc.h's status of a final rc.
 */
#include "requests/retry.h"
#include "base/status.h"
#include "requests/calls.h"
#include "requests/rc.h"

int zkl__retry_on(zkl__session *s, int64_t deadline, zkl__try_fn fn, void *arg)
{
    int rc, attempt = 0;
    do {
        rc = fn(s, arg);
    } while (zkl__rc_kind_of(rc) == ZKL__RC_RETRY && zkl__backoff(s->c, &attempt, deadline));
    return rc;
}

zkl_status zkl__retrying(zkl_client *c, int64_t deadline, zkl__try_fn fn, void *arg, int *rc)
{
    zkl__session *s;
    int64_t prev;
    zkl_status st = zkl__session_get(c, deadline, &s);
    if (st != ZKL_OK)
        return st;
    prev = zkl__call_deadline(deadline);
    *rc = zkl__retry_on(s, deadline, fn, arg);
    zkl__call_deadline(prev);
    zkl__session_put(s);
    return ZKL_OK;
}

int zkl__list_try(zkl__session *s, void *arg)
{
    zkl__list_arg *a = arg;
    zkl__names_free(a->out); /* a failed try may have left nothing, or a retry's leftovers */
    return zkl__zk_children(s, a->path, a->out);
}

zkl_status zkl__rc_status(int rc, const char *what, const char *path)
{
    switch (zkl__rc_kind_of(rc)) {
    case ZKL__RC_SESSION: return ZKL__RESTART;
    default: return zkl__from_zk(rc, what, path);
    }
}
