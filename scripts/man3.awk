# man3.awk - one public header as a man(7) page (scripts/man3 runs it).
# Variables: page, header, version, date, list (where "page function" lines go).
# The header's first comment is the summary (NAME) and the introduction;
# every later declaration is shown with the comment above it.

function esc(s) {
    gsub(/\\/, "\\e", s)
    if (s ~ /^[.']/)
        s = "\\&" s
    return s
}

function count(s, ch,    n, i) {
    n = 0
    for (i = 1; i <= length(s); i++)
        if (substr(s, i, 1) == ch)
            n++
    return n
}

function ltrim(s) { sub(/^[ \t]+/, "", s); return s }

# A comment line without its markers, keeping the indent after "* ".
function strip(s) {
    sub(/^[ \t]*\/\*+/, "", s)
    sub(/\*\/[ \t]*$/, "", s)
    if (s ~ /^[ \t]*\*( |$)/)
        sub(/^[ \t]*\* ?/, "", s)
    else if (s ~ /^ /)
        sub(/^ /, "", s)
    sub(/[ \t]+$/, "", s)
    return s
}

# Comment lines c[1..n] as man(7) paragraphs: blank lines part paragraphs,
# "- " items are bullets, an indented line starts a tagged paragraph and a
# more indented one continues it.
function prose(c, n,    i, s, k, t, lk, inlist, out) {
    out = ""
    inlist = 0
    lk = -1
    for (i = 1; i <= n; i++) {
        s = c[i]
        if (s ~ /^[ \t]*$/) {
            out = out ".PP\n"
            inlist = 0
            continue
        }
        t = ltrim(s)
        k = length(s) - length(t)
        if (t ~ /^- /) {
            out = out ".IP \\(bu " (k + 2) "\n" esc(substr(t, 3)) "\n"
            inlist = 1
            lk = k
        } else if (inlist && k > lk) {
            out = out esc(t) "\n"
        } else if (k >= 2) {
            out = out ".IP \"\" " k "\n" esc(t) "\n"
            inlist = 1
            lk = k
        } else {
            if (inlist)
                out = out ".PP\n"
            inlist = 0
            out = out esc(t) "\n"
        }
    }
    sub(/^(\.PP\n)+/, "", out) # a paragraph break only between paragraphs
    sub(/(\.PP\n)+$/, "", out)
    return out
}

function decl_name(d,    s) {
    s = d
    gsub(/\n/, " ", s)
    if (s ~ /^#define/) {
        split(s, f, /[ \t(]+/)
        return f[2]
    }
    if (s !~ /^typedef/ && match(s, /zkl_[a-z0-9_]+[ \t]*\(/)) {
        s = substr(s, RSTART, RLENGTH)
        sub(/[ \t]*\($/, "", s)
        nfun++
        fun[nfun] = s
        return s "()"
    }
    if (match(s, /\(\*[a-zA-Z0-9_]+\)/))
        return substr(s, RSTART + 2, RLENGTH - 3)
    sub(/;[^;]*$/, "", s)
    n = split(s, f, /[ \t}*]+/)
    return f[n]
}

function end_decl(    name, text, proto) {
    name = decl_name(decl)
    if (name ~ /\(\)$/) {
        proto = decl
        gsub(/[ \t]*\n[ \t]*/, " ", proto)
        nsyn++
        syn[nsyn] = proto
    }
    if (ncom == 0 && nitem > 0 && prev_decl) { # no comment of its own: with the one before
        head[nitem] = head[nitem] ", " name
        code[nitem] = code[nitem] "\n" decl
    } else {
        nitem++
        head[nitem] = name
        code[nitem] = decl
        text = ncom ? prose(com, ncom) : ""
        body[nitem] = text
    }
    ncom = 0
    decl = ""
    prev_decl = 1
}

BEGIN { nitem = 0; ncom = 0; ntop = 0; top_done = 0; in_com = 0; decl = ""; skip = 0 }

{
    line = $0
    if (in_com) {
        com[++ncom] = strip(line)
        if (line ~ /\*\//) {
            in_com = 0
            if (!top_done) {
                for (i = 1; i <= ncom; i++)
                    top[i] = com[i]
                ntop = ncom
                ncom = 0
                top_done = 1
            }
        }
        next
    }
    if (decl != "") {
        decl = decl "\n" line
        depth += count(line, "{") - count(line, "}")
        if (depth == 0 && line ~ /;[ \t]*(\/\*.*\*\/)?[ \t]*$/)
            end_decl()
        next
    }
    if (line ~ /^#ifdef __cplusplus/) { skip = 1; next }
    if (skip) { if (line ~ /^#endif/) skip = 0; next }
    if (line ~ /^#define ZKL_/) { decl = line; end_decl(); next }
    if (line ~ /^#/) { prev_decl = 0; next }
    if (line ~ /^[ \t]*$/) {
        if (ncom > 0) { # a comment on its own: a paragraph of its own
            nitem++
            head[nitem] = ""
            code[nitem] = ""
            body[nitem] = prose(com, ncom)
        }
        ncom = 0
        prev_decl = 0
        next
    }
    if (line ~ /^[ \t]*\/\*/) {
        ncom = 0
        prev_decl = 0
        com[++ncom] = strip(line)
        if (line !~ /\*\//)
            in_com = 1
        else if (!top_done) {
            top[1] = com[1]
            ntop = 1
            ncom = 0
            top_done = 1
        }
        next
    }
    decl = line
    depth = count(line, "{") - count(line, "}")
    if (depth == 0 && line ~ /;[ \t]*(\/\*.*\*\/)?[ \t]*$/)
        end_decl()
}

END {
    # the summary: the first paragraph of the first comment, after "name.h - "
    summary = ""
    for (i = 1; i <= ntop && top[i] == ""; i++)
        ;
    for (; i <= ntop && top[i] != ""; i++)
        summary = summary (summary == "" ? "" : " ") ltrim(top[i])
    first = i
    sub(/^[^ ]+ - /, "", summary)
    sub(/\.$/, "", summary)
    upper = toupper(page)
    printf ".\\\" %s.3 - made from <%s> by scripts/man3: edit the header, not this.\n", page, header
    printf ".TH %s 3 \"%s\" \"zklock %s\" \"zklock Library Functions\"\n", upper, date, version
    print ".SH NAME"
    names = ""
    for (i = 1; i <= nfun; i++) {
        names = names (i > 1 ? ", " : "") fun[i]
        print page, fun[i] >> list
    }
    if (nfun == 0)
        names = page
    print names " \\- " esc(summary)
    print ".SH LIBRARY"
    print "zklock (libzklock, \\-lzklock; pkg\\-config zklock)"
    print ".SH SYNOPSIS"
    print ".nf"
    print ".B #include <" header ">"
    for (i = 1; i <= nsyn; i++) {
        print ".PP"
        print esc(syn[i])
    }
    print ".fi"
    print ".SH DESCRIPTION"
    for (i = first + 1; i <= ntop; i++)
        rest[i - first] = top[i]
    printf "%s", prose(rest, ntop - first)
    for (i = 1; i <= nitem; i++) {
        if (head[i] != "")
            print ".SS " esc(head[i])
        if (code[i] != "") {
            print ".EX"
            n = split(code[i], cl, /\n/)
            for (j = 1; j <= n; j++)
                print esc(cl[j])
            print ".EE"
        }
        if (body[i] != "") {
            if (code[i] != "")
                print ".PP"
            printf "%s", body[i]
        }
    }
    print ".SH RETURN VALUE"
    print "A call that returns"
    print ".B zkl_status"
    print "returns"
    print ".B ZKL_OK"
    print "(0) on success and a negative status on failure: the errors each call can"
    print "give are listed with it above, their fixed texts come from"
    print ".BR zkl_strerror (3),"
    print "and the detail of the calling thread's last failure from"
    print ".BR zkl_errmsg (3)."
    print ".SH THREADS"
    print "The rules each call states above hold with those of"
    print ".BR zklock (3):"
    print "which thread may call what, which thread runs callbacks, and who owns what."
    print ".SH SEE ALSO"
}
