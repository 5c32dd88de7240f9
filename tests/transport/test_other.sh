#!/usr/bin/env bash
# tests/transport/test_other.sh SOURCE_DIR BUILD_DIR TRANSPORT - the
# transport this tree was not built on (st or mt, docs/design/transport.md)
# builds, and zklock's mutex on it excludes across processes, so that both
# stay usable: the default is st, and mt is the build for programs that use
# libzookeeper_mt themselves.
#
# The whole suite runs on the default transport; this is the other one's
# check in the README's test command: 8 processes of
# benchmarks/procs_harness.c, one session each, contend on one path for
# 3 s, checking a holder word in a file they all map; none may find it
# taken. The checker is checked first: 2 processes on two paths (no
# exclusion between them) must find it taken.
set -euo pipefail
src=$1
transport=$3
build=$2/transport-$transport
st_lib=/usr/lib/x86_64-linux-gnu/libzookeeper_st.so.2
case $transport in
  st) zk_lib=$st_lib
      if [[ ! -e $st_lib ]]; then
        echo "test_other: $st_lib is missing (scripts/deps installs libzookeeper-st2)" >&2
        exit 1
      fi ;;
  mt) zk_lib=-lzookeeper_mt ;;
  *) echo "test_other: TRANSPORT is st or mt, not '$transport'" >&2; exit 2 ;;
esac
me="test_other ($transport)"
connect=$(head -1 "$ZKL_TEST_ZK_DIR/connect")
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Release -DZKL_TRANSPORT="$transport" >/dev/null
cmake --build "$build" --target zklock_static -j2 >/dev/null
cc -O2 -I "$src/include" -o "$work/harness" "$src/benchmarks/procs_harness.c" \
  "$build/libzklock.a" "$zk_lib" -lpthread -lm

# run N SECONDS PATH_PREFIX SAME(1: one path) -> sums "ops errors procs"
run() {
  local n=$1 secs=$2 prefix=$3 same=$4 at i path
  at=$(($(date +%s%3N) + 2000 + n * 50))
  rm -f "$work/shm" "$work"/out.*
  pids=()
  for ((i = 0; i < n; i++)); do
    path=$prefix
    ((same)) || path=$prefix-$i
    HARNESS_SHM=$work/shm timeout 60 "$work/harness" --zk "$connect" --path "$path" \
      --seconds "$secs" --start-at "$at" >"$work/out.$i" &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p"; done
  pids=()
  python3 - "$work" "$n" <<'PY'
import json, sys, glob
rows = [json.loads(open(f).read()) for f in glob.glob(sys.argv[1] + "/out.*")]
assert len(rows) == int(sys.argv[2]), rows
assert all(r["ops"] > 0 for r in rows), rows
print(sum(r["ops"] for r in rows), sum(r["errors"] for r in rows), len(rows))
PY
}

tag=/test-other-$$-$RANDOM
read -r ops errors procs < <(run 2 2 "$tag/apart" 0)
echo "$me: control, 2 processes on two paths: $ops holds, $errors found the word taken"
if ((errors == 0)); then
  echo "$me: FAIL: the holder check saw no overlap where there is no exclusion" >&2
  exit 1
fi
read -r ops errors procs < <(run 8 3 "$tag/one" 1)
echo "$me: 8 processes on one path: $ops holds, $errors found the word taken"
if ((errors != 0)); then
  echo "$me: FAIL: two holders at once" >&2
  exit 1
fi
echo "$me: 1 passed, 0 failed"
