/*
 * guarded.h - the one multi transaction of a guarded write (zklock/guard.h):
 * a check of each guard node at any version, then the caller's writes.
 */
#ifndef ZKL_REQUESTS_GUARDED_H
#define ZKL_REQUESTS_GUARDED_H

#include "requests/pending.h"
#include "session/client.h"
#include "zklock/guard.h"

/*
 * Send the checks of guard[0..ng) and the writes w[0..n) (checked by the
 * caller) as one multi on s, and wait for the reply until this thread's
 * call deadline (calls.h). Returns the multi's rc (ZOPERATIONTIMEOUT: no
 * reply in time). Each w[i].rc is set (the multi's rc where the server gave
 * no result of its own); on ZOK, each write's stat and created path too.
 * *bad: the op the server refused (checks first, then writes), -1: none.
 */
int zkl__zk_guarded(zkl__session *s, char *const *guard, int ng, zkl_write *w, int n, int *bad);

/*
 * The same multi, not waited for: the request (fn(arg) runs once when it
 * is answered, as pending.h says), or NULL with *rc the send's failure
 * (ZSYSTEMERROR: no memory; ZINVALIDSTATE: the handle is expired), when fn
 * never runs. The requester reads the answer with zkl__req_done and
 * zkl__req_guarded_results, then lets go with zkl__req_drop; w stays the
 * caller's until then (a create's path and a set's stat are copied into it
 * only by zkl__req_guarded_results).
 */
zkl__req *zkl__req_guarded(zkl__session *s, char *const *guard, int ng, zkl_write *w, int n,
                           zkl__req_fn fn, void *arg, int *rc);
/* The answered request's results into w[0..n) and *bad, as zkl__zk_guarded gives them. */
void zkl__req_guarded_results(const zkl__req *k, int rc, int ng, zkl_write *w, int n, int *bad);

#endif
