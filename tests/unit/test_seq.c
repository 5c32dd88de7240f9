/*
 * test_seq.c - sequence parsing, protected prefixes and Curator's sort order,
 * without a server.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "base/seq.h"

static const char *const MUTEX[] = {"lock-", NULL};
static const char *const RW[] = {"__READ__", "__WRIT__", NULL};

Test(seq, parses_server_spelling)
{
    int32_t v;
    cr_assert_eq(zkl__seq_parse("0000000000", &v), ZKL_OK);
    cr_assert_eq(v, 0);
    cr_assert_eq(zkl__seq_parse("0000000042", &v), ZKL_OK);
    cr_assert_eq(v, 42);
    cr_assert_eq(zkl__seq_parse("2147483647", &v), ZKL_OK);
    cr_assert_eq(v, 2147483647);
}

Test(seq, parses_negative_after_wrap)
{
    int32_t v;
    cr_assert_eq(zkl__seq_parse("-2147483648", &v), ZKL_OK);
    cr_assert_eq(v, INT32_MIN);
    cr_assert_eq(zkl__seq_parse("-000000001", &v), ZKL_OK);
    cr_assert_eq(v, -1);
}

Test(seq, rejects_malformed)
{
    int32_t v = 7;
    const char *bad[] = {"",
                         "-",
                         "42",
                         "00000000042",
                         "000000004x",
                         "+000000042",
                         " 000000042",
                         "0000000042 ",
                         "2147483648",
                         "-2147483649",
                         "99999999999999999999",
                         "-0000000000",
                         "0x00000010"};
    size_t i;
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++)
        cr_assert_neq(zkl__seq_parse(bad[i], &v), ZKL_OK, "accepted '%s'", bad[i]);
    cr_assert_eq(v, 7, "output written on failure");
    cr_assert_eq(zkl__seq_parse(NULL, &v), ZKL_EINVAL);
}

Test(seq, of_protected_names)
{
    int32_t v;
    cr_assert_eq(zkl__seq_of("_c_4b760570-f501-47b0-b66a-1afeebcbeb00-lock-0000000007", MUTEX, &v),
                 ZKL_OK);
    cr_assert_eq(v, 7);
    cr_assert_eq(zkl__seq_of("_c_292ffe3a-6902-46a2-b6df-760eca50d355-__WRIT__0000000012", RW, &v),
                 ZKL_OK);
    cr_assert_eq(v, 12);
    cr_assert_eq(zkl__seq_of("x-010000065e5d0004-0000000000", MUTEX, &v), ZKL_EINVAL);
    cr_assert_eq(zkl__seq_of("lock-", MUTEX, &v), ZKL_EINVAL);
    cr_assert_eq(zkl__seq_of(NULL, MUTEX, &v), ZKL_EINVAL);
}

Test(seq, sort_key_after_last_marker)
{
    cr_assert_str_eq(zkl__sort_key("_c_x-lock-lock-0000000003", MUTEX), "0000000003");
    cr_assert_str_eq(zkl__sort_key("plain-lock-0000000001", MUTEX), "0000000001");
    cr_assert_str_eq(zkl__sort_key("foreign", MUTEX), "foreign");
    cr_assert_str_eq(zkl__sort_key("_c_a-__READ__0000000005", RW), "0000000005");
    cr_assert_str_eq(zkl__sort_key("_c_a-__WRIT__0000000004", RW), "0000000004");
}

Test(seq, is_protected)
{
    cr_assert(zkl__is_protected("_c_4b760570-f501-47b0-b66a-1afeebcbeb00-lock-0000000000"));
    cr_assert_not(zkl__is_protected("_c_4B760570-f501-47b0-b66a-1afeebcbeb00-lock-0000000000"));
    cr_assert_not(zkl__is_protected("_c_4b760570f501-47b0-b66a-1afeebcbeb00x-lock-0000000000"));
    cr_assert_not(zkl__is_protected("_c_short-lock-0000000000"));
    cr_assert_not(zkl__is_protected("x-010000065e5d0004-0000000000"));
    cr_assert_not(zkl__is_protected(""));
}

Test(seq, sorts_like_curator)
{
    char a[] = "_c_bbbbbbbb-f501-47b0-b66a-1afeebcbeb00-lock-0000000002";
    char b[] = "_c_aaaaaaaa-f501-47b0-b66a-1afeebcbeb00-lock-0000000010";
    char c[] = "x-010000065e5d0004-0000000000"; /* zoo_lock style: whole name, sorts last */
    char d[] = "plain-lock-0000000001";         /* any ...lock-<seq> orders by seq */
    char e[] = "_c_cccccccc-f501-47b0-b66a-1afeebcbeb00-lock--2147483648"; /* wrapped */
    char *names[] = {a, b, c, d, e};
    cr_assert_eq(zkl__sort_names(names, 5, MUTEX), ZKL_OK);
    cr_assert_eq(names[0], e);
    cr_assert_eq(names[1], d);
    cr_assert_eq(names[2], a);
    cr_assert_eq(names[3], b);
    cr_assert_eq(names[4], c);
}

Test(seq, sort_is_stable_for_equal_keys)
{
    /* 5.5 downgrade: a read node shares its writer's sequence; order as listed. */
    char w[] = "_c_aaaaaaaa-f501-47b0-b66a-1afeebcbeb00-__WRIT__0000000003";
    char r[] = "_c_bbbbbbbb-f501-47b0-b66a-1afeebcbeb00-__READ__0000000003";
    char x[] = "_c_cccccccc-f501-47b0-b66a-1afeebcbeb00-__READ__0000000001";
    char *names[] = {r, w, x};
    cr_assert_eq(zkl__sort_names(names, 3, RW), ZKL_OK);
    cr_assert_eq(names[0], x);
    cr_assert_eq(names[1], r);
    cr_assert_eq(names[2], w);
    {
        char *again[] = {w, r, x};
        cr_assert_eq(zkl__sort_names(again, 3, RW), ZKL_OK);
        cr_assert_eq(again[1], w);
        cr_assert_eq(again[2], r);
    }
}

Test(seq, sort_handles_empty_and_one)
{
    char a[] = "lock-0000000000";
    char *one[] = {a};
    cr_assert_eq(zkl__sort_names(NULL, 0, MUTEX), ZKL_OK);
    cr_assert_eq(zkl__sort_names(one, 1, MUTEX), ZKL_OK);
    cr_assert_eq(one[0], a);
}

Test(seq, find_prefix_and_name)
{
    char a[] = "_c_aaaa-lock-0000000001";
    char b[] = "_c_bbbb-lock-0000000002";
    char *names[] = {a, b};
    cr_assert_eq(zkl__find_prefix(names, 2, "_c_bbbb-"), 1);
    cr_assert_eq(zkl__find_prefix(names, 2, "_c_cccc-"), -1);
    cr_assert_eq(zkl__find_name(names, 2, "_c_aaaa-lock-0000000001"), 0);
    cr_assert_eq(zkl__find_name(names, 2, "_c_aaaa-lock-000000000"), -1);
}
