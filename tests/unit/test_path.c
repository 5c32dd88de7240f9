/*
 * test_path.c - lock path validation by ZooKeeper's rules, without a server.
 */
#include <criterion/criterion.h>

#include "base/path.h"

Test(path, accepts_good_paths)
{
    const char *good[] = {"/a",          "/locks/job-1",       "/a/b/c",
                          "/with space", "/\xc3\xa9t\xc3\xa9", "/.hidden",
                          "/a..b",       "/zookeeperish"};
    size_t i;
    for (i = 0; i < sizeof good / sizeof good[0]; i++)
        cr_assert_eq(zkl__path_validate(good[i]), ZKL_OK, "rejected '%s': %s", good[i],
                     zkl_errmsg());
}

Test(path, rejects_bad_paths)
{
    const char *bad[] = {"",
                         "relative",
                         "a/b",
                         "/",
                         "/a/",
                         "//a",
                         "/a//b",
                         "/a/./b",
                         "/a/../b",
                         "/.",
                         "/..",
                         "/a\x01",
                         "/a\x7f",
                         "/\xc2\x85",
                         "/\xff",
                         "/\xc3",
                         "/zookeeper",
                         "/zookeeper/x",
                         "/\xef\xbf\xbf",
                         "/\xed\xa0\x80",
                         "/a\xf0\x9f\x98\x80",
                         "/\xf1\xb8\xad\xa6"};
    size_t i;
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cr_assert_eq(zkl__path_validate(bad[i]), ZKL_EBADPATH, "accepted '%s'", bad[i]);
        cr_assert_neq(zkl_errmsg()[0], '\0', "no message for '%s'", bad[i]);
    }
}

Test(path, null_is_einval)
{
    cr_assert_eq(zkl__path_validate(NULL), ZKL_EINVAL);
}

Test(path, too_long)
{
    char p[ZKL_PATH_MAX + 2];
    memset(p, 'a', sizeof p);
    p[0] = '/';
    p[ZKL_PATH_MAX + 1] = '\0';
    cr_assert_eq(zkl__path_validate(p), ZKL_EBADPATH);
    p[ZKL_PATH_MAX] = '\0';
    cr_assert_eq(zkl__path_validate(p), ZKL_OK);
}

Test(path, helpers)
{
    char *j = zkl__path_join("/a/b", "c");
    cr_assert_str_eq(j, "/a/b/c");
    free(j);
    cr_assert_eq(zkl__path_parent_len("/a/b"), 2);
    cr_assert_eq(zkl__path_parent_len("/a"), 0);
    cr_assert_str_eq(zkl__path_basename("/a/b"), "b");
}
