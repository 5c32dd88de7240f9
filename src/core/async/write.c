/*
 * write.c - async guarded writes (zklock/guard.h): the multi of
 * core/engine/guarded.c sent without waiting, and its answer delivered in
 * the home client's mode, as an async acquire's report is (async.c).
 *
 * DESIGN
 *
 * A write lives from zkl__guarded_write_async until its callback returns.
 * The caller's thread checks it and sends it; the ZooKeeper completion
 * thread is told of the answer (answered), and posts the report; the worker
 * or zkl_client_dispatch delivers it: the results are read into the
 * caller's writes, the request let go, the callback run, and the write
 * freed. Send and answer race: the completion may come before the sender
 * has its request, so whichever of the two comes second (under the home
 * client's c->mu: k set, answered) posts. The home client counts its writes
 * out (c->writes_out), and zkl_client_close refuses while any is: the
 * report has a client to be delivered on. Nothing here holds a pointer to
 * the hold: its nodes are copied, so the handle may be released with the
 * write in flight (ZooKeeper orders the release's delete after it).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fault.h"
#include "base/status.h"
#include "core/async/write.h"
#include "core/engine/acq.h"
#include "core/engine/guarded.h"
#include "core/engine/report.h"
#include "requests/guarded.h"

typedef struct write_job {
    zkl__report rep; /* first: deliver's cast */
    zkl_client *home;
    const char *fn_name;
    zkl_write *w;
    size_t n;
    char *nodes[ZKL_GUARD_CHECKS_MAX]; /* copies of the checked nodes (messages) */
    int nnodes;
    zkl_write_fn fn;
    void *ud;
    /* under home->mu */
    zkl__req *k; /* set by the sender once sent */
    bool answered;
} write_job;

static void job_free(write_job *j)
{
    int i;
    for (i = 0; i < j->nnodes; i++)
        free(j->nodes[i]);
    free(j);
}

/* The write is reported (or was never sent): the client may close. */
static void job_end(write_job *j)
{
    zkl_client *c = j->home;
    job_free(j);
    pthread_mutex_lock(&c->mu);
    c->writes_out--;
    pthread_mutex_unlock(&c->mu);
}

/* On the worker or in zkl_client_dispatch, no lock held. */
static void deliver(zkl__report *r)
{
    write_job *j = (write_job *)r;
    zkl__cb_frame frame;
    size_t failed = SIZE_MAX;
    zkl_status st;
    char *msg = NULL;
    int rc = ZOK, bad = -1;
    (void)zkl__req_done(j->k, &rc); /* answered: it was posted */
    zkl__req_guarded_results(j->k, rc, j->nnodes, j->w, (int)j->n, &bad);
    zkl__req_drop(j->k);
    st = zkl__guard_outcome(j->nodes, j->nnodes, j->w, rc, bad, &failed, j->fn_name);
    if (st != ZKL_OK)
        msg = strdup(zkl_errmsg()); /* NULL without memory: said so below */
    zkl__cb_enter(&frame, j->home); /* zkl_client_close refuses from inside */
    j->fn(st, failed, st == ZKL_OK ? "" : msg ? msg : "out of memory", j->ud);
    zkl__cb_leave(&frame);
    free(msg);
    job_end(j);
}

/* On a ZooKeeper delivery, no lock held. */
static void answered(void *arg)
{
    write_job *j = arg;
    bool post;
    pthread_mutex_lock(&j->home->mu);
    j->answered = true;
    post = j->k != NULL;
    pthread_mutex_unlock(&j->home->mu);
    if (post)
        zkl__report_post(j->home, &j->rep);
}

/* A new job for g's nodes, counted out on home; or why not. */
static zkl_status job_new(zkl_client *home, const zkl__guard *g, const char *fn_name,
                          write_job **out)
{
    write_job *j = calloc(1, sizeof *j);
    zkl_status st = ZKL_OK;
    int i;
    *out = NULL;
    if (!j)
        return zkl__fail(ZKL_ENOMEM, "%s: out of memory", fn_name);
    for (i = 0; i < g->n; i++, j->nnodes++)
        if (!(j->nodes[i] = strdup(g->nodes[i]))) {
            job_free(j);
            return zkl__fail(ZKL_ENOMEM, "%s: out of memory", fn_name);
        }
    pthread_mutex_lock(&home->mu);
    if (home->closing)
        st = zkl__closed_fail(home, fn_name);
    else if (!zkl__engine_locked(home))
        st = zkl__fail(ZKL_ENOMEM, "%s: out of memory", fn_name);
    else
        home->writes_out++;
    pthread_mutex_unlock(&home->mu);
    if (st != ZKL_OK) {
        job_free(j);
        return st;
    }
    j->rep.deliver = deliver;
    j->home = home;
    j->fn_name = fn_name;
    *out = j;
    return ZKL_OK;
}

/* A test's pause of the sender between the send and its note of the
 * request: the answer may be in first (a preemption the scheduler may make). */
static void sent_fault(zkl_client *c)
{
    int ms = ZKL_FAULT(c, WRITE_SENT_MS, NULL);
    if (ms > 0)
        usleep((useconds_t)ms * 1000);
}

zkl_status zkl__guarded_write_async(zkl_client *home, const zkl__hold *holds, int nh, zkl_write *w,
                                    size_t n, zkl_write_fn fn, void *ud, size_t *failed,
                                    const char *fn_name)
{
    zkl__guard g;
    write_job *j;
    zkl_status st;
    zkl__req *k;
    bool post;
    int rc, bad = -1;
    if ((st = zkl__guard_prepare(holds, nh, w, n, failed, fn_name, &g)) != ZKL_OK)
        return st;
    if ((st = job_new(home, &g, fn_name, &j)) != ZKL_OK || !j) {
        zkl__session_put(g.s);
        return st != ZKL_OK ? st : zkl__fail(ZKL_ENOMEM, "%s: out of memory", fn_name);
    }
    j->w = w;
    j->n = n;
    j->fn = fn;
    j->ud = ud;
    k = zkl__req_guarded(g.s, g.nodes, g.n, w, (int)n, answered, j, &rc);
    zkl__session_put(g.s);
    sent_fault(home);
    if (!k) { /* not sent: the callback will not run */
        size_t i;
        job_end(j);
        for (i = 0; i < n; i++)
            w[i].rc = rc;
        return zkl__guard_outcome(g.nodes, g.n, w, rc, bad, failed, fn_name);
    }
    pthread_mutex_lock(&home->mu);
    j->k = k;
    post = j->answered;
    pthread_mutex_unlock(&home->mu);
    if (post)
        zkl__report_post(home, &j->rep);
    return ZKL_OK;
}
