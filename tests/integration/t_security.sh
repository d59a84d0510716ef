#!/bin/bash
# t_security.sh - --api-key-file (Bearer keys, 401 UNAUTHORIZED with
# WWW-Authenticate, probes open, keys never logged), --tls-cert/--tls-key
# (HTTPS against a certificate made here, checked by curl), and the exit
# status 2 of unusable key and certificate options.
. "$(dirname "$0")/lib.sh"
need_own_daemon "security options" || { finish; exit; }

REQ='{"op":"ReduceL2","keepdims":0,"input":{"dtype":"float32","shape":[2],"data":[3,4]}}'
ANS='{"op":"ReduceL2","opset":18,"op_version":18,"output":{"dtype":"float32","shape":[],"data":[5]}}'
K1=k1-7f3c9a0d5e2b41f8a6 K2=second-key_Q9xZ

# ---------------------------------------------------------------- API keys
printf '# reduced keys\n%s\n\n  %s  \r\n' "$K1" "$K2" >"$TMP/keys"
start_daemon --api-key-file "$TMP/keys" --log-level debug ||
  { fail "daemon starts with --api-key-file"; finish; exit 1; }

unauth() {   # NAME: the last response is a proper 401
  local name=$1 wa
  expect_error_body "$name" 401 UNAUTHORIZED
  wa=$(hdr WWW-Authenticate)
  check "$name: WWW-Authenticate: Bearer realm=\"reduced\"" test "$wa" = 'Bearer realm="reduced"'
}
post "$REQ";                                         unauth "POST /v1/reduce without Authorization -> 401"
post "$REQ" -H "Authorization: Bearer wrong";        unauth "wrong key -> 401"
post "$REQ" -H "Authorization: Bearer ${K1%?}";      unauth "key missing its last character -> 401"
post "$REQ" -H "Authorization: Bearer ${K1}x";       unauth "key with one extra character -> 401"
post "$REQ" -H "Authorization: Basic $K1";           unauth "right key, Basic scheme -> 401"
post "$REQ" -H "Authorization: Bearer";              unauth "Bearer without a key -> 401"
post "$REQ" -H "Authorization: Bearer $K1 $K2";      unauth "two keys in one header -> 401"
http GET /v1/ops;                                    unauth "GET /v1/ops without a key -> 401"
http GET /no/such/path;                              unauth "unknown path without a key -> 401 (routes are not revealed)"

post "$REQ" -H "Authorization: Bearer $K1"
check "first key -> 200 and the exact answer" eval '[ "$ST" = 200 ] && "$JTOOL" eq "$B" "$ANS"'
post "$REQ" -H "Authorization: bearer   $K2"
check "second key (blanks trimmed in the file), scheme in any case -> 200" eval '[ "$ST" = 200 ] && "$JTOOL" eq "$B" "$ANS"'
http GET /v1/ops -H "Authorization: Bearer $K2"
check "GET /v1/ops with a key -> 200" test "$ST" = 200
http GET /no/such/path -H "Authorization: Bearer $K1"
check "unknown path with a key -> 404" test "$ST" = 404
for p in /healthz /readyz; do
  http GET "$p"
  check "GET $p needs no key -> 200" test "$ST" = 200
done
check "no key (nor a prefix of one) appears in the log" \
  eval '! grep -qF -e "${K1:0:8}" -e "${K2:0:8}" "$DDIR/log"'
stop_daemon
check "daemon with keys exits 0 on SIGTERM" test "$DRC" = 0

for bad in empty comments blank; do
  case $bad in
    empty) : >"$TMP/k.$bad" ;;
    comments) printf '# only\n\n#comments\n' >"$TMP/k.$bad" ;;
    blank) printf 'one key\n' >"$TMP/k.$bad" ;;
  esac
  "$REDUCED_BIN" --listen 127.0.0.1:0 --api-key-file "$TMP/k.$bad" >/dev/null 2>"$TMP/err"; rc=$?
  check "--api-key-file with $bad content: exit 2 naming the option" \
    eval '[ $rc = 2 ] && grep -q -- "--api-key-file" "$TMP/err"'
done
"$REDUCED_BIN" --listen 127.0.0.1:0 --api-key-file "$TMP/none" >/dev/null 2>"$TMP/err"; rc=$?
check "--api-key-file of a missing file: exit 2" \
  eval '[ $rc = 2 ] && grep -q "No such file" "$TMP/err"'
