/*
 * faultproxy.h - a TCP proxy inside the test process, between a ZooKeeper
 * client and the real server, that can break the connection on demand: cut
 * it, stall it, swallow the server's replies, add latency, refuse new
 * connections.
 *
 * It listens on 127.0.0.1 on a free port and forwards every accepted
 * connection to one upstream address. One thread does all the I/O (poll);
 * the controls may be called from any other thread at any time and take
 * effect before they return: once fp_stall(fp, true) returns, no byte moves.
 * Buffers are bounded (a full buffer stops reading its source). No Criterion
 * dependency: failures are returned, not asserted.
 */
#ifndef FAULTPROXY_H
#define FAULTPROXY_H

#include <stdbool.h>
#include <stdint.h>

typedef struct fp_proxy fp_proxy;

/*
 * Start a proxy to upstream, "host:port" or a whole connect string (its first
 * entry is taken, a chroot suffix ignored). NULL if the address does not
 * resolve, or listening or the thread fails.
 */
fp_proxy *fp_start(const char *upstream_hostport);

/* "127.0.0.1:PORT", to give a client instead of the server's address (owned by fp). */
const char *fp_connect_string(fp_proxy *fp);

/*
 * Close every current connection, both sides at once (the client sees a
 * connection loss and reconnects through the proxy; bytes not yet forwarded
 * are lost). Later connections are not affected.
 */
void fp_cut(fp_proxy *fp);

/*
 * Stop (true) or resume (false) forwarding in both directions, keeping the
 * sockets open: the client sees silence. New connections are accepted and
 * stalled too. A side that closes while stalled closes its pair.
 */
void fp_stall(fp_proxy *fp, bool on);

/*
 * Forward client to server but read and discard what the server sends (a
 * request reaches the server, its reply never arrives). The stream a client
 * receives is broken from then on: end it with fp_cut.
 */
void fp_drop_replies(fp_proxy *fp, bool on);

/*
 * One-way loss: read and discard what the client sends (the server hears
 * nothing of it: no requests, no pings), while the server's packets still
 * reach the client. The client's stream to the server is broken from then
 * on: end it with fp_cut, or let the server close it.
 */
void fp_drop_requests(fp_proxy *fp, bool on);

/* Add ms of latency to every chunk forwarded in either direction (0: none). */
void fp_delay(fp_proxy *fp, int ms);

/* Refuse new connections (accept and close at once) while on. */
void fp_refuse(fp_proxy *fp, bool on);

typedef struct fp_stats {
    uint64_t accepted;   /* connections accepted and forwarded */
    uint64_t refused;    /* connections accepted and closed at once (fp_refuse, upstream down) */
    uint64_t cut;        /* connections closed by fp_cut */
    uint64_t up_bytes;   /* client -> server, delivered to the server */
    uint64_t down_bytes; /* server -> client, delivered to the client */
    uint64_t dropped;    /* bytes swallowed (fp_drop_replies, fp_drop_requests) */
    int open;            /* connections open now */
} fp_stats;

void fp_stats_get(fp_proxy *fp, fp_stats *out);

/* Close every connection and the listener, join the thread, free. NULL is fine. */
void fp_stop(fp_proxy *fp);

#endif
