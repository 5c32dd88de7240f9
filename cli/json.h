/*
 * json.h - the JSON the command writes (zklock --list --json): one string
 * value, escaped.
 */
#ifndef ZKL_CLI_JSON_H
#define ZKL_CLI_JSON_H

#include <stddef.h>
#include <stdio.h>

/*
 * Write s[0..len) to f as a JSON string, quotes included. Bytes may be
 * anything (lock node data is binary): " and \ are escaped, newline and tab
 * are \n and \t, and every other byte outside printable ASCII is \u00XX (its
 * Latin-1 reading), so that the output is always valid UTF-8 and each byte
 * can be read back.
 */
void zkl_cli_json_string(FILE *f, const char *s, size_t len);

#endif
