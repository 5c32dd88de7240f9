/*
 * room.c - the engine's three doors into the in-process room (room.h):
 * what an acquire's steps ask and tell, turned into the record's terms
 * (inproc.h), with the acquire's share of it (its record, its bell, its
 * await, its create in flight) kept here and nowhere else.
 *
 * DESIGN: an acquire's share of the room lives in its zkl__acq (inproc,
 * bell_seq, await_seq, ZKL__AF_IN_FLIGHT and ZKL__AF_AWAITING), read and
 * written only by the thread that runs its steps, through these doors. The
 * record's mutex guards what the record knows; a bell or an await rings
 * under it and takes the waiter's c->mu (rung), never the reverse.
 */
#include "core/engine/room.h"

#include "base/fault.h"
#include "core/engine/acq.h"
#include "core/engine/inproc.h"
#include "services/chroot.h"

/* Whether aq may use part (ZKL__HINT_*) of the room: seated (the client's
 * hints on), and the part not turned off (tests, the HINTS tunable). */
static bool part_on(const zkl__acq *aq, unsigned part)
{
    return aq->inproc != NULL && ((unsigned)ZKL_TUNE(aq->c, HINTS, ZKL__HINTS_ALL) & part) != 0;
}

/*
 * A bell (noted: an await) rang for aq arg of client: its flag set, aq
 * ready. aq is alive: it lets go of its bell and await (ZKL__NOTE_UNSEATED)
 * before it is freed, under the record's mutex this runs under.
 */
static void rung(void *client, void *arg, bool noted)
{
    zkl_client *c = client;
    zkl__acq *aq = arg;
    pthread_mutex_lock(&c->mu);
    if (!ZKL_FAULT(c, DEAF_BELLS, NULL)) {
        if (noted)
            aq->mu_flags |= ZKL__AM_NOTED;
        else
            aq->mu_flags |= ZKL__AM_BELL;
        zkl__acq_ready_locked(aq);
    }
    pthread_mutex_unlock(&c->mu);
}

static void bell_rung(void *client, void *arg)
{
    rung(client, arg, false);
}

static void note_rung(void *client, void *arg)
{
    rung(client, arg, true);
}

/* The sequence of aq's own node, -1 if it has none. */
static int32_t my_seq(const zkl__acq *aq)
{
    return aq->name ? zkl__acq_seq(aq, aq->name) : -1;
}

/* The bell of aq's own node (seq): a bell of an earlier place let go of first. */
static bool bell(zkl__acq *aq)
{
    int32_t seq = my_seq(aq);
    if (seq <= 0 || !part_on(aq, ZKL__HINT_BELL))
        return false;
    if (aq->bell_seq >= 0 && aq->bell_seq != seq)
        zkl__inproc_drop(aq->inproc, aq->bell_seq, aq); /* a node of an earlier place */
    if (!zkl__inproc_bell(aq->inproc, aq->name, seq, bell_rung, aq->c, aq))
        return false;
    aq->bell_seq = seq;
    return true;
}

/* The note of the node just ahead awaited (ZKL__AF_AWAITING, await_seq). */
static bool await(zkl__acq *aq)
{
    int32_t seq = my_seq(aq);
    if (seq <= 0 || !part_on(aq, ZKL__HINT_JOIN))
        return false;
    pthread_mutex_lock(&aq->c->mu);
    aq->mu_flags &= ~ZKL__AM_NOTED;
    pthread_mutex_unlock(&aq->c->mu);
    if (!zkl__inproc_await(aq->inproc, seq - 1, note_rung, aq->c, aq))
        return false;
    aq->flags |= ZKL__AF_AWAITING;
    aq->await_seq = seq - 1;
    return true;
}

/* The node just ahead of ours, if made here by another session: its owner, its name in out. */
static int64_t ahead(zkl__acq *aq, char *out, size_t cap)
{
    int32_t seq = my_seq(aq);
    int64_t by;
    if (seq <= 0 || !part_on(aq, ZKL__HINT_MADE))
        return 0;
    by = zkl__inproc_made_at(aq->inproc, seq - 1, out, cap);
    if (by == 0 || by == zkl__session_id(aq->s) || zkl__acq_seq(aq, out) != seq - 1)
        return 0;
    return by;
}

