# lib.sh - helpers for the black-box tests of reduced (sourced by bash).
#
# Starting daemons:
#   start_daemon [FLAGS...]   reduced --listen 127.0.0.1:0 --port-file F FLAGS,
#                             waits until /healthz answers; sets URL, PORT,
#                             DPID, DDIR (log in $DDIR/log, exit status in
#                             $DDIR/rc once it exits)
#   start_raw PORTFILE ARGS... the same with exactly ARGS (env-var tests)
#   stop_daemon [SIG]         signal (TERM) and wait (bounded); sets DRC
#   wait_exit SECONDS         wait for the current daemon to exit; sets DRC
#   use_daemon                use $REDUCED_TEST_URL if set, else start one
#   need_own_daemon NAME      0 if the test may start its own daemon; else
#                             prints a skip line (REDUCED_TEST_URL mode)
#   accepted                  ESTABLISHED connections to $PORT that the
#                             daemon has accepted (its socket fds)
#   queued                    all ESTABLISHED connections to $PORT, accepted
#                             or waiting in the listen backlog
# Tools (the tests install nothing; scripts/bootstrap.sh does):
#   need_tool CMD STEP [PKG]  0 if CMD is on PATH; else a failed check
#                             "missing CMD: run scripts/bootstrap.sh (step: STEP)"
# Requests (response body in $B, headers in $H, status in $ST):
#   http METHOD PATH [CURL ARGS...]
#   post JSON [CURL ARGS...]            POST /v1/reduce as application/json
# Checks (one line each; tallies in PASS/FAIL/SKIP):
#   ok NAME | fail NAME DETAIL... | skip NAME WHY | check NAME CMD...
#   expect_reduce NAME REQUEST EXPECTED_BODY [MODE]
#   expect_error NAME REQUEST STATUS CODE[|CODE...]
#   expect_error_body NAME STATUS CODE[|CODE...]   (after http/post)
#   finish                    prints "N passed, N failed" and returns 0/1
# Everything started here is killed on exit.

set -u

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${top_srcdir:=$(cd "$here/../.." && pwd)}"
# make check sets both (AM_TESTS_ENVIRONMENT); run by hand, without
# top_builddir fall back to the current directory when it is a build tree,
# else to the source tree.
[ -z "${top_builddir:-}" ] && [ -f Makefile ] && [ -d daemon ] && top_builddir=$(pwd)
: "${top_builddir:=$top_srcdir}"
REDUCED_BIN=${REDUCED_BIN:-$top_builddir/daemon/reduced}
JTOOL=${JTOOL:-$top_builddir/tests/integration/jtool}

# Daemons started here serve HTTP only (the default gRPC port 8081 would be
# taken by the first of the tests running in parallel); t_grpc.sh asks for
# a gRPC port of its own with --grpc-listen.
export REDUCED_GRPC_LISTEN=${REDUCED_GRPC_LISTEN:-none}
PASS=0 FAIL=0 SKIP=0 NCHECK=0 NDAEMON=0
TMP=$(mktemp -d "${TMPDIR:-/tmp}/reduced-itest.XXXXXX")
B=$TMP/body H=$TMP/headers
URL= PORT= DPID= DDIR= DRC=
DAEMON_DIRS=()
BG_PIDS=()

