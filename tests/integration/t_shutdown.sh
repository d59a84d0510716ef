#!/bin/bash
# t_shutdown.sh - SIGTERM with requests in flight: each gets its full,
# correct answer, new connections are refused, /healthz and /readyz on an
# open connection say ok / DRAINING (also /v2/health/live, /v2/health/ready,
# /v2/models/{model}/ready and infer), exit 0; exit 1 when --grace runs out;
# SIGPIPE is ignored.
#
# No sleeps decide anything: the in-flight requests are held half-sent by
# writers we control (a FIFO feeding curl, and a raw /dev/tcp socket), and
# the test waits (bounded) until the daemon process has accepted their
# connections (its socket fds in /proc) before it sends the signal.
. "$(dirname "$0")/lib.sh"

if [ -n "${REDUCED_TEST_URL:-}" ]; then
  skip "shutdown and signals" "they need their own daemon; REDUCED_TEST_URL is set"
  finish; exit
fi
if [ ! -x "$REDUCED_BIN" ]; then echo "# $REDUCED_BIN not built"; echo "0 passed, 1 failed"; exit 1; fi

refused() { curl -s --max-time 5 -o /dev/null "$URL/healthz"; [ $? = 7 ]; }

# hold_curl NAME BODYFILE SPLIT: a chunked POST whose body comes from a FIFO;
# the writer sends SPLIT bytes, touches NAME.half, then waits for NAME.go.
hold_curl() {
  local n=$TMP/$1 size
  mkfifo "$n.fifo" "$n.go"
  size=$(wc -c <"$2")
  ( head -c "$3" "$2"; : >"$n.half"; read -r _ <"$n.go"; tail -c $((size - $3)) "$2" ) >"$n.fifo" &
  BG_PIDS+=($!)
  curl -sS --max-time 300 -o "$n.body" -w '%{http_code}' -X POST -T - \
    -H 'Content-Type: application/json' "$URL/v1/reduce" <"$n.fifo" >"$n.status" 2>"$n.err" &
  BG_PIDS+=($!)
}
# hold_raw NAME BODYFILE SPLIT: the same over a raw socket with Content-Length.
hold_raw() {
  local n=$TMP/$1 size
  mkfifo "$n.go"
  size=$(wc -c <"$2")
  (
    exec 3<>"/dev/tcp/127.0.0.1/$PORT" || exit 1
    printf 'POST /v1/reduce HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %s\r\nConnection: close\r\n\r\n' "$size" >&3
    head -c "$3" "$2" >&3
    : >"$n.half"
    read -r _ <"$n.go"
    tail -c $((size - $3)) "$2" >&3
    timeout 300 cat <&3 >"$n.resp"
  ) &
  BG_PIDS+=($!)
}
release() { echo go >"$TMP/$1.go"; }

