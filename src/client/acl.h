/*
 * acl.h - the client's copy of the caller's ACL for every create.
 */
#ifndef ZKL_CLIENT_ACL_H
#define ZKL_CLIENT_ACL_H

#include <stddef.h>
#include <zookeeper/zookeeper.h>

#include "zklock/client.h"

/* Copy n entries (n 0: none, the open ACL); ZKL_EINVAL or ZKL_ENOMEM with a message. */
zkl_status zkl__acl_copy(struct ACL_vector *to, const zkl_acl *from, size_t n);
void zkl__acl_free(struct ACL_vector *v);

#endif
