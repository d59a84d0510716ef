#!/bin/bash
# t_samebits.sh - a tensor gives bit-identical answers whatever its encoding
# and layout (issue 13): JSON nested and flat, raw, .npy C and Fortran
# order, big-endian .npy, /v2 JSON and binary, for every operator and dtype
# GET /v1/ops lists, buffered (default --buffer-max) and streamed
# (--buffer-max 0), with the regression case of the Fortran-order float64
# bug first (samebits.py).
. "$(dirname "$0")/lib.sh"
need_own_daemon "samebits" || { finish; exit; }
if ! /usr/bin/python3 -c 'import numpy' 2>/dev/null; then
  skip "same bits" "/usr/bin/python3 has no numpy"; finish; exit
fi
run() {
  local label=$1 line; shift
  start_daemon "$@" || { fail "daemon starts ($*)"; return; }
  /usr/bin/python3 "$here/samebits.py" "$URL" "$label" >"$TMP/sb" 2>&1
  while IFS= read -r line; do
    case $line in
      PASS\ *) ok "${line#PASS }" ;;
      FAIL\ *) fail "${line#FAIL }" ;;
      *\ passed,\ *) ;;
      *) echo "# $line" ;;
    esac
  done <"$TMP/sb"
  grep -q ' passed, 0 failed$' "$TMP/sb" || fail "$label samebits.py ran to the end" "$(tail -n 3 "$TMP/sb")"
  stop_daemon
}
run "buffered: "
run "streamed: " --buffer-max 0
finish
