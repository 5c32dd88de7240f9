/*
 * servers.h - where the test server is, for the plain (non-Criterion) test
 * programs: ZKL_TEST_SERVERS, else the connect file in $ZKL_TEST_ZK_DIR.
 */
#ifndef ZKT_SERVERS_H
#define ZKT_SERVERS_H

#include <stddef.h>

/* Fill buf with the connect string; 0, or -1 with a message on stderr. */
int zkt_servers_plain(char *buf, size_t len);

#endif
