/*
 * call.h - one ZooKeeper request in flight, private to the requests layer:
 * the record its completion fills (on a ZooKeeper delivery) and
 * either a thread waits on (calls.c, blocking) or a notification tells the
 * engine about (pending.c, non-blocking). A call lives on the heap with two
 * references, the requester's and the completion's, so that a requester may
 * give up (at its deadline) while the completion still has somewhere to
 * write when it comes.
 */
#ifndef ZKL_REQUESTS_CALL_H
#define ZKL_REQUESTS_CALL_H

#include <pthread.h>
#include <stdbool.h>

#include "requests/names.h"
#include "session/client.h"
#include "session/transport.h"

typedef struct zkl__call {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int done;
    int refs;
    int rc;
    int reply_rc; /* the server's, before a copy of the reply failed for memory */
    char *created;
    struct Stat stat;
    zkl__names kids;
    char *data;
    int datalen;
    zoo_op_result_t *results; /* a multi's, filled by the client at completion */
    /* the lease: a write or sync (through the leader) answered proves the
     * session alive until sent + T on the server's side */
    zkl_client *c;
    uint64_t epoch;
    int64_t sent; /* zkl__boot_ms() */
    bool proves;
    /* pending.c: told when the call is done (a ZooKeeper delivery, no lock
     * held); cleared by the requester before it lets go of the call */
    void (*notify)(void *arg);
    void *arg;
    bool notifying;       /* notify is running: the requester waits it out */
    zkl__delivery answer; /* its zkl__call_done, deferred (session/transport.h) */
} call;

/* One request of kind (ZKL__REQ_*) sent by client c: zkl_client_stats_get and the metrics. */
void zkl__count_request(zkl_client *c, int kind);
/* A new call on session s (the before-send hook runs first); NULL on no memory. */
call *zkl__call_new(zkl__session *s);
/* The same, its requester told by fn(arg) when it is done (a ZooKeeper delivery, no lock held). */
call *zkl__call_new_told(zkl__session *s, void (*fn)(void *arg), void *arg);
/* The call's answer will renew the lease (a write or a sync). */
void zkl__call_proves(call *k);
void zkl__call_free(call *k);
/* Record rc, wake the waiter or tell the requester, drop the completion's reference. */
void zkl__call_done(call *k, int rc);
/* A listing's names in one new block (empty if none); -1 on no memory. */
int zkl__names_copy(const struct String_vector *sv, zkl__names *out);
/*
 * Wait for k's reply, or until this thread's call deadline (calls.h): its
 * rc, or ZOPERATIONTIMEOUT. *answered: the reply came (only then may its
 * results be read). The waiter keeps its reference.
 */
int zkl__call_wait(call *k, bool *answered);
/* Drop one reference (the requester's after it took its results, or the completion's). */
void zkl__call_put(call *k);

/* Completions for the ZooKeeper client's asynchronous calls; data is the call. */
void zkl__on_void(int rc, const void *data);
void zkl__on_stat(int rc, const struct Stat *stat, const void *data);
void zkl__on_create(int rc, const char *value, const struct Stat *stat, const void *data);
void zkl__on_strings(int rc, const struct String_vector *sv, const void *data);
void zkl__on_data(int rc, const char *value, int len, const struct Stat *stat, const void *data);
void zkl__on_data_watch(int rc, const char *value, int len, const struct Stat *stat,
                        const void *data);
void zkl__on_data_watch_keep(int rc, const char *value, int len, const struct Stat *stat,
                             const void *data);
void zkl__on_stat_watch(int rc, const struct Stat *stat, const void *data);
void zkl__on_string(int rc, const char *value, const void *data);

/*
 * A watch request that came to nothing gives back the ZooKeeper side's
 * reference to w: not sent (k NULL), or refused by the server. One answered
 * ZOK, or not answered in time (rc ZOPERATIONTIMEOUT), keeps it.
 */
void zkl__watch_settle(zkl__watch *w, const call *k, int rc);

/*
 * zoo_amulti with rc ZINVALIDSTATE instead when the handle is expired or
 * its authentication failed. libzookeeper_mt's zoo_amulti (3.8.0 in Debian
 * 12, and upstream still) then frees an uninitialised pointer for every
 * sub-request after the first (the request struct of a sub-request whose
 * init was skipped), and under a chroot frees the first one's path twice: a
 * crash, or a free of the caller's path. The state can still turn in the
 * microseconds between this look and the call; docs/ARCHITECTURE.md says so.
 */
int zkl__zk_amulti(zhandle_t *zh, int count, const zoo_op_t *ops, zoo_op_result_t *results,
                   void_completion_t done, const void *data);

/* Send senders shared by both kinds of requester: the send rc. */
int zkl__send_create(zkl__session *s, call *k, const char *path, const void *data, int len,
                     int mode);
/* The multi of ndel deletes and a create; km gets its result buffers. */
int zkl__send_multi_create(zkl__session *s, call *km, char *const *del, int ndel, const char *path,
                           const void *data, int len, int mode);

#endif
