#!/usr/bin/env bash
# test_deb.sh SRC - the Debian packages (debian/), as a user meets them:
#   1. build them with dpkg-buildpackage -us -uc -b from a copy of the tree;
#   2. lintian: no error and no warning;
#   3. install them on this machine with dpkg (removed again at the end,
#      pass or fail, unless they were installed before the test);
#   4. build examples/fencing.c against the installed -dev package, with
#      pkg-config and with CMake's find_package, and run both against the
#      suite's server ($ZKL_TEST_ZK_DIR/connect);
#   5. zklock --version, man -w zklock and man -w zkl_mutex_acquire.
# Needs root for dpkg -i (as CI and scripts/test run). Prints
# "deb: N passed, M failed"; exits 1 on failure.
set -uo pipefail
src=$(cd "${1:?usage: test_deb.sh SRC}" && pwd)
passed=0
failed=0
ok() { echo "ok   $1"; passed=$((passed + 1)); }
not_ok() { echo "FAIL $1"; failed=$((failed + 1)); }
check() {
    local name=$1 out
    shift
    if out=$("$@" 2>&1); then ok "$name"; else not_ok "$name"; printf '%s\n' "$out" | tail -n 30; fi
}
finish() {
    echo "deb: $passed passed, $failed failed"
    ((failed == 0))
    exit $?
}

if ((EUID != 0)); then
    echo "test_deb: needs root for dpkg -i (skipped)"
    exit 77
fi
dir=${ZKL_TEST_ZK_DIR:?ZKL_TEST_ZK_DIR is not set (run through ctest)}
zk=$(head -n 1 "$dir/connect")
tmp=$(mktemp -d -t zklock-deb.XXXXXX)
pkgs=(libzklock0 libzklock-dev zklock)
installed_before=()
for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" &&
        installed_before+=("$p")
done
cleanup() {
    if ((${#installed_before[@]} == 0)); then
        dpkg -r "${pkgs[@]}" >/dev/null 2>&1 || true
    fi
    rm -rf "$tmp"
}
trap cleanup EXIT

# 1. the packages, from the tree's tracked files (or all of it, outside git)
mkdir -p "$tmp/src"
if git -C "$src" rev-parse --git-dir >/dev/null 2>&1; then
    (cd "$src" && git ls-files -z --cached --others --exclude-standard | tar --null -T - -cf -) |
        tar -xf - -C "$tmp/src"
else
    (cd "$src" && tar --exclude='./build*' -cf - .) | tar -xf - -C "$tmp/src"
fi
# The build needs libzookeeper-st-dev (debian/control), which conflicts with
# the libzookeeper-mt-dev this machine's tests use: unless it is installed,
# the build skips the build-dependency check (-d) and takes the same
# package's files from the .deb scripts/deps unpacked (debian/rules,
# ZKL_ST_ROOT).
build_env=() build_flags=()
arch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
if [[ ! -f /usr/lib/$arch/libzookeeper_st.a ]]; then
    build_env=(ZKL_ST_ROOT="$src/.deps/zookeeper-st")
    build_flags=(-d)
fi
check "dpkg-buildpackage -us -uc -b" \
    bash -c "cd '$tmp/src' && env ${build_env[*]} dpkg-buildpackage -us -uc -b ${build_flags[*]} -j$(nproc)"
changes=$(ls "$tmp"/zklock_*.changes 2>/dev/null | head -n 1)
for p in "${pkgs[@]}"; do
    check "package $p built" test -n "$(ls "$tmp/${p}"_*.deb 2>/dev/null)"
done
((failed == 0)) || finish

# 2. lintian, and the private ZooKeeper client: named in Built-Using, and
# no ZooKeeper library needed by the shared library
check "lintian: no errors, no warnings" lintian --fail-on error,warning "$changes"
for p in "${pkgs[@]}"; do
    check "$p: Built-Using names the zookeeper source" bash -c \
        "dpkg-deb -f '$(ls "$tmp/${p}"_*.deb | head -n 1)' Built-Using | grep -q '^zookeeper (= '"
done

# 3. install
debs=()
for p in "${pkgs[@]}"; do debs+=("$(ls "$tmp/${p}"_*.deb | head -n 1)"); done
check "dpkg -i ${pkgs[*]}" dpkg -i "${debs[@]}"
check "libzklock.so.0 is known to the loader" bash -c "ldconfig -p | grep -q 'libzklock.so.0 '"
check "libzklock.so.0 needs no ZooKeeper library" bash -c \
    "lib=\$(ldconfig -p | awk '/libzklock.so.0 /{print \$NF; exit}'); readelf -d \"\$lib\" | grep NEEDED | grep -qv zookeeper && ! readelf -d \"\$lib\" | grep NEEDED | grep -q zookeeper"

# 4. an example against the installed packages, two ways, run on the server
mkdir -p "$tmp/user"
cp "$src/examples/fencing.c" "$tmp/user/"
check "pkg-config --cflags --libs zklock: build" bash -c \
    "cc -o '$tmp/user/pc' '$tmp/user/fencing.c' \$(pkg-config --cflags --libs zklock) -pthread"
check "pkg-config build links the installed libzklock.so.0" bash -c "ldd '$tmp/user/pc' | grep -qE 'libzklock.so.0 => /(usr/)?lib/'"
check "pkg-config build runs against the server" timeout 120 "$tmp/user/pc" "$zk" "/zklock-test-deb/$$-pc"
cat >"$tmp/user/CMakeLists.txt" <<'EOF'
cmake_minimum_required(VERSION 3.16)
project(zklock_user C)
find_package(zklock REQUIRED)
add_executable(fencing fencing.c)
target_link_libraries(fencing PRIVATE zklock::zklock)
EOF
check "find_package(zklock): configure and build" bash -c \
    "cmake -S '$tmp/user' -B '$tmp/user/build' >/dev/null && cmake --build '$tmp/user/build' >/dev/null"
check "find_package build runs against the server" \
    timeout 120 "$tmp/user/build/fencing" "$zk" "/zklock-test-deb/$$-cmake"

# 5. the command and the manual
check "zklock --version" bash -c "zklock --version | grep -q ."
check "man -w zklock" bash -c "man -w zklock | grep -q '/usr/share/man/man1/zklock.1'"
check "man -w zkl_mutex_acquire" bash -c "man -w zkl_mutex_acquire | grep -q '/usr/share/man/man3/'"
finish
