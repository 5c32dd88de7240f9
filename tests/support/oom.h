/*
 * oom.h - make the Nth allocation fail, for out-of-memory tests. oom.c
 * defines __wrap_malloc and its siblings; a program linked with
 * -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=strdup,--wrap=strndup
 * gets them for the calls made from its own objects and zklock's static
 * library (libzookeeper_mt's and libc's own calls are not redirected).
 * No Criterion here, so the zklock command can be built with it too.
 */
#ifndef ZKT_OOM_H
#define ZKT_OOM_H

/* Fail the nth allocation from now (1: the next; 0: none); returns the previous setting. */
long zkt_oom_arm(long nth);
/* Allocations counted since the last zkt_oom_reset, while armed. */
long zkt_oom_seen(void);
/* Whether the armed failure has happened since the last zkt_oom_reset. */
int zkt_oom_failed(void);
/* Zero the count and the failure flag. */
void zkt_oom_reset(void);

#endif
