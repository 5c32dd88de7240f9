/*
 * servers.c - see servers.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "servers.h"

int zkt_servers_plain(char *buf, size_t len)
{
    const char *env = getenv("ZKL_TEST_SERVERS"), *dir = getenv("ZKL_TEST_ZK_DIR");
    char file[1100];
    FILE *f;
    if (env && *env) {
        snprintf(buf, len, "%s", env);
        return 0;
    }
    if (!dir) {
        fprintf(stderr, "set ZKL_TEST_SERVERS or ZKL_TEST_ZK_DIR\n");
        return -1;
    }
    snprintf(file, sizeof file, "%s/connect", dir);
    f = fopen(file, "r");
    if (!f || !fgets(buf, (int)len, f)) {
        fprintf(stderr, "cannot read %s\n", file);
        if (f)
            fclose(f);
        return -1;
    }
    fclose(f);
    buf[strcspn(buf, "\r\n")] = '\0';
    return 0;
}
