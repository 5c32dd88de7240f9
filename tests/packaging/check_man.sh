#!/usr/bin/env bash
# check_man.sh BUILD SRC - the section 3 man pages (BUILD/man/man3, made by
# scripts/man3) and the headers agree: every function the public headers
# declare (read by the compiler's preprocessor, so comments do not count) has
# a page or a link page, every page or link names a declared function or one
# of the object pages, each link points at a page that is there, and
# mandoc -T lint has nothing to say about any page.
set -uo pipefail
build=$1
src=$2
man=$build/man/man3
fail=0
bad() { echo "man: $*"; fail=1; }
[[ -s $man/pages.txt ]] || { echo "man: no $man/pages.txt (build first)"; echo "man: 0 passed, 1 failed"; exit 1; }

declared=$(cc -E -P -I"$src/include" "$src/include/zklock/zklock.h" |
    grep -oE '\bzkl_[a-z0-9_]+ *\(' | tr -d ' (' | sort -u)
objects="zklock zkl_client zkl_mutex zkl_rwlock zkl_semaphore zkl_multilock zkl_revoke zkl_inspect zkl_async zkl_guard zkl_leader zkl_metrics zkl_status"
n=0
for f in $declared; do
    n=$((n + 1))
    [[ -e $man/$f.3 ]] || bad "$f is declared but has no page ($man/$f.3)"
    grep -q " $f\$" "$man/pages.txt" || bad "$f is in no page's NAME"
done
pages=0
for p in "$man"/*.3; do
    name=$(basename "$p" .3)
    pages=$((pages + 1))
    if grep -qw "$name" <<<"$objects"; then
        continue
    fi
    grep -qx "$name" <<<"$declared" || bad "$name.3 names no declared function"
    target=$(sed -n 's/^\.so man3\/\(.*\)$/\1/p' "$p")
    [[ -n $target && -e $man/$target ]] || bad "$name.3 links to a missing page (${target:-none})"
done
for o in $objects; do
    [[ -e $man/$o.3 ]] || bad "no object page $o.3"
done
if ! command -v mandoc >/dev/null; then
    bad "mandoc not found (scripts/deps installs it)"
else
    lint=$(cd "$build/man" && for o in $objects; do echo "man3/$o.3"; done | xargs mandoc -T lint -W warning 2>&1)
    [[ -z $lint ]] || bad "mandoc -T lint: $lint"
fi
if ((fail)); then
    echo "man: 0 passed, 1 failed"
    exit 1
fi
echo "man: $n declared functions, each with a page; $pages pages and links, each naming one; lint clean"
echo "man: 1 passed, 0 failed"
