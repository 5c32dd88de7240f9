/*
 * report.h - what the client's delivery carries (zklock/async.h: on the
 * worker, or behind the event descriptor for zkl_client_dispatch).
 */
#ifndef ZKL_CORE_REPORT_H
#define ZKL_CORE_REPORT_H

#include "core/engine/acq.h"
#include "session/client.h"

/*
 * Post report r of client c from a thread that is not c's worker, with no
 * lock held: it is delivered in c's mode (queued for zkl_client_dispatch
 * behind the event descriptor, or run by the worker's engine phase).
 */
void zkl__report_post(zkl_client *c, zkl__report *r);
/* The same on c's worker: run now, or queued for zkl_client_dispatch. */
void zkl__report_from_worker(zkl_client *c, zkl__report *r);
/* Whether c's reports wait for zkl_client_dispatch (after zkl_client_event_fd). */
bool zkl__reports_by_dispatch(zkl_client *c);
/* The reports queued for zkl_client_dispatch, taken (a list by next; NULL: none). */
zkl__report *zkl__reports_take(zkl_client *c);

#endif
