/*
 * acl.c - see acl.h.
 */
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "client/acl.h"

void zkl__acl_free(struct ACL_vector *v)
{
    int i;
    for (i = 0; i < v->count; i++) {
        free(v->data[i].id.scheme);
        free(v->data[i].id.id);
    }
    free(v->data);
    v->data = NULL;
    v->count = 0;
}

zkl_status zkl__acl_copy(struct ACL_vector *to, const zkl_acl *from, size_t n)
{
    size_t i;
    memset(to, 0, sizeof *to);
    if (n == 0)
        return ZKL_OK;
    if (!from || n > 1000)
        return zkl__fail(ZKL_EINVAL, "zkl_client_open: acl is NULL or too long");
    for (i = 0; i < n; i++)
        if (!from[i].scheme || !from[i].id || from[i].perms <= 0 || from[i].perms > ZKL_PERM_ALL)
            return zkl__fail(ZKL_EINVAL,
                             "zkl_client_open: acl entry %zu needs a scheme, an id "
                             "and perms of 1..ZKL_PERM_ALL",
                             i);
    to->data = calloc(n, sizeof *to->data);
    if (!to->data)
        return zkl__fail(ZKL_ENOMEM, "out of memory");
    for (i = 0; i < n; i++) {
        to->data[i].perms = from[i].perms;
        to->data[i].id.scheme = strdup(from[i].scheme);
        to->data[i].id.id = strdup(from[i].id);
        to->count = (int32_t)(i + 1);
        if (!to->data[i].id.scheme || !to->data[i].id.id) {
            zkl__acl_free(to);
            return zkl__fail(ZKL_ENOMEM, "out of memory");
        }
    }
    return ZKL_OK;
}
