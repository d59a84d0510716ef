#!/bin/sh
# daemon.sh - the daemon's own speed on loopback (part of `make bench`).
#   bench/daemon.sh [--duration SECONDS]
# Needs wrk and curl (scripts/bootstrap.sh does not install wrk: it installs
# it here when missing and running as root).  Prints each figure beside its
# target; never part of `make check`.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
builddir=${top_builddir:-$top}
reduced="$builddir/daemon/reduced"
duration=10
[ "${1:-}" = "--duration" ] && duration=$2

command -v wrk >/dev/null 2>&1 || {
  if [ "$(id -u)" -eq 0 ]; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null
  else
    echo "daemon.sh: wrk is not installed" >&2; exit 1
  fi
}
[ -x "$reduced" ] || { echo "daemon.sh: build daemon/reduced first" >&2; exit 1; }

work=$(mktemp -d)
pid=""
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT INT TERM

start_daemon() {
  rm -f "$work/port"
  "$reduced" --listen 127.0.0.1:0 --port-file "$work/port" --log-level warn "$@" \
    2>"$work/daemon.log" &
  pid=$!
  i=0
  while [ ! -s "$work/port" ]; do
    i=$((i + 1)); [ $i -gt 100 ] && { echo "daemon did not start" >&2; exit 1; }
    sleep 0.05
  done
  port=$(cat "$work/port")
  url="http://127.0.0.1:$port"
}
stop_daemon() { kill "$pid"; wait "$pid" 2>/dev/null || true; pid=""; }
peak_rss_kib() { awk '/^VmHWM:/ {print $2}' "/proc/$1/status"; }

# 1. Small JSON requests.
start_daemon
small='{"op":"ReduceL2","axes":[1],"input":{"dtype":"float32","shape":[3,2,2],"data":[1,2,3,4,5,6,7,8,9,10,11,12]}}'
cat >"$work/post.lua" <<LUA
wrk.method = "POST"
wrk.body = '$small'
wrk.headers["Content-Type"] = "application/json"
LUA
curl -sf -H 'Content-Type: application/json' -d "$small" "$url/v1/reduce" >/dev/null
wrk -t2 -c32 -d"${duration}s" --latency -s "$work/post.lua" "$url/v1/reduce" >"$work/wrk.txt"
rps=$(awk '/^Requests\/sec:/ {print $2}' "$work/wrk.txt")
p99=$(awk '$1 == "99%" {print $2}' "$work/wrk.txt")
non2xx=$(awk '/Non-2xx/ {print $NF}' "$work/wrk.txt")
echo "small JSON (wrk -t2 -c32 ${duration}s): ${rps} requests/s, p99 ${p99}, non-2xx ${non2xx:-0}  (target >= 30000 requests/s)"
stop_daemon

# 2. A 256 MiB float32 raw request (reduce all) against the time to upload
# the same body to a server that only reads it into memory (bench/sink).
# curl -T streams the file; --data-binary would first read it all into
# curl's own memory.  Medians of 5.
head -c 268435456 /dev/zero >"$work/big.raw"
median5() { sort -n | awk '{ v[NR] = $1 } END { print v[3] }'; }
"$builddir/bench/sink" "$work/sink.port" & sinkpid=$!
i=0
while [ ! -s "$work/sink.port" ]; do
  i=$((i + 1)); [ $i -gt 100 ] && { echo "sink did not start" >&2; exit 1; }
  sleep 0.05
done
sinkurl="http://127.0.0.1:$(cat "$work/sink.port")/"
up=$(for r in 1 2 3 4 5; do
  curl -sf -o /dev/null -w '%{time_total}\n' -X POST -T "$work/big.raw" \
    -H 'Content-Type: application/octet-stream' "$sinkurl"; done | median5)
kill "$sinkpid"; wait "$sinkpid" 2>/dev/null || true
start_daemon --max-body 1073741824
red=$(for r in 1 2 3 4 5; do
  curl -sf -o /dev/null -w '%{time_total}\n' -X POST -T "$work/big.raw" \
    -H 'Content-Type: application/octet-stream' \
    "$url/v1/reduce?op=ReduceSumSquare&dtype=float32&shape=67108864"; done | median5)
rss=$(peak_rss_kib "$pid")
awk -v u="$up" -v r="$red" -v m="$rss" 'BEGIN {
  printf "256 MiB float32 raw, reduce all: %.3f s end to end; upload-only server %.3f s; ratio %.2f (target <= 1.3); daemon peak RSS %.1f MB\n",
         r, u, r / u, m * 1024 / 1e6 }'
stop_daemon
rm -f "$work/big.raw"

# 3. A 1,000,000-element float32 JSON request.
awk 'BEGIN { srand(7); printf "{\"op\":\"ReduceSumSquare\",\"input\":{\"dtype\":\"float32\",\"data\":[";
             for (i = 0; i < 1000000; i++) printf "%s%.6g", (i ? "," : ""), rand() * 20 - 10;
             printf "]}}" }' >"$work/big.json"
bytes=$(wc -c <"$work/big.json")
start_daemon --max-body 268435456
secs=$(curl -sf -o /dev/null -w '%{time_total}' -H 'Content-Type: application/json' \
  --data-binary @"$work/big.json" "$url/v1/reduce")
rss=$(peak_rss_kib "$pid")
awk -v b="$bytes" -v s="$secs" -v r="$rss" 'BEGIN {
  printf "1M-element float32 JSON (%.1f MB): %.3f s, %.0f MB/s (target >= 100), peak RSS %.1f MB = %.2fx the body (target <= 6x)\n",
         b / 1e6, s, b / 1e6 / s, r * 1024 / 1e6, r * 1024 / b }'
stop_daemon
