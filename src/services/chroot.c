/*
 * chroot.c - the connect string's chroot made on first use, as Curator makes
 * its namespace node: a client on "host:port/app" whose /app does not exist
 * yet gets it (and any missing ancestors) as plain persistent nodes the
 * first time a lock needs it, through a short-lived handle without the
 * chroot. If that is refused, the error names the chroot, not the lock path
 * (issue 17).
 *
 * Nothing here blocks (issue 38): an acquire's step starts a job, polls it
 * whenever the job's notify says there is news or its timer is due, and
 * ends it. The handle is a pumped one (session/transport.h): it connects
 * and answers on threads of its own (ZooKeeper's on mt, one of ours on st),
 * and is closed on a thread of its own (closing joins them).
 *
 * Lock order: the handle's (zkl__pumped_enter), then j->mu, then whatever
 * notify takes (the client's c->mu). So the stepping thread never calls in
 * here holding c->mu, and holds no j->mu while it enters the handle.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zookeeper/zookeeper.h>

#include "services/chroot.h"
#include "base/fault.h"
#include "base/log.h"
#include "base/status.h"
#include "base/util.h"
#include "requests/rc.h"
#include "session/transport.h"

struct zkl__chroot_job {
    pthread_mutex_t mu; /* guards notify, arg, answered, rc */
    void (*notify)(void *arg);
    void *arg;     /* NULL notify: ended, nobody to tell */
    bool answered; /* the create in flight was answered, with rc */
    int rc;
    /* the stepping thread's own, no lock */
    zkl_client *c;
    zkl__pumped *h;
    pid_t pid;          /* the process that opened h (a fork()ed child may not close it) */
    int64_t connect_by; /* zkl__now_ms(): connected by then, or ZKL_ECONNECT */
    int64_t deadline;   /* the acquire's: every create answered by then */
    int64_t stall_until;
    int connect_ms; /* the client's connect timeout */
    bool connected, sent;
    bool again;   /* j->part is to be sent again once connected (its reply was lost) */
    int restarts; /* times made again from the top (ZKL_CHROOT_RESTARTS) */
    size_t at;    /* how much of the chroot is made ("/a" of "/a/b": 2) */
    char *part;   /* the ancestor being made */
};

const char *zkl__chroot_of(const char *connect)
{
    const char *slash = strchr(connect, '/');
    return slash && slash[1] ? slash : NULL;
}

/* Tell the stepping thread, unless the job has ended. On ZooKeeper's threads. */
static void wake(zkl__chroot_job *j)
{
    pthread_mutex_lock(&j->mu);
    if (j->notify)
        j->notify(j->arg);
    pthread_mutex_unlock(&j->mu);
}

static void on_session(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
    (void)zh;
    (void)type;
    (void)state;
    (void)path;
    wake(ctx);
}

static void on_created(int rc, const char *value, const struct Stat *stat, const void *data)
{
    zkl__chroot_job *j = (zkl__chroot_job *)data;
    (void)value;
    (void)stat;
    pthread_mutex_lock(&j->mu);
    j->answered = true;
    j->rc = rc;
    if (j->notify)
        j->notify(j->arg);
    pthread_mutex_unlock(&j->mu);
}

/* On a thread of its own: the handle closes (ZooKeeper's threads end), then the job goes. */
static void job_free(void *arg)
{
    zkl__chroot_job *j = arg;
    /* a fork()ed child has none of the parent's threads to join: its copy stays */
    if (j->h && j->pid == getpid())
        zkl__pumped_close(j->h);
    pthread_mutex_destroy(&j->mu);
    free(j->part);
    free(j);
}

zkl_status zkl__chroot_start(zkl_client *c, int64_t deadline, void (*notify)(void *arg), void *arg,
                             zkl__chroot_job **out)
{
    const char *chroot = zkl__chroot_of(c->cfg.connect);
    int64_t cap = zkl__now_ms() + c->cfg.opts.connect_timeout_ms;
    zkl__chroot_job *j;
    char *hosts;
    *out = NULL;
    if (!chroot)
        return zkl__fail(ZKL_EZK, "no chroot to create");
    j = calloc(1, sizeof *j);
    hosts = strndup(c->cfg.connect, (size_t)(chroot - c->cfg.connect));
    if (!j || !hosts || !(j->part = malloc(strlen(chroot) + 1))) {
        free(hosts);
        if (j)
            free(j->part);
        free(j);
        return zkl__fail(ZKL_ENOMEM, "out of memory");
    }
    pthread_mutex_init(&j->mu, NULL);
    j->notify = notify;
    j->arg = arg;
    j->c = c;
    j->pid = getpid();
    j->deadline = deadline;
    j->connect_ms = c->cfg.opts.connect_timeout_ms;
    j->connect_by = deadline < cap ? deadline : cap;
    j->at = 1; /* past the root, which always exists */
    j->h = zkl__pumped_open(hosts, on_session, c->cfg.opts.session_timeout_ms, j);
    free(hosts);
    if (!j->h) {
        job_free(j);
        return zkl__fail(ZKL_ESYS, "no ZooKeeper handle to create the chroot %s with", chroot);
    }
    /* sent once it connects */
    if (c->cfg.auth_digest) {
        zkl__pumped_enter(j->h);
        (void)zoo_add_auth(j->h->zh, "digest", c->cfg.auth_digest, (int)strlen(c->cfg.auth_digest),
                           NULL, NULL);
        zkl__pumped_leave(j->h);
    }
    *out = j;
    return ZKL_OK;
}

