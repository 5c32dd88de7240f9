/*
 * delivery.h - the types a session and its callbacks keep for the
 * transport (session/transport.h), with nothing else: what a callback
 * defers, and what an unfired watch owns.
 */
#ifndef ZKL_SESSION_DELIVERY_H
#define ZKL_SESSION_DELIVERY_H

#include <stdbool.h>
#include <stdint.h>

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
    struct zkl__delivery *next;
} zkl__delivery;

/*
 * A block that a watch registered on a session's handle owns (a watcher's
 * trampoline, requests/calls.c), which the handle drops unfired when it
 * closes: o is its first member, linked to the session (zkl__zk_owned_set, right
 * after the request is made, inside the same zkl__zk_enter) until the watch
 * fires (unlinked by the same, in the watcher); zkl__zk_close frees what is left.
 */
typedef struct zkl__zk_owned {
    struct zkl__zk_owned *prev, *next;
} zkl__zk_owned;

#endif
