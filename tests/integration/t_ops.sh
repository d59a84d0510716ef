#!/bin/bash
# t_ops.sh - the twelve operators end to end against the real daemon: every
# op over /v1 JSON, raw and .npy and over /v2 JSON and binary; opset ->
# version selection; ArgMax/ArgMin (axis, select_last_index, int64
# answers); the new dtypes (int8, uint8, int16, uint16, bool) and their
# version rules; fields an op does not take; UNDEFINED_RESULT; GET /v1/ops
# and /v2 model metadata; the /metrics op label.  Every expected value is
# worked out by hand in the comment next to it.
#
# Needs Debian's python3-numpy (/usr/bin/python3) for the .npy bodies.
. "$(dirname "$0")/lib.sh"

PY=${NUMPY_PYTHON:-/usr/bin/python3}
use_daemon

OCT=application/octet-stream NPY=application/x-npy
msg_has() { jget error.message | grep -qF -- "$1"; }
# reduce NAME REQUEST EXPECTED_OUTPUT [MODE]: 200 and "output" as given.
reduce() {
  local name=$1 req=$2 exp=$3 mode=${4:-} why
  post "$req"
  if [ "$ST" != 200 ]; then
    fail "$name" "request: $req" "expected 200, got $ST: $(body_excerpt)"
    return
  fi
  "$JTOOL" get "$B" output >"$TMP/out.json" 2>/dev/null
  if why=$("$JTOOL" eq "$TMP/out.json" "$exp" $mode 2>&1); then ok "$name"
  else fail "$name" "request: $req" "expected output: $exp" "got: $(body_excerpt)" "$why"; fi
}
# version NAME REQUEST OPSET VERSION: 200 with those opset / op_version.
version() {
  post "$2"
  if [ "$ST" = 200 ] && [ "$(jget opset)" = "$3" ] && [ "$(jget op_version)" = "$4" ]; then ok "$1"
  else fail "$1" "request: $2" "expected opset $3 op_version $4, got $ST: $(body_excerpt)"; fi
}
# error NAME REQUEST STATUS CODE SUBSTRING...: the error, and its message
# holds every SUBSTRING.
error() {
  local name=$1 req=$2 st=$3 code=$4 s miss=
  shift 4
  expect_error "$name" "$req" "$st" "$code"
  for s in "$@"; do msg_has "$s" || miss="$miss '$s'"; done
  if [ -z "$miss" ]; then ok "$name: message names$(printf " '%s'" "$@")"
  else fail "$name: message names$(printf " '%s'" "$@")" "missing:$miss" "got: $(jget error.message)"; fi
}

# X = [[1,-2,3],[4,5,-6]] (float32, shape [2,3]); reductions over axis 1.
X='"input":{"dtype":"float32","shape":[2,3],"data":[1,-2,3,4,5,-6]}'
P='"input":{"dtype":"float32","shape":[2,3],"data":[1,2,3,4,5,6]}'

# ================================================================ /v1 JSON
# ReduceSum: 1-2+3 = 2, 4+5-6 = 3.
reduce "ReduceSum axes [1]" '{"op":"ReduceSum","axes":[1],"keepdims":0,'"$X"'}' \
  '{"dtype":"float32","shape":[2],"data":[2,3]}'
# all axes: 2+3 = 5, keepdims: shape [1,1].
reduce "ReduceSum, no axes: everything" '{"op":"ReduceSum",'"$X"'}' \
  '{"dtype":"float32","shape":[1,1],"data":[5]}'
# 2/3 = 0.6666667 in float32, 3/3 = 1.
reduce "ReduceMean axes [1]" '{"op":"ReduceMean","axes":[1],"keepdims":0,'"$X"'}' \
  '{"dtype":"float32","shape":[2],"data":[0.6666667,1]}' float32
reduce "ReduceMax axes [1]" '{"op":"ReduceMax","axes":[1],"keepdims":0,'"$X"'}' \
  '{"dtype":"float32","shape":[2],"data":[3,5]}'
reduce "ReduceMin axes [1]" '{"op":"ReduceMin","axes":[1],"keepdims":0,'"$X"'}' \
  '{"dtype":"float32","shape":[2],"data":[-2,-6]}'
# 1*-2*3 = -6, 4*5*-6 = -120.
reduce "ReduceProd axes [1]" '{"op":"ReduceProd","axes":[1],"keepdims":0,'"$X"'}' \
  '{"dtype":"float32","shape":[2],"data":[-6,-120]}'
# |1|+|-2|+|3| = 6, 4+5+6 = 15.
reduce "ReduceL1 axes [1]" '{"op":"ReduceL1","axes":[1],"keepdims":0,'"$X"'}' \
  '{"dtype":"float32","shape":[2],"data":[6,15]}'
# sqrt(1+4+9) = sqrt(14) = 3.7416575, sqrt(16+25+36) = sqrt(77) = 8.774964.
reduce "ReduceL2 axes [1]" '{"op":"ReduceL2","axes":[1],"keepdims":0,'"$X"'}' \
  '{"dtype":"float32","shape":[2],"data":[3.7416575,8.774964]}' float32
reduce "ReduceSumSquare axes [1]" '{"op":"ReduceSumSquare","axes":[1],"keepdims":0,'"$X"'}' \
  '{"dtype":"float32","shape":[2],"data":[14,77]}'
# ln(1+2+3) = ln 6 = 1.7917595, ln 15 = 2.7080503.
reduce "ReduceLogSum axes [1]" '{"op":"ReduceLogSum","axes":[1],"keepdims":0,'"$P"'}' \
  '{"dtype":"float32","shape":[2],"data":[1.7917595,2.7080503]}' float32
