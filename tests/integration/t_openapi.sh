#!/bin/bash
# t_openapi.sh - api/openapi.yaml: valid OpenAPI 3.1 (Redocly's linter,
# recommended rules, no error and no warning), served byte for byte at
# GET /openapi.yaml, and in step with the daemon both ways:
#   - every route of the daemon's table (routes[] in daemon/http.c) is a
#     path of the document, not marked planned;
#   - every path of the document is served (does not answer 404) and its
#     methods are exactly the daemon's Allow list;
#   - paths marked `x-reduced-planned: true` must match PLANNED below and
#     must still answer 404: once the daemon serves one, this test fails
#     until the marker is removed.  When the KServe routes exist, delete
#     the markers and this exception.
#   - real responses (200s and errors) validate against the documented
#     schemas (ajv, JSON Schema 2020-12).
# Needs Node and npm (installs Debian's nodejs and npm when missing and
# root) and the npm registry the first time: the tools go to a build-local
# node_modules, pinned.
. "$(dirname "$0")/lib.sh"

# The only paths allowed to be documented but not served yet.
PLANNED='^/v2(/|$)'

DOC=$top_srcdir/api/openapi.yaml
TOOL=$here/openapi-tool.cjs
NPM_PKGS="@redocly/cli@1.34.20 js-yaml@4.1.0 ajv@8.17.1"
TOOLS=$top_builddir/tests/openapi-tools

# ---- tools
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "# installing Debian's nodejs and npm"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null 2>&1 ||
      { apt-get update -qq >/dev/null 2>&1 &&
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null 2>&1; }
  fi
fi
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  fail "node and npm available" "install nodejs and npm (Debian packages)"
  finish; exit 1
fi
if [ "$(cat "$TOOLS/.pkgs" 2>/dev/null)" != "$NPM_PKGS" ]; then
  echo "# npm install $NPM_PKGS into $TOOLS"
  rm -rf "$TOOLS" && mkdir -p "$TOOLS" && echo '{"private":true}' >"$TOOLS/package.json"
  # shellcheck disable=SC2086
  if (cd "$TOOLS" && npm install --no-audit --no-fund --loglevel=error $NPM_PKGS) >"$TMP/npm.log" 2>&1; then
    echo "$NPM_PKGS" >"$TOOLS/.pkgs"
  else
    fail "npm install $NPM_PKGS" "$(tail -5 "$TMP/npm.log")"
    finish; exit 1
  fi
fi
export NODE_PATH=$TOOLS/node_modules

# ---- the document is valid
"$TOOLS/node_modules/.bin/redocly" lint --format=stylish "$DOC" >"$TMP/lint.out" 2>&1
lrc=$?
if [ "$lrc" = 0 ] && ! grep -Eiq '(warning|error)' "$TMP/lint.out"; then
  ok "redocly lint: valid OpenAPI, no error, no warning"
else
  fail "redocly lint: valid OpenAPI, no error, no warning" "exit $lrc" "$(grep -Ei 'warning|error' "$TMP/lint.out" | head -20)"
fi
check "openapi: 3.1.x" grep -Eq '^openapi: 3\.1\.[0-9]+$' "$DOC"
# The linter must catch a broken document (guards against a linter that
# passes everything): a path parameter that is not declared.
sed 's|^  /v1/ops:$|  /v1/ops/{nope}:|' "$DOC" >"$TMP/broken.yaml"
if ! cmp -s "$DOC" "$TMP/broken.yaml" &&
   ! "$TOOLS/node_modules/.bin/redocly" lint "$TMP/broken.yaml" >/dev/null 2>&1; then
  ok "redocly lint rejects an undeclared path parameter"
else
  fail "redocly lint rejects an undeclared path parameter"
fi

use_daemon

# ---- served as built
http GET /openapi.yaml
check "GET /openapi.yaml -> 200" test "$ST" = 200
check "GET /openapi.yaml is application/yaml" test "$(hdr Content-Type)" = application/yaml
check "GET /openapi.yaml is api/openapi.yaml byte for byte" cmp "$B" "$DOC"
http HEAD /openapi.yaml
check "HEAD /openapi.yaml -> 200" test "$ST" = 200

# ---- routes, both ways
if ! node "$TOOL" paths "$DOC" >"$TMP/paths" 2>"$TMP/paths.err" || [ ! -s "$TMP/paths" ]; then
  fail "read the document's paths" "$(head -5 "$TMP/paths.err")"
  finish; exit 1
fi
sed -n 's/^ *{ *"\(\/[^"]*\)", *RT_[A-Z_]*,.*/\1/p' "$top_srcdir/daemon/http.c" >"$TMP/routes"
check "daemon/http.c route table read (at least 6 routes)" test "$(wc -l <"$TMP/routes")" -ge 6

