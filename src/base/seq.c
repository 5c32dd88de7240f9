/*
 * seq.c - ordering and parsing of lock node names, exactly as Curator does it,
 * so that a C and a Java contender agree on who is first in line. Curator
 * never parses numbers when sorting (it compares the text after the lock
 * name), so neither do we; parsing is only for tests and tools.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/seq.h"
#include "base/status.h"

static const char *last_occurrence(const char *s, const char *needle)
{
    const char *found = NULL, *p = s;
    size_t n = strlen(needle);
    if (n == 0)
        return NULL;
    while ((p = strstr(p, needle)) != NULL) {
        found = p;
        p += 1;
    }
    return found;
}

const char *zkl__sort_key(const char *name, const char *const *markers)
{
    const char *key = name;
    for (; markers && *markers; markers++) {
        const char *at = last_occurrence(key, *markers);
        if (at)
            key = at + strlen(*markers);
    }
    return key;
}

struct sort_item {
    const char *key;
    char *name;
    size_t index;
};

static int cmp_item(const void *a, const void *b)
{
    const struct sort_item *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    if (c)
        return c;
    return (x->index > y->index) - (x->index < y->index);
}

zkl_status zkl__sort_names(char **names, size_t n, const char *const *markers)
{
    struct sort_item *items;
    size_t i;
    if (n < 2)
        return ZKL_OK;
    items = malloc(n * sizeof *items);
    if (!items)
        return zkl__fail(ZKL_ENOMEM, "out of memory sorting %zu children", n);
    for (i = 0; i < n; i++) {
        items[i].key = zkl__sort_key(names[i], markers);
        items[i].name = names[i];
        items[i].index = i;
    }
    qsort(items, n, sizeof *items, cmp_item);
    for (i = 0; i < n; i++)
        names[i] = items[i].name;
    free(items);
    return ZKL_OK;
}

/* Keep name (key its sort key, newest in listing order) among the nearest
 * counted names ahead, kept[0..*k) ascending: it sorts after any kept name
 * of an equal key, as the stable sort would put it. */
static void keep_nearest(char **kept, const char **keys, size_t *k, char *name, const char *key)
{
    size_t p = 0, j;
    while (p < *k && strcmp(keys[p], key) <= 0)
        p++;
    if (*k < ZKL_LINE_AHEAD) {
        for (j = *k; j > p; j--)
            kept[j] = kept[j - 1], keys[j] = keys[j - 1];
        (*k)++;
    } else if (p == 0) {
        return; /* farther ahead than every kept one */
    } else {
        for (j = 0; j + 1 < p; j++)
            kept[j] = kept[j + 1], keys[j] = keys[j + 1];
        p--;
    }
    kept[p] = name;
    keys[p] = key;
}

bool zkl__line_of(char *const *names, size_t n, const char *self, const char *const *markers,
                  zkl__counts_fn counts, const void *ctx, zkl__line *out)
{
    const char *self_key = zkl__sort_key(self, markers), *keys[ZKL_LINE_AHEAD];
    char *me = NULL;
    size_t i, k = 0;
    out->n = n;
    out->rank = 0;
    for (i = 0; i < n; i++) {
        const char *key;
        int c;
        if (!me && strcmp(names[i], self) == 0) {
            me = names[i];
            continue;
        }
        key = zkl__sort_key(names[i], markers);
        c = strcmp(key, self_key);
        if (c > 0 || (c == 0 && me)) /* behind: a tie goes by listing order */
            continue;
        out->rank++;
        if (!counts || counts(names[i], ctx))
            keep_nearest(out->v, keys, &k, names[i], key);
    }
    if (!me)
        return false;
    out->v[k] = me;
    out->m = k + 1;
    return true;
}

void zkl__line_at(char *const *sorted, size_t n, size_t self, zkl__counts_fn counts,
                  const void *ctx, zkl__line *out)
{
    size_t i = self, k = 0, j;
    out->n = n;
    out->rank = self;
    while (i > 0 && k < ZKL_LINE_AHEAD) {
        i--;
        if (!counts || counts(sorted[i], ctx))
            out->v[k++] = sorted[i];
    }
    for (j = 0; j < k / 2; j++) { /* gathered nearest first */
        char *t = out->v[j];
        out->v[j] = out->v[k - 1 - j];
        out->v[k - 1 - j] = t;
    }
    out->v[k] = sorted[self];
    out->m = k + 1;
}

zkl_status zkl__seq_parse(const char *text, int32_t *out)
{
    long long v = 0;
    int neg = 0;
    const char *p = text;
    char again[16];
    if (!text || !out)
        return zkl__fail(ZKL_EINVAL, "sequence: NULL argument");
    if (*p == '-') {
        neg = 1;
        p++;
    }
    if (*p == '\0')
        return zkl__fail(ZKL_EINVAL, "sequence '%.40s' has no digits", text);
    for (; *p; p++) {
        if (*p < '0' || *p > '9')
            return zkl__fail(ZKL_EINVAL, "sequence '%.40s' has a non-digit", text);
        v = v * 10 + (*p - '0');
        if (v > 2147483648LL)
            return zkl__fail(ZKL_EINVAL, "sequence '%.40s' overflows 32 bits", text);
    }
    if (neg)
        v = -v;
    if (v > 2147483647LL)
        return zkl__fail(ZKL_EINVAL, "sequence '%.40s' overflows 32 bits", text);
    /* Only the server's own spelling is a sequence: same width, same zeros. */
    snprintf(again, sizeof again, "%010d", (int)v);
    if (strcmp(again, text) != 0)
        return zkl__fail(ZKL_EINVAL, "sequence '%.40s' is not in the server's %%010d form", text);
    *out = (int32_t)v;
    return ZKL_OK;
}

zkl_status zkl__seq_of(const char *name, const char *const *markers, int32_t *out)
{
    const char *key;
    if (!name)
        return zkl__fail(ZKL_EINVAL, "sequence: NULL name");
    key = zkl__sort_key(name, markers);
    if (key == name)
        return zkl__fail(ZKL_EINVAL, "'%.80s' has no lock name marker", name);
    return zkl__seq_parse(key, out);
}

int zkl__is_protected(const char *name)
{
    static const int dash_at[] = {8, 13, 18, 23};
    int i, d = 0;
    if (strncmp(name, "_c_", 3) != 0 || strlen(name) < ZKL_PROTECTED_PREFIX_LEN)
        return 0;
    for (i = 0; i < 36; i++) {
        char ch = name[3 + i];
        if (d < 4 && i == dash_at[d]) {
            if (ch != '-')
                return 0;
            d++;
        } else if (!((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f'))) {
            return 0;
        }
    }
    return name[39] == '-';
}

long zkl__find_prefix(char *const *names, size_t n, const char *prefix)
{
    size_t i, lp = strlen(prefix);
    for (i = 0; i < n; i++)
        if (strncmp(names[i], prefix, lp) == 0)
            return (long)i;
    return -1;
}

long zkl__find_name(char *const *names, size_t n, const char *name)
{
    size_t i;
    for (i = 0; i < n; i++)
        if (strcmp(names[i], name) == 0)
            return (long)i;
    return -1;
}
