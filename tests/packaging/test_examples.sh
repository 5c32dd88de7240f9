#!/usr/bin/env bash
# tests/packaging/test_examples.sh - run the example programs of examples/
# against the test server, so the code users copy keeps working.
#
#   test_examples.sh BUILD_DIR
#
# Each self-checking example gets a fresh lock path; zklock_demo runs as two
# processes of 2 rounds each, whose shared log must show 4 holds with strictly
# increasing fencing tokens. The server is the one of $ZKL_TEST_ZK_DIR (its
# connect file). Prints "examples: N passed, M failed"; exits 1 on failure.
set -uo pipefail

if (($# != 1)); then
    echo "usage: $0 BUILD_DIR" >&2
    exit 2
fi
bin=$1/examples
passed=0 failed=0
tmp=$(mktemp -d -t zklock-examples.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
trap 'exit 129' HUP
trap 'exit 130' INT
trap 'exit 143' TERM

report() {
    local name=$1 rc=$2 out=$3
    if ((rc == 0)); then
        echo "ok   $name"
        passed=$((passed + 1))
    else
        echo "FAIL $name (exit $rc)"
        failed=$((failed + 1))
    fi
    printf '%s\n' "$out" | sed 's/^/     | /'
}

if [[ -z "${ZKL_TEST_ZK_DIR:-}" || ! -s "$ZKL_TEST_ZK_DIR/connect" ]]; then
    echo "test_examples: no server (ZKL_TEST_ZK_DIR/connect is missing)" >&2
    echo "examples: 0 passed, 1 failed"
    exit 1
fi
hosts=$(<"$ZKL_TEST_ZK_DIR/connect")
base=/zklock-test-examples/$$-$RANDOM

for name in fencing guarded_counter readers_writers worker_pool; do
    out=$(timeout 120 "$bin/zklock_example_$name" "$hosts" "$base/$name" 2>&1)
    report "$name" $? "$out"
done

# The event-loop servers: 2000 requests on 20 keys, all waiting from one thread.
for name in async_epoll async_libuv; do
    if [[ ! -x $bin/zklock_example_$name ]]; then
        report "$name" 1 "not built (scripts/deps installs libuv1-dev)"
        continue
    fi
    out=$(timeout 120 "$bin/zklock_example_$name" "$hosts" "$base/$name" 2000 20 2>&1)
    report "$name" $? "$out"
done

# Metrics over HTTP: scrape /metrics twice; the text is OpenMetrics, ends in
# "# EOF", and the worker's acquisitions grow between the two scrapes.
scrape() { # PORT: the body of GET /metrics (bash's /dev/tcp, no client needed)
    exec 3<>"/dev/tcp/127.0.0.1/$1" || return 1
    printf 'GET /metrics HTTP/1.0\r\n\r\n' >&3
    sed '1,/^\r$/d' <&3
    exec 3<&-
}
# acquired TEXT CLIENT: the acquisitions of CLIENT's mutex series
acquired() {
    sed -n "s/^zklock_acquisitions_total{client=\"$2\",[^}]*side=\"mutex\"} \\([0-9]*\\)\$/\\1/p" <<<"$1"
}
timeout 60 "$bin/zklock_example_metrics_http" "$hosts" "$base/metrics" 0 20 >"$tmp/metrics.out" 2>&1 &
mp=$!
port=
for _ in $(seq 100); do
    port=$(sed -n 's/^listening on 127.0.0.1:\([0-9]*\)$/\1/p' "$tmp/metrics.out")
    [[ -n $port ]] && break
    sleep 0.1
done
rc=1
msg="no port"
if [[ -n $port ]]; then
    sleep 0.5
    m1=$(scrape "$port")
    sleep 0.5
    m2=$(scrape "$port")
    a1=$(acquired "$m1" jobs)
    a2=$(acquired "$m2" jobs)
    b1=$(acquired "$m1" reports)
    b2=$(acquired "$m2" reports)
    msg="acquisitions: jobs ${a1:-none} then ${a2:-none}, reports ${b1:-none} then ${b2:-none}"
    if [[ $(tail -n 1 <<<"$m2") == "# EOF" && -n $a1 && -n $a2 && -n $b1 && -n $b2 ]] &&
        ((a2 > a1 && b2 > b1)) && [[ $(grep -c '^# EOF$' <<<"$m2") == 1 ]] &&
        grep -q '^# TYPE zklock_wait_seconds histogram$' <<<"$m2"; then
        rc=0
    fi
fi
kill -TERM $mp 2>/dev/null
wait $mp 2>/dev/null
report "metrics_http (two scrapes of /metrics, two clients in one text)" $rc "$msg; $(cat "$tmp/metrics.out")"

log=$tmp/demo.log
timeout 120 "$bin/zklock_demo" "$hosts" "$base/demo" 2 "$log" >"$tmp/demo1.out" 2>&1 &
p1=$!
timeout 120 "$bin/zklock_demo" "$hosts" "$base/demo" 2 "$log" >"$tmp/demo2.out" 2>&1 &
p2=$!
rc=0
wait $p1 || rc=$?
wait $p2 || rc=$?
# The log is in hold order: each holder appends while it still holds the lock.
if ((rc == 0)); then
    if [[ $(wc -l <"$log") -ne 4 ]] ||
        ! awk '{t = $NF + 0; if (NR > 1 && t <= prev) bad = 1; prev = t} END {exit bad}' "$log"; then
        echo "zklock_demo: want 4 holds with strictly increasing tokens" >>"$tmp/demo2.out"
        rc=1
    fi
fi
report "zklock_demo (2 processes x 2 rounds)" $rc "$(cat "$tmp/demo1.out" "$tmp/demo2.out")"

echo "examples: $passed passed, $failed failed"
((failed == 0))