cleanup() {
  local d p live=()
  exec 2>/dev/null   # no "Killed" notices for helpers stopped here
  for p in "${BG_PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done
  # daemons still running: TERM, a bounded wait, then KILL
  for d in "${DAEMON_DIRS[@]}"; do
    [ -f "$d/rc" ] && continue
    p=$(cat "$d/pid" 2>/dev/null) && [ -n "$p" ] && kill -TERM "$p" 2>/dev/null && live+=("$d:$p")
  done
  for d in "${live[@]}"; do
    DDIR=${d%:*}
    poll 15 daemon_dead || kill -KILL "${d##*:}" 2>/dev/null
  done
  wait 2>/dev/null
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---------------------------------------------------------------- checks

ok() { PASS=$((PASS + 1)); NCHECK=$((NCHECK + 1)); echo "ok $NCHECK - $1"; }
fail() {
  FAIL=$((FAIL + 1)); NCHECK=$((NCHECK + 1))
  echo "not ok $NCHECK - $1"
  shift
  local l
  for l in "$@"; do printf '#   %.600s\n' "$l"; done
}
skip() { SKIP=$((SKIP + 1)); echo "skip - $1 ($2)"; }
# check NAME CMD...: ok if CMD succeeds.
check() {
  local name=$1; shift
  if "$@" >"$TMP/check.out" 2>&1; then ok "$name"
  else fail "$name" "failed: $*" "$(head -c 400 "$TMP/check.out")"; fi
}
finish() {
  [ "$SKIP" -gt 0 ] && echo "($SKIP skipped)"
  echo "$PASS passed, $FAIL failed"
  [ "$FAIL" -eq 0 ]
}

body_excerpt() { head -c 400 "$B" 2>/dev/null; }

# hdr NAME: value of the last NAME header of the last response (no CR).
hdr() {
  tr -d '\r' <"$H" | awk -v n="$1" '
    { i = index($0, ":"); if (i && tolower(substr($0, 1, i - 1)) == tolower(n)) {
        v = substr($0, i + 1); sub(/^[ \t]+/, "", v); sub(/[ \t]+$/, "", v); r = v } }
    END { print r }'
}

# jget PATH: value at PATH in the last body ("(absent)" if none).
jget() { "$JTOOL" get "$B" "$1" 2>/dev/null || true; }

# ---------------------------------------------------------------- requests

http() {
  local m=$1 p=$2; shift 2
  local how=(-X "$m")
  [ "$m" = HEAD ] && how=(-I)
  : >"$B"; : >"$H"
  ST=$(curl -sS --max-time 60 "${how[@]}" -o "$B" -D "$H" -w '%{http_code}' \
       "$@" "$URL$p" 2>"$TMP/curl.err") || ST="curl-exit-$?"
}

post() {
  local body=$1; shift
  printf '%s' "$body" >"$TMP/req"
  http POST /v1/reduce -H 'Content-Type: application/json' \
    --data-binary @"$TMP/req" "$@"
}

# expect_reduce NAME REQUEST EXPECTED [MODE]: 200 and a body equal to
# EXPECTED (numbers compared under MODE, see jtool).
expect_reduce() {
  local name=$1 req=$2 exp=$3 mode=${4:-}
  post "$req"
  if [ "$ST" != 200 ]; then
    fail "$name" "request: $req" "expected 200, got $ST: $(body_excerpt)"
    return
  fi
  local why
  if why=$("$JTOOL" eq "$B" "$exp" $mode 2>&1); then ok "$name"
  else fail "$name" "request: $req" "expected: $exp" "got: $(body_excerpt)" "$why"; fi
}

# expect_error_body NAME STATUS CODES: the last response is STATUS with
# {"error":{"code":C,"message":"..."}} (C one of CODES, |-separated),
# Content-Type application/json, an X-Request-Id, and for 503 a Retry-After.
expect_error_body() {
  local name=$1 status=$2 codes=$3 why=
  local code ct
  code=$(jget error.code)
  ct=$(hdr Content-Type)
  if [ "$ST" != "$status" ]; then why="status $ST, expected $status"
  elif [ "$("$JTOOL" keys "$B" . 2>/dev/null)" != error ]; then why="body is not {\"error\":...}"
  elif [ "$("$JTOOL" keys "$B" error 2>/dev/null)" != "code message" ]; then why="error members are not exactly code, message"
  elif ! printf '%s\n' "$codes" | tr '|' '\n' | grep -qxF -- "$code"; then why="code $code, expected $codes"
  elif [ "$("$JTOOL" type "$B" error.message 2>/dev/null)" != string ] || [ -z "$(jget error.message)" ]; then why="message is not a non-empty string"
  elif [ "${ct%%;*}" != application/json ]; then why="Content-Type '$ct'"
  elif [ -z "$(hdr X-Request-Id)" ]; then why="no X-Request-Id"
  elif [ "$status" = 503 ] && [ -z "$(hdr Retry-After)" ]; then why="503 without Retry-After"
  fi
  if [ -z "$why" ]; then ok "$name"; else fail "$name" "$why" "body: $(body_excerpt)"; fi
}

expect_error() {
  local name=$1 req=$2
  shift 2
  post "$req"
  local before=$FAIL
  expect_error_body "$name" "$@"
  [ "$FAIL" -gt "$before" ] && printf "#   request: %.600s\n" "$req"
  return 0
}

need_tool() {
  command -v "$1" >/dev/null 2>&1 && return 0
  fail "$1 is installed" "missing $1${3:+ (Debian package $3)}: run scripts/bootstrap.sh (step: $2)"
  return 1
}

# ---------------------------------------------------------------- daemons

# poll SECONDS CMD...: retries CMD every 0.1 s until it succeeds or the
# deadline passes (deadline bounds the wait; nothing asserts speed).
poll() {
  local end=$(($(date +%s) + $1)); shift
  until "$@"; do
    [ "$(date +%s)" -ge "$end" ] && return 1
    sleep 0.1
  done
}

port_ready() { [ -s "$1" ] && [ "$(tail -c 1 "$1" | od -An -c | tr -d ' ')" = '\n' ]; }
daemon_dead() { [ -f "$DDIR/rc" ]; }
# server-side sockets of $PORT in state ESTABLISHED (01): their inodes;
# those still in the listen backlog have inode 0 (no process owns them yet)
port_inodes() {
  local hexport
  hexport=$(printf '%04X' "$PORT")
  awk -v p=":$hexport" '$2 ~ p"$" && $4 == "01" { print $10 }' /proc/net/tcp /proc/net/tcp6 2>/dev/null
}
# The kernel writes /proc/net/tcp in pieces, and a socket another test opens
# or closes meanwhile can make one reading miss a line.  So no single
# reading decides a check: assert a count with `check NAME poll S eval ...`,
# which passes once the count holds within S seconds and still fails when
# it never does.
queued() { port_inodes | wc -l; }
accepted() {
  local n=0 i fds
  fds=$(ls -l "/proc/$DPID/fd" 2>/dev/null)
  for i in $(port_inodes); do
    case $fds in *"socket:[$i]"*) n=$((n + 1)) ;; esac
  done
  echo "$n"
}
healthy() { curl -s --max-time 5 -o /dev/null -w '%{http_code}' "$URL/healthz" | grep -qx 200; }

