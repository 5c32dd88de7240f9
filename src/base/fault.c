/*
 * fault.c - see fault.h: the hook of test builds.
 */
#include "base/fault.h"

#ifdef ZKL_FAULTS
#include <stdatomic.h>

static _Atomic(zkl__fault_fn) hook;

void zkl__fault_set(zkl__fault_fn fn)
{
    atomic_store(&hook, fn);
}

int zkl__fault(struct zkl_client *c, zkl__fault_site site, void *io)
{
    zkl__fault_fn fn = atomic_load(&hook);
    if (!fn) /* no test asked: no fault, no point, every tunable as it is */
        return site >= ZKL__FAULT_HOLD_BACK_US ? -1 : 0;
    return fn(c, site, io);
}
#endif
