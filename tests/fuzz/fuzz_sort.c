/*
 * fuzz_sort.c - libFuzzer target for zkl__sort_names (src/base/seq.c), the
 * order in which every contender sees the queue. Input: one byte choosing the
 * markers (Curator's mutex, its read/write lock, kazoo's, none), then names
 * separated by '\n' (each its own allocation, so ASan sees overreads). Checks:
 *  - the result is a permutation of the input (same pointers, each once);
 *  - it is sorted by zkl__sort_key with strcmp, as Curator's compareTo;
 *  - it is stable: equal keys keep their input order, as Collections.sort;
 *  - zkl__find_name finds each name at its first equal place;
 *  - a contender that listed the same children in another order (a shuffle
 *    here) gets the same keys at every place and the same names wherever a
 *    key is unique. The standard driver (zkl__decide_standard, in
 *    core/policy/drivers.c) decides from the index alone, so this is what makes
 *    two contenders agree on who holds the lock and whom each watches;
 *  - the one-pass view of each name (zkl__line_of: its rank and the nearest
 *    counted names ahead, as the drivers see the line) is the one the full
 *    sort gives (zkl__line_at), for every name, with every name counted,
 *    with some (those with a 'W', as a reader counts writers) and none.
 */
#include "fuzz_check.h"
#include "base/seq.h"

#define MAX_NAMES 128

static const char *const MUTEX[] = {"lock-", NULL};
static const char *const RW[] = {"__READ__", "__WRIT__", NULL};
static const char *const KAZOO[] = {"__lock__", NULL};
static const char *const NONE[] = {NULL};
static const char *const *const SETS[] = {MUTEX, RW, KAZOO, NONE};

static bool counts_w(const char *name, const void *ctx)
{
    (void)ctx;
    return strchr(name, 'W') != NULL;
}

static bool counts_none(const char *name, const void *ctx)
{
    (void)name;
    (void)ctx;
    return false;
}

static const zkl__counts_fn COUNTS[] = {NULL, counts_w, counts_none};

/* in: as listed; sorted: the same, sorted. Each name's one-pass view is the sort's. */
static void views_checked(char **in, char **sorted, size_t n, const char *const *mk)
{
    size_t i, f, j;
    for (f = 0; f < sizeof COUNTS / sizeof *COUNTS; f++) {
        for (i = 0; i < n; i++) {
            zkl__line a, b;
            long at;
            FUZZ_CHECK(zkl__line_of(in, n, in[i], mk, COUNTS[f], NULL, &a),
                       "'%.80s' not found in its own listing", in[i]);
            at = zkl__find_name(sorted, n, in[i]);
            FUZZ_CHECK(at >= 0, "'%.80s' not in the sort", in[i]);
            zkl__line_at(sorted, n, (size_t)at, COUNTS[f], NULL, &b);
            FUZZ_CHECK(a.n == n && a.rank == b.rank && a.m == b.m,
                       "'%.80s' (filter %zu): rank %zu of %zu in view, the sort says %zu of %zu",
                       in[i], f, a.rank, a.m, b.rank, b.m);
            for (j = 0; j < a.m; j++)
                FUZZ_CHECK(a.v[j] == b.v[j],
                           "'%.80s' (filter %zu): view %zu is '%.80s', not '%.80s'", in[i], f, j,
                           a.v[j], b.v[j]);
        }
    }
}

static size_t split(const uint8_t *data, size_t size, char **names)
{
    size_t n = 0, start = 0, i;
    for (i = 0; i <= size && n < MAX_NAMES; i++) {
        if (i == size || data[i] == '\n') {
            names[n++] = fuzz_cstr(data + start, i - start);
            start = i + 1;
        }
    }
    return n;
}

/* Sort, then check order, stability and that out is a permutation of in. */
static void sort_checked(char **in, char **out, size_t n, const char *const *mk)
{
    size_t pos[MAX_NAMES], i, j;
    memcpy(out, in, n * sizeof *out);
    FUZZ_CHECK(zkl__sort_names(out, n, mk) == ZKL_OK, "sort of %zu names failed", n);
    for (i = 0; i < n; i++) {
        for (j = 0; j < n && in[j] != out[i]; j++)
            ;
        FUZZ_CHECK(j < n, "place %zu holds a pointer that was not in the input", i);
        pos[i] = j;
        for (j = 0; j < i; j++)
            FUZZ_CHECK(pos[j] != pos[i], "input %zu appears twice", pos[i]);
    }
    for (i = 0; i + 1 < n; i++) {
        int c = strcmp(zkl__sort_key(out[i], mk), zkl__sort_key(out[i + 1], mk));
        FUZZ_CHECK(c <= 0, "'%.80s' sorted before '%.80s'", out[i], out[i + 1]);
        FUZZ_CHECK(c != 0 || pos[i] < pos[i + 1], "equal keys swapped at %zu", i);
    }
    for (i = 0; i < n; i++) {
        long at = zkl__find_name(out, n, out[i]);
        FUZZ_CHECK(at >= 0 && (size_t)at <= i && strcmp(out[at], out[i]) == 0,
                   "find_name('%.80s') = %ld, expected <= %zu", out[i], at, i);
        for (j = 0; j < (size_t)at; j++)
            FUZZ_CHECK(strcmp(out[j], out[i]) != 0, "find_name missed place %zu", j);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *names[MAX_NAMES], *shuffled[MAX_NAMES], *a[MAX_NAMES], *b[MAX_NAMES];
    const char *const *mk;
    uint32_t h = 2166136261u; /* FNV-1a of the input seeds the shuffle: reproducible */
    size_t n, i;
    if (size == 0)
        return 0;
    mk = SETS[data[0] & 3];
    n = split(data + 1, size - 1, names);
    for (i = 0; i < size; i++)
        h = (h ^ data[i]) * 16777619u;
    memcpy(shuffled, names, n * sizeof *names);
    for (i = n; i > 1; i--) {
        size_t k;
        char *t;
        h ^= h << 13, h ^= h >> 17, h ^= h << 5;
        k = h % i;
        t = shuffled[i - 1], shuffled[i - 1] = shuffled[k], shuffled[k] = t;
    }
    sort_checked(names, a, n, mk);
    sort_checked(shuffled, b, n, mk);
    views_checked(names, a, n, mk);
    views_checked(shuffled, b, n, mk);
    for (i = 0; i < n; i++) {
        const char *ka = zkl__sort_key(a[i], mk);
        int unique = (i == 0 || strcmp(zkl__sort_key(a[i - 1], mk), ka) != 0) &&
                     (i + 1 == n || strcmp(zkl__sort_key(a[i + 1], mk), ka) != 0);
        FUZZ_CHECK(strcmp(ka, zkl__sort_key(b[i], mk)) == 0, "contenders disagree at %zu", i);
        FUZZ_CHECK(!unique || strcmp(a[i], b[i]) == 0, "'%.80s' vs '%.80s' at %zu", a[i], b[i], i);
    }
    for (i = 0; i < n; i++)
        free(names[i]);
    return 0;
}
