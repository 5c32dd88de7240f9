/*
 * test_mixed.c - a program that uses libzookeeper_mt itself, and zklock
 * built on libzookeeper_st (the default transport). The two export the same
 * names, and the process resolves each name to the first library that has
 * it (docs/design/transport.md):
 *
 *   test_mixed theirs CONNECT  libzookeeper_mt linked ahead of zklock: its
 *                              threads run every call, the program's and
 *                              zklock's, and both work: a mutex is taken
 *                              and given back, and the program's own
 *                              synchronous calls see its node.
 *   test_mixed mixed           libzookeeper_st linked ahead of
 *                              libzookeeper_mt: the program's own handles
 *                              could not work, so zkl_client_open refuses
 *                              at once (ZKL_ESYS, naming libzookeeper_mt).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zookeeper/zookeeper.h>

#include "zklock/client.h"
#include "zklock/mutex.h"

static int fail(const char *what, zkl_status st)
{
    fprintf(stderr, "test_mixed: %s: %s (%s)\n", what, zkl_strerror(st), zkl_errmsg());
    return 1;
}

static int theirs(const char *connect)
{
    zkl_client *c;
    zkl_mutex *m;
    zkl_status st;
    char path[64], *node = NULL;
    struct Stat stat;
    zhandle_t *zh;
    int rc, i;
    snprintf(path, sizeof path, "/test-mixed-%d", (int)getpid());
    if ((st = zkl_client_open(connect, NULL, &c)) != ZKL_OK)
        return fail("zkl_client_open", st);
    if ((st = zkl_mutex_create(c, path, &m)) != ZKL_OK ||
        (st = zkl_mutex_acquire(m, 10000)) != ZKL_OK || (st = zkl_mutex_node(m, &node)) != ZKL_OK)
        return fail("acquire", st);
    /* the program's own handle and synchronous call see the holder's node */
    zh = zookeeper_init(connect, NULL, 10000, NULL, NULL, 0);
    for (i = 0; zh && zoo_state(zh) != ZOO_CONNECTED_STATE && i < 1000; i++)
        usleep(10000);
    rc = zh ? zoo_exists(zh, node, 0, &stat) : ZSYSTEMERROR;
    if (rc != ZOK) {
        fprintf(stderr, "test_mixed: the program's zoo_exists of %s gave %s\n", node, zerror(rc));
        return 1;
    }
    if ((st = zkl_mutex_release(m)) != ZKL_OK)
        return fail("release", st);
    /* (a release may hold its delete back a moment for a next create) */
    for (i = 0; (rc = zoo_exists(zh, node, 0, &stat)) == ZOK && i < 200; i++)
        usleep(10000);
    if (rc != ZNONODE) {
        fprintf(stderr, "test_mixed: %s is left after the release (%s)\n", node, zerror(rc));
        return 1;
    }
    zoo_delete(zh, path, -1);
    zookeeper_close(zh);
    free(node);
    zkl_mutex_destroy(m);
    zkl_client_close(c);
    printf("test_mixed: zklock ran on libzookeeper_mt's threads beside the program's calls\n");
    return 0;
}

static int mixed(void)
{
    zkl_client *c = NULL;
    zkl_status st;
    /* (a use of the synchronous API, which only libzookeeper_mt has) */
    int (*volatile sync_create)(zhandle_t *, const char *, const char *, int,
                                const struct ACL_vector *, int, char *, int) = zoo_create;
    (void)sync_create;
    st = zkl_client_open("127.0.0.1:1", NULL, &c);
    if (st != ZKL_ESYS || c || !strstr(zkl_errmsg(), "libzookeeper_mt")) {
        fprintf(stderr,
                "test_mixed: zkl_client_open gave %d (%s), want ZKL_ESYS naming "
                "libzookeeper_mt\n",
                st, zkl_errmsg());
        zkl_client_close(c);
        return 1;
    }
    printf("test_mixed: refused: %s\n", zkl_errmsg());
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "theirs") == 0)
        return theirs(argv[2]);
    if (argc == 2 && strcmp(argv[1], "mixed") == 0)
        return mixed();
    fprintf(stderr, "usage: test_mixed theirs CONNECT | mixed\n");
    return 2;
}
