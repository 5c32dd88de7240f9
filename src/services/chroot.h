/*
 * chroot.h - the connect string's chroot, made on first use (see chroot.c).
 */
#ifndef ZKL_CHROOT_H
#define ZKL_CHROOT_H

#include <stdint.h>

#include "session/client.h"

/* The chroot of a connect string ("/app" of "h:1/app"), or NULL if none. */
const char *zkl__chroot_of(const char *connect);

/*
 * Create c's chroot and its missing ancestors as persistent nodes with c's
 * ACL, through a handle without the chroot (connected by deadline, at most a
 * connect timeout). ZKL_OK if it exists afterwards, else a status whose
 * message names the chroot.
 */
zkl_status zkl__chroot_make(struct zkl_client *c, int64_t deadline);

#endif
