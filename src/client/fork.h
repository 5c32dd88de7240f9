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
/*
 * In a child: keep reachable a block of the parent's that the child can
 * neither free nor use (a ZooKeeper handle, which cannot be closed here;
 * reports the parent's worker had not delivered). NULL: nothing.
 */
void zkl__fork_keep(void *block);
/*
 * Walk the open clients (the process's metrics): lock the registry, take
 * the first (then c->reg.next), unlock. A client closing meanwhile waits
 * for the unlock. Lock order: the registry, then a c->mu.
 */
void zkl__registry_lock(void);
zkl_client *zkl__registry_first(void);
void zkl__registry_unlock(void);
/* Name self name, unless another open client has that name (false then). Takes the locks. */
bool zkl__registry_name(zkl_client *self, char *name);

#endif
