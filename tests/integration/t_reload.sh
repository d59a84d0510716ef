#!/bin/bash
# t_reload.sh - SIGHUP re-reads --api-key-file and --tls-cert/--tls-key
# (issue 13): new requests use the new keys and new connections the new
# certificate, a kept-alive connection and a request in flight across the
# signal are not dropped; a missing or invalid file keeps the old secrets,
# logs an error naming the file and counts reduced_reload_failures_total.
. "$(dirname "$0")/lib.sh"
need_own_daemon "reload" || { finish; exit; }
PY=/usr/bin/python3
J='{"op":"ReduceL2","input":{"dtype":"float32","shape":[2],"data":[3,4]}}'
code() { curl -sk -o /dev/null -w '%{http_code}' "$@"; }
failures() { curl -sk -H "Authorization: Bearer $1" "$2/metrics" |
  awk '$1 == "reduced_reload_failures_total" {print $2}'; }

# ------------------------------------------------------------------ keys
printf 'key-one\n' >"$TMP/keys"
start_daemon --api-key-file "$TMP/keys" || { fail "daemon starts"; finish; exit 1; }
check "key-one is accepted" test "$(code -H 'Authorization: Bearer key-one' "$URL/v1/ops")" = 200

# A kept-alive connection across the SIGHUP: both requests on one socket.
$PY - "$PORT" "$DPID" "$TMP/keys" >"$TMP/ka" 2>&1 <<'EOF' &
import http.client, os, signal, sys, time
port, pid, keys = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
c.request("GET", "/v1/ops", headers={"Authorization": "Bearer key-one"})
r = c.getresponse(); r.read(); print("first", r.status)
sock = c.sock
open(keys, "w").write("key-two\n")
os.kill(pid, signal.SIGHUP)
time.sleep(0.5)
c.request("GET", "/v1/ops", headers={"Authorization": "Bearer key-two"})
r = c.getresponse(); r.read(); print("second", r.status, "same-socket", c.sock is sock)
EOF
wait $!
check "kept-alive connection across SIGHUP: key-one before, key-two after ($(tr '\n' ' ' <"$TMP/ka"))" \
  eval 'grep -qx "first 200" "$TMP/ka" && grep -qx "second 200 same-socket True" "$TMP/ka"'
check "after SIGHUP key-one is refused (401)" test "$(code -H 'Authorization: Bearer key-one' "$URL/v1/ops")" = 401
check "after SIGHUP key-two is accepted" test "$(code -H 'Authorization: Bearer key-two' "$URL/v1/ops")" = 200
check "the log says the keys were re-read" grep -q 'reload: 1 API key(s) from' "$DDIR/log"

# A missing file keeps the old keys.
mv "$TMP/keys" "$TMP/keys.away"
kill -HUP "$DPID"
poll 5 eval 'grep -q "keeping the old keys" "$DDIR/log"'
check "missing key file: the error names it" eval 'grep "keeping the old keys" "$DDIR/log" | grep -q -- "$TMP/keys"'
check "  ... key-two still works" test "$(code -H 'Authorization: Bearer key-two' "$URL/v1/ops")" = 200
check "  ... reduced_reload_failures_total 1" test "$(failures key-two "$URL")" = 1
printf '# only a comment\n' >"$TMP/keys"
kill -HUP "$DPID"
poll 5 eval '[ "$(failures key-two "$URL")" = 2 ]'
check "key file without a key: kept (failures 2)" test "$(failures key-two "$URL")" = 2
check "  ... key-two still works" test "$(code -H 'Authorization: Bearer key-two' "$URL/v1/ops")" = 200
stop_daemon
check "daemon exits 0 after the reloads" test "$DRC" = 0

# ------------------------------------------------------------------- TLS
if ! command -v openssl >/dev/null; then
  skip "TLS reload" "no openssl"; finish; exit
