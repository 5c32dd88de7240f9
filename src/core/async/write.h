/*
 * write.h - async guarded writes (zklock/guard.h), delivered as async
 * acquires' reports are (write.c has the design).
 */
#ifndef ZKL_CORE_ASYNC_WRITE_H
#define ZKL_CORE_ASYNC_WRITE_H

#include <stddef.h>

#include "core/engine/hold.h"
#include "zklock/guard.h"

/*
 * Send the guarded write of w[0..n) behind a check of each of
 * holds[0..nh) without waiting: ZKL_OK, and fn(ud) runs once with the
 * answer, in home's delivery mode; or the failure (zklock/guard.h's
 * statuses and *failed, never NULL here), and fn never runs. w stays the
 * caller's, and is written, until fn runs. fn_name names the public call.
 */
zkl_status zkl__guarded_write_async(zkl_client *home, const zkl__hold *holds, int nh, zkl_write *w,
                                    size_t n, zkl_write_fn fn, void *ud, size_t *failed,
                                    const char *fn_name);

#endif
