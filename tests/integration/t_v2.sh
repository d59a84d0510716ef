#!/bin/bash
# t_v2.sh - the Open Inference Protocol (KServe v2 REST) routes and Triton's
# binary tensor data extension, against the real daemon: every route, JSON
# and binary inputs of every datatype, binary outputs, id echo, parameters,
# errors in the protocol's {"error": "..."} form, streamed binary inputs,
# and requests built the way tritonclient.http builds them, with the
# response blobs compared byte for byte.  Expected values are worked out by
# hand (IEEE bit patterns written out below) or by perl's pack.
. "$(dirname "$0")/lib.sh"
use_daemon

TGEN=${TGEN:-$top_builddir/tests/integration/tgen}

# v2 PATH JSON [CURL ARGS]: POST a JSON body (as curl -d would, no
# Content-Type of ours).
v2() {
  local p=$1 body=$2; shift 2
  printf '%s' "$body" >"$TMP/req"
  http POST "$p" --data-binary @"$TMP/req" "$@"
}

# expect_v2 NAME STATUS EXPECTED_JSON: the last response.
expect_v2() {
  local why
  if [ "$ST" != "$2" ]; then fail "$1" "status $ST, expected $2" "body: $(body_excerpt)"
  elif why=$("$JTOOL" eq "$B" "$3" 2>&1); then ok "$1"
  else fail "$1" "expected: $3" "got: $(body_excerpt)" "$why"; fi
}

# expect_v2_error NAME STATUS CODE [SUBSTRING]: {"error":"CODE: ..."} only.
expect_v2_error() {
  local name=$1 status=$2 code=$3 sub=${4:-} why= msg
  msg=$(jget error)
  if [ "$ST" != "$status" ]; then why="status $ST, expected $status"
  elif [ "$("$JTOOL" keys "$B" . 2>/dev/null)" != error ]; then why="body is not {\"error\":...}"
  elif [ "$("$JTOOL" type "$B" error 2>/dev/null)" != string ]; then why="error is not a string"
  elif [ "${msg#"$code: "}" = "$msg" ]; then why="error does not start with '$code: '"
  elif [ -n "$sub" ] && [ "${msg#*"$sub"}" = "$msg" ]; then why="error lacks '$sub'"
  elif [ "$(hdr Content-Type)" != application/json ]; then why="Content-Type '$(hdr Content-Type)'"
  elif [ "$status" = 503 ] && [ -z "$(hdr Retry-After)" ]; then why="503 without Retry-After"
  fi
  if [ -z "$why" ]; then ok "$name"; else fail "$name" "$why" "body: $(body_excerpt)"; fi
}

# hexbytes "00 3c ..." -> those bytes on stdout.
hexbytes() { local x; for x in $1; do printf "\\x$x"; done; }

# binreq FILE HEADER HEX: the body tritonclient.http sends: the JSON
# header, then the blobs (given as hex bytes) appended.
binreq() { { printf '%s' "$2"; hexbytes "$3"; } >"$1"; }

# post_bin PATH HEADER HEX [CURL ARGS]: POSTs that body with
# Inference-Header-Content-Length and no Content-Type (as tritonclient).
post_bin() {
  local p=$1 h=$2 x=$3; shift 3
  binreq "$TMP/req" "$h" "$x"
  http POST "$p" -H 'Content-Type:' -H "Inference-Header-Content-Length: ${#h}" \
    --data-binary @"$TMP/req" "$@"
}

# split_response: the last body into $TMP/rjson (Inference-Header-Content-
# Length bytes) and the hex of the rest into RBLOB.
split_response() {
  local l
  l=$(hdr Inference-Header-Content-Length)
  RJL=$l
  head -c "${l:-0}" "$B" >"$TMP/rjson"
  RBLOB=$(tail -c +$((${l:-0} + 1)) "$B" | od -An -v -tx1 | tr -s ' \n' '  ' | sed 's/^ //; s/ $//')
}

