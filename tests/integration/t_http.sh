#!/bin/bash
# t_http.sh - routes, methods, headers and the HTTP-level errors (404, 405,
# 411, 413, 415), X-Request-Id, /healthz /readyz /v1/ops.
. "$(dirname "$0")/lib.sh"
use_daemon

json_ct() { local ct; ct=$(hdr Content-Type); [ "${ct%%;*}" = application/json ]; }
has_rid() { [ -n "$(hdr X-Request-Id)" ]; }

# ---- health and readiness
http GET /healthz
check "GET /healthz -> 200 {\"status\":\"ok\"}" "$JTOOL" eq "$B" '{"status":"ok"}'
check "GET /healthz status is 200" test "$ST" = 200
check "GET /healthz is application/json with X-Request-Id" eval 'json_ct && has_rid'
http GET /readyz
check "GET /readyz -> 200 {\"status\":\"ready\"}" eval '[ "$ST" = 200 ] && "$JTOOL" eq "$B" "{\"status\":\"ready\"}"'
http HEAD /healthz
check "HEAD /healthz -> 200, like GET" test "$ST" = 200
http HEAD /readyz
check "HEAD /readyz -> 200" test "$ST" = 200
http HEAD /v1/ops
check "HEAD /v1/ops -> 200 with X-Request-Id" eval '[ "$ST" = 200 ] && has_rid'

# ---- /v1/ops: both operators, versions 1 11 13 18, dtypes per version.
# The layout is api_json_encode_ops's; the test reads it structurally:
# every version object of an op must list its dtypes, bfloat16 only at 13/18.
http GET /v1/ops
check "GET /v1/ops -> 200 application/json" eval '[ "$ST" = 200 ] && json_ct'
cp "$B" "$TMP/ops.json"
check "/v1/ops names ReduceL2 and ReduceSumSquare" eval 'grep -q "\"ReduceL2\"" "$TMP/ops.json" && grep -q "\"ReduceSumSquare\"" "$TMP/ops.json"'
for dt in float32 float64 float16 bfloat16 int32 int64 uint32 uint64; do
  check "/v1/ops lists $dt" grep -q "\"$dt\"" "$TMP/ops.json"
done
# The twelve operators' version and dtype lists: t_ops.sh.
for dt in int8 uint8 int16 uint16 bool; do
  check "/v1/ops lists $dt" grep -q "\"$dt\"" "$TMP/ops.json"
done

# ---- 404 and 405
for p in /nope /v1 /v1/reduce/x /v1/REDUCE /healthz/x; do
  http GET "$p"
  expect_error_body "GET $p -> 404 NOT_FOUND" 404 NOT_FOUND
done
http POST /nope -H 'Content-Type: application/json' --data-binary '{}'
expect_error_body "POST /nope -> 404 NOT_FOUND" 404 NOT_FOUND
for m in GET PUT DELETE PATCH; do
  http "$m" /v1/reduce
  expect_error_body "$m /v1/reduce -> 405" 405 METHOD_NOT_ALLOWED
  allow=$(hdr Allow)
  check "$m /v1/reduce: Allow lists POST only ('$allow')" eval 'printf "%s" "$allow" | grep -qw POST && ! printf "%s" "$allow" | grep -qw "$m"'
done
http HEAD /v1/reduce
check "HEAD /v1/reduce -> 405 with Allow: POST" eval '[ "$ST" = 405 ] && hdr Allow | grep -qw POST'
for p in /healthz /readyz /v1/ops; do
  for m in POST PUT DELETE; do
    http "$m" "$p" -H 'Content-Type: application/json' --data-binary '{}'
    expect_error_body "$m $p -> 405" 405 METHOD_NOT_ALLOWED
    allow=$(hdr Allow)
    check "$m $p: Allow lists GET, not $m ('$allow')" eval 'printf "%s" "$allow" | grep -qw GET && ! printf "%s" "$allow" | grep -qw "$m"'
  done
done

# ---- 415
for ct in text/plain application/x-www-form-urlencoded application/xml 'application/jsonx' 'application/json-patch+json'; do
  http POST /v1/reduce -H "Content-Type: $ct" --data-binary '{"op":"ReduceL2","input":{"dtype":"float32","data":[3,4]}}'
  expect_error_body "Content-Type $ct -> 415" 415 UNSUPPORTED_MEDIA_TYPE
done
http POST /v1/reduce -H 'Content-Type:' --data-binary '{"op":"ReduceL2","input":{"dtype":"float32","data":[3,4]}}'
expect_error_body "no Content-Type -> 415" 415 UNSUPPORTED_MEDIA_TYPE
for ct in 'application/json; charset=utf-8' 'application/json;charset=UTF-8' 'Application/JSON'; do
  http POST /v1/reduce -H "Content-Type: $ct" --data-binary '{"op":"ReduceL2","keepdims":0,"input":{"dtype":"float32","data":[3,4]}}'
  check "Content-Type '$ct' accepted (media types are case-insensitive)" eval '[ "$ST" = 200 ] && "$JTOOL" eq "$B" "{\"op\":\"ReduceL2\",\"opset\":18,\"op_version\":18,\"output\":{\"dtype\":\"float32\",\"shape\":[],\"data\":[5]}}"'
