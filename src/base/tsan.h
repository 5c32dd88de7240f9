/*
 * tsan.h - happens-before annotations for ThreadSanitizer at the points where
 * a pointer crosses into libzookeeper_mt and comes back on its completion
 * thread. The library is not instrumented, so TSan cannot see its internal
 * queue locks; without these marks every completion looks like a race.
 * They compile to nothing in other builds.
 */
#ifndef ZKL_TSAN_H
#define ZKL_TSAN_H

#if defined(__SANITIZE_THREAD__)
#define ZKL_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define ZKL_TSAN 1
#endif
#endif

#ifdef ZKL_TSAN
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
/* Before handing p to the ZooKeeper client. */
#define ZKL_HANDOFF(p) __tsan_release((void *)(p))
/* First thing in a callback that received p. */
#define ZKL_RECEIVED(p) __tsan_acquire((void *)(p))
#else
#define ZKL_HANDOFF(p) ((void)0)
#define ZKL_RECEIVED(p) ((void)0)
#endif

#endif
