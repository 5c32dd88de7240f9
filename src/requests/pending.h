/*
 * pending.h - ZooKeeper requests that do not block: each is sent at once and
 * tells its requester when it is answered, through a function run in a
 * ZooKeeper delivery (with no lock held: it may take c->mu, record
 * and signal, nothing more). The requester then reads the results from the
 * request and drops it. The engine of the core (core/engine/engine.c) is built on
 * these; the blocking calls of calls.h are a wait on the same requests.
 */
#ifndef ZKL_REQUESTS_PENDING_H
#define ZKL_REQUESTS_PENDING_H

#include <stdbool.h>
#include <stdint.h>

#include "requests/names.h"
#include "session/client.h"

typedef struct zkl__call zkl__req;
typedef void (*zkl__req_fn)(void *arg);

/*
 * Each sends one request on session s and returns it, or NULL with *rc the
 * send's failure (ZSYSTEMERROR: no memory), when fn will never run. fn(arg)
 * runs once when the answer is in (fn may be NULL: the caller waits).
 */
zkl__req *zkl__req_create(zkl__session *s, const char *path, const void *data, int len, int mode,
                          zkl__req_fn fn, void *arg, int *rc);
/* ndel (1..ZKL_MULTI_MAX) deletes and a create in one multi transaction. */
zkl__req *zkl__req_multi_create(zkl__session *s, char *const *del, int ndel, const char *path,
                                const void *data, int len, int mode, zkl__req_fn fn, void *arg,
                                int *rc);
/* getChildren, with child watch w if not NULL (given back if never set: see zkl__req_settle). */
zkl__req *zkl__req_children(zkl__session *s, const char *path, zkl__watch *w, zkl__req_fn fn,
                            void *arg, int *rc);
/*
 * getChildren with no watch, answered by a listing of path on s sent after
 * this call (requests/pending.c): it may be one this session's other waiters
 * share. What it shows is no older than what a listing of one's own shows.
 */
zkl__req *zkl__req_children_shared(zkl__session *s, const char *path, zkl__req_fn fn, void *arg,
                                   int *rc);
/* s's handle is about to close: no shared listing is sent on it any more
 * (joiners are answered ZCLOSING). Then, the handle closed, its table is
 * freed. The session's hooks (session/client.h: lists_closing, lists_free). */
void zkl__lists_closing(zkl__session *s);
void zkl__lists_free(zkl__session *s);
/* getData with data watch w, for the watch and the node's Stat only. */
zkl__req *zkl__req_wget(zkl__session *s, const char *path, zkl__watch *w, zkl__req_fn fn, void *arg,
                        int *rc);
/* getData with data watch w, keeping the data too (zkl__req_take_data): a
 * copy that fails for memory answers ZSYSTEMERROR with the watch set. */
zkl__req *zkl__req_wget_data(zkl__session *s, const char *path, zkl__watch *w, zkl__req_fn fn,
                             void *arg, int *rc);
zkl__req *zkl__req_exists(zkl__session *s, const char *path, zkl__req_fn fn, void *arg, int *rc);
/* exists with watch w: set on a node that is not there too (its create fires it). */
zkl__req *zkl__req_wexists(zkl__session *s, const char *path, zkl__watch *w, zkl__req_fn fn,
                           void *arg, int *rc);
zkl__req *zkl__req_delete(zkl__session *s, const char *path, zkl__req_fn fn, void *arg, int *rc);
/* sync: through the leader; its answer renews the lease. */
zkl__req *zkl__req_sync(zkl__session *s, const char *path, zkl__req_fn fn, void *arg, int *rc);

/* Whether the answer is in; *rc its rc then. */
bool zkl__req_done(zkl__req *k, int *rc);
/* A create's results: the path made (*created, the caller's) and its Stat. */
void zkl__req_take_created(zkl__req *k, char **created, struct Stat *stat);
/* A listing's names (the caller's). */
void zkl__req_take_kids(zkl__req *k, zkl__names *out);
/* The node's Stat (exists, getData). */
struct Stat zkl__req_stat(const zkl__req *k);
/* A getData's data (malloc'd, the caller's; NULL when empty) and its length. */
void zkl__req_take_data(zkl__req *k, char **data, int *len);
/*
 * A watch request ended with rc (ZOPERATIONTIMEOUT: not answered in time):
 * gives back the ZooKeeper side's reference to w if the watch was never set.
 */
void zkl__req_settle(const zkl__req *k, zkl__watch *w, int rc);
/*
 * Let go of the request, answered or not: fn will not run after this
 * returns (a running one is waited out). Never with c->mu held.
 */
void zkl__req_drop(zkl__req *k);

#endif
