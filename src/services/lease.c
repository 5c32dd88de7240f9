/*
 * lease.c - the lease of lease.h: proofs from replies, renewals by the worker,
 * and the check every is-held query makes against the clock.
 */
#include <stdlib.h>
#include <time.h>

#include "services/lease.h"
#include "base/fault.h"
#include "base/log.h"
#include "base/status.h"
#include "base/tsan.h"
#include "base/util.h"
#include "base/tuning.h"
#include "requests/calls.h"

/* Tests count the lease's own requests apart from the lock's (base/fault.h). */
#define count_sync(c) ((void)ZKL_FAULT((c), LEASE_SYNC, NULL))

struct zkl__lease {
    int64_t end; /* zkl__boot_ms() before which the server cannot expire c->conn.sess; 0 none */
    int64_t renew_at; /* zkl__now_ms() of the next renewal */
    int holds;        /* holds that need the lease */
    int acquires;     /* acquires in progress (their grant needs it too) */
    bool lapsed;      /* c->conn.sess's lease ran out with holds: acted on */
    bool renewing;    /* a renewal is in flight */
    bool lapse_due;   /* a hold released after its lease ran out: tell it all the same */
};

zkl_status zkl__lease_init(zkl_client *c)
{
    c->lease = calloc(1, sizeof *c->lease);
    return c->lease ? ZKL_OK : zkl__fail(ZKL_ENOMEM, "out of memory");
}

void zkl__lease_free(zkl_client *c)
{
    free(c->lease);
    c->lease = NULL;
}

/* Granted timeout, or the one asked for before the first connect. Caller holds c->mu. */
static int64_t timeout_ms(const zkl_client *c)
{
    return c->conn.granted_timeout > 0 ? c->conn.granted_timeout : c->cfg.opts.session_timeout_ms;
}

int64_t zkl__lease_margin_ms(const zkl_client *c)
{
    int64_t t = timeout_ms(c), m = t / ZKL_LEASE_MARGIN_DIV + ZKL_LEASE_MARGIN_MS;
    if (c->cfg.opts.lease_margin_ms > 0)
        return c->cfg.opts.lease_margin_ms;
    return m < t / 4 ? m : t / 4;
}

/*
 * How often a renewal goes out: a third of the timeout, so that the lease
 * (T - margin - lag, and one interval less in an ensemble) always outlasts
 * two intervals; more often only if the server granted less than was asked
 * and it would not. Caller holds c->mu.
 */
static int64_t renew_interval_ms(const zkl_client *c)
{
    int64_t t = timeout_ms(c), room = t - zkl__lease_margin_ms(c) - c->cfg.opts.ensemble_lag_ms;
    int64_t r = t / 3;
    if ((c->cfg.opts.ensemble_lag_ms ? 3 : 2) * r > room)
        r = room / 3;
    return r > 10 ? r : 10;
}

/* What an ensemble's late touch reports cost the lease: the lag and one
 * renewal interval (docs/lease.md, "Ensembles"). Caller holds c->mu. */
static int64_t ensemble_lag_ms(const zkl_client *c)
{
    return c->cfg.opts.ensemble_lag_ms ? c->cfg.opts.ensemble_lag_ms + renew_interval_ms(c) : 0;
}

/* A reply the server itself made, for a session it counted alive. */
static bool server_answer(int rc)
{
    switch (rc) {
    case ZOK:
    case ZNONODE:
    case ZNODEEXISTS:
    case ZNOTEMPTY:
    case ZBADVERSION:
    case ZNOAUTH:
    case ZNOCHILDRENFOREPHEMERALS: return true;
    default: return false;
    }
}

void zkl__lease_proof_locked(zkl_client *c, uint64_t epoch, int64_t sent_boot_ms, int rc)
{
    int64_t end;
    if (!server_answer(rc) || c->conn.sess->epoch != epoch || c->conn.sess->expired ||
        c->lease->lapsed)
        return;
    end = sent_boot_ms + timeout_ms(c) - zkl__lease_margin_ms(c) - ensemble_lag_ms(c);
    if (end > c->lease->end) {
        /* A proof is as good as a renewal sent when it was: the next
         * renewal is due one interval after it, so that a client whose own
         * requests keep proving the lease sends none (renew_at is on
         * zkl__now_ms, the proof's send time on zkl__boot_ms). */
        int64_t at = zkl__now_ms() - (zkl__boot_ms() - sent_boot_ms) + renew_interval_ms(c);
        c->lease->end = end;
        if (at > c->lease->renew_at)
            c->lease->renew_at = at;
    }
}

