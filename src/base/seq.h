/*
 * seq.h - lock node names: Curator's protected prefix, its sort order, and the
 * server's sequence suffix. Pure functions, unit-tested without a server.
 */
#ifndef ZKL_SEQ_H
#define ZKL_SEQ_H

#include <stddef.h>
#include <stdint.h>

#include "zklock/status.h"

/* "_c_" + 36-char uuid + "-" */
#define ZKL_PROTECTED_PREFIX_LEN 40
#define ZKL_SEQ_DIGITS 10

/*
 * Curator's sort key (standardFixForSorting): for each marker in turn, the
 * text after its last occurrence; a name without the marker is kept whole.
 * markers is NULL-terminated.
 */
const char *zkl__sort_key(const char *name, const char *const *markers);

/*
 * Sort names in place by sort key, bytewise, stable (equal keys keep their
 * order), as Curator's Collections.sort over String.compareTo does.
 * ZKL_ENOMEM is the only failure (names are left as they were).
 */
zkl_status zkl__sort_names(char **names, size_t n, const char *const *markers);

/*
 * Parse a sequence suffix exactly as the server prints it (%010d of a signed
 * 32-bit counter, so "-2147483648" after the wrap). Anything else, including
 * overflow, leading '+', spaces or a wrong width, is ZKL_EINVAL.
 */
zkl_status zkl__seq_parse(const char *text, int32_t *out);

/* The sequence of a lock node name: parse the sort key. */
zkl_status zkl__seq_of(const char *name, const char *const *markers, int32_t *out);

/* True if name starts with a Curator protected prefix "_c_<uuid>-". */
int zkl__is_protected(const char *name);

/* Index of the first name starting with prefix, or -1. */
long zkl__find_prefix(char *const *names, size_t n, const char *prefix);

/* Index of the name equal to name, or -1. */
long zkl__find_name(char *const *names, size_t n, const char *name);

#endif
