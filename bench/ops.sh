#!/bin/sh
# ops.sh - the operator part of `make bench`: libreduce (bench/bench) and ONNX
# Runtime (bench/ort.mjs, onnxruntime-node) on the same cases in the same run,
# then the side-by-side table (bench/table.mjs).
#
#   top_builddir=DIR bench/ops.sh [--json] [--runs N] [--op NAME] [--case NAME]
#
# Flags also come from $BENCH_FLAGS (as `make bench BENCH_FLAGS='--runs 3'`);
# --json prints one JSON object per line (bench/bench's rows, ONNX Runtime's
# rows, then the compare rows and the summary) instead of the tables.
# onnxruntime-node is installed, pinned, into DIR/bench/ort-node on first use
# (npm --ignore-scripts: its install script only fetches GPU providers); if
# that fails, the libreduce figures are still printed, without ONNX Runtime.
# Both sides run on 1 and on all CPUs' threads (ORT: intraOpNumThreads).
set -eu

ORT_VERSION=1.30.0
here=$(cd "$(dirname "$0")" && pwd)
builddir=$(cd "${top_builddir:-.}" && pwd)
ortdir=$builddir/bench/ort-node

json=0
flags=
# shellcheck disable=SC2086  # BENCH_FLAGS is a word list
set -- ${BENCH_FLAGS:-} "$@"
while [ $# -gt 0 ]; do
  case $1 in
    --json) json=1; shift ;;
    --runs|--op|--case)
      [ $# -ge 2 ] || { echo "ops.sh: $1 needs a value" >&2; exit 2; }
      flags="$flags $1 $2"; shift 2 ;;
    --duration) shift 2 ;;          # bench/daemon.sh's flag
    *) echo "usage: ops.sh [--json] [--runs N] [--op NAME] [--case NAME]" >&2; exit 2 ;;
  esac
done
threads=$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 1)

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

note() { if [ "$json" -eq 0 ]; then printf '%s\n' "$*"; else printf '%s\n' "$*" >&2; fi; }

# shellcheck disable=SC2086
"$builddir/bench/bench" --json --threads "$threads" $flags >"$tmp/reduced.jsonl" || {
  echo "ops.sh: bench/bench failed" >&2; cat "$tmp/reduced.jsonl" >&2; exit 1; }
note "# libreduce: bench/bench --threads $threads$flags done"

# As scripts/bootstrap.sh's npm tools: DIR/node_modules holds exactly the
# pinned package, recorded in DIR/.pkgs.
pkg=onnxruntime-node@$ORT_VERSION
ort=1
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  note "# ONNX Runtime skipped: node and npm are needed (Debian packages nodejs, npm)"; ort=0
elif [ "$(cat "$ortdir/.pkgs" 2>/dev/null)" != "$pkg" ]; then
  note "# installing $pkg into $ortdir"
  rm -rf "$ortdir"
  mkdir -p "$ortdir"
  echo '{"private":true}' >"$ortdir/package.json"
  if (cd "$ortdir" && npm install --ignore-scripts --no-audit --no-fund --loglevel=error \
      "$pkg") >"$tmp/npm.log" 2>&1; then
    echo "$pkg" >"$ortdir/.pkgs"
  else
    cat "$tmp/npm.log" >&2
    note "# ONNX Runtime skipped: npm install $pkg failed"; ort=0
  fi
fi
: >"$tmp/ort.jsonl"
if [ "$ort" -eq 1 ]; then
  # shellcheck disable=SC2086
  ORT_NODE_MODULES=$ortdir/node_modules node "$here/ort.mjs" --json --threads "1,$threads" \
    $flags >"$tmp/ort.jsonl" || { echo "ops.sh: bench/ort.mjs failed" >&2; exit 1; }
  note "# ONNX Runtime: bench/ort.mjs --threads 1,$threads$flags done"
fi

if [ "$json" -eq 1 ]; then
  cat "$tmp/reduced.jsonl" "$tmp/ort.jsonl"
  node "$here/table.mjs" --json "$tmp/reduced.jsonl" "$tmp/ort.jsonl"
else
  node "$here/table.mjs" "$tmp/reduced.jsonl" "$tmp/ort.jsonl"
fi