# expect_bin NAME EXPECTED_HEADER_JSON EXPECTED_HEX: 200, octet-stream,
# the JSON part equal to EXPECTED_HEADER_JSON, the blob equal byte for byte.
expect_bin() {
  local why
  split_response
  if [ "$ST" != 200 ]; then why="status $ST: $(body_excerpt)"
  elif [ "$(hdr Content-Type)" != application/octet-stream ]; then why="Content-Type '$(hdr Content-Type)'"
  elif [ -z "$RJL" ]; then why="no Inference-Header-Content-Length"
  elif ! why=$("$JTOOL" eq "$TMP/rjson" "$2" 2>&1); then why="header: $why; got $(cat "$TMP/rjson")"
  elif [ "$RBLOB" != "$3" ]; then why="blob: got '$RBLOB', expected '$3'"
  else why=; fi
  if [ -z "$why" ]; then ok "$1"; else fail "$1" "$why"; fi
}

M=/v2/models
IN12='{"name":"data","shape":[3,2,2],"datatype":"FP32","data":[1,2,3,4,5,6,7,8,9,10,11,12]}'

# ================================================================ routes
http GET /v2
expect_v2 "GET /v2: server metadata" 200 "{\"name\":\"reduced\",\"version\":\"$("$REDUCED_BIN" --version 2>/dev/null | awk '{print $NF}')\",\"extensions\":[\"binary_tensor_data\"]}"
check "GET /v2: extensions include binary_tensor_data" grep -q '"binary_tensor_data"' "$B"
http GET /v2/health/live
expect_v2 "GET /v2/health/live" 200 '{"live":true}'
http GET /v2/health/ready
expect_v2 "GET /v2/health/ready" 200 '{"ready":true}'
http HEAD /v2/health/ready
check "HEAD /v2/health/ready: 200" test "$ST" = 200
for m in ReduceL2 ReduceSumSquare; do
  http GET $M/$m/ready
  expect_v2 "GET $M/$m/ready" 200 "{\"name\":\"$m\",\"ready\":true}"
  http GET $M/$m/versions/13/ready
  expect_v2 "GET $M/$m/versions/13/ready" 200 "{\"name\":\"$m\",\"ready\":true}"
done
ALL='["FP32","FP64","FP16","BF16","INT32","INT64","UINT32","UINT64"]'
NOBF='["FP32","FP64","FP16","INT32","INT64","UINT32","UINT64"]'
VERS='["1","11","13","18"]'
http GET $M/ReduceL2
expect_v2 "GET $M/ReduceL2: metadata of version 18 (data, optional axes, reduced)" 200 \
  "{\"name\":\"ReduceL2\",\"versions\":$VERS,\"platform\":\"onnx_reduce\",\"inputs\":[{\"name\":\"data\",\"datatype\":\"FP32\",\"shape\":[-1],\"datatypes\":$ALL},{\"name\":\"axes\",\"datatype\":\"INT64\",\"shape\":[-1],\"datatypes\":[\"INT64\"],\"optional\":true}],\"outputs\":[{\"name\":\"reduced\",\"datatype\":\"FP32\",\"shape\":[-1],\"datatypes\":$ALL}]}"
http GET $M/ReduceSumSquare/versions/1
expect_v2 "GET $M/ReduceSumSquare/versions/1: no axes input, no BF16" 200 \
  "{\"name\":\"ReduceSumSquare\",\"versions\":$VERS,\"platform\":\"onnx_reduce\",\"inputs\":[{\"name\":\"data\",\"datatype\":\"FP32\",\"shape\":[-1],\"datatypes\":$NOBF}],\"outputs\":[{\"name\":\"reduced\",\"datatype\":\"FP32\",\"shape\":[-1],\"datatypes\":$NOBF}]}"
http GET $M/ReduceL2/versions/13
check "GET .../versions/13: BF16 allowed, no axes input" eval 'grep -q BF16 "$B" && ! grep -q "\"axes\"" "$B"'

http GET $M/ReduceFoo
expect_v2_error "unknown model: 404" 404 NOT_FOUND 'unknown model "ReduceFoo"'
http GET $M/reducel2/ready
expect_v2_error "model names are case-sensitive: 404" 404 NOT_FOUND
http GET $M/ReduceL2/versions/12
expect_v2_error "unknown version 12: 404" 404 NOT_FOUND "no version 12"
v2 $M/ReduceL2/versions/17/infer '{}'
expect_v2_error "infer at unknown version 17: 404" 404 NOT_FOUND
http GET $M/ReduceL2/versions/x
expect_v2_error "version x: 400" 400 INVALID_FIELD '"x"'
http GET $M/ReduceL2/versions/013/ready
expect_v2_error "version 013 (leading zero): 400" 400 INVALID_FIELD
http GET /v2/repository/index
expect_v2_error "unknown /v2 path: 404" 404 NOT_FOUND
http GET /v2/
expect_v2_error "/v2/ (trailing slash): 404" 404 NOT_FOUND
http GET $M/ReduceL2/infer
expect_v2_error "GET .../infer: 405" 405 METHOD_NOT_ALLOWED
check "405 on infer has Allow: POST" test "$(hdr Allow)" = POST
http POST /v2/health/live --data-binary x
expect_v2_error "POST /v2/health/live: 405" 405 METHOD_NOT_ALLOWED
check "405 on live has Allow: GET, HEAD" test "$(hdr Allow)" = "GET, HEAD"
http DELETE $M/ReduceL2
expect_v2_error "DELETE model metadata: 405" 405 METHOD_NOT_ALLOWED