int64_t zkl__room_ask(zkl__room_ask_kind kind, zkl__acq *aq, const char *name, char *out,
                      size_t cap)
{
    switch (kind) {
    case ZKL__ASK_JOIN:
        return part_on(aq, ZKL__HINT_MADE) &&
               zkl__inproc_others_joined(aq->inproc, zkl__session_id(aq->s));
    case ZKL__ASK_MADE_BY:
        return part_on(aq, ZKL__HINT_MADE)
                   ? zkl__inproc_made_by(aq->inproc, name, zkl__acq_seq(aq, name))
                   : 0;
    case ZKL__ASK_AHEAD: return ahead(aq, out, cap);
    case ZKL__ASK_AWAIT: return await(aq);
    case ZKL__ASK_BELL: return bell(aq);
    case ZKL__ASK_OWN_FD: return zkl__process_hints(aq->c) && zkl__many_clients();
    }
    return 0;
}

bool zkl__room_seen(const zkl__acq *aq, const char *name, int64_t owner)
{
    return part_on(aq, ZKL__HINT_SEEN) && zkl__inproc_seen(aq->inproc, name, owner);
}

/* Our create no longer counts in flight; idempotent. */
static void flight_end(zkl__acq *aq)
{
    if (zkl__has(aq->flags, ZKL__AF_IN_FLIGHT))
        zkl__inproc_create_done(aq->inproc);
    aq->flags &= ~ZKL__AF_IN_FLIGHT;
}

/* aq no longer awaits a note; idempotent. */
static void unawait(zkl__acq *aq)
{
    if (zkl__has(aq->flags, ZKL__AF_AWAITING))
        zkl__inproc_unawait(aq->inproc, aq->await_seq, aq);
    aq->flags &= ~ZKL__AF_AWAITING;
}

/* aq takes no part any more: nothing of the record may point at it once it is freed. */
static void unseat(zkl__acq *aq)
{
    unawait(aq);
    flight_end(aq);
    zkl__inproc_drop(aq->inproc, aq->bell_seq, aq);
    aq->bell_seq = -1;
    zkl__inproc_put(aq->inproc);
    aq->inproc = NULL;
}

/* A lock object made (delta 1) or freed (-1) on its line; seated only with the room on. */
static void object(const zkl__room_obj *o, int delta)
{
    if (delta > 0) {
        *o->rec = zkl__process_hints(o->c)
                      ? zkl__inproc_get(zkl__chroot_of(o->c->cfg.connect), o->path)
                      : NULL; /* NULL without memory too: only hints are lost */
        zkl__inproc_object(*o->rec, 1);
        return;
    }
    zkl__inproc_object(*o->rec, -1);
    zkl__inproc_put(*o->rec);
    *o->rec = NULL;
}

void zkl__room_note(zkl__room_note_kind kind, zkl__acq *aq, const zkl__room_obj *obj)
{
    switch (kind) {
    case ZKL__NOTE_SEATED:
        aq->bell_seq = -1;
        if ((aq->a.driver->facts & ZKL__D_HEAD_HOLDS) && zkl__process_hints(aq->c))
            aq->inproc =
                zkl__inproc_get(zkl__chroot_of(aq->c->cfg.connect),
                                aq->a.path); /* NULL without memory: hints are only hints */
        break;
    case ZKL__NOTE_SENT:
        if (!zkl__has(aq->flags, ZKL__AF_IN_FLIGHT))
            zkl__acq_flag(&aq->flags, ZKL__AF_IN_FLIGHT, zkl__inproc_create_sent(aq->inproc));
        break;
    case ZKL__NOTE_MADE:
        if (part_on(aq, ZKL__HINT_MADE))
            zkl__inproc_made(aq->inproc, aq->name, my_seq(aq), zkl__session_id(aq->s));
        flight_end(aq); /* noted: joiners behind it may go on */
        break;
    case ZKL__NOTE_UNAWAITED: unawait(aq); break;
    case ZKL__NOTE_GRANTED:
        zkl__inproc_granted(aq->inproc, aq->name, my_seq(aq), zkl__session_id(aq->s));
        break;
    case ZKL__NOTE_LEFT:
        if (aq->node && aq->name) /* a node of ours leaves the line without holding */
            zkl__inproc_left(aq->inproc, my_seq(aq));
        flight_end(aq);
        unawait(aq);
        break;
    case ZKL__NOTE_UNSEATED: unseat(aq); break;
    case ZKL__NOTE_OBJECT: object(obj, 1); break;
    case ZKL__NOTE_OBJECT_GONE: object(obj, -1); break;
    }
}
