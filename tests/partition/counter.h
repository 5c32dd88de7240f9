/*
 * counter.h - the counter workload of the partition rounds (issue 39): a
 * counter node incremented under a mutex, through the same faults as the
 * exclusion rounds, to show what guarded writes prevent.
 *
 * Each increment is one transaction of two writes: the counter set to the
 * value read plus one (at any version: only the lock protects it), and a
 * persistent node PATH-incs/h- (the holder's) or w- (the waiter's) made beside it. The log's size
 * is then the number of increments that applied, whatever their callers were told; the counter
 * equals it exactly when no increment overwrote another.
 *
 * The holder ("counter": guarded writes; "naive": the same transaction as a
 * plain multi, on a ZooKeeper handle it opens again when its session
 * expired, as Curator's client does) reads, works for a while, and writes,
 * until it no longer holds the lock. The waiter, once granted, makes a few
 * guarded increments.
 */
#ifndef ZKL_PARTITION_COUNTER_H
#define ZKL_PARTITION_COUNTER_H

#include <stdbool.h>
#include <zookeeper/zookeeper.h>

#include "zklock/zklock.h"

/* What one round's counter says. */
typedef struct pc_result {
    long counter;       /* its value at the end */
    int applied;        /* increments applied: nodes in the log */
    int applied_holder; /* of which the holder's (its log entries are h-) */
    int holder_ok, holder_unknown, holder_refused; /* the holder's, as it was told */
    int waiter_ok;
} pc_result;

/* Make the round's counter (PATH-counter, "0") and its log (PATH-incs): 0 or -1. */
int pc_setup(zhandle_t *zh, const char *path);
/*
 * The holder process: acquire PATH on connect, print "HELD token", then
 * increment while held; print "COUNT ok unknown refused" and "STOP ms", and
 * exit. Never returns.
 */
void pc_holder_main(const char *connect, int session_ms, int lag_ms, const char *path, bool guard);
/* n guarded increments while m is held (zh: for reads); how many applied. */
int pc_increments(zkl_mutex *m, zhandle_t *zh, const char *path, int n);
/* Read the round's counter and log into r (the callers' counts are the caller's): 0 or -1. */
int pc_read(zhandle_t *zh, const char *path, pc_result *r);
/* Delete the round's counter and log. */
void pc_cleanup(zhandle_t *zh, const char *path);

#endif
