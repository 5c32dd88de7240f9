/*
 * sendfail.h - make the Nth ZooKeeper request fail before it is sent, as
 * libzookeeper_mt does when it cannot queue one (out of memory: ZSYSTEMERROR).
 * sendfail.c defines __wrap_zoo_acreate2 and the other asynchronous calls
 * zklock makes; a program linked with ZKL_SENDFAIL_WRAP (tests/CMakeLists.txt)
 * gets them for the calls made from its own objects and zklock's static
 * library. Arm it with zkt_countdown_arm(&zkt_sendfail, n).
 */
#ifndef ZKT_SENDFAIL_H
#define ZKT_SENDFAIL_H

#include "countdown.h"

extern zkt_countdown zkt_sendfail;

#endif
