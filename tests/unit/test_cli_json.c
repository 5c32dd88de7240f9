/*
 * test_cli_json.c - the command's JSON values (cli/json.h): UTF-8 text kept
 * as it is, control characters escaped, data that is not UTF-8 in base64.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"

/* What fn writes for s[0..len), as a string (malloc'd). */
static char *written(void (*fn)(FILE *, const char *, size_t), const char *s, size_t len)
{
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    cr_assert_not_null(f);
    fn(f, s, len);
    fclose(f);
    return buf;
}

static void expect(void (*fn)(FILE *, const char *, size_t), const char *s, size_t len,
                   const char *want)
{
    char *got = written(fn, s, len);
    cr_assert_str_eq(got, want);
    free(got);
}

Test(cli_json, utf8_text_is_kept_as_it_is)
{
    expect(zkl_cli_json_string, "/x/js\xc3\xb6n", 8, "\"/x/js\xc3\xb6n\"");
    expect(zkl_cli_json_string, "\xe2\x82\xac \xf0\x9f\x94\x92", 8,
           "\"\xe2\x82\xac \xf0\x9f\x94\x92\"");
}

Test(cli_json, quotes_backslashes_and_controls_are_escaped)
{
    expect(zkl_cli_json_string, "a\"b\\c", 5, "\"a\\\"b\\\\c\"");
    expect(zkl_cli_json_string, "\n\t\r\b\f\x01", 6, "\"\\n\\t\\r\\b\\f\\u0001\"");
    expect(zkl_cli_json_string, "a\0b", 3, "\"a\\u0000b\"");
    expect(zkl_cli_json_string, "\x7f", 1, "\"\x7f\""); /* DEL needs no escape in JSON */
}

Test(cli_json, a_byte_that_is_not_utf8_in_a_string_is_u_fffd)
{
    expect(zkl_cli_json_string, "a\xff", 2, "\"a\xef\xbf\xbd\"");
}

Test(cli_json, utf8_validity)
{
    cr_assert(zkl_cli_utf8_valid("", 0));
    cr_assert(zkl_cli_utf8_valid("10.0.0.5", 8));
    cr_assert(zkl_cli_utf8_valid("\xf0\x9f\x98\x80", 4));
    cr_assert(!zkl_cli_utf8_valid("\xc0\xaf", 2), "overlong");
    cr_assert(!zkl_cli_utf8_valid("\xe0\x80\xaf", 3), "overlong");
    cr_assert(!zkl_cli_utf8_valid("\xed\xa0\x80", 3), "surrogate");
    cr_assert(!zkl_cli_utf8_valid("\xf4\x90\x80\x80", 4), "above U+10FFFF");
    cr_assert(!zkl_cli_utf8_valid("\xc3", 1), "cut short");
    cr_assert(!zkl_cli_utf8_valid("\x80", 1), "a lone continuation byte");
}

Test(cli_json, data_is_text_when_it_is_utf8_else_base64)
{
    expect(zkl_cli_json_data, "10.0.0.5", 8, "\"data\":\"10.0.0.5\",\"data_encoding\":\"utf-8\"");
    expect(zkl_cli_json_data, "\xff", 1, "\"data\":\"/w==\",\"data_encoding\":\"base64\"");
    expect(zkl_cli_json_data,
           "\xff"
           "f",
           2, "\"data\":\"/2Y=\",\"data_encoding\":\"base64\"");
    expect(zkl_cli_json_data,
           "\xff"
           "fo",
           3, "\"data\":\"/2Zv\",\"data_encoding\":\"base64\"");
    expect(zkl_cli_json_data,
           "\xff"
           "foob",
           5, "\"data\":\"/2Zvb2I=\",\"data_encoding\":\"base64\"");
}
