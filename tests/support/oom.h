/*
 * oom.h - make the Nth allocation fail, for out-of-memory tests. oom.c
 * defines __wrap_malloc and its siblings; a program linked with
 * -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=strdup,--wrap=strndup,
 * --wrap=mmap,--wrap=munmap gets them for the calls made from its own objects and zklock's static
 * library (libzookeeper_mt's and libc's own calls are not redirected).
 * Arm it with zkt_countdown_arm(&zkt_oom, n).
 */
#ifndef ZKT_OOM_H
#define ZKT_OOM_H

#include "countdown.h"

extern zkt_countdown zkt_oom;
/* Anonymous mappings made (and those not yet unmapped) through the wrappers. */
extern _Atomic long zkt_oom_maps_made, zkt_oom_maps_live;

#endif
