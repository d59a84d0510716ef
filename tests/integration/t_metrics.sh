#!/bin/bash
# t_metrics.sh - GET /metrics against a known request mix sent by 8
# parallel clients (xargs -P) to a fresh daemon (/v1 JSON, raw and .npy,
# /v2 JSON and binary, errors, probes): exact counter deltas per
# route/op/format/status (route patterns such as /v2/models/{model}/infer,
# never raw URLs), histogram counts and sums, bytes in and out
# (against what curl itself sent and received), gauges, and a strict
# format check (promcheck.awk, and promtool of Debian's prometheus
# package: scripts/bootstrap.sh, step: Debian packages).
. "$(dirname "$0")/lib.sh"
need_own_daemon "metrics of a known request mix" || { finish; exit; }

PROMCHECK=$here/promcheck.awk
t_before=$(date +%s)
start_daemon --threads 2 --max-pending 64 || { fail "daemon starts"; finish; exit 1; }
t_after=$(date +%s)

# scrape FILE: GET /metrics into FILE (headers in $H).
scrape() { http GET /metrics; cp "$B" "$1"; }
# val FILE SERIES: the value of exactly SERIES (name{labels}), 0 if absent.
val() { awk -v s="$2" 'index($0, s " ") == 1 { v = substr($0, length(s) + 2) } END { print (v == "" ? 0 : v) }' "$1"; }
# delta SERIES: its value after the mix minus before.
delta() { echo $(( $(val "$TMP/m1" "$1") - $(val "$TMP/m0" "$1") )); }
expect_delta() {
  local d; d=$(delta "$1")
  if [ "$d" = "$2" ]; then ok "$1 += $2"; else fail "$1 += $2" "got +$d"; fi
}

scrape "$TMP/m0"
check "GET /metrics -> 200" test "$ST" = 200
check "Content-Type: text/plain; version=0.0.4; charset=utf-8" \
  test "$(hdr Content-Type)" = "text/plain; version=0.0.4; charset=utf-8"
check "X-Request-Id on /metrics" test -n "$(hdr X-Request-Id)"
m0_bytes=$(wc -c <"$TMP/m0")

# ---- the mix: one line per request, "KIND"; run by 8 parallel workers.
N_L2=40 N_SSQ=30 N_400=20 N_404=10 N_415=10 N_405=10 N_HEALTH=10
N_RAW=12 N_NPY=12 N_V2J=12 N_V2B=12 N_V2E400=6 N_V2E404=6 N_V2READY=6
{
  for ((i = 0; i < N_RAW; i++)); do echo raw; done
  for ((i = 0; i < N_NPY; i++)); do echo npy; done
  for ((i = 0; i < N_V2J; i++)); do echo v2json; done
  for ((i = 0; i < N_V2B; i++)); do echo v2bin; done
  for ((i = 0; i < N_V2E400; i++)); do echo v2e400; done
  for ((i = 0; i < N_V2E404; i++)); do echo v2e404; done
  for ((i = 0; i < N_V2READY; i++)); do echo v2ready; done
  for ((i = 0; i < N_L2; i++)); do echo l2; done
  for ((i = 0; i < N_SSQ; i++)); do echo ssq; done
  for ((i = 0; i < N_400; i++)); do echo e400; done
  for ((i = 0; i < N_404; i++)); do echo e404; done
  for ((i = 0; i < N_415; i++)); do echo e415; done
  for ((i = 0; i < N_405; i++)); do echo e405; done
  for ((i = 0; i < N_HEALTH; i++)); do echo health; done
} | shuf --random-source=<(yes) >"$TMP/mix"
NTOTAL=$(wc -l <"$TMP/mix")

# Binary bodies: float32 [3,4] raw (little-endian); int32 [3,4] as a
# version 1.0 .npy (magic, version, header length 118 = 0x76, the header
# dict padded with spaces to a 128-byte preamble, newline, data); the /v2
# binary extension: a JSON header, then the float32 [3,4] blob.
printf '\000\000\100\100\000\000\200\100' >"$TMP/x.raw"
printf '\223NUMPY\001\000\166\000%s%60s\n\003\000\000\000\004\000\000\000' \
  "{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }" '' >"$TMP/x.npy"
