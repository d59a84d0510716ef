#!/bin/bash
# sancheck.sh KIND - `make check-asan` / `make check-tsan`: configures a
# separate build with --enable-asan (AddressSanitizer + UBSan) or
# --enable-tsan (ThreadSanitizer) in $SAN_WORK, builds it and runs
# `make check` there (make check-tsan: its tests that run threads): unit tests, the corpus replay, the black-box
# integration tests (the daemon's threaded paths: 16 parallel clients, a
# 20 MB request split over the worker pool, overload, shutdown) and the
# conformance suite.
#
# Every sanitizer report fails the run: reports stop the process
# (halt_on_error) and go to files under $SAN_WORK/reports/ (log_path), which
# must stay empty - so a report in a daemon that a test merely stops still
# counts.  libmicrohttpd, libuv and jansson are not instrumented; TSan still
# sees their pthread calls.  No suppressions are used.
#
# make check there is the same parallel harness (tests/local.mk), with a
# longer time limit per test (SAN_TEST_TIMEOUT, default 1800 s: sanitized
# code is slower) and the npm tools of the calling build tree (the copy has
# none; scripts/bootstrap.sh installs them there).  Prints each test's
# result line and, when anything failed, the logs tests/summary.sh shows.
#   top_srcdir, top_builddir, SAN_WORK, SAN_TEST_TIMEOUT, SAN_TESTS, KIND = asan | tsan
set -u
kind=${1:?usage: sancheck.sh asan|tsan}
here=$(cd "$(dirname "$0")" && pwd)
: "${top_srcdir:=$(cd "$here/../.." && pwd)}"
: "${top_builddir:=$top_srcdir}"
: "${SAN_WORK:=$PWD/san-$kind}"
: "${SAN_TEST_TIMEOUT:=1800}"
case $kind in asan|tsan) ;; *) echo "sancheck: unknown kind '$kind'" >&2; exit 2;; esac

t0=$(date +%s)
rm -rf "$SAN_WORK"
mkdir -p "$SAN_WORK/reports"
if [ -f "$top_srcdir/config.status" ]; then
  # The source tree is configured in place (CI: scripts/bootstrap.sh), so
  # a VPATH build from it is refused; build a copy of the sources instead.
  src=$SAN_WORK/src
  mkdir -p "$src"
  if git -C "$top_srcdir" rev-parse --git-dir >/dev/null 2>&1; then
    git -C "$top_srcdir" ls-files -z | (cd "$top_srcdir" && tar --null -T - -cf -) | tar -C "$src" -xf -
    (cd "$src" && autoreconf -fi >/dev/null 2>&1) || { echo "sancheck: autoreconf failed" >&2; exit 1; }
  else
    make -C "$top_srcdir" distdir distdir="$src" >/dev/null || exit 1
  fi
  bld=$src
else
  src=$top_srcdir
  bld=$SAN_WORK/build
  mkdir -p "$bld"
fi
cd "$bld" || exit 1
echo "sancheck: $kind build of $src in $bld"
# The untracked npm trees stay in the calling tree (scripts/bootstrap.sh):
# Swagger UI for /docs (embedded by make), playwright-core for t_pages.sh.
"$src/configure" --enable-"$kind" \
  SWAGGER_UI_DIR="$top_srcdir/web/npm/node_modules/swagger-ui-dist" >"$SAN_WORK/configure.log" 2>&1 ||
  { tail -20 "$SAN_WORK/configure.log"; echo "sancheck: configure failed" >&2; exit 1; }
make -j"$(nproc)" >"$SAN_WORK/build.log" 2>&1 ||
  { tail -30 "$SAN_WORK/build.log"; echo "sancheck: build failed" >&2; exit 1; }

R=$SAN_WORK/reports/report
export ASAN_OPTIONS="halt_on_error=1:abort_on_error=0:detect_leaks=1:log_path=$R"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:log_path=$R"
# second_deadlock_stack: better lock-order reports; exitcode 66 as usual.
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:log_path=$R"
tools=$top_builddir/tests/openapi-tools
[ -d "$tools" ] || tools=$top_srcdir/tests/openapi-tools
browser=$top_builddir/tests/browser-tools
[ -d "$browser" ] || browser=$top_srcdir/tests/browser-tools
grpc_tools=$top_builddir/tests/grpc-tools
[ -d "$grpc_tools" ] || grpc_tools=$top_srcdir/tests/grpc-tools
# SAN_TESTS: a subset (make check TESTS=...): make check-tsan passes the
# tests that run threads (TSAN_TESTS), or one test while working on it
# -jN: N tests side by side, as many as cores (the harness, tests/local.mk)
REDUCED_OPENAPI_TOOLS=$tools REDUCED_BROWSER_TOOLS=$browser GRPC_TOOLS=$grpc_tools make -j"$(nproc)" check TEST_TIMEOUT="$SAN_TEST_TIMEOUT" \
  ${SAN_TESTS:+TESTS="$SAN_TESTS"} >"$SAN_WORK/check.log" 2>&1
rc=$?
grep -E '^(PASS|FAIL|XFAIL|ERROR|SKIP|XPASS):' "$SAN_WORK/check.log"
if [ "$rc" -ne 0 ]; then
  # the failing tests' logs, as tests/summary.sh printed them
  sed -n '/^==================== /,$p' "$SAN_WORK/check.log" | head -n 400
fi
grep -E '^[0-9]+ passed, [0-9]+ failed$' "$SAN_WORK/check.log" | tail -n 1
nrep=$(find "$SAN_WORK/reports" -type f | wc -l)
if [ "$nrep" -gt 0 ]; then
  echo "sancheck: $nrep sanitizer report file(s):"
  for f in "$SAN_WORK/reports"/*; do echo "== $f"; head -n 40 "$f"; done
fi
echo "sancheck: $kind: make check rc=$rc, $nrep report(s), $(( $(date +%s) - t0 )) s"
[ "$rc" -eq 0 ] && [ "$nrep" -eq 0 ]
