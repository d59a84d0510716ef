#!/bin/bash
# t_pages.sh - the static pages, over HTTP and in a real browser.
#   curl: /, /playground.js, /playground.css, /docs and its files answer
#     200 with their Content-Type, Content-Security-Policy, Cache-Control,
#     ETag (304 on If-None-Match) and nosniff; gzip when accepted; the
#     pages need no API key; /openapi.yaml names a relative server.
#   browser (pages.cjs: Debian's chromium driven by npm playwright-core):
#     a reduction filled in and run on /, compared with the API's answer; a
#     dropped .npy file; errors shown with their code; "Try it out" on
#     /v1/reduce in /docs; the key prompt with --api-key-file; no request
#     leaving 127.0.0.1.  The curl commands the page shows are run here.
# Screenshots: $top_builddir/tests/screenshots/playground.png and docs.png.
# Needs chromium (Debian) and playwright-core (npm, pinned) from
# scripts/bootstrap.sh; installs nothing.
. "$(dirname "$0")/lib.sh"

PW_PKGS="playwright-core@1.65.1"   # scripts/bootstrap.sh's npm_tools line
if [ -n "${REDUCED_BROWSER_TOOLS:-}" ]; then TOOLS=$REDUCED_BROWSER_TOOLS
elif [ ! -d "$top_builddir/tests/browser-tools" ] && [ -d "$top_srcdir/tests/browser-tools" ]; then
  TOOLS=$top_srcdir/tests/browser-tools
else TOOLS=$top_builddir/tests/browser-tools; fi
SHOTS=$top_builddir/tests/screenshots
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}

need_own_daemon "t_pages" || { finish; exit $?; }
start_daemon || { fail "daemon starts"; finish; exit 1; }
U=$URL

# ---- over HTTP
http GET /
check "GET / is 200" test "$ST" = 200
check "GET / is text/html" test "$(hdr Content-Type)" = "text/html; charset=utf-8"
check "GET / has CSP default-src 'self'" grep -q "^default-src 'self'" <<<"$(hdr Content-Security-Policy)"
check "GET / has Cache-Control no-cache" test "$(hdr Cache-Control)" = "no-cache"
check "GET / has X-Content-Type-Options nosniff" test "$(hdr X-Content-Type-Options)" = nosniff
check "GET / is web/index.html byte for byte" cmp -s "$B" "$top_srcdir/web/index.html"
etag=$(hdr ETag)
check "GET / has a quoted ETag" grep -Eq '^"[0-9a-f]{16}"$' <<<"$etag"
http GET / -H "If-None-Match: $etag"
check "If-None-Match with the ETag: 304, no body" test "$ST:$(wc -c <"$B")" = "304:0"
http GET / -H "If-None-Match: \"0000000000000000\", W/$etag"
check "If-None-Match with a list holding the weak tag: 304" test "$ST" = 304
http GET / -H 'If-None-Match: "0000000000000000"'
check "If-None-Match with another tag: 200" test "$ST" = 200
http HEAD /
check "HEAD / is 200" test "$ST" = 200
http POST / -d x
check "POST / is 405 with Allow: GET, HEAD" test "$ST:$(hdr Allow)" = "405:GET, HEAD"
for f in playground.js:text/javascript playground.css:text/css; do
  http GET "/${f%%:*}"
  check "GET /${f%%:*}: 200 ${f#*:}, as in web/" \
    test "$ST:$(hdr Content-Type):$(cmp -s "$B" "$top_srcdir/web/${f%%:*}" && echo same)" = "200:${f#*:}; charset=utf-8:same"
done
http GET /playground.js -H 'Accept-Encoding: gzip'
check "gzip when accepted: Content-Encoding gzip, Vary" \
  test "$(hdr Content-Encoding):$(hdr Vary)" = "gzip:Accept-Encoding"
check "the gzip body decodes to the file" cmp -s <(gzip -dc "$B") "$top_srcdir/web/playground.js"
http GET /nope.js
check "an unknown page is 404 NOT_FOUND" test "$ST:$(jget error.code)" = "404:NOT_FOUND"

