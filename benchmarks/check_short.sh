#!/usr/bin/env bash
# benchmarks/check_short.sh LOCKBENCH: the short form of lockbench for the test
# suite. Runs a few tiny workloads against the suite's server
# ($ZKL_TEST_ZK_DIR/connect) and checks that lockbench exits 0 and prints
# exactly the rows lockbench.md describes (key order and types), with
# errors 0. A failing lock (two holders at once) shows up as errors > 0.
set -euo pipefail
lockbench=${1:?usage: check_short.sh LOCKBENCH}
dir=${ZKL_TEST_ZK_DIR:?ZKL_TEST_ZK_DIR is not set (run through ctest)}
zk=$(head -n 1 "$dir/connect")

out=$("$lockbench" --zk "$zk" --workload uncontended --workload contended --workload floor \
    --seconds 1 --clients 4 --pairs 200)
printf '%s\n' "$out"

row='^\{"lib":"zklock-[0-9][0-9.]*","workload":"(uncontended|contended|floor|threads)","clients":[1-9][0-9]*,'
row+='"seconds":[0-9]+\.[0-9]{3},"ops":[1-9][0-9]*,"ops_per_s":[0-9]+\.[0-9],'
row+='"acquire_p50_us":[0-9]+,"acquire_p99_us":[0-9]+,"release_p50_us":[0-9]+,"release_p99_us":[0-9]+,'
row+='"min_client_ops":[0-9]+,"max_client_ops":[0-9]+,"zk_requests":[0-9]+,'
row+='("[a-z0-9_]+":[0-9]+(\.[0-9]+)?,)*"errors":0\}$' # extra keys of ours (lockbench.md allows them)

fail=0
n=0
while IFS= read -r line; do
    n=$((n + 1))
    if [[ ! "$line" =~ $row ]]; then
        echo "check_short: not a valid error-free lockbench row: $line" >&2
        fail=1
    fi
done <<<"$out"
# uncontended (1 client), contended (--clients 4), floor (1 client)
want=$'uncontended 1\ncontended 4\nfloor 1'
got=$(sed -n 's/.*"workload":"\([a-z]*\)","clients":\([0-9]*\),.*/\1 \2/p' <<<"$out")
if [[ "$got" != "$want" ]]; then
    echo "check_short: rows were [$got], wanted [$want]" >&2
    fail=1
fi
# contended carries the server's worst latency in its window (srst, mntr)
if ! grep -q '"workload":"contended".*"server_max_latency_ms":[0-9]' <<<"$out"; then
    echo "check_short: contended: no server latency (srst refused?)" >&2
    fail=1
fi
# uncontended and floor count their pairs exactly
for w in uncontended floor; do
    if ! grep -q "\"workload\":\"$w\".*\"ops\":200," <<<"$out"; then
        echo "check_short: $w did not complete its 200 pairs" >&2
        fail=1
    fi
done
# threads: 4 threads of one client with local hand-off, 1 other client.
# The bound's share of the other client's waits: within one streak (100
# holds). The row times a remote wait from its acquire call, before its
# node is in line: a streak that ends while that node's create is in flight
# hands the lock back to the local client, whose new node is then ahead
# (the bound is for waiters in line, mutex.h), so on a loaded machine a row
# can show two streaks or three (seen on 65709ca and since, about 1 row in
# 8 beside a suite run). A row over the bound is run again, up to 3 times;
# every row over it is printed.
for try in 1 2 3; do
    threads=$("$lockbench" --zk "$zk" --workload threads --seconds 1 --clients 4 --remote 1)
    printf '%s\n' "$threads"
    holds=$(grep -o '"remote_worst_local_holds":[0-9]*' <<<"$threads" | cut -d: -f2)
    [[ -n "$holds" ]] && ((holds <= 100)) && break
    echo "check_short: threads, try $try: a remote wait saw ${holds:-no} local holds (over one streak)" >&2
done
if [[ ! "$threads" =~ $row ]] || ! grep -q '"workload":"threads","clients":4,' <<<"$threads" ||
    grep -q '"local_handoffs":0,' <<<"$threads" || grep -q '"remote_ops":0,' <<<"$threads"; then
    echo "check_short: threads: not a valid row with local hand-offs and remote holds" >&2
    fail=1
fi
if [[ -z "$holds" ]] || ((holds > 100)) || ! grep -q '"server_max_latency_ms":[0-9]' <<<"$threads"; then
    echo "check_short: threads: no local share of the waits within one streak (${holds:-none})," \
        "or no server latency (srst refused?)" >&2
    fail=1
fi
n=$((n + 1))
if ((fail)); then
    echo "check_short: FAILED ($n rows)"
    exit 1
fi
echo "check_short: $n rows valid, errors 0"
