#!/bin/bash
# run.sh - the ONNX conformance cases against the real daemon (a `make check`
# TEST).  Starts reduced through ../integration/lib.sh, or uses
# $REDUCED_TEST_URL, then runs the conformance program on onnx-node/
# (ReduceL2, ReduceSumSquare: 36 cases) and onnx-node-family/ (the other
# Reduce ops, ArgMax, ArgMin: 127 cases).
here=$(cd "$(dirname "$0")" && pwd)
: "${top_srcdir:=$(cd "$here/../.." && pwd)}"
# make check sets both (AM_TESTS_ENVIRONMENT); run by hand, without
# top_builddir fall back to the current directory when it is a build tree,
# else to the source tree.
[ -z "${top_builddir:-}" ] && [ -f Makefile ] && [ -d daemon ] && top_builddir=$(pwd)
: "${top_builddir:=$top_srcdir}"
. "$top_srcdir/tests/integration/lib.sh"
CONF=$top_builddir/tests/conformance/conformance
if [ ! -x "$CONF" ]; then echo "# $CONF not built (make check builds it)"; echo "0 passed, 1 failed"; exit 1; fi
use_daemon
"$CONF" "$URL" "$top_srcdir/tests/conformance/onnx-node" \
  "$top_srcdir/tests/conformance/onnx-node-family"
