#!/bin/bash
# t_cli.sh - the command line: --help, --version, bad options (exit 2),
# environment variables and their precedence, port 0 + --port-file, the
# "listening on" line and one log line per request.
. "$(dirname "$0")/lib.sh"

if [ -n "${REDUCED_TEST_URL:-}" ]; then
  skip "command line, environment and logs" "they need their own daemon; REDUCED_TEST_URL is set"
  finish; exit
fi
if [ ! -x "$REDUCED_BIN" ]; then echo "# $REDUCED_BIN not built"; echo "0 passed, 1 failed"; exit 1; fi

# ---- --help and --version
"$REDUCED_BIN" --help >"$TMP/help" 2>"$TMP/help.err"; rc=$?
check "--help exits 0" test "$rc" = 0
check "--help prints to stdout" test -s "$TMP/help"
# has_default FLAG VALUE: the flag's line (or the two after it) shows VALUE
has_default() {
  awk -v f="$1" -v v="$2" '
    { line[NR] = $0 }
    END {
      for (i = 1; i <= NR; i++) if (index(line[i], f)) {
        t = line[i] " " line[i + 1] " " line[i + 2]
        n = split(t, w, /[^A-Za-z0-9.:_-]+/)
        for (j = 1; j <= n; j++) if (w[j] == v) exit 0
      }
      exit 1
    }' "$TMP/help"
}
NPROC=$(getconf _NPROCESSORS_ONLN 2>/dev/null || nproc)
for fd in "--listen 127.0.0.1:8080" "--threads $NPROC" "--max-body 67108864" \
          "--max-pending 4096" "--max-inflight-bytes 1073741824" \
          "--buffer-cache-bytes 67108864" \
          "--queue-timeout 10" "--max-connections 1024" "--timeout 30" "--grace 10" \
          "--log-level info"; do
  check "--help lists ${fd% *} with default ${fd#* }" has_default "${fd% *}" "${fd#* }"
done
check "--help lists --port-file" grep -q -- --port-file "$TMP/help"
check "--help lists --help and --version" eval 'grep -q -- --version "$TMP/help" && grep -q -- --help "$TMP/help"'
"$REDUCED_BIN" --version >"$TMP/ver" 2>&1; rc=$?
check "--version exits 0" test "$rc" = 0
check "--version prints 0.1.0 ($(head -c 60 "$TMP/ver"))" grep -q '0\.1\.0' "$TMP/ver"

