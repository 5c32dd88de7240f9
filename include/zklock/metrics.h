/*
 * metrics.h - lock metrics in the OpenMetrics text format, for Prometheus
 * and the like: what users of Curator and kazoo write for themselves.
 *
 * Per client: ZooKeeper requests by kind, watch events, sessions opened and
 * lost, deletes handed to the background (counted as they are queued). Per
 * lock object and side (labels path, side and id, the object's number on
 * its client): acquires granted and timed out, holds found lost at release
 * and those lost to the lease, local hand-offs (on the sides that can pass
 * a hold on: a mutex, a write side), and histograms of the wait for a grant
 * and of the hold, in seconds (with a UNIT line), with fixed buckets from
 * 1 ms to 10 s whose bounds are written canonically ("1.0", "10.0"). Every
 * counter and histogram series has its _created sample: when its client
 * was opened or its object made (Unix seconds). The text passes
 * python3-prometheus-client's strict OpenMetrics parser (test_metrics).
 *
 * Counting costs no ZooKeeper request and no lock: each object counts on
 * its own acquire and release paths with atomic adds. A reentrant acquire
 * counts as an acquisition with its (short) wait; a hold's time runs from
 * its grant to its last release. Async holds count as their object's.
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
 * larger one). Any thread; it takes the client's lock for the time of the
 * copy, and makes no ZooKeeper request.
 */
zkl_status zkl_client_metrics(zkl_client *c, char *buf, size_t len, size_t *needed);

#ifdef __cplusplus
}
#endif
#endif
