#!/usr/bin/env bash
# valgrind-run.sh - run a Criterion test binary under valgrind memcheck.
# Criterion runs each test in a child process and does not pass valgrind's
# verdict on, so every process logs to its own file and this script fails if
# any log reports an error (definite or indirect leaks count as errors).
# Programs the tests spawn (the Curator peer, shells, zk-server) are not traced.
#
#   valgrind-run.sh TEST_BINARY [ARGS...]
# ZKT_NICE=N runs it at nice N (tests/CMakeLists.txt: the untimed tests,
# below the timed ones, when scripts/test runs three at once).
set -uo pipefail
logs=$(mktemp -d -t zklock-vg.XXXXXX)
export ZKT_VALGRIND=1 # tests that load the cores skip that under valgrind (one thread at a time)
trap 'rm -rf "$logs"' EXIT
nice -n "${ZKT_NICE:-0}" valgrind --trace-children=yes \
  --trace-children-skip='*/java,*/bash,*/sh,*/curator-peer,*/zk-server,*/env,*/sleep,*/true' \
  --leak-check=full --errors-for-leak-kinds=definite,indirect \
  --show-leak-kinds=definite,indirect --track-fds=no --error-exitcode=99 \
  --suppressions="$(dirname "$0")/valgrind.supp" \
  --log-file="$logs/vg.%p.log" "$@"
rc=$?
bad=0
for f in "$logs"/vg.*.log; do
  [[ -e $f ]] || continue
  if grep -qE "ERROR SUMMARY: [1-9]" "$f"; then
    bad=1
    cat "$f"
  fi
done
n=$(ls "$logs" | wc -l)
summary="valgrind: $n processes checked, $([[ $bad == 1 ]] && echo errors found || echo no errors)"
echo "$summary"
# scripts/reliability collects these across the run
[[ -n ${ZKL_VG_SUMMARY:-} ]] && echo "$summary" >>"$ZKL_VG_SUMMARY"
((bad)) && exit 99
exit $rc
