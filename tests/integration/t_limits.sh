#!/bin/bash
# t_limits.sh - every limit a client can hit to make the daemon allocate or
# loop, each hit once and answered with its documented status
# (docs/http-api.md, "Limits"): body size (413 before the body is read),
# rank (400), element count claimed by a shape (413 before allocating),
# JSON nesting (400), header size (431 from libmicrohttpd), connection
# count (held in the listen backlog), connections per client address
# (closed at once) and the process's descriptors (the port rests).
. "$(dirname "$0")/lib.sh"
need_own_daemon "limits" || { finish; exit; }

# (--http-threads 3: the connection limits hold across HTTP threads, on a
# machine of any CPU count)
start_daemon --max-body 100000 --max-connections 4 --http-threads 3 ||
  { fail "daemon starts"; finish; exit 1; }
F='{"op":"ReduceL2","input":{"dtype":"float32",'

# ---- body: a claimed length over --max-body is refused before any body
# byte is sent (the client sends the headers only and reads the answer).
exec 5<>"/dev/tcp/127.0.0.1/$PORT"
printf 'POST /v1/reduce HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 50000000\r\n\r\n' >&5
read -r -t 20 line <&5
exec 5>&- 5<&-
check "Content-Length 50000000 > --max-body 100000: 413 with no body byte sent" \
  eval '[ "${line#HTTP/1.1 413 }" != "$line" ]'
head -c 100001 /dev/zero | tr '\0' ' ' >"$TMP/big"
http POST /v1/reduce -H 'Content-Type: application/json' -H 'Transfer-Encoding: chunked' --data-binary @"$TMP/big"
expect_error_body "chunked body over --max-body -> 413" 413 BODY_TOO_LARGE

# ---- rank and nesting
dims=$(printf '1,%.0s' $(seq 32))1
expect_error "rank 33 (limit 32) -> 400" "$F\"shape\":[$dims],\"data\":[1]}}" 400 RANK_TOO_LARGE
deep() { printf '[%.0s' $(seq "$1"); printf 1; printf ']%.0s' $(seq "$1"); }
expect_error "data nested 33 deep -> 400" "$F\"data\":$(deep 33)}}" 400 RANK_TOO_LARGE
expect_error "JSON nested 3000 deep (parser limit 2048) -> 400" "$F\"data\":$(deep 3000)}}" 400 BAD_JSON

# ---- element count: shapes claiming far more elements than the body holds
# are refused before anything is allocated for them (VmHWM stays put).
hwm() { awk '/^VmHWM/ {print $2}' "/proc/$DPID/status"; }
h0=$(hwm)
expect_error "shape [1000000000] with one element -> 413" "$F\"shape\":[1000000000],\"data\":[1]}}" 413 TENSOR_TOO_LARGE
expect_error "shape 1e5^4 (overflows int64 bytes) -> 413" "$F\"shape\":[100000,100000,100000,100000],\"data\":[1]}}" 413 TENSOR_TOO_LARGE
expect_error "empty input with a 1e12-element output -> 413" \
  '{"op":"ReduceL2","axes":[0],"input":{"dtype":"float64","shape":[0,1000000,1000000],"data":[]}}' 413 TENSOR_TOO_LARGE
h1=$(hwm)
check "peak RSS grew by less than 16 MB over those ($h0 -> $h1 kB)" test $((h1 - h0)) -lt 16384

# ---- header size: libmicrohttpd answers 431 past its per-connection
# buffer (32 KiB for the request line, headers and the first body bytes).
printf 'X-Big: %s\n' "$(head -c 40000 /dev/zero | tr '\0' a)" >"$TMP/h40k"
printf 'X-Big: %s\n' "$(head -c 16000 /dev/zero | tr '\0' a)" >"$TMP/h16k"
http GET /healthz -H @"$TMP/h40k"
check "a 40 kB header -> 431" test "$ST" = 431
http GET /healthz -H @"$TMP/h16k"
check "a 16 kB header is still served -> 200" test "$ST" = 200

