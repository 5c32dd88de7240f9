/*
 * wakefd.h - a sleep that keeps out of the process's futex hash: an eventfd
 * to sleep on in ppoll until a deadline, and the wake-up that ends it.
 *
 * Why: a thread blocked on a futex (a condition variable) sits in a chain
 * of the process's futex hash, and every wake-up in the process walks the
 * chain it lands in. Since Linux 6.16 a process has a private hash sized by
 * its CPUs, not its threads: 16 chains on 2 CPUs. A process with a thousand
 * clients has thousands of blocked threads; at 1024 clients, futex_wake was
 * a fifth of its CPU. The worker and a blocking acquire's waiter sleep here
 * instead (client/worker.c, core/engine/engine.c).
 */
#ifndef ZKL_WAKEFD_H
#define ZKL_WAKEFD_H

#include <stdbool.h>
#include <stdint.h>

/* A new wake fd (non-blocking, close-on-exec eventfd), or -1 (errno set). */
int zkl__wakefd_new(void);
/*
 * Sleep until woken or until deadline_us (a zkl__now_us() time; INT64_MAX:
 * none), and take the wake-up. A wake-up given before the sleep ends it at
 * once: callers check their condition again after every return.
 */
void zkl__wakefd_sleep_until_us(int fd, int64_t deadline_us);
/* Wake the sleeper of fd (or the next sleep on it). */
void zkl__wakefd_wake(int fd);
/* Close fd if it is one (>= 0). */
void zkl__wakefd_close(int fd);

/*
 * An alarm for such a sleep: a timerfd on zkl__now_us()'s clock, which any
 * thread can move without waking the sleeper now (the worker's: a held-back
 * delete's moment, services/cleanup.c). A new one (non-blocking,
 * close-on-exec, not set), or -1 (errno set).
 */
int zkl__alarmfd_new(void);
/* Set alarm fd afd to ring at at_us (a zkl__now_us() time; one already past
 * rings at once). false: it could not be set (the caller wakes the sleeper). */
bool zkl__alarmfd_set(int afd, int64_t at_us);
/* Sleep until fd is woken, afd rings or deadline_us, and take what ended it. */
void zkl__wakefd_sleep_alarm(int fd, int afd, int64_t deadline_us);

#endif
