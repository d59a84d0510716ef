#!/bin/bash
# t_grpc.sh - the gRPC endpoint (Open Inference Protocol, --grpc-listen)
# against third-party clients that load the protocol's published .proto:
# Node's @grpc/grpc-js + @grpc/proto-loader (grpc-node.cjs: every RPC,
# every datatype typed and raw, FP16/BF16, axes, errors and status codes,
# a 32 MiB tensor, answers bit-identical to HTTP /v2, auth, TLS, drain,
# --max-pending) and Debian's python3-grpcio with protoc-generated messages
# (grpc-py.py); plus the metrics of gRPC requests.
. "$(dirname "$0")/lib.sh"
need_own_daemon "gRPC endpoint" || { finish; exit 0; }
if ! grep -q 'HAVE_GRPC 1' "$top_builddir/config.h" 2>/dev/null; then
  skip "gRPC endpoint" "configured --without-grpc"
  finish; exit 0
fi

# A --enable-tsan build: gRPC core's and Abseil's own (uninstrumented)
# internals are not ours to report (grpc-tsan.supp names only them).
export TSAN_OPTIONS="${TSAN_OPTIONS:+$TSAN_OPTIONS:}suppressions=$here/grpc-tsan.supp"
GRPC_TOOLS=${GRPC_TOOLS:-$top_builddir/tests/grpc-tools}
export GRPC_TOOLS
PY=/usr/bin/python3
# The client's view of the protocol: the file as KServe publishes it (CI
# keeps shared/ beside the clone), else the tree's unchanged copy.
PROTO=$top_srcdir/../shared/protocols/open_inference_grpc.proto
[ -f "$PROTO" ] || PROTO=$top_srcdir/api/proto/inference.proto
HEALTH_PROTO=$top_srcdir/api/proto/health.proto

missing=
command -v node >/dev/null 2>&1 || missing="$missing node (Debian package nodejs; bootstrap step: Debian packages)"
[ -f "$GRPC_TOOLS/node_modules/@grpc/grpc-js/package.json" ] &&
  [ -f "$GRPC_TOOLS/node_modules/@grpc/proto-loader/package.json" ] ||
  missing="$missing @grpc/grpc-js+@grpc/proto-loader in $GRPC_TOOLS (bootstrap step: npm tools)"
"$PY" -c 'import grpc, google.protobuf' 2>/dev/null ||
  missing="$missing python3-grpcio/python3-protobuf (bootstrap step: Debian packages)"
command -v protoc >/dev/null 2>&1 || missing="$missing protoc (Debian package protobuf-compiler; bootstrap step: Debian packages)"
command -v openssl >/dev/null 2>&1 || missing="$missing openssl (bootstrap step: Debian packages)"
if [ -n "$missing" ]; then
  fail "gRPC test tools present" "missing:$missing" "run scripts/bootstrap.sh"
  finish; exit 1
fi
VERSION=$("$REDUCED_BIN" --version | awk '{print $NF}')

# start_grpc [FLAGS]: a daemon with a gRPC port; sets GADDR.
start_grpc() {
  local gpf=$TMP/gport$((NDAEMON + 1))
  start_daemon --grpc-listen 127.0.0.1:0 --grpc-port-file "$gpf" "$@" || return 1
  poll 10 port_ready "$gpf" || return 1
  GADDR=127.0.0.1:$(tr -d '\n' <"$gpf")
}

# tally OUTPUT_FILE: one ok/fail per client line.
tally() {
  local line seen=0
  while IFS= read -r line; do
    case $line in
      "ok - "*) ok "${line#ok - }"; seen=1 ;;
      "not ok - "*) fail "${line#not ok - }"; seen=1 ;;
      *) echo "# $line" ;;
    esac
  done <"$1"
  [ "$seen" = 1 ] || fail "client ran" "no result lines"
}

node_client() { timeout 300 node "$here/grpc-node.cjs" "$1" "$PROTO" "$HEALTH_PROTO" "$GADDR" "${2:-}" "${3:-}"; }

