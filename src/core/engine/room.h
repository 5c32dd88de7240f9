/*
 * room.h - the engine's three doors into the in-process room (inproc.h is
 * what is behind them): what this process knows of a mutex's line because
 * other clients of the process wait in it too.
 *
 * The engine asks the room at three points, and nowhere else:
 *   - zkl__room_ask, before a round (a create's start among them): may the
 *     create go without the listing, who made a node, which node is just
 *     ahead, await its note, leave our own node's watch to a bell;
 *   - zkl__room_seen, before a grant without a listing: did that node hold
 *     here;
 *   - zkl__room_note, when a note arrives: an acquire seated or gone, its
 *     create sent, its node made, granted or left, a lock object made or
 *     freed on the line.
 *
 * Every answer is a hint the engine may use to skip a request, never a
 * fact a grant rests on alone, save one: a node seen granted here, held
 * with nothing ahead of it (the hand-off without a listing, wait.c).
 *
 * Off switch: the room is the only code that reads it (the client's
 * in-process hints, zkl_client_set_process_hints or ZKL_PROCESS_HINTS=off
 * at open; and in test builds the HINTS tunable, which turns its parts on
 * one by one). Off, nothing registers: an acquire or lock object is not
 * seated, every ask answers "not known" (0), zkl__room_seen false, and a
 * note does nothing; the engine then behaves as it does across processes,
 * where the room is empty by nature.
 *
 * Threads: each door is called by the thread that runs the acquire's steps
 * (a lock object's: the thread that makes or frees it), holding no lock of
 * ours, but ZKL__ASK_OWN_FD, asked under c->mu, which takes none. A bell
 * or an await rings under the record's mutex and takes the waiter's c->mu
 * (the order: a record's mutex, then a client's), setting ZKL__AM_BELL or
 * ZKL__AM_NOTED and readying the acquire; it is alive then:
 * ZKL__NOTE_UNSEATED lets go of its bell and await, under the same mutex,
 * before the acquire is freed.
 */
#ifndef ZKL_CORE_ROOM_H
#define ZKL_CORE_ROOM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct zkl__acq;
struct zkl__inproc;
struct zkl_client;

/* What the engine asks before a round (zkl__room_ask); 0 is "not known" or "no". */
typedef enum zkl__room_ask_kind {
    /* A create about to go: 1 if it may go without the listing (the last
     * node noted made is another session's of the process: ours likely
     * lands right behind it, create.c). */
    ZKL__ASK_JOIN,
    /* The session of this process that made node name, 0 if none noted. */
    ZKL__ASK_MADE_BY,
    /* The session that made the node just ahead of ours (one sequence
     * below), its name copied into out (cap bytes); 0 if none noted. */
    ZKL__ASK_AHEAD,
    /* 1: the note of the node just ahead is awaited, while a create of
     * this process is in flight (ZKL__AM_NOTED when it comes, or when none
     * is in flight any more); 0: list now. */
    ZKL__ASK_AWAIT,
    /* 1: our node's watch is left to its bell, rung when the lock is
     * granted one or two places ahead (ZKL__AM_BELL); 0: watch now. */
    ZKL__ASK_BELL,
    /* A blocking acquire's first sleep in a round: 1 if it sleeps on a wake
     * fd of its own (a process of many clients, with the room on: engine.c
     * says what it costs and pays), not on its condition variable. */
    ZKL__ASK_OWN_FD,
} zkl__room_ask_kind;

/* What happened, told to the room (zkl__room_note). */
typedef enum zkl__room_note_kind {
    ZKL__NOTE_SEATED,    /* aq started: seated if its driver grants the head and the room is on */
    ZKL__NOTE_SENT,      /* aq's create went: in flight until its node is noted or the place left */
    ZKL__NOTE_MADE,      /* aq's node made, about to wait: noted, joiners awaiting it told */
    ZKL__NOTE_UNAWAITED, /* aq awaits no note any more (it knows, or lists) */
    ZKL__NOTE_GRANTED,   /* aq's node granted at the head: the bells behind it rung */
    ZKL__NOTE_LEFT,      /* aq let go of its place in line (its node's, if any, without holding) */
    ZKL__NOTE_UNSEATED,  /* aq takes no part any more (freed, or an observer): all let go of */
    ZKL__NOTE_OBJECT,    /* a lock object on the line was made (obj) */
    ZKL__NOTE_OBJECT_GONE, /* that lock object is being freed (obj) */
} zkl__room_note_kind;

/* A lock object's seat: its client, its path, and the record it holds (NULL: none). */
typedef struct zkl__room_obj {
    struct zkl_client *c;
    const char *path;
    struct zkl__inproc **rec;
} zkl__room_obj;

/* Door 1: before a round. name: ZKL__ASK_MADE_BY's node; out, cap: ZKL__ASK_AHEAD's. */
int64_t zkl__room_ask(zkl__room_ask_kind kind, struct zkl__acq *aq, const char *name, char *out,
                      size_t cap);
/* Door 2: before a grant without a listing: whether node name of session owner held here. */
bool zkl__room_seen(const struct zkl__acq *aq, const char *name, int64_t owner);
/* Door 3: a note, of acquire aq or (ZKL__NOTE_OBJECT*) of lock object obj. */
void zkl__room_note(zkl__room_note_kind kind, struct zkl__acq *aq, const zkl__room_obj *obj);

#endif
