#!/usr/bin/env bash
# tests/packaging/test_install.sh - install a built tree into a temporary
# prefix and use it the way another project would: check the installed files,
# then build a small program against them with pkg-config (shared and static)
# and with find_package(zklock), and run each against the test server.
#
#   test_install.sh BUILD_DIR SOURCE_DIR
#
# The server is the one of $ZKL_TEST_ZK_DIR (its connect file), as for the
# integration tests. Prints "packaging: N passed, M failed"; exits 1 on failure.
set -uo pipefail

if (($# != 2)); then
    echo "usage: $0 BUILD_DIR SOURCE_DIR" >&2
    exit 2
fi
build=$(cd "$1" && pwd) || exit 2
src=$(cd "$2" && pwd) || exit 2
cc=${CC:-cc}
tmp=$(mktemp -d -t zklock-packaging.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
trap 'exit 129' HUP
trap 'exit 130' INT
trap 'exit 143' TERM
prefix=$tmp/prefix
passed=0 failed=0

ok() {
    echo "ok   $1"
    passed=$((passed + 1))
}
not_ok() {
    echo "FAIL $1"
    failed=$((failed + 1))
}
# check NAME COMMAND...: run COMMAND quietly; show its output only if it fails.
check() {
    local name=$1 out
    shift
    if out=$("$@" 2>&1); then
        ok "$name"
    else
        not_ok "$name"
        printf '%s\n' "$out" | sed 's/^/     | /'
    fi
}
finish() {
    echo "packaging: $passed passed, $failed failed"
    ((failed == 0))
    exit
}

# A build with sanitizers installs sanitized libraries; their users need the
# same flags to link and run them.
san_flags=()
grep -q '^ZKL_SANITIZE:BOOL=ON' "$build/CMakeCache.txt" && san_flags=('-fsanitize=address,undefined')
grep -q '^ZKL_TSAN:BOOL=ON' "$build/CMakeCache.txt" && san_flags=(-fsanitize=thread)

if ! out=$(cmake --install "$build" --prefix "$prefix" 2>&1); then
    not_ok "cmake --install"
    printf '%s\n' "$out" | sed 's/^/     | /'
    finish
fi
ok "cmake --install"

# --- the installed files -------------------------------------------------------
# The lib dir is lib, lib64 or lib/<multiarch>, as GNUInstallDirs chose.
libdir=$(dirname "$(find "$prefix" -name libzklock.a -print -quit)")
real=
for f in "$libdir"/libzklock.so.*.*.*; do
    [[ -f "$f" && ! -L "$f" ]] && real=${f##*/}
done
version=${real#libzklock.so.}
major=${version%%.*}
check "static library libzklock.a" test -f "$libdir/libzklock.a"
check "shared library $real" test -f "$libdir/$real" -a ! -L "$libdir/$real"
check "libzklock.so.$major -> $real" test "$(readlink "$libdir/libzklock.so.$major")" = "$real"
check "libzklock.so -> libzklock.so.$major" test "$(readlink "$libdir/libzklock.so")" = "libzklock.so.$major"
check "SONAME libzklock.so.$major" \
    bash -c "readelf -d '$libdir/$real' | grep -q 'SONAME.*\[libzklock.so.$major\]'"
headers_ok=1
for h in "$src"/include/zklock/*.h; do
    cmp -s "$h" "$prefix/include/zklock/$(basename "$h")" || headers_ok=0
done
check "headers include/zklock/*.h" test $headers_ok = 1
check "command bin/zklock" test -x "$prefix/bin/zklock"
check "man page man1/zklock.1" test -n "$(find "$prefix" -path '*/man1/zklock.1')"
check "man pages man3/zklock.3, zkl_mutex.3" test -n "$(find "$prefix" -path '*/man3/zkl_mutex.3')" \
    -a -n "$(find "$prefix" -path '*/man3/zklock.3')"
mandir=$(dirname "$(dirname "$(find "$prefix" -path '*/man3/zklock.3' | head -n 1)")")
# (man-db follows the link page to zkl_mutex.3; mandoc's man names the link)
check "man -w zkl_mutex_acquire finds its page" \
    grep -qE "^$mandir/man3/zkl_mutex(_acquire)?\.3$" <<<"$(MANPATH=$mandir man -w zkl_mutex_acquire 2>&1)"
pcdir=$libdir/pkgconfig
check "pkg-config file zklock.pc" test -f "$pcdir/zklock.pc"
check "pkg-config version $version" \
    test "$(PKG_CONFIG_PATH=$pcdir pkg-config --modversion zklock 2>&1)" = "$version"
cmakedir=$libdir/cmake/zklock
for f in zklockConfig.cmake zklockConfigVersion.cmake zklockTargets.cmake; do
    check "CMake package $f" test -f "$cmakedir/$f"
done
# Another machine has neither our build tree nor necessarily our paths.
check "no build or source paths in the package files" \
    bash -c "! grep -rlF -e '$build' -e '$src' '$cmakedir' '$pcdir'"
check "no absolute paths in the exported link interface" \
    bash -c "! grep 'INTERFACE_LINK_LIBRARIES.*\"/' '$cmakedir/zklockTargets.cmake'"

# --- a program using the installed tree ----------------------------------------
mkdir -p "$tmp/user"
cat >"$tmp/user/prog.c" <<'EOF'
/* Takes and releases a mutex on a fresh path of the test server. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <zklock/zklock.h>

int main(void)
{
    char file[4096], hosts[1024] = "", path[128];
    const char *dir = getenv("ZKL_TEST_ZK_DIR");
    struct timespec now;
    zkl_client *c;
    zkl_mutex *m;
    FILE *f;
    snprintf(file, sizeof file, "%s/connect", dir ? dir : ".");
    if (!(f = fopen(file, "r")) || !fgets(hosts, sizeof hosts, f)) {
        perror(file);
        return 1;
    }
    fclose(f);
    hosts[strcspn(hosts, "\n")] = '\0';
    clock_gettime(CLOCK_REALTIME, &now);
    snprintf(path, sizeof path, "/zklock-packaging/%d-%ld", (int)getpid(), (long)now.tv_nsec);
    if (zkl_client_open(hosts, NULL, &c) != ZKL_OK) {
        fprintf(stderr, "prog: %s\n", zkl_errmsg());
        return 1;
    }
    if (zkl_mutex_create(c, path, &m) != ZKL_OK || zkl_mutex_acquire(m, 10000) != ZKL_OK ||
        zkl_mutex_release(m) != ZKL_OK) {
        fprintf(stderr, "prog: %s\n", zkl_errmsg());
        return 1;
    }
    zkl_mutex_destroy(m);
    zkl_client_close(c);
    printf("%s\n", zkl_strerror(ZKL_OK));
    return 0;
}
EOF
cflags=(-std=c11 -Wall -Wextra -Wpedantic -Werror "${san_flags[@]}")
expected=success # zkl_strerror(ZKL_OK)

# run_prog NAME BINARY [ENV...]: runs it against the server, expects its one line.
run_prog() {
    local name=$1 bin=$2 out
    shift 2
    if [[ -z "${ZKL_TEST_ZK_DIR:-}" || ! -f "$ZKL_TEST_ZK_DIR/connect" ]]; then
        not_ok "$name runs (ZKL_TEST_ZK_DIR/connect is missing)"
        return
    fi
    if out=$(env "$@" timeout 60 "$bin" 2>&1) && [[ "$out" == "$expected" ]]; then
        ok "$name runs"
    else
        not_ok "$name runs"
        printf '%s\n' "$out" | sed 's/^/     | /'
    fi
}
# needs_shared NAME BINARY yes|no: check whether BINARY needs libzklock.so to run.
needs_shared() {
    local neg=""
    [[ $3 == no ]] && neg="!"
    check "$1" bash -c "$neg readelf -d '$2' | grep -q 'NEEDED.*libzklock\\.so'"
}

export PKG_CONFIG_PATH=$pcdir
# Shared: what `pkg-config --cflags --libs` gives.
read -ra pc_flags <<<"$(pkg-config --cflags --libs zklock)"
check "pkg-config shared build" \
    "$cc" "${cflags[@]}" -o "$tmp/user/pc_shared" "$tmp/user/prog.c" "${pc_flags[@]}"
needs_shared "pkg-config shared binary needs libzklock.so" "$tmp/user/pc_shared" yes
run_prog "pkg-config shared" "$tmp/user/pc_shared" LD_LIBRARY_PATH="$libdir"
# Static: libzklock.a and what it needs must come from `pkg-config --static`
# alone (Libs.private); libc stays shared, and so does the ZooKeeper client
# on the st transport (Debian ships libzookeeper_st as a shared library
# only: Libs.private names its file), so only -lzklock is made static.
read -ra pc_static <<<"$(pkg-config --cflags --libs --static zklock)"
for i in "${!pc_static[@]}"; do
    [[ ${pc_static[i]} == -lzklock ]] && pc_static[i]="-Wl,-Bstatic -lzklock -Wl,-Bdynamic"
done
read -ra pc_static <<<"${pc_static[*]}"
check "pkg-config --static build" "$cc" "${cflags[@]}" -o "$tmp/user/pc_static" \
    "$tmp/user/prog.c" "${pc_static[@]}"
needs_shared "pkg-config --static binary does not need libzklock.so" "$tmp/user/pc_static" no
run_prog "pkg-config --static" "$tmp/user/pc_static"
unset PKG_CONFIG_PATH

# find_package(zklock) from a project of its own.
cat >"$tmp/user/CMakeLists.txt" <<'EOF'
cmake_minimum_required(VERSION 3.18)
project(zklock_user C)
find_package(zklock 0.1 REQUIRED)
add_executable(cm_shared prog.c)
target_link_libraries(cm_shared PRIVATE zklock::zklock)
add_executable(cm_static prog.c)
target_link_libraries(cm_static PRIVATE zklock::zklock_static)
foreach(t cm_shared cm_static)
  set_target_properties(${t} PROPERTIES C_STANDARD 11 C_EXTENSIONS OFF)
  target_compile_options(${t} PRIVATE -Wall -Wextra -Wpedantic -Werror)
endforeach()
EOF
check "find_package(zklock) configure" cmake -S "$tmp/user" -B "$tmp/user/build" \
    -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_C_COMPILER="$cc" \
    -DCMAKE_C_FLAGS="${san_flags[*]}" -DCMAKE_EXE_LINKER_FLAGS="${san_flags[*]}"
check "find_package(zklock) build" cmake --build "$tmp/user/build"
needs_shared "zklock::zklock binary needs libzklock.so" "$tmp/user/build/cm_shared" yes
run_prog "zklock::zklock" "$tmp/user/build/cm_shared" LD_LIBRARY_PATH="$libdir"
needs_shared "zklock::zklock_static binary does not need libzklock.so" \
    "$tmp/user/build/cm_static" no
run_prog "zklock::zklock_static" "$tmp/user/build/cm_static"

finish
