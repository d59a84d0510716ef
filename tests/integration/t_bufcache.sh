#!/bin/bash
# t_bufcache.sh - freed large buffers are kept for the next requests
# (--buffer-cache-bytes, api/tmem.h) and never change an answer: a raw
# 1 MiB body after another takes a cached buffer (the hits counter moves),
# a smaller tensor in a buffer that held a larger one is answered on its
# own elements only (raw, and JSON through the push decoder), the cache
# empties itself within seconds of idleness, and --buffer-cache-bytes 0
# keeps nothing.
. "$(dirname "$0")/lib.sh"
need_own_daemon "the buffer cache" || { finish; exit; }
OCT=application/octet-stream

# f32 FILE N VALUE: N float32 elements of VALUE, raw little-endian.
f32() { python3 -c 'import struct, sys; sys.stdout.buffer.write(struct.pack("<f", float(sys.argv[2])) * int(sys.argv[1]))' "$2" "$3" >"$1"; }
# jf32 FILE N VALUE: the same tensor as a /v1 JSON body, ReduceSum of all.
jf32() {
  python3 -c 'import sys; n = int(sys.argv[1]); sys.stdout.write("{\"op\":\"ReduceSum\",\"input\":{\"dtype\":\"float32\",\"data\":[" + ",".join([sys.argv[2]] * n) + "]}}")' "$2" "$3" >"$1"
}
scrape() { http GET /metrics; cp "$B" "$1"; }
val() { awk -v s="$2" 'index($0, s " ") == 1 { v = substr($0, length(s) + 2) } END { print (v == "" ? 0 : v) }' "$1"; }
# sum_raw QUERY FILE: the one element of a raw request's answer, as an
# integer (the sums here are exact in float32).
sum_raw() {
  http POST "/v1/reduce?$1" -H "Content-Type: $OCT" -H 'Accept: application/json' --data-binary @"$2"
  [ "$ST" = 200 ] && jget output.data | tr -d '[]' | awk '{ printf "%d", $1 }'
}
sum_json() {
  http POST /v1/reduce -H 'Content-Type: application/json' -H 'Expect:' --data-binary @"$1"
  [ "$ST" = 200 ] && jget output.data | tr -d '[]' | awk '{ printf "%d", $1 }'
}

f32 "$TMP/big" 262144 2       # 1 MiB
f32 "$TMP/small" 230400 1     # 900 KiB: fits in the big one's buffer
jf32 "$TMP/bigj" 300000 3     # 1.5 MB of JSON
jf32 "$TMP/smallj" 200000 1

start_daemon || { fail "daemon starts"; finish; exit 1; }
scrape "$TMP/m0"
check "reduced_buffer_cache_bytes 0 at start" test "$(val "$TMP/m0" reduced_buffer_cache_bytes)" = 0
r1=$(sum_raw 'op=ReduceSum&dtype=float32&shape=262144' "$TMP/big")
r2=$(sum_raw 'op=ReduceSum&dtype=float32&shape=230400' "$TMP/small")
scrape "$TMP/m1"
check "raw 1 MiB of 2.0: sum 524288 (got $r1)" test "$r1" = 524288
check "raw 900 KiB of 1.0 in a reused buffer: sum 230400, not a byte of the last tensor (got $r2)" test "$r2" = 230400
misses=$(val "$TMP/m1" reduced_buffer_cache_misses_total)
hits=$(val "$TMP/m1" reduced_buffer_cache_hits_total)
check "large buffers were mapped (misses $misses)" test "$misses" -ge 1
check "the second body took a cached buffer (hits $hits)" test "$hits" -ge 1
r3=$(sum_json "$TMP/bigj")
r4=$(sum_json "$TMP/smallj")
check "JSON 300,000 x 3: sum 900000 (got $r3)" test "$r3" = 900000
check "JSON 200,000 x 1 after it: sum 200000 (got $r4)" test "$r4" = 200000
r5=$(sum_raw 'op=ReduceSum&dtype=float32&shape=262144' "$TMP/big")
check "raw 1 MiB again: the same sum (got $r5)" test "$r5" = 524288

# Idle: every cached buffer goes within TRIM_IDLE_MS + TRIM_PERIOD_MS (3 s).
empty() { scrape "$TMP/m2"; [ "$(val "$TMP/m2" reduced_buffer_cache_bytes)" = 0 ]; }
poll 10 empty
check "the cache empties when idle ($(val "$TMP/m2" reduced_buffer_cache_bytes) bytes left)" empty
stop_daemon

start_daemon --buffer-cache-bytes 0 || { fail "daemon starts with --buffer-cache-bytes 0"; finish; exit 1; }
r1=$(sum_raw 'op=ReduceSum&dtype=float32&shape=262144' "$TMP/big")
r2=$(sum_raw 'op=ReduceSum&dtype=float32&shape=230400' "$TMP/small")
scrape "$TMP/m3"
check "--buffer-cache-bytes 0: the same sums ($r1, $r2)" test "$r1 $r2" = "524288 230400"
check "--buffer-cache-bytes 0: no hits" test "$(val "$TMP/m3" reduced_buffer_cache_hits_total)" = 0
check "--buffer-cache-bytes 0: nothing cached" test "$(val "$TMP/m3" reduced_buffer_cache_bytes)" = 0
finish
