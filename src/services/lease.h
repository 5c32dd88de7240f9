/*
 * lease.h - every hold has a lease (issue 18): a bound, on a clock that keeps
 * counting across a suspend (CLOCK_BOOTTIME), before which the server cannot
 * have expired the session. A request sent at s whose reply came back from
 * the server proves the session alive until s + T on the server's side (T
 * the negotiated timeout): ZooKeeper expires a session no sooner than T after
 * the last packet it received from it. The lease end is the latest such
 * bound less a margin (clock-rate drift, the time to stop). While any hold
 * or acquire exists the worker renews it with a sync every T/3; when it runs
 * out with holds, they read as not held at once (is_held looks at the clock
 * itself) and the worker tells the hold-state callbacks ZKL_STATE_LEASE_EXPIRED
 * and ends the session, so that its nodes go when the server hears of it.
 * docs/lease.md has the argument, the ensemble's part and the assumptions.
 *
 * Threading: every field is under c->mu. Proofs are recorded by a
 * ZooKeeper delivery, in passing (record and signal only); renewals are sent
 * and lapses acted on by the worker.
 */
#ifndef ZKL_SERVICES_LEASE_H
#define ZKL_SERVICES_LEASE_H

#include <stdbool.h>
#include <stdint.h>

#include "session/client.h"

/* Give c its lease state (c->lease); ZKL_ENOMEM. Free tolerates none. */
zkl_status zkl__lease_init(struct zkl_client *c);
void zkl__lease_free(struct zkl_client *c);

/* The margin in use for c: the option, or T/10 + 200 ms (at most T/4) for granted timeout T. */
int64_t zkl__lease_margin_ms(const struct zkl_client *c);

/*
 * A request of session epoch sent at sent_boot_ms (zkl__boot_ms) came back
 * with rc from the server: a proof if rc is a server's answer. Caller holds
 * c->mu.
 */
void zkl__lease_proof_locked(struct zkl_client *c, uint64_t epoch, int64_t sent_boot_ms, int rc);

/* The session changed (caller holds c->mu): the new one has no lease yet. */
void zkl__lease_reset_locked(struct zkl_client *c);

/* Holds and acquires that need the lease renewed (+1 / -1). */
void zkl__lease_users(struct zkl_client *c, int holds, int acquires);

/* Whether a hold of epoch is still good: its session lives and its lease has not run out. */
bool zkl__hold_alive(struct zkl_client *c, uint64_t epoch);

/*
 * The time left on a hold of epoch's lease, in ms (>= 0), or ZKL_ELOST
 * naming what (the hold's session ended or its lease ran out).
 */
zkl_status zkl__lease_remaining(struct zkl_client *c, uint64_t epoch, const char *what,
                                int64_t *ms);

/* The lease end of epoch (zkl__boot_ms), or 0 if it has none or ran out. */
int64_t zkl__lease_end(struct zkl_client *c, uint64_t epoch);

/*
 * Whether a hold of session epoch may be handed on without asking the
 * server: the session is current and alive, and its lease has at least a
 * renewal interval left (what a grant needs without a sync). Takes c->mu.
 */
bool zkl__lease_fresh(struct zkl_client *c, uint64_t epoch);

/*
 * Before a grant, session s must have at least a renewal interval (T/3) of
 * lease left. zkl__lease_check: ZOK if it has, else ZNOTHING, and the caller
 * sends a sync (its answer is recorded as a proof) and then asks
 * zkl__lease_after_sync: ZOK if the lease is good now, else ZCONNECTIONLOSS.
 */
int zkl__lease_check(struct zkl_client *c, zkl__session *s);
int zkl__lease_after_sync(struct zkl_client *c, zkl__session *s);

/*
 * The worker's lease phase (caller holds c->mu; released while sending): a
 * lease run out with holds ends the session (LEASE_EXPIRED, then LOST); a
 * renewal due is sent. Returns 0 if it did something, else the zkl__now_us()
 * time it wants to run again (INT64_MAX: none).
 */
int64_t zkl__lease_turn(struct zkl_client *c, int64_t now_us);

/* Hooks (session/client.h): a new session has proved nothing yet; a
 * leader-routed answer is a proof. */
void zkl__lease_installed_locked(struct zkl_client *c);
void zkl__lease_answered(struct zkl_client *c, uint64_t epoch, int64_t sent_boot_ms, int rc);

#endif
