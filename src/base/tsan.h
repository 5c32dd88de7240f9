/*
 * tsan.h - happens-before annotations for ThreadSanitizer at the points where
 * a pointer crosses into the ZooKeeper client and comes back in a delivery
 * on another thread (the poller's). The client is not instrumented, so TSan
 * cannot see its internal locks; without these marks every completion looks
 * like a race. They compile to nothing in other builds. (ZKL_PUBLISH, not
 * "hand-off": that word is the lock passing to its next holder.)
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
#define ZKL_PUBLISH(p) __tsan_release((void *)(p))
/* First thing in a callback that received p. */
#define ZKL_RECEIVED(p) __tsan_acquire((void *)(p))
#else
#define ZKL_PUBLISH(p) ((void)0)
#define ZKL_RECEIVED(p) ((void)0)
#endif

#endif
