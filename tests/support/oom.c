/*
 * oom.c - the wrapped allocators behind oom.h: each call counts down
 * zkt_oom and fails (returns NULL) when it reaches the armed one.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "oom.h"

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t m);
void *__real_realloc(void *p, size_t n);
char *__real_strdup(const char *s);
char *__real_strndup(const char *s, size_t n);
void *__real_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off);
int __real_munmap(void *addr, size_t len);

zkt_countdown zkt_oom;
_Atomic long zkt_oom_maps_made, zkt_oom_maps_live;

static int fail_now(void)
{
    return zkt_countdown_fire(&zkt_oom);
}

void *__wrap_malloc(size_t n);
void *__wrap_malloc(size_t n)
{
    return fail_now() ? NULL : __real_malloc(n);
}

void *__wrap_calloc(size_t n, size_t m);
void *__wrap_calloc(size_t n, size_t m)
{
    return fail_now() ? NULL : __real_calloc(n, m);
}

void *__wrap_realloc(void *p, size_t n);
void *__wrap_realloc(void *p, size_t n)
{
    return fail_now() ? NULL : __real_realloc(p, n);
}

char *__wrap_strdup(const char *s);
char *__wrap_strdup(const char *s)
{
    return fail_now() ? NULL : __real_strdup(s);
}

char *__wrap_strndup(const char *s, size_t n);
char *__wrap_strndup(const char *s, size_t n)
{
    return fail_now() ? NULL : __real_strndup(s, n);
}

/* zklock maps a long listing's block on its own (requests/call.c). */
void *__wrap_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off);
void *__wrap_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    void *p;
    if (fail_now()) {
        errno = ENOMEM;
        return MAP_FAILED;
    }
    p = __real_mmap(addr, len, prot, flags, fd, off);
    if (p != MAP_FAILED) {
        atomic_fetch_add(&zkt_oom_maps_made, 1);
        atomic_fetch_add(&zkt_oom_maps_live, 1);
    }
    return p;
}

int __wrap_munmap(void *addr, size_t len);
int __wrap_munmap(void *addr, size_t len)
{
    atomic_fetch_sub(&zkt_oom_maps_live, 1);
    return __real_munmap(addr, len);
}
