/*
 * path.c - validation of lock paths by ZooKeeper's own rules (PathUtils:
 * absolute, no empty, "." or ".." segment, no trailing slash, no control or
 * reserved characters, valid UTF-8), plus zklock's: not the root, not under
 * /zookeeper, and short enough to hold a lock node name.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/path.h"
#include "base/status.h"

/* Decode one UTF-8 sequence; returns its length, or 0 if malformed. */
static size_t utf8_decode(const unsigned char *s, uint32_t *cp)
{
    if (s[0] < 0x80) {
        *cp = s[0];
        return 1;
    }
    if ((s[0] & 0xe0) == 0xc0 && (s[1] & 0xc0) == 0x80) {
        *cp = ((uint32_t)(s[0] & 0x1f) << 6) | (s[1] & 0x3f);
        return *cp >= 0x80 ? 2 : 0;
    }
    if ((s[0] & 0xf0) == 0xe0 && (s[1] & 0xc0) == 0x80 && (s[2] & 0xc0) == 0x80) {
        *cp = ((uint32_t)(s[0] & 0x0f) << 12) | ((uint32_t)(s[1] & 0x3f) << 6) | (s[2] & 0x3f);
        return *cp >= 0x800 ? 3 : 0;
    }
    if ((s[0] & 0xf8) == 0xf0 && (s[1] & 0xc0) == 0x80 && (s[2] & 0xc0) == 0x80 &&
        (s[3] & 0xc0) == 0x80) {
        *cp = ((uint32_t)(s[0] & 0x07) << 18) | ((uint32_t)(s[1] & 0x3f) << 12) |
              ((uint32_t)(s[2] & 0x3f) << 6) | (s[3] & 0x3f);
        return (*cp >= 0x10000 && *cp <= 0x10ffff) ? 4 : 0;
    }
    return 0;
}

/*
 * The code points ZooKeeper's PathUtils refuses. It looks at Java's UTF-16,
 * where anything above U+FFFF is a surrogate pair (U+D800..U+DFFF), which it
 * forbids: so those are out too (found by tests/fuzz/fuzz_path).
 */
static int zk_forbidden(uint32_t c)
{
    return c <= 0x1f || (c >= 0x7f && c <= 0x9f) || (c >= 0xd800 && c <= 0xf8ff) || (c >= 0xfff0);
}

zkl_status zkl__path_validate(const char *path)
{
    size_t len, i = 0, seg_start = 1;
    if (!path)
        return zkl__fail(ZKL_EINVAL, "lock path is NULL");
    len = strlen(path);
    if (len == 0)
        return zkl__fail(ZKL_EBADPATH, "lock path is empty");
    if (path[0] != '/')
        return zkl__fail(ZKL_EBADPATH, "lock path must be absolute (start with '/'): '%.200s'",
                         path);
    if (len == 1)
        return zkl__fail(ZKL_EBADPATH, "lock path must not be the root '/'");
    if (len > ZKL_PATH_MAX)
        return zkl__fail(ZKL_EBADPATH, "lock path is longer than %d bytes", ZKL_PATH_MAX);
    if (path[len - 1] == '/')
        return zkl__fail(ZKL_EBADPATH, "lock path must not end with '/': '%.200s'", path);
    if (strcmp(path, "/zookeeper") == 0 || strncmp(path, "/zookeeper/", 11) == 0)
        return zkl__fail(ZKL_EBADPATH, "lock path is under the reserved /zookeeper: '%.200s'",
                         path);
    for (i = 1; i <= len; i++) {
        if (i == len || path[i] == '/') {
            size_t n = i - seg_start;
            const char *seg = path + seg_start;
            if (n == 0)
                return zkl__fail(ZKL_EBADPATH, "lock path has an empty segment ('//'): '%.200s'",
                                 path);
            if ((n == 1 && seg[0] == '.') || (n == 2 && seg[0] == '.' && seg[1] == '.'))
                return zkl__fail(ZKL_EBADPATH,
                                 "lock path has a relative segment ('.' or '..'): '%.200s'", path);
            seg_start = i + 1;
            continue;
        }
        {
            uint32_t cp;
            size_t k = utf8_decode((const unsigned char *)path + i, &cp);
            if (k == 0)
                return zkl__fail(ZKL_EBADPATH, "lock path is not valid UTF-8 (byte %zu)", i);
            if (zk_forbidden(cp))
                return zkl__fail(ZKL_EBADPATH,
                                 "lock path has a character ZooKeeper forbids (U+%04X at byte %zu)",
                                 (unsigned)cp, i);
            i += k - 1;
        }
    }
    return ZKL_OK;
}

char *zkl__path_join(const char *a, const char *b)
{
    size_t n = strlen(a) + strlen(b) + 2;
    char *p = malloc(n);
    if (p)
        snprintf(p, n, "%s/%s", a, b);
    return p;
}

size_t zkl__path_parent_len(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? (size_t)(slash - path) : 0;
}

const char *zkl__path_basename(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}