while read -r route; do
  line=$(awk -F'\t' -v p="$route" '$1 == p' "$TMP/paths")
  if [ -z "$line" ]; then fail "daemon route $route is in the document"
  elif [ "$(printf '%s' "$line" | cut -f2)" != served ]; then fail "daemon route $route is in the document" "it is marked x-reduced-planned"
  else ok "daemon route $route is in the document"; fi
done <"$TMP/routes"

# A path template with example values, so that it can be requested.
concrete() { printf '%s' "$1" | sed -e 's/{model}/reduce_l2/g' -e 's/{version}/18/g' -e 's/{[^}]*}/x/g'; }

while IFS=$'\t' read -r path kind methods; do
  url=$(concrete "$path")
  first=${methods%%,*}
  http "$first" "$url"
  if [ "$kind" = planned ]; then
    if ! printf '%s\n' "$path" | grep -Eq "$PLANNED"; then
      fail "planned path $path is allowed to be unserved" "only paths matching $PLANNED may be x-reduced-planned"
    elif [ "$ST" = 404 ]; then
      ok "planned path $path: not served yet ($first -> 404)"
    else
      fail "planned path $path: not served yet" "$first $url -> $ST: it is served now; remove x-reduced-planned from api/openapi.yaml"
    fi
    continue
  fi
  if [ "$ST" = 404 ] || [ "$ST" = "${ST#[0-9]}" ]; then
    fail "documented path $path is served" "$first $url -> $ST"
    continue
  fi
  ok "documented path $path is served ($first -> $ST)"
  grep -qxF -- "$path" "$TMP/routes" || fail "documented path $path is in the daemon's route table"
  # A method no path has: 405, and Allow must list what the document lists.
  http PATCH "$url"
  allow=$(hdr Allow | tr -d ' ' | tr ',' '\n' | sort | paste -sd, -)
  if [ "$ST" = 405 ] && [ "$allow" = "$methods" ]; then ok "$path: methods $methods = Allow"
  else fail "$path: methods $methods = Allow" "PATCH -> $ST, Allow '$allow'"; fi
done <"$TMP/paths"

# ---- real bodies against the documented schemas
# body_ok NAME PATH METHOD STATUS: the last response has STATUS and its body
# matches the document's schema for (PATH, METHOD, STATUS, its media type).
body_ok() {
  local name=$1 path=$2 method=$3 status=$4 ct why
  ct=$(hdr Content-Type); ct=${ct%%;*}
  if [ "$ST" != "$status" ]; then fail "$name" "status $ST, expected $status: $(body_excerpt)"; return; fi
  if why=$(node "$TOOL" body "$DOC" "$path" "$method" "$status" "$ct" "$B" 2>&1); then ok "$name"
  else fail "$name" "$why" "body: $(body_excerpt)"; fi
}
http GET /v1/ops;  body_ok "GET /v1/ops 200 matches schema Ops" /v1/ops GET 200
http GET /healthz; body_ok "GET /healthz 200 matches schema Health" /healthz GET 200
http GET /readyz;  body_ok "GET /readyz 200 matches schema Ready" /readyz GET 200
post '{"op":"ReduceL2","axes":[2],"keepdims":0,"input":{"dtype":"float32","shape":[3,2,2],"data":[1,2,3,4,5,6,7,8,9,10,11,12]}}'
body_ok "POST /v1/reduce 200 matches schema ReduceResponse" /v1/reduce POST 200
post '{"op":"ReduceSumSquare","input":{"dtype":"uint64","shape":[1],"data":["18446744073709551615"]}}'
body_ok "POST /v1/reduce uint64 422 matches schema Error" /v1/reduce POST 422
post '{"op":"ReduceSumSquare","overflow":"wrap","opset":13,"input":{"dtype":"float16","data":[["NaN",1],[2,3]]}}'
body_ok "POST /v1/reduce NaN 200 matches schema ReduceResponse" /v1/reduce POST 200
post '{"op":"ReduceL2","axes":[3],"input":{"dtype":"float32","shape":[1],"data":[1]}}'
body_ok "POST /v1/reduce 400 matches schema Error" /v1/reduce POST 400
http POST /v1/reduce -H 'Content-Type: text/plain' --data-binary x
body_ok "POST /v1/reduce 415 matches schema Error" /v1/reduce POST 415
http GET /v1/reduce
body_ok "GET /v1/reduce 405 matches schema Error" /v1/reduce POST 405
http POST /v1/reduce -H 'Content-Type: application/json' -H "Content-Length: 999999999999" --data-binary x
body_ok "POST /v1/reduce 413 matches schema Error" /v1/reduce POST 413
# The schema checks must be able to fail: a body with an extra member.
printf '{"status":"ok","extra":1}' >"$B"
if node "$TOOL" body "$DOC" /healthz GET 200 application/json "$B" >/dev/null 2>&1; then
  fail "schema check rejects {\"status\":\"ok\",\"extra\":1} for /healthz"
else ok "schema check rejects {\"status\":\"ok\",\"extra\":1} for /healthz"; fi

finish
