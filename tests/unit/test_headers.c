/*
 * test_headers.c - a public header is enough on its own: the read/write lock's
 * header alone gives everything its calls take (ZKL_WAIT_FOREVER among them,
 * which once lived in the mutex's header only). No server.
 */
#include "zklock/rwlock.h"

#include <criterion/criterion.h>

Test(headers, rwlock_header_stands_alone)
{
    zkl_rwlock *l = NULL;
    cr_assert_eq(ZKL_WAIT_FOREVER, -1);
    cr_assert_eq(zkl_rwlock_read_acquire(l, ZKL_WAIT_FOREVER), ZKL_EINVAL, "a NULL lock");
}
