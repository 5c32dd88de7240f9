#!/usr/bin/env bash
# benchmarks/check_async.sh ASYNCBENCH: the short form of asyncbench for the
# test suite, against the suite's server ($ZKL_TEST_ZK_DIR/connect): 300
# pending waits, a line of 100 over 4 sessions (zklock, then raw libzookeeper_mt), and one
# round of async and blocking contended. Checks the five rows are there, error- and
# violation-free, and that pending waits added no thread.
set -euo pipefail
asyncbench=${1:?usage: check_async.sh ASYNCBENCH}
dir=${ZKL_TEST_ZK_DIR:?ZKL_TEST_ZK_DIR is not set (run through ctest)}
zk=$(head -n 1 "$dir/connect")

out=$("$asyncbench" --zk "$zk" --paths 300 --waiters 100 --sessions 4 --clients 4 --rounds 1 \
    --seconds 1)
printf '%s\n' "$out"
fail=0
for w in async_pending async_pending_raw async_line async_line_raw async_contended blocking_contended; do
    if ! grep -q "\"workload\":\"$w\".*\"errors\":0}" <<<"$out"; then
        echo "check_async: no error-free $w row" >&2
        fail=1
    fi
done
if grep -q '"violations":[1-9]' <<<"$out"; then
    echo "check_async: two holders at once" >&2
    fail=1
fi
while IFS= read -r line; do
    b=$(sed -n 's/.*"threads_before":\([0-9]*\),"threads_after":\([0-9]*\).*/\1 \2/p' <<<"$line")
    [[ -z "$b" ]] && continue
    read -r before after <<<"$b"
    if ((before != after)); then
        echo "check_async: threads went from $before to $after with waits pending" >&2
        fail=1
    fi
done <<<"$out"
exit $fail
