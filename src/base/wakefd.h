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

#endif
