#!/bin/sh
# daemon.sh - the daemon's own speed on loopback (part of `make bench`).
#   bench/daemon.sh [--duration SECONDS] [--json]
# --json (or --json in $BENCH_FLAGS, as `make bench BENCH_FLAGS=--json`
# passes it) prints one JSON object per line instead of text.
# Needs wrk, curl, nginx and python3 (scripts/bootstrap.sh installs nginx;
# wrk is installed here when missing and running as root).  Prints each
# figure beside its target, marked met or NOT met; never part of
# `make check`, and no test depends on these timings.
#   1. small JSON requests, wrk -t2 -c32, against nginx serving a 100-byte
#      static file (started here with its own config on a free port);
#   2. a 256 MiB float32 raw request against an upload-only server;
#   3. 1,000,000-element float32 JSON bodies, shortest-form and
#      17-significant-digit numbers: MB/s and peak RSS (and, for
#      information, the peak RSS once gRPC core has started);
#   4. open-loop latency (bench/openloop): small JSON at 25/50/80% of the
#      throughput measured in 1, 1 MiB raw requests at 50% of theirs.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
builddir=${top_builddir:-$top}
reduced="$builddir/daemon/reduced"
openloop="$builddir/bench/openloop"
duration=10
rounds=5 # small JSON / nginx pairs (odd, for the median)
json=0
case " ${BENCH_FLAGS:-} " in *" --json "*) json=1 ;; esac
while [ $# -gt 0 ]; do
  case $1 in
    --duration) duration=$2; shift 2 ;;
    --json) json=1; shift ;;
    *) echo "usage: daemon.sh [--duration SECONDS] [--json]" >&2; exit 2 ;;
  esac
done

command -v wrk >/dev/null 2>&1 || {
  if [ "$(id -u)" -eq 0 ]; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null
  else
    echo "daemon.sh: wrk is not installed" >&2; exit 1
  fi
}
nginx=$(command -v nginx || echo /usr/sbin/nginx)
[ -x "$nginx" ] || { echo "daemon.sh: nginx is not installed (scripts/bootstrap.sh)" >&2; exit 1; }
command -v python3 >/dev/null 2>&1 || { echo "daemon.sh: python3 is not installed" >&2; exit 1; }
[ -x "$reduced" ] || { echo "daemon.sh: build daemon/reduced first" >&2; exit 1; }
[ -x "$openloop" ] || { echo "daemon.sh: build bench/openloop first" >&2; exit 1; }

work=$(mktemp -d)
pid=""
ngxpid=""
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null
  [ -n "$ngxpid" ] && kill "$ngxpid" 2>/dev/null
  wait 2>/dev/null; rm -rf "$work"
}
trap cleanup EXIT INT TERM

start_daemon() {
  rm -f "$work/port"
  "$reduced" --listen 127.0.0.1:0 --port-file "$work/port" --grpc-listen 127.0.0.1:0 \
    --log-level warn "$@" \
    2>"$work/daemon.log" &
  pid=$!
  i=0
  while [ ! -s "$work/port" ]; do
    i=$((i + 1)); [ $i -gt 100 ] && { echo "daemon did not start" >&2; exit 1; }
    sleep 0.05
  done
  port=$(cat "$work/port")
  url="http://127.0.0.1:$port"
  # The port file comes before the gRPC port: wait until it answers.
  i=0
  until curl -sf -o /dev/null "$url/healthz"; do
    i=$((i + 1))
    [ $i -gt 100 ] && { echo "daemon did not start:" >&2; cat "$work/daemon.log" >&2; exit 1; }
    sleep 0.05
  done
}
stop_daemon() { kill "$pid"; wait "$pid" 2>/dev/null || true; pid=""; }
peak_rss_kib() { awk '/^VmHWM:/ {print $2}' "/proc/$1/status"; }
# say TEXT JSON: the text line, or the JSON object (one line) with --json.
say() { if [ "$json" -eq 1 ]; then printf '%s\n' "$2"; else printf '%s\n' "$1"; fi; }
met() { if [ "$1" -eq 1 ]; then echo met; else echo "NOT met"; fi; }
tf() { if [ "$1" -eq 1 ]; then echo true; else echo false; fi; }
# wrk's latency ("812.00us", "3.21ms", "1.02s") in milliseconds.
wrk_ms() {
  awk -v v="$1" 'BEGIN { n = v + 0; u = v; sub(/^[0-9.]+/, "", u);
    printf "%.3f", (u == "us" ? n / 1e3 : (u == "s" ? n * 1e3 : n)) }'
}

