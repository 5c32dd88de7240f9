/*
 * st_shim.h - an asynchronous call on a handle the tests opened themselves
 * (zookeeper_init), made outside its completions: on the st transport the
 * handle's own thread drives it (st_shim.c), so the call is made inside
 * st_shim_enter/leave, under the handle's mutex. Completions and watchers
 * run there already. No-ops on mt.
 */
#ifndef ZKL_TESTS_ST_SHIM_H
#define ZKL_TESTS_ST_SHIM_H

#include <zookeeper/zookeeper.h>

#ifdef ZKL_TRANSPORT_ST
void st_shim_enter(zhandle_t *zh);
void st_shim_leave(zhandle_t *zh);
#else
static inline void st_shim_enter(zhandle_t *zh)
{
    (void)zh;
}
static inline void st_shim_leave(zhandle_t *zh)
{
    (void)zh;
}
#endif

#endif
