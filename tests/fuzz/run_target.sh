#!/usr/bin/env bash
# tests/fuzz/run_target.sh - run one libFuzzer target for a while and print one
# line about it; used by ctest (tests/fuzz/CMakeLists.txt) and scripts/fuzz.
#
# Usage: run_target.sh [--seconds N] [--seeds DIR] [--corpus DIR] [--artifacts DIR] BINARY
#   --seeds DIR      seed corpus, only read (default: none)
#   --corpus DIR     working corpus, kept and grown across runs (default: a
#                    temp copy of the seeds, removed afterwards)
#   --artifacts DIR  where crash-*, leak-*, timeout-* inputs and the log go
#                    (default: fuzz-artifacts/<target> in the current dir)
# Prints: "<target>: E executions (R/s), coverage A -> B, U new inputs, C crashes".
# Exits non-zero if the target crashed (any sanitizer report or failed check).
set -euo pipefail

seconds=10 seeds='' corpus='' artifacts=''
while (($#)); do
  case "$1" in
    --seconds) seconds=$2; shift 2 ;;
    --seeds) seeds=$2; shift 2 ;;
    --corpus) corpus=$2; shift 2 ;;
    --artifacts) artifacts=$2; shift 2 ;;
    -h|--help) sed -n '2,12s/^# \{0,1\}//p' "$0"; exit 0 ;;
    -*) echo "run_target.sh: unknown option '$1'" >&2; exit 2 ;;
    *) break ;;
  esac
done
(($# == 1)) || { echo "run_target.sh: one BINARY expected" >&2; exit 2; }
binary=$1
name=$(basename "$binary")
artifacts=${artifacts:-$PWD/fuzz-artifacts/$name}
mkdir -p "$artifacts"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/$name.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
if [[ -z $corpus ]]; then
  corpus=$tmp/corpus
fi
mkdir -p "$corpus"
# libFuzzer writes new inputs into the first corpus dir: a copy, never the seeds.
if [[ -n $seeds && -d $seeds ]]; then
  cp -n "$seeds"/* "$corpus"/ 2>/dev/null || true
fi

log=$artifacts/last.log
rc=0
UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1} \
  "$binary" -max_total_time="$seconds" -print_final_stats=1 -max_len=4096 -timeout=25 \
  -rss_limit_mb=2048 -artifact_prefix="$artifacts/" "$corpus" >"$log" 2>&1 || rc=$?

stat() { sed -n "s/^stat::$1: *//p" "$log" | tail -n 1; }
execs=$(stat number_of_executed_units)
rate=$(stat average_exec_per_sec)
added=$(stat new_units_added)
cov0=$(sed -n 's/.*INITED cov: \([0-9]*\).*/\1/p' "$log" | head -n 1)
cov1=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' "$log" | tail -n 1)
mapfile -t found < <(sed -n "s/.*Test unit written to \(.*\)$/\1/p" "$log")
crashes=${#found[@]}
((rc == 0 || crashes > 0)) || crashes=1 # died without saving an input

echo "$name: ${execs:-?} executions (${rate:-?}/s), coverage ${cov0:-?} -> ${cov1:-?}," \
  "${added:-?} new inputs, $crashes crashes"
if ((rc != 0)); then
  for f in "${found[@]}"; do echo "$name: crashing input: $f"; done
  echo "$name: exit status $rc; the report (whole log: $log):"
  # From the first failed check or sanitizer report on, without progress lines.
  grep -v -e '^#[0-9]' -e '^INFO:' "$log" |
    sed -n '/invariant failed\|ERROR: \|runtime error\|SUMMARY:/,$p' | head -n 40
  exit 1
fi