# A request over one kept-alive connection (fd 5): prints the status line,
# the headers and the body.  With BODY: a POST of it.
ka_get() { # ka_get PATH FD [BODY]
  local fd=${2:-5} req
  if [ $# -ge 3 ]; then
    printf -v req 'POST %s HTTP/1.1\r\nHost: x\r\nContent-Length: %s\r\n\r\n%s' "$1" "${#3}" "$3"
  else
    printf -v req 'GET %s HTTP/1.1\r\nHost: x\r\n\r\n' "$1"
  fi
  # a subshell ignoring SIGPIPE: the daemon may have closed the connection
  ( trap '' PIPE; printf '%s' "$req" >&"$fd" ) 2>/dev/null || return 1
  local line len=0 body=
  IFS= read -r -t 20 line <&"$fd" || return 1
  printf '%s\n' "${line%$'\r'}"
  while IFS= read -r -t 20 line <&"$fd"; do
    line=${line%$'\r'}
    [ -z "$line" ] && break
    case ${line,,} in content-length:*) len=${line#*:}; len=${len// /};; esac
    printf '%s\n' "$line"
  done
  [ "$len" -gt 0 ] && IFS= read -r -N "$len" -t 20 body <&"$fd"
  printf '\n%s\n' "$body"
}

# ---- requests in flight, then SIGTERM
# bodies: int64 data s*((i%7)-3), 2800000 elements -> SSQ = s^2 * 28 * 400000
for s in 1 2 3; do "$JTOOL" gen ReduceSumSquare int64 2800000 "$s" '"keepdims":0,' >"$TMP/b$s.json"; done
expect_for() { echo '{"op":"ReduceSumSquare","opset":18,"op_version":18,"output":{"dtype":"int64","shape":[],"data":['$(($1 * $1 * 28 * 400000))']}}'; }
# (--timeout 300: the kept-alive connections idle across the signal must not
# be closed as idle meanwhile, however slow this machine is; --http-threads
# 3: every HTTP thread drains and answers what it holds)
if start_daemon --grace 60 --timeout 300 --http-threads 3; then
  hold_curl h1 "$TMP/b1.json" 3000000
  hold_curl h2 "$TMP/b2.json" 4000000
  hold_raw h3 "$TMP/b3.json" 5000000
  poll 60 eval '[ -e "$TMP/h1.half" ] && [ -e "$TMP/h2.half" ] && [ -e "$TMP/h3.half" ]'
  check "three uploads half sent" eval '[ -e "$TMP/h1.half" ] && [ -e "$TMP/h2.half" ] && [ -e "$TMP/h3.half" ]'
  # two kept-alive connections: /readyz on fd 5, /healthz on fd 6
  exec 5<>"/dev/tcp/127.0.0.1/$PORT" 6<>"/dev/tcp/127.0.0.1/$PORT"
  ka_get /readyz 5 >"$TMP/ka0"
  check "readyz on a kept-alive connection before the signal: 200" grep -q '^HTTP/1.1 200' "$TMP/ka0"
  ka_get /healthz 6 >"$TMP/ka0"
  check "healthz on a kept-alive connection before the signal: 200" grep -q '^HTTP/1.1 200' "$TMP/ka0"
  # /v2 on four more: server readiness, model readiness, liveness, infer
  exec 7<>"/dev/tcp/127.0.0.1/$PORT" 8<>"/dev/tcp/127.0.0.1/$PORT" \
       9<>"/dev/tcp/127.0.0.1/$PORT" 4<>"/dev/tcp/127.0.0.1/$PORT"
  v2infer='{"inputs":[{"name":"data","shape":[2],"datatype":"INT32","data":[3,4]}]}'
  ka_get /v2/health/ready 7 >"$TMP/kv7"
  check "/v2/health/ready on a kept-alive connection before the signal: 200" grep -q '^HTTP/1.1 200' "$TMP/kv7"
  ka_get /v2/models/ReduceL2/ready 8 >"$TMP/kv8"
  check "/v2/models/ReduceL2/ready on a kept-alive connection before the signal: 200" grep -q '^HTTP/1.1 200' "$TMP/kv8"
  ka_get /v2/health/live 9 >"$TMP/kv9"
  check "/v2/health/live on a kept-alive connection before the signal: 200" grep -q '^HTTP/1.1 200' "$TMP/kv9"
  ka_get /v2/models/ReduceSumSquare/infer 4 "$v2infer" >"$TMP/kv4"
  check "/v2 infer on a kept-alive connection before the signal: 200, 25" \
    eval 'grep -q "^HTTP/1.1 200" "$TMP/kv4" && grep -q "\"data\":\[25\]" "$TMP/kv4"'
  check "daemon holds the 9 connections" poll 30 eval '[ "$(accepted)" -ge 9 ]'
  kill -TERM "$DPID"
  poll 20 refused
  check "after SIGTERM new connections are refused" refused
  check "daemon still running while requests are in flight" test ! -e "$DDIR/rc"
  # The daemon keeps its open connections while requests are in flight (it
  # only stops accepting new ones, and asks each client to close after its
  # next answer), so every kept-alive connection below must be answered: a
  # closed one is a failure, as for the /v2 twins, never a skip.
  if ka_get /readyz 5 >"$TMP/ka1"; then
    check "readyz while draining: 503" grep -q '^HTTP/1.1 503' "$TMP/ka1"
    check "readyz while draining: Retry-After" grep -qi '^Retry-After: *[0-9]' "$TMP/ka1"
    check "readyz while draining: DRAINING" grep -q '"code": *"DRAINING"' "$TMP/ka1"
  else fail "readyz while draining" "the kept-alive connection was closed"; fi
  if ka_get /healthz 6 >"$TMP/ka2"; then
    check "healthz while draining: 200 ok" eval 'grep -q "^HTTP/1.1 200" "$TMP/ka2" && grep -q "\"status\": *\"ok\"" "$TMP/ka2"'
  else fail "healthz while draining" "the kept-alive connection was closed"; fi
  # /v2 while draining (the uploads above keep the daemon draining)
  v2_draining() { # NAME FILE: 503, Retry-After, {"error":"DRAINING: ..."}
    if grep -q '^HTTP/1.1 503' "$2" && grep -qi '^Retry-After: *[0-9]' "$2" &&
       grep -q '^{"error":"DRAINING: [^"]*"}$' "$2"; then ok "$1"
    else fail "$1" "$(head -c 400 "$2")"; fi
  }
  if ka_get /v2/health/ready 7 >"$TMP/kv7"; then
    v2_draining "/v2/health/ready while draining: 503 DRAINING in the /v2 error form + Retry-After" "$TMP/kv7"
  else fail "/v2/health/ready while draining" "the kept-alive connection was closed"; fi
  if ka_get /v2/models/ReduceL2/ready 8 >"$TMP/kv8"; then
    v2_draining "/v2/models/ReduceL2/ready while draining: 503 DRAINING in the /v2 error form + Retry-After" "$TMP/kv8"
  else fail "/v2/models/ReduceL2/ready while draining" "the kept-alive connection was closed"; fi
  if ka_get /v2/health/live 9 >"$TMP/kv9"; then
    check "/v2/health/live while draining: 200 {\"live\":true}" \
      eval 'grep -q "^HTTP/1.1 200" "$TMP/kv9" && grep -qx "{\"live\":true}" "$TMP/kv9"'
  else fail "/v2/health/live while draining" "the kept-alive connection was closed"; fi
  if ka_get /v2/models/ReduceSumSquare/infer 4 "$v2infer" >"$TMP/kv4"; then
    v2_draining "/v2 infer while draining: 503 DRAINING in the /v2 error form + Retry-After" "$TMP/kv4"
  else fail "/v2 infer while draining" "the kept-alive connection was closed"; fi
  exec 5<&- 5>&- 6<&- 6>&- 7<&- 7>&- 8<&- 8>&- 9<&- 9>&- 4<&- 4>&-
  release h1; release h2; release h3
  for p in "${BG_PIDS[@]}"; do wait "$p" 2>/dev/null; done
  BG_PIDS=()
  for i in 1 2; do
    cp "$TMP/h$i.body" "$B"
    check "in-flight chunked request $i: status 200" test "$(cat "$TMP/h$i.status")" = 200
    check "in-flight chunked request $i: exact answer" "$JTOOL" eq "$B" "$(expect_for $i)"
  done
  sed '1,/^\r\{0,1\}$/d' "$TMP/h3.resp" >"$B"
  check "in-flight Content-Length request: status 200" eval 'head -n 1 "$TMP/h3.resp" | grep -q "^HTTP/1.1 200"'
  check "in-flight Content-Length request: exact answer" "$JTOOL" eq "$B" "$(expect_for 3)"
  wait_exit 90
  check "exit status 0 after the in-flight requests finished (got '$DRC')" test "$DRC" = 0
  check "log: the three requests were logged with status=200" test "$(grep -c 'method=POST path=/v1/reduce status=200' "$DDIR/log")" = 3
  [ -f "$DDIR/rc" ] || stop_daemon KILL
else
  fail "daemon starts (--grace 60)"
fi

# ---- idle kept-alive connections are not in-flight requests: SIGTERM must
# not wait --grace for them (and must not end in exit 1 because of them)
if start_daemon --grace 30; then
  exec 5<>"/dev/tcp/127.0.0.1/$PORT" 6<>"/dev/tcp/127.0.0.1/$PORT"
  ka_get /healthz 5 >"$TMP/ka0"
  poll 30 eval '[ "$(accepted)" -ge 2 ]'
  kill -TERM "$DPID"
  wait_exit 60
  check "SIGTERM with two idle connections (one never used) -> exit 0 (got '$DRC')" test "$DRC" = 0
  exec 5<&- 5>&- 6<&- 6>&-
  [ -f "$DDIR/rc" ] || stop_daemon KILL
fi

# ---- --grace runs out -> exit 1
if start_daemon --grace 1; then
  hold_curl g1 "$TMP/b1.json" 3000000
  poll 60 test -e "$TMP/g1.half"
  poll 30 eval '[ "$(accepted)" -ge 1 ]'
  kill -TERM "$DPID"
  wait_exit 60
  check "request still in flight after --grace 1 -> exit 1 (got '$DRC')" test "$DRC" = 1
  release g1
  for p in "${BG_PIDS[@]}"; do wait "$p" 2>/dev/null; done
  BG_PIDS=()
  check "the abandoned request did not get a 200" test "$(cat "$TMP/g1.status")" != 200
  [ -f "$DDIR/rc" ] || stop_daemon KILL
fi

# ---- SIGPIPE: the client goes away before reading a large answer
if start_daemon; then
  # noop ReduceSumSquare echoes 2800000 squares: a multi-megabyte answer
  "$JTOOL" gen ReduceSumSquare int64 2800000 1 '"noop_with_empty_axes":1,' >"$TMP/pipe.json"
  for i in 1 2 3; do
    (
      exec 3<>"/dev/tcp/127.0.0.1/$PORT"
      printf 'POST /v1/reduce HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %s\r\n\r\n' "$(wc -c <"$TMP/pipe.json")" >&3
      cat "$TMP/pipe.json" >&3
      IFS= read -r -t 60 _ <&3   # the answer has started; now hang up
    )
  done
  check "daemon survives clients hanging up mid-answer (SIGPIPE ignored)" healthy
  check "... and is still running" test ! -e "$DDIR/rc"
  stop_daemon
  check "... and exits 0 on SIGTERM afterwards" test "$DRC" = 0
fi

finish
