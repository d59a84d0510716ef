#!/bin/bash
# t_compress.sh - Content-Encoding of request bodies and Accept-Encoding of
# answers (api/encoding.c, daemon/zbody.c).
#   every body format (/v1 JSON, raw, .npy; /v2 JSON and binary) x gzip,
#   deflate (zlib) and raw deflate: the answer byte for byte the one of the
#   same body sent plain (and the known value); chunked too; a raw tensor
#   above --buffer-max (the streaming path);
#   decompression bombs: 413 BODY_TOO_LARGE (JSON, raw, .npy, /v2);
#   truncated and corrupt streams, data after a deflate stream, an empty
#   compressed body: 400 BAD_ENCODING; unknown codings: 415 naming them;
#   answers of 1 KiB or more gzipped when accepted (q-values), with Vary,
#   decoded by curl --compressed to the plain bytes; /metrics too; small
#   answers and q=0 are not.
# The compressed bodies are made by Python's zlib and gzip modules.
. "$(dirname "$0")/lib.sh"

need_own_daemon "t_compress" || { finish; exit $?; }
MAXB=262144
start_daemon --max-body $MAXB --buffer-max 4096 || { fail "daemon starts"; finish; exit 1; }
PY=/usr/bin/python3

# zip CODING IN OUT: gzip, deflate (zlib wrapper) or rawdeflate.
zip() {
  "$PY" - "$@" <<'EOF'
import gzip, sys, zlib
coding, src, dst = sys.argv[1:4]
d = open(src, "rb").read()
if coding == "gzip":
    out = gzip.compress(d, 6)
elif coding == "deflate":
    out = zlib.compress(d, 6)
else:
    c = zlib.compressobj(6, zlib.DEFLATED, -15)
    out = c.compress(d) + c.flush()
open(dst, "wb").write(out)
EOF
}

# send PATH FILE CODING [CURL ARGS]: POSTs FILE compressed with CODING
# (header name: rawdeflate is sent as "deflate"), or plain for "plain".
send() {
  local p=$1 f=$2 c=$3; shift 3
  if [ "$c" = plain ]; then
    http POST "$p" --data-binary @"$f" "$@"
  else
    zip "$c" "$f" "$TMP/z"
    http POST "$p" -H "Content-Encoding: ${c#raw}" --data-binary @"$TMP/z" "$@"
  fi
}

# same_as_plain NAME PATH FILE WANT [CURL ARGS]: every coding answers 200
# with the bytes of the plain request; the plain answer's JSON `output.data`
# (or, for binary answers, the given hex) is WANT.
same_as_plain() {
  local name=$1 p=$2 f=$3 want=$4 c; shift 4
  send "$p" "$f" plain "$@"
  cp "$B" "$TMP/plain.out"
  if [ "$ST" != 200 ]; then fail "$name: plain request" "status $ST: $(body_excerpt)"; return; fi
  check "$name: plain answer is $want" test "$(jget output.data)" = "$want"
  for c in gzip deflate rawdeflate; do
    send "$p" "$f" "$c" "$@"
    if [ "$ST" = 200 ] && cmp -s "$B" "$TMP/plain.out"; then ok "$name: $c = plain"
    else fail "$name: $c = plain" "status $ST: $(body_excerpt)"; fi
  done
  send "$p" "$f" gzip -H 'Transfer-Encoding: chunked' "$@"
  if [ "$ST" = 200 ] && cmp -s "$B" "$TMP/plain.out"; then ok "$name: gzip, chunked = plain"
  else fail "$name: gzip, chunked = plain" "status $ST: $(body_excerpt)"; fi
}

JSON=-HContent-Type:application/json
OCT=-HContent-Type:application/octet-stream
NPYT=-HContent-Type:application/x-npy

# ---- every format
printf '%s' '{"op":"ReduceL2","axes":[1],"keepdims":0,"input":{"dtype":"float32","data":[[3,4],[6,8]]}}' >"$TMP/j1"
same_as_plain "/v1 JSON" /v1/reduce "$TMP/j1" "[5,10]" "$JSON"

"$PY" -c 'import numpy as np, sys; open(sys.argv[1],"wb").write(np.array([[3,4],[6,8]],dtype="<f8").tobytes()); np.save(sys.argv[2], np.array([[1,2],[2,4]],dtype=np.int32))' "$TMP/raw" "$TMP/t.npy"
same_as_plain "/v1 raw" "/v1/reduce?op=ReduceL2&axes=1&keepdims=0&dtype=float64&shape=2,2" "$TMP/raw" "[5,10]" "$OCT" -H 'Accept: application/json'
same_as_plain "/v1 .npy" "/v1/reduce?op=ReduceSumSquare&axes=0&keepdims=0" "$TMP/t.npy" "[5,20]" "$NPYT" -H 'Accept: application/json'

