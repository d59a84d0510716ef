#!/bin/sh
# summary.sh LOG... - the closing lines of `make check`: for each test log of
# automake's parallel harness (and its .trs result), the number of checks
# that passed and failed, the logs of the tests that failed, and the total
# as one plain last line "N passed, N failed".  Exits 1 if anything failed.
#
# Checks are counted from each log's own report: the last
# "N passed, N failed" line (integration scripts, conformance), or cmocka's
# "[  PASSED  ] N test(s)." and "[  FAILED  ] N test(s)" lines (unit tests);
# a test with neither counts as one check.  A test that the harness marks
# FAIL or ERROR (crashed, timed out, exited non-zero) counts at least one
# failed check whatever its log says.
src=$(cd "$(dirname "$0")/.." && pwd)
pass=0 failed=0 nfail=0 failed_logs= failed_names=
for log in "$@"; do
  trs=${log%.log}.trs
  name=${log%.log}
  [ -f "$src/$name.sh" ] && name=$name.sh   # the harness drops .sh from logs
  res=$(sed -n 's/^:test-result: *//p' "$trs" 2>/dev/null | head -n 1)
  [ -n "$res" ] || res=MISSING
  if [ -f "$log" ]; then
    counts=$(awk '
      /^[0-9]+ passed, [0-9]+ failed$/ { lp = $1; lf = $3; line = 1 }
      /^\[  PASSED  \] [0-9]+ test/ { cp += $4; cm = 1 }
      /^\[  FAILED  \] [0-9]+ test/ { cf += $4; cm = 1 }
      END { if (line) print lp, lf; else if (cm) print cp + 0, cf + 0; else print "-" }' "$log")
  else
    counts=-
  fi
  case $res in PASS|XFAIL|SKIP) bad=0 ;; *) bad=1 ;; esac
  if [ "$counts" = - ]; then
    case $res in PASS|XFAIL) p=1 f=0 ;; SKIP) p=0 f=0 ;; *) p=0 f=1 ;; esac
  else
    p=${counts% *} f=${counts#* }
    [ "$bad" = 1 ] && [ "$f" -eq 0 ] && f=1
  fi
  pass=$((pass + p)) failed=$((failed + f))
  if [ "$bad" = 1 ]; then
    nfail=$((nfail + 1))
    failed_logs="$failed_logs $log"
    failed_names="$failed_names $name"
    echo "$res: $name ($p passed, $f failed)"
  fi
done
for log in $failed_logs; do
  echo "==================== $log (its last 150 lines)"
  tail -n 150 "$log" 2>/dev/null || echo "(no log)"
done
[ "$nfail" -gt 0 ] && echo "==================== $nfail test(s) failed:$failed_names"
echo "$pass passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$nfail" -eq 0 ]
