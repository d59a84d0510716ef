#!/bin/sh
# run-test.sh PROGRAM [ARGS...] - how `make check` runs each test (the
# LOG_COMPILER of tests/local.mk): PROGRAM under a time limit of
# $TEST_TIMEOUT seconds (default 600).  A test that runs out of time is
# stopped (TERM, then KILL 30 s later: the integration scripts stop their
# daemons on TERM) and fails with a line saying so.  The exit status is the
# test's own otherwise (77 = skipped, 99 = hard error, as automake reads it).
# The last line of each log says how long the test took.
limit=${TEST_TIMEOUT:-600}
if ! command -v timeout >/dev/null 2>&1; then
  echo "run-test: timeout (coreutils) is missing: run scripts/bootstrap.sh (step: Debian packages)"
  exit 99
fi
t0=$(date +%s)
timeout -k 30 "$limit" "$@"
rc=$?
echo "run-test: $* took $(( $(date +%s) - t0 )) s (exit $rc)"
case $rc in
  124|137)
    echo "run-test: TIMEOUT: '$*' ran out of its $limit s (TEST_TIMEOUT) and was stopped"
    echo "0 passed, 1 failed"
    exit 1 ;;
esac
exit $rc
