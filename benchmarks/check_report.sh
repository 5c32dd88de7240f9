#!/usr/bin/env bash
# benchmarks/check_report.sh: the report of scripts/bench (benchmarks/report.py),
# fed rows of our own (no server, no peers): the ratios against Curator and
# the best valid peer, the median over rounds, the hand-off split, the scale,
# threads and lines studies, the targets table, the async tables, the refusal
# of an unknown table, and the refusal of bad --rounds and --lines values.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
for t in ratios ratios_by_round split_table scale_table threads_table lines_table targets_table async_table; do
    eval "$t() { python3 \"\$root/benchmarks/report.py\" $t \"\$@\"; }"
done
tmp=$(mktemp -d "${TMPDIR:-/tmp}/zklock-report.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail=0
check() { # check WHAT HAYSTACK REGEX
    if ! grep -Eq -- "$3" <<<"$2"; then
        echo "check_report: $1: no line matches /$3/ in:" >&2
        printf '%s\n' "$2" >&2
        fail=1
    fi
}

# row LIB WORKLOAD CLIENTS OPS_PER_S ERRORS
row() {
    printf '{"lib":"%s","workload":"%s","clients":%s,"seconds":10.0,"ops":%s,"ops_per_s":%s,' \
        "$1" "$2" "$3" "${4%.*}0" "$4"
    printf '"acquire_p50_us":1,"acquire_p99_us":2,"release_p50_us":1,"release_p99_us":2,'
    printf '"min_client_ops":1,"max_client_ops":1,"zk_requests":%s,"errors":%s}\n' "${4%.*}0" "$5"
}

# Three rounds. The fastest peer of round 1 failed (errors > 0): it must not
# count as the best peer.
mkdir -p "$tmp/r1" "$tmp/r2" "$tmp/r3"
{
    row zklock-0.1.0 contended 16 300 0
    row zklock-0.1.0 uncontended 1 900 0
    row zklock-0.1.0 floor 1 600 0
} >"$tmp/r1/zklock.jsonl"
{
    row curator-5.4.0 contended 16 100 0
    row curator-5.4.0 uncontended 1 300 0
    row go-zookeeper contended 16 900 3
    row go-zookeeper uncontended 1 450 0
} >"$tmp/r1/peer-x.jsonl"
{
    row zklock-0.1.0 contended 16 400 0
    row zklock-0.1.0 uncontended 1 800 0
    row zklock-0.1.0 floor 1 400 0
    row curator-5.4.0 contended 16 200 0
    row curator-5.4.0 uncontended 1 400 0
    row go-zookeeper contended 16 160 0
} >"$tmp/r2/all.jsonl"
{
    row zklock-0.1.0 contended 16 500 0
    row curator-5.4.0 contended 16 100 0
} >"$tmp/r3/all.jsonl"

one=$(ratios "$tmp/r1/zklock.jsonl" "$tmp/r1/peer-x.jsonl")
# contended: 300 / Curator 100 = 3.00; go's row is invalid, so Curator is best
check "round 1 contended" "$one" '^\| contended +\| +16 \| zklock +\| +300\.0 \| +100\.0 \| +3\.00 \| curator-5\.4\.0 100\.0 +\| +3\.00 \|'
# uncontended: 900 / 300 = 3.00, best go 450: 2.00, floor 600: 1.50
check "round 1 uncontended" "$one" '^\| uncontended +\| +1 \| zklock +\| +900\.0 \| +300\.0 \| +3\.00 \| go-zookeeper 450\.0 +\| +2\.00 \| +1\.50 \|'

by=$(ratios_by_round "$tmp/r1" "$tmp/r2" "$tmp/r3")
# contended x Curator: 3.00 2.00 5.00, median 3.00; x best: 3.00 2.00 5.00
check "rounds contended" "$by" '^\| contended +\| +16 \| zklock +\| +3\.00 2\.00 5\.00 \| +3\.00 \| +3\.00 2\.00 5\.00 \| +3\.00 \|'
# uncontended in two rounds: x Curator 3.00 2.00 (median 2.50), x floor 1.50 2.00 (1.75)
check "rounds uncontended" "$by" '^\| uncontended +\| +1 \| zklock +\| +3\.00 2\.00 \| +2\.50 \| +2\.00 2\.00 \| +2\.00 \| +1\.50 2\.00 \| +1\.75 \|'

# The hand-off split: rows sorted by sessions, then library; the rate is 1/mean.
{
    echo '{"lib":"gozk","parent":"/p/l","sessions":16,"handoffs":520,"server_p50_us":464,"server_p90_us":611,"server_mean_us":473,"client_p50_us":419,"client_p90_us":621,"client_mean_us":421,"handoff_p50_us":884,"handoff_p90_us":1154,"handoff_mean_us":895}'
    echo '{"lib":"zklock","parent":"/q/l","sessions":4,"handoffs":795,"server_p50_us":422,"server_p90_us":533,"server_mean_us":438,"client_p50_us":140,"client_p90_us":258,"client_mean_us":157,"handoff_p50_us":572,"handoff_p90_us":743,"handoff_mean_us":596}'
} >"$tmp/split.jsonl"
split=$(split_table "$tmp/split.jsonl")
check "split zklock" "$split" '^\| zklock +\| +4 \| +795 \| +422/438 \| +140/157 \| +572/596 \| +1678 \|'
check "split order" "$(sed -n 3p <<<"$split")" '^\| zklock '
check "split gozk" "$split" '^\| gozk +\| +16 \| +520 \| +464/473 \| +419/421 \| +884/895 \| +1117 \|'

# Bad --rounds values are refused before anything is installed or built.
# The scale study: two rounds of contended at 16 and 1024 sessions and of
# threads. srow LIB WORKLOAD CLIENTS OPS_PER_S ERRORS CPU P50 P99 [EXTRA]
srow() {
    printf '{"lib":"%s","workload":"%s","clients":%s,"seconds":10.0,"ops":%s,"ops_per_s":%s,' \
        "$1" "$2" "$3" "${4%.*}0" "$4"
    printf '"acquire_p50_us":%s,"acquire_p99_us":%s,"release_p50_us":1,"release_p99_us":2,' "$7" "$8"
    printf '"min_client_ops":1,"max_client_ops":1,"zk_requests":1,"client_cpu_us_per_op":%s,%s"errors":%s}\n' \
        "$6" "${9:-}" "$5"
}
mkdir -p "$tmp/s1" "$tmp/s2"
remote='"sessions":1,"local_handoff_max_streak":100,"local_handoff_max_ms":50,"local_handoffs":900,"remote_clients":2,"remote_ops":40,"remote_acquire_p50_us":3000,"remote_worst_wait_us":'
{
    srow zklock-0.1.0 contended 16 2000.0 0 200 100 120
    srow zklock-0.1.0 contended 1024 1400.0 0 400 1000 1200
    srow zklock-0.1.0 threads 16 20000.0 0 20 10 50 "${remote}41000,\"remote_worst_local_holds\":100,\"remote_worst_local_span_us\":4000,\"server_max_latency_ms\":30,"
} >"$tmp/s1/zklock.jsonl"
{
    srow curator-5.4.0 contended 16 1000.0 0 1 1 1
    srow curator-5.4.0 contended 1024 500.0 0 1 1 1
    srow go-zookeeper contended 16 3000.0 1 1 1 1 # invalid: never the best peer
    srow go-zookeeper contended 1024 700.0 0 1 1 1
    srow go-zookeeper threads 16 1000.0 0 1 1 1
} >"$tmp/s1/peer-x.jsonl"
{
    srow zklock-0.1.0 contended 16 2200.0 0 220 100 140
    srow zklock-0.1.0 contended 1024 1100.0 0 550 1000 1400
    srow zklock-0.1.0 threads 16 22000.0 0 20 10 50 "${remote}52000,\"remote_worst_local_holds\":90,\"remote_worst_local_span_us\":6500,\"server_max_latency_ms\":41,"
} >"$tmp/s2/zklock.jsonl"
{
    srow curator-5.4.0 contended 16 1100.0 0 1 1 1
    srow curator-5.4.0 contended 1024 550.0 0 1 1 1
    srow go-zookeeper contended 16 1000.0 0 1 1 1
    srow go-zookeeper contended 1024 1000.0 0 1 1 1
    srow go-zookeeper threads 16 1100.0 0 1 1 1
} >"$tmp/s2/peer-x.jsonl"
scale=$(scale_table "$tmp/s1" "$tmp/s2")
check "scale 16: medians, ratio to the best valid peer, p99/p50, CPU" "$scale" \
    '^\| +16 \| +2100\.0 \| +1050\.0 \| +1000\.0 \| +2\.00 \| +1\.30 \| +210 \|$'
check "scale 1024" "$scale" '^\| +1024 \| +1250\.0 \| +525\.0 \| +850\.0 \| +1\.55 \| +1\.30 \| +475 \|$'
check "scale: 1024 against 16" "$scale" 'rate 0\.70 0\.50 \(median 0\.60\); client CPU per acquire 2\.00 2\.50 \(median 2\.25\)'
threads=$(threads_table "$tmp/s1" "$tmp/s2")
check "threads: zklock" "$threads" '^\| zklock +\| +16 \| +21000\.0 \| 20000 22000 \|'
check "threads: ratio and the other clients" "$threads" \
    'by round: 20\.0 20\.0 \(median 20\.0\)\. .*100 holds or 50 ms.*2 other clients.*80 holds.*worst wait 52\.0 ms \(worst request latency at the server in those rows: 41 ms\); .* at most 100, over at most 6\.5 ms \(the bound: one streak\) held; 1800 holds passed'
mkdir -p "$tmp/s3"
srow zklock-0.1.0 threads 16 20000.0 0 20 10 50 \
    "${remote}41000,\"remote_worst_local_holds\":150,\"remote_worst_local_span_us\":4000,\"server_max_latency_ms\":30," \
    >"$tmp/s3/zklock.jsonl"
srow go-zookeeper threads 16 1000.0 0 1 1 1 >"$tmp/s3/peer-x.jsonl"
check "threads: a wait that saw more than one streak" "$(threads_table "$tmp/s3")" \
    'at most 150, over at most 4\.0 ms \(the bound: one streak\) NOT held'

# Several deep lines: lrow CLIENTS LINES OPS_PER_S ACQUIRE_MAX_US. A line's
# turn is CLIENTS/LINES sessions over OPS_PER_S/LINES.
lrow() {
    printf '{"lib":"zklock-0.1.0","workload":"contended","clients":%s,"seconds":10.0,"ops":1,"ops_per_s":%s,' "$1" "$3"
    printf '"acquire_p50_us":1000,"acquire_p99_us":2000,"release_p50_us":1,"release_p99_us":2,'
    printf '"min_client_ops":1,"max_client_ops":1,"zk_requests":1,"lines":%s,"acquire_max_us":%s,"errors":0}\n' "$2" "$4"
}
mkdir -p "$tmp/s1/lines" "$tmp/s2/lines"
# round 1: 4 x 256 at 1024/s (turn 1 s), longest 1.5 s; 1 x 256 at 512/s (turn 0.5 s), 0.5 s
{ lrow 1024 4 1024.0 1500000; lrow 256 1 512.0 500000; } >"$tmp/s1/lines/zklock.jsonl"
# round 2: 4 x 256 at 2048/s (turn 0.5 s), longest 1.5 s (3 turns); one line 1.25 turns
{ lrow 256 1 512.0 625000; lrow 1024 4 2048.0 1500000; } >"$tmp/s2/lines/zklock.jsonl"
lines=$(lines_table "$tmp/s1" "$tmp/s2")
check "lines: 4 x 256, round 1" "$lines" '^\| +1 \| +4 x 256 \| +1024\.0 \| +1 \| +1\.50 \| +1\.00 \| +1\.50 \| +0 \|$'
check "lines: one line, round 2" "$lines" '^\| +2 \| +1 x 256 \| +512\.0 \| +1 \| +0\.63 \| +0\.50 \| +1\.25 \| +0 \|$'
check "lines: medians" "$lines" '2\.25 on 4 lines \(1\.50, 3\.00\), 1\.13 on one \(1\.00, 1\.25\)'
# Across processes: two rounds at N = 4; gozk is best, its faster row in
# round 2 is invalid, so kazoo is that round's best.
{
    echo '{"lib":"zklock","processes":4,"ops_per_s":900.0,"errors":0,"round":1}'
    echo '{"lib":"zklock-hints-off","processes":4,"ops_per_s":600.0,"errors":0,"round":1}'
    echo '{"lib":"gozk","processes":4,"ops_per_s":450.0,"errors":0,"round":1}'
    echo '{"lib":"zklock","processes":4,"ops_per_s":800.0,"errors":0,"round":2}'
    echo '{"lib":"zklock-hints-off","processes":4,"ops_per_s":1000.0,"errors":0,"round":2}'
    echo '{"lib":"gozk","processes":4,"ops_per_s":2000.0,"errors":2,"round":2}'
    echo '{"lib":"kazoo","processes":4,"ops_per_s":400.0,"errors":0,"round":2}'
} >"$tmp/procs.rows"
targets=$(targets_table "$tmp/procs.rows" "$tmp/s1" "$tmp/s2")
check "targets: across processes" "$targets" '^\| across processes, N = 4: zklock at least 1\.5x the best peer +\| N = 4: 2\.00 \(2\.00, 2\.00\) +\| yes +\|$'
check "targets: room off" "$targets" '^\| across processes, N = 4: the same with the in-process room off +\| N = 4: 1\.92 \(1\.33, 2\.50\) +\| yes +\|$'
# contended 16: 2.00, 2.00; 1024: 2.00, 1.10 (median 1.55)
check "targets: one process" "$targets" '^\| one process, contended 16, 1024 sessions: .*\| 16: 2\.00 \(2\.00, 2\.00\); 1024: 1\.55 \(2\.00, 1\.10\) +\| yes +\|$'
check "targets: 1024 against 16" "$targets" '^\| zklock at 1024 sessions against 16: at least 0\.6 +\| 0\.60 \(0\.70, 0\.50\) +\| yes +\|$'
check "targets: threads" "$targets" '^\| threads of one process .*\| 20\.00 \(20\.00, 20\.00\) +\| yes +\|$'
# lines: 1.50 / 1.00 = 1.5, 3.00 / 1.25 = 2.4: median 1.95
check "targets: lines" "$targets" '^\| 4 deep lines at once: .*\| 1\.95 \(1\.50, 2\.40\); in turns: 4 lines 2\.25 \(1\.50, 3\.00\), one line 1\.13 \(1\.00, 1\.25\) +\| yes +\|$'
check "targets: best peers" "$targets" '^Best peer: curator, go-zookeeper, gozk, kazoo '
# 3 s on 4 lines (3 turns) against 1 turn on one: a wait on a bound
mkdir -p "$tmp/s3/lines"
{ lrow 1024 4 1024.0 3000000; lrow 256 1 512.0 500000; } >"$tmp/s3/lines/zklock.jsonl"
check "targets: a line that waited on a bound" "$(targets_table "$tmp/none.rows" "$tmp/s3")" \
    '^\| 4 deep lines at once: .*\| 3\.00 \(3\.00\); .*\| NO +\|$'

# Async: medians are the upper middle of the rounds; the raw client's share taken off.
{
    echo '{"workload":"async_line","waits":1000,"sessions":64,"bytes_per_wait":3000,"heap_bytes_per_wait":1400,"threads_before":197,"threads_after":197,"requests_per_wait":2.15,"handoffs_per_s":1036.34,"errors":0,"round":0}'
    echo '{"workload":"async_line_raw","waits":1000,"sessions":64,"bytes_per_wait":1600,"heap_bytes_per_wait":200,"threads_before":130,"threads_after":130,"requests_per_wait":3,"errors":0,"round":0}'
    echo '{"workload":"async_line","waits":1000,"sessions":64,"bytes_per_wait":2000,"heap_bytes_per_wait":1300,"threads_before":197,"threads_after":197,"requests_per_wait":2.15,"handoffs_per_s":900,"errors":0,"round":1}'
    echo '{"workload":"async_line_raw","waits":1000,"sessions":64,"bytes_per_wait":1500,"heap_bytes_per_wait":100,"threads_before":130,"threads_after":130,"requests_per_wait":3,"errors":0,"round":1}'
    echo '{"workload":"async_pending","waits":10000,"sessions":1,"bytes_per_wait":2500,"heap_bytes_per_wait":2000,"threads_before":6,"threads_after":6,"requests_per_wait":4,"errors":0,"round":0}'
    echo '{"workload":"async_pending_raw","waits":10000,"sessions":1,"bytes_per_wait":600,"heap_bytes_per_wait":200,"threads_before":6,"threads_after":6,"requests_per_wait":3,"errors":0,"round":0}'
    echo '{"workload":"async_contended","ops_per_s":900,"round":0}'
    echo '{"workload":"blocking_contended","ops_per_s":1000,"round":0}'
} >"$tmp/async.jsonl"
async=$(async_table "$tmp/async.jsonl")
check "async line" "$async" '^\| async_line \| 1000 \| 64 \| 2\.15 \| 1400 \| 3000 \(3000, 2000\) \| 197 / 197 \| 1036\.3 \| 1200 / 1400 \(1400, 500\) \|$'
check "async pending" "$async" '^\| async_pending \| 10000 \| 1 \| 4 \| 2000 \| 2500 \(2500\) \| 6 / 6 \| - \| 1800 / 1900 \(1900\) \|$'
check "async contended" "$async" '^\| 1 \| 900 \| 1000 \| 0\.9 \|$'

rc=0
msg=$(python3 "$root/benchmarks/report.py" no_such_table 2>&1) || rc=$?
if ((rc != 2)) || [[ "$msg" != *"unknown table"* ]]; then
    echo "check_report: an unknown table gave exit $rc: $msg" >&2
    fail=1
fi

for args in "--rounds 0" "--rounds x" "--rounds 100" "--rounds 2" "--rounds"; do
    rc=0
    # shellcheck disable=SC2086 # the words are the arguments
    msg=$("$root/scripts/bench" $args 2>&1) || rc=$?
    if ((rc != 2)) || [[ "$msg" != bench:*rounds* ]]; then
        echo "check_report: 'scripts/bench $args' gave exit $rc: $msg" >&2
        fail=1
    fi
done

for args in "--scale --lines 4" "--scale --lines x" "--scale --lines '0 256'"; do
    rc=0
    msg=$(eval "\"\$root/scripts/bench\" $args" 2>&1) || rc=$?
    if ((rc != 2)) || [[ "$msg" != bench:*--lines* ]]; then
        echo "check_report: 'scripts/bench $args' gave exit $rc: $msg" >&2
        fail=1
    fi
done

((fail == 0)) && echo "check_report: all passed"
exit "$fail"
