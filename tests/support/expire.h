/*
 * expire.h - end a ZooKeeper session on the server from outside, for tests:
 * the "second handle" trick (open a handle on the session id and password,
 * close it), repeated until a fresh handle on that id is told the session
 * expired. Once is not enough: the owner reconnects within milliseconds and
 * takes its session back, and a close from the second handle then no longer
 * ends it. No Criterion here, so plain programs can use it too.
 */
#ifndef ZKT_EXPIRE_H
#define ZKT_EXPIRE_H

#include <zookeeper/zookeeper.h>

/* 0 once the session is confirmed expired, -1 if that could not be done. */
int zkt_expire_session(const char *servers, const clientid_t *cid);

#endif
