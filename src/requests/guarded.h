/*
 * guarded.h - the one multi transaction of a guarded write (zklock/guard.h):
 * a check of each guard node at any version, then the caller's writes.
 */
#ifndef ZKL_REQUESTS_GUARDED_H
#define ZKL_REQUESTS_GUARDED_H

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

#endif