done

# ---- 411: a POST with neither Content-Length nor chunked encoding
raw_request() { # raw_request TEXT: send TEXT on a new connection, print the response
  ( trap '' PIPE   # the daemon may close before reading everything
    exec 3<>"/dev/tcp/127.0.0.1/$PORT" || exit 1
    printf '%b' "$1" >&3
    timeout 20 cat <&3 )
}
status_of() { head -n 1 | tr -d '\r' | awk '{ print $2 }'; }
if [ -n "${REDUCED_TEST_URL:-}" ]; then PORT=${URL##*:}; fi
raw_request 'POST /v1/reduce HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n' >"$TMP/raw"
check "POST without Content-Length or chunked -> 411" eval '[ "$(status_of <"$TMP/raw")" = 411 ]'
sed '1,/^\r\{0,1\}$/d' "$TMP/raw" >"$B"
check "411 body is LENGTH_REQUIRED" eval '[ "$(jget error.code)" = LENGTH_REQUIRED ]'
# chunked without a length is fine
printf '%s' '{"op":"ReduceSumSquare","keepdims":0,"input":{"dtype":"int32","data":[3,4]}}' >"$TMP/req"
http POST /v1/reduce -H 'Content-Type: application/json' -H 'Transfer-Encoding: chunked' --data-binary @"$TMP/req"
check "chunked POST accepted (SSQ [3,4] = 25)" eval '[ "$ST" = 200 ] && "$JTOOL" eq "$B" "{\"op\":\"ReduceSumSquare\",\"opset\":18,\"op_version\":18,\"output\":{\"dtype\":\"int32\",\"shape\":[],\"data\":[25]}}"'

# ---- 413 before the body is read (default --max-body 67108864)
http POST /v1/reduce -H 'Content-Type: application/json' -H 'Content-Length: 100000000' --data-binary 'x'
expect_error_body "Content-Length 100000000 with a 1-byte body -> 413 at once" 413 BODY_TOO_LARGE
http POST /v1/reduce -H 'Content-Type: application/json' -H 'Expect: 100-continue' -H 'Content-Length: 1000000000000' --data-binary 'x'
expect_error_body "Expect: 100-continue, Content-Length 10^12 -> 413 instead of 100" 413 BODY_TOO_LARGE
raw_request 'POST /v1/reduce HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 67108865\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n' >"$TMP/raw"
check "raw: Content-Length max+1 with Expect -> 413 without any body sent" eval '[ "$(status_of <"$TMP/raw")" = 413 ]'
check "raw: no 100 Continue before the 413" eval '! grep -q "100 Continue" "$TMP/raw"'

# ---- an early answer (413, 415) must not read the unread body as a request
raw_request 'POST /v1/reduce HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 67108865\r\n\r\nGET /nope HTTP/1.1\r\nHost: x\r\n\r\n' >"$TMP/raw" 2>/dev/null
check "413 before the body: one answer, the body is not taken as a request" \
  eval '[ "$(status_of <"$TMP/raw")" = 413 ] && [ "$(grep -c "^HTTP/1" "$TMP/raw")" = 1 ]'
raw_request 'POST /v1/reduce HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\nContent-Length: 27\r\n\r\nGET /nope HTTP/1.1\r\nHost: x\r\n\r\n' >"$TMP/raw" 2>/dev/null
check "415: one answer, the body is not taken as a request" \
  eval '[ "$(status_of <"$TMP/raw")" = 415 ] && [ "$(grep -c "^HTTP/1" "$TMP/raw")" = 1 ]'

# ---- requests that are not valid HTTP/1.1 are answered by libmicrohttpd
# itself, before the daemon sees them (documented exception in
# docs/http-api.md: 0.9.75 has no hook to replace its own error pages).
# They must still get the right status and a closed connection, never a hang.
raw_protocol_error() { # NAME STATUS TEXT
  raw_request "$3" >"$TMP/raw" 2>/dev/null
  local st; st=$(status_of <"$TMP/raw")
  if [ "$st" = "$2" ] && tr -d '\r' <"$TMP/raw" | grep -qi '^connection: close'; then ok "$1"
  else fail "$1" "status $st (want $2) and Connection: close" "answer: $(head -c 200 "$TMP/raw")"; fi
}
raw_protocol_error "libmicrohttpd: Content-Length: abc -> 400, connection closed" 400 \
  'POST /v1/reduce HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: abc\r\n\r\n{}'
raw_protocol_error "libmicrohttpd: bad chunk size -> 400, connection closed" 400 \
  'POST /v1/reduce HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n'
raw_protocol_error "libmicrohttpd: malformed header line -> 400, connection closed" 400 \
  'GET /healthz HTTP/1.1\r\nHost: x\r\nbad header line\r\n\r\n'
raw_protocol_error "libmicrohttpd: HTTP/2.0 request line -> 505, connection closed" 505 \
  'GET /healthz HTTP/2.0\r\nHost: x\r\n\r\n'
check "the daemon still answers after protocol errors" eval 'curl -sf "$URL/healthz" >/dev/null'

# ---- several requests on one connection (HTTP/1.1 keep-alive), each answered
curl -sS --max-time 60 -H 'Content-Type: application/json' \
  --data-binary '{"op":"ReduceL2","keepdims":0,"input":{"dtype":"int32","data":[3,4]}}' "$URL/v1/reduce" -o "$TMP/ka1" \
  --next -H 'Content-Type: application/json' \
  --data-binary '{"op":"ReduceSumSquare","keepdims":0,"input":{"dtype":"int32","data":[3,4]}}' "$URL/v1/reduce" -o "$TMP/ka2" \
  --next "$URL/healthz" -o "$TMP/ka3" 2>"$TMP/curl.err"
check "3 requests on one curl connection: L2 5" "$JTOOL" eq "$TMP/ka1" '{"op":"ReduceL2","opset":18,"op_version":18,"output":{"dtype":"int32","shape":[],"data":[5]}}'
check "3 requests on one curl connection: SSQ 25" "$JTOOL" eq "$TMP/ka2" '{"op":"ReduceSumSquare","opset":18,"op_version":18,"output":{"dtype":"int32","shape":[],"data":[25]}}'
check "3 requests on one curl connection: healthz" "$JTOOL" eq "$TMP/ka3" '{"status":"ok"}'

# ---- X-Request-Id
for id in abc-123 'A.b_c:d-9' "$(printf 'x%.0s' $(seq 128))"; do
  http GET /healthz -H "X-Request-Id: $id"
  check "X-Request-Id '${id:0:20}' (${#id} chars) echoed" test "$(hdr X-Request-Id)" = "$id"
done
post '{"op":"ReduceL2","input":{"dtype":"float32","data":[1]}}' -H 'X-Request-Id: req-42'
check "X-Request-Id echoed on POST /v1/reduce" test "$(hdr X-Request-Id)" = req-42
http GET /nope -H 'X-Request-Id: err-7'
check "X-Request-Id echoed on a 404" test "$(hdr X-Request-Id)" = err-7
for id in "$(printf 'y%.0s' $(seq 129))" 'a b' 'a/b' 'a%20b' 'é' '<x>'; do
  http GET /healthz -H "X-Request-Id: $id"
  got=$(hdr X-Request-Id)
  check "invalid X-Request-Id '${id:0:20}' (${#id} chars) replaced by a generated one" \
    eval '[ -n "$got" ] && [ "$got" != "$id" ] && printf "%s" "$got" | grep -Eqx "[A-Za-z0-9._:-]{1,128}"'
done
http GET /healthz -H 'X-Request-Id:'
check "empty X-Request-Id replaced by a generated one" eval '[ -n "$(hdr X-Request-Id)" ]'
http GET /healthz; id1=$(hdr X-Request-Id)
http GET /healthz; id2=$(hdr X-Request-Id)
check "generated ids differ between requests ('$id1' '$id2')" eval '[ -n "$id1" ] && [ -n "$id2" ] && [ "$id1" != "$id2" ]'

# ---- tests with their own daemon (small --max-body, short --timeout)
if need_own_daemon "413 for bodies above --max-body, --timeout"; then
  start_daemon --max-body 1000 --timeout 2 || fail "daemon with --max-body 1000 starts"
  big=$("$JTOOL" gen ReduceSumSquare int32 700 1)   # ~1.4 kB
  printf '%s' "$big" >"$TMP/big"
  http POST /v1/reduce -H 'Content-Type: application/json' --data-binary @"$TMP/big"
  expect_error_body "--max-body 1000: 1.4 kB body -> 413" 413 BODY_TOO_LARGE
  http POST /v1/reduce -H 'Content-Type: application/json' -H 'Transfer-Encoding: chunked' --data-binary @"$TMP/big"
  expect_error_body "--max-body 1000: 1.4 kB chunked body -> 413" 413 BODY_TOO_LARGE
  small=$("$JTOOL" gen ReduceSumSquare int32 140 1)  # 20 periods of (9+4+1+0+1+4+9)
  post "$small"
  check "--max-body 1000: a body under the limit -> 200 (560)" eval '[ "$ST" = 200 ] && [ "$(jget output.data)" = "[560]" ]'
  # --timeout: headers and part of the body, then silence.  The contract
  # (docs/http-api.md, --timeout) says the connection is closed without a
  # response; timeout(1) returning 124 means it was left open.
  exec 4<>"/dev/tcp/127.0.0.1/$PORT"
  printf 'POST /v1/reduce HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"op":' >&4
  timeout 60 cat <&4 >"$TMP/raw"; rc=$?
  exec 4<&- 4>&-
  check "slow upload: connection closed after --timeout 2 (cat status $rc)" test "$rc" = 0
  check "slow upload: no 200 for the partial body" eval '! grep -q "^HTTP/1.1 200" "$TMP/raw"'
  check "daemon healthy after the timed-out upload" healthy
  stop_daemon
fi

finish
