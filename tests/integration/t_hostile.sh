#!/bin/bash
# t_hostile.sh - connections and memory come back (issue 13): after a
# battery of hostile requests and clients that close at every stage
# (10 MB header lines, 10^4 query parameters, lying lengths, cut chunked
# bodies, pickles, headers half sent, mid-body, right after the last byte,
# while the job runs, while the answer is sent: hostile.py), the daemon's
# open descriptors return to their idle count within 5 s and its RSS to
# within 8 MiB of its idle size within 5 s (buffers kept for reuse are
# released after 2 s unused), long before --timeout (30 s).
. "$(dirname "$0")/lib.sh"
need_own_daemon "hostile" || { finish; exit; }
start_daemon || { fail "daemon starts"; finish; exit 1; }
nfd() { ls "/proc/$DPID/fd" 2>/dev/null | wc -l; }
rss() { awk '/^VmRSS/ {print $2}' "/proc/$DPID/status"; }
sleep 0.5
fd0=$(nfd) rss0=$(rss)
/usr/bin/python3 "$here/hostile.py" "$PORT" 3 >"$TMP/hostile" 2>&1
check "the battery ran ($(tail -n 1 "$TMP/hostile"))" grep -qx 'battery done' "$TMP/hostile"
t0=$(date +%s)
poll 5 eval '[ "$(nfd)" -le "$fd0" ]'
t1=$(date +%s)
check "open descriptors back to idle within 5 s ($fd0 -> $(nfd), $((t1 - t0)) s)" eval '[ "$(nfd)" -le "$fd0" ]'
check "no connection left in CLOSE-WAIT" eval '! ss -tanp 2>/dev/null | grep "pid=$DPID," | grep -q CLOSE-WAIT'
if [ -n "${ASAN_OPTIONS:-}${TSAN_OPTIONS:-}" ]; then
  # make check-asan/-tsan: the sanitizers' quarantine and shadow memory
  # make RSS meaningless.
  echo "# RSS: idle $rss0 kB, after the battery $(rss) kB"
  skip "RSS within 8 MiB of idle" "sanitizer build"
else
  # Buffers kept for reuse (--buffer-cache-bytes) go after 2 s unused.
  t0=$(date +%s)
  poll 5 eval '[ $(($(rss) - rss0)) -lt 8192 ]'
  t1=$(date +%s) rss1=$(rss)
  echo "# RSS: idle $rss0 kB, after the battery $rss1 kB"
  check "RSS within 8 MiB of idle within 5 s ($rss0 -> $rss1 kB, $((t1 - t0)) s)" test $((rss1 - rss0)) -lt 8192
fi
check "the daemon still answers" eval '[ "$(curl -s -o /dev/null -w "%{http_code}" "$URL/healthz")" = 200 ]'
http GET /metrics
check "reduced_requests_in_flight back to 1 (the scrape)" grep -qx 'reduced_requests_in_flight 1' "$B"
check "reduced_inflight_bytes back to 0" grep -qx 'reduced_inflight_bytes 0' "$B"
# A half-close is not a close: a client that sends a whole request and
# shuts down only its sending side still gets the answer (small inline
# JSON, and a streamed 16 MB raw body).
/usr/bin/python3 - "$PORT" >"$TMP/half" 2>&1 <<'PY'
import socket, sys
port = int(sys.argv[1])
body = b"\0\0\x80\x3f" * 4000000
reqs = [b'POST /v1/reduce HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n'
        b'Content-Length: 70\r\n\r\n{"op":"ReduceL2","input":{"dtype":"float32","shape":[2],"data":[3,4]}}',
        b"POST /v1/reduce?op=ReduceSumSquare&dtype=float32&shape=4000000&axes=0 HTTP/1.1\r\n"
        b"Host: x\r\nAccept: application/json\r\nContent-Type: application/octet-stream\r\n"
        b"Content-Length: %d\r\n\r\n" % len(body) + body]
for req in reqs:
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(req)
    s.shutdown(socket.SHUT_WR)
    s.settimeout(10)
    out = b""
    try:
        while True:
            d = s.recv(65536)
            if not d:
                break
            out += d
    except OSError:
        pass
    print(out.split(b"\r\n")[0].decode(), out.split(b"\r\n\r\n")[-1].decode()[-30:])
PY
check "half-closed small JSON request answered ($(head -n 1 "$TMP/half"))" \
  eval 'sed -n 1p "$TMP/half" | grep -q "^HTTP/1.1 200 .*\"data\":\[5\]"'
check "half-closed 16 MB raw request answered ($(sed -n 2p "$TMP/half"))" \
  eval 'sed -n 2p "$TMP/half" | grep -q "^HTTP/1.1 200 .*\"data\":\[4e+6\]"'
stop_daemon
check "daemon exits 0" test "$DRC" = 0
finish