check ".npy body is 128 + 8 bytes" test "$(wc -c <"$TMP/x.npy")" = 136
v2hdr='{"inputs":[{"name":"data","shape":[2],"datatype":"FP32","parameters":{"binary_data_size":8}}],"parameters":{"binary_data_output":true}}'
{ printf '%s' "$v2hdr"; cat "$TMP/x.raw"; } >"$TMP/x.v2bin"
echo "${#v2hdr}" >"$TMP/x.v2hdrlen"

# Requests refused before their body is read (404, 415, ...) carry no body:
# libmicrohttpd discards such a body unread, so it is not "received".
# One request; prints "KIND STATUS BYTES_UP BYTES_DOWN" (curl's own counts
# of body bytes sent and received).
cat >"$TMP/one.sh" <<'EOF'
#!/bin/bash
url=$1 dir=$2 kind=$3
ct=(-H 'Content-Type: application/json')
case $kind in
  raw)    args=(-H 'Content-Type: application/octet-stream' --data-binary @"$dir/x.raw" "$url/v1/reduce?op=ReduceL2&dtype=float32&shape=2") ;;
  npy)    args=(-H 'Content-Type: application/x-npy' --data-binary @"$dir/x.npy" "$url/v1/reduce?op=ReduceSumSquare") ;;
  v2json) args=(--data-binary '{"inputs":[{"name":"data","shape":[2],"datatype":"INT32","data":[3,4]}]}' "$url/v2/models/ReduceSumSquare/infer") ;;
  v2bin)  args=(-H "Inference-Header-Content-Length: $(cat "$dir/x.v2hdrlen")" --data-binary @"$dir/x.v2bin" "$url/v2/models/ReduceL2/versions/13/infer") ;;
  v2e400) args=(--data-binary '{"inputs":[{"name":"data","shape":[1],"datatype":"FP32","data":[1]}],"parameters":{"keepdims":2}}' "$url/v2/models/ReduceL2/infer") ;;
  v2e404) args=("$url/v2/models/ReduceFoo/ready") ;;   # no body, as e415
  v2ready) args=("$url/v2/models/ReduceSumSquare/ready") ;;
  l2)     args=(-X POST "${ct[@]}" --data-binary '{"op":"ReduceL2","keepdims":0,"input":{"dtype":"float32","data":[3,4]}}' "$url/v1/reduce") ;;
  ssq)    args=(-X POST "${ct[@]}" --data-binary '{"op":"ReduceSumSquare","axes":[1],"input":{"dtype":"int64","shape":[2,2],"data":[1,2,3,4]}}' "$url/v1/reduce") ;;
  e400)   args=(-X POST "${ct[@]}" --data-binary '{"op":"ReduceL2","axes":[3],"input":{"dtype":"float32","data":[1,2]}}' "$url/v1/reduce") ;;
  e404)   args=("$url/no/such/path") ;;
  e415)   args=(-X POST -H 'Content-Type: text/plain' "$url/v1/reduce") ;;   # no body
  e405)   args=(-X DELETE "$url/healthz") ;;
  health) args=("$url/healthz") ;;
esac
out=$(curl -sS --max-time 60 -o /dev/null -w '%{http_code} %{size_upload} %{size_download}' "${args[@]}") || out="curl-failed 0 0"
echo "$kind $out"
EOF
xargs -P 8 -n 1 bash "$TMP/one.sh" "$URL" "$TMP" <"$TMP/mix" >"$TMP/results"
scrape "$TMP/m1"

