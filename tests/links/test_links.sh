#!/usr/bin/env bash
# test_links.sh BUILD_DIR SRC_DIR EXCL_CHECK [SHAPE...] - zklock beside
# another user of ZooKeeper in one process, in every link shape a program
# takes (issue 55): the tree of BUILD_DIR is installed into a temporary
# prefix, and each shape is a program built against it as a user builds
# one (cc with pkg-config, or CMake's find_package), with the other user
# on the system's libzookeeper_mt (tests/links/other.c) and zklock's
# mutex (tests/links/lock.c). Each shape runs in both calling orders
# (lock-first, other-first), as two processes at once on one lock path
# against the test server ($ZKL_TEST_ZK_DIR/connect). A run passes when
# both processes exit 0 within $LINKS_TIMEOUT seconds (default 60: the
# other user's synchronous calls completed, zklock's calls succeeded) and
# EXCL_CHECK finds no overlap of the two processes' holds.
#
# The shapes (all, or those named):
#   prog-before, prog-after     the program calls libzookeeper_mt itself,
#                               linked ahead of zklock, or after it
#   lib-before, lib-after       a shared library of the program's uses it
#   plugin-local, plugin-global the program links zklock and dlopen()s a
#                               plugin that uses libzookeeper_mt
#   zkplugin-local,             zklock itself in a plugin dlopen()ed with
#   zkplugin-global             RTLD_GLOBAL, then a plugin that uses
#                               libzookeeper_mt, RTLD_LOCAL or RTLD_GLOBAL
#     (each of the above twice: with -Wl,--as-needed and --no-as-needed)
#   pc-static                   pkg-config --static --libs zklock, as is
#   static-zklock               libzklock.a (-Bstatic) beside libzookeeper_mt
#   full-static                 cc -static: libzklock.a, libzookeeper_mt.a
#   cmake-shared, cmake-static  find_package(zklock): zklock::zklock and
#                               zklock::zklock_static beside libzookeeper_mt
#
# LINKS_PREFIX=DIR uses a tree already installed there instead of
# installing BUILD_DIR (to try an older build). Prints "links: N passed,
# M failed"; exits 1 on failure.
set -uo pipefail
if (($# < 3)); then
    echo "usage: $0 BUILD_DIR SRC_DIR EXCL_CHECK [SHAPE...]" >&2
    exit 2
fi
build=$(cd "$1" && pwd) || exit 2
src=$(cd "$2" && pwd) || exit 2
excl_check=$3
shift 3
here=$src/tests/links
cc=${CC:-cc}
limit=${LINKS_TIMEOUT:-60}
zk=$(head -n 1 "${ZKL_TEST_ZK_DIR:?ZKL_TEST_ZK_DIR is not set (run through ctest)}/connect")
tmp=$(mktemp -d -t zklock-links.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
trap 'exit 129' HUP
trap 'exit 130' INT
trap 'exit 143' TERM
passed=0 failed=0
ok() { echo "ok   $1"; passed=$((passed + 1)); }
not_ok() { echo "FAIL $1"; failed=$((failed + 1)); }
finish() {
    echo "links: $passed passed, $failed failed"
    ((failed == 0))
    exit
}

prefix=${LINKS_PREFIX:-$tmp/prefix}
if [[ -z ${LINKS_PREFIX:-} ]] && ! out=$(cmake --install "$build" --prefix "$prefix" 2>&1); then
    not_ok "cmake --install"
    printf '%s\n' "$out" | tail -n 20
    finish
fi
libdir=$(dirname "$(find "$prefix" -name zklock.pc | head -n 1)")/..
libdir=$(cd "$libdir" && pwd)
export PKG_CONFIG_PATH=$libdir/pkgconfig
export LD_LIBRARY_PATH=$libdir:$tmp
zk_inc=(-I"$here" -I"$src/tests/support" -DTHREADED)
pc_cflags=$(pkg-config --cflags zklock)
pc_libs=$(pkg-config --libs zklock)

# Parts built once: the exclusion log, the other user as a shared library
# and as a plugin, zklock's part as a plugin.
build_parts() {
    "$cc" -O1 -c -fPIC "${zk_inc[@]}" -o "$tmp/excl_log.o" "$src/tests/support/excl_log.c" &&
        "$cc" -O1 -shared -fPIC "${zk_inc[@]}" -o "$tmp/libother.so" "$here/other.c" \
            -Wl,--no-as-needed -lzookeeper_mt &&
        cp "$tmp/libother.so" "$tmp/other-plugin.so" &&
        "$cc" -O1 -shared -fPIC "${zk_inc[@]}" $pc_cflags -o "$tmp/lock-plugin.so" "$here/lock.c" \
            "$tmp/excl_log.o" $pc_libs
}
if ! out=$(build_parts 2>&1); then
    not_ok "the shapes' parts build"
    printf '%s\n' "$out" | tail -n 20
    finish
fi

# shape_build NAME AS_NEEDED: the program of shape NAME in $tmp/NAME-AS_NEEDED,
# and the extra arguments it runs with in $tmp/NAME-AS_NEEDED.args.
shape_build() {
    local name=$1 an=$2 out=$tmp/$1-$2 args=() both=(-DLOCK_LINKED -DOTHER_LINKED)
    local app=("$here/app.c" "${zk_inc[@]}" $pc_cflags)
    local lnk=(-Wl,--"$an")
    case $name in
        prog-before) "$cc" -o "$out" "${app[@]}" "${both[@]}" "$here/lock.c" "$here/other.c" \
            "$tmp/excl_log.o" "${lnk[@]}" -lzookeeper_mt $pc_libs ;;
        prog-after) "$cc" -o "$out" "${app[@]}" "${both[@]}" "$here/lock.c" "$here/other.c" \
            "$tmp/excl_log.o" "${lnk[@]}" $pc_libs -lzookeeper_mt ;;
        lib-before) "$cc" -o "$out" "${app[@]}" "${both[@]}" "$here/lock.c" "$tmp/excl_log.o" \
            "${lnk[@]}" -L"$tmp" -lother $pc_libs ;;
        lib-after) "$cc" -o "$out" "${app[@]}" "${both[@]}" "$here/lock.c" "$tmp/excl_log.o" \
            "${lnk[@]}" $pc_libs -L"$tmp" -lother ;;
        plugin-local | plugin-global)
            "$cc" -o "$out" "${app[@]}" -DLOCK_LINKED "$here/lock.c" "$tmp/excl_log.o" "${lnk[@]}" \
                $pc_libs -ldl
            args=(--other-plugin "$tmp/other-plugin.so" "${name#plugin-}") ;;
        zkplugin-local | zkplugin-global)
            "$cc" -o "$out" "${app[@]}" "${lnk[@]}" -ldl
            args=(--lock-plugin "$tmp/lock-plugin.so" global
                --other-plugin "$tmp/other-plugin.so" "${name#zkplugin-}") ;;
        pc-static) "$cc" -o "$out" "${app[@]}" "${both[@]}" "$here/lock.c" "$here/other.c" \
            "$tmp/excl_log.o" $(pkg-config --static --libs zklock) -lzookeeper_mt ;;
        static-zklock) "$cc" -o "$out" "${app[@]}" "${both[@]}" "$here/lock.c" "$here/other.c" \
            "$tmp/excl_log.o" $(pkg-config --static --libs zklock |
                sed 's/-lzklock/-Wl,-Bstatic -lzklock -Wl,-Bdynamic/') -lzookeeper_mt ;;
        full-static) "$cc" -static -o "$out" "${app[@]}" "${both[@]}" "$here/lock.c" \
            "$here/other.c" "$tmp/excl_log.o" "$libdir/libzklock.a" -lzookeeper_mt -lpthread -lm ;;
        cmake-shared | cmake-static)
            local target=zklock::zklock
            [[ $name == cmake-static ]] && target=zklock::zklock_static
            mkdir -p "$out.src"
            cat >"$out.src/CMakeLists.txt" <<EOF
