/*
 * transport.h - who drives a session's ZooKeeper handle (docs/design/transport.md).
 *
 * zklock's ZooKeeper client is a private copy of libzookeeper_st, linked
 * into the library with every name of it renamed (zkl__zkc_..., by the
 * build: CMakeLists.txt, "The private ZooKeeper client"), so that it never
 * shares a name with a libzookeeper_mt or _st the program loads. It has no
 * threads: a thread of the client's own, the poller, drives it. Every call
 * on a handle runs under the session's handle mutex (a leaf), each caller
 * sends its own request, and the callbacks the library runs inside those
 * calls copy their reply and defer the rest (zkl__defer) to run after the
 * mutex is let go, on the poller.
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
 * locks of their own that no caller holds across enter.
 */
typedef struct zkl__pumped {
    zhandle_t *zh;
    pthread_t thread;
    pthread_mutex_t mu;
    int wake; /* its thread's wake fd */
    atomic_bool stop;
} zkl__pumped;

/* zookeeper_init2's, made and driven; NULL (errno set): no handle. */
zkl__pumped *zkl__pumped_open(const char *hosts, watcher_fn fn, int recv_timeout_ms, void *ctx);
void zkl__pumped_enter(zkl__pumped *p);
void zkl__pumped_leave(zkl__pumped *p);
/* Its thread ended, the handle closed (answering what was in flight), p freed. */
void zkl__pumped_close(zkl__pumped *p);

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

/* expr, a call on s's handle, inside zkl__zk_enter/leave */
#define ZKL_ZK(s, expr)                                                                            \
    __extension__({                                                                                \
        zkl__zk_enter(s);                                                                          \
        __typeof__(expr) zk_r_ = (expr);                                                           \
        zkl__zk_leave(s);                                                                          \
        zk_r_;                                                                                     \
    })

#endif