/* Send the create of j->part. */
static int send_part(zkl__chroot_job *j)
{
    const struct ACL_vector *acl = j->c->cfg.acl.count ? &j->c->cfg.acl : &ZOO_OPEN_ACL_UNSAFE;
    int rc;
    pthread_mutex_lock(&j->mu);
    j->answered = false;
    pthread_mutex_unlock(&j->mu);
    j->sent = true;
    zkl__pumped_enter(j->h);
    rc = zoo_acreate2(j->h->zh, j->part, "", 0, acl, ZOO_PERSISTENT, on_created, j);
    zkl__pumped_leave(j->h);
    return rc;
}

/* The next ancestor, top down ("/a", "/a/b", ...), sent; false: the chroot is all made. */
static bool send_next(zkl__chroot_job *j, const char *chroot, int *rc)
{
    size_t len = strlen(chroot), i;
    if (j->at >= len)
        return false;
    for (i = j->at + 1; i < len && chroot[i] != '/'; i++)
        ;
    memcpy(j->part, chroot, i);
    j->part[i] = '\0';
    j->at = i;
    *rc = send_part(j);
    return true;
}

/* The chroot could not be made: rc of creating j->part. */
static zkl_status refused(const zkl__chroot_job *j, const char *chroot, int rc)
{
    if (zkl__rc_kind_of(rc) == ZKL__RC_NOMEM)
        return zkl__fail(ZKL_ENOMEM, "out of memory creating %s, of the chroot %s", j->part,
                         chroot);
    return zkl__fail(rc == ZNOAUTH ? ZKL_ENOAUTH : ZKL_EZK,
                     "the chroot %s of the connect string does not exist, and creating %s "
                     "failed: %s",
                     chroot, j->part, zerror(rc));
}

/* Not connected yet: true (and *st) if it never will be in time. */
static bool connect_failed(zkl__chroot_job *j, const char *chroot, int64_t now, int64_t *wake,
                           zkl_status *st)
{
    int state;
    zkl__pumped_enter(j->h);
    state = zoo_state(j->h->zh);
    zkl__pumped_leave(j->h);
    if (state == ZOO_CONNECTED_STATE) {
        j->connected = true;
        if (!j->sent)
            j->stall_until = now + ZKL_FAULT(j->c, CHROOT_STALL_MS, NULL);
        return false;
    }
    if (now < j->connect_by && state != ZOO_EXPIRED_SESSION_STATE &&
        state != ZOO_AUTH_FAILED_STATE) {
        *wake = j->connect_by;
        return false;
    }
    *st = zkl__fail(state == ZOO_AUTH_FAILED_STATE ? ZKL_EAUTH : ZKL_ECONNECT,
                    "the chroot %s of the connect string does not exist, and no server "
                    "answered in time to create it",
                    chroot);
    return true;
}

bool zkl__chroot_poll(zkl__chroot_job *j, zkl_status *st, int64_t *wake)
{
    const char *chroot = zkl__chroot_of(j->c->cfg.connect);
    int64_t now = zkl__now_ms();
    bool answered;
    int rc = ZOK;
    *wake = INT64_MAX;
    if (!j->connected) {
        if (connect_failed(j, chroot, now, wake, st))
            return true;
        if (!j->connected)
            return false; /* on_session tells, or the timer */
    }
    if (now < j->stall_until) {
        *wake = j->stall_until;
        return false;
    }
    if (j->again) {
        j->again = false;
        if ((rc = send_part(j)) == ZOK)
            return false; /* on_created tells */
        *st = refused(j, chroot, rc);
        return true;
    }
    if (j->sent) {
        pthread_mutex_lock(&j->mu);
        answered = j->answered;
        rc = j->rc;
        pthread_mutex_unlock(&j->mu);
        if (!answered && now < j->deadline) {
            *wake = j->deadline;
            return false;
        }
        if (!answered) {
            *st = zkl__fail(ZKL_ETIMEDOUT, "timed out creating %s, of the chroot %s", j->part,
                            chroot);
            return true;
        }
        if (zkl__rc_kind_of(rc) == ZKL__RC_RETRY) {
            /* the handle reconnects on its own; then the same node again
             * (it may exist by now, which is as good) */
            int64_t cap = now + j->connect_ms;
            j->connected = false;
            j->again = true;
            j->connect_by = j->deadline < cap ? j->deadline : cap;
            return zkl__chroot_poll(j, st, wake); /* once: the handle's state, now */
        }
        if (rc == ZNONODE && j->restarts < ZKL_CHROOT_RESTARTS) {
            /* an ancestor made or found a moment ago is gone (an empty
             * container the server reaped, another client's delete): from
             * the top again */
            zkl__log(ZKL_LOG_INFO, "an ancestor of %s went while the chroot was made: again",
                     j->part);
            j->restarts++;
            j->at = 1;
        } else if (rc == ZOK || rc == ZNODEEXISTS) {
            if (rc == ZOK)
                zkl__log(ZKL_LOG_INFO, "created %s (the connect string's chroot)", j->part);
            (void)ZKL_FAULT(j->c, CHROOT_PART, j->part);
        } else {
            *st = refused(j, chroot, rc);
            return true;
        }
    }
    if (!send_next(j, chroot, &rc)) {
        *st = ZKL_OK;
        return true;
    }
    if (rc != ZOK) {
        *st = refused(j, chroot, rc);
        return true;
    }
    return false; /* on_created tells */
}

void zkl__chroot_end(zkl__chroot_job *j)
{
    if (!j)
        return;
    pthread_mutex_lock(&j->mu);
    j->notify = NULL;
    j->arg = NULL;
    pthread_mutex_unlock(&j->mu);
    (void)zkl__run_bounded(job_free, j, 0);
}
