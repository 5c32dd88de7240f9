/*
 * json.c - JSON values for the command's --list --json (json.h).
 */
#include "json.h"

/* The length of the UTF-8 sequence at s[0..left), or 0 if it is not a valid one. */
static size_t utf8_seq(const unsigned char *s, size_t left)
{
    unsigned cp;
    size_t n, i;
    if (s[0] < 0x80)
        return 1;
    if (s[0] >= 0xc2 && s[0] <= 0xdf) {
        n = 2;
        cp = s[0] & 0x1fu;
    } else if (s[0] >= 0xe0 && s[0] <= 0xef) {
        n = 3;
        cp = s[0] & 0x0fu;
    } else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
        n = 4;
        cp = s[0] & 0x07u;
    } else {
        return 0; /* a continuation byte, 0xc0/0xc1 (overlong) or above 0xf4 */
    }
    if (left < n)
        return 0;
    for (i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3fu);
    }
    if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10ffff ||
        (cp >= 0xd800 && cp <= 0xdfff))
        return 0; /* overlong, beyond Unicode, or a surrogate */
    return n;
}

bool zkl_cli_utf8_valid(const char *s, size_t len)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0, n;
    while (i < len) {
        if ((n = utf8_seq(u + i, len - i)) == 0)
            return false;
        i += n;
    }
    return true;
}

void zkl_cli_json_string(FILE *f, const char *s, size_t len)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0, n;
    putc('"', f);
    while (i < len) {
        unsigned char ch = u[i];
        if ((n = utf8_seq(u + i, len - i)) == 0) {
            fputs("\xef\xbf\xbd", f); /* U+FFFD for a byte that is not UTF-8 */
            i++;
            continue;
        }
        if (n > 1)
            fwrite(u + i, 1, n, f);
        else if (ch == '"' || ch == '\\')
            fprintf(f, "\\%c", ch);
        else if (ch == '\n')
            fputs("\\n", f);
        else if (ch == '\t')
            fputs("\\t", f);
        else if (ch == '\r')
            fputs("\\r", f);
        else if (ch == '\b')
            fputs("\\b", f);
        else if (ch == '\f')
            fputs("\\f", f);
        else if (ch < 0x20)
            fprintf(f, "\\u%04x", ch);
        else
            putc(ch, f);
        i += n;
    }
    putc('"', f);
}

static void base64(FILE *f, const unsigned char *p, size_t len)
{
    static const char abc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t i;
    putc('"', f);
    for (i = 0; i + 2 < len; i += 3) {
        unsigned v = (unsigned)p[i] << 16 | (unsigned)p[i + 1] << 8 | p[i + 2];
        fprintf(f, "%c%c%c%c", abc[v >> 18], abc[(v >> 12) & 63], abc[(v >> 6) & 63], abc[v & 63]);
    }
    if (len - i == 1) {
        unsigned v = (unsigned)p[i] << 16;
        fprintf(f, "%c%c==", abc[v >> 18], abc[(v >> 12) & 63]);
    } else if (len - i == 2) {
        unsigned v = (unsigned)p[i] << 16 | (unsigned)p[i + 1] << 8;
        fprintf(f, "%c%c%c=", abc[v >> 18], abc[(v >> 12) & 63], abc[(v >> 6) & 63]);
    }
    putc('"', f);
}

void zkl_cli_json_data(FILE *f, const char *data, size_t len)
{
    bool text = zkl_cli_utf8_valid(data, len);
    fputs("\"data\":", f);
    if (text)
        zkl_cli_json_string(f, data, len);
    else
        base64(f, (const unsigned char *)data, len);
    fprintf(f, ",\"data_encoding\":\"%s\"", text ? "utf-8" : "base64");
}
