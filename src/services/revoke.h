/*
 * revoke.h - Curator's revocation protocol: a holder that is revocable keeps a
 * data watch on its own lock node; anyone may write the ten bytes
 * "__REVOKE__" into it; the holder's callback then runs on the client's
 * worker thread and decides whether to release.
 */
#ifndef ZKL_REVOKE_H
#define ZKL_REVOKE_H

#include <stdint.h>

#include "session/client.h"

#define ZKL_REVOKE_MARKER "__REVOKE__"

typedef void (*zkl__revoke_cb)(void *ctx);

/* Start watching node (a lock node of session epoch) for the marker. NULL on no memory. */
zkl__revwatch *zkl__revwatch_start(zkl_client *c, const char *node, uint64_t epoch,
                                   zkl__revoke_cb cb, void *ctx);
/* Stop; cb will not be called after this returns (unless it is running now on the worker). */
void zkl__revwatch_stop(zkl__revwatch *r);

#endif