printf '%s' '{"inputs":[{"name":"data","shape":[2,2],"datatype":"FP32","data":[3,4,6,8]}],"parameters":{"axes":[1],"keepdims":0}}' >"$TMP/v2j"
send /v2/models/ReduceL2/versions/13/infer "$TMP/v2j" plain "$JSON"
want=$("$JTOOL" get "$B" outputs.0.data 2>/dev/null)
check "/v2 JSON: plain answer is [5,10]" test "$want" = "[5,10]"
cp "$B" "$TMP/plain.out"
for c in gzip deflate rawdeflate; do
  send /v2/models/ReduceL2/versions/13/infer "$TMP/v2j" "$c" "$JSON"
  if [ "$ST" = 200 ] && cmp -s "$B" "$TMP/plain.out"; then ok "/v2 JSON: $c = plain"
  else fail "/v2 JSON: $c = plain" "status $ST: $(body_excerpt)"; fi
done

# /v2 binary: JSON header, then the FP32 blob 3 4 6 8.
h='{"inputs":[{"name":"data","shape":[2,2],"datatype":"FP32","parameters":{"binary_data_size":16}}],"parameters":{"axes":[1],"keepdims":0}}'
{ printf '%s' "$h"; "$PY" -c 'import sys,struct; sys.stdout.buffer.write(struct.pack("<4f",3,4,6,8))'; } >"$TMP/v2b"
send /v2/models/ReduceL2/versions/13/infer "$TMP/v2b" plain -H 'Content-Type:' -H "Inference-Header-Content-Length: ${#h}"
cp "$B" "$TMP/plain.out"
check "/v2 binary: plain answer is [5,10]" test "$(jget outputs.0.data)" = "[5,10]"
for c in gzip deflate rawdeflate; do
  send /v2/models/ReduceL2/versions/13/infer "$TMP/v2b" "$c" -H 'Content-Type:' -H "Inference-Header-Content-Length: ${#h}"
  if [ "$ST" = 200 ] && cmp -s "$B" "$TMP/plain.out"; then ok "/v2 binary: $c = plain"
  else fail "/v2 binary: $c = plain" "status $ST: $(body_excerpt)"; fi
done

# ---- the streaming path: 200 KB of float64 (above --buffer-max 4096),
# all ones: ReduceSumSquare over everything = 25000.
"$PY" -c 'import numpy as np, sys; open(sys.argv[1],"wb").write(np.ones(25000,dtype="<f8").tobytes())' "$TMP/big"
same_as_plain "/v1 raw, streamed (200 KB > --buffer-max)" "/v1/reduce?op=ReduceSumSquare&keepdims=0&dtype=float64&shape=25000" "$TMP/big" "[25000]" "$OCT" -H 'Accept: application/json'
"$PY" -c 'import numpy as np, sys; np.save(sys.argv[1], np.full((100,250), 2, dtype=np.float32))' "$TMP/big.npy"
same_as_plain "/v1 .npy, streamed" "/v1/reduce?op=ReduceSumSquare&keepdims=0" "$TMP/big.npy" "[100000.0]" "$NPYT" -H 'Accept: application/json'

# ---- bombs: 64 MiB that compresses to ~64 KiB, against --max-body 256 KiB
head -c $((64 << 20)) /dev/zero >"$TMP/zeros"
zip gzip "$TMP/zeros" "$TMP/bomb.gz"
zip deflate "$TMP/zeros" "$TMP/bomb.zz"
check "the bomb is smaller than --max-body ($(wc -c <"$TMP/bomb.gz") bytes)" test "$(wc -c <"$TMP/bomb.gz")" -lt $MAXB
for c in gz:gzip zz:deflate; do
  http POST /v1/reduce "$JSON" -H "Content-Encoding: ${c#*:}" --data-binary @"$TMP/bomb.${c%%:*}"
  expect_error_body "/v1 JSON ${c#*:} bomb: 413" 413 BODY_TOO_LARGE
  check "/v1 JSON ${c#*:} bomb: the message names --max-body" grep -q "decodes to more than --max-body ($MAXB bytes)" "$B"
