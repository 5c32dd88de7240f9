/*
 * writes.h - fixtures of the guarded-write tests (test_guarded,
 * test_guarded_async): a counter node, a write that sets it, and a scene's
 * end.
 */
#ifndef ZKT_WRITES_H
#define ZKT_WRITES_H

#include <zookeeper/zookeeper.h>

#include "zklock/guard.h"

/* The data of node path as a number (-1: no such node). */
long zkt_number_at(zhandle_t *zh, const char *path);
/* A fresh counter node at 0, data version 1, for path (path + "-counter"), its path malloc'd. */
char *zkt_counter_for(zhandle_t *zh, const char *path);
/* One write: set counter to value, at any version. */
zkl_write zkt_set_to(const char *counter, const char *value);
/* A test's end: its counter deleted, the raw handle closed, the strings freed. */
void zkt_scene_end(zhandle_t *zh, char *counter, char *path);

#endif
