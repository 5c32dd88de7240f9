/*
 * log.h - zklock's internal logging: zkl__log() for our own messages and the
 * trampoline given to every ZooKeeper handle.
 */
#ifndef ZKL_LOG_H
#define ZKL_LOG_H

#include <stdbool.h>

#include "zklock/status.h"

void zkl__log_init(void);

/*
 * The log callback runs on any thread, the ZooKeeper client's included, and
 * often where zklock holds its own locks (a worker phase holds c->mu). A
 * public call made from inside it could wait for a lock its own thread
 * holds, so each refuses at once there: ZKL_EBUSY with a message naming it
 * (zkl__log_refuse), or its "none" value (false, 0) where it returns no
 * status. zklock's pure calls (zkl_strerror, zkl_errmsg, zkl_log_set, the
 * path and name getters, the frees) work.
 */
bool zkl__in_log(void);
zkl_status zkl__log_refuse(const char *fn);
#define ZKL__REFUSE_IN_LOG()                                                                       \
    do {                                                                                           \
        if (zkl__in_log())                                                                         \
            return zkl__log_refuse(__func__);                                                      \
    } while (0)
#define ZKL__REFUSE_IN_LOG_AS(none)                                                                \
    do {                                                                                           \
        if (zkl__in_log())                                                                         \
            return (none);                                                                         \
    } while (0)
void zkl__log(zkl_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void zkl__zk_log_trampoline(const char *message);

#endif
