#!/bin/bash
# t_queue.sh - admission by memory (--max-inflight-bytes) with a queue
# (--queue-timeout), issue 13: a request that does not fit waits with its
# body unread and is answered once admitted; only one that waited
# --queue-timeout gets 503 with Retry-After; one that could never fit is
# 413; a client that closes while waiting is released at once (its file
# descriptor too), and the queue metrics say so.
. "$(dirname "$0")/lib.sh"
need_own_daemon "queue" || { finish; exit; }

RAW='Content-Type: application/octet-stream'
Q='op=ReduceSumSquare&dtype=float32&shape=4000000&axes=0'
metric() { curl -s "$URL/metrics" | awk -v n="$1" '$1 == n {print $2}'; }
nfd() { ls "/proc/$DPID/fd" 2>/dev/null | wc -l; }

# A streamed 16 MB raw body (above --buffer-max 1 MiB) is planned at its two
# stream buffers (a sixteenth of the tensor in 64 KiB steps: 983040 bytes
# each) plus 4 output bytes plus 16 KiB: 1982468 bytes.  With a budget of
# 3 MB one of them fits at a time.  --http-threads 3: the queue is one
# across the HTTP threads (admit.h), whatever the machine's CPU count.
start_daemon --max-inflight-bytes 3000000 --queue-timeout 2 --log-level debug --http-threads 3 ||
  { fail "daemon starts"; finish; exit 1; }
# 16 MB of float32 1.0 (0x3f800000): the sum of squares is exactly 4e6.
/usr/bin/python3 -c '
import sys
sys.stdout.buffer.write(b"\x00\x00\x80\x3f" * 4000000)' >"$TMP/ones" 2>/dev/null ||
  awk 'BEGIN { for (i = 0; i < 4000000; i++) printf "%c%c%c%c", 0, 0, 128, 63 }' >"$TMP/ones"

# ---- six at once: they queue, and every one gets the exact answer.
pids=
for i in 1 2 3 4 5 6; do
  curl -s -H "Accept: application/json" -o "$TMP/o$i" -w '%{http_code}\n' -H "$RAW" --data-binary @"$TMP/ones" \
    "$URL/v1/reduce?$Q" >"$TMP/st$i" &
  pids="$pids $!"
done
wait $pids
good=0
for i in 1 2 3 4 5 6; do
  [ "$(cat "$TMP/st$i")" = 200 ] && grep -q '"data":\[4e+6\]' "$TMP/o$i" && good=$((good + 1))
done

check "6 concurrent 16 MB bodies under a 3 MB budget: 6 answers 200 with 4e+6 (the shortest float32 4000000; $good)" test "$good" = 6
check "some of them waited (log: 'waits for 1982468 bytes')" grep -q 'waits for 1982468 bytes' "$DDIR/log"
check "reduced_queue_wait_seconds_count counts the 6" test "$(metric reduced_queue_wait_seconds_count)" = 6
check "reduced_requests_waiting back to 0" test "$(metric reduced_requests_waiting)" = 0
check "reduced_inflight_bytes back to 0" test "$(metric reduced_inflight_bytes)" = 0

# ---- every kind of body can wait and is then read whole: behind a slow
# upload that holds the budget, a big raw body queues first, then a /v2
# binary body, an .npy body and an empty POST queue behind it (arrival
# order); all are answered once admitted.
curl -s -o /dev/null --limit-rate 8M -H "$RAW" --data-binary @"$TMP/ones" "$URL/v1/reduce?$Q" &
slow=$!
poll 10 eval '[ "$(metric reduced_inflight_bytes)" = 1982468 ]'
curl -s -o /dev/null -w '%{http_code}' -H "$RAW" --data-binary @"$TMP/ones" "$URL/v1/reduce?$Q" >"$TMP/q0" &
q0=$!
poll 5 eval '[ "$(metric reduced_requests_waiting)" = 1 ]'
hdr='{"inputs":[{"name":"data","shape":[2],"datatype":"FP32","parameters":{"binary_data_size":8}}]}'
{ printf '%s' "$hdr"; printf '\000\000\100\100\000\000\200\100'; } >"$TMP/v2bin"   # 3.0, 4.0
curl -s -o "$TMP/q1" -H "Inference-Header-Content-Length: ${#hdr}" --data-binary @"$TMP/v2bin" \
  "$URL/v2/models/ReduceL2/versions/18/infer" &
q1=$!
{ printf '\223NUMPY\001\000\166\000'
  printf "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }%*s\n" 60 ''
  printf '\000\000\100\100\000\000\200\100'; } >"$TMP/q.npy"
curl -s -o "$TMP/q2" -H 'Content-Type: application/x-npy' -H 'Accept: application/json' \
  --data-binary @"$TMP/q.npy" "$URL/v1/reduce?op=ReduceL2" &
q2=$!
curl -s -o "$TMP/q3" -w '%{http_code}' -X POST -H 'Content-Type: application/json' -H 'Content-Length: 0' \
  "$URL/v1/reduce" >"$TMP/q3st" &
