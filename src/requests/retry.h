/*
 * retry.h - the one retry loop: a request tried again after each connection
 * loss, with the client's backoff, until it gets an answer or the deadline.
 */
#ifndef ZKL_REQUESTS_RETRY_H
#define ZKL_REQUESTS_RETRY_H

#include "requests/calls.h"
#include "session/client.h"

/* One try of a request on session s; returns the ZooKeeper rc. */
typedef int (*zkl__try_fn)(zkl__session *s, void *arg);

/* Try fn on s until its rc is not retryable or the backoff gives up (deadline). */
int zkl__retry_on(zkl__session *s, int64_t deadline, zkl__try_fn fn, void *arg);

/*
 * The same on the client's current session, whose calls give up at the
 * deadline. ZKL_OK with *rc the last try's rc, or the status of getting no
 * session (closing, canceled, none by the deadline).
 */
zkl_status zkl__retrying(zkl_client *c, int64_t deadline, zkl__try_fn fn, void *arg, int *rc);

/* The try of a listing: getChildren of path into *out (retry-safe: a read). */
typedef struct zkl__list_arg {
    const char *path;
    zkl__names *out;
} zkl__list_arg;
int zkl__list_try(zkl__session *s, void *arg);

#endif
