#!/bin/bash
# t_openapi.sh - api/openapi.yaml: valid OpenAPI 3.1 (Redocly's linter,
# recommended rules, no error and no warning), served byte for byte at
# GET /openapi.yaml, and in step with the daemon both ways:
#   - every route of the daemon's table (routes[] in daemon/http.c: paths,
#     and the /v2 path templates) is a path of the document;
#   - every path of the document is in that table, is served (a request
#     with example values for its parameters does not answer 404) and its
#     methods are exactly the daemon's Allow list;
#   - no path is marked `x-reduced-planned` (documented but not served);
#   - real responses of /v1, /v2 and the service routes (200s and errors,
#     JSON and the JSON part of binary /v2 answers) validate against the
#     documented schemas (ajv, JSON Schema 2020-12).
# Needs Node (Debian's nodejs) and the pinned npm tools that
# scripts/bootstrap.sh (step: npm tools) installs into the build tree
# (tests/openapi-tools; $REDUCED_OPENAPI_TOOLS elsewhere); installs nothing.
. "$(dirname "$0")/lib.sh"

DOC=$top_srcdir/api/openapi.yaml
TOOL=$here/openapi-tool.cjs
# The versions scripts/bootstrap.sh pins (its npm_tools line).
NPM_PKGS="@redocly/cli@1.34.20 js-yaml@4.1.0 ajv@8.17.1"
# (a VPATH build may use the source tree's)
if [ -n "${REDUCED_OPENAPI_TOOLS:-}" ]; then TOOLS=$REDUCED_OPENAPI_TOOLS
elif [ ! -d "$top_builddir/tests/openapi-tools" ] && [ -d "$top_srcdir/tests/openapi-tools" ]; then
  TOOLS=$top_srcdir/tests/openapi-tools
else TOOLS=$top_builddir/tests/openapi-tools; fi

# ---- tools
need_tool node "Debian packages" || { finish; exit 1; }
if [ "$(cat "$TOOLS/.pkgs" 2>/dev/null)" != "$NPM_PKGS" ] || [ ! -x "$TOOLS/node_modules/.bin/redocly" ]; then
  fail "npm tools $NPM_PKGS in $TOOLS" \
    "missing $NPM_PKGS ($TOOLS/.pkgs: '$(cat "$TOOLS/.pkgs" 2>/dev/null)'): run scripts/bootstrap.sh (step: npm tools)"
  finish; exit 1
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
sed -n 's/^ *{ *"\(\/[^"]*\)", *RT_[A-Z0-9_]*,.*/\1/p' "$top_srcdir/daemon/http.c" >"$TMP/routes"
check "daemon/http.c route table read (at least 15 routes)" test "$(wc -l <"$TMP/routes")" -ge 15
check "daemon/http.c route table has the /v2 templates" grep -qxF '/v2/models/{model}/versions/{version}/infer' "$TMP/routes"
check "as many documented paths as daemon routes" test "$(wc -l <"$TMP/paths")" = "$(wc -l <"$TMP/routes")"

while read -r route; do
  line=$(awk -F'\t' -v p="$route" '$1 == p' "$TMP/paths")
  if [ -z "$line" ]; then fail "daemon route $route is in the document"
  elif [ "$(printf '%s' "$line" | cut -f2)" != served ]; then fail "daemon route $route is in the document" "it is marked x-reduced-planned: remove the marker"
  else ok "daemon route $route is in the document"; fi
done <"$TMP/routes"

# A path template with example values, so that it can be requested.
concrete() { printf '%s' "$1" | sed -e 's/{model}/ReduceL2/g' -e 's/{version}/13/g' -e 's/{[^}]*}/x/g'; }

while IFS=$'\t' read -r path kind methods; do
  url=$(concrete "$path")
  first=${methods%%,*}
  http "$first" "$url"
  if [ "$kind" = planned ]; then
    fail "documented path $path is not marked x-reduced-planned" "every documented path must be served"
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

