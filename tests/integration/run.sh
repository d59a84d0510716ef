#!/bin/bash
# run.sh - every integration script, one after the other, outside `make
# check` (which runs each as its own test: tests/local.mk).  Typical use:
#   REDUCED_TEST_URL=http://127.0.0.1:8080 tests/integration/run.sh
#   top_builddir=$PWD tests/integration/run.sh t_v2 t_http   # some of them
# The scripts are those of INTEGRATION_TESTS in tests/local.mk, the one
# list.  Each starts its own daemon from $top_builddir (or uses
# $REDUCED_TEST_URL) and prints one line per check.  Prints the total as
# "N passed, N failed" and exits non-zero if anything failed.
here=$(cd "$(dirname "$0")" && pwd)
: "${top_srcdir:=$(cd "$here/../.." && pwd)}"
[ -z "${top_builddir:-}" ] && [ -f Makefile ] && [ -d daemon ] && top_builddir=$(pwd)
: "${top_builddir:=$top_srcdir}"
export top_srcdir top_builddir
if [ $# -gt 0 ]; then
  list="$*"
else
  list=$(sed -n '/^INTEGRATION_TESTS *=/,/^$/p' "$top_srcdir/tests/local.mk" |
    grep -o 't_[a-z0-9_]*\.sh' | sed 's/\.sh$//')
fi
[ -n "$list" ] || { echo "run.sh: no INTEGRATION_TESTS in $top_srcdir/tests/local.mk"; echo "0 passed, 1 failed"; exit 1; }
pass=0 failed=0 broken=
for t in $list; do
  t=${t%.sh}
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
