/*
 * serverlog.c - see serverlog.h. The server logs local time as
 * "YYYY-MM-DD HH:MM:SS,mmm"; mktime reads it in the same time zone.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "serverlog.h"

int64_t zkt_log_expiry_ms(const char *zkdir, int64_t sid, int64_t since_ms)
{
    return zkt_log_expiry_ms_in(zkdir, 1, sid, since_ms);
}

int64_t zkt_log_expiry_ms_in(const char *zkdir, int n, int64_t sid, int64_t since_ms)
{
    char file[1024], line[1024], want[64];
    int64_t at = 0;
    FILE *f;
    snprintf(file, sizeof file, "%s/server%d/zookeeper.log", zkdir, n);
    snprintf(want, sizeof want, "Expiring session 0x%llx,", (unsigned long long)sid);
    if (!(f = fopen(file, "r")))
        return 0;
    while (fgets(line, sizeof line, f)) {
        struct tm tm;
        int ms;
        int64_t t;
        if (!strstr(line, want))
            continue;
        memset(&tm, 0, sizeof tm);
        if (sscanf(line, "%d-%d-%d %d:%d:%d,%d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
                   &tm.tm_min, &tm.tm_sec, &ms) != 7)
            continue;
        tm.tm_year -= 1900;
        tm.tm_mon -= 1;
        tm.tm_isdst = -1;
        t = (int64_t)mktime(&tm) * 1000 + ms;
        if (t >= since_ms - 1000)
            at = t;
    }
    fclose(f);
    return at;
}
