/*
 * sides.h - the core's sides of the recipes' lock objects, for the recipes
 * that compose them (the multilock's async acquire).
 */
#ifndef ZKL_RECIPES_SIDES_H
#define ZKL_RECIPES_SIDES_H

#include <stdbool.h>

#include "core/objects/reentrant.h"
#include "zklock/mutex.h"
#include "zklock/rwlock.h"
#include "zklock/semaphore.h"

zkl__side *zkl__mutex_side(zkl_mutex *m);
zkl__side *zkl__rwlock_side(zkl_rwlock *l, bool write);
/* A lease's hold (the lease's own). */
const zkl__hold *zkl__lease_hold(const zkl_lease *l);
/* A copy of m's hold (the caller frees h->node); ZKL_ENOTOWNER if m holds nothing. */
zkl_status zkl__semaphore_mutex_hold(zkl_semaphore_mutex *m, zkl__hold *h);

#endif