# ln(3 e^0) = ln 3 = 1.0986122886681098; ln(3 e^1) = 1 + ln 3.
reduce "ReduceLogSumExp axes [1] (float64)" \
  '{"op":"ReduceLogSumExp","axes":[1],"keepdims":0,"input":{"dtype":"float64","shape":[2,3],"data":[0,0,0,1,1,1]}}' \
  '{"dtype":"float64","shape":[2],"data":[1.0986122886681098,2.09861228866811]}' rel=1e-14
# ArgMax axis 1: row 0 max 3 at 2, row 1 max 5 at 1; ArgMin: -2 at 1, -6 at 2.
reduce "ArgMax axis 1: int64 answer" '{"op":"ArgMax","axis":1,"keepdims":0,'"$X"'}' \
  '{"dtype":"int64","shape":[2],"data":[2,1]}'
reduce "ArgMin axis 1, keepdims" '{"op":"ArgMin","axis":1,'"$X"'}' \
  '{"dtype":"int64","shape":[2,1],"data":[1,2]}'
# default axis 0: columns (1,4) (-2,5) (3,-6): max in rows 1, 1, 0.
reduce "ArgMax default axis 0" '{"op":"ArgMax",'"$X"'}' \
  '{"dtype":"int64","shape":[1,3],"data":[1,1,0]}'
reduce "ArgMax axis -1 is axis 1" '{"op":"ArgMax","axis":-1,"keepdims":0,'"$X"'}' \
  '{"dtype":"int64","shape":[2],"data":[2,1]}'
# ties: [1,3,3] and [7,7,2]: first max at 1 and 0, last at 2 and 1.
T='"input":{"dtype":"float32","shape":[2,3],"data":[1,3,3,7,7,2]}'
reduce "ArgMax ties: first index" '{"op":"ArgMax","axis":1,"keepdims":0,'"$T"'}' \
  '{"dtype":"int64","shape":[2],"data":[1,0]}'
reduce "ArgMax select_last_index 1: last index" '{"op":"ArgMax","axis":1,"keepdims":0,"select_last_index":1,'"$T"'}' \
  '{"dtype":"int64","shape":[2],"data":[2,1]}'
# ArgMin ties: [2,1,1] -> first 1, last 2.
reduce "ArgMin select_last_index true" '{"op":"ArgMin","axis":0,"keepdims":0,"select_last_index":true,"input":{"dtype":"float32","data":[2,1,1]}}' \
  '{"dtype":"int64","shape":[],"data":[2]}'

# ---- opset -> version, per operator
version "ReduceSum opset 12 -> version 11" '{"op":"ReduceSum","opset":12,'"$X"'}' 12 11
version "ReduceMax opset 12 -> version 12" '{"op":"ReduceMax","opset":12,'"$X"'}' 12 12
version "ArgMax opset 12 -> version 12" '{"op":"ArgMax","opset":12,'"$X"'}' 12 12
version "ReduceSum opset 20 -> version 13" '{"op":"ReduceSum","opset":20,'"$X"'}' 20 13
version "ReduceMean opset 20 -> version 18" '{"op":"ReduceMean","opset":20,'"$X"'}' 20 18
version "ReduceMax opset 20 -> version 20" '{"op":"ReduceMax","opset":20,'"$X"'}' 20 20
version "ReduceSum, no opset: 18 -> version 13" '{"op":"ReduceSum",'"$X"'}' 18 13
version "ReduceMax, no opset: 18 -> version 18" '{"op":"ReduceMax",'"$X"'}' 18 18
version "ArgMax, no opset: 18 -> version 13" '{"op":"ArgMax",'"$X"'}' 18 13
version "ReduceMin opset 11 -> version 11" '{"op":"ReduceMin","opset":11,'"$X"'}' 11 11
version "ReduceProd opset 1 -> version 1" '{"op":"ReduceProd","opset":1,'"$X"'}' 1 1

# ---- version rules of the attributes
error "ReduceSum opset 12: noop_with_empty_axes is not in version 11" \
  '{"op":"ReduceSum","opset":12,"noop_with_empty_axes":1,'"$X"'}' 400 NOOP_NOT_IN_VERSION
# ReduceSum 13 takes axes as an input: noop_with_empty_axes 1, no axes: the input.
reduce "ReduceSum opset 13: noop_with_empty_axes 1 without axes returns the input" \
  '{"op":"ReduceSum","opset":13,"noop_with_empty_axes":1,'"$X"'}' \
  '{"dtype":"float32","shape":[2,3],"data":[1,-2,3,4,5,-6]}'
error "ReduceMax opset 13: noop_with_empty_axes needs 18" \
  '{"op":"ReduceMax","opset":13,"noop_with_empty_axes":0,'"$X"'}' 400 NOOP_NOT_IN_VERSION
error "ArgMax opset 11: select_last_index needs 12" \
  '{"op":"ArgMax","opset":11,"select_last_index":1,'"$X"'}' 400 SELECT_LAST_INDEX_NOT_IN_VERSION
error "ArgMax select_last_index 2" \
  '{"op":"ArgMax","select_last_index":2,'"$X"'}' 400 INVALID_SELECT_LAST_INDEX
error "ArgMax axis 2 of a rank-2 input" \
  '{"op":"ArgMax","axis":2,'"$X"'}' 400 AXIS_OUT_OF_RANGE