cmake_minimum_required(VERSION 3.16)
project(links C)
find_package(zklock REQUIRED)
find_library(ZOOKEEPER_MT zookeeper_mt REQUIRED)
add_executable(app "$here/app.c" "$here/lock.c" "$here/other.c" "$tmp/excl_log.o")
target_include_directories(app PRIVATE "$here" "$src/tests/support")
target_compile_definitions(app PRIVATE THREADED LOCK_LINKED OTHER_LINKED)
target_link_libraries(app PRIVATE $target \${ZOOKEEPER_MT})
EOF
            cmake -S "$out.src" -B "$out.build" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null &&
                cmake --build "$out.build" >/dev/null && cp "$out.build/app" "$out" ;;
        *) echo "unknown shape $name" >&2; return 2 ;;
    esac || return 1
    printf '%s\n' "${args[@]}" >"$out.args"
}

# shape_run NAME AS_NEEDED ORDER: two processes on one lock path; both exit
# 0 in time, and their holds never overlap.
shape_run() {
    local name=$1 an=$2 order=$3 bin=$tmp/$1-$2 path log pids=() i rc=0 args=()
    path=/zklock-links/$name-$an-$order-$$
    log=$tmp/$name-$an-$order.log
    : >"$log"
    mapfile -t args <"$bin.args"
    for i in 1 2; do
        timeout -k 5 "$limit" "$bin" "$zk" "$path" "$log" "p$i" "$order" "${args[@]}" \
            >"$log.out$i" 2>&1 &
        pids+=($!)
    done
    for i in 0 1; do
        wait "${pids[i]}" || { rc=$?; echo "     | process $((i + 1)) exited $rc$( ((rc == 124)) && echo ' (timed out: a call hung)')"; }
    done
    ((rc == 0)) || { cat "$log.out1" "$log.out2" | head -n 10 | sed 's/^/     | /'; return 1; }
    if ! out=$("$excl_check" "$log" 2>&1) || [[ $(grep -c enter "$log") != 12 ]]; then
        echo "     | exclusion: $out ($(grep -c enter "$log") holds)"
        return 1
    fi
}

shapes=("$@")
if ((${#shapes[@]} == 0)); then
    shapes=(prog-before prog-after lib-before lib-after plugin-local plugin-global
        zkplugin-local zkplugin-global pc-static static-zklock full-static cmake-shared cmake-static)
fi
for name in "${shapes[@]}"; do
    case $name in
        prog-* | lib-* | plugin-* | zkplugin-*) needed=(as-needed no-as-needed) ;;
        *) needed=(default) ;;
    esac
    for an in "${needed[@]}"; do
        label=$name${an/#default/}
        [[ $an == default ]] || label="$name ($an)"
        if [[ $an == default ]]; then an=no-as-needed; fi
        if ! out=$(shape_build "$name" "$an" 2>&1); then
            not_ok "$label: build"
            printf '%s\n' "$out" | tail -n 8 | sed 's/^/     | /'
            continue
        fi
        for order in lock-first other-first; do
            if out=$(shape_run "$name" "$an" "$order" 2>&1); then
                ok "$label, $order"
            else
                not_ok "$label, $order"
                printf '%s\n' "$out"
            fi
        done
    done
done
finish