q3=$!
poll 5 eval '[ "$(metric reduced_requests_waiting)" = 4 ]'
check "a raw, a /v2 binary, an .npy and an empty body wait together (4)" test "$(metric reduced_requests_waiting)" = 4
wait $slow $q0 $q1 $q2 $q3
check "  ... the raw one: 200" test "$(cat "$TMP/q0")" = 200
check "  ... the /v2 binary one: ReduceL2 [3, 4] = 5 ($(head -c 150 "$TMP/q1"))" grep -q '"data":\[5\]' "$TMP/q1"
check "  ... the .npy one: 5 ($(head -c 150 "$TMP/q2"))" grep -q '"data":\[5\]' "$TMP/q2"
check "  ... the empty one: 400 BAD_JSON ($(cat "$TMP/q3st"))" eval '[ "$(cat "$TMP/q3st")" = 400 ] && grep -q BAD_JSON "$TMP/q3"'

# ---- a slow upload holds the budget; the next waits --queue-timeout 2 s
# and gets 503 with Retry-After, before its body is read.
curl -s -o "$TMP/slow" -w '%{http_code}' --limit-rate 2M -H "$RAW" \
  --data-binary @"$TMP/ones" "$URL/v1/reduce?$Q" >"$TMP/slowst" &
slow=$!
poll 10 eval '[ "$(metric reduced_inflight_bytes)" = 1982468 ]'
t0=$(date +%s%N)
http POST "/v1/reduce?$Q" -H "$RAW" --data-binary @"$TMP/ones"
t1=$(date +%s%N)
expect_error_body "the second waits --queue-timeout 2 and gets 503 OVERLOADED" 503 OVERLOADED
check "  ... with Retry-After" grep -qi '^Retry-After: ' "$H"
check "  ... naming --queue-timeout ($(body_excerpt))" grep -q 'queue-timeout 2' "$B"
ms=$(((t1 - t0) / 1000000))
check "  ... after about 2 s ($ms ms)" eval '[ "$ms" -ge 1900 ] && [ "$ms" -lt 6000 ]'
check "  ... with its body unread (the log shows in=0)" \
  eval 'grep "status=503" "$DDIR/log" | grep -q " in=0 "'
wait $slow
check "the slow upload still gets 200" test "$(cat "$TMP/slowst")" = 200

# ---- a request above the whole budget can never fit: 413 at once.
{ printf '{"op":"ReduceL2","input":{"dtype":"float32","shape":[1],"data":[1]},"pad":"'
  head -c 2100000 /dev/zero | tr '\0' a; printf '"}'; } >"$TMP/bigjson"
http POST /v1/reduce -H 'Content-Type: application/json' --data-binary @"$TMP/bigjson"
expect_error_body "a 2.1 MB JSON body (planned at 5x) above a 3 MB budget -> 413" 413 BODY_TOO_LARGE
check "  ... naming --max-inflight-bytes" grep -q 'max-inflight-bytes 3000000' "$B"

# ---- a client that closes while it waits is released at once: the wait
# count and the open descriptors come back well before --timeout (30 s).
sleep 0.5
fd0=$(nfd)
curl -s -o /dev/null --limit-rate 2M -H "$RAW" --data-binary @"$TMP/ones" "$URL/v1/reduce?$Q" &
slow=$!
poll 10 eval '[ "$(metric reduced_inflight_bytes)" = 1982468 ]'
for i in 1 2 3 4 5; do
  curl -s -o /dev/null --max-time 1 -H "$RAW" --data-binary @"$TMP/ones" "$URL/v1/reduce?$Q" &
done
poll 5 eval '[ "$(metric reduced_requests_waiting)" = 5 ]'
check "5 requests wait behind the slow one" test "$(metric reduced_requests_waiting)" = 5
sleep 1.2   # their clients give up (--max-time 1)
t0=$(date +%s)
poll 2 eval '[ "$(metric reduced_requests_waiting)" = 0 ]'
check "their closes are seen within 2 s: reduced_requests_waiting 0" test "$(metric reduced_requests_waiting)" = 0
wait $slow
poll 5 eval '[ "$(nfd)" -le "$fd0" ]'
check "open descriptors back to the idle count ($fd0 -> $(nfd))" eval '[ "$(nfd)" -le "$fd0" ]'
check "the log names the closes" grep -q 'client closed while waiting' "$DDIR/log"
stop_daemon

# ---- --max-pending counts the waiting too: with 1, a second concurrent
# request is 503 at once, as before the queue.
start_daemon --max-pending 1 ||
  { fail "daemon starts"; finish; exit 1; }
curl -s -o /dev/null --limit-rate 4M -H "$RAW" --data-binary @"$TMP/ones" "$URL/v1/reduce?$Q" &
slow=$!
poll 10 eval '[ "$(metric reduced_inflight_bytes)" = 1982468 ]'
http POST /v1/reduce -H 'Content-Type: application/json' -d '{"op":"ReduceL2","input":{"dtype":"float32","shape":[1],"data":[3]}}'
expect_error_body "--max-pending 1: the second concurrent request is 503 OVERLOADED" 503 OVERLOADED
check "  ... naming --max-pending" grep -q 'max-pending 1' "$B"
wait $slow
finish