# 1. Small JSON requests, and nginx serving a 100-byte file in the same run:
# both started once, then wrk against each in turn, $rounds rounds of
# ${duration}/2 seconds each.  The machine's speed drifts within a run, so
# each round is a pair measured back to back: the ratio judged is the
# median of the rounds' ratios (the ratio of the two medians, which may
# pair different rounds, is printed beside it); requests/s and p99 are the
# medians of the rounds.
# nginx from Debian, as an unprivileged-path instance: everything (pid file,
# logs, temp dirs, the document root) under $work/nginx, access log off,
# keep-alive on, 2 workers (the workers may run as nobody: the tree is
# world-readable).  The port is a free one found by trying.
ngx="$work/nginx"
mkdir -p "$ngx/www" "$ngx/tmp"
chmod 755 "$work" "$ngx" "$ngx/www"
head -c 100 /dev/zero | tr '\0' 'x' >"$ngx/www/100.txt"
chmod 644 "$ngx/www/100.txt"
start_nginx() {
  try=0
  ngxport=$((20000 + $$ % 20000))
  while :; do
    cat >"$ngx/nginx.conf" <<EOF
worker_processes 2;
daemon off;
pid $ngx/nginx.pid;
error_log $ngx/error.log warn;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path $ngx/tmp/body;
  proxy_temp_path $ngx/tmp/proxy;
  fastcgi_temp_path $ngx/tmp/fastcgi;
  uwsgi_temp_path $ngx/tmp/uwsgi;
  scgi_temp_path $ngx/tmp/scgi;
  default_type text/plain;
  keepalive_timeout 65;
  keepalive_requests 1000000;
  server {
    listen 127.0.0.1:$ngxport;
    root $ngx/www;
  }
}
EOF
    : >"$ngx/error.log"
    "$nginx" -p "$ngx" -c "$ngx/nginx.conf" -e "$ngx/error.log" 2>>"$ngx/error.log" &
    ngxpid=$!
    i=0
    while [ $i -lt 100 ]; do
      curl -sf -o /dev/null "http://127.0.0.1:$ngxport/100.txt" && return 0
      kill -0 "$ngxpid" 2>/dev/null || break
      i=$((i + 1)); sleep 0.05
    done
    kill "$ngxpid" 2>/dev/null || true; wait "$ngxpid" 2>/dev/null || true; ngxpid=""
    try=$((try + 1))
    [ $try -ge 20 ] && { echo "nginx did not start:" >&2; cat "$ngx/error.log" >&2; exit 1; }
    ngxport=$((20000 + (ngxport - 20000 + 7919) % 20000))
  done
}
start_daemon
start_nginx
small='{"op":"ReduceL2","axes":[1],"input":{"dtype":"float32","shape":[3,2,2],"data":[1,2,3,4,5,6,7,8,9,10,11,12]}}'
printf '%s' "$small" >"$work/small.json"
cat >"$work/post.lua" <<LUA
wrk.method = "POST"
wrk.body = '$small'
wrk.headers["Content-Type"] = "application/json"
LUA
curl -sf -H 'Content-Type: application/json' -d "$small" "$url/v1/reduce" >/dev/null
half=$(( (duration + 1) / 2 ))
med() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
: >"$work/rps-small"; : >"$work/rps-nginx"; : >"$work/p99-small"; : >"$work/p99-nginx"; non2xx=0
for round in $(seq "$rounds"); do
  wrk -t2 -c32 -d"${half}s" --latency -s "$work/post.lua" "$url/v1/reduce" >"$work/wrk.txt"
  awk '/^Requests\/sec:/ {print $2}' "$work/wrk.txt" >>"$work/rps-small"
  wrk_ms "$(awk '$1 == "99%" {print $2}' "$work/wrk.txt")" >>"$work/p99-small"; echo >>"$work/p99-small"
  n=$(awk '/Non-2xx/ {print $NF}' "$work/wrk.txt"); non2xx=$((non2xx + ${n:-0}))
  wrk -t2 -c32 -d"${half}s" --latency "http://127.0.0.1:$ngxport/100.txt" >"$work/wrk-nginx.txt"
  awk '/^Requests\/sec:/ {print $2}' "$work/wrk-nginx.txt" >>"$work/rps-nginx"
  wrk_ms "$(awk '$1 == "99%" {print $2}' "$work/wrk-nginx.txt")" >>"$work/p99-nginx"; echo >>"$work/p99-nginx"