error "ReduceSum refuses axis" '{"op":"ReduceSum","axis":1,'"$X"'}' 400 ATTRIBUTE_NOT_ALLOWED axis ReduceSum
error "ReduceL2 refuses select_last_index" '{"op":"ReduceL2","select_last_index":0,'"$X"'}' 400 ATTRIBUTE_NOT_ALLOWED select_last_index ReduceL2
error "ArgMax refuses axes" '{"op":"ArgMax","axes":[1],'"$X"'}' 400 ATTRIBUTE_NOT_ALLOWED axes ArgMax
error "ArgMin refuses axes even empty" '{"op":"ArgMin","axes":[],'"$X"'}' 400 ATTRIBUTE_NOT_ALLOWED axes ArgMin
error "ArgMin refuses noop_with_empty_axes" '{"op":"ArgMin","noop_with_empty_axes":0,'"$X"'}' 400 ATTRIBUTE_NOT_ALLOWED noop_with_empty_axes

# ================================================================ dtypes
# int8 [[-128,5],[127,-1]]: max per row 5, 127.
reduce "ReduceMax int8 (opset 12)" '{"op":"ReduceMax","opset":12,"axes":[1],"keepdims":0,"input":{"dtype":"int8","shape":[2,2],"data":[-128,5,127,-1]}}' \
  '{"dtype":"int8","shape":[2],"data":[5,127]}'
reduce "ReduceMin uint8" '{"op":"ReduceMin","keepdims":0,"input":{"dtype":"uint8","data":[200,3,255]}}' \
  '{"dtype":"uint8","shape":[],"data":[3]}'
reduce "ArgMax int16" '{"op":"ArgMax","keepdims":0,"input":{"dtype":"int16","data":[-300,300,299]}}' \
  '{"dtype":"int64","shape":[],"data":[1]}'
reduce "ArgMin uint16" '{"op":"ArgMin","keepdims":0,"input":{"dtype":"uint16","data":[65535,0,7]}}' \
  '{"dtype":"int64","shape":[],"data":[1]}'
reduce "ArgMax int8 at version 1" '{"op":"ArgMax","opset":1,"keepdims":0,"input":{"dtype":"int8","data":[-1,-128,-2]}}' \
  '{"dtype":"int64","shape":[],"data":[0]}'
# bool [[true,false],[false,false]]: Max is OR per row, Min is AND.
BOOL='"input":{"dtype":"bool","shape":[2,2],"data":[true,false,false,false]}'
reduce "ReduceMax bool (opset 20): true/false answers" '{"op":"ReduceMax","opset":20,"axes":[1],"keepdims":0,'"$BOOL"'}' \
  '{"dtype":"bool","shape":[2],"data":[true,false]}'
reduce "ReduceMin bool (opset 20)" '{"op":"ReduceMin","opset":20,"axes":[0],"keepdims":0,'"$BOOL"'}' \
  '{"dtype":"bool","shape":[2],"data":[false,false]}'
post '{"op":"ReduceMax","opset":20,"axes":[1],"keepdims":0,'"$BOOL"'}'
check "bool answer is literally [true,false]" grep -q '"data":\[true,false\]' "$B"
error "bool: a number is refused" '{"op":"ReduceMax","opset":20,"input":{"dtype":"bool","data":[true,1]}}' \
  400 INVALID_ELEMENT 'input.data[1]'
error "ReduceMax bool at version 18" '{"op":"ReduceMax","opset":18,'"$BOOL"'}' \
  400 DTYPE_NOT_IN_VERSION ReduceMax 18 bool
error "ReduceMax int8 at version 11" '{"op":"ReduceMax","opset":11,"input":{"dtype":"int8","data":[1]}}' \
  400 DTYPE_NOT_IN_VERSION ReduceMax 11 int8
error "ReduceSum int16" '{"op":"ReduceSum","input":{"dtype":"int16","data":[1]}}' \
  400 DTYPE_NOT_IN_VERSION ReduceSum 13 int16
error "ReduceMean uint8" '{"op":"ReduceMean","input":{"dtype":"uint8","data":[1]}}' \
  400 DTYPE_NOT_IN_VERSION ReduceMean 18 uint8
error "ArgMax bool" '{"op":"ArgMax","input":{"dtype":"bool","data":[true]}}' \
  400 DTYPE_NOT_IN_VERSION ArgMax 13 bool
error "ReduceMax bfloat16 at version 12" '{"op":"ReduceMax","opset":12,"input":{"dtype":"bfloat16","data":[1]}}' \
  400 DTYPE_NOT_IN_VERSION ReduceMax 12 bfloat16
# bfloat16 from 13: max(1, 2.5) = 2.5 (exact in bfloat16).
reduce "ReduceMax bfloat16 at version 13" '{"op":"ReduceMax","opset":13,"keepdims":0,"input":{"dtype":"bfloat16","data":[1,2.5]}}' \
  '{"dtype":"bfloat16","shape":[],"data":[2.5]}'
reduce "ArgMin bfloat16 at version 13" '{"op":"ArgMin","opset":13,"keepdims":0,"input":{"dtype":"bfloat16","data":[1,-2.5]}}' \
  '{"dtype":"int64","shape":[],"data":[1]}'
error "int8 element out of range" '{"op":"ArgMax","input":{"dtype":"int8","data":[0,128]}}' \
  400 INVALID_ELEMENT 'input.data[1]'

# ---- UNDEFINED_RESULT: integer ReduceMean of an empty set
error "int32 ReduceMean of an empty set: 422" \
  '{"op":"ReduceMean","input":{"dtype":"int32","shape":[0],"data":[]}}' 422 UNDEFINED_RESULT ReduceMean
# float ReduceMean of an empty set is NaN (0/0), not an error.
reduce "float32 ReduceMean of an empty set: NaN" \
  '{"op":"ReduceMean","keepdims":0,"input":{"dtype":"float32","shape":[0],"data":[]}}' \
  '{"dtype":"float32","shape":[],"data":["NaN"]}'

