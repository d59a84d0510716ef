#!/bin/bash
# queue.sh - the admission queue under load (issue 13), run by load.sh
# (make check-load) and alone: with every default, N keep-alive clients
# (wrk, bigmix.lua: small JSON and 1-16 MiB raw bodies) for QUEUE_SECONDS
# get no 5xx and every answer exact, and the daemon's peak RSS stays under
# --max-inflight-bytes (1 GiB) plus 64 MiB.  Reports answers, 5xx, p50/p99
# latency and peak RSS for 200 and 1,000 clients.
# Environment: top_srcdir, top_builddir, LOAD_WORK, QUEUE_SECONDS (30),
# QUEUE_CLIENTS ("200 1000").
set -u
here=$(cd "$(dirname "$0")" && pwd)
: "${top_srcdir:=$(cd "$here/../.." && pwd)}"
: "${top_builddir:=$top_srcdir}"
: "${LOAD_WORK:=$top_builddir/load-work}"
: "${QUEUE_SECONDS:=30}"
: "${QUEUE_CLIENTS:=200 1000}"
BIN=$top_builddir/daemon/reduced
[ -x "$BIN" ] || { echo "queue: build daemon/reduced first"; exit 1; }
command -v wrk >/dev/null || { echo "queue: wrk is missing (scripts/bootstrap.sh installs it)"; exit 1; }
W=$LOAD_WORK/queue
mkdir -p "$W"
PASS=0 FAIL=0 DPID=
ok() { PASS=$((PASS + 1)); echo "ok - $1"; }
bad() { FAIL=$((FAIL + 1)); echo "NOT OK - $1"; }
check() { local n=$1; shift; if "$@"; then ok "$n"; else bad "$n"; fi; }
trap '[ -n "$DPID" ] && kill -KILL "$DPID" 2>/dev/null' EXIT
BUDGET=1073741824

# 1,000 client sockets in wrk, as many in the daemon: raise the soft limit.
max=0; for c in $QUEUE_CLIENTS; do [ "$c" -gt "$max" ] && max=$c; done
want=$((max + 256))
if [ "$(ulimit -n)" != unlimited ] && [ "$(ulimit -n)" -lt "$want" ]; then
  ulimit -n "$want" 2>/dev/null || ulimit -n "$(ulimit -H -n)"
fi
echo "# queue: open file limit $(ulimit -n) for $max clients"

for c in $QUEUE_CLIENTS; do
  echo "# queue: $c keep-alive clients, small JSON and 1-16 MiB raw bodies, ${QUEUE_SECONDS} s, every default"
  rm -f "$W/port"
  "$BIN" --listen 127.0.0.1:0 --port-file "$W/port" --log-level warn >"$W/d$c.out" 2>"$W/d$c.log" &
  DPID=$!
  for _ in $(seq 100); do [ -s "$W/port" ] && break; sleep 0.1; done
  URL=http://127.0.0.1:$(tr -d '\n' <"$W/port")
  for _ in $(seq 100); do curl -s -o /dev/null "$URL/healthz" && break; sleep 0.1; done
  wrk -t2 -c"$c" -d"${QUEUE_SECONDS}s" --timeout 30s --latency -s "$here/bigmix.lua" "$URL/" >"$W/wrk$c.txt" 2>&1
  hwm=$(awk '/^VmHWM/ {print $2}' "/proc/$DPID/status")
  waitsum=$(curl -s "$URL/metrics" | awk '$1 == "reduced_queue_wait_seconds_sum" {s = $2} $1 == "reduced_queue_wait_seconds_count" {n = $2} END {printf "%s admissions, %.1f s waited in total", n, s}')
  kill -TERM "$DPID"; wait "$DPID"; drc=$?; DPID=
  g() { sed -n "s/^BIGMIX .*$1=\([0-9.]*\).*/\1/p" "$W/wrk$c.txt" | head -n 1; }
  ans=$(g answers) exact=$(g exact) wrong=$(g wrong) non200=$(g non200) f5=$(g 5xx)
  p50=$(g p50) p99=$(g p99) to=$(g timeout) rd=$(g read) wr=$(g write) cn=$(g connect)
  peak=$((hwm / 1024))
  line="clients=$c answers=${ans:-?} exact=${exact:-?} 5xx=${f5:-?} non200=${non200:-?} p50=${p50:-?} ms p99=${p99:-?} ms peak_rss=${peak} MiB (budget 1024 + 64) queue: $waitsum"
  echo "    $line"
  echo "QUEUE $line" >>"$W/summary"
  grep -q 'first_wrong' "$W/wrk$c.txt" && sed -n 's/^BIGMIX first_wrong/    first wrong:/p' "$W/wrk$c.txt"
  check "queue $c: answers counted (${ans:-0})" test "${ans:-0}" -gt 0
  check "queue $c: no 5xx (${f5:-?})" test "${f5:-1}" = 0
  check "queue $c: every answer 200 and exact (exact=${exact:-?} of ${ans:-?}, wrong=${wrong:-?}, non200=${non200:-?})" \
    test "${wrong:-1}" = 0 -a "${non200:-1}" = 0 -a "${exact:-x}" = "${ans:-y}"
  check "queue $c: no socket errors (connect $cn, read $rd, write $wr, timeout $to)" \
    test "$cn $rd $wr $to" = "0 0 0 0"
  check "queue $c: peak RSS $peak MiB under the budget + 64 MiB" test "$hwm" -lt $(((BUDGET >> 10) + 65536))
  check "queue $c: daemon exits 0" test "$drc" = 0
done
echo "queue: $PASS passed, $FAIL failed"
[ "$FAIL" -eq 0 ]
