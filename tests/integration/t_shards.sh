#!/bin/bash
# t_shards.sh - --http-threads N (daemon/server.h): the HTTP front end on N
# loop threads answers exactly what one thread answers (the same bytes for
# JSON, raw, .npy and /v2 requests from parallel clients on keep-alive
# connections), counts every request once in /metrics, gives distinct
# request ids, starts N-1 more threads, and refuses a bad count.
. "$(dirname "$0")/lib.sh"
need_own_daemon "shards" || { finish; exit; }

NCLI=8 NPER=12
RAWQ='op=ReduceSumSquare&dtype=float32&shape=2,3&axes=1'
printf '\x00\x00\x80\x3f\x00\x00\x00\x40\x00\x00\x40\x40\x00\x00\x80\x40\x00\x00\xa0\x40\x00\x00\xc0\x40' >"$TMP/six.raw"

# Client c sends NPER requests (four kinds in turn) on one curl, so on
# kept-alive connections; each answer goes to its own file.
client() {
  local dir=$1 c=$2 i args=()
  for ((i = 0; i < NPER; i++)); do
    local k=$((c * NPER + i))
    case $((k % 4)) in
      0) args+=(-o "$dir/$k" -H 'Content-Type: application/json'
           --data-binary '{"op":"ReduceL2","axes":[1],"input":{"dtype":"float32","shape":[3,2,2],"data":[1,2,3,4,5,6,7,8,9,10,11,'"$k"']}}'
           "$URL/v1/reduce") ;;
      1) args+=(-o "$dir/$k" -H 'Content-Type: application/json'
           --data-binary '{"op":"ReduceSumSquare","keepdims":0,"input":{"dtype":"int64","shape":[2,2],"data":['"$k"',2,3,4]}}'
           "$URL/v1/reduce") ;;
      2) args+=(-o "$dir/$k" -H 'Content-Type: application/octet-stream'
           --data-binary @"$TMP/six.raw" "$URL/v1/reduce?$RAWQ") ;;
      3) args+=(-o "$dir/$k" -H 'Content-Type: application/json'
           --data-binary '{"inputs":[{"name":"data","datatype":"FP32","shape":[2],"data":[3,'"$k"']}]}'
           "$URL/v2/models/ReduceL2/infer") ;;
    esac
    [ $i -lt $((NPER - 1)) ] && args+=(--next)
  done
  curl -sS --max-time 60 "${args[@]}" 2>>"$dir/err"
}

run_mix() {  # DIR: every client at once
  local dir=$1 c pids=()
  mkdir -p "$dir"
  for ((c = 0; c < NCLI; c++)); do client "$dir" "$c" & pids+=($!); BG_PIDS+=($!); done
  for c in "${pids[@]}"; do wait "$c"; done
  BG_PIDS=()
}

metric_sum() {  # the sum of a metric family's samples with LABEL text
  curl -s "$URL/metrics" | awk -v n="$1" -v l="$2" 'index($1, n "{") == 1 && index($1, l) { s += $2 } END { print s + 0 }'
}

ntasks() { ls "/proc/$DPID/task" 2>/dev/null | wc -l; }

total=$((NCLI * NPER))
start_daemon --http-threads 1 --grpc-listen none || { fail "daemon starts (--http-threads 1)"; finish; exit 1; }
run_mix "$TMP/one"
t1=$(ntasks)
stop_daemon
check "--http-threads 1: exits 0" test "$DRC" = 0

start_daemon --http-threads 4 --grpc-listen none || { fail "daemon starts (--http-threads 4)"; finish; exit 1; }
run_mix "$TMP/four"
t4=$(ntasks)
check "--http-threads 4 runs 3 more threads than 1 ($t1 -> $t4)" test "$t4" = $((t1 + 3))
bad=0 first=
for ((k = 0; k < total; k++)); do
  if [ ! -s "$TMP/one/$k" ] || ! cmp -s "$TMP/one/$k" "$TMP/four/$k"; then
    bad=$((bad + 1))
    [ -z "$first" ] && first="request $k: $(head -c 200 "$TMP/one/$k" 2>/dev/null) vs $(head -c 200 "$TMP/four/$k" 2>/dev/null)"
  fi
done
if [ "$bad" = 0 ]; then ok "$total requests from $NCLI clients: 4 threads answer the same bytes as 1"
else fail "$total requests from $NCLI clients: 4 threads answer the same bytes as 1" "$bad differ" "$first"; fi
check "no client error" eval '[ ! -s "$TMP/four/err" ]'
check "the answers are the exact ones (first: ReduceL2 [3,1,2])" grep -q '"data":\[3.1622777,4.472136,8.602325,10,14.21267' "$TMP/four/0"
n=$(metric_sum reduced_requests_total 'route="/v1/reduce"')
check "/metrics counts each /v1/reduce request once across the threads ($n)" test "$n" = $((total * 3 / 4))
n=$(metric_sum reduced_requests_total 'route="/v2/models/{model}/infer"')
check "... and each /v2 infer ($n)" test "$n" = $((total / 4))

# Request ids: 40 requests on 40 connections (spread over the threads).
for i in $(seq 40); do
  curl -s -o /dev/null -D - "$URL/healthz" | tr -d '\r' | awk 'tolower($1) == "x-request-id:" { print $2 }'
done >"$TMP/ids"
check "40 request ids over 4 threads: all distinct" eval '[ "$(sort -u "$TMP/ids" | wc -l)" = 40 ]'
stop_daemon
check "--http-threads 4: SIGTERM exits 0" test "$DRC" = 0

for v in 0 65 x; do
  "$REDUCED_BIN" --http-threads "$v" >/dev/null 2>"$TMP/err"; rc=$?
  check "--http-threads $v: exit 2 naming the option" eval '[ $rc = 2 ] && grep -q http-threads "$TMP/err"'
done
REDUCED_HTTP_THREADS=0 "$REDUCED_BIN" >/dev/null 2>"$TMP/err"; rc=$?
check "REDUCED_HTTP_THREADS=0: exit 2" test $rc = 2
check "--help lists --http-threads" eval '"$REDUCED_BIN" --help | grep -q -- "--http-threads"'
finish