# ================================================================ raw
# braw QUERY FILE: POST FILE as raw little-endian elements.
braw() { http POST "/v1/reduce?$1" -H "Content-Type: $OCT" --data-binary @"$2" "${@:3}"; }
# hexfile FILE "hex bytes"
hexfile() { local x; : >"$1"; for x in $2; do printf "\\x$x" >>"$1"; done; }
hexof() { od -An -v -tx1 "$1" | tr -s ' \n' '  ' | sed 's/^ //; s/ $//'; }
# int8 [-128, 5, 127, -1] = 80 05 7f ff; ReduceMax over shape [2,2] axis 1:
# [5, 127] = 05 7f.
hexfile "$TMP/i8.raw" "80 05 7f ff"
braw "op=ReduceMax&opset=12&dtype=int8&shape=2,2&axes=1&keepdims=0" "$TMP/i8.raw" -H "Accept: $OCT"
check "raw int8 ReduceMax -> bytes 05 7f" eval '[ "$ST" = 200 ] && [ "$(hexof "$B")" = "05 7f" ]'
# ArgMax axis=1 of the same bytes: [1, 0] as little-endian int64.
braw "op=ArgMax&dtype=int8&shape=2,2&axis=1&keepdims=0" "$TMP/i8.raw" -H "Accept: $OCT"
check "raw ArgMax axis=1 -> int64 1, 0" eval '[ "$ST" = 200 ] && [ "$(hexof "$B")" = "01 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00" ]'
braw "op=ArgMax&dtype=int8&shape=2,2&axis=1&keepdims=0" "$TMP/i8.raw" -H "Accept: application/json"
check "raw ArgMax, JSON answer: int64 [1,0]" eval '[ "$ST" = 200 ] && [ "$(jget output.dtype)" = int64 ] && [ "$(jget output.data)" = "[1,0]" ]'
# ties [3,3] as float32 (00 00 40 40 twice): select_last_index=1 -> 1.
hexfile "$TMP/tie.raw" "00 00 40 40 00 00 40 40"
braw "op=ArgMin&dtype=float32&shape=2&select_last_index=1&keepdims=0" "$TMP/tie.raw" -H "Accept: application/json"
check "raw ArgMin select_last_index=1 -> [1]" eval '[ "$ST" = 200 ] && [ "$(jget output.data)" = "[1]" ]'
braw "op=ArgMin&dtype=float32&shape=2&select_last_index=1&opset=11" "$TMP/tie.raw"
expect_error_body "raw select_last_index at opset 11" 400 SELECT_LAST_INDEX_NOT_IN_VERSION
# bool bytes 01 00 / 00 00: ReduceMax axis 1 -> 01 00; JSON true,false.
hexfile "$TMP/b.raw" "01 00 00 00"
braw "op=ReduceMax&opset=20&dtype=bool&shape=2,2&axes=1&keepdims=0" "$TMP/b.raw" -H "Accept: $OCT"
check "raw bool ReduceMax -> bytes 01 00" eval '[ "$ST" = 200 ] && [ "$(hexof "$B")" = "01 00" ]'
braw "op=ReduceMax&opset=20&dtype=bool&shape=2,2&axes=1&keepdims=0" "$TMP/b.raw" -H "Accept: application/json"
check "raw bool, JSON answer [true,false]" grep -q '"data":\[true,false\]' "$B"
# a bool byte 02 at flat index 2 is refused, naming the index.
hexfile "$TMP/b2.raw" "01 00 02 00"
braw "op=ReduceMin&opset=20&dtype=bool&shape=4" "$TMP/b2.raw"
expect_error_body "raw bool byte 2 -> 400 INVALID_ELEMENT" 400 INVALID_ELEMENT
check "raw bool byte 2: message names element 2" msg_has 2
braw "op=ReduceSum&dtype=float32&shape=2&axis=0" "$TMP/tie.raw"
expect_error_body "raw: ReduceSum refuses query parameter axis" 400 ATTRIBUTE_NOT_ALLOWED
check "raw: message names axis and ReduceSum" eval 'msg_has axis && msg_has ReduceSum'
braw "axes=0&dtype=float32&shape=2&op=ArgMax" "$TMP/tie.raw"
expect_error_body "raw: ArgMax refuses axes (op given last)" 400 ATTRIBUTE_NOT_ALLOWED
braw "op=ReduceMax&opset=12&dtype=bool&shape=4" "$TMP/b.raw"
expect_error_body "raw: bool at ReduceMax 12" 400 DTYPE_NOT_IN_VERSION

# ================================================================ .npy
if "$PY" -c 'import numpy' 2>/dev/null; then
  "$PY" - "$TMP" <<'EOF'
