#!/usr/bin/env bash
# test_tls.sh ZKLOCK TESTBIN_DIR WORKDIR - zklock against a ZooKeeper server
# that takes only TLS clients (issue 58, item 3). Debian's ZooKeeper C
# client has no TLS of its own, so a user puts a local tunnel in front of
# the server (stunnel4, README "Pointing at a real ensemble"); this test does
# what that section shows:
#  - the server: scripts/zk-server start --tls (a secureClientPort only,
#    Netty, a self-signed certificate made here);
#  - the tunnel: stunnel4 in client mode, verifying the server's certificate;
#  - through it: zklock's locks and elections, and the C API's (test_mutex's
#    and test_latch's own tests, pointed at the tunnel); the lease is read
#    from the server's `conf`, which the tunnel carries too;
#  - the lease stays sound: the tunnel adds no answer of its own, so a
#    tunnel that stops (SIGSTOP) is a cut link, and COMMAND is stopped
#    before the server could expire the session.
# Every process it starts is stopped by pid on exit, pass or fail; it is
# bounded by ctest's timeout and by each step's own.
set -uo pipefail
ZKLOCK=${1:?usage: test_tls.sh ZKLOCK TESTBIN_DIR WORKDIR}
BIN=${2:?}
WORK=${3:?}
root=$(cd "$(dirname "$0")/../.." && pwd)
zks="$root/scripts/zk-server"
pass=0 fail=0
tunnel_pid=""
ok() { echo "ok   $1"; pass=$((pass + 1)); }
bad() { echo "FAIL $1"; fail=$((fail + 1)); }
check() { local what=$1; shift; if "$@"; then ok "$what"; else bad "$what"; fi; }

cleanup() {
  [[ -n $tunnel_pid ]] && kill -CONT "$tunnel_pid" 2>/dev/null
  [[ -n $tunnel_pid ]] && kill "$tunnel_pid" 2>/dev/null && wait "$tunnel_pid" 2>/dev/null
  "$zks" stop --dir "$WORK/zk" >/dev/null 2>&1
}
trap cleanup EXIT

# a free port on 127.0.0.1 for the tunnel's end
free_port() {
  local p
  for _ in $(seq 50); do
    p=$((20000 + RANDOM % 10000))
    ss -Hltn "sport = :$p" | grep -q . || { echo "$p"; return 0; }
  done
  return 1
}

rm -rf "$WORK" && mkdir -p "$WORK/zk" "$WORK/tunnel"
"$zks" start --dir "$WORK/zk" --tick 500 --container-check-ms 1000 --tls >/dev/null ||
  { echo "FAIL the TLS-only server did not start"; exit 1; }
secure=$(cut -d: -f2 "$WORK/zk/connect")
port=$(free_port) || { echo "FAIL no free port"; exit 1; }
cat >"$WORK/tunnel/stunnel.conf" <<EOF
foreground = yes
pid =
output = $WORK/tunnel/stunnel.log
[zookeeper]
client = yes
accept = 127.0.0.1:$port
connect = 127.0.0.1:$secure
CAfile = $WORK/zk/tls/cert.pem
verifyChain = yes
checkIP = 127.0.0.1
EOF
stunnel4 "$WORK/tunnel/stunnel.conf" >"$WORK/tunnel/stunnel.out" 2>&1 & tunnel_pid=$!
for _ in $(seq 100); do ss -Hltn "sport = :$port" | grep -q . && break; sleep 0.05; done
tun="127.0.0.1:$port"
echo "$tun" >"$WORK/tunnel/connect" # what the C API tests read (ZKL_TEST_ZK_DIR)

# --- the plain port is not there: a client without the tunnel gets nowhere ---
"$ZKLOCK" --zk "127.0.0.1:$secure" -w 2 /tls-plain -- true 2>/dev/null; rc=$?
check "a plain client at the TLS port is not served (rc=$rc)" test $rc = 69

# --- zklock through the tunnel: a lock, its token, its lease's lag ---
v=$("$ZKLOCK" --zk "$tun" /tls-lock -- sh -c 'echo "$ZKLOCK_FENCING_TOKEN"' 2>&1); rc=$?
check "zklock holds a lock through the tunnel (rc=$rc, token $v)" bash -c "[[ $rc = 0 && '$v' =~ ^[0-9]+$ ]]"
# (the second goes once the first's command runs, not after a fixed 0.5 s:
# on a loaded machine the first had not yet held by then, and the second
# took the lock, rc 0, on a fresh clone of 2026-11-30)
"$ZKLOCK" --zk "$tun" /tls-excl -- sh -c "touch '$WORK/excl-held'; sleep 3" & h=$!
for _ in $(seq 400); do [[ -e $WORK/excl-held ]] && break; sleep 0.05; done
"$ZKLOCK" --zk "$tun" -n -E 9 /tls-excl -- true 2>/dev/null; rc=$?
check "a second holder through the tunnel is refused while the first holds (rc=$rc)" test $rc = 9
wait $h
v=$("$ZKLOCK" --zk "$tun" --leader /tls-elect)
check "--leader through the tunnel: NONE ($v)" test "$v" = NONE
"$ZKLOCK" --zk "$tun" --elect --id tls-a /tls-elect -- sleep 1.5 & h=$!
sleep 0.7
v=$("$ZKLOCK" --zk "$tun" --leader /tls-elect)
check "--elect leads through the tunnel, --leader sees it ($v)" bash -c "[[ '$v' == 'LEADER tls-a '* ]]"
wait $h; rc=$?
check "--elect's COMMAND ran to its end (rc=$rc)" test $rc = 0

# --- the C API through the tunnel: test_mutex's and test_latch's own tests ---
for t in "test_mutex mutex/acquire_release_leaves_nothing" "test_mutex mutex/participants_in_queue_order" \
  "test_latch latch/participants_lead_in_turn" "test_latch latch/await_token_and_node"; do
  set -- $t
  out=$(ZKL_TEST_ZK_DIR="$WORK/tunnel" timeout 120 "$BIN/$1" --jobs 1 --filter "$2" 2>&1)
  check "the C API through the tunnel: $2" grep -q "Passing: 1 | Failing: 0" <<<"$out"
done

# --- the lease: a tunnel that stops is a cut link ---
rm -f "$WORK/term" "$WORK/holding"
"$ZKLOCK" --zk "$tun" --session-timeout 4000 /tls-lease -- sh -c \
  "trap 'echo \$(date +%s%3N) >$WORK/term; exit 0' TERM; touch $WORK/holding; while :; do sleep 0.05; done" \
  2>"$WORK/lease.err" & h=$!
# the tunnel stops once COMMAND runs (its trap set), not after a guess: on a
# loaded machine a 1 s guess stopped it before the hold (a fresh-clone run)
for ((i = 0; i < 400; i++)); do [[ -e $WORK/holding ]] && break; sleep 0.05; done
check "COMMAND runs under the lock through the tunnel" test -e "$WORK/holding"
stopped=$(date +%s%3N)
kill -STOP "$tunnel_pid"
wait $h; rc=$?
kill -CONT "$tunnel_pid"
term=$(cat "$WORK/term" 2>/dev/null || echo 0)
check "a stopped tunnel ends the hold: zklock exits 75 (rc=$rc)" test $rc = 75
check "COMMAND got SIGTERM $((term - stopped)) ms after the tunnel stopped, before the 4000 ms session timeout" \
  test $((term - stopped)) -gt 0 -a $((term - stopped)) -lt 4000

echo "tls: $pass passed, $fail failed"
((fail == 0))
