/*
 * cleanup.h - guaranteed cleanup of lock nodes: deletes sent without waiting
 * (their failures queued), deletes held back a moment to ride with the next
 * request, and the background queue the worker works through until every
 * node is gone. The third of Curator's promises: no node is ever left.
 */
#ifndef ZKL_SERVICES_CLEANUP_H
#define ZKL_SERVICES_CLEANUP_H

#include <stdbool.h>
#include <stdint.h>

#include "session/client.h"
#include "base/tuning.h"

/* A release's delete held back a moment (zkl__hold_back_delete). */
typedef struct zkl__heldback {
    zkl__session *s; /* with a reference, until sent */
    int64_t due_us;  /* zkl__now_us() by which the worker sends it */
    struct zkl__heldback *next;
    char path[];
} zkl__heldback;

/* Give c its cleanup state (c->cleanup); ZKL_ENOMEM. Free tolerates none. */
zkl_status zkl__cleanup_init(zkl_client *c);
void zkl__cleanup_free(zkl_client *c);

/* Queue a delete for the worker: an exact path, or (prefix != NULL) every
 * child of path with that prefix. */
void zkl__bg_delete(zkl_client *c, const char *path, const char *prefix);
/* The same, for a caller that holds c->mu. */
void zkl__bg_delete_locked(zkl_client *c, const char *path, const char *prefix);

/*
 * Send a delete and return at once. If the server does not confirm it, the
 * node goes to the background queue. Counted until the reply, so that
 * zkl_client_drain can wait for it. Returns the send rc.
 */
int zkl__delete_async(zkl__session *s, const char *path);

/* Queue path's delete to go out with this client's next request on s, or
 * after window_us at the latest (the worker sends it then). */
void zkl__hold_back_delete(zkl__session *s, const char *path, int window_us);
/* Take this client's held-back deletes on session s (for a multi) into *into,
 * which is NULL and stays so if there are none. *into is set under c->mu, so
 * that the deletes are never on the caller's stack alone (client/fork.c). */
void zkl__take_held_back(zkl__session *s, zkl__heldback **into);
/* After a multi: the taken deletes on *list are done (applied) or must
 * still be sent. Each leaves *list, under c->mu, only as it is freed;
 * *list is NULL on return. */
void zkl__held_back_done(zkl_client *c, zkl__heldback **list, bool applied);
/* Send held-back deletes now: all, or (due_only) those whose time is up. Without c->mu. */
void zkl__flush_held_back(zkl_client *c, bool due_only);

/*
 * Wait until the deletes in flight are answered and (all) the background
 * queue is empty, or the deadline (zkl__now_ms). ZKL_ETIMEDOUT, with its
 * message, if not. Flushes held-back deletes first. Without c->mu.
 */
zkl_status zkl__cleanup_drain(zkl_client *c, int64_t deadline, bool all);
/* Deletes queued for the background so far (zkl_client_stats). Caller holds c->mu. */
uint64_t zkl__cleanup_queued_locked(const zkl_client *c);

/* Hooks (session/client.h): ride held-back deletes first; a closed session's
 * deletes in flight will get no reply. */
void zkl__cleanup_before_send(zkl_client *c);
void zkl__cleanup_closed_locked(zkl_client *c, zkl__session *s);

/*
 * The worker's phases (c->mu held; released while calling out): send
 * held-back deletes whose time is up; try the queue's next delete. Each
 * returns 0 if it did something, else the zkl__now_us() time it wants to
 * run again (INT64_MAX: none).
 */
int64_t zkl__held_back_turn(zkl_client *c, int64_t now_us);
int64_t zkl__bg_turn(zkl_client *c, int64_t now_us);

#endif
