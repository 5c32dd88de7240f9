/*
 * fuzz_path.c - libFuzzer target for zkl__path_validate (src/base/path.c),
 * which promises that no lock path it accepts is one the server would refuse.
 * The input is one path. Besides "no crash" it checks:
 *  - an accepted path starts with '/', has no "//", no trailing '/', no "." or
 *    ".." segment, is valid UTF-8 (strict: no overlong forms, no surrogates);
 *  - acceptance equals an independent model of ZooKeeper's PathUtils, which
 *    judges Java chars (UTF-16 units): so no code point ZooKeeper forbids, and
 *    none above U+FFFF (a surrogate pair to Java), plus zklock's own rules (not
 *    the root, not under /zookeeper, at most ZKL_PATH_MAX bytes);
 *  - a rejection is ZKL_EBADPATH with a message;
 *  - the helpers split an accepted path back into what joins to it again.
 */
#include "fuzz_check.h"
#include "base/path.h"

/* Length of a well-formed UTF-8 sequence at s (Unicode table 3-7), 0 if none. */
static size_t utf8_strict(const unsigned char *s, uint32_t *cp)
{
    unsigned char c = s[0], lo = 0x80, hi = 0xbf;
    size_t n, i;
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    if (c >= 0xc2 && c <= 0xdf)
        n = 2, *cp = c & 0x1f;
    else if (c >= 0xe0 && c <= 0xef)
        n = 3, *cp = c & 0x0f, lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;
    else if (c >= 0xf0 && c <= 0xf4)
        n = 4, *cp = c & 0x07, lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;
    else
        return 0;
    for (i = 1; i < n; i++, lo = 0x80, hi = 0xbf) {
        if (s[i] < lo || s[i] > hi) /* the NUL terminator fails this too */
            return 0;
        *cp = (*cp << 6) | (s[i] & 0x3f);
    }
    return n;
}

/* PathUtils.validatePath's character test, on a Java char. */
static int java_forbidden(uint32_t c)
{
    return (c > 0 && c <= 0x1f) || (c >= 0x7f && c <= 0x9f) || (c >= 0xd800 && c <= 0xf8ff) ||
           (c >= 0xfff0 && c <= 0xffff);
}

static int model_accepts(const char *p)
{
    size_t len = strlen(p), i;
    const char *seg = p + 1;
    if (len < 2 || len > ZKL_PATH_MAX || p[0] != '/')
        return 0;
    if (strcmp(p, "/zookeeper") == 0 || strncmp(p, "/zookeeper/", 11) == 0)
        return 0;
    for (;;) {
        const char *end = strchr(seg, '/');
        size_t n = end ? (size_t)(end - seg) : strlen(seg);
        if (n == 0 || strncmp(seg, ".", n) == 0 || strncmp(seg, "..", n) == 0)
            return 0; /* empty ("//" or a trailing '/'), "." or ".." */
        if (!end)
            break;
        seg = end + 1;
    }
    for (i = 0; i < len;) {
        uint32_t cp;
        size_t k = utf8_strict((const unsigned char *)p + i, &cp);
        if (k == 0 || cp > 0xffff || java_forbidden(cp))
            return 0;
        i += k;
    }
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *path = fuzz_cstr(data, size);
    size_t len = strlen(path);
    zkl_status st = zkl__path_validate(path);
    int model = model_accepts(path);

    if (st != ZKL_OK) {
        FUZZ_CHECK(st == ZKL_EBADPATH && zkl_errmsg()[0], "rejected with %d, '%s'", st,
                   zkl_errmsg());
    } else {
        size_t plen = zkl__path_parent_len(path);
        const char *base = zkl__path_basename(path);
        char *parent = strndup(path, plen), *joined;
        FUZZ_CHECK(path[0] == '/' && path[len - 1] != '/' && !strstr(path, "//"),
                   "accepted '%.200s'", path);
        FUZZ_CHECK(path[plen] == '/' && base == path + plen + 1 && *base && !strchr(base, '/'),
                   "'%.200s' splits into %zu and '%.200s'", path, plen, base);
        joined = zkl__path_join(parent, base);
        FUZZ_CHECK(parent && joined && strcmp(joined, path) == 0, "'%.200s' rejoins as '%.200s'",
                   path, joined ? joined : "(null)");
        free(parent);
        free(joined);
    }
    FUZZ_CHECK((st == ZKL_OK) == model, "validate says %d, the PathUtils model %s for '%.200s'", st,
               model ? "accepts" : "rejects", path);
    free(path);
    return 0;
}