# ================================================================ JSON infer
# The README's /v1 example through /v2, axes as the version-18 input.
v2 $M/ReduceL2/infer '{"id":"req-1","inputs":['"$IN12"',{"name":"axes","shape":[1],"datatype":"INT64","data":[2]}],"parameters":{"keepdims":0}}'
expect_v2 "ReduceL2, axes input, keepdims 0, id echoed" 200 \
  '{"model_name":"ReduceL2","model_version":"18","id":"req-1","outputs":[{"name":"reduced","datatype":"FP32","shape":[3,2],"data":[2.236068,5,7.81025,10.630146,13.453624,16.27882]}]}'
check "JSON response: Content-Type application/json, no Inference-Header-Content-Length" \
  eval '[ "$(hdr Content-Type)" = application/json ] && [ -z "$(hdr Inference-Header-Content-Length)" ]'
v2 $M/ReduceL2/versions/18/infer '{"inputs":['"$IN12"']}'
expect_v2 "no axes: all reduced, keepdims 1, no id when none sent" 200 \
  '{"model_name":"ReduceL2","model_version":"18","outputs":[{"name":"reduced","datatype":"FP32","shape":[1,1,1],"data":[25.495098]}]}'
v2 $M/ReduceSumSquare/versions/13/infer '{"inputs":[{"name":"data","shape":[3,2,2],"datatype":"INT32","data":[[[1,2],[3,4]],[[5,6],[7,8]],[[9,10],[11,12]]]}],"parameters":{"axes":[1]}}'
expect_v2 "version 13: nested data, parameters.axes" 200 \
  '{"model_name":"ReduceSumSquare","model_version":"13","outputs":[{"name":"reduced","datatype":"INT32","shape":[3,1,2],"data":[10,20,74,100,202,244]}]}'
for v in 1 11; do
  v2 $M/ReduceSumSquare/versions/$v/infer '{"inputs":[{"name":"data","shape":[2,2],"datatype":"FP64","data":[1,2,3,4]}],"parameters":{"axes":[-1],"keepdims":false}}'
  expect_v2 "version $v: parameters.axes [-1], keepdims false" 200 \
    '{"model_name":"ReduceSumSquare","model_version":"'$v'","outputs":[{"name":"reduced","datatype":"FP64","shape":[2],"data":[5,25]}]}'
done
v2 $M/ReduceSumSquare/infer '{"inputs":[{"name":"data","shape":[2],"datatype":"FP32","data":[3,-4]},{"name":"axes","shape":[0],"datatype":"INT64","data":[]}],"parameters":{"noop_with_empty_axes":true}}'
expect_v2 "noop_with_empty_axes with empty axes: elementwise squares" 200 \
  '{"model_name":"ReduceSumSquare","model_version":"18","outputs":[{"name":"reduced","datatype":"FP32","shape":[2],"data":[9,16]}]}'
# Every datatype as JSON: data [1,2,3,4] -> sum of squares 30, L2 of [3,4] = 5.
for dt in FP32 FP64 FP16 BF16 INT32 INT64 UINT32 UINT64; do
  v2 $M/ReduceSumSquare/infer '{"inputs":[{"name":"data","shape":[4],"datatype":"'$dt'","data":[1,2,3,4]}],"parameters":{"keepdims":0}}'
  expect_v2 "JSON $dt: ReduceSumSquare" 200 '{"model_name":"ReduceSumSquare","model_version":"18","outputs":[{"name":"reduced","datatype":"'$dt'","shape":[],"data":[30]}]}'
  v2 $M/ReduceL2/infer '{"inputs":[{"name":"data","shape":[1,2],"datatype":"'$dt'","data":[[3,4]]}]}'
  expect_v2 "JSON $dt: ReduceL2" 200 '{"model_name":"ReduceL2","model_version":"18","outputs":[{"name":"reduced","datatype":"'$dt'","shape":[1,1],"data":[5]}]}'