# grpc_core_threads: how many of the daemon's threads are gRPC core's (its
# timer, executor and event-engine threads, by the names it gives them).
grpc_core_threads() {
  cat /proc/"$DPID"/task/*/comm 2>/dev/null |
    grep -cE '^(grpc_global_tim|timer_manager|default-executo|event_engine|resolver-execut)'
}

# ---- one daemon: the Node client's main suite, Python's, the metrics
if start_grpc; then
  # Without TLS the daemon owns the port and gRPC core starts at the first
  # connection: an idle daemon (HTTP served meanwhile) has none of its threads.
  http GET /healthz
  check "gRPC core not started before the first gRPC connection" test "$(grpc_core_threads)" = 0
  node_client main "$URL" "$VERSION" >"$TMP/node.out" 2>&1
  tally "$TMP/node.out"
  check "gRPC core started by the first gRPC connection" test "$(grpc_core_threads)" -gt 0

  mkdir -p "$TMP/py"
  if protoc --python_out="$TMP/py" -I"$(dirname "$PROTO")" "$PROTO" 2>"$TMP/protoc.err"; then
    cp "$TMP/py/$(basename "${PROTO%.proto}")_pb2.py" "$TMP/py/open_inference_grpc_pb2.py" 2>/dev/null
    timeout 120 "$PY" "$here/grpc-py.py" "$TMP/py" "$GADDR" "$VERSION" >"$TMP/py.out" 2>&1
    tally "$TMP/py.out"
  else
    fail "protoc --python_out" "$(head -c 400 "$TMP/protoc.err")"
  fi

  http GET /metrics
  n=$(grep -E '^reduced_requests_total\{route="grpc:ModelInfer",op="ReduceSumSquare",format="binary",status="200"\} [0-9]+$' "$B" | awk '{print $2}')
  check "metrics: grpc:ModelInfer ReduceSumSquare 200 counted" test "${n:-0}" -ge 10
  check "metrics: grpc:ModelInfer 404 counted" grep -qE '^reduced_requests_total\{route="grpc:ModelInfer",op="none",format="binary",status="404"\} [1-9]' "$B"
  check "metrics: grpc:ServerLive counted" grep -qE '^reduced_requests_total\{route="grpc:ServerLive",op="none",format="none",status="200"\} [1-9]' "$B"
  check "metrics: grpc:ModelInfer duration histogram" grep -qE '^reduced_request_duration_seconds_count\{route="grpc:ModelInfer"\} [1-9]' "$B"
  stop_daemon
  check "SIGTERM: exit 0" test "$DRC" = 0
else
  fail "daemon with gRPC starts" "see log above"
fi

# ---- API keys: metadata authorization: Bearer KEY (health exempt)
printf 'k-grpc-test-1\n' >"$TMP/keys"
if start_grpc --api-key-file "$TMP/keys"; then
  # /healthz answers without a key, so start_daemon's probe still works.
  node_client auth "" k-grpc-test-1 >"$TMP/auth.out" 2>&1
  tally "$TMP/auth.out"
  timeout 60 "$PY" "$here/grpc-py.py" "$TMP/py" "$GADDR" "$VERSION" k-grpc-test-1 >"$TMP/pyauth.out" 2>&1
  tally "$TMP/pyauth.out"
  stop_daemon
else
  fail "daemon with --api-key-file starts" "see log above"
fi

# ---- TLS with the HTTP certificate
if openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=localhost \
     -addext "subjectAltName=IP:127.0.0.1,DNS:localhost" \
     -keyout "$TMP/key.pem" -out "$TMP/cert.pem" >/dev/null 2>&1; then
  # start_daemon probes http://; this daemon answers https only.
  healthy() { curl -s --max-time 5 --cacert "$TMP/cert.pem" -o /dev/null -w '%{http_code}' "https://127.0.0.1:$PORT/healthz" | grep -qx 200; }
  if start_grpc --tls-cert "$TMP/cert.pem" --tls-key "$TMP/key.pem"; then
    # gRPC core takes accepted sockets only without TLS: with TLS it
    # listens itself, started with the daemon.
    check "TLS: gRPC core started with the daemon" test "$(grpc_core_threads)" -gt 0
    node_client tls "" "$TMP/cert.pem" >"$TMP/tls.out" 2>&1
    tally "$TMP/tls.out"
    # SIGHUP with a new certificate in the same files: new connections get it.
    cp "$TMP/cert.pem" "$TMP/cert-old.pem"
    if openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=localhost \
         -addext "subjectAltName=IP:127.0.0.1,DNS:localhost" \
         -keyout "$TMP/key2.pem" -out "$TMP/cert2.pem" >/dev/null 2>&1; then
      cp "$TMP/key2.pem" "$TMP/key.pem" && cp "$TMP/cert2.pem" "$TMP/cert.pem"
      kill -HUP "$DPID"
      if poll 10 grep -q 'reloaded TLS certificate serves new connections' "$DDIR/log"; then
        ok "TLS reload: SIGHUP logs the gRPC port's new certificate"
        node_client tls "" "$TMP/cert2.pem" >"$TMP/tls2.out" 2>&1
        sed 's/^\(not \)\{0,1\}ok - /&after SIGHUP: /' "$TMP/tls2.out" >"$TMP/tls2.lines"
        tally "$TMP/tls2.lines"
        node_client tlsold "" "$TMP/cert-old.pem" >"$TMP/tls3.out" 2>&1
        tally "$TMP/tls3.out"
      else
        fail "TLS reload: SIGHUP logs the gRPC port's new certificate" "$(tail -5 "$DDIR/log")"
      fi
    else
      fail "openssl makes a second test certificate"
    fi
    stop_daemon
  else
    fail "daemon with TLS starts" "see log above"
  fi
  healthy() { curl -s --max-time 5 -o /dev/null -w '%{http_code}' "$URL/healthz" | grep -qx 200; }
else
  fail "openssl makes a test certificate"
fi

# ---- drain: a call in flight at SIGTERM is answered; new ones are refused
if start_grpc; then
  mkfifo "$TMP/go"
  node_client drain <"$TMP/go" >"$TMP/drain.out" 2>&1 &
  npid=$!
  exec 7>"$TMP/go"
  if poll 30 grep -q '^held$' "$TMP/drain.out"; then
    kill -TERM "$DPID"
    poll 10 grep -q 'draining' "$DDIR/log"
    echo go >&7
  fi
  exec 7>&-
  wait "$npid"
  grep -v '^held$' "$TMP/drain.out" >"$TMP/drain.lines"
  tally "$TMP/drain.lines"
  wait_exit 30
  check "drain: exit 0 once the call is answered" test "${DRC:-none}" = 0
else
  fail "daemon for the drain test starts" "see log above"
fi

# ---- --max-pending, shared with HTTP: RESOURCE_EXHAUSTED OVERLOADED
if start_grpc --max-pending 1 --threads 1; then
  node_client overload >"$TMP/over.out" 2>&1
  tally "$TMP/over.out"
  stop_daemon
else
  fail "daemon with --max-pending 1 starts" "see log above"
fi

# ---- regression grpc_accept_emfile: out of descriptors, the daemon's own
# gRPC port logs and rests (SOCK_ACCEPT_WAIT_MS) instead of spinning on
# accept(), and serves again once descriptors are free.
if start_grpc; then
  starve_fds "${GADDR#*:}" >"$TMP/emfile.out" 2>&1
  n=$(grep -c 'grpc: accept: Too many open files; accepting again in 100 ms' "$DDIR/log")
  check "EMFILE: the gRPC port logs and rests" eval '[ "$n" -ge 1 ] && [ "$n" -le 100 ]'
  check "EMFILE: gRPC serves again once descriptors are free" timeout 60 "$PY" -c '
import grpc, sys
grpc.channel_ready_future(grpc.insecure_channel(sys.argv[1])).result(timeout=20)' "$GADDR"
  stop_daemon
  check "EMFILE: exit 0" test "$DRC" = 0
else
  fail "daemon for the EMFILE test starts" "see log above"
fi

# ---- the option itself
"$REDUCED_BIN" --grpc-listen nowhere >/dev/null 2>"$TMP/err"; rc=$?
check "--grpc-listen nowhere: exit 2 naming the option" eval '[ $rc = 2 ] && grep -q -- "--grpc-listen" "$TMP/err"'
if start_daemon --grpc-listen none; then
  check "--grpc-listen none: no gRPC port" eval '! grep -q "gRPC listening" "$DDIR/log"'
  stop_daemon
fi
finish
