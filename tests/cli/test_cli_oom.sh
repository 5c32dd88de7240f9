#!/usr/bin/env bash
# test_cli_oom.sh - the zklock command running out of memory: a build of it
# (zklock_cli_oom, see tests/support/oom_env.c) fails its Nth allocation in
# run N, for N = 1, 2, ... until a run needs no failure, in three scenarios:
# a free lock, a held lock with -w 0 (the conflict path) and --list. Each
# run must exit with a status the manual documents (COMMAND's 0, the conflict
# code 1, 69, or 126 when COMMAND could not be started), never a crash, a
# hang or a sanitizer report, and must leave no node behind.
#
#   test_cli_oom.sh ZKLOCK_OOM ZKLOCK
set -uo pipefail
OOM=$1 ZKLOCK=$2
DIR=${ZKL_TEST_ZK_DIR:?run through ctest}
ZKLOCK_SERVERS=$(<"$DIR/connect")
export ZKLOCK_SERVERS
work=$(mktemp -d -t zklock-cli-oom.XXXXXX)
holder=
cleanup() {
  [[ -n $holder ]] && kill "$holder" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
fail=0
bad() { fail=$((fail + 1)); echo "FAIL $*"; }

# nodes under a lock path, once the count settles at WANT (up to 10 s)
nodes_settle() {
  local want=$1 path=$2 n i
  for ((i = 0; i < 200; i++)); do
    n=$("$ZKLOCK" --list "$path" | wc -l)
    [[ $n == "$want" ]] && break
    sleep 0.05
  done
  echo "$n"
}

# run_all NAME WANT_NODES ALLOWED_CODES ARGS...: run N = 1, 2, ... with the
# Nth allocation failing until three runs in a row need no failure.
run_all() {
  local name=$1 want=$2 allowed=$3 n rc report unfailed=0 runs=0
  local -A seen=()
  shift 3
  for ((n = 1; n < 2000 && unfailed < 3; n++)); do
    report=$work/report
    rm -f "$report"
    ZKL_OOM_FAIL_AT=$n ZKL_OOM_REPORT=$report timeout 60 "$OOM" "$@" >"$work/out" 2>"$work/err"
    rc=$?
    runs=$((runs + 1))
    seen[$rc]=$((${seen[$rc]:-0} + 1))
    if [[ ! " $allowed " == *" $rc "* ]]; then
      bad "$name: allocation $n failing: exit status $rc (allowed: $allowed)"
      sed 's/^/    /' "$work/err" | head -20
      return
    fi
    if [[ $rc != 0 && $rc != 1 ]] && ! grep -q . "$work/err"; then
      bad "$name: allocation $n failing: exit status $rc with no message"
      return
    fi
    if [[ $(nodes_settle "$want" "$LOCK") != "$want" ]]; then
      bad "$name: allocation $n failing left a node under $LOCK"
      return
    fi
    if [[ $(<"$report") == "not reached" ]]; then unfailed=$((unfailed + 1)); else unfailed=0; fi
  done
  local tally="" k
  for k in "${!seen[@]}"; do tally+="${tally:+, }$k: ${seen[$k]}"; done
  echo "ok   $name: $((runs - 3)) allocations, each failed in turn (exit statuses $tally)"
}

# 1. a free lock: COMMAND runs (0), or the failure is reported (69, 126)
LOCK=/zklcli/oom-free-$$-$RANDOM
run_all "free lock" 0 "0 69 126" -w 10 "$LOCK" -- true

# 2. a held lock with -w 0: conflict (1), or the failure is reported (69)
LOCK=/zklcli/oom-held-$$-$RANDOM
"$ZKLOCK" "$LOCK" -- sleep 600 &
holder=$!
[[ $(nodes_settle 1 "$LOCK") == 1 ]] || bad "the holder never held $LOCK"
run_all "held lock, -w 0" 1 "1 69" -w 0 "$LOCK" -- true
kill "$holder"
wait "$holder" 2>/dev/null
holder=

# 3. --list of a lock with one holder
LOCK=/zklcli/oom-list-$$-$RANDOM
"$ZKLOCK" "$LOCK" -- sleep 600 &
holder=$!
[[ $(nodes_settle 1 "$LOCK") == 1 ]] || bad "the holder never held $LOCK"
run_all "--list" 1 "0 69" --list "$LOCK"
kill "$holder"
wait "$holder" 2>/dev/null
holder=

echo "cli oom: $fail failed"
((fail == 0))
