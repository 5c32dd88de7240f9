/*
 * metrics.h - the OpenMetrics text of a client (zkl_client_metrics), or of
 * every open client of the process (zkl_process_metrics): each client's
 * counters, and its series (series.h: one per lock path and side).
 *
 * DESIGN
 *
 * A family's samples must stand together, so the text goes family by
 * family, and within each, client by client, each under its c->mu (which
 * guards its list of series). For the process, the registry of open
 * clients (client/fork.h) is locked throughout: lock order the registry,
 * then one c->mu at a time. The counters are read as they are, so a sample
 * may be a few adds behind another of the same moment. Counting itself
 * takes no lock (stats.h).
 */
#ifndef ZKL_CORE_METRICS_H
#define ZKL_CORE_METRICS_H

#include <stddef.h>

#include "session/client.h"

/* The OpenMetrics text of c (zkl_client_metrics). */
zkl_status zkl__metrics_write(zkl_client *c, char *buf, size_t len, size_t *needed);
/* The OpenMetrics text of every open client (zkl_process_metrics). */
zkl_status zkl__metrics_write_process(char *buf, size_t len, size_t *needed);

#endif
