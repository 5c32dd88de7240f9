/*
 * transport.h - who drives a session's ZooKeeper handle (docs/design/transport.md).
 *
 * On the st transport (ZKL_TRANSPORT_ST, the default build) libzookeeper_st
 * is driven by a thread of the client's own, the poller: every call on a
 * handle runs under the session's handle mutex (a leaf), each caller sends
 * its own request, and the callbacks the library runs inside those calls
 * copy their reply and defer the rest (zkl__defer) to run after the mutex
 * is let go, on the poller. When a program's libzookeeper_mt runs every
 * call instead (transport.c: "which library runs our calls"), and in the
 * mt build, libzookeeper_mt's own I/O and completion threads drive the
 * handle and everything here is a no-op.
 */
#ifndef ZKL_SESSION_TRANSPORT_H
#define ZKL_SESSION_TRANSPORT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <zookeeper/zookeeper.h>

#include "session/delivery.h"
#include "zklock/status.h"

struct zkl_client;
struct zkl__session;

/*
 * A handle outside any session, driven by a thread of its own on st (the
 * chroot maker's, services/chroot.c): made by zkl__pumped_open, every call
 * on it inside zkl__pumped_enter/leave, ended by zkl__pumped_close (from a
 * thread that is not inside enter/leave). Its callbacks run on its own
 * thread under its mutex, which is a leaf of the caller's: they may take
 * locks of their own that no caller holds across enter. On mt, the handle
 * and nothing more.
 */
typedef struct zkl__pumped {
    zhandle_t *zh;
#ifdef ZKL_TRANSPORT_ST
    bool pumping; /* it has a thread of ours (not when libzookeeper_mt's names won) */
    pthread_t thread;
    pthread_mutex_t mu;
    int wake; /* its thread's wake fd */
    atomic_bool stop;
#endif
} zkl__pumped;

/*
 * ZKL_OK if this process's ZooKeeper calls can run. On st, when the program
 * links libzookeeper_mt itself, ahead of libzookeeper_st, its names run
 * every call (the two export the same names): zklock then runs on its
 * threads, as the mt build does. ZKL_ESYS (with a message) when
 * libzookeeper_st's won but the program's synchronous calls are
 * libzookeeper_mt's: its own handles could not work.
 */
zkl_status zkl__transport_check(void);

/* zookeeper_init2's, made and driven; NULL (errno set): no handle. */
zkl__pumped *zkl__pumped_open(const char *hosts, watcher_fn fn, int recv_timeout_ms, void *ctx);
/* zh, already made, driven from now on (the tests' shim's handles); NULL:
 * no memory or thread, and zh is left as it was. */
zkl__pumped *zkl__pumped_drive(zhandle_t *zh);
void zkl__pumped_enter(zkl__pumped *p);
void zkl__pumped_leave(zkl__pumped *p);
/* Its thread ended, the handle closed (answering what was in flight), p freed. */
void zkl__pumped_close(zkl__pumped *p);

#ifdef ZKL_TRANSPORT_ST
/* o linked to s (owned) or unlinked (its watch fired): delivery.h. */
void zkl__zk_owned_set(struct zkl__session *s, zkl__zk_owned *o, bool owned);
/* Around every call on s's handle (s->zh). */
void zkl__zk_enter(struct zkl__session *s);
void zkl__zk_leave(struct zkl__session *s);
/* The calling thread runs inside the ZooKeeper client (a callback): defer. */
bool zkl__zk_deferring(void);
/* Inside the ZooKeeper client: queue d (its owner's, fn and fields filled
 * in) and say true. Otherwise false: the caller delivers at once. */
bool zkl__defer(zkl__delivery *d);
/* Inside the ZooKeeper client: queue fn with these fields and say true.
 * Otherwise (or out of memory) false: the caller delivers at once. */
bool zkl__deferred(void (*fn)(zkl__delivery *d), void *p, int a, int b, int64_t x, int64_t y,
                   void *q);
/* Close s's handle; what its close answered is delivered before it returns. */
void zkl__zk_close(struct zkl__session *s);
/* The poller: started before the first session opens; stopped after the
 * last closes. put lets go of a session the poller held while it polled
 * (zkl__session_put: a floor above this file's, so it is handed in). */
int zkl__poller_start(struct zkl_client *c, void (*put)(struct zkl__session *s));
void zkl__poller_stop(struct zkl_client *c);
/* s's handle is made (poll it) / going (stop polling it). Caller holds c->mu. */
void zkl__poller_add_locked(struct zkl_client *c, struct zkl__session *s);
void zkl__poller_remove_locked(struct zkl_client *c, struct zkl__session *s);
/* A fork() (client/fork.c): the process's xid lock, a leaf, held across it
 * (taken last, after every c->mu) so that a child's copy is not held by a
 * thread it does not have. */
void zkl__transport_fork_lock(void);
void zkl__transport_fork_unlock(void);
#else
static inline void zkl__zk_enter(struct zkl__session *s)
{
    (void)s;
}
static inline void zkl__zk_leave(struct zkl__session *s)
{
    (void)s;
}
static inline bool zkl__zk_deferring(void)
{
    return false;
}
static inline bool zkl__defer(zkl__delivery *d)
{
    (void)d;
    return false;
}
static inline bool zkl__deferred(void (*fn)(zkl__delivery *d), void *p, int a, int b, int64_t x,
                                 int64_t y, void *q)
{
    (void)fn, (void)p, (void)a, (void)b, (void)x, (void)y, (void)q;
    return false;
}
void zkl__zk_close(struct zkl__session *s);
static inline int zkl__poller_start(struct zkl_client *c, void (*put)(struct zkl__session *s))
{
    (void)c, (void)put;
    return 0;
}
static inline void zkl__poller_stop(struct zkl_client *c)
{
    (void)c;
}
static inline void zkl__poller_add_locked(struct zkl_client *c, struct zkl__session *s)
{
    (void)c, (void)s;
}
static inline void zkl__poller_remove_locked(struct zkl_client *c, struct zkl__session *s)
{
    (void)c, (void)s;
}
static inline void zkl__transport_fork_lock(void) {}
static inline void zkl__transport_fork_unlock(void) {}
#endif

/* expr, a call on s's handle, inside zkl__zk_enter/leave */
#define ZKL_ZK(s, expr)                                                                            \
    __extension__({                                                                                \
        zkl__zk_enter(s);                                                                          \
        __typeof__(expr) zk_r_ = (expr);                                                           \
        zkl__zk_leave(s);                                                                          \
        zk_r_;                                                                                     \
    })

#endif
