/*
 * util.h - small helpers shared by the core: version-4 UUIDs for protected
 * names, the default lock node data, monotonic time and deadlines.
 */
#ifndef ZKL_UTIL_H
#define ZKL_UTIL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "zklock/status.h"

/* Writes a lowercase version-4 UUID (36 chars + NUL) into out. */
zkl_status zkl__uuid4(char out[37]);

/*
 * Curator's default node data: the local IPv4 address as text. Taken from the
 * interface list (no name lookup, so no traffic); "127.0.0.1" if there is no
 * other. Writes a NUL-terminated string into out.
 */
void zkl__local_address(char *out, size_t len);

/* Monotonic milliseconds, and microseconds (the same clock). */
/* CLOCK_BOOTTIME in ms: goes on while the machine sleeps, as the server's clock does. */
int64_t zkl__boot_ms(void);
int64_t zkl__now_ms(void);
int64_t zkl__now_us(void);

/* Sleep ms milliseconds (restarting after signals). */
void zkl__sleep_ms(int ms);

/* The wall-clock time (CLOCK_REALTIME), in Unix seconds with a fraction. */
double zkl__unix_s(void);

/* A deadline from a timeout in ms (negative: none, INT64_MAX). */
int64_t zkl__deadline(int timeout_ms);

/* pthread_cond_timedwait until an absolute zkl__now_ms() deadline (CLOCK_MONOTONIC cond). */
int zkl__cond_wait_until(pthread_cond_t *cv, pthread_mutex_t *mu, int64_t deadline_ms);
/* The same to an absolute zkl__now_us() deadline. */
int zkl__cond_wait_until_us(pthread_cond_t *cv, pthread_mutex_t *mu, int64_t deadline_us);

/* The worker's back-off after `failures` tries in a row: 50 ms doubled per
 * failure, at most max_doublings times. */
int64_t zkl__retry_delay_ms(int failures, int max_doublings);

/* Initialise a condition variable on CLOCK_MONOTONIC. */
int zkl__cond_init(pthread_cond_t *cv);

/*
 * Run fn(arg) on a thread of its own and wait up to wait_ms (0: not at all)
 * for it to return: true if it did. Past the bound it runs on, detached, and
 * fn must then free whatever it uses. For work that a faulty peer can keep
 * from ending (libzookeeper_mt's zookeeper_close joins an I/O thread that
 * may sit in a blocking recv). If no thread can be started, fn runs here.
 */
bool zkl__run_bounded(void (*fn)(void *arg), void *arg, int wait_ms);

/* A process-unique id of the calling thread (never reused, unlike pthread_t). */
uint64_t zkl__thread_id(void);

#endif
