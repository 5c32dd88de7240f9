/*
 * seq.h - lock node names: Curator's protected prefix, its sort order, and the
 * server's sequence suffix. Pure functions, unit-tested without a server.
 */
#ifndef ZKL_SEQ_H
#define ZKL_SEQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "zklock/status.h"

/* "_c_" + 36-char uuid + "-" */
#define ZKL_PROTECTED_PREFIX_LEN 40
#define ZKL_SEQ_DIGITS 10

/* The node names after the protected prefix, as Curator spells them. */
#define ZKL_MUTEX_MARKER "lock-"
#define ZKL_READ_MARKER "__READ__"
#define ZKL_WRITE_MARKER "__WRIT__"
#define ZKL_LEASE_MARKER "lease-"
#define ZKL_LATCH_MARKER "latch-" /* Curator's LeaderLatch */

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

/*
 * A contender's view of the line, all a lock driver decides from: its own
 * place, and the nearest few names ahead of it that count (a reader counts
 * only writers). Curator sorts the whole listing to find these; one pass
 * over it finds the same, so the cost of a listing stays linear in the line
 * and nothing is copied (the names are the listing's own).
 */
#define ZKL_LINE_AHEAD 2

/* Whether name counts for the view (ctx: the caller's); NULL: all count. */
typedef bool (*zkl__counts_fn)(const char *name, const void *ctx);

typedef struct zkl__line {
    size_t n;    /* names in the listing */
    size_t rank; /* names ahead of self in Curator's order, counted or not */
    size_t m;    /* names in v, self the last */
    /* The nearest counted names ahead (at most ZKL_LINE_AHEAD), in Curator's
     * order, then self: pointers into the listing. */
    char *v[ZKL_LINE_AHEAD + 1];
} zkl__line;

/*
 * The view of self from an unsorted listing, in one pass: the same as the
 * full stable sort by sort key (zkl__sort_names) would give. False if self
 * is not in the listing.
 */
bool zkl__line_of(char *const *names, size_t n, const char *self, const char *const *markers,
                  zkl__counts_fn counts, const void *ctx, zkl__line *out);

/* The view of the name at index self of a sorted listing (tools, tests). */
void zkl__line_at(char *const *sorted, size_t n, size_t self, zkl__counts_fn counts,
                  const void *ctx, zkl__line *out);

/* Index of the first name starting with prefix, or -1. */
long zkl__find_prefix(char *const *names, size_t n, const char *prefix);

/* Index of the name equal to name, or -1. */
long zkl__find_name(char *const *names, size_t n, const char *name);

#endif
