/*
 * oom.c - the wrapped allocators behind oom.h: each call counts down an
 * armed countdown and fails (returns NULL) when it reaches the armed one.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "oom.h"

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t m);
void *__real_realloc(void *p, size_t n);
char *__real_strdup(const char *s);
char *__real_strndup(const char *s, size_t n);

static atomic_long countdown; /* 0: off; otherwise the allocation to fail, counting down */
static atomic_long seen;      /* allocations while armed */
static atomic_int failed;     /* the armed failure happened */

long zkt_oom_arm(long nth)
{
    return atomic_exchange(&countdown, nth);
}

long zkt_oom_seen(void)
{
    return atomic_load(&seen);
}

int zkt_oom_failed(void)
{
    return atomic_load(&failed);
}

void zkt_oom_reset(void)
{
    atomic_store(&seen, 0);
    atomic_store(&failed, 0);
}

static int fail_now(void)
{
    long left;
    if (atomic_load(&countdown) == 0)
        return 0;
    atomic_fetch_add(&seen, 1);
    left = atomic_fetch_sub(&countdown, 1);
    if (left == 1) {
        atomic_store(&failed, 1);
        return 1;
    }
    if (left <= 0)
        atomic_store(&countdown, 0);
    return 0;
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
