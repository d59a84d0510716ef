#!/bin/bash
# run.sh - the ONNX conformance cases against the real daemon (a `make check`
# TEST).  Starts reduced through ../integration/lib.sh, or uses
# $REDUCED_TEST_URL, then runs the conformance program on onnx-node/.
here=$(cd "$(dirname "$0")" && pwd)
: "${top_srcdir:=$(cd "$here/../.." && pwd)}"
: "${top_builddir:=$top_srcdir}"
. "$top_srcdir/tests/integration/lib.sh"
CONF=$top_builddir/tests/conformance/conformance
if [ ! -x "$CONF" ]; then echo "# $CONF not built (make check builds it)"; echo "0 passed, 1 failed"; exit 1; fi
use_daemon
"$CONF" "$URL" "$top_srcdir/tests/conformance/onnx-node"
