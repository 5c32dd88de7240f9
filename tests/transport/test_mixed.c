/*
 * test_mixed.c - a program that links libzookeeper_mt itself, and zklock
 * built on libzookeeper_st (the default transport): the two export the
 * same names, so zkl_client_open must refuse at once, with ZKL_ESYS and a
 * message that names libzookeeper_mt, not run one library's calls in the
 * other (docs/design/transport.md). Built and run on st only.
 */
#include <stdio.h>
#include <string.h>
#include <zookeeper/zookeeper.h>

#include "zklock/client.h"

int main(void)
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
