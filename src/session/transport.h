/*
 * transport.h - who drives a session's ZooKeeper handle (docs/design/transport.md).
 *
 * With libzookeeper_mt (the default build) its own I/O and completion
 * threads do, and everything here is a no-op. Built with ZKL_TRANSPORT_ST,
 * libzookeeper_st is driven by a thread of the client's own, the poller:
 * every call on a handle runs under the session's handle mutex (a leaf),
 * each caller sends its own request, and the callbacks the library runs
 * inside those calls copy their reply and defer the rest (zkl__deferred) to
 * run after the mutex is let go, on the poller.
 */
#ifndef ZKL_SESSION_TRANSPORT_H
#define ZKL_SESSION_TRANSPORT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <zookeeper/zookeeper.h>

#include "zklock/status.h"

struct zkl_client;
struct zkl__session;

/*
 * A delivery: the part of a callback that takes our locks, run later. Each
 * object whose callback defers keeps its own (a call, a watch, a listing's
 * group, a trampoline: each is answered once), so that deferring allocates
 * nothing and an allocation failure cannot make a callback deliver under
 * the handle's mutex; a session keeps a few for its events.
 */
typedef struct zkl__delivery {
    void (*fn)(struct zkl__delivery *d); /* runs it: d is its owner's again from its first line */
    void *p;
    int a, b;
    int64_t x, y;
    void *q;
    bool heap; /* made by zkl__deferred: freed once fn returns */
    struct zkl__delivery *next;
} zkl__delivery;

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
    volatile int stop;
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

/*
 * A block that a watch registered on a session's handle owns (a watcher's
 * trampoline, requests/calls.c), which the handle drops unfired when it
 * closes: o is its first member, linked to the session (zkl__zk_own, right
 * after the request is made, inside the same zkl__zk_enter) until the watch
 * fires (zkl__zk_disown, in the watcher); zkl__zk_close frees what is left.
 */
typedef struct zkl__zk_owned {
    struct zkl__zk_owned *prev, *next;
} zkl__zk_owned;

#ifdef ZKL_TRANSPORT_ST
void zkl__zk_own(struct zkl__session *s, zkl__zk_owned *o);
void zkl__zk_disown(struct zkl__session *s, zkl__zk_owned *o);
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
/* The poller: started before the first session opens; stopped after the last closes. */
int zkl__poller_start(struct zkl_client *c);
void zkl__poller_stop(struct zkl_client *c);
/* s's handle is made (poll it) / going (stop polling it). Caller holds c->mu. */
void zkl__poller_add_locked(struct zkl_client *c, struct zkl__session *s);
void zkl__poller_remove_locked(struct zkl_client *c, struct zkl__session *s);
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
static inline int zkl__poller_start(struct zkl_client *c)
{
    (void)c;
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
