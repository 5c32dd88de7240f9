/*
 * metrics.h - lock metrics in the OpenMetrics text format, for Prometheus
 * and the like: what users of Curator and kazoo write for themselves.
 *
 * Per client (label client: its name, zkl_client_set_name, or else its
 * number among the process's opens, 1, 2, ...): ZooKeeper requests by
 * kind, watch events, sessions opened and lost, deletes handed to the
 * background (counted as they are queued). Per lock path and side (labels
 * client, path and side: "mutex", "read", "write" or "semaphore"):
 * acquires granted and timed out, holds lost and those lost to the lease,
 * local hand-offs (on the sides that can pass a hold on: a mutex, a write
 * side), and histograms of the wait for a grant and of the hold, in
 * seconds (with a UNIT line), with fixed buckets from 1 ms to 10 s whose
 * bounds are written canonically ("1.0", "10.0"). An election's sides
 * ("latch", "selector": zklock/leader.h) have five more families:
 *  - zklock_leader_transitions_total, by label event: terms begun (GAINED)
 *    and ended (LOST, LEASE_ENDED, LEFT), counted as they happen, whether
 *    or not a callback is told;
 *  - zklock_leader_seconds_total: time as leader, the running term to the
 *    moment of the call;
 *  - zklock_leader_vacant_seconds_total: time with no leader as the next
 *    leader saw it, per term, from the notice that left its node first (the
 *    node before it deleted, or its first look at the election) to its
 *    grant. A leader that crashed, or whose lease ran out, keeps its node
 *    until the server expires its session: that time no participant sees,
 *    and the session timeout bounds it;
 *  - zklock_leader (gauge): 1 while a term runs on the client, else 0;
 *  - zklock_leader_token (gauge): that term's fencing token, else 0.
 * Every counter and
 * histogram series has its _created sample (Unix seconds): when its client
 * was opened, or its series made. The text passes python3-prometheus-
 * client's strict OpenMetrics parser (test_metrics).
 *
 * A series belongs to a client, a path and a side, not to a lock object:
 * every object of that path and side on the client counts into it, and it
 * outlives them, so its counters only grow, and a program that makes an
 * object per request adds to one series, not one per object. The series
 * of objects that are all gone are kept, up to 256 per client; past that
 * the one idle longest goes (if its path is used again its counters start
 * afresh, with a new _created). So a scrape holds the live objects' series
 * and at most 256 more per client.
 *
 * Counting costs no ZooKeeper request: each object counts on its own
 * acquire and release paths with atomic adds, and a new hold puts a small
 * tally on its client's list (under the client's mutex). A reentrant
 * acquire counts as an acquisition with its (short) wait. A hold's time
 * runs from its grant to its last release; a hold that is lost ends when
 * the loss is told (ZKL_STATE_LOST or ZKL_STATE_LEASE_EXPIRED, counted just
 * before the callbacks run), and is counted lost then, once, whether or
 * not the program ever releases it. Async holds count as their object's.
 */
#ifndef ZKLOCK_METRICS_H
#define ZKLOCK_METRICS_H

#include <stddef.h>

#include "client.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Write the metrics of c and of every lock object made on it (not yet
 * destroyed) into buf as OpenMetrics text ending in "# EOF\n", with a NUL
 * after it. *needed (may be NULL) is set to the text's length without the
 * NUL, whether or not it fit. Errors: ZKL_EINVAL (c or buf NULL), ZKL_ENOMEM
 * (len is not more than *needed: buf holds a cut text; call again with a
 * larger one, and leave some room: counters that gain a digit between the
 * two calls make the text longer). Any thread; it takes the client's lock for the time of the
 * copy, and makes no ZooKeeper request.
 */
zkl_status zkl_client_metrics(zkl_client *c, char *buf, size_t len, size_t *needed);

/*
 * The same for every client open in this process, in one text: what a
 * process serves on its /metrics, however many clients it has. Each
 * family's samples stand together, client by client. Errors: ZKL_EINVAL
 * (buf NULL), ZKL_ENOMEM (as above). Any thread; it takes each client's
 * lock in turn, and holds off zkl_client_open's last step and
 * zkl_client_close meanwhile.
 */
zkl_status zkl_process_metrics(char *buf, size_t len, size_t *needed);

#ifdef __cplusplus
}
#endif
#endif
