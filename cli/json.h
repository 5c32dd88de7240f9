/*
 * json.h - the JSON the command writes (zklock --list --json): string values
 * that keep their UTF-8 text, and node data that keeps its bytes.
 */
#ifndef ZKL_CLI_JSON_H
#define ZKL_CLI_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* Whether s[0..len) is valid UTF-8 (no overlong forms, surrogates or code
 * points above U+10FFFF; NUL is valid). */
bool zkl_cli_utf8_valid(const char *s, size_t len);

/*
 * Write s[0..len) to f as a JSON string, quotes included, its UTF-8 text as
 * it is: only " and \ and the control characters are escaped (\n, \t, \r,
 * \b, \f, else \u00XX). A byte that is not part of valid UTF-8 becomes
 * U+FFFD (ZooKeeper paths are UTF-8; for data, see zkl_cli_json_data).
 */
void zkl_cli_json_string(FILE *f, const char *s, size_t len);

/*
 * Write node data as two members, "data" and "data_encoding": the text and
 * "utf-8" when the bytes are valid UTF-8, else base64 (RFC 4648, with
 * padding) and "base64", so that every byte can be read back.
 */
void zkl_cli_json_data(FILE *f, const char *data, size_t len);

#endif
