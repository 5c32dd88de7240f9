/*
 * serverlog.h - what the test server's own log says, for tests that must
 * take a time from the server rather than from a client (no Criterion: the
 * plain programs use it too).
 */
#ifndef ZKT_SERVERLOG_H
#define ZKT_SERVERLOG_H

#include <stdint.h>

/*
 * The wall-clock time (ms since the epoch) of the last "Expiring session
 * 0x<sid>" line in zkdir/server1/zookeeper.log logged no earlier than
 * since_ms - 1 s, or 0 if there is none (yet).
 */
int64_t zkt_log_expiry_ms(const char *zkdir, int64_t sid, int64_t since_ms);

/* The same in server n's log (an ensemble's: whichever leader expired it). */
int64_t zkt_log_expiry_ms_in(const char *zkdir, int n, int64_t sid, int64_t since_ms);

#endif
