/*
 * log.h - zklock's internal logging: zkl__log() for our own messages and the
 * trampoline given to every ZooKeeper handle.
 */
#ifndef ZKL_LOG_H
#define ZKL_LOG_H

#include "zklock/status.h"

void zkl__log_init(void);
void zkl__log(zkl_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void zkl__zk_log_trampoline(const char *message);

#endif