void zkl__lease_reset_locked(zkl_client *c)
{
    c->lease->end = 0;
    c->lease->lapsed = false;
    c->lease->lapse_due = false;
    c->lease->renew_at = 0;
}

void zkl__lease_users(zkl_client *c, int holds, int acquires)
{
    pthread_mutex_lock(&c->mu);
    /* a hold let go after its lease ran out, before the worker woke for it:
     * the lapse is still to be told and acted on */
    if (holds < 0 && c->lease->holds > 0 && !c->lease->lapsed && c->lease->end != 0 &&
        zkl__boot_ms() >= c->lease->end) {
        c->lease->lapse_due = true;
        zkl__worker_kick_locked(c);
    }
    c->lease->holds += holds;
    c->lease->acquires += acquires;
    /* renewals may be due from now on: the worker is told unless it wakes
     * before the next is due anyway (a client that acquires and releases in
     * turn would wake it twice a hold for nothing) */
    if ((holds > 0 || acquires > 0) && zkl__worker_sleeps_past_locked(c, c->lease->renew_at * 1000))
        zkl__worker_kick_locked(c);
    pthread_mutex_unlock(&c->mu);
}

/* Caller holds c->mu. */
static bool lease_good_locked(const zkl_client *c, int64_t now_boot)
{
    return !c->lease->lapsed && c->lease->end > now_boot;
}

bool zkl__hold_alive(zkl_client *c, uint64_t epoch)
{
    bool alive;
    int64_t now = zkl__boot_ms();
    pthread_mutex_lock(&c->mu);
    alive = c->conn.sess->epoch == epoch && !c->conn.sess->expired && lease_good_locked(c, now);
    pthread_mutex_unlock(&c->mu);
    return alive;
}

int64_t zkl__lease_end(zkl_client *c, uint64_t epoch)
{
    int64_t end = 0, now = zkl__boot_ms();
    pthread_mutex_lock(&c->mu);
    if (c->conn.sess->epoch == epoch && !c->conn.sess->expired && lease_good_locked(c, now))
        end = c->lease->end;
    pthread_mutex_unlock(&c->mu);
    return end;
}

zkl_status zkl__lease_remaining(zkl_client *c, uint64_t epoch, const char *what, int64_t *ms)
{
    int64_t end = zkl__lease_end(c, epoch), left = end - zkl__boot_ms();
    if (!end || left <= 0)
        return zkl__fail(ZKL_ELOST, "%s: the hold's lease ran out or its session ended", what);
    *ms = left;
    return ZKL_OK;
}

/* Session epoch is current and its lease has a renewal interval left: what
 * a grant needs without a sync. Caller holds c->mu. */
static bool fresh_locked(const zkl_client *c, uint64_t epoch)
{
    return c->conn.sess->epoch == epoch && !c->lease->lapsed &&
           c->lease->end > zkl__boot_ms() + renew_interval_ms(c);
}

bool zkl__lease_fresh(zkl_client *c, uint64_t epoch)
{
    bool fresh;
    pthread_mutex_lock(&c->mu);
    fresh = !c->conn.sess->expired && fresh_locked(c, epoch);
    pthread_mutex_unlock(&c->mu);
    return fresh;
}

int zkl__lease_check(zkl_client *c, zkl__session *s)
{
    int rc;
    pthread_mutex_lock(&c->mu);
    rc = fresh_locked(c, s->epoch) ? ZOK : ZNOTHING;
    pthread_mutex_unlock(&c->mu);
    if (rc != ZOK)
        count_sync(c); /* the caller sends the sync */
    return rc;
}

int zkl__lease_after_sync(zkl_client *c, zkl__session *s)
{
    int rc;
    pthread_mutex_lock(&c->mu);
    rc = s->epoch == c->conn.sess->epoch && lease_good_locked(c, zkl__boot_ms()) ? ZOK
                                                                                 : ZCONNECTIONLOSS;
    pthread_mutex_unlock(&c->mu);
    return rc;
}

