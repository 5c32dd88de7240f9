/*
 * path.h - lock path checks and small path helpers. A lock path is checked
 * once, when a lock object is made, so that nothing later sends a path the
 * server would reject.
 */
#ifndef ZKL_PATH_H
#define ZKL_PATH_H

#include <stddef.h>

#include "zklock/status.h"

#define ZKL_PATH_MAX 1024

/* ZKL_OK, or ZKL_EBADPATH / ZKL_EINVAL with a detail message saying why. */
zkl_status zkl__path_validate(const char *path);

/* "a" + "/" + "b" (malloc'd; NULL on no memory). a must not end in '/'. */
char *zkl__path_join(const char *a, const char *b);

/* Length of the parent part of an absolute path ("/a/b" -> 2, "/a" -> 0 meaning root). */
size_t zkl__path_parent_len(const char *path);

/* Pointer to the last component of an absolute path. */
const char *zkl__path_basename(const char *path);

#endif
