/*
 * writes.c - fixtures of the guarded-write tests (writes.h).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "writes.h"
#include "zkt.h"

long zkt_number_at(zhandle_t *zh, const char *path)
{
    char buf[64];
    int len = sizeof buf - 1;
    if (zoo_get(zh, path, 0, buf, &len, NULL) != ZOK)
        return -1;
    buf[len < 0 ? 0 : len] = '\0';
    return strtol(buf, NULL, 10);
}

char *zkt_counter_for(zhandle_t *zh, const char *path)
{
    size_t n = strlen(path) + 16;
    char *p = malloc(n);
    cr_assert_not_null(p);
    snprintf(p, n, "%s-counter", path);
    cr_assert_eq(zkt_make_path(zh, p, 0), ZOK);
    cr_assert_eq(zoo_set(zh, p, "0", 1, -1), ZOK);
    return p;
}

zkl_write zkt_set_to(const char *counter, const char *value)
{
    zkl_write w;
    memset(&w, 0, sizeof w);
    w.type = ZKL_WRITE_SET;
    w.path = counter;
    w.data = value;
    w.len = (int)strlen(value);
    w.version = ZKL_ANY_VERSION;
    return w;
}

void zkt_scene_end(zhandle_t *zh, char *counter, char *path)
{
    if (counter)
        zoo_delete(zh, counter, -1);
    zookeeper_close(zh);
    free(counter);
    free(path);
}
