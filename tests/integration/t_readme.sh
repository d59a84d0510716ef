#!/bin/bash
# t_readme.sh - the README's examples, run against the real daemon, so the
# documentation cannot go stale.  Every ```sh block of README.md holds
# "$ command" lines (continued with a trailing backslash) followed by the
# exact output the command must print; http://127.0.0.1:8080 is replaced by
# the test daemon's address.  Also checks that .ci/run runs the README's
# test command.
. "$(dirname "$0")/lib.sh"
use_daemon
readme=$top_srcdir/README.md

n=0 cmd= exp= inblock=0 incmd=0
: >"$TMP/ran"
run_example() {
  n=$((n + 1))
  printf '%s\n' "$cmd" | tr '\n' ' ' >>"$TMP/ran"; echo >>"$TMP/ran"
  local got
  got=$(bash -c "${cmd//http:\/\/127.0.0.1:8080/$URL}" 2>&1)
  if [ "$got" = "$exp" ]; then ok "README example $n: ${cmd:0:70}"
  else fail "README example $n: ${cmd:0:70}" "expected: $exp" "got:      $got"; fi
  cmd= exp=
}
while IFS= read -r line; do
  if [ $inblock = 0 ]; then
    [ "$line" = '```sh' ] && inblock=1
    continue
  fi
  if [ "$line" = '```' ]; then
    [ -n "$cmd" ] && run_example
    inblock=0 incmd=0
    continue
  fi
  if [ $incmd = 1 ]; then
    cmd+=$'\n'"$line"
    [ "${line%\\}" = "$line" ] && incmd=0
  elif [ "${line#\$ }" != "$line" ]; then
    [ -n "$cmd" ] && run_example
    cmd=${line#\$ }
    [ "${line%\\}" != "$line" ] && incmd=1
  else
    exp+=${exp:+$'\n'}$line
  fi
done <"$readme"
check "README has examples (found $n)" test "$n" -ge 3
# One example (at least) of each way to call the daemon is among them
# ($TMP/ran: one line per example command).
has_example() { # NAME PATTERN [EXCLUDED-PATTERN]
  if grep -E -- "$2" "$TMP/ran" | grep -vE -- "${3:-^\$}" | grep -q .; then ok "README runs a $1 example"
  else fail "README runs a $1 example" "no example command matches '$2'"; fi
}
has_example "/v1 JSON" "/v1/reduce.*Content-Type: application/json"
has_example "/v1 binary (raw)" "/v1/reduce.*Content-Type: application/octet-stream"
has_example "/v1 .npy" "/v1/reduce.*Content-Type: application/x-npy"
has_example "/v2 JSON" "/v2/models/[^ ]*/infer" "Inference-Header-Content-Length"
has_example "/v2 binary" "Inference-Header-Content-Length.*/v2/models/[^ ]*/infer|/v2/models/[^ ]*/infer.*Inference-Header-Content-Length"

# The quick start: the second command is the one CI runs.
testcmd=$(grep -A2 '^Build and run the whole test suite' "$readme" | sed -n 's/^    //p' | head -n 1)
check "README test command ('$testcmd') is what .ci/run runs" grep -qxF -- "$testcmd" "$top_srcdir/.ci/run"
finish