import sys, numpy as np
d = sys.argv[1]
np.save(d + "/b1.npy", np.array([[True, False], [False, False]]))
np.save(d + "/i1.npy", np.array([[-128, 5], [127, -1]], dtype=np.int8))
np.save(d + "/u1.npy", np.array([200, 3, 255], dtype=np.uint8))
np.save(d + "/i2.npy", np.array([-300, 300, 299], dtype="<i2"))
np.save(d + "/u2.npy", np.array([65535, 0, 7], dtype="<u2"))
np.save(d + "/f4.npy", np.array([[1, -2, 3], [4, 5, -6]], dtype="<f4"))
np.save(d + "/f4F.npy", np.asfortranarray(np.array([[1, -2, 3], [4, 5, -6]], dtype="<f4")))
EOF
  # npycheck FILE 'python expression over a' : np.load the answer.
  npycheck() { "$PY" -c "import numpy as np, sys; a = np.load(sys.argv[1]); sys.exit(0 if ($2) else 1)" "$1"; }
  bnpy() { http POST "/v1/reduce?$1" -H "Content-Type: $NPY" --data-binary @"$2" -H "Accept: $NPY"; }
  bnpy "op=ReduceMax&opset=20&axes=1&keepdims=0" "$TMP/b1.npy"
  check ".npy |b1 ReduceMax -> |b1 [True, False]" npycheck "$B" "a.dtype == np.bool_ and a.tolist() == [True, False]"
  bnpy "op=ReduceMin&opset=20&axes=0&keepdims=0" "$TMP/b1.npy"
  check ".npy |b1 ReduceMin axes 0 -> [False, False]" npycheck "$B" "a.dtype == np.bool_ and a.tolist() == [False, False]"
  bnpy "op=ReduceMax&opset=12&axes=1&keepdims=0" "$TMP/i1.npy"
  check ".npy |i1 ReduceMax -> |i1 [5, 127]" npycheck "$B" "a.dtype == np.int8 and a.tolist() == [5, 127]"
  bnpy "op=ReduceMin&keepdims=0" "$TMP/u1.npy"
  check ".npy |u1 ReduceMin -> |u1 3" npycheck "$B" "a.dtype == np.uint8 and a.tolist() == 3"
  bnpy "op=ArgMax&keepdims=0" "$TMP/i2.npy"
  check ".npy <i2 ArgMax -> <i8 1" npycheck "$B" "a.dtype == np.int64 and a.tolist() == 1"
  bnpy "op=ArgMin&keepdims=0" "$TMP/u2.npy"
  check ".npy <u2 ArgMin -> <i8 1" npycheck "$B" "a.dtype == np.int64 and a.tolist() == 1"
  bnpy "op=ArgMax&axis=1" "$TMP/f4.npy"
  check ".npy ArgMax axis=1 keepdims -> [[2],[1]]" npycheck "$B" "a.dtype == np.int64 and a.tolist() == [[2], [1]]"
  # Fortran order: the same logical array, the same answers.
  bnpy "op=ArgMax&axis=1" "$TMP/f4F.npy"
  check ".npy Fortran order ArgMax axis=1 -> [[2],[1]]" npycheck "$B" "a.dtype == np.int64 and a.tolist() == [[2], [1]]"
  bnpy "op=ArgMin&axis=0&keepdims=0" "$TMP/f4F.npy"
  check ".npy Fortran order ArgMin axis=0 -> [0,0,1]" npycheck "$B" "a.dtype == np.int64 and a.tolist() == [0, 0, 1]"
  bnpy "op=ReduceProd&axes=1&keepdims=0" "$TMP/f4F.npy"
  check ".npy Fortran order ReduceProd -> [-6,-120]" npycheck "$B" "a.tolist() == [-6, -120]"
  for op in ReduceSum ReduceMean ReduceL1 ReduceL2 ReduceSumSquare ReduceLogSumExp; do
    bnpy "op=$op&axes=1&keepdims=0" "$TMP/f4.npy"
    case $op in   # row sums 2, 3; means 2/3, 1; |x| 6, 15; L2 sqrt 14, sqrt 77
      ReduceSum) e="[2, 3]" ;; ReduceMean) e="[2/3, 1]" ;; ReduceL1) e="[6, 15]" ;;
      ReduceL2) e="[14**0.5, 77**0.5]" ;; ReduceSumSquare) e="[14, 77]" ;;
      ReduceLogSumExp) e="[np.log(np.e + np.exp(-2) + np.e**3), np.log(np.e**4 + np.e**5 + np.exp(-6))]" ;;
    esac
    check ".npy float32 $op axes=1" npycheck "$B" "a.dtype == np.float32 and np.allclose(a, $e, rtol=1e-6)"
  done
  http POST "/v1/reduce?op=ReduceSum" -H "Content-Type: $NPY" --data-binary @"$TMP/b1.npy"
  expect_error_body ".npy bool ReduceSum -> DTYPE_NOT_IN_VERSION" 400 DTYPE_NOT_IN_VERSION
else
  fail "python3-numpy is installed ($PY)" "install python3-numpy (scripts/bootstrap.sh)"
fi

# ================================================================ /v2
v2() { printf '%s' "$2" >"$TMP/req"; http POST "$1" --data-binary @"$TMP/req"; }
expect_v2_out() {   # NAME EXPECTED_OUTPUTS_0 : 200 and outputs[0] as given
  local why
  "$JTOOL" get "$B" outputs.0 >"$TMP/o.json" 2>/dev/null
  if [ "$ST" != 200 ]; then fail "$1" "status $ST: $(body_excerpt)"
  elif why=$("$JTOOL" eq "$TMP/o.json" "$2" ${3:-} 2>&1); then ok "$1"
  else fail "$1" "expected: $2" "got: $(body_excerpt)" "$why"; fi
}
v2err() {   # NAME STATUS CODE: {"error":"CODE: ..."}
  local msg; msg=$(jget error)
  if [ "$ST" = "$2" ] && [ "${msg#"$3: "}" != "$msg" ]; then ok "$1"
  else fail "$1" "expected $2 $3, got $ST: $(body_excerpt)"; fi
}
M=/v2/models
D23='{"name":"data","shape":[2,3],"datatype":"FP32","data":[1,-2,3,4,5,-6]}'
AX1='{"name":"axes","shape":[1],"datatype":"INT64","data":[1]}'
# ops with the axes input at their newest version: same row results as /v1.
for op in ReduceSum ReduceMean ReduceMax ReduceMin ReduceProd ReduceL1 ReduceL2 ReduceSumSquare; do
  case $op in
    ReduceSum) e='[2,3]' ;; ReduceMean) e='[0.6666667,1]' ;; ReduceMax) e='[3,5]' ;;
    ReduceMin) e='[-2,-6]' ;; ReduceProd) e='[-6,-120]' ;; ReduceL1) e='[6,15]' ;;
    ReduceL2) e='[3.7416575,8.774964]' ;; ReduceSumSquare) e='[14,77]' ;;
  esac
  v2 $M/$op/infer '{"inputs":['"$D23"','"$AX1"'],"parameters":{"keepdims":0}}'
  expect_v2_out "/v2 $op, axes input" '{"name":"reduced","datatype":"FP32","shape":[2],"data":'"$e"'}' float32