REDUCED_API_KEY_FILE=$TMP/keys "$REDUCED_BIN" --help >"$TMP/help" 2>&1
check "REDUCED_API_KEY_FILE shows in --help" grep -q "REDUCED_API_KEY_FILE, now '$TMP/keys'" "$TMP/help"

# --------------------------------------------------------------------- TLS
if need_tool openssl "Debian packages"; then
  openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=localhost \
    -addext "subjectAltName=IP:127.0.0.1,DNS:localhost" \
    -keyout "$TMP/key.pem" -out "$TMP/cert.pem" >/dev/null 2>&1
  # start_raw's readiness probe, over HTTPS.
  healthy() { curl -s --max-time 5 --cacert "$TMP/cert.pem" -o /dev/null -w '%{http_code}' "https://127.0.0.1:$PORT/healthz" | grep -qx 200; }
  start_raw "$TMP/tport" --listen 127.0.0.1:0 --port-file "$TMP/tport" \
    --tls-cert "$TMP/cert.pem" --tls-key "$TMP/key.pem" --api-key-file "$TMP/keys" ||
    fail "daemon starts with --tls-cert/--tls-key"
  URL=https://127.0.0.1:$PORT
  http GET /healthz --cacert "$TMP/cert.pem"
  check "HTTPS GET /healthz, certificate verified by curl -> 200" eval '[ "$ST" = 200 ] && "$JTOOL" eq "$B" "{\"status\":\"ok\"}"'
  post "$REQ" --cacert "$TMP/cert.pem" -H "Authorization: Bearer $K1"
  check "HTTPS POST /v1/reduce with a key -> exact answer" eval '[ "$ST" = 200 ] && "$JTOOL" eq "$B" "$ANS"'
  post "$REQ" --cacert "$TMP/cert.pem"
  check "HTTPS POST without a key -> 401" test "$ST" = 401
  "$JTOOL" gen ReduceSumSquare int64 301000 1 '"keepdims":0,' >"$TMP/big.json"
  http POST /v1/reduce --cacert "$TMP/cert.pem" -H "Authorization: Bearer $K1" \
    -H 'Content-Type: application/json' --data-binary @"$TMP/big.json"
  check "HTTPS 301000-element request (about 1 MB) -> exact answer 1204000" "$JTOOL" eq "$B" \
    '{"op":"ReduceSumSquare","opset":18,"op_version":18,"output":{"dtype":"int64","shape":[],"data":[1204000]}}'
  ST=$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 "$URL/healthz" 2>/dev/null)
  check "HTTPS with an unknown certificate is refused by curl" test "$ST" = 000
  ST=$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 "http://127.0.0.1:$PORT/healthz" 2>/dev/null)
  check "plain HTTP to the TLS port gets no HTTP answer" test "$ST" = 000
  http GET /healthz --cacert "$TMP/cert.pem"
  check "the TLS daemon still answers after those" test "$ST" = 200
  stop_daemon
  check "TLS daemon exits 0 on SIGTERM" test "$DRC" = 0

  "$REDUCED_BIN" --listen 127.0.0.1:0 --tls-cert "$TMP/cert.pem" >/dev/null 2>"$TMP/err"; rc=$?
  check "--tls-cert without --tls-key: exit 2" \
    eval '[ $rc = 2 ] && grep -q -- "--tls-key" "$TMP/err"'
  REDUCED_TLS_KEY=$TMP/key.pem "$REDUCED_BIN" --listen 127.0.0.1:0 >/dev/null 2>"$TMP/err"; rc=$?
  check "REDUCED_TLS_KEY without a certificate: exit 2" \
    eval '[ $rc = 2 ] && grep -q -- "--tls-cert" "$TMP/err"'
  "$REDUCED_BIN" --listen 127.0.0.1:0 --tls-cert "$TMP/none.pem" --tls-key "$TMP/key.pem" >/dev/null 2>"$TMP/err"; rc=$?
  check "--tls-cert of a missing file: exit 2" \
    eval '[ $rc = 2 ] && grep -q -- "--tls-cert" "$TMP/err"'
  "$REDUCED_BIN" --listen 127.0.0.1:0 --tls-cert "$TMP/keys" --tls-key "$TMP/keys" >/dev/null 2>"$TMP/err"; rc=$?
  check "--tls-cert that is not a certificate: refuses to start (exit 1)" test $rc = 1
fi
finish