done
http POST "/v1/reduce?op=ReduceL2&dtype=float64&shape=8388608" "$OCT" -H 'Content-Encoding: gzip' --data-binary @"$TMP/bomb.gz"
expect_error_body "/v1 raw gzip bomb (a plan of 64 MiB): 413" 413 'BODY_TOO_LARGE|TENSOR_TOO_LARGE'
http POST "/v1/reduce?op=ReduceL2&dtype=float64&shape=30000" "$OCT" -H 'Content-Encoding: gzip' --data-binary @"$TMP/bomb.gz"
# (the decoded bytes pass the plan's 240000 before --max-body: the length
# error, and nothing decoded after it)
expect_error_body "/v1 raw gzip bomb (a plan of 240 KB): 400 INPUT_LENGTH" 400 INPUT_LENGTH
http POST /v2/models/ReduceL2/versions/13/infer "$JSON" -H 'Content-Encoding: gzip' --data-binary @"$TMP/bomb.gz"
check "/v2 JSON gzip bomb: 413" test "$ST" = 413
http POST /v1/reduce "$JSON" -H 'Content-Encoding: gzip' -H 'Transfer-Encoding: chunked' --data-binary @"$TMP/bomb.gz"
expect_error_body "/v1 JSON gzip bomb, chunked: 413" 413 BODY_TOO_LARGE
healthy && ok "the daemon is well after the bombs" || fail "the daemon is well after the bombs"
rss=$(awk '/^VmHWM/ {print $2}' "/proc/$DPID/status" 2>/dev/null)
check "peak RSS after the bombs below 64 MiB (${rss:-?} kB)" test "${rss:-0}" -lt 65536

# ---- truncated, corrupt, trailing data, empty
zip gzip "$TMP/j1" "$TMP/j1.gz"
n=$(wc -c <"$TMP/j1.gz")
for cut in 1 10 $((n / 2)) $((n - 4)) $((n - 1)); do
  head -c "$cut" "$TMP/j1.gz" >"$TMP/cut"
  http POST /v1/reduce "$JSON" -H 'Content-Encoding: gzip' --data-binary @"$TMP/cut"
  expect_error_body "gzip cut to $cut of $n bytes: 400 BAD_ENCODING" 400 BAD_ENCODING
done
check "the truncation message says so" grep -q 'truncated' "$B"
printf '%s' "not gzip at all" >"$TMP/bad"
http POST /v1/reduce "$JSON" -H 'Content-Encoding: gzip' --data-binary @"$TMP/bad"
expect_error_body "plain text sent as gzip: 400 BAD_ENCODING" 400 BAD_ENCODING
check "... naming the header check" grep -q 'incorrect header check' "$B"
"$PY" -c 'import sys; d=bytearray(open(sys.argv[1],"rb").read()); d[-6]^=0xff; open(sys.argv[2],"wb").write(d)' "$TMP/j1.gz" "$TMP/crc"
http POST /v1/reduce "$JSON" -H 'Content-Encoding: gzip' --data-binary @"$TMP/crc"
expect_error_body "a gzip body with a bad CRC: 400 BAD_ENCODING" 400 BAD_ENCODING
zip deflate "$TMP/j1" "$TMP/j1.zz"
{ cat "$TMP/j1.zz"; printf 'junk'; } >"$TMP/trail"
http POST /v1/reduce "$JSON" -H 'Content-Encoding: deflate' --data-binary @"$TMP/trail"
expect_error_body "data after a deflate stream: 400 BAD_ENCODING" 400 BAD_ENCODING
: >"$TMP/empty"
http POST /v1/reduce "$JSON" -H 'Content-Encoding: gzip' --data-binary @"$TMP/empty"
expect_error_body "an empty gzip body: 400 BAD_ENCODING" 400 BAD_ENCODING
head -c 30 "$TMP/v2b" >"$TMP/v2cut"; zip gzip "$TMP/v2b" "$TMP/v2b.gz"; head -c 40 "$TMP/v2b.gz" >"$TMP/v2cut.gz"
http POST /v2/models/ReduceL2/versions/13/infer -H 'Content-Type:' -H "Inference-Header-Content-Length: ${#h}" -H 'Content-Encoding: gzip' --data-binary @"$TMP/v2cut.gz"
check "/v2 binary, truncated gzip: 400 naming BAD_ENCODING" bash -c "test '$ST' = 400 && grep -q BAD_ENCODING '$B'"
zip gzip "$TMP/big" "$TMP/big.gz"
head -c $(($(wc -c <"$TMP/big.gz") - 20)) "$TMP/big.gz" >"$TMP/bigcut.gz"
http POST "/v1/reduce?op=ReduceSumSquare&dtype=float64&shape=25000" "$OCT" -H 'Content-Encoding: gzip' --data-binary @"$TMP/bigcut.gz"
check "streamed raw, truncated gzip: 400 (BAD_ENCODING or INPUT_LENGTH)" \
  bash -c "test '$ST' = 400 && grep -Eq 'BAD_ENCODING|INPUT_LENGTH' '$B'"

