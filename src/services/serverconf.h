/*
 * serverconf.h - what a server says of its own settings: the `conf`
 * four-letter word, asked on a plain TCP connection of its own, where the
 * server's 4lw.commands.whitelist allows it, and else `srvr`'s mode. The lease needs the ensemble's
 * reporting lag, syncLimit x tickTime + tickTime/2 (docs/lease.md), and a
 * client told nothing would otherwise assume a standalone server.
 *
 * Blocking (a connect, a write, reads until the server closes), bounded by
 * its timeout: called by zkl_client_open on the caller's thread only.
 */
#ifndef ZKL_SERVICES_SERVERCONF_H
#define ZKL_SERVICES_SERVERCONF_H

#include <sys/socket.h>

typedef enum zkl__conf_answer {
    ZKL__CONF_ENSEMBLE,   /* a member of an ensemble: *lag_ms is its lag */
    ZKL__CONF_STANDALONE, /* a standalone server: *lag_ms is 0 */
    ZKL__CONF_REFUSED,    /* conf is not in the server's whitelist */
    ZKL__CONF_NO_ANSWER,  /* no reply in time, or none we can read */
} zkl__conf_answer;

/* Ask the server at addr for its settings; at most timeout_ms. */
zkl__conf_answer zkl__conf_lag(const struct sockaddr *addr, socklen_t len, int timeout_ms,
                               int *lag_ms);

/* The lag of a `conf` reply (text, NUL-terminated), as above. */
zkl__conf_answer zkl__conf_parse(const char *reply, int *lag_ms);

/*
 * What `srvr` (in every server's default whitelist since 3.5.3) says a
 * server is: its "Mode:" line. Standalone proves a lag of 0; a member of
 * an ensemble without `conf` leaves its lag unknown.
 */
typedef enum zkl__srvr_mode {
    ZKL__MODE_UNKNOWN,    /* no reply, refused, or no mode we know */
    ZKL__MODE_STANDALONE, /* "Mode: standalone" */
    ZKL__MODE_ENSEMBLE,   /* "Mode: leader", "follower" or "observer" */
} zkl__srvr_mode;

/* Ask the server at addr its mode; at most timeout_ms. */
zkl__srvr_mode zkl__srvr_mode_of(const struct sockaddr *addr, socklen_t len, int timeout_ms);
/* The mode of a `srvr` reply (text, NUL-terminated). */
zkl__srvr_mode zkl__srvr_parse(const char *reply);

#endif
