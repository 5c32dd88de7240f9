#!/usr/bin/env bash
# private-zookeeper.sh OUT ARCHIVE [--local] [--test COPY] OBJECT... -
# zklock's objects and its private copy of the ZooKeeper C client
# (libzookeeper_st.a) as one relocatable object OUT, in which every name
# the ZooKeeper client defines is renamed zkl__zkc_NAME, in its own code
# and in zklock's calls to it (docs/design/transport.md, "One client of
# its own"). A program's libzookeeper_mt (or _st) then never shares a
# name with zklock's copy, in any link shape.
#
#   --local        the renamed names are also made local to OUT (the
#                  installed libzklock.a: nothing of the copy is visible)
#   --test COPY    the tests' build: the copy is written apart, as the
#                  archive COPY, and OUT holds zklock's objects only, so
#                  that ld --wrap of a zkl__zkc_ request (test_sendfail)
#                  sees zklock's calls; and the copy's malloc, calloc,
#                  realloc, strdup and strndup are called as __real_NAME,
#                  so that a test that wraps them (test_oom) fails
#                  zklock's own allocations only, as when the client was a
#                  shared library (tests/support/real_alloc.c has the
#                  fallbacks)
#
# Run by CMakeLists.txt (the build's OBJCOPY and linker in $OBJCOPY, $LD).
set -euo pipefail
usage="usage: private-zookeeper.sh OUT ARCHIVE [--local] [--test COPY] OBJECT..."
out=${1:?$usage}
archive=${2:?$usage}
shift 2
local_names=0 test_copy=""
while (($#)); do
    case $1 in
        --local) local_names=1 ;;
        --test) test_copy=${2:?$usage}; shift ;;
        *) break ;;
    esac
    shift
done
((${#})) || { echo "private-zookeeper.sh: no objects" >&2; exit 2; }
ld=${LD:-ld} objcopy=${OBJCOPY:-objcopy} nm=${NM:-nm}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/zkl-private.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# Every name the archive defines, global or weak: NAME zkl__zkc_NAME.
"$nm" -g --defined-only "$archive" | awk 'NF == 3 { print $3, "zkl__zkc_" $3 }' |
    sort -u >"$tmp/names"
[[ -s $tmp/names ]] || { echo "private-zookeeper.sh: $archive defines nothing" >&2; exit 1; }

"$ld" -r -o "$tmp/own.o" "$@"
"$objcopy" --redefine-syms="$tmp/names" "$tmp/own.o" "$tmp/own-renamed.o"

cp "$tmp/names" "$tmp/copy-names"
if [[ -n $test_copy ]]; then
    printf '%s __real_%s\n' malloc malloc calloc calloc realloc realloc strdup strdup \
        strndup strndup >>"$tmp/copy-names"
fi
"$objcopy" --redefine-syms="$tmp/copy-names" "$archive" "$tmp/copy.a"

if [[ -n $test_copy ]]; then
    mv "$tmp/copy.a" "$test_copy"
    mv "$tmp/own-renamed.o" "$tmp/all.o"
else # (only the members zklock's calls need: ld -r takes what resolves them)
    "$ld" -r -o "$tmp/all.o" "$tmp/own-renamed.o" "$tmp/copy.a"
fi
if ((local_names)); then
    "$objcopy" --wildcard --localize-symbol='zkl__zkc_*' "$tmp/all.o" "$out"
else
    mv "$tmp/all.o" "$out"
fi

# Nothing of the ZooKeeper client's is left defined under its own name.
leaked=$("$nm" -g --defined-only "$out" ${test_copy:+"$test_copy"} | awk 'NF == 3 { print $3 }' |
    grep -Fxf <(awk '{ print $1 }' "$tmp/names") || true)
if [[ -n $leaked ]]; then
    echo "private-zookeeper.sh: $out still defines ZooKeeper names: $(head -5 <<<"$leaked" | tr '\n' ' ')" >&2
    rm -f "$out"
    exit 1
fi