done
v2 $M/ReduceSumSquare/infer '{"inputs":[{"name":"data","shape":[2],"datatype":"INT32","data":[50000,3]}],"parameters":{"overflow":"saturate","keepdims":0}}'
expect_v2 "parameters.overflow saturate" 200 '{"model_name":"ReduceSumSquare","model_version":"18","outputs":[{"name":"reduced","datatype":"INT32","shape":[],"data":[2147483647]}]}'
v2 $M/ReduceL2/infer '{"inputs":['"$IN12"'],"outputs":[{"name":"reduced","parameters":{"binary_data":false}}],"parameters":{"binary_data_output":true}}'
check "per-output binary_data false beats binary_data_output true" test "$(hdr Content-Type)" = application/json

# ================================================================ binary
# (hex: little-endian IEEE / two's complement bit patterns, written out)
declare -A D4 O30 O5
D4[FP32]="00 00 80 3f 00 00 00 40 00 00 40 40 00 00 80 40"
D4[FP64]="00 00 00 00 00 00 f0 3f 00 00 00 00 00 00 00 40 00 00 00 00 00 00 08 40 00 00 00 00 00 00 10 40"
D4[FP16]="00 3c 00 40 00 42 00 44"
D4[BF16]="80 3f 00 40 40 40 80 40"
D4[INT32]="01 00 00 00 02 00 00 00 03 00 00 00 04 00 00 00"
D4[UINT32]=${D4[INT32]}
D4[INT64]="01 00 00 00 00 00 00 00 02 00 00 00 00 00 00 00 03 00 00 00 00 00 00 00 04 00 00 00 00 00 00 00"
D4[UINT64]=${D4[INT64]}
O30[FP32]="00 00 f0 41"; O30[FP64]="00 00 00 00 00 00 3e 40"; O30[FP16]="80 4f"; O30[BF16]="f0 41"
O30[INT32]="1e 00 00 00"; O30[UINT32]=${O30[INT32]}
O30[INT64]="1e 00 00 00 00 00 00 00"; O30[UINT64]=${O30[INT64]}
# ReduceL2 over axis 1 of [[1,2],[3,4]]: sqrt(5), 5.  sqrt(5) rounded:
# FP32 0x400f1bbd, FP64 0x4001e3779b97f4a8, FP16 0x4079, BF16 0x400f;
# integers: floor(sqrt(5)) = 2 (exact integer square root).
O5[FP32]="bd 1b 0f 40 00 00 a0 40"; O5[FP64]="a8 f4 97 9b 77 e3 01 40 00 00 00 00 00 00 14 40"
O5[FP16]="79 40 00 45"; O5[BF16]="0f 40 a0 40"
O5[INT32]="02 00 00 00 05 00 00 00"; O5[UINT32]=${O5[INT32]}
O5[INT64]="02 00 00 00 00 00 00 00 05 00 00 00 00 00 00 00"; O5[UINT64]=${O5[INT64]}
esize() { case $1 in FP16|BF16) echo 2;; FP32|INT32|UINT32) echo 4;; *) echo 8;; esac; }
for dt in FP32 FP64 FP16 BF16 INT32 INT64 UINT32 UINT64; do
  n=$((4 * $(esize $dt)))
  # tritonclient.http: json.dumps (", " and ": " separators), input keys
  # name, shape, datatype, parameters; requested output with binary_data.
  h='{"inputs": [{"name": "data", "shape": [4], "datatype": "'$dt'", "parameters": {"binary_data_size": '$n'}}], "outputs": [{"name": "reduced", "parameters": {"binary_data": true}}], "parameters": {"keepdims": 0}}'
  post_bin $M/ReduceSumSquare/infer "$h" "${D4[$dt]}"
  expect_bin "binary $dt in and out: ReduceSumSquare = 30" \
    '{"model_name":"ReduceSumSquare","model_version":"18","outputs":[{"name":"reduced","datatype":"'$dt'","shape":[],"parameters":{"binary_data_size":'$(esize $dt)'}}]}' "${O30[$dt]}"
  h='{"id": "b-'$dt'", "inputs": [{"name": "data", "shape": [2, 2], "datatype": "'$dt'", "parameters": {"binary_data_size": '$n'}}, {"name": "axes", "shape": [1], "datatype": "INT64", "parameters": {"binary_data_size": 8}}], "parameters": {"binary_data_output": true, "keepdims": false}}'
  post_bin $M/ReduceL2/infer "$h" "${D4[$dt]} 01 00 00 00 00 00 00 00"
  expect_bin "binary $dt with an axes blob after it, binary_data_output: ReduceL2" \
    '{"model_name":"ReduceL2","model_version":"18","id":"b-'$dt'","outputs":[{"name":"reduced","datatype":"'$dt'","shape":[2],"parameters":{"binary_data_size":'$((2 * $(esize $dt)))'}}]}' "${O5[$dt]}"
