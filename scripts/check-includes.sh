#!/bin/sh
# check-includes.sh [TOP_SRCDIR] - the one-way layering of the sources
# (docs/architecture.md): lib/ includes only lib/ headers, api/ only lib/
# and api/ headers, daemon/ any of the three.  Headers are named bare
# ("reduce.h"), found through the target's -I; a path ("../api/api.h",
# "api/api.h") is refused, since it would get around the per-target include
# directories.  System headers (<...> not found in a layer) and autoconf's
# config.h are allowed everywhere.  Prints every violation as
# FILE:LINE: message, and exits 1 if there is any.
top=${1:-$(cd "$(dirname "$0")/.." && pwd)}
bad=0
for layer in lib api daemon; do
  case $layer in
    lib) allowed="lib" ;;
    api) allowed="lib api" ;;
    daemon) allowed="lib api daemon" ;;
  esac
  for f in "$top/$layer"/*.c "$top/$layer"/*.h; do
    [ -f "$f" ] || continue
    rel=$layer/${f##*/}
    # FILE LINE NAME for every #include "NAME" or <NAME>
    awk '{ if (match($0, /^[ \t]*#[ \t]*include[ \t]*["<][^">]*[">]/)) {
             s = substr($0, RSTART, RLENGTH); q = (index(s, "\"") > 0)
             sub(/^[ \t]*#[ \t]*include[ \t]*["<]/, "", s); sub(/[">]$/, "", s)
             print NR, q, s } }' "$f" |
    { bad=0
    while read -r line quoted name; do
      [ "$name" = config.h ] && continue
      home=
      for d in lib api daemon; do [ -f "$top/$d/$name" ] && home=$d; done
      case $name in
        */*)
          # a path: refused when it reaches into the tree (a layer file)
          base=${name##*/}
          for d in lib api daemon; do
            if [ -f "$top/$d/$base" ] && [ "$quoted" = 1 -o "${name%%/*}" = "$d" -o "${name%%/*}" = .. ]; then
              echo "$rel:$line: includes \"$name\": name project headers bare (\"$base\"), found through the layer's -I" >&2
              bad=1
              break
            fi
          done
          continue ;;
      esac
      [ -n "$home" ] || continue   # a system or library header
      case " $allowed " in
        *" $home "*) ;;
        *) echo "$rel:$line: includes \"$name\" ($home/): $layer/ may include only headers of: $allowed" >&2; bad=1 ;;
      esac
    done
    exit $bad; } || bad=1   # (a subshell: it reports through its status)
  done
done
[ "$bad" = 0 ] || echo "check-includes: layering violated (lib <- api <- daemon, docs/architecture.md)" >&2
exit $bad
