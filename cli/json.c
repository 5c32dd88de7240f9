/*
 * json.c - a JSON string value for the command's --list --json (json.h).
 */
#include "json.h"

void zkl_cli_json_string(FILE *f, const char *s, size_t len)
{
    size_t i;
    putc('"', f);
    for (i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch == '"' || ch == '\\') {
            putc('\\', f);
            putc(ch, f);
        } else if (ch == '\n') {
            fputs("\\n", f);
        } else if (ch == '\t') {
            fputs("\\t", f);
        } else if (ch < 0x20 || ch >= 0x7f) {
            fprintf(f, "\\u%04x", ch);
        } else {
            putc(ch, f);
        }
    }
    putc('"', f);
}