# starve_fds PORT: the daemon's descriptor limit down to 64, then 80
# connections to PORT held for a second and closed, then the limit back up
# (regressions accept_emfile_spin, grpc_accept_emfile).
starve_fds() {
  prlimit --pid "$DPID" --nofile=64:64
  /usr/bin/python3 - "$1" <<'PYEOF'
import socket, sys, time
held = [socket.create_connection(("127.0.0.1", int(sys.argv[1]))) for _ in range(80)]
time.sleep(1)
for s in held:
    s.close()
PYEOF
  prlimit --pid "$DPID" --nofile=4096:4096
}

# start_raw PORTFILE ARGS...: runs reduced ARGS in the background, waits for
# PORTFILE and /healthz.  Returns 1 (with the log shown) if it does not come up.
start_raw() {
  local pf=$1; shift
  NDAEMON=$((NDAEMON + 1))
  DDIR=$TMP/daemon$NDAEMON
  mkdir -p "$DDIR"
  DAEMON_DIRS+=("$DDIR")
  # The wrapper records the daemon's own pid (for signals) and its exit status
  # (renamed into place, so that a reader never sees an empty rc file).
  ( sh -c 'echo $$ >"$1"; shift; exec "$@"' sh "$DDIR/pid" "$REDUCED_BIN" "$@" \
      >"$DDIR/out" 2>"$DDIR/log" </dev/null
    echo $? >"$DDIR/rc.tmp" && mv "$DDIR/rc.tmp" "$DDIR/rc" ) &
  poll 10 test -s "$DDIR/pid"
  DPID=$(cat "$DDIR/pid" 2>/dev/null)
  if ! poll 20 eval 'port_ready "$pf" || daemon_dead'; then :; fi
  if ! port_ready "$pf"; then
    echo "# daemon did not write its port file ($*); log:"; sed 's/^/#   /' "$DDIR/log" | head -20
    return 1
  fi
  PORT=$(tr -d '\n' <"$pf")
  URL=http://127.0.0.1:$PORT
  if ! poll 20 healthy; then
    echo "# daemon on port $PORT is not healthy; log:"; sed 's/^/#   /' "$DDIR/log" | head -20
    return 1
  fi
}

start_daemon() {
  local pf=$TMP/port$((NDAEMON + 1))
  start_raw "$pf" --listen 127.0.0.1:0 --port-file "$pf" "$@"
}

wait_exit() {
  DRC=
  if poll "$1" daemon_dead; then DRC=$(cat "$DDIR/rc"); return 0; fi
  return 1
}

stop_daemon() {
  [ -n "$DPID" ] && [ ! -f "$DDIR/rc" ] && kill "-${1:-TERM}" "$DPID" 2>/dev/null
  if ! wait_exit 30; then kill -KILL "$DPID" 2>/dev/null; wait_exit 10; DRC=killed; fi
}

need_own_daemon() {
  if [ -n "${REDUCED_TEST_URL:-}" ]; then
    skip "$1" "needs its own daemon; REDUCED_TEST_URL is set"
    return 1
  fi
  return 0
}

use_daemon() {
  if [ -n "${REDUCED_TEST_URL:-}" ]; then
    URL=${REDUCED_TEST_URL%/}
    echo "# testing $URL"
  else
    if [ ! -x "$REDUCED_BIN" ]; then
      echo "# $REDUCED_BIN not built"; echo "0 passed, 1 failed"; exit 1
    fi
    start_daemon "$@" || { fail "daemon starts" "see log above"; finish; exit 1; }
    echo "# started $REDUCED_BIN on $URL"
  fi
}

if [ ! -x "$JTOOL" ]; then
  echo "# $JTOOL not built (make check builds it)"; echo "0 passed, 1 failed"; exit 1
fi
need_tool curl "Debian packages" || { finish; exit 1; }
