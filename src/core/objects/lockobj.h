/*
 * lockobj.h - what every lock object shares, in the manner of libuv's handle
 * base: its client, its path, and the wiring of its hold-state callback to
 * the client's connection events. A recipe embeds one and says, through
 * mine(), whether the object holds anything in a given session.
 */
#ifndef ZKL_CORE_LOCKOBJ_H
#define ZKL_CORE_LOCKOBJ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/objects/series.h"
#include "core/objects/stats.h"
#include "session/client.h"
#include "zklock/revoke.h"

/* The first member of every lock object (as libuv's handles share uv_handle_t). */
typedef struct zkl__lockobj {
    zkl_client *c;
    char *path; /* the object's own copy */
    /* a reference on what this process knows of the line (core/engine/room.h) */
    struct zkl__inproc *inproc;
    void *self; /* the public object (the lock object itself), handed to the callback */
    /* whether self holds anything in session epoch (called on the worker) */
    bool (*mine)(void *self, uint64_t epoch);
    zkl_hold_state_fn state_fn;
    void *state_ud;
    int listener;
    /* metrics (metrics.h): one part per side ("mutex", or "read" and "write"
     * ...), added by the recipe at creation (zkl__lockobj_add_part): the
     * series of its client, path and side that it counts into */
    struct zkl__series *part[2];
    int nparts;
    int inside;                       /* threads inside a call on it that may wait (under c->mu) */
    size_t size;                      /* of the whole object, which its sides and holds live in */
    struct zkl__lockobj *prev, *next; /* c->objs (utlist), under c->mu */
} zkl__lockobj;

/*
 * The one constructor of a lock object for function fn: checks out, the
 * client and the path (validated), then allocates size zeroed bytes whose
 * first member is the zkl__lockobj, copies the path and takes a reference
 * on the client. mine: as above. ZKL_OK with *obj the new object's base, or
 * the failure with its message and nothing to undo.
 */
zkl_status zkl__lockobj_new(size_t size, const char *fn, const void *out, zkl_client *c,
                            const char *path, bool (*mine)(void *self, uint64_t epoch),
                            zkl__lockobj **obj);
/*
 * Give o its next part, for side (a static string; traits: ZKL__PART_*, the
 * families the side has beyond the common ones), counting into its client's
 * series of o's path and side (series.h); *stats is where the part counts.
 * ZKL_ENOMEM, with nothing added. lockobj_free lets go of the parts.
 */
zkl_status zkl__lockobj_add_part(zkl__lockobj *o, const char *side, unsigned traits,
                                 zkl__lockstats **stats);
/*
 * No more calls into the object from the worker: its hold-state listener is
 * removed, after a call of it that is running ends. A recipe's destroy calls
 * this before it tears down anything the listener reads (its holders, its
 * mutex); zkl__lockobj_free does it too.
 */
void zkl__lockobj_detach(zkl__lockobj *o);
/* The one destructor: undoes new (and on_state) and frees the object. */
void zkl__lockobj_free(zkl__lockobj *o);
/*
 * A thread is inside a call on o that may wait (an acquire, a query of the
 * server), from enter to leave: the destroys refuse while any is
 * (zkl__lockobj_idle), so that no waiter reads a freed object.
 */
void zkl__lockobj_enter(zkl__lockobj *o);
void zkl__lockobj_leave(zkl__lockobj *o);
/* ZKL_OK if no thread is inside a call on o, else ZKL_EBUSY naming fn and how many. */
zkl_status zkl__lockobj_idle(zkl__lockobj *o, const char *fn);
/* Set, replace or (fn NULL) remove the hold-state callback. */
zkl_status zkl__lockobj_on_state(zkl__lockobj *o, zkl_hold_state_fn fn, void *userdata);

/* Check a timeout argument of function fn (>= 0, or ZKL_WAIT_FOREVER). */
zkl_status zkl__check_timeout(int timeout_ms, const char *fn);

#endif