fi
mkcert() {
  openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=$1" \
    -keyout "$TMP/$1.key" -out "$TMP/$1.crt" >/dev/null 2>&1
}
mkcert one && mkcert two || { fail "openssl makes certificates"; finish; exit; }
cp "$TMP/one.crt" "$TMP/cert.pem"; cp "$TMP/one.key" "$TMP/key.pem"
pf=$TMP/tlsport
# start_raw's readiness probe, over HTTPS.
healthy() { curl -sk --max-time 5 -o /dev/null -w '%{http_code}' "https://127.0.0.1:$PORT/healthz" | grep -qx 200; }
start_raw "$pf" --listen 127.0.0.1:0 --port-file "$pf" --tls-cert "$TMP/cert.pem" --tls-key "$TMP/key.pem" ||
  { fail "TLS daemon starts"; finish; exit 1; }
URL=https://127.0.0.1:$PORT
cn() { echo | openssl s_client -connect "127.0.0.1:$PORT" 2>/dev/null | openssl x509 -noout -subject 2>/dev/null | sed 's/.*CN *= *//'; }
check "TLS daemon serves certificate one" test "$(cn)" = one

# A kept-alive TLS connection and a request in flight across the SIGHUP.
$PY - "$PORT" "$DPID" "$TMP" >"$TMP/tka" 2>&1 <<'EOF' &
import http.client, os, shutil, signal, ssl, sys, time
port, pid, d = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
ctx = ssl._create_unverified_context()
c = http.client.HTTPSConnection("127.0.0.1", port, timeout=20, context=ctx)
c.request("GET", "/healthz"); r = c.getresponse(); r.read(); print("first", r.status)
sock = c.sock
# a request in flight: headers and half the body sent, then the reload
body = b'{"op":"ReduceL2","input":{"dtype":"float32","shape":[2],"data":[3,4]}}'
c.putrequest("POST", "/v1/reduce")
c.putheader("Content-Type", "application/json")
c.putheader("Content-Length", str(len(body)))
c.endheaders()
c.send(body[:20])
shutil.copy(d + "/two.crt", d + "/cert.pem"); shutil.copy(d + "/two.key", d + "/key.pem")
os.kill(pid, signal.SIGHUP)
time.sleep(0.5)
c.send(body[20:])
r = c.getresponse(); out = r.read()
print("inflight", r.status, out.decode()[-40:].strip())
c.request("GET", "/healthz"); r = c.getresponse(); r.read()
print("third", r.status, "same-socket", c.sock is sock)
EOF
wait $!
check "kept-alive TLS connection: the request in flight across SIGHUP answers 200 ($(tr '\n' ' ' <"$TMP/tka"))" \
  grep -q '^inflight 200 .*"data":\[5' "$TMP/tka"
check "  ... and the next request on the same connection too" grep -qx "third 200 same-socket True" "$TMP/tka"
check "a new connection gets certificate two" test "$(cn)" = two
check "the log names the new certificate" grep -q "reload: new certificate from $TMP/cert.pem" "$DDIR/log"
poll 5 eval 'grep -q "closed its last connection" "$DDIR/log"'
check "the old daemon stops once its connections are closed" grep -q "closed its last connection" "$DDIR/log"

# An invalid certificate keeps the old one.
printf 'not a certificate\n' >"$TMP/cert.pem"
kill -HUP "$DPID"
poll 5 eval 'grep -q "keeping the old certificate" "$DDIR/log"'
check "invalid certificate: the error names --tls-cert $TMP/cert.pem" \
  eval 'grep "keeping the old certificate" "$DDIR/log" | grep -q -- "$TMP/cert.pem"'
check "  ... new connections still get certificate two" test "$(cn)" = two
check "  ... and answer ($(code "$URL/healthz"))" test "$(code "$URL/healthz")" = 200
rm -f "$TMP/key.pem"; cp "$TMP/two.crt" "$TMP/cert.pem"
kill -HUP "$DPID"
poll 5 eval '[ "$(curl -sk "$URL/metrics" | awk '"'"'$1 == "reduced_reload_failures_total" {print $2}'"'"')" = 2 ]'
check "missing key file: reduced_reload_failures_total 2" \
  test "$(curl -sk "$URL/metrics" | awk '$1 == "reduced_reload_failures_total" {print $2}')" = 2
check "  ... certificate two still served" test "$(cn)" = two
stop_daemon
check "TLS daemon exits 0 after the reloads" test "$DRC" = 0
finish
