/*
 * fork.c - what a fork()ed child sees of the clients its parent had open.
 *
 * DESIGN
 *
 * A child has one thread, a copy of the parent's memory and a share of its
 * descriptors: none of the parent's workers, none of the ZooKeeper client's
 * threads, and the parent's sessions, which are the parent's alone (a
 * request sent on one would be the parent's; a hold read as held would be
 * a second holder). So every client open at the fork is marked forked in
 * the child: it holds nothing (every hold reads as lost), refuses every
 * call that would wait or send (ZKL_ECLOSED, saying why), and its close
 * frees zklock's own memory without joining threads that do not exist; the
 * ZooKeeper handle is not closed (libzookeeper_mt closes one only by
 * joining its threads) but kept reachable here, with its socket open in the
 * child; so are its engine's operations and the reports its worker had not
 * delivered (core/engine/engine.c: a report's delivery would call the
 * parent's callbacks in the child). A child is judged by what it can reach.
 * The parent is not touched.
 *
 * Consistency: the prepare handler takes, in this order, the registry's
 * lock, every registered client's pl.round_mu, every c->mu (in list order),
 * and the transport's xid lock; the child marks each client and lets them
 * all go, as the parent does.
 *  - c->mu: the child's copy of each client is not half-updated, and its
 *    worker is between phases (it holds c->mu through them, but for an
 *    async operation's steps and the reports it delivers: what those hold
 *    is kept reachable from the client, core/engine/engine.c, as is a report
 *    a step posts while it waits here for c->mu, core/engine/report.c).
 *  - pl.round_mu: on the st transport the poller holds it from the end of its
 *    poll through the deliveries it runs, so the fork waits for a reply in
 *    its hands to be delivered. Without it a reply taken off the handle's
 *    list but not yet delivered was held only on the poller's stack, which
 *    the child does not have: the child lost it (valgrind found the
 *    revocation watch's reply lost in test_latch's forked child).
 *  - xid lock: a leaf taken around every request; a child that opens a
 *    client of its own takes it.
 * Why this cannot deadlock: a round runs zklock's deliveries only (they
 * record and signal; user callbacks run on the worker or in dispatch, with
 * no lock of ours held), which take c->mu but never the registry's lock or
 * a pl.round_mu; no zklock thread holds one c->mu while it blocks on another
 * (a second client's is only ever tried: core/async/async.c); and nothing
 * is taken under the xid lock. So every lock the handler waits for is let
 * go without it.
 *
 * The worker's try of a queued delete is kept so too: the delete, off the
 * queue, and the request in flight, answered or not (services/cleanup.c,
 * zkl__call_keep_in); the child's close frees them. Without it a fork in
 * that round trip (zklock(1)'s lease watchdog, forked as the lock comes
 * after a session was lost) lost both in the child. So is a held-back
 * delete a flush took off its list: it waits on the flushing list until it
 * is sent (a fork under load, just after a semaphore's internal lock was
 * let go, lost it in test_lifecycle's child), and one a create carried in
 * its multi stays on that acquire's list; either leaves its list only as it
 * is freed, in one hold of c->mu.
 *
 * What it cannot save: memory that another thread of the parent holds only
 * on its stack at the fork (a caller of ours in the middle of a call, the
 * worker in the few instructions between a step's malloc and the link that
 * makes it reachable) is the parent's; the child never reaches it, as with
 * any fork() of a threaded process. Holding the poller's round lock through
 * the worker's steps closed that window but let the poller starve the
 * worker (test_latch's fork test, its deliveries stalled 1.5 s, never led).
 * Locks that a vanished thread may hold in the child (a reentrancy
 * table's, a semaphore's, lsn.mu) are never taken for a forked client:
 * the calls look at zkl__forked first.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <utlist.h>

#include "client/fork.h"
#include "session/transport.h"

static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;
static zkl_client *reg; /* open clients (utlist through reg.prev, reg.next) */
static pthread_once_t handlers_once = PTHREAD_ONCE_INIT;

/* What forked clients closed in this child left that it can neither free
 * nor use (see above): their ZooKeeper handles, and the operations and
 * reports of their engines (core/engine/engine.c). */
static void **kept;
static size_t n_kept;

static void prepare(void)
{
    zkl_client *c;
    pthread_mutex_lock(&reg_mu);
    for (c = reg; c; c = c->reg.next)
        pthread_mutex_lock(&c->pl.round_mu);
    for (c = reg; c; c = c->reg.next)
        pthread_mutex_lock(&c->mu);
    zkl__transport_fork_lock();
}

/* What prepare took, let go (c->mu already let go if mu_too is false). */
static void let_go(bool mu_too)
{
    zkl_client *c;
    zkl__transport_fork_unlock();
    for (c = reg; c; c = c->reg.next) {
        if (mu_too)
            pthread_mutex_unlock(&c->mu);
        pthread_mutex_unlock(&c->pl.round_mu);
    }
    pthread_mutex_unlock(&reg_mu);
}

static void parent(void)
{
    let_go(true);
}

static void child(void)
{
    zkl_client *c;
    for (c = reg; c; c = c->reg.next) {
        c->reg.forked = true;
        c->closing = true; /* every wait and send refuses */
        c->conn.state = ZKL_STATE_LOST;
        c->conn.sess->expired = true; /* every hold reads as lost */
        if (c->wk.started)
            zkl__clients_count(-1); /* its worker runs in the parent only */
        c->wk.started = false;
        pthread_mutex_unlock(&c->mu);
    }
    let_go(false);
}

static void install_handlers(void)
{
    (void)pthread_atfork(prepare, parent, child);
}

void zkl__registry_lock(void)
{
    pthread_mutex_lock(&reg_mu);
}

zkl_client *zkl__registry_first(void)
{
    return reg;
}

void zkl__registry_unlock(void)
{
    pthread_mutex_unlock(&reg_mu);
}

bool zkl__registry_name(zkl_client *self, char *name)
{
    zkl_client *c;
    bool taken = false;
    char *old;
    pthread_mutex_lock(&reg_mu);
    DL_FOREACH2(reg, c, reg.next)
    {
        if (c == self)
            continue;
        pthread_mutex_lock(&c->mu);
        taken = taken || (c->tally.name && !strcmp(c->tally.name, name));
        pthread_mutex_unlock(&c->mu);
    }
    if (!taken) {
        pthread_mutex_lock(&self->mu);
        old = self->tally.name;
        self->tally.name = name;
        pthread_mutex_unlock(&self->mu);
        free(old);
    }
    pthread_mutex_unlock(&reg_mu);
    return !taken;
}

void zkl__fork_register(zkl_client *c)
{
    static unsigned opened;
    (void)pthread_once(&handlers_once, install_handlers);
    pthread_mutex_lock(&reg_mu);
    c->tally.number = ++opened;
    DL_APPEND2(reg, c, reg.prev, reg.next);
    pthread_mutex_unlock(&reg_mu);
}

void zkl__fork_unregister(zkl_client *c)
{
    pthread_mutex_lock(&reg_mu);
    DL_DELETE2(reg, c, reg.prev, reg.next);
    c->reg.prev = c->reg.next = NULL;
    pthread_mutex_unlock(&reg_mu);
}

void zkl__fork_keep(void *block)
{
    void **v;
    if (!block)
        return;
    pthread_mutex_lock(&reg_mu);
    v = realloc(kept, (n_kept + 1) * sizeof *v);
    if (v) { /* (else it is lost: a child out of memory) */
        kept = v;
        kept[n_kept++] = block;
    }
    pthread_mutex_unlock(&reg_mu);
}