/* One renewal in flight. */
typedef struct renewal {
    zkl_client *c;
    uint64_t epoch;
    int64_t sent;
} renewal;

static void renewed(int rc, const char *value, const void *data)
{
    renewal *r = (renewal *)data;
    zkl_client *c;
    (void)value;
    ZKL_RECEIVED(r);
    c = r->c;
    pthread_mutex_lock(&c->mu);
    zkl__lease_proof_locked(c, r->epoch, r->sent, rc);
    c->lease->renewing = false;
    pthread_mutex_unlock(&c->mu);
    free(r);
}

/* Send a renewal if one is due; 0 if sent, else when to look again (now_ms based). */
static int64_t renew_locked(zkl_client *c, int64_t now)
{
    zkl__session *s = c->conn.sess;
    renewal *r;
    int rc;
    if (c->lease->holds <= 0 && c->lease->acquires <= 0)
        return INT64_MAX; /* nothing held or wanted: no traffic */
    if (s->expired || !c->conn.connected || c->lease->lapsed)
        return INT64_MAX; /* a state change wakes the worker */
    if (c->lease->renew_at > now)
        return c->lease->renew_at;
    if (c->lease->renewing)
        return now + ZKL_LEASE_RETRY_MS; /* still in flight */
    r = malloc(sizeof *r);
    c->lease->renew_at = now + (r ? renew_interval_ms(c) : ZKL_LEASE_RETRY_MS);
    if (!r)
        return c->lease->renew_at;
    r->c = c;
    r->epoch = s->epoch;
    r->sent = zkl__boot_ms();
    c->lease->renewing = true;
    s->refs++;
    pthread_mutex_unlock(&c->mu);
    ZKL_PUBLISH(r);
    count_sync(c);
    rc = zkl__zk_send_sync(s, renewed, r);
    zkl__session_put(s);
    pthread_mutex_lock(&c->mu);
    if (rc != ZOK) {
        c->lease->renewing = false;
        c->lease->renew_at = zkl__now_ms() + ZKL_LEASE_RETRY_MS; /* not sent: try again soon */
        free(r);
    }
    return 0;
}

/* The current session's lease ran out while holds exist, not yet acted on;
 * marks it acted on. Caller holds c->mu. */
static bool lapsed_locked(zkl_client *c)
{
    bool due = c->lease->lapse_due;
    c->lease->lapse_due = false;
    if ((c->lease->holds <= 0 && !due) || c->lease->lapsed || c->lease->end == 0 ||
        c->conn.sess->expired)
        return false;
    if (zkl__boot_ms() < c->lease->end)
        return false;
    c->lease->lapsed = true;
    return true;
}

int64_t zkl__lease_turn(zkl_client *c, int64_t now_us)
{
    int64_t now = now_us / 1000, wake = INT64_MAX, at;
    if (lapsed_locked(c)) {
        /* Strictly before the server could expire the session; is_held
         * already reads false. End the session: its nodes go as soon as the
         * server hears of it, and a hold whose lease ran out is never
         * silently given back. */
        zkl__log(ZKL_LOG_WARN, "the lease of this client's holds ran out: ending the session");
        zkl__session_lose_locked(c, ZKL_STATE_LEASE_EXPIRED);
        return 0;
    }
    if (c->lease->holds > 0 && c->lease->end > 0 && !c->lease->lapsed) {
        /* wake when it runs out, to tell the holders (is_held needs no worker) */
        at = now + (c->lease->end - zkl__boot_ms());
        wake = at > now ? at : now;
    }
    at = renew_locked(c, now);
    if (at == 0)
        return 0;
    if (at < wake)
        wake = at;
    return wake == INT64_MAX ? INT64_MAX : wake * 1000;
}

void zkl__lease_installed_locked(zkl_client *c)
{
    zkl__lease_reset_locked(c);
}

void zkl__lease_answered(zkl_client *c, uint64_t epoch, int64_t sent_boot_ms, int rc)
{
    pthread_mutex_lock(&c->mu);
    zkl__lease_proof_locked(c, epoch, sent_boot_ms, rc);
    pthread_mutex_unlock(&c->mu);
}