done
kill "$ngxpid"; wait "$ngxpid" 2>/dev/null || true; ngxpid=""
stop_daemon
rps=$(med <"$work/rps-small"); p99=$(med <"$work/p99-small")
ngxrps=$(med <"$work/rps-nginx"); ngxp99=$(med <"$work/p99-nginx")
paste -d/ "$work/rps-small" "$work/rps-nginx" |
  awk -F/ '{ printf "%.3f\n", ($2 > 0 ? $1 / $2 : 0) }' >"$work/ratios"
byround=$(awk '{ printf "%s%.2f", (NR > 1 ? " " : ""), $1 }' "$work/ratios")
ok=$(awk -v r="$rps" 'BEGIN { print (r >= 30000) ? 1 : 0 }')
say "small JSON (wrk -t2 -c32, $rounds rounds of ${half}s, median): ${rps} requests/s, p99 ${p99} ms, non-2xx ${non2xx}  (target >= 30000 requests/s: $(met "$ok"))" \
    "{\"bench\":\"daemon\",\"name\":\"small_json_wrk\",\"threads\":2,\"connections\":32,\"duration_s\":$half,\"rounds\":$rounds,\"rps\":$rps,\"rps_rounds\":[$(paste -sd, "$work/rps-small")],\"p99_ms\":$p99,\"non2xx\":$non2xx,\"target_rps\":30000,\"met\":$(tf "$ok")}"
ratio=$(med <"$work/ratios")
ofmed=$(awk -v a="$rps" -v b="$ngxrps" 'BEGIN { printf "%.3f", (b > 0 ? a / b : 0) }')
ok=$(awk -v r="$ratio" 'BEGIN { print (r >= 0.8) ? 1 : 0 }')
say "nginx 100-byte static file (wrk -t2 -c32, the same rounds): ${ngxrps} requests/s, p99 ${ngxp99} ms; small JSON / nginx = ${ratio}x (median of the rounds' ratios ${byround}; ratio of the medians ${ofmed}x)  (target >= 0.8x: $(met "$ok"))" \
    "{\"bench\":\"daemon\",\"name\":\"nginx_static_wrk\",\"threads\":2,\"connections\":32,\"duration_s\":$half,\"rounds\":$rounds,\"rps\":$ngxrps,\"rps_rounds\":[$(paste -sd, "$work/rps-nginx")],\"p99_ms\":$ngxp99,\"small_json_rps\":$rps,\"ratio\":$ratio,\"ratio_rounds\":[$(paste -sd, "$work/ratios")],\"ratio_of_medians\":$ofmed,\"target_ratio\":0.8,\"met\":$(tf "$ok")}"
small_rps=$rps

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
awk -v u="$up" -v r="$red" -v m="$rss" -v json="$json" 'BEGIN {
  ok = r / u <= 1.3
  if (json)
    printf "{\"bench\":\"daemon\",\"name\":\"raw_256mib\",\"seconds\":%.3f,\"upload_only_seconds\":%.3f,\"ratio\":%.3f,\"target_ratio\":1.3,\"met\":%s,\"peak_rss_bytes\":%.0f}\n",
           r, u, r / u, ok ? "true" : "false", m * 1024
  else
    printf "256 MiB float32 raw, reduce all: %.3f s end to end; upload-only server %.3f s; ratio %.2f (target <= 1.3: %s); daemon peak RSS %.1f MB\n",
           r, u, r / u, ok ? "met" : "NOT met", m * 1024 / 1e6 }'
stop_daemon
rm -f "$work/big.raw"

