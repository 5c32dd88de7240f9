/*
 * inproc.h - the in-process room: what this process knows of one mutex's
 * line because other clients of the process wait in it too.
 *
 * It is the only place that knows other clients of the process exist. Every
 * answer is a hint the engine may use to skip a request, never a fact a
 * grant rests on alone, save one: a node noted granted here (seen) held
 * with nothing ahead of it, which the hand-off without a listing uses
 * (wait.c). A node not known here, for whatever reason (another process's,
 * pushed out, or the room turned off), costs the listing as before.
 *
 * One record per line: the lock path as the server sees it (the client's
 * chroot, then the path). Every lock object takes a reference when it is
 * made (the room on) and gives it back when it is freed (core/objects/lockobj.c), so that what
 * was noted outlives one acquire while the lock is in use; every acquire of
 * a mutex takes one with its start and gives it back when it is freed, after
 * letting go of its bell and await (zkl__inproc_drop). The last reference
 * frees the record and all it knew. So the record holds pointers only to
 * live acquires, and no scan of a live list is needed to find one.
 *
 * It is the room's inside: the engine reaches it only through the room's
 * three doors (room.h, room.c), which keep each acquire's share of it (its
 * reference, bell, await and create in flight) and read the off switch;
 * nothing else of src/ names these functions (scripts/layers checks it).
 * The unit test (tests/unit/test_inproc.c) drives them directly.
 *
 * Off switch: with the client's in-process hints off
 * (zkl_client_set_process_hints, or ZKL_PROCESS_HINTS=off in the
 * environment at open), room.c takes no record (NULL) for an acquire or a
 * lock object. Every function takes NULL and answers "not known" (0,
 * false, -1) or does nothing.
 *
 * Bells and awaits: fn(c, waiter) is called once, under the record's mutex
 * (fn takes c->mu: the lock order is a record's mutex, then a client's; no
 * caller holds a c->mu). The waiter is alive when it rings: it drops its
 * bell and await before it is freed, under the same mutex.
 */
#ifndef ZKL_CORE_INPROC_H
#define ZKL_CORE_INPROC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct zkl__inproc zkl__inproc;
typedef void (*zkl__bell_fn)(void *c, void *waiter);

/*
 * The room's parts, each a heuristic the engine may use or not: all on by
 * default; in test builds the HINTS tunable (base/fault.h) answers which are
 * on, so that tests and lockbench_tuned can measure each one alone
 * (benchmarks/README.md, "Each heuristic, on and off"). The public switch
 * turns them all off at once.
 */
enum {
    ZKL__HINT_SEEN = 1u << 0, /* a grant noted here lets its going hand over without a listing */
    ZKL__HINT_MADE =
        1u << 1, /* nodes made here: a create without the listing, the node ahead known */
    ZKL__HINT_JOIN = 1u << 2, /* the join await: a joiner awaits the note of the node ahead */
    ZKL__HINT_BELL = 1u << 3, /* our own node's watch left to a bell behind a node made here */
    ZKL__HINTS_ALL = (1u << 4) - 1,
};

/* The record of line path under chroot (NULL: none), with a reference; NULL: no memory. */
zkl__inproc *zkl__inproc_get(const char *chroot, const char *path);
/* Give back a reference (NULL: nothing); the last frees the record. */
void zkl__inproc_put(zkl__inproc *p);

/*
 * A lock object on p's line was made (delta 1) or freed (-1), after its
 * get and before its put (core/objects/lockobj.c).
 */
void zkl__inproc_object(zkl__inproc *p, int delta);
/* How many nodes p has noted made (tests). */
size_t zkl__inproc_noted(zkl__inproc *p);

/*
 * Node name (sequence seq), made by session owner, is about to wait: noted,
 * and the joiner awaiting its note (await) told, if the process has more
 * than one lock object on the line. (Only another session asks for a note;
 * an object is one client's, which has one session at a time. A process of
 * one session, as across processes, had noted every node, at a cost and
 * with no reader: docs/design/scale-log.md, 2026-11-28.) made_by: the owner session
 * of node name (sequence seq) if noted, else 0. made_at: the owner of the
 * node noted with sequence seq (its name copied into name, cap bytes), else
 * 0. others_joined: the last node noted made is another session's than
 * self's, so that a new node of self will likely land right behind one of
 * this process, and its create may go without the listing.
 */
void zkl__inproc_made(zkl__inproc *p, const char *name, int32_t seq, int64_t owner);
int64_t zkl__inproc_made_by(zkl__inproc *p, const char *name, int32_t seq);
int64_t zkl__inproc_made_at(zkl__inproc *p, int32_t seq, char *name, size_t cap);
bool zkl__inproc_others_joined(zkl__inproc *p, int64_t self);

/*
 * Node name (sequence seq) of session owner was granted, at the head of its
 * line: noted, and the bells of the two nodes just behind it (seq + 1, + 2)
 * rung. seen: whether node name of owner was noted granted (and not yet
 * pushed out: the last ZKL_INPROC_GRANTS grants are kept).
 */
void zkl__inproc_granted(zkl__inproc *p, const char *name, int32_t seq, int64_t owner);
bool zkl__inproc_seen(zkl__inproc *p, const char *name, int64_t owner);

/*
 * The bell of node name (sequence seq, noted made): fn(c, waiter) is called
 * once, when the lock is granted to node seq - 2 or seq - 1, or one of those
 * leaves without holding (left). false: not set (node not noted, or seq - 1
 * or seq - 2 holds already): watch now.
 */
bool zkl__inproc_bell(zkl__inproc *p, const char *name, int32_t seq, zkl__bell_fn fn, void *c,
                      void *waiter);
void zkl__inproc_left(zkl__inproc *p, int32_t seq);

/*
 * The joiner's await (wait.c, "the note awaited"). create_sent: a create of
 * this process is in flight (true: counted; the caller calls create_done
 * once, when its node is noted made or the create ends without one).
 * await: fn(c, waiter) is called once when node seq is noted made or no
 * create is in flight any more; false: not set (nothing in flight, seq
 * noted already, or another waiter awaits it): list now. unawait: waiter
 * no longer awaits node seq.
 */
bool zkl__inproc_create_sent(zkl__inproc *p);
void zkl__inproc_create_done(zkl__inproc *p);
bool zkl__inproc_await(zkl__inproc *p, int32_t seq, zkl__bell_fn fn, void *c, void *waiter);
void zkl__inproc_unawait(zkl__inproc *p, int32_t seq, const void *waiter);

/* waiter is about to be freed: its bell at node seq (-1: none) is let go of (its
 * await, with unawait). */
void zkl__inproc_drop(zkl__inproc *p, int32_t seq, const void *waiter);

/* How many records live (tests: every line's record goes with its last acquire). */
size_t zkl__inproc_count(void);

#endif