done
v2 $M/ReduceLogSum/infer '{"inputs":[{"name":"data","shape":[2,3],"datatype":"FP32","data":[1,2,3,4,5,6]},'"$AX1"'],"parameters":{"keepdims":0}}'
expect_v2_out "/v2 ReduceLogSum" '{"name":"reduced","datatype":"FP32","shape":[2],"data":[1.7917595,2.7080503]}' float32
v2 $M/ReduceLogSumExp/infer '{"inputs":[{"name":"data","shape":[2,3],"datatype":"FP64","data":[0,0,0,1,1,1]},'"$AX1"'],"parameters":{"keepdims":0}}'
expect_v2_out "/v2 ReduceLogSumExp FP64" '{"name":"reduced","datatype":"FP64","shape":[2],"data":[1.0986122886681098,2.09861228866811]}' rel=1e-14
check "/v2 without a version: ReduceMax answers version 20" eval 'v2 $M/ReduceMax/infer "{\"inputs\":[$D23]}"; [ "$(jget model_version)" = 20 ]'
check "/v2 without a version: ReduceSum answers version 13" eval 'v2 $M/ReduceSum/infer "{\"inputs\":[$D23]}"; [ "$(jget model_version)" = 13 ]'
# parameters.axes below the axes-input version (ReduceSum 11, ReduceMax 13).
v2 $M/ReduceSum/versions/11/infer '{"inputs":['"$D23"'],"parameters":{"axes":[1],"keepdims":0}}'
expect_v2_out "/v2 ReduceSum version 11: parameters.axes" '{"name":"reduced","datatype":"FP32","shape":[2],"data":[2,3]}'
v2 $M/ReduceMax/versions/13/infer '{"inputs":['"$D23"'],"parameters":{"axes":[1],"keepdims":0}}'
expect_v2_out "/v2 ReduceMax version 13: parameters.axes" '{"name":"reduced","datatype":"FP32","shape":[2],"data":[3,5]}'
v2 $M/ReduceMax/versions/13/infer '{"inputs":['"$D23"','"$AX1"']}'
v2err "/v2 ReduceMax version 13: no axes input" 400 UNKNOWN_FIELD
v2 $M/ReduceSum/versions/13/infer '{"inputs":['"$D23"'],"parameters":{"axes":[1]}}'
v2err "/v2 ReduceSum version 13: parameters.axes refused (the input)" 400 INVALID_FIELD
# ArgMax / ArgMin: parameters.axis, select_last_index, INT64 answers.
v2 $M/ArgMax/infer '{"inputs":['"$D23"'],"parameters":{"axis":1,"keepdims":0}}'
expect_v2_out "/v2 ArgMax axis 1 -> INT64 [2,1]" '{"name":"reduced","datatype":"INT64","shape":[2],"data":[2,1]}'
v2 $M/ArgMin/versions/12/infer '{"inputs":[{"name":"data","shape":[3],"datatype":"INT16","data":[4,-1,-1]}],"parameters":{"select_last_index":1,"keepdims":0}}'
expect_v2_out "/v2 ArgMin INT16 select_last_index -> INT64 2" '{"name":"reduced","datatype":"INT64","shape":[],"data":[2]}'
v2 $M/ArgMin/versions/11/infer '{"inputs":['"$D23"'],"parameters":{"select_last_index":1}}'
v2err "/v2 ArgMin version 11: select_last_index" 400 SELECT_LAST_INDEX_NOT_IN_VERSION
v2 $M/ArgMax/infer '{"inputs":['"$D23"'],"parameters":{"axes":[1]}}'
v2err "/v2 ArgMax refuses parameters.axes" 400 ATTRIBUTE_NOT_ALLOWED
v2 $M/ArgMax/infer '{"inputs":['"$D23"','"$AX1"']}'
v2err "/v2 ArgMax refuses an axes input" 400 ATTRIBUTE_NOT_ALLOWED
v2 $M/ReduceMin/infer '{"inputs":['"$D23"'],"parameters":{"axis":1}}'
v2err "/v2 ReduceMin refuses parameters.axis" 400 ATTRIBUTE_NOT_ALLOWED
# BOOL, INT8, UINT8
v2 $M/ReduceMax/infer '{"inputs":[{"name":"data","shape":[2,2],"datatype":"BOOL","data":[true,false,false,false]},'"$AX1"'],"parameters":{"keepdims":0}}'
expect_v2_out "/v2 ReduceMax BOOL -> [true,false]" '{"name":"reduced","datatype":"BOOL","shape":[2],"data":[true,false]}'
v2 $M/ReduceMax/versions/18/infer '{"inputs":[{"name":"data","shape":[1],"datatype":"BOOL","data":[true]}]}'
v2err "/v2 ReduceMax version 18 BOOL" 400 DTYPE_NOT_IN_VERSION
v2 $M/ReduceMin/versions/12/infer '{"inputs":[{"name":"data","shape":[3],"datatype":"UINT8","data":[9,250,4]}],"parameters":{"keepdims":0}}'
expect_v2_out "/v2 ReduceMin version 12 UINT8" '{"name":"reduced","datatype":"UINT8","shape":[],"data":[4]}'
v2 $M/ReduceMean/infer '{"inputs":[{"name":"data","shape":[0],"datatype":"INT64","data":[]}]}'
v2err "/v2 INT64 ReduceMean of an empty set: 422" 422 UNDEFINED_RESULT