done
# Binary input, JSON output (FP16 output as JSON numbers).
h='{"inputs":[{"name":"data","shape":[2,2],"datatype":"FP16","parameters":{"binary_data_size":8}}],"parameters":{"axes":[0]}}'
post_bin $M/ReduceSumSquare/versions/11/infer "$h" "${D4[FP16]}"
expect_v2 "binary FP16 in, JSON out (version 11, parameters.axes)" 200 \
  '{"model_name":"ReduceSumSquare","model_version":"11","outputs":[{"name":"reduced","datatype":"FP16","shape":[1,2],"data":[10,20]}]}'
# Axes blob first, then data.
h='{"inputs":[{"name":"axes","shape":[1],"datatype":"INT64","parameters":{"binary_data_size":8}},{"name":"data","shape":[2,2],"datatype":"INT32","parameters":{"binary_data_size":16}}]}'
post_bin $M/ReduceSumSquare/infer "$h" "ff ff ff ff ff ff ff ff ${D4[INT32]}"
expect_v2 "axes blob (-1) before the data blob" 200 \
  '{"model_name":"ReduceSumSquare","model_version":"18","outputs":[{"name":"reduced","datatype":"INT32","shape":[2,1],"data":[5,25]}]}'
# JSON data with a binary axes input.
h='{"inputs":[{"name":"data","shape":[2,2],"datatype":"INT64","data":[1,2,3,4]},{"name":"axes","shape":[1],"datatype":"INT64","parameters":{"binary_data_size":8}}],"parameters":{"keepdims":0}}'
post_bin $M/ReduceSumSquare/infer "$h" "00 00 00 00 00 00 00 00"
expect_v2 "JSON data, binary axes" 200 \
  '{"model_name":"ReduceSumSquare","model_version":"18","outputs":[{"name":"reduced","datatype":"INT64","shape":[2],"data":[10,20]}]}'
# Also with Content-Type application/octet-stream.
h='{"inputs":[{"name":"data","shape":[2],"datatype":"FP32","parameters":{"binary_data_size":8}}],"outputs":[{"name":"reduced","parameters":{"binary_data":true}}]}'
binreq "$TMP/req" "$h" "00 00 40 40 00 00 80 40"
http POST $M/ReduceL2/infer -H 'Content-Type: application/octet-stream' -H "Inference-Header-Content-Length: ${#h}" --data-binary @"$TMP/req"
expect_bin "Content-Type application/octet-stream accepted" \
  '{"model_name":"ReduceL2","model_version":"18","outputs":[{"name":"reduced","datatype":"FP32","shape":[1],"parameters":{"binary_data_size":4}}]}' \
  "00 00 a0 40"