# ---- a bad command line or configuration exits 2 (and does not start)
bad() { # bad NAME [VAR=VALUE...] -- ARGS...
  local name=$1; shift
  local envs=()
  while [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
  # a daemon that wrongly starts is stopped by timeout (status 124)
  env "${envs[@]}" timeout 5 "$REDUCED_BIN" "$@" >/dev/null 2>"$TMP/bad.err" </dev/null
  local rc=$?
  if [ "$rc" = 2 ]; then ok "$name -> exit 2"
  else fail "$name -> exit 2" "exit status $rc" "$(head -c 300 "$TMP/bad.err")"; fi
}
L='--listen 127.0.0.1:0'
bad "unknown option --bogus" -- $L --bogus
bad "stray argument" -- $L extra
bad "--threads abc" -- $L --threads abc
bad "--threads -1" -- $L --threads -1
bad "--threads 4x" -- $L --threads 4x
bad "--max-body abc" -- $L --max-body abc
bad "--max-body -5" -- $L --max-body -5
bad "--max-pending x" -- $L --max-pending x
bad "--max-connections x" -- $L --max-connections x
bad "--timeout x" -- $L --timeout x
bad "--grace x" -- $L --grace x
bad "--log-level loud" -- $L --log-level loud
bad "--listen without a port" -- --listen 127.0.0.1
bad "--listen port 99999" -- --listen 127.0.0.1:99999
bad "--port-file without a value" -- $L --port-file
bad "REDUCED_THREADS=abc" REDUCED_THREADS=abc -- $L
bad "REDUCED_MAX_BODY=abc" REDUCED_MAX_BODY=abc -- $L
bad "REDUCED_LOG_LEVEL=loud" REDUCED_LOG_LEVEL=loud -- $L
bad "REDUCED_LISTEN=nonsense" REDUCED_LISTEN=nonsense --

# ---- port 0, --port-file, the listening line
start_daemon
check "--port-file holds the port, decimal + newline" eval 'grep -Eqx "[1-9][0-9]*" "$TMP/port$NDAEMON" && [ "$(wc -l <"$TMP/port$NDAEMON")" = 1 ]'
check "log says 'listening on 127.0.0.1:$PORT'" grep -q "listening on 127\.0\.0\.1:$PORT\$" "$DDIR/log"
# one log line per request, with the documented fields
printf '%s' '{"op":"ReduceL2","keepdims":0,"input":{"dtype":"float32","data":[3,4]}}' >"$TMP/req"
inb=$(wc -c <"$TMP/req")
http POST /v1/reduce -H 'Content-Type: application/json' -H 'X-Request-Id: log-check-1' --data-binary @"$TMP/req"
outb=$(wc -c <"$B")
http GET /nope -H 'X-Request-Id: log-check-2'
logline() { grep " id=$1 " "$DDIR/log" | tail -n 1; }
poll 10 eval '[ -n "$(logline log-check-2)" ]'
l1=$(logline log-check-1)
check "request log line format ($l1)" eval 'printf "%s\n" "$l1" | grep -Eqx "[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?(Z|[+-][0-9]{2}:?[0-9]{2})? info request id=log-check-1 method=POST path=/v1/reduce status=200 in=$inb out=$outb ms=[0-9]+(\.[0-9]+)?"'
http POST /v1/reduce -H 'Content-Type: application/json' -H 'Transfer-Encoding: chunked' -H 'X-Request-Id: log-check-3' --data-binary @"$TMP/req"
poll 10 eval '[ -n "$(logline log-check-3)" ]'
check "chunked request logged with in=$inb (the body bytes)" eval 'logline log-check-3 | grep -q " status=200 in=$inb out=$outb "'
l2=$(logline log-check-2)
check "404 logged with status=404 ($l2)" eval 'printf "%s\n" "$l2" | grep -q "info request id=log-check-2 method=GET path=/nope status=404 "'
http POST /v1/reduce -H 'Content-Type: application/json' -H 'X-Request-Id: log-check-4' -H 'Content-Length: 100000000' --data-binary x
http PUT /healthz -H 'X-Request-Id: log-check-5'
http POST /v1/reduce -H 'Content-Type: text/plain' -H 'X-Request-Id: log-check-6' --data-binary x
poll 10 eval '[ -n "$(logline log-check-6)" ]'
check "early 413 logged (status=413)" eval 'logline log-check-4 | grep -q "method=POST path=/v1/reduce status=413 "'
check "405 logged (status=405)" eval 'logline log-check-5 | grep -q "method=PUT path=/healthz status=405 "'
check "415 logged (status=415)" eval 'logline log-check-6 | grep -q "method=POST path=/v1/reduce status=415 "'
n=$(grep -c ' info request ' "$DDIR/log")
http GET /healthz; http GET /readyz; http GET /v1/ops
poll 10 eval '[ "$(grep -c " info request " "$DDIR/log")" -ge $((n + 3)) ]'
check "one log line per request (3 more requests, $(($(grep -c ' info request ' "$DDIR/log") - n)) more lines)" \
  test "$(grep -c ' info request ' "$DDIR/log")" = $((n + 3))
stop_daemon
check "SIGTERM on an idle daemon -> exit 0" test "$DRC" = 0

# ---- --inline-max: small requests computed on the I/O thread or on the pool
# give the same answers (the default inlines bodies up to 4096 bytes).
small='{"op":"ReduceL2","axes":[1],"input":{"dtype":"float32","shape":[3,2,2],"data":[1,2,3,4,5,6,7,8,9,10,11,12]}}'
start_daemon --inline-max 0
post "$small"; cp "$B" "$TMP/pool.json"; st_pool=$ST
stop_daemon
start_daemon --inline-max 4096
post "$small"; cp "$B" "$TMP/inline.json"; st_inline=$ST
stop_daemon
check "--inline-max 0 (pool) answers 200" test "$st_pool" = 200
check "inline and pool answers are identical" cmp -s "$TMP/pool.json" "$TMP/inline.json"
check "the small request's answer is right" "$JTOOL" eq "$TMP/inline.json" \
  '{"op":"ReduceL2","opset":18,"op_version":18,"output":{"dtype":"float32","shape":[3,1,2],"data":[3.1622776601683795,4.47213595499958,8.602325267042627,10,14.212670403551895,15.620499351813308]}}' float32

start_daemon
stop_daemon INT
check "SIGINT on an idle daemon -> exit 0" test "$DRC" = 0

# ---- environment variables and precedence
pf=$TMP/env.port
if REDUCED_LISTEN=127.0.0.1:0 REDUCED_PORT_FILE=$pf start_raw "$pf"; then
  ok "REDUCED_LISTEN + REDUCED_PORT_FILE alone start the daemon"
  check "listening line shows the port of REDUCED_PORT_FILE" grep -q "listening on 127\.0\.0\.1:$PORT\$" "$DDIR/log"
  stop_daemon
else fail "REDUCED_LISTEN + REDUCED_PORT_FILE alone start the daemon"; fi

pf=$TMP/flag.port
if REDUCED_PORT_FILE=$TMP/envfile.port start_raw "$pf" --listen 127.0.0.1:0 --port-file "$pf"; then
  check "--port-file beats REDUCED_PORT_FILE (env file not written)" test ! -e "$TMP/envfile.port"
  stop_daemon
else fail "--port-file beats REDUCED_PORT_FILE" "daemon did not write the flag's port file"; fi

pf=$TMP/listen.port
# REDUCED_LISTEN names an address that is not local (TEST-NET-1), so only
# the flag can make this start.
if REDUCED_LISTEN=192.0.2.1:8080 start_raw "$pf" --listen 127.0.0.1:0 --port-file "$pf"; then
  check "--listen beats REDUCED_LISTEN (bound 127.0.0.1:$PORT)" grep -q "listening on 127\.0\.0\.1:$PORT\$" "$DDIR/log"
  stop_daemon
else fail "--listen beats REDUCED_LISTEN" "daemon did not start"; fi

body=$("$JTOOL" gen ReduceSumSquare int32 140 1)   # about 400 bytes; 20 periods x 28 = 560
if REDUCED_MAX_BODY=100 start_daemon; then
  post "$body"
  expect_error_body "REDUCED_MAX_BODY=100 -> 413 for a 400-byte body" 413 BODY_TOO_LARGE
  stop_daemon
fi
if REDUCED_MAX_BODY=100 start_daemon --max-body 100000; then
  post "$body"
  check "--max-body 100000 beats REDUCED_MAX_BODY=100 (200, 560)" eval '[ "$ST" = 200 ] && [ "$(jget output.data)" = "[560]" ]'
  stop_daemon
fi
if REDUCED_LOG_LEVEL=error start_daemon; then
  http GET /healthz -H 'X-Request-Id: quiet-1'
  post "$body" -H 'X-Request-Id: quiet-2'
  http GET /nope -H 'X-Request-Id: quiet-3'
  stop_daemon
  check "REDUCED_LOG_LEVEL=error: no info request lines" eval '! grep -q "info request" "$DDIR/log"'
fi
if REDUCED_LOG_LEVEL=error start_daemon --log-level info; then
  http GET /healthz -H 'X-Request-Id: loud-1'
  poll 10 eval 'grep -q "id=loud-1 " "$DDIR/log"'
  check "--log-level info beats REDUCED_LOG_LEVEL=error" grep -q 'info request id=loud-1 ' "$DDIR/log"
  stop_daemon
fi
if REDUCED_THREADS=1 REDUCED_MAX_PENDING=4 REDUCED_TIMEOUT=5 REDUCED_GRACE=3 REDUCED_MAX_CONNECTIONS=16 start_daemon; then
  post "$body"
  check "all REDUCED_* variables at once: serves (560)" eval '[ "$ST" = 200 ] && [ "$(jget output.data)" = "[560]" ]'
  stop_daemon
  check "... and exits 0 on SIGTERM" test "$DRC" = 0
fi
if start_daemon --threads 1 --max-pending 1 --max-connections 4 --timeout 5 --grace 2 --log-level debug; then
  post "$body"
  check "every flag at once: serves (560)" eval '[ "$ST" = 200 ] && [ "$(jget output.data)" = "[560]" ]'
  stop_daemon
fi

finish
