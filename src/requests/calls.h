/*
 * calls.h - blocking ZooKeeper calls built on the asynchronous API, so that
 * the core can also send two requests back to back (create, then list) and
 * wait for both: ZooKeeper answers one session's requests in order, so the
 * listing already contains the new node. Each call returns a ZooKeeper rc.
 */
#ifndef ZKL_ZKCALL_H
#define ZKL_ZKCALL_H

#include <stddef.h>

#include "requests/names.h"
#include "session/client.h"
#include "base/tuning.h"

/*
 * Calls made by this thread give up waiting at this deadline (zkl__now_ms
 * based; INT64_MAX: no limit) and report ZOPERATIONTIMEOUT, which the core
 * treats like a connection loss: the request may still be applied. Returns
 * the previous value, to restore.
 */
int64_t zkl__call_deadline(int64_t deadline);

/*
 * From now on, this thread's blocking calls each keep their call in *slot
 * (set under mu) while they wait for it, so that what the thread has in
 * flight is reachable from a struct of its owner's, not only from this
 * thread's stack: a fork()ed child, which has no copy of this thread,
 * reaches it there (client/fork.c). slot NULL: no longer.
 */
struct zkl__call;
void zkl__call_keep_in(struct zkl__call **slot, pthread_mutex_t *mu);

int zkl__zk_children(zkl__session *s, const char *path, zkl__names *out);
int zkl__zk_exists(zkl__session *s, const char *path, struct Stat *stat);
int zkl__zk_get(zkl__session *s, const char *path, char **data, int *len, struct Stat *stat);
int zkl__zk_delete(zkl__session *s, const char *path);
/* sync: what this session reads next is no older than the leader's commits before it */
int zkl__zk_sync(zkl__session *s, const char *path);
int zkl__zk_set(zkl__session *s, const char *path, const void *data, int len);

/*
 * Requests whose reply goes to the caller's completion, run by a ZooKeeper
 * delivery (record and signal only there). Counted as requests;
 * no before-send hook and no lease proof. Return the send rc: on failure
 * the completion never runs.
 */
int zkl__zk_send_delete(zkl__session *s, const char *path, void_completion_t done, const void *ctx);
/* sync of "/": through the leader, so its answer proves the session alive */
int zkl__zk_send_sync(zkl__session *s, string_completion_t done, const void *ctx);
/* get with a watch; watcher is told of the node's event only (on the st
 * transport session events are not passed on: its one user ignores them) */
int zkl__zk_send_wget(zkl__session *s, const char *path, watcher_fn watcher, void *wctx,
                      data_completion_t done, const void *ctx);

#endif
