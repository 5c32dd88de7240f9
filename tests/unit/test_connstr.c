/*
 * test_connstr.c - the connect-string checks zklock makes before
 * zookeeper_init (a port above 65535 would be wrapped into another port),
 * without a server.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "base/connstr.h"
#include "zklock/zklock.h"

Test(connstr, accepts_what_the_zookeeper_client_takes)
{
    const char *good[] = {"127.0.0.1:2181",
                          "127.0.0.1:65535",
                          "localhost:2181,127.0.0.1:2182",
                          "127.0.0.1:2181, 127.0.0.1:2182",
                          "127.0.0.1:2181/app/locks",
                          "127.0.0.1:2181/a:99999", /* a chroot is a path: no port in it */
                          "127.0.0.1",              /* no port: zookeeper_init's to refuse */
                          ","};
    size_t i;
    for (i = 0; i < sizeof good / sizeof good[0]; i++)
        cr_assert_eq(zkl__connect_check(good[i]), ZKL_OK, "rejected '%s': %s", good[i],
                     zkl_errmsg());
}

Test(connstr, refuses_a_port_above_65535)
{
    const char *bad[] = {"127.0.0.1:65536", "127.0.0.1:70000", "127.0.0.1:2181,127.0.0.1:99999",
                         "127.0.0.1:123456789012345678901234567890/x"};
    size_t i;
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cr_assert_eq(zkl__connect_check(bad[i]), ZKL_EINVAL, "accepted '%s'", bad[i]);
        cr_assert(strstr(zkl_errmsg(), "65535"), "'%s': %s", bad[i], zkl_errmsg());
    }
}

Test(connstr, open_says_what_a_connect_string_looks_like)
{
    zkl_client *c = NULL;
    cr_assert_eq(zkl_client_open("127.0.0.1:70000", NULL, &c), ZKL_EINVAL);
    cr_assert_null(c);
    cr_assert(strstr(zkl_errmsg(), "127.0.0.1:70000"), "%s", zkl_errmsg());
    cr_assert_eq(zkl_client_open(",", NULL, &c), ZKL_EINVAL);
    cr_assert(strstr(zkl_errmsg(), "host:port"), "%s", zkl_errmsg());
    cr_assert_eq(zkl_client_open("127.0.0.1:notaport", NULL, &c), ZKL_EINVAL);
    cr_assert_null(c);
}
