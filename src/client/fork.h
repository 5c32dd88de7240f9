/*
 * fork.h - the registry of open clients, and what a fork()ed child makes of
 * them (fork.c has the design).
 */
#ifndef ZKL_CLIENT_FORK_H
#define ZKL_CLIENT_FORK_H

#include "session/client.h"

/* c is open (its worker running): a fork marks it forked in the child. Without c->mu. */
void zkl__fork_register(zkl_client *c);
/* c is closing: forks no longer see it. Without c->mu. */
void zkl__fork_unregister(zkl_client *c);
/* In a child: keep a parent's ZooKeeper handle, which cannot be closed here, reachable. */
void zkl__fork_keep(zhandle_t *zh);

#endif
