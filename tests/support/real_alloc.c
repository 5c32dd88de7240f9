/*
 * real_alloc.c - in the tests' library, zklock's private ZooKeeper client
 * allocates through __real_malloc and its kin (cmake/private-zookeeper.sh,
 * --real-allocs), so that a test that wraps the allocator (ld --wrap,
 * test_oom and test_cli_oom) fails zklock's own allocations only, as when
 * the client was a shared library of its own. With --wrap=NAME the linker
 * sends __real_NAME to the real NAME and these are not used; without it,
 * these weak fallbacks are the real calls.
 */
#include <stdlib.h>
#include <string.h>

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
char *__real_strdup(const char *s);
char *__real_strndup(const char *s, size_t n);

__attribute__((weak)) void *__real_malloc(size_t n)
{
    return malloc(n);
}

__attribute__((weak)) void *__real_calloc(size_t n, size_t size)
{
    return calloc(n, size);
}

__attribute__((weak)) void *__real_realloc(void *p, size_t n)
{
    return realloc(p, n);
}

__attribute__((weak)) char *__real_strdup(const char *s)
{
    return strdup(s);
}

__attribute__((weak)) char *__real_strndup(const char *s, size_t n)
{
    return strndup(s, n);
}
