#!/bin/bash
# run.sh - `make fuzz`: builds every libFuzzer target with clang-14
# (-fsanitize=fuzzer,address,undefined) from the real module sources and
# runs each for FUZZ_SECONDS (default 60) on a copy of its committed seed
# corpus (tests/fuzz/corpus/<target>/), two targets at a time.  Prints the
# executions per target; exits 1 if any target crashed, leaked or hung
# (the reproducer is kept in $FUZZ_WORK/<target>/; copy it into the corpus
# under a name that says what it was, after fixing the bug, so that the
# replay test in `make check` keeps it fixed).
#   top_srcdir, top_builddir (config.h), FUZZ_WORK, FUZZ_SECONDS, FUZZ_JOBS
set -u
here=$(cd "$(dirname "$0")" && pwd)
: "${top_srcdir:=$(cd "$here/../.." && pwd)}"
: "${top_builddir:=$top_srcdir}"
: "${FUZZ_WORK:=$top_builddir/fuzz}"
: "${FUZZ_SECONDS:=60}"
: "${FUZZ_JOBS:=2}"
CC_FUZZ=${CC_FUZZ:-clang-14}

# clang-14 and its runtime (libFuzzer, sanitizers): scripts/bootstrap.sh
# installs them; nothing is installed here.
if ! command -v "$CC_FUZZ" >/dev/null || ! dpkg-query -W -f='${Status}' libclang-rt-14-dev 2>/dev/null | grep -q "ok installed"; then
  echo "fuzz: missing $CC_FUZZ or libclang-rt-14-dev: run scripts/bootstrap.sh (step: Debian packages)" >&2
  exit 1
fi

S=$top_srcdir
# Every .c of a module is part of its library (lib/local.mk, api/local.mk).
LIB_SRC=$(echo "$S"/lib/*.c)
API_SRC=$(echo "$S"/api/*.c)
# target -> sources besides tests/fuzz/<target>.c.
declare -A SRC=(
  [fuzz_json]="$API_SRC $LIB_SRC"
  [fuzz_plan]="$LIB_SRC"
  [fuzz_npy]="$API_SRC $LIB_SRC"
  [fuzz_query]="$API_SRC $LIB_SRC"
  [fuzz_prefix]="$API_SRC $LIB_SRC"
  [fuzz_inflate]="$API_SRC $LIB_SRC"
)
TARGETS=(fuzz_json fuzz_plan fuzz_npy fuzz_query fuzz_prefix fuzz_inflate)

CFLAGS_FUZZ="-g -O1 -std=c11 -fno-omit-frame-pointer -fsanitize=fuzzer,address,undefined
  -fno-sanitize-recover=undefined -ffp-contract=off -D_GNU_SOURCE
  -I$top_builddir -I$S/lib -I$S/api -I$S/daemon $(pkg-config --cflags jansson zlib)"
# zlib: api/encoding.c (content codings) is one of the api sources.
LIBS_FUZZ="$(pkg-config --libs jansson zlib) -lm"

mkdir -p "$FUZZ_WORK"
fuzz_one() {   # target -> $FUZZ_WORK/<t>/{bin,corpus,log,result}
  local t=$1 w=$FUZZ_WORK/$1
  rm -rf "$w"; mkdir -p "$w/corpus"
  # shellcheck disable=SC2086
  if ! $CC_FUZZ $CFLAGS_FUZZ "$here/$t.c" ${SRC[$t]} $LIBS_FUZZ -o "$w/$t" >"$w/build.log" 2>&1; then
    echo "BUILD-FAILED" >"$w/result"; return
  fi
  cp "$here/corpus/$t"/* "$w/corpus/" 2>/dev/null
  local dict=()
  [ -f "$here/$t.dict" ] && dict=(-dict="$here/$t.dict")
  # -rss_limit_mb: a decoder that allocates what a client claims is a bug.
  (cd "$w" && ASAN_OPTIONS=detect_leaks=1 ./"$t" -max_total_time="$FUZZ_SECONDS" \
     -print_final_stats=1 -timeout=10 -rss_limit_mb=2048 -artifact_prefix="$w/" \
     "${dict[@]}" corpus >"$w/log" 2>&1)
  echo "rc=$?" >"$w/result"
}

echo "fuzz: ${#TARGETS[@]} target(s), $FUZZ_SECONDS s each, $FUZZ_JOBS at a time, work in $FUZZ_WORK"
running=0
for t in "${TARGETS[@]}"; do
  fuzz_one "$t" &
  running=$((running + 1))
  if [ "$running" -ge "$FUZZ_JOBS" ]; then wait -n; running=$((running - 1)); fi
done
wait

bad=0
printf '%-16s %12s %10s %8s %s\n' target executions exec/s corpus result
for t in "${TARGETS[@]}"; do
  w=$FUZZ_WORK/$t
  res=$(cat "$w/result" 2>/dev/null || echo missing)
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$w/log" 2>/dev/null | tail -n1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$w/log" 2>/dev/null | tail -n1)
  ncorp=$(find "$w/corpus" -type f 2>/dev/null | wc -l)
  verdict=ok
  if [ "$res" = BUILD-FAILED ]; then verdict="build failed: $(head -c 600 "$w/build.log")"
  elif [ "$res" != rc=0 ]; then
    verdict="FAILED ($res): $(grep -m1 -E 'ERROR:|runtime error|Test unit written' "$w/log")"
    grep -E 'Test unit written|SUMMARY' "$w/log" | sed 's/^/    /'
  fi
  [ "$verdict" = ok ] || bad=1
  printf '%-16s %12s %10s %8s %s\n' "$t" "${execs:-?}" "${rate:-?}" "$ncorp" "$verdict"
done
[ "$bad" -eq 0 ] && echo "fuzz: no crash, leak or timeout" || echo "fuzz: FAILURES above (logs in $FUZZ_WORK/<target>/log)"
exit "$bad"
