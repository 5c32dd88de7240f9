/*
 * async.h - the core's async acquires (zklock/async.h): a recipe names the
 * side and the arguments, the core runs the rest.
 */
#ifndef ZKL_CORE_ASYNC_H
#define ZKL_CORE_ASYNC_H

#include "core/hold.h"
#include "core/reentrant.h"
#include "zklock/async.h"

/*
 * Start an async acquire of side sd (which must outlive the handle):
 * ZKL_OK with *out, or the failure of function what, with its message.
 */
zkl_status zkl__async_acquire(zkl__side *sd, int timeout_ms, zkl_op_fn fn, void *ud,
                              const char *what, zkl_op **out);

#endif
