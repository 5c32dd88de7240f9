/*
 * fuzz_seq.c - libFuzzer target for the node name parsers of src/base/seq.c:
 * zkl__seq_parse, zkl__seq_of, zkl__sort_key and zkl__is_protected. The input
 * is one node name. Besides "no crash, no undefined behaviour" it checks:
 *  - seq_parse accepts exactly the server's %010d spelling of an int32: what it
 *    accepts prints back to the same text, and a rejection leaves *out alone;
 *  - every int32 the server can print parses back to itself (the first four
 *    input bytes pick one), including the negative ones after the counter wraps;
 *  - sort_key is the text after the last occurrence of each marker in turn (a
 *    naive search here, to compare with), for Curator's, kazoo's and no markers;
 *  - seq_of succeeds exactly when a marker was found and its key parses;
 *  - is_protected matches "_c_" + lowercase uuid + "-" character by character.
 * A C and a Java contender must agree on these, or both may think they hold.
 */
#include "fuzz_check.h"
#include "base/seq.h"

static const char *const MUTEX[] = {"lock-", NULL};
static const char *const RW[] = {"__READ__", "__WRIT__", NULL};
static const char *const LEASE[] = {"lease-", NULL};
static const char *const KAZOO[] = {"__lock__", NULL};
static const char *const NONE[] = {NULL};
static const char *const *const SETS[] = {MUTEX, RW, LEASE, KAZOO, NONE, NULL};

/* The key by brute force: each marker's last occurrence, scanning from the end. */
static const char *naive_key(const char *name, const char *const *markers)
{
    const char *key = name;
    for (; *markers; markers++) {
        size_t m = strlen(*markers), n = strlen(key), i;
        for (i = n >= m ? n - m + 1 : 0; i-- > 0;) {
            if (memcmp(key + i, *markers, m) == 0) {
                key += i + m;
                break;
            }
        }
    }
    return key;
}

static int naive_protected(const char *name)
{
    static const char tmpl[] = "_c_xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx-";
    size_t i;
    for (i = 0; tmpl[i]; i++) {
        char c = name[i]; /* stops at the NUL: it matches no template character */
        int hex = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
        if (tmpl[i] == 'x' ? !hex : c != tmpl[i])
            return 0;
    }
    return 1;
}

static void check_parse(const char *text)
{
    int32_t v = 12345;
    char again[16];
    if (zkl__seq_parse(text, &v) != ZKL_OK) {
        FUZZ_CHECK(v == 12345, "rejected '%.60s' but wrote %d", text, (int)v);
        return;
    }
    snprintf(again, sizeof again, "%010d", (int)v);
    FUZZ_CHECK(strcmp(again, text) == 0, "accepted '%.60s' as %d", text, (int)v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *name = fuzz_cstr(data, size);
    size_t s;

    check_parse(name);
    if (size >= 4) {
        int32_t want, got = 0;
        char text[16];
        memcpy(&want, data, sizeof want);
        snprintf(text, sizeof text, "%010d", (int)want);
        FUZZ_CHECK(zkl__seq_parse(text, &got) == ZKL_OK && got == want, "'%s' did not parse", text);
    }
    for (s = 0; SETS[s]; s++) {
        const char *key = zkl__sort_key(name, SETS[s]);
        int32_t v = 777, w = 0;
        int ok;
        FUZZ_CHECK(key == naive_key(name, SETS[s]), "key of '%.80s' is '%.80s'", name, key);
        check_parse(key);
        ok = zkl__seq_of(name, SETS[s], &v) == ZKL_OK;
        FUZZ_CHECK(ok == (key != name && zkl__seq_parse(key, &w) == ZKL_OK),
                   "seq_of('%.80s') = %d disagrees with its key '%.80s'", name, ok, key);
        FUZZ_CHECK(ok ? v == w : v == 777, "seq_of('%.80s') gave %d", name, (int)v);
    }
    FUZZ_CHECK(!zkl__is_protected(name) == !naive_protected(name), "is_protected('%.80s') = %d",
               name, zkl__is_protected(name));
    free(name);
    return 0;
}