# ---- unknown codings
for c in br zstd compress "gzip, gzip" "identity, gzip"; do
  http POST /v1/reduce "$JSON" -H "Content-Encoding: $c" --data-binary @"$TMP/j1"
  expect_error_body "/v1 Content-Encoding '$c': 415" 415 UNSUPPORTED_MEDIA_TYPE
  check "... naming '$c'" grep -qF "'$c'" "$B"
done
http POST /v2/models/ReduceL2/versions/13/infer "$JSON" -H 'Content-Encoding: br' --data-binary @"$TMP/v2j"
check "/v2 Content-Encoding br: 415 naming it" bash -c "test '$ST' = 415 && grep -q \"'br'\" '$B'"
http POST /v1/reduce "$JSON" -H 'Content-Encoding: identity' --data-binary @"$TMP/j1"
check "Content-Encoding identity: as plain" test "$ST:$(jget output.data)" = "200:[5,10]"

# ---- compressed answers
# An answer of 1000 float32 values (about 9 KB of JSON): ReduceSumSquare
# of a [1000, 2] tensor of ones over axis 1 = 1000 twos.
"$PY" -c 'import json; print(json.dumps({"op":"ReduceSumSquare","axes":[1],"keepdims":0,"input":{"dtype":"float32","shape":[1000,2],"data":[1]*2000}}))' >"$TMP/j2"
http POST /v1/reduce "$JSON" --data-binary @"$TMP/j2"
cp "$B" "$TMP/plain.out"
check "the plain large answer is 1000 twos" \
  bash -c "'$JTOOL' get '$B' output.data | tr -d '[]' | tr ',' '\n' | sort -u | tr -d '\n' | grep -qx 2"
check "an answer has Vary: Accept-Encoding" test "$(hdr Vary)" = Accept-Encoding
check "without Accept-Encoding: not compressed" test -z "$(hdr Content-Encoding)"
for ae in "gzip" "gzip, deflate, br" "br;q=1, gzip;q=0.5" "*"; do
  http POST /v1/reduce "$JSON" --data-binary @"$TMP/j2" -H "Accept-Encoding: $ae"
  check "Accept-Encoding '$ae': gzip, smaller ($(wc -c <"$B") of $(wc -c <"$TMP/plain.out"))" \
    test "$(hdr Content-Encoding):$(hdr Vary)" = "gzip:Accept-Encoding" -a "$(wc -c <"$B")" -lt "$(wc -c <"$TMP/plain.out")"
  check "... and gunzips to the plain answer" cmp -s <(gzip -dc "$B") "$TMP/plain.out"
done
for ae in "gzip;q=0" "deflate" "identity" "*;q=0.5, gzip;q=0"; do
  http POST /v1/reduce "$JSON" --data-binary @"$TMP/j2" -H "Accept-Encoding: $ae"
  check "Accept-Encoding '$ae': not compressed" bash -c "test -z '$(hdr Content-Encoding)' && cmp -s '$B' '$TMP/plain.out'"
done
http POST /v1/reduce "$JSON" --data-binary @"$TMP/j2" --compressed
check "curl --compressed decodes the answer to the plain bytes" \
  bash -c "test '$(hdr Content-Encoding)' = gzip && cmp -s '$B' '$TMP/plain.out'"
http POST /v1/reduce "$JSON" --data-binary @"$TMP/j1" -H 'Accept-Encoding: gzip'
check "an answer under 1 KiB is not compressed" test -z "$(hdr Content-Encoding)" -a "$(jget output.data)" = "[5,10]"
http GET /metrics
cp "$B" "$TMP/metrics.plain"
http GET /metrics --compressed
check "/metrics is gzipped for curl --compressed" test "$(hdr Content-Encoding):$(hdr Vary)" = "gzip:Accept-Encoding"
check "... and decodes to Prometheus text" grep -q '^# TYPE ' "$B"
http GET /openapi.yaml --compressed
check "/openapi.yaml gzipped decodes to the document" \
  bash -c "test '$(hdr Content-Encoding)' = gzip && cmp -s '$B' '$top_srcdir/api/openapi.yaml'"
# The compressed request and the compressed answer together.
zip gzip "$TMP/j2" "$TMP/j2.gz"
http POST /v1/reduce "$JSON" -H 'Content-Encoding: gzip' --data-binary @"$TMP/j2.gz" --compressed
check "gzip in, gzip out: the plain answer" cmp -s "$B" "$TMP/plain.out"

finish