# /v2: every route's 200 and the protocol's error form
V2M=/v2/models/{model} V2MV=/v2/models/{model}/versions/{version}
http GET /v2;               body_ok "GET /v2 200 matches schema V2ServerMetadata" /v2 GET 200
http GET /v2/health/live;   body_ok "GET /v2/health/live 200 matches schema V2Live" /v2/health/live GET 200
http GET /v2/health/ready;  body_ok "GET /v2/health/ready 200 matches schema V2Ready" /v2/health/ready GET 200
http GET /v2/models/ReduceL2
body_ok "GET $V2M 200 matches schema V2ModelMetadata" "$V2M" GET 200
http GET /v2/models/ReduceSumSquare/versions/11
body_ok "GET $V2MV (11) 200 matches schema V2ModelMetadata" "$V2MV" GET 200
http GET /v2/models/ReduceSumSquare/ready
body_ok "GET $V2M/ready 200 matches schema V2ModelReady" "$V2M/ready" GET 200
http GET /v2/models/ReduceL2/versions/13/ready
body_ok "GET $V2MV/ready 200 matches schema V2ModelReady" "$V2MV/ready" GET 200
http GET /v2/models/reduce_l2
body_ok "GET $V2M unknown model 404 matches schema V2Error" "$V2M" GET 404
http GET /v2/models/ReduceL2/versions/013
body_ok "GET $V2MV version 013 400 matches schema V2Error" "$V2MV" GET 400
http GET /v2/models/ReduceL2/versions/12/ready
body_ok "GET $V2MV/ready version 12 404 matches schema V2Error" "$V2MV/ready" GET 404
v2post() { local p=$1 b=$2; shift 2; printf '%s' "$b" >"$TMP/req"; http POST "$p" --data-binary @"$TMP/req" "$@"; }
v2post /v2/models/ReduceL2/infer '{"id":"r1","inputs":[{"name":"data","shape":[3,2,2],"datatype":"FP32","data":[1,2,3,4,5,6,7,8,9,10,11,12]},{"name":"axes","shape":[1],"datatype":"INT64","data":[2]}],"parameters":{"keepdims":0}}'
body_ok "POST $V2M/infer 200 matches schema V2InferenceResponse" "$V2M/infer" POST 200
v2post /v2/models/ReduceSumSquare/versions/11/infer '{"inputs":[{"name":"data","shape":[2,2],"datatype":"UINT64","data":[[1,"18446744073709551615"],[3,4]]}],"parameters":{"axes":[1],"overflow":"wrap"}}'
body_ok "POST $V2MV/infer (11, UINT64) 200 matches schema V2InferenceResponse" "$V2MV/infer" POST 200
# Binary: FP32 [3,4] as a blob, the answer as a blob (5 = 00 00 a0 40)
hdr_json='{"inputs":[{"name":"data","shape":[2],"datatype":"FP32","parameters":{"binary_data_size":8}}],"parameters":{"keepdims":0,"binary_data_output":true}}'
{ printf '%s' "$hdr_json"; printf '\000\000\100\100\000\000\200\100'; } >"$TMP/req"
http POST /v2/models/ReduceL2/infer --data-binary @"$TMP/req" -H "Inference-Header-Content-Length: ${#hdr_json}"
ihcl=$(hdr Inference-Header-Content-Length)
if [ "$ST" = 200 ] && [ "$(hdr Content-Type)" = application/octet-stream ] && [ -n "$ihcl" ] &&
   node "$TOOL" media "$DOC" "$V2M/infer" POST 200 application/octet-stream; then
  ok "POST $V2M/infer binary 200: a documented media type (application/octet-stream)"
else fail "POST $V2M/infer binary 200: a documented media type" "status $ST, Content-Type '$(hdr Content-Type)', Inference-Header-Content-Length '$ihcl'"; fi
head -c "${ihcl:-0}" "$B" >"$TMP/json_part"
if why=$(node "$TOOL" schema "$DOC" V2InferenceResponse "$TMP/json_part" 2>&1); then
  ok "POST $V2M/infer binary 200: its JSON part matches schema V2InferenceResponse"
else fail "POST $V2M/infer binary 200: its JSON part matches schema V2InferenceResponse" "$why"; fi
check "POST $V2M/infer binary 200: the blob after the JSON part is float32 5" \
  test "$(tail -c +$((${ihcl:-0} + 1)) "$B" | od -An -tx1 | tr -d ' \n')" = 0000a040
v2post /v2/models/ReduceL2/infer '{"inputs":[{"name":"data","shape":[1],"datatype":"FP32","data":[1]}],"parameters":{"keepdims":2}}'
body_ok "POST $V2M/infer keepdims 2: 400 matches schema V2Error" "$V2M/infer" POST 400
v2post /v2/models/ReduceL2/infer '{}' -H 'Inference-Header-Content-Length: x'
body_ok "POST $V2M/infer Inference-Header-Content-Length x: 400 matches schema V2Error" "$V2M/infer" POST 400
v2post /v2/models/ReduceSumSquare/infer '{"inputs":[{"name":"data","shape":[1],"datatype":"INT32","data":[50000]}]}'
body_ok "POST $V2M/infer INT32 overflow: 422 matches schema V2Error" "$V2M/infer" POST 422
v2post /v2/models/ReduceL2/infer '{}' -H 'Content-Encoding: br'
body_ok "POST $V2M/infer Content-Encoding br: 415 matches schema V2Error" "$V2M/infer" POST 415
http POST /v2/models/ReduceL2/versions/18/infer -H "Content-Length: 999999999999" --data-binary x
body_ok "POST $V2MV/infer Content-Length 999999999999: 413 matches schema V2Error" "$V2MV/infer" POST 413
http GET /v2/models/ReduceL2/infer
body_ok "GET $V2M/infer 405 matches schema V2Error" "$V2M/infer" POST 405
check "GET $V2M/infer 405: Allow: POST" test "$(hdr Allow)" = POST
http POST /v2/health/live
body_ok "POST /v2/health/live 405 matches schema V2Error" /v2/health/live GET 405

# The schema checks must be able to fail: a body with an extra member.
printf '{"status":"ok","extra":1}' >"$B"
if node "$TOOL" body "$DOC" /healthz GET 200 application/json "$B" >/dev/null 2>&1; then
  fail "schema check rejects {\"status\":\"ok\",\"extra\":1} for /healthz"
else ok "schema check rejects {\"status\":\"ok\",\"extra\":1} for /healthz"; fi
# ...and the /v1 error form where /v2 documents its own.
printf '{"error":{"code":"NOT_FOUND","message":"x"}}' >"$B"
if node "$TOOL" body "$DOC" "$V2M" GET 404 application/json "$B" >/dev/null 2>&1; then
  fail "schema check rejects the /v1 error form for a /v2 404"
else ok "schema check rejects the /v1 error form for a /v2 404"; fi

finish