# 3. A 1,000,000-element float32 JSON request (reduce all), its numbers in
# shortest round-trip form (the fewest digits that give the same float32)
# and with 17 significant digits.  MB/s is body bytes over the median of 5
# end-to-end curl times (curl reads the file before its clock starts; no
# Expect: 100-continue round trip); peak RSS is the daemon's VmHWM after the
# 5 requests, against the body size (the target's measure), also shown as
# the growth over the idle daemon's VmHWM (its shared libraries, gRPC and
# TLS among them, are most of an idle daemon's RSS).  A fresh daemon for
# each form.
python3 - "$work/short.json" "$work/long.json" <<'PY'
import random, struct, sys
n = 1000000
rng = random.Random(7)
xs = struct.unpack("<%df" % n, struct.pack("<%df" % n, *(rng.uniform(-10, 10) for _ in range(n))))
def shortest(x):
    # %.6g is already shortest when 6 digits or fewer round-trip.
    for p in (6, 7, 8, 9):
        s = "%.*g" % (p, x)
        if struct.unpack("<f", struct.pack("<f", float(s)))[0] == x:
            return s
    return "%.9g" % x
head = '{"op":"ReduceSumSquare","input":{"dtype":"float32","data":['
with open(sys.argv[1], "w") as f:
    f.write(head + ",".join(map(shortest, xs)) + "]}}")
with open(sys.argv[2], "w") as f:
    f.write(head + ",".join("%.17g" % x for x in xs) + "]}}")
PY
json_run() {  # FORM FILE TARGET_MBS
  bytes=$(wc -c <"$2")
  start_daemon --max-body 268435456
  idle=$(peak_rss_kib "$pid")
  secs=$(for r in 1 2 3 4 5; do
    curl -sf -o /dev/null -w '%{time_total}\n' -H 'Content-Type: application/json' \
      -H 'Expect:' --data-binary @"$2" "$url/v1/reduce"; done | median5)
  rss=$(peak_rss_kib "$pid")
  stop_daemon
  awk -v f="$1" -v b="$bytes" -v s="$secs" -v r="$rss" -v i="$idle" -v t="$3" -v json="$json" 'BEGIN {
    mbs = b / 1e6 / s; x = r * 1024 / b; ok = mbs >= t; okm = x <= 2; a = (r - i) * 1024 / b
    if (json)
      printf "{\"bench\":\"daemon\",\"name\":\"json_1m_%s\",\"elements\":1000000,\"bytes\":%d,\"seconds\":%.4f,\"mbs\":%.1f,\"target_mbs\":%d,\"met\":%s,\"peak_rss_bytes\":%.0f,\"idle_rss_bytes\":%.0f,\"rss_ratio\":%.3f,\"rss_above_idle_ratio\":%.3f,\"target_rss_ratio\":2,\"rss_met\":%s}\n",
             f, b, s, mbs, t, ok ? "true" : "false", r * 1024, i * 1024, x, a, okm ? "true" : "false"
    else
      printf "1M-element float32 JSON, %s numbers (%.1f MB): %.3f s, %.0f MB/s (target >= %d: %s), peak RSS %.1f MB = %.2fx the body (target <= 2x: %s; the idle daemon is %.1f MB, the requests add %.2fx the body)\n",
             f == "shortest" ? "shortest-form" : "17-significant-digit", b / 1e6, s, mbs, t,
             ok ? "met" : "NOT met", r * 1024 / 1e6, x, okm ? "met" : "NOT met", i * 1024 / 1e6, a }'
}
json_run shortest "$work/short.json" 400
json_run digits17 "$work/long.json" 250
# For information, not a target: the same shortest-form requests to a
# daemon whose gRPC core has started (one gRPC connection first: without
# TLS it starts at the first one, grpc.h), as a daemon that also serves
# gRPC clients is; its libraries' pages and threads are most of the
# difference.  The targets above are the default daemon's, gRPC idle.
bytes=$(wc -c <"$work/short.json")
if /usr/bin/python3 -c 'import grpc' 2>/dev/null; then
  start_daemon --max-body 268435456 --grpc-port-file "$work/gport"
  /usr/bin/python3 -c '