# binary: INT8 [-128,5,127,-1] (80 05 7f ff) ArgMax axis 1 -> INT64 [1,0] blob.
h='{"inputs":[{"name":"data","shape":[2,2],"datatype":"INT8","parameters":{"binary_data_size":4}}],"outputs":[{"name":"reduced","parameters":{"binary_data":true}}],"parameters":{"axis":1,"keepdims":0}}'
{ printf '%s' "$h"; printf '\x80\x05\x7f\xff'; } >"$TMP/v2bin"
http POST $M/ArgMax/infer -H 'Content-Type:' -H "Inference-Header-Content-Length: ${#h}" --data-binary @"$TMP/v2bin"
l=$(hdr Inference-Header-Content-Length)
head -c "${l:-0}" "$B" >"$TMP/rj"
tail -c +$((${l:-0} + 1)) "$B" >"$TMP/rb"
check "/v2 binary INT8 ArgMax: INT64 header, 16-byte blob" eval '[ "$ST" = 200 ] && "$JTOOL" eq "$TMP/rj" "{\"model_name\":\"ArgMax\",\"model_version\":\"13\",\"outputs\":[{\"name\":\"reduced\",\"datatype\":\"INT64\",\"shape\":[2],\"parameters\":{\"binary_data_size\":16}}]}"'
check "/v2 binary INT8 ArgMax: blob 1, 0 as int64" eval '[ "$(hexof "$TMP/rb")" = "01 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00" ]'
# binary BOOL with an axes blob: data 01 00 00 00, axes [1]; out 01 00.
h='{"inputs":[{"name":"data","shape":[2,2],"datatype":"BOOL","parameters":{"binary_data_size":4}},{"name":"axes","shape":[1],"datatype":"INT64","parameters":{"binary_data_size":8}}],"outputs":[{"name":"reduced","parameters":{"binary_data":true}}],"parameters":{"keepdims":0}}'
{ printf '%s' "$h"; printf '\x01\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00'; } >"$TMP/v2bin"
http POST $M/ReduceMax/infer -H 'Content-Type:' -H "Inference-Header-Content-Length: ${#h}" --data-binary @"$TMP/v2bin"
l=$(hdr Inference-Header-Content-Length)
tail -c +$((${l:-0} + 1)) "$B" >"$TMP/rb"
check "/v2 binary BOOL ReduceMax -> blob 01 00" eval '[ "$ST" = 200 ] && [ "$(hexof "$TMP/rb")" = "01 00" ]'
h='{"inputs":[{"name":"data","shape":[2],"datatype":"BOOL","parameters":{"binary_data_size":2}}]}'
{ printf '%s' "$h"; printf '\x01\x07'; } >"$TMP/v2bin"
http POST $M/ReduceMin/infer -H 'Content-Type:' -H "Inference-Header-Content-Length: ${#h}" --data-binary @"$TMP/v2bin"
v2err "/v2 binary BOOL byte 7 -> INVALID_ELEMENT" 400 INVALID_ELEMENT

# ---- model metadata
http GET $M/ReduceMax
check "GET $M/ReduceMax: versions 1 11 12 13 18 20" eval '[ "$(jget versions)" = "[\"1\",\"11\",\"12\",\"13\",\"18\",\"20\"]" ]'
check "GET $M/ReduceMax (default 20): BOOL, INT8, UINT8 and the axes input" eval 'd=$(jget inputs.0.datatypes); [ "$d" = "[\"FP32\",\"FP64\",\"FP16\",\"BF16\",\"INT32\",\"INT64\",\"UINT32\",\"UINT64\",\"INT8\",\"UINT8\",\"BOOL\"]" ] && [ "$(jget inputs.1.name)" = axes ]'
http GET $M/ReduceMax/versions/13
check "GET $M/ReduceMax/versions/13: no axes input, no BOOL" eval '[ "$(jget inputs.1)" = "(absent)" ] && ! grep -q BOOL "$B" && grep -q INT8 "$B"'
http GET $M/ReduceSum/versions/13
check "GET $M/ReduceSum/versions/13: the axes input" test "$(jget inputs.1.name)" = axes
http GET $M/ArgMax
check "GET $M/ArgMax: versions 1 11 12 13, output INT64, INT16 input" eval '[ "$(jget versions)" = "[\"1\",\"11\",\"12\",\"13\"]" ] && [ "$(jget outputs.0.datatypes)" = "[\"INT64\"]" ] && [ "$(jget outputs.0.datatype)" = INT64 ] && jget inputs.0.datatypes | grep -q INT16 && [ "$(jget inputs.1)" = "(absent)" ]'
http GET $M/ReduceSum/versions/12
v2err "GET $M/ReduceSum/versions/12: no such version" 404 NOT_FOUND
http GET $M/ReduceFoo
v2err "GET $M/ReduceFoo: unknown model" 404 NOT_FOUND
for op in ReduceSum ReduceMean ReduceMax ReduceMin ReduceProd ReduceL1 ReduceLogSum ReduceLogSumExp ArgMax ArgMin; do
  http GET $M/$op/ready
  check "GET $M/$op/ready" eval '[ "$ST" = 200 ] && [ "$(jget ready)" = true ]'
done