# ---- connection count: with --max-connections 4 held by idle clients, a
# fifth waits in the listen backlog and is served once one closes.  No
# sleep decides it: the test waits (bounded) for states it can see in
# /proc - the daemon owns the 4 held sockets, the fifth is in the backlog
# (ESTABLISHED, owned by no process) - then has the daemon answer on a held
# connection, so its loop has surely seen the fifth, and checks that the
# fifth is still only queued.
for fd in 5 6 7 8; do eval "exec $fd<>/dev/tcp/127.0.0.1/$PORT"; done
check "the daemon accepted the 4 held connections" poll 30 eval '[ "$(accepted)" = 4 ]'
# (without the held sockets: an inherited copy would keep them open)
curl -s --max-time 120 -o /dev/null -w '%{http_code}' "$URL/healthz" >"$TMP/fifth" 2>/dev/null 5>&- 6>&- 7>&- 8>&- &
cpid=$!
BG_PIDS+=("$cpid")
check "the 5th connection is established, in the listen backlog" \
  poll 30 eval '[ "$(queued)" -ge 5 ]'
printf 'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n' >&6
line=
read -r -t 30 line <&6
check "a held connection is served meanwhile (${line%$'\r'})" eval '[ "${line#HTTP/1.1 200}" != "$line" ]'
# (polled: one reading of /proc/net/tcp once missed the fifth, lib.sh;
# a daemon that accepted it would show 5 accepted throughout)
check "5th connection over --max-connections 4 is not accepted while 4 are open" \
  poll 10 eval '[ "$(accepted)" = 4 ] && [ "$(queued)" -ge 5 ]'
check "... nor answered" kill -0 "$cpid"
exec 5>&- 5<&-
wait "$cpid"
check "... and is served (200) once one closes" test "$(cat "$TMP/fifth")" = 200
for fd in 6 7 8; do eval "exec $fd>&- $fd<&-"; done
stop_daemon
check "daemon exits 0" test "$DRC" = 0

# ---- per-client connections: the third from the same address is closed.
start_daemon --max-connections-per-ip 2 --http-threads 3 || { fail "daemon starts"; finish; exit 1; }
# hold FD: a kept-alive connection that has been served once, so the daemon
# surely counts it (a readiness probe's connection may still be counted for
# a moment after it closed, and then the held one would be the refused one).
hold() {
  local i line
  for i in $(seq 50); do
    eval "exec $1<>/dev/tcp/127.0.0.1/$PORT" &&
      printf 'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n' >&"$1" 2>/dev/null &&
      read -r -t 10 line <&"$1" && [ "${line#HTTP/1.1 200}" != "$line" ] && return 0
    eval "exec $1>&- $1<&-"
    sleep 0.2
  done
  return 1
}
check "two connections held from one address" eval 'hold 5 && hold 6'
st=$(curl -s --max-time 20 -o /dev/null -w '%{http_code}' "$URL/healthz" 2>/dev/null); rc=$?
check "3rd connection from one address over --max-connections-per-ip 2: closed without an answer (curl $rc)" \
  eval '[ "$st" = 000 ] && [ "$rc" = 56 -o "$rc" = 52 ]'
exec 5>&- 5<&- 6>&- 6<&-
poll 10 eval '[ "$(curl -s -o /dev/null -w "%{http_code}" "$URL/healthz")" = 200 ]'
check "served again once the client closed its connections" test $? = 0
stop_daemon
# ---- regression accept_emfile_spin: out of descriptors (the process's own
# limit below --max-connections), the HTTP port logs and rests
# (SOCK_ACCEPT_WAIT_MS) instead of spinning on accept() with a log line
# each time, and serves again once descriptors are free.
start_daemon || { fail "daemon starts"; finish; exit 1; }
starve_fds "$PORT" >"$TMP/emfile.out" 2>&1
n=$(grep -c 'accept: Too many open files; accepting again in 100 ms' "$DDIR/log")
check "EMFILE: the HTTP port logs and rests ($n lines)" eval '[ "$n" -ge 1 ] && [ "$n" -le 100 ]'
check "EMFILE: served again once descriptors are free" poll 30 healthy
stop_daemon
check "EMFILE: exit 0" test "$DRC" = 0

"$REDUCED_BIN" --max-connections-per-ip x >/dev/null 2>&1; rc=$?
check "--max-connections-per-ip x: exit 2" test $rc = 2
finish
