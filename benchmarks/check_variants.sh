#!/usr/bin/env bash
# benchmarks/check_variants.sh LOCK_VARIANTS: the short form of lock_variants
# for the test suite. Runs every variant with 2 and 3 sessions for half a
# second against the suite's server ($ZKL_TEST_ZK_DIR/connect) and checks
# that it exits 0 and prints one valid row per variant and N, with errors 0,
# and that the notifications the clients counted are the ones the server's
# mntr says it sent (give or take one in flight at each end per session).
set -euo pipefail
variants=${1:?usage: check_variants.sh LOCK_VARIANTS}
dir=${ZKL_TEST_ZK_DIR:?ZKL_TEST_ZK_DIR is not set (run through ctest)}
zk=$(head -n 1 "$dir/connect")

out=$("$variants" --zk "$zk" --clients 2,3 --seconds 0.5 --server-warmup 0)
printf '%s\n' "$out"

row='^\{"lib":"zklock-[0-9][0-9.]*","variant":"[a-z-]+","clients":[23],"seconds":[0-9]+\.[0-9]{3},'
row+='"handoffs":[1-9][0-9]*,"handoffs_per_s":[0-9]+\.[0-9],"zk_requests":[0-9]+,'
row+='"requests_per_handoff":[0-9]+\.[0-9]{2},"notifications":[0-9]+,'
row+='"notifications_per_handoff":[0-9]+\.[0-9]{2},"server_notifications":[0-9]+,'
row+='"server_notifications_per_handoff":[0-9]+\.[0-9]{2},"client_requests_per_handoff":[0-9]+\.[0-9]{2},'
row+='"acquire_p50_us":[0-9]+,"acquire_p99_us":[0-9]+,"min_client_ops":[0-9]+,"max_client_ops":[0-9]+,'
row+='"errors":0\}$'

fail=0
n=0
while IFS= read -r line; do
    n=$((n + 1))
    if [[ ! "$line" =~ $row ]]; then
        echo "check_variants: not a valid error-free row: $line" >&2
        fail=1
        continue
    fi
    [[ $line =~ \"clients\":([0-9]+), ]] && sessions=${BASH_REMATCH[1]}
    [[ $line =~ \"notifications\":([0-9]+), ]] && client=${BASH_REMATCH[1]}
    [[ $line =~ \"server_notifications\":([0-9]+), ]] && server=${BASH_REMATCH[1]}
    if ((client - server > 2 * sessions || server - client > 2 * sessions)); then
        echo "check_variants: clients counted $client notifications, the server $server: $line" >&2
        fail=1
    fi
done <<<"$out"
if ((n != 10)); then
    echo "check_variants: $n rows, wanted 10 (5 variants x 2 session counts)" >&2
    fail=1
fi
if ((fail)); then
    echo "check_variants: FAILED"
    exit 1
fi
echo "check_variants: $n rows valid, errors 0, notifications counted alike"
