#!/bin/sh
# format.sh [--check] [FILE...] - the C style of the tree is .clang-format's
# (clang-format 14).  Without --check, rewrites the files in place; with
# --check (what `make check-style` runs, part of `make check-all`), changes
# nothing and fails listing every file whose text differs from what
# clang-format makes of it.  The files: every tracked .c and .h (git
# ls-files; without git, every .c and .h under lib, api, daemon, tests and
# bench), except generated and vendored ones (EXCLUDE below).
set -u
cd "$(dirname "$0")/.." || exit 2
# Generated: daemon/openapi_yaml.c (api/openapi.yaml as a C string).
# Vendored: none today; add paths here (extended regular expression).
EXCLUDE='^daemon/openapi_yaml\.c$|^daemon/pages_(web|docs)\.c$|^tests/browser-tools/|^web/npm/|/corpus/|^tests/openapi-tools/'

check=no
[ "${1:-}" = --check ] && { check=yes; shift; }

CF=${CLANG_FORMAT:-clang-format-14}
if ! command -v "$CF" >/dev/null 2>&1; then
  echo "format: missing $CF: run scripts/bootstrap.sh (step: Debian packages)" >&2
  exit 2
fi

if [ $# -gt 0 ]; then
  files=$(printf '%s\n' "$@")
else
  files=$(git ls-files '*.c' '*.h' 2>/dev/null)
  [ -n "$files" ] || files=$(find lib api daemon tests bench -name '*.[ch]' | sort)
fi
files=$(printf '%s\n' "$files" | grep -Ev "$EXCLUDE" | grep .)
[ -n "$files" ] || { echo "format: no C files found" >&2; exit 2; }

if [ "$check" = no ]; then
  # shellcheck disable=SC2086
  printf '%s\n' "$files" | xargs "$CF" -i --style=file
  exit $?
fi

bad=0 nbad=0 nlines=0
for f in $files; do
  if ! "$CF" --style=file "$f" | cmp -s - "$f"; then
    n=$("$CF" --style=file "$f" | diff "$f" - | grep -c '^[<>]')
    echo "check-style: $f: $n line(s) differ from .clang-format"
    nbad=$((nbad + 1)) nlines=$((nlines + n)) bad=1
  fi
done
nfiles=$(printf '%s\n' "$files" | wc -l)
if [ "$bad" = 1 ]; then
  echo "check-style: $nbad of $nfiles file(s) differ ($nlines line(s)); scripts/format.sh rewrites them (see the diff with: clang-format-14 FILE | diff FILE -)"
  exit 1
fi
echo "check-style: $nfiles file(s) formatted as .clang-format says"