import grpc, sys
grpc.channel_ready_future(grpc.insecure_channel(sys.argv[1])).result(timeout=20)' \
    "127.0.0.1:$(cat "$work/gport")"
  idle=$(peak_rss_kib "$pid")
  for r in 1 2 3 4 5; do
    curl -sf -o /dev/null -H 'Content-Type: application/json' -H 'Expect:' \
      --data-binary @"$work/short.json" "$url/v1/reduce"
  done
  rss=$(peak_rss_kib "$pid")
  stop_daemon
  awk -v b="$bytes" -v r="$rss" -v i="$idle" -v json="$json" 'BEGIN {
    if (json)
      printf "{\"bench\":\"daemon\",\"name\":\"json_1m_shortest_grpc_started_rss\",\"info_only\":true,\"bytes\":%d,\"peak_rss_bytes\":%.0f,\"idle_rss_bytes\":%.0f,\"rss_ratio\":%.3f}\n",
             b, r * 1024, i * 1024, r * 1024 / b
    else
      printf "  (for information: the same requests once a gRPC connection has started gRPC core: peak RSS %.1f MB = %.2fx the body, the idle daemon %.1f MB)\n",
             r * 1024 / 1e6, r * 1024 / b, i * 1024 / 1e6 }'
else
  say "  (gRPC-started RSS not measured: /usr/bin/python3 has no grpc module)" \
    '{"bench":"daemon","name":"json_1m_shortest_grpc_started_rss","skipped":"no python3-grpcio"}'
fi
rm -f "$work/short.json" "$work/long.json"

# 4. Open-loop latency (bench/openloop): requests due on a fixed schedule,
# latency from each one's due time to its response's last byte, so queueing
# is not hidden.  Two sending threads, as wrk -t2.  Small JSON at 25/50/80%
# of the wrk rate of 1 (32 to 64 keep-alive connections); 1 MiB float32 raw
# requests at 50% of their own wrk rate (-t2 -c8), 8 to 32 connections.
# Percentiles are over the 2xx responses; errors are counted apart.
openloop_run() {  # NAME PCT MAXRPS CONNS MAXCONNS openloop-args...
  name=$1 pct=$2 max=$3 c=$4 mc=$5
  shift 5
  rate=$(awk -v m="$max" -v p="$pct" 'BEGIN { r = m * p / 100; printf "%.0f", r < 1 ? 1 : r }')
  if [ "$json" -eq 1 ]; then
    "$openloop" --json --label "$name" --port "$port" --rate "$rate" --duration "$duration" \
      --connections "$c" --max-connections "$mc" "$@" |
      sed "s/^{/{\"bench\":\"daemon\",\"name\":\"openloop\",\"pct_of_max\":$pct,\"max_rps\":$max,/"
  else
    "$openloop" --label "open loop, $name at $pct% of $(printf %.0f "$max")/s" --port "$port" --rate "$rate" \
      --duration "$duration" --connections "$c" --max-connections "$mc" "$@"
  fi
}
start_daemon
for pct in 25 50 80; do
  openloop_run small_json "$pct" "$small_rps" 32 64 --path /v1/reduce \
    --header 'Content-Type: application/json' --body "$work/small.json"
done
head -c 1048576 /dev/zero >"$work/1m.raw"
rawpath='/v1/reduce?op=ReduceSumSquare&dtype=float32&shape=262144'
cat >"$work/raw.lua" <<LUA
local f = io.open("$work/1m.raw", "rb")
wrk.body = f:read("*a")
f:close()
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/octet-stream"
LUA
curl -sf -o /dev/null -H 'Content-Type: application/octet-stream' --data-binary @"$work/1m.raw" \
  "$url$rawpath"
wrk -t2 -c8 -d"${duration}s" -s "$work/raw.lua" "$url$rawpath" >"$work/wrk-raw.txt"
raw_rps=$(awk '/^Requests\/sec:/ {print $2}' "$work/wrk-raw.txt")
raw_non2xx=$(awk '/Non-2xx/ {print $NF}' "$work/wrk-raw.txt")
say "1 MiB float32 raw (wrk -t2 -c8 ${duration}s): ${raw_rps} requests/s, non-2xx ${raw_non2xx:-0}" \
    "{\"bench\":\"daemon\",\"name\":\"raw_1mib_wrk\",\"threads\":2,\"connections\":8,\"duration_s\":$duration,\"rps\":$raw_rps,\"non2xx\":${raw_non2xx:-0}}"
openloop_run raw_1mib 50 "$raw_rps" 8 32 --path "$rawpath" \
  --header 'Content-Type: application/octet-stream' --body "$work/1m.raw"
stop_daemon
