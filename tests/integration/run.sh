#!/bin/bash
# run.sh - the black-box integration tests of reduced (a `make check` TEST).
# Runs every t_*.sh; each starts its own daemon from $top_builddir (or uses
# $REDUCED_TEST_URL) and prints one line per check.  Prints the total as
# "N passed, N failed" and exits non-zero if anything failed.
here=$(cd "$(dirname "$0")" && pwd)
: "${top_srcdir:=$(cd "$here/../.." && pwd)}"
# The serial-tests driver does not apply AM_TESTS_ENVIRONMENT, so without
# top_builddir fall back to the current directory when it is a build tree
# (make check runs tests there), else to the source tree.
[ -z "${top_builddir:-}" ] && [ -f Makefile ] && [ -d daemon ] && top_builddir=$(pwd)
: "${top_builddir:=$top_srcdir}"
export top_srcdir top_builddir
pass=0 failed=0 broken=
for t in t_reduce t_dtypes t_errors t_http t_cli t_concurrency t_shutdown t_binary t_v2 t_readme t_metrics t_openapi t_security t_limits t_grpc; do
  echo "# ---- $t"
  out=$(mktemp)
  bash "$here/$t.sh" 2>&1 | tee "$out"
  last=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$out" | tail -n 1)
  rm -f "$out"
  if [ -z "$last" ]; then broken="$broken $t"; failed=$((failed + 1)); continue; fi
  set -- $last
  pass=$((pass + $1)) failed=$((failed + $3))
done
[ -n "$broken" ] && echo "# scripts that did not finish:$broken"
echo "$pass passed, $failed failed"
[ "$failed" -eq 0 ]