# ================================================================ /v1/ops
http GET /v1/ops
cp "$B" "$TMP/ops.json"
"$PY" - "$TMP/ops.json" >"$TMP/ops.out" 2>&1 <<'EOF'
import json, sys
ops = {o["op"]: o["versions"] for o in json.load(open(sys.argv[1]))["ops"]}
def say(ok, what): print(("PASS " if ok else "FAIL ") + what)
order = ["ReduceL2", "ReduceSumSquare", "ReduceSum", "ReduceMean", "ReduceMax",
         "ReduceMin", "ReduceProd", "ReduceL1", "ReduceLogSum", "ReduceLogSumExp",
         "ArgMax", "ArgMin"]
say(list(ops) == order, "/v1/ops lists the twelve ops in order")
vers = {"ReduceSum": [1, 11, 13], "ReduceMax": [1, 11, 12, 13, 18, 20],
        "ReduceMin": [1, 11, 12, 13, 18, 20], "ArgMax": [1, 11, 12, 13],
        "ArgMin": [1, 11, 12, 13]}
for op in order:
    want = vers.get(op, [1, 11, 13, 18])
    say([v["version"] for v in ops.get(op, [])] == want, "/v1/ops %s versions %s" % (op, want))
def ver(op, v): return [x for x in ops[op] if x["version"] == v][0]
say(ver("ReduceMax", 12)["opsets"] == [12, 12] and ver("ReduceMax", 20)["opsets"] == [20, None],
    "/v1/ops ReduceMax opsets 12: [12,12], 20: [20,null]")
say(ver("ReduceSum", 11)["opsets"] == [11, 12] and ver("ReduceSum", 13)["opsets"] == [13, None],
    "/v1/ops ReduceSum opsets 11: [11,12], 13: [13,null]")
say(ver("ReduceSum", 11)["axes"] == "attribute" and ver("ReduceSum", 13)["axes"] == "input",
    "/v1/ops ReduceSum axes: attribute at 11, input at 13")
say(ver("ReduceMean", 13)["axes"] == "attribute" and ver("ReduceMean", 18)["axes"] == "input",
    "/v1/ops ReduceMean axes: attribute at 13, input at 18")
say(ver("ReduceSum", 13)["noop_with_empty_axes"] is True and ver("ReduceMax", 13)["noop_with_empty_axes"] is False,
    "/v1/ops noop_with_empty_axes: ReduceSum 13 yes, ReduceMax 13 no")
say(all(v["axes"] == "axis" and v["output_dtype"] == "int64" for v in ops["ArgMax"] + ops["ArgMin"]),
    "/v1/ops ArgMax/ArgMin: axes form axis, output int64")
say([v["select_last_index"] for v in ops["ArgMax"]] == [False, False, True, True],
    "/v1/ops ArgMax select_last_index from 12")
# listing order: floats, integers by width (signed first), bool
say(ver("ReduceMax", 20)["dtypes"] == ["float32", "float64", "float16", "bfloat16", "int8", "uint8", "int32", "uint32", "int64", "uint64", "bool"],
    "/v1/ops ReduceMax 20 dtypes (with int8, uint8, bool)")
say(ver("ReduceMax", 12)["dtypes"] == ["float32", "float64", "float16", "int8", "uint8", "int32", "uint32", "int64", "uint64"],
    "/v1/ops ReduceMax 12 dtypes (int8, uint8; no bfloat16)")
say(ver("ReduceMax", 11)["dtypes"] == ["float32", "float64", "float16", "int32", "uint32", "int64", "uint64"],
    "/v1/ops ReduceMax 11 dtypes (no int8)")
say(set(ver("ArgMax", 13)["dtypes"]) == {"float32", "float64", "float16", "bfloat16", "int32", "int64", "uint32", "uint64", "int8", "uint8", "int16", "uint16"},
    "/v1/ops ArgMax 13 dtypes (every integer, no bool)")
say("bfloat16" not in ver("ArgMin", 12)["dtypes"] and "int16" in ver("ArgMin", 1)["dtypes"],
    "/v1/ops ArgMin: bfloat16 from 13, int16 from 1")
say(all("int8" not in v["dtypes"] and "bool" not in v["dtypes"] for op in ("ReduceSum", "ReduceMean", "ReduceProd", "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare") for v in ops[op]),
    "/v1/ops int8/bool only for ReduceMax/ReduceMin/ArgMax/ArgMin")
EOF
while read -r w rest; do
  case $w in PASS) ok "$rest" ;; FAIL) fail "$rest" "$(head -c 300 "$TMP/ops.json")" ;; *) fail "/v1/ops check" "$w $rest" ;; esac
done <"$TMP/ops.out"

# ================================================================ /metrics
if [ -z "${REDUCED_TEST_URL:-}" ]; then
  http GET /metrics
  for op in ReduceSum ReduceMean ReduceMax ReduceMin ReduceProd ReduceL1 ReduceLogSum ReduceLogSumExp ArgMax ArgMin; do
    check "/metrics has op=\"$op\" for the requests above" grep -q "reduced_requests_total{route=\"[^\"]*\",op=\"$op\"" "$B"
  done
  check "/metrics: ArgMax JSON 200 counted" grep -Eq "reduced_requests_total\\{route=\"/v1/reduce\",op=\"ArgMax\",format=\"json\",status=\"200\"\\} [1-9]" "$B"
  check "/metrics: /v2 ReduceMax counted" grep -Eq "reduced_requests_total\\{route=\"[^\"]*v2[^\"]*\",op=\"ReduceMax\"" "$B"
else
  skip "/metrics op label" "REDUCED_TEST_URL is set (counters are shared)"
fi

finish
