/*
 * connstr.h - checks of a connect string ("host:port[,host:port...][/chroot]")
 * that libzookeeper_mt does not make. It wraps a port above 65535 into
 * another port and connects there; zkl_client_open refuses such a string
 * instead, with a message that names the entry.
 */
#ifndef ZKL_CONNSTR_H
#define ZKL_CONNSTR_H

#include "zklock/status.h"

/* ZKL_OK, or ZKL_EINVAL with a detail message. What it does not check is
 * left to zookeeper_init, which refuses a host without a port, for one. */
zkl_status zkl__connect_check(const char *connect);

#endif