check "all $NTOTAL requests answered" test "$(wc -l <"$TMP/results")" = "$NTOTAL"
# Statuses as the clients saw them (the daemon's own numbers must match).
status_ok=1
for kv in l2:200 ssq:200 e400:400 e404:404 e415:415 e405:405 health:200 \
          raw:200 npy:200 v2json:200 v2bin:200 v2e400:400 v2e404:404 v2ready:200; do
  k=${kv%%:*} s=${kv#*:}
  n=$(awk -v k="$k" -v s="$s" '$1 == k && $2 == s' "$TMP/results" | wc -l)
  all=$(awk -v k="$k" '$1 == k' "$TMP/results" | wc -l)
  [ "$n" = "$all" ] || { status_ok=0; fail "every $k request answered $s" "$n of $all"; }
done
[ "$status_ok" = 1 ] && ok "clients saw the expected status for every request"
sum_col() { awk -v c="$1" -v k="$2" '$1 ~ k { s += $c } END { print s + 0 }' "$TMP/results"; }

# ---- format
check "exposition text passes the strict checker" env LC_ALL=C awk -f "$PROMCHECK" "$TMP/m1"
check "exposition text ends with a newline" test "$(tail -c 1 "$TMP/m1" | od -An -c | tr -d ' ')" = '\n'
if need_tool promtool "Debian packages" prometheus; then
  check "promtool check metrics accepts it" eval 'promtool check metrics <"$TMP/m1"'
fi

# ---- counters: exact deltas.  /metrics is 1: the first scrape, counted
# once it completed; the second scrape is still in flight while it renders.
R=reduced_requests_total
expect_delta "$R{route=\"/v1/reduce\",op=\"ReduceL2\",format=\"json\",status=\"200\"}" "$N_L2"
expect_delta "$R{route=\"/v1/reduce\",op=\"ReduceSumSquare\",format=\"json\",status=\"200\"}" "$N_SSQ"
expect_delta "$R{route=\"/v1/reduce\",op=\"ReduceL2\",format=\"json\",status=\"400\"}" "$N_400"
expect_delta "$R{route=\"none\",op=\"none\",format=\"none\",status=\"404\"}" $((N_404 + N_V2E404))
expect_delta "$R{route=\"/v1/reduce\",op=\"none\",format=\"none\",status=\"415\"}" "$N_415"
expect_delta "$R{route=\"/healthz\",op=\"none\",format=\"none\",status=\"405\"}" "$N_405"
expect_delta "$R{route=\"/healthz\",op=\"none\",format=\"none\",status=\"200\"}" "$N_HEALTH"
expect_delta "$R{route=\"/metrics\",op=\"none\",format=\"none\",status=\"200\"}" 1
expect_delta "$R{route=\"/v1/reduce\",op=\"ReduceL2\",format=\"raw\",status=\"200\"}" "$N_RAW"
expect_delta "$R{route=\"/v1/reduce\",op=\"ReduceSumSquare\",format=\"npy\",status=\"200\"}" "$N_NPY"
V2I=/v2/models/{model}/infer V2VI=/v2/models/{model}/versions/{version}/infer
expect_delta "$R{route=\"$V2I\",op=\"ReduceSumSquare\",format=\"json\",status=\"200\"}" "$N_V2J"
expect_delta "$R{route=\"$V2VI\",op=\"ReduceL2\",format=\"binary\",status=\"200\"}" "$N_V2B"
expect_delta "$R{route=\"$V2I\",op=\"ReduceL2\",format=\"json\",status=\"400\"}" "$N_V2E400"
expect_delta "$R{route=\"/v2/models/{model}/ready\",op=\"ReduceSumSquare\",format=\"none\",status=\"200\"}" "$N_V2READY"
if grep -E '^reduced_[a-z_]*\{route="/v2/models/[^{]' "$TMP/m1" >"$TMP/rawurls"; then
  fail "no raw /v2 URL as a route label" "$(head -3 "$TMP/rawurls")"
else ok "no raw /v2 URL as a route label"; fi
# ...and nothing else moved: the sum of all request counters.
total() { awk '/^reduced_requests_total\{/ { s += $NF } END { print s + 0 }' "$1"; }
d=$(( $(total "$TMP/m1") - $(total "$TMP/m0") ))
if [ "$d" = $((NTOTAL + 1)) ]; then ok "reduced_requests_total: $((NTOTAL + 1)) new requests in all"
else fail "reduced_requests_total: $((NTOTAL + 1)) new requests in all" "got $d"; fi

# ---- histograms: counts per route; +Inf = count (the checker); sums
HIST=reduced_request_duration_seconds
expect_delta "${HIST}_count{route=\"/v1/reduce\"}" $((N_L2 + N_SSQ + N_400 + N_415 + N_RAW + N_NPY))
expect_delta "${HIST}_count{route=\"/healthz\"}" $((N_405 + N_HEALTH))
expect_delta "${HIST}_count{route=\"none\"}" $((N_404 + N_V2E404))
expect_delta "${HIST}_bucket{route=\"none\",le=\"+Inf\"}" $((N_404 + N_V2E404))
expect_delta "${HIST}_count{route=\"$V2I\"}" $((N_V2J + N_V2E400))
expect_delta "${HIST}_count{route=\"$V2VI\"}" "$N_V2B"
reduce_up=$(sum_col 3 '^(l2|ssq|e400|e415|raw|npy)$')
reduce_down=$(sum_col 4 '^(l2|ssq|e400|e415|raw|npy)$')
expect_delta "reduced_request_size_bytes_count{route=\"/v1/reduce\"}" $((N_L2 + N_SSQ + N_400 + N_415 + N_RAW + N_NPY))
expect_delta "reduced_request_size_bytes_sum{route=\"/v1/reduce\"}" "$reduce_up"
expect_delta "reduced_response_size_bytes_sum{route=\"/v1/reduce\"}" "$reduce_down"
expect_delta "reduced_request_size_bytes_sum{route=\"$V2I\"}" "$(sum_col 3 '^(v2json|v2e400)$')"
expect_delta "reduced_request_size_bytes_sum{route=\"$V2VI\"}" "$(sum_col 3 '^v2bin$')"
expect_delta "reduced_response_size_bytes_sum{route=\"$V2VI\"}" "$(sum_col 4 '^v2bin$')"
expect_delta "reduced_response_size_bytes_count{route=\"/healthz\"}" $((N_405 + N_HEALTH))
expect_delta "reduced_response_size_bytes_sum{route=\"/healthz\"}" "$(sum_col 4 '^(e405|health)$')"
# Small bodies: every reduce request and response is below 1024 bytes, so
# all of them are in the le="1024" bucket.
expect_delta "reduced_request_size_bytes_bucket{route=\"/v1/reduce\",le=\"1024\"}" $((N_L2 + N_SSQ + N_400 + N_415 + N_RAW + N_NPY))
# 64 B or less: the empty 415 bodies and the 8-byte raw bodies (.npy: 136 B)
expect_delta "reduced_request_size_bytes_bucket{route=\"/v1/reduce\",le=\"64\"}" $((N_415 + N_RAW))

# ---- bytes in and out: what curl sent and received, plus the first scrape
expect_delta reduced_bytes_received_total "$(sum_col 3 .)"
expect_delta reduced_bytes_sent_total $(( $(sum_col 4 .) + m0_bytes ))

# ---- gauges
check "reduced_requests_in_flight 1 (the scrape itself)" test "$(val "$TMP/m1" reduced_requests_in_flight)" = 1
check "reduced_requests_queued 0 when idle" test "$(val "$TMP/m1" reduced_requests_queued)" = 0
check "reduced_worker_threads 2 (--threads 2)" test "$(val "$TMP/m1" reduced_worker_threads)" = 2
check "reduced_max_pending 64 (--max-pending 64)" test "$(val "$TMP/m1" reduced_max_pending)" = 64
st=$(val "$TMP/m1" process_start_time_seconds); st=${st%%.*}
check "process_start_time_seconds within the start of the daemon ($t_before..$t_after)" \
  test "$st" -ge "$t_before" -a "$st" -le "$t_after"
version=$(sed -n 's/^AC_INIT(\[reduced\], \[\([^]]*\)\].*/\1/p' "$top_srcdir/configure.ac")
check "reduced_build_info{version=\"$version\"} 1" test "$(val "$TMP/m1" "reduced_build_info{version=\"$version\"}")" = 1

# ---- HEAD and the route's own errors
http HEAD /metrics
check "HEAD /metrics -> 200" test "$ST" = 200
http POST /metrics -H 'Content-Type: application/json' --data-binary '{}'
expect_error_body "POST /metrics -> 405" 405 METHOD_NOT_ALLOWED

finish
