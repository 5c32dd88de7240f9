/*
 * worker.h - the client's worker thread: the one caller of the services'
 * phases (worker.c has the design).
 */
#ifndef ZKL_CLIENT_WORKER_H
#define ZKL_CLIENT_WORKER_H

#include "session/client.h"

/* Start c's worker; ZKL_ESYS with its message if the thread cannot start. */
zkl_status zkl__worker_start(zkl_client *c);
/* Tell the worker to stop (c->closing) and wait for it. Without c->mu. */
void zkl__worker_stop(zkl_client *c);

#endif