docs=0
http GET /docs
if [ "$ST" = 200 ]; then
  docs=1
  check "GET /docs is text/html with the CSP" \
    test "$(hdr Content-Type):$(hdr Content-Security-Policy | cut -c1-18)" = "text/html; charset=utf-8:default-src 'self'"
  check "/docs loads its initializer from a file, no inline script" \
    bash -c "grep -q '<script src=\"/docs/init.js\"></script>' '$B' && ! grep -Eq '<script>|<script [^s]|<style' '$B'"
  for f in swagger-ui-bundle.js swagger-ui.css LICENSE NOTICE swagger-ui-bundle.js.LICENSE.txt; do
    http GET "/docs/$f"
    check "GET /docs/$f: 200, $(wc -c <"$B") bytes" test "$ST" = 200 -a "$(wc -c <"$B")" -gt 40
  done
  http GET /docs/LICENSE
  check "/docs/LICENSE is Swagger UI's Apache-2.0 licence" grep -q "Apache License" "$B"
  http GET /docs/init.js
  check "/docs/init.js turns the validator off" grep -q "validatorUrl: null" "$B"
else
  check "without the docs UI, /docs is 404 naming --disable-docs-ui" \
    bash -c "test '$ST' = 404 && grep -q -- '--disable-docs-ui' '$B'"
fi
http GET /openapi.yaml
check "/openapi.yaml names a relative server (url: /)" \
  bash -c "awk '/^servers:/{s=1;next} s&&/^  - url:/{print \$3; exit}' '$B' | grep -qx /"

# ---- the browser
KEYS=$TMP/keys
echo "pages-test-key-0123456789" >"$KEYS"
start_daemon --api-key-file "$KEYS" || fail "a daemon with --api-key-file starts"
KU=$URL
URL=$U
for p in / /playground.js /playground.css; do
  code=$(curl -s -o /dev/null -w '%{http_code}' "$KU$p")
  check "with --api-key-file, $p needs no key ($code)" test "$code" = 200
done
code=$(curl -s -o /dev/null -w '%{http_code}' "$KU/v1/ops")
check "with --api-key-file, /v1/ops still needs a key ($code)" test "$code" = 401

/usr/bin/python3 -c 'import numpy as np, sys; np.save(sys.argv[1], np.array([[3, 4], [6, 8]], dtype=np.float64))' "$TMP/tensor.npy" ||
  fail "numpy writes the test .npy file"

need_tool node "Debian packages" || { finish; exit 1; }
if [ ! -x "$CHROMIUM" ]; then
  fail "chromium at $CHROMIUM" "missing: run scripts/bootstrap.sh (step: Debian packages: chromium)"
  finish; exit 1
fi
if [ "$(cat "$TOOLS/.pkgs" 2>/dev/null)" != "$PW_PKGS" ] || [ ! -d "$TOOLS/node_modules/playwright-core" ]; then
  fail "npm $PW_PKGS in $TOOLS" "missing: run scripts/bootstrap.sh (step: npm tools)"
  finish; exit 1
fi
mkdir -p "$SHOTS" "$TMP/out"
rm -f "$SHOTS/playground.png" "$SHOTS/docs.png"
URL=$U KEY_URL=$KU KEY=$(cat "$KEYS") NPY=$TMP/tensor.npy SHOTS=$SHOTS OUT=$TMP/out DOCS=$docs \
  CHROMIUM=$CHROMIUM NODE_PATH=$TOOLS/node_modules \
  timeout 300 node "$here/pages.cjs" >"$TMP/pages.out" 2>"$TMP/pages.err"
prc=$?
while IFS= read -r line; do
  case $line in
    "ok - "*) ok "browser: ${line#ok - }" ;;
    "not ok - "*) fail "browser: ${line#not ok - }" ;;
  esac
done <"$TMP/pages.out"
check "the browser test exits 0 (exit $prc)" test "$prc" = 0
[ "$prc" = 0 ] || sed 's/^/# /' "$TMP/pages.err" | tail -20
check "screenshot $SHOTS/playground.png" test -s "$SHOTS/playground.png"
[ "$docs" = 1 ] && check "screenshot $SHOTS/docs.png" test -s "$SHOTS/docs.png"

# The curl commands the page showed, run as a user would paste them.
if [ -s "$TMP/out/curl-json.sh" ]; then
  out=$(bash "$TMP/out/curl-json.sh")
  check "the page's JSON curl command answers [14, 77]" \
    test "$(printf '%s' "$out" | "$JTOOL" get /dev/stdin output.data 2>/dev/null)" = "[14,77]"
else
  fail "the page showed a JSON curl command"
fi
if [ -s "$TMP/out/curl-npy.sh" ]; then
  out=$(cd "$TMP" && bash "$TMP/out/curl-npy.sh")
  check "the page's .npy curl command answers [[5],[10]]" \
    test "$(printf '%s' "$out" | "$JTOOL" get /dev/stdin output.data 2>/dev/null)" = "[5,10]"
else
  fail "the page showed a .npy curl command"
fi

finish
