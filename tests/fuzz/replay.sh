#!/bin/sh
# replay.sh - a `make check` test: every fuzz target, built with the normal
# compiler and tests/fuzz/replay.c, runs once over its committed corpus
# (seeds plus the named reproducers of every crash the fuzzers found).
here=$(cd "$(dirname "$0")" && pwd)
: "${top_srcdir:=$(cd "$here/../.." && pwd)}"
[ -z "${top_builddir:-}" ] && [ -f Makefile ] && top_builddir=$(pwd)
: "${top_builddir:=$top_srcdir}"
rc=0
for bin in "$top_builddir"/tests/fuzz/replay_*; do
  [ -x "$bin" ] || continue
  t=fuzz_${bin##*/replay_}
  "$bin" "$top_srcdir/tests/fuzz/corpus/$t" || { echo "FAIL: $t"; rc=1; }
done
exit $rc
