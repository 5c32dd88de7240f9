/*
 * excl_log.c - see excl_log.h. Holders write one line per event with one
 * write(2) on an O_APPEND descriptor, so lines of different processes never
 * interleave and their order is the order the kernel appended them. A holder
 * writes "enter" after it has the lock and "exit" before it lets go, so any
 * overlap in the file is a real overlap of holds.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "excl_log.h"

int excl_open(const char *file)
{
    return open(file, O_WRONLY | O_APPEND | O_CREAT | O_TRUNC, 0644);
}

void excl_log(int fd, char kind, const char *event, const char *who, int64_t token)
{
    char line[256];
    int n = snprintf(line, sizeof line, "%c %s %s %lld\n", kind, event, who, (long long)token);
    if (write(fd, line, (size_t)n) != n)
        perror("excl_log");
}

#define MAXW 256

static void fail(excl_report *r, int line, const char *what)
{
    r->violations++;
    if (!r->first_error[0])
        snprintf(r->first_error, sizeof r->first_error, "line %d: %s", line, what);
}

excl_report excl_check(const char *file, int max_shared)
{
    excl_report r;
    FILE *f = fopen(file, "r");
    char kind, event[16], who[128], last_excl[128] = "";
    long long token, last_token = 0;
    int excl = 0, readers = 0, shared = 0;
    char line[512];
    memset(&r, 0, sizeof r);
    if (!f) {
        r.malformed = 1;
        snprintf(r.first_error, sizeof r.first_error, "cannot open %s", file);
        return r;
    }
    while (fgets(line, sizeof line, f)) {
        int enter;
        r.lines++;
        if (sscanf(line, " %c %15s %127s %lld", &kind, event, who, &token) != 4 ||
            !strchr("MWRS", kind) || (strcmp(event, "enter") && strcmp(event, "exit"))) {
            r.malformed++;
            continue;
        }
        enter = strcmp(event, "enter") == 0;
        if (enter)
            r.enters++;
        switch (kind) {
        case 'M':
        case 'W':
            if (enter) {
                if (excl || readers)
                    fail(&r, r.lines, "exclusive hold entered while another hold was inside");
                excl++;
                if (token) {
                    if (token <= last_token)
                        r.token_regressions++;
                    last_token = token;
                }
                if (last_excl[0] && last_excl[0] != who[0]) {
                    if (last_excl[0] == 'c' && who[0] == 'j')
                        r.handoffs_c_to_j++;
                    if (last_excl[0] == 'j' && who[0] == 'c')
                        r.handoffs_j_to_c++;
                }
                snprintf(last_excl, sizeof last_excl, "%s", who);
            } else {
                excl--;
            }
            break;
        case 'R':
            if (enter) {
                /* a downgrader enters R while its own W is inside (5.5 downgrade) */
                if (excl && strcmp(last_excl, who) != 0)
                    fail(&r, r.lines, "read hold entered while a writer was inside");
                readers++;
                if (readers > r.max_readers)
                    r.max_readers = readers;
            } else {
                readers--;
            }
            break;
        case 'S':
            if (enter) {
                shared++;
                if (shared > r.max_shared)
                    r.max_shared = shared;
                if (shared > max_shared)
                    fail(&r, r.lines, "more semaphore holders than leases");
            } else {
                shared--;
            }
            break;
        }
    }
    fclose(f);
    (void)MAXW;
    return r;
}
