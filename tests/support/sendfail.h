/*
 * sendfail.h - make the Nth ZooKeeper request fail before it is sent, as
 * libzookeeper_mt does when it cannot queue one (out of memory: ZSYSTEMERROR).
 * sendfail.c defines __wrap_zkl__zkc_zoo_acreate2 and the other asynchronous
 * calls zklock makes on its private ZooKeeper client; a program linked with
 * ZKL_SENDFAIL_WRAP (tests/CMakeLists.txt) gets them for zklock's calls
 * only (the tests' own handles are libzookeeper_mt's). Arm it with zkt_countdown_arm(&zkt_sendfail,
 * n).
 */
#ifndef ZKT_SENDFAIL_H
#define ZKT_SENDFAIL_H

#include "countdown.h"

extern zkt_countdown zkt_sendfail;

#endif
