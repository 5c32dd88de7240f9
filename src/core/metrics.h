/*
 * metrics.h - the OpenMetrics text of a client and its lock objects
 * (zkl_client_metrics): the client's counters, and each object's
 * (stats.h).
 *
 * DESIGN
 *
 * The text is written under c->mu, which guards the client's list of lock
 * objects (lockobj.h); the counters are read as they are, so a sample may be
 * a few adds behind another of the same moment. Counting itself takes no
 * lock (stats.h).
 */
#ifndef ZKL_CORE_METRICS_H
#define ZKL_CORE_METRICS_H

#include <stddef.h>

#include "session/client.h"

/* The OpenMetrics text of c (zkl_client_metrics). */
zkl_status zkl__metrics_write(zkl_client *c, char *buf, size_t len, size_t *needed);

#endif