# ================================================================ errors
v2 $M/ReduceL2/infer '{"inputs":['"$IN12"',{"name":"axes","shape":[1],"datatype":"INT64","data":[3]}]}'
expect_v2_error "axis 3 on rank 3: 400, named as in /v1" 400 AXIS_OUT_OF_RANGE "AXIS_OUT_OF_RANGE: axis 3 is out of range [-3, 2]"
v2 $M/ReduceL2/infer '{"inputs":['"$IN12"',{"name":"axes","shape":[2],"datatype":"INT64","data":[1,-2]}]}'
expect_v2_error "duplicate axis: 400" 400 DUPLICATE_AXIS
v2 $M/ReduceSumSquare/infer '{"inputs":[{"name":"data","shape":[2],"datatype":"INT32","data":[50000,3]}],"parameters":{"keepdims":0}}'
expect_v2_error "integer overflow: 422" 422 INTEGER_OVERFLOW "2500000009"
v2 $M/ReduceL2/infer '{"inputs":['
expect_v2_error "malformed JSON: 400" 400 BAD_JSON
v2 $M/ReduceL2/infer ''
expect_v2_error "empty body: 400" 400 BAD_JSON
v2 $M/ReduceL2/infer '{"inputs":['"$IN12"'],"foo":1}'
expect_v2_error "unknown field: 400" 400 UNKNOWN_FIELD '"foo"'
v2 $M/ReduceL2/infer '{"inputs":['"$IN12"'],"parameters":{"priority":1}}'
expect_v2_error "unknown parameter: 400" 400 UNKNOWN_FIELD '"priority"'
v2 $M/ReduceL2/infer '{"inputs":['"$IN12"'],"outputs":[{"name":"OUTPUT0"}]}'
expect_v2_error "unknown output: 400" 400 UNKNOWN_FIELD '"OUTPUT0"'
v2 $M/ReduceL2/infer '{"inputs":[{"name":"INPUT0","shape":[1],"datatype":"FP32","data":[1]}]}'
expect_v2_error "unknown input: 400" 400 UNKNOWN_FIELD '"INPUT0"'
v2 $M/ReduceL2/versions/13/infer '{"inputs":['"$IN12"',{"name":"axes","shape":[1],"datatype":"INT64","data":[0]}]}'
expect_v2_error "axes input below version 18: 400" 400 UNKNOWN_FIELD "version 18"
v2 $M/ReduceL2/infer '{"inputs":['"$IN12"'],"parameters":{"axes":[0]}}'
expect_v2_error "parameters.axes at version 18: 400" 400 INVALID_FIELD
v2 $M/ReduceL2/versions/11/infer '{"inputs":[{"name":"data","shape":[1],"datatype":"BF16","data":[1]}]}'
expect_v2_error "BF16 at version 11: 400" 400 DTYPE_NOT_IN_VERSION
v2 $M/ReduceL2/versions/13/infer '{"inputs":['"$IN12"'],"parameters":{"noop_with_empty_axes":1}}'
expect_v2_error "noop_with_empty_axes at version 13: 400" 400 NOOP_NOT_IN_VERSION
v2 $M/ReduceL2/infer '{"inputs":[{"name":"data","shape":[2],"datatype":"STRING","data":[true,false]}]}'
expect_v2_error "STRING: 400" 400 UNSUPPORTED_DTYPE
v2 $M/ReduceL2/infer '{"inputs":[{"name":"data","shape":[3],"datatype":"FP32","data":[1,2]}]}'
expect_v2_error "data shorter than shape: 400" 400 SHAPE_MISMATCH
v2 $M/ReduceL2/infer '{"inputs":[{"name":"data","shape":[1],"datatype":"UINT32","data":[-1]}]}'
expect_v2_error "-1 as UINT32: 400" 400 INVALID_ELEMENT
v2 $M/ReduceL2/infer '{"inputs":['"$IN12"'],"parameters":{"keepdims":2}}'
expect_v2_error "keepdims 2: 400" 400 INVALID_KEEPDIMS
h='{"inputs":[{"name":"data","shape":[2],"datatype":"FP32","parameters":{"binary_data_size":8}}]}'
v2 $M/ReduceL2/infer "$h"
expect_v2_error "binary_data_size without Inference-Header-Content-Length: 400" 400 INVALID_FIELD "Inference-Header-Content-Length"
post_bin $M/ReduceL2/infer "$h" "00 00 80 3f"
expect_v2_error "blob shorter than binary_data_size: 400" 400 INPUT_LENGTH
post_bin $M/ReduceL2/infer "$h" "00 00 80 3f 00 00 80 3f 00"
expect_v2_error "bytes after the last blob: 400" 400 INPUT_LENGTH
h='{"inputs":[{"name":"data","shape":[2],"datatype":"FP32","parameters":{"binary_data_size":4}}]}'
post_bin $M/ReduceL2/infer "$h" "00 00 80 3f"
expect_v2_error "binary_data_size disagrees with the shape: 400" 400 INPUT_LENGTH "need 8 bytes"
binreq "$TMP/req" "$h" "00 00 80 3f"
http POST $M/ReduceL2/infer -H "Inference-Header-Content-Length: 999" --data-binary @"$TMP/req"
expect_v2_error "Inference-Header-Content-Length beyond the body: 400" 400 INVALID_FIELD
http POST $M/ReduceL2/infer -H "Inference-Header-Content-Length: 12x" --data-binary @"$TMP/req"
expect_v2_error "Inference-Header-Content-Length not a number: 400" 400 INVALID_FIELD
http POST $M/ReduceL2/infer -H "Inference-Header-Content-Length: 0" --data-binary @"$TMP/req"
expect_v2_error "Inference-Header-Content-Length 0 (raw request): 400" 400 INVALID_FIELD
v2 $M/ReduceL2/infer '{"inputs":['"$IN12"']}' -H 'Content-Encoding: br'
expect_v2_error "Content-Encoding br: 415" 415 UNSUPPORTED_MEDIA_TYPE

