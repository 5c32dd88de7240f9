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

zkl__side *zkl__mutex_side(zkl_mutex *m);
zkl__side *zkl__rwlock_side(zkl_rwlock *l, bool write);

#endif
