/*
 * countdown.h - "fail the Nth call from now", the counter behind the
 * link-time fault wrappers (oom.c: allocations; sendfail.c: ZooKeeper
 * requests). A test arms one, runs a scenario, and learns how many calls it
 * saw and whether the armed one came, SQLite's way of reaching every
 * failure branch: run again with N + 1 until a run needs no failure.
 * No Criterion here, so the zklock command can be built with it too.
 */
#ifndef ZKT_COUNTDOWN_H
#define ZKT_COUNTDOWN_H

#include <stdatomic.h>

typedef struct zkt_countdown {
    atomic_long left;  /* 0: off; otherwise the call to fail, counting down */
    atomic_long seen;  /* calls while armed */
    atomic_int failed; /* the armed failure happened */
} zkt_countdown;

/* Fail the nth call from now (1: the next; 0: none); returns the previous setting. */
long zkt_countdown_arm(zkt_countdown *d, long nth);
/* Calls counted since the last zkt_countdown_reset, while armed. */
long zkt_countdown_seen(zkt_countdown *d);
/* Whether the armed failure has happened since the last zkt_countdown_reset. */
int zkt_countdown_failed(zkt_countdown *d);
/* Zero the count and the failure flag. */
void zkt_countdown_reset(zkt_countdown *d);
/* Count one call; nonzero if this is the one to fail. */
int zkt_countdown_fire(zkt_countdown *d);

#endif
