/*
 * fuzz_check.h - what the fuzz targets share: an invariant check that aborts
 * (so libFuzzer saves the input as a crash, like any sanitizer report) and a
 * copy of the input as an exactly sized C string (so ASan sees a read past the
 * terminator, which a bigger buffer would hide).
 */
#ifndef ZKL_FUZZ_CHECK_H
#define ZKL_FUZZ_CHECK_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_CHECK(cond, ...)                                                                      \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: invariant failed: %s: ", __FILE__, __LINE__, #cond);           \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

/* data[0..size) as a malloc'd C string; bytes after a NUL are cut off by it. */
static inline char *fuzz_cstr(const uint8_t *data, size_t size)
{
    size_t n = strnlen((const char *)data, size);
    char *s = malloc(n + 1);
    if (!s)
        abort();
    memcpy(s, data, n);
    s[n] = '\0';
    return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif
