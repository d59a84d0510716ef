#!/bin/bash
# t_client.sh - the Python client (clients/python/reduced_client.py) against
# the real daemon: every dtype, both operators, .npy and raw (bfloat16),
# errors (400, 401, 413, 422, no answer, timeouts), threads, a 64 MiB array
# sent without a copy; compress=True and ArgMax/ArgMin only where the daemon
# supports them (skipped with a line otherwise).  The checks are in
# client_test.py, run with Debian's /usr/bin/python3 (numpy).
. "$(dirname "$0")/lib.sh"

PY=${NUMPY_PYTHON:-/usr/bin/python3}
if ! "$PY" -c 'import numpy' 2>/dev/null; then
  fail "python3-numpy is installed ($PY)" "missing python3-numpy: run scripts/bootstrap.sh (step: Debian packages)"
  finish; exit 1
fi
export PYTHONDONTWRITEBYTECODE=1   # no __pycache__ in the source tree

args=()
if [ -n "${REDUCED_TEST_URL:-}" ]; then
  use_daemon
  args=(--url "$URL")
  skip "api_key, 413 and stopped-daemon checks" "need their own daemons; REDUCED_TEST_URL is set"
else
  start_daemon || { fail "daemon starts"; finish; exit 1; }
  args=(--url "$URL" --pid "$DPID")
  printf '# keys\nclient-test-key-1\n' >"$TMP/keys"
  start_daemon --api-key-file "$TMP/keys" || { fail "daemon with --api-key-file starts"; finish; exit 1; }
  args+=(--keyed-url "$URL" --key client-test-key-1)
  start_daemon --max-body 4096 --timeout 1 || { fail "daemon with --max-body 4096 starts"; finish; exit 1; }
  args+=(--small-url "$URL" --small-max 4096)
  if command -v openssl >/dev/null; then
    openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=localhost \
      -addext "subjectAltName=IP:127.0.0.1,DNS:localhost" \
      -keyout "$TMP/key.pem" -out "$TMP/cert.pem" >/dev/null 2>&1
    # start_raw's readiness probe, over HTTPS (the last daemon started here).
    healthy() { curl -s --max-time 5 --cacert "$TMP/cert.pem" -o /dev/null -w '%{http_code}' "https://127.0.0.1:$PORT/healthz" | grep -qx 200; }
    if start_raw "$TMP/tport" --listen 127.0.0.1:0 --port-file "$TMP/tport" \
         --tls-cert "$TMP/cert.pem" --tls-key "$TMP/key.pem"; then
      args+=(--tls-url "https://127.0.0.1:$PORT" --cafile "$TMP/cert.pem")
    else
      fail "daemon with --tls-cert/--tls-key starts"
    fi
  else
    skip "HTTPS checks" "openssl is not installed"
  fi
fi

"$PY" "$here/client_test.py" "${args[@]}" >"$TMP/client.out" 2>&1
rc=$?
# client_test.py prints the lines of lib.sh's format: fold them into the tally.
while IFS= read -r line; do
  case $line in
    "ok "*) ok "${line#ok * - }" ;;
    "not ok "*) fail "${line#not ok * - }" ;;
    "#   "*) echo "$line" ;;
    "skip - "*) l=${line#skip - }; skip "${l% (*}" "$(expr "$l" : '.*(\(.*\))$')" ;;
    *" passed, "*" failed"|"("*" skipped)") ;;
    *) echo "# $line" ;;
  esac
done <"$TMP/client.out"
if ! grep -qE '^[0-9]+ passed, [0-9]+ failed$' "$TMP/client.out"; then
  fail "client_test.py ran to the end" "exit $rc; last lines:" "$(tail -n 5 "$TMP/client.out")"
fi
finish