if need_own_daemon "413 and streaming"; then
  start_daemon --max-body 4096 || fail "daemon with --max-body 4096 starts"
  head -c 5000 /dev/zero >"$TMP/big"
  http POST $M/ReduceL2/infer --data-binary @"$TMP/big"
  expect_v2_error "body above --max-body: 413" 413 BODY_TOO_LARGE
  stop_daemon

  # Everything binary streams (--buffer-max 0): 1,000,000 elements k % 17.
  # Sum of squares: 58823 full cycles of 0..16 (1496 each) and 0..8 (204).
  start_daemon --buffer-max 0 || fail "daemon with --buffer-max 0 starts"
  N=1000000 q=$((1000000 / 17)) r=$((1000000 % 17)) want=0
  for ((i = 0; i < r; i++)); do want=$((want + i * i)); done
  want=$((q * 1496 + want))
  h='{"inputs":[{"name":"data","shape":[1000,1000],"datatype":"INT64","parameters":{"binary_data_size":8000000}}],"parameters":{"keepdims":0}}'
  { printf '%s' "$h"; "$TGEN" int64 $N mod17; } >"$TMP/req"
  http POST $M/ReduceSumSquare/infer -H 'Content-Type:' -H "Inference-Header-Content-Length: ${#h}" --data-binary @"$TMP/req"
  expect_v2 "streamed INT64 blob: exact sum of squares $want" 200 \
    '{"model_name":"ReduceSumSquare","model_version":"18","outputs":[{"name":"reduced","datatype":"INT64","shape":[],"data":['$want']}]}'
  h='{"inputs":[{"name":"axes","shape":[2],"datatype":"INT64","parameters":{"binary_data_size":16}},{"name":"data","shape":[1000,1000],"datatype":"FP32","parameters":{"binary_data_size":4000000}}],"outputs":[{"name":"reduced","parameters":{"binary_data":true}}],"parameters":{"keepdims":0}}'
  { printf '%s' "$h"; hexbytes "00 00 00 00 00 00 00 00 01 00 00 00 00 00 00 00"; "$TGEN" float32 $N mod17; } >"$TMP/req"
  http POST $M/ReduceSumSquare/infer -H "Inference-Header-Content-Length: ${#h}" --data-binary @"$TMP/req"
  expect_bin "streamed FP32 blob after an axes blob, binary output (float32 of $want)" \
    '{"model_name":"ReduceSumSquare","model_version":"18","outputs":[{"name":"reduced","datatype":"FP32","shape":[],"parameters":{"binary_data_size":4}}]}' \
    "$(perl -e 'print join(" ", unpack("(H2)*", pack("f<", $ARGV[0])))' "$want")"
  # A short blob is an error, not a hang (Content-Length says it).
  h='{"inputs":[{"name":"data","shape":[4],"datatype":"FP16","parameters":{"binary_data_size":8}}]}'
  post_bin $M/ReduceL2/infer "$h" "00 3c 00 3c"
  expect_v2_error "streamed: short blob: 400" 400 INPUT_LENGTH
  post_bin $M/ReduceL2/infer '{"inputs":[{"name":"data","shape":[4],"datatype":"FP16","parameters":{"binary_data_size":8}}],"outputs":[{"name":"reduced","parameters":{"binary_data":true}}]}' "${D4[FP16]}"
  expect_bin "streamed FP16: ReduceL2 of 1,2,3,4 = sqrt(30) (FP16 0x457a)" \
    '{"model_name":"ReduceL2","model_version":"18","outputs":[{"name":"reduced","datatype":"FP16","shape":[1],"parameters":{"binary_data_size":2}}]}' "7a 45"
  stop_daemon
fi
finish
