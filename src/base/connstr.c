/*
 * connstr.c - the connect-string checks of connstr.h, made before the string
 * reaches zookeeper_init.
 */
#include <ctype.h>
#include <string.h>

#include "base/connstr.h"
#include "base/status.h"

/* A port as libzookeeper_mt reads it (digits after the last ':'), in range. */
static zkl_status check_entry(const char *e, size_t n)
{
    const char *colon = NULL, *p;
    long port = 0;
    for (p = e; p < e + n; p++)
        if (*p == ':')
            colon = p;
    if (!colon)
        return ZKL_OK; /* zookeeper_init refuses it, with its own reason */
    for (p = colon + 1; p < e + n && isdigit((unsigned char)*p); p++) {
        port = port * 10 + (*p - '0');
        if (port > 65535)
            return zkl__fail(ZKL_EINVAL,
                             "zkl_client_open: port of '%.*s' is above 65535 (the ZooKeeper "
                             "client would connect to another port)",
                             (int)(n > 200 ? 200 : n), e);
    }
    return ZKL_OK;
}

zkl_status zkl__connect_check(const char *connect)
{
    size_t hosts = strcspn(connect, "/"), i = 0;
    while (i < hosts) {
        size_t n = strcspn(connect + i, ",");
        zkl_status st;
        if (n > hosts - i)
            n = hosts - i;
        st = check_entry(connect + i, n);
        if (st != ZKL_OK)
            return st;
        i += n + 1;
    }
    return ZKL_OK;
}
