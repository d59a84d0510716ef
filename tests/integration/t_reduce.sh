#!/bin/bash
# t_reduce.sh - POST /v1/reduce: every request field, both ops, opsets,
# axes, keepdims, noop_with_empty_axes, rank 0, zero-size dims, nested data.
# Expected values are worked out by hand in the comments (x = 1..12 as
# [3,2,2], so x[i][j][k] = 4i + 2j + k + 1).
. "$(dirname "$0")/lib.sh"
use_daemon

X='"input":{"dtype":"float32","shape":[3,2,2],"data":[1,2,3,4,5,6,7,8,9,10,11,12]}'

# ---- axes [1], keepdims 0: pairs over j: (1,3) (2,4) (5,7) (6,8) (9,11)
# (10,12) -> sqrt of 10, 20, 74, 100, 202, 244
L2_AX1='[3.1622776601683795,4.47213595499958,8.602325267042627,10,14.212670403551895,15.620499351813308]'
expect_reduce "ReduceL2 axes [1] keepdims 0, every field explicit" \
  '{"op": "ReduceL2", "opset": 18, "axes": [1], "keepdims": 0, "noop_with_empty_axes": 0, "overflow": "error", '"$X"'}' \
  '{"op":"ReduceL2","opset":18,"op_version":18,"output":{"dtype":"float32","shape":[3,2],"data":'"$L2_AX1"'}}' float32
expect_reduce "ReduceSumSquare axes [1] keepdims 1" \
  '{"op":"ReduceSumSquare","axes":[1],"keepdims":1,'"$X"'}' \
  '{"op":"ReduceSumSquare","opset":18,"op_version":18,"output":{"dtype":"float32","shape":[3,1,2],"data":[10,20,74,100,202,244]}}'
# axes [2]: pairs over k: (1,2) (3,4) (5,6) (7,8) (9,10) (11,12) -> sqrt of
# 5, 25, 61, 113, 181, 265
L2_AX2='[2.23606797749979,5,7.810249675906654,10.63014581273465,13.45362404707371,16.278820596099706]'
expect_reduce "the doc's example: ReduceL2 axes [2] keepdims 0" \
  '{"op": "ReduceL2", "opset": 18, "axes": [2], "keepdims": 0, "noop_with_empty_axes": 0, "overflow": "error", '"$X"'}' \
  '{"op":"ReduceL2","opset":18,"op_version":18,"output":{"dtype":"float32","shape":[3,2],"data":'"$L2_AX2"'}}' float32
expect_reduce "ReduceL2 axes [-1] = axes [2]" \
  '{"op":"ReduceL2","axes":[-1],"keepdims":0,'"$X"'}' \
  '{"op":"ReduceL2","opset":18,"op_version":18,"output":{"dtype":"float32","shape":[3,2],"data":'"$L2_AX2"'}}' float32
# body float text is the shortest form: float32 sqrt(10) = 3.1622777, not 3.16227766...
post '{"op":"ReduceL2","axes":[1],"keepdims":0,'"$X"'}'
check "float32 output in shortest form (3.1622777, 10 not 10.0)" \
  grep -Eq '[[,] *3\.1622777 *[],].*[[,] *10 *[],]' "$B"

# ---- defaults: opset 18, keepdims 1, axes omitted = all (sum 1..12 of
# squares = 12*13*25/6 = 650)
expect_reduce "defaults: ReduceSumSquare reduces all, keepdims 1" \
  '{"op":"ReduceSumSquare",'"$X"'}' \
  '{"op":"ReduceSumSquare","opset":18,"op_version":18,"output":{"dtype":"float32","shape":[1,1,1],"data":[650]}}'
expect_reduce "defaults: ReduceL2 reduces all -> sqrt(650)" \
  '{"op":"ReduceL2",'"$X"'}' \
  '{"op":"ReduceL2","opset":18,"op_version":18,"output":{"dtype":"float32","shape":[1,1,1],"data":[25.495097567963924]}}' float32
expect_reduce "axes [] = all axes, keepdims 0 -> rank 0" \
  '{"op":"ReduceSumSquare","axes":[],"keepdims":0,'"$X"'}' \
  '{"op":"ReduceSumSquare","opset":18,"op_version":18,"output":{"dtype":"float32","shape":[],"data":[650]}}'
# axes [0,2]: j=0 -> 1,2,5,6,9,10 (247); j=1 -> 3,4,7,8,11,12 (403)
for ax in '[0,2]' '[2,0]' '[-3,-1]' '[0,-1]'; do
  expect_reduce "axes $ax keepdims 0" \
    '{"op":"ReduceSumSquare","axes":'"$ax"',"keepdims":0,'"$X"'}' \
    '{"op":"ReduceSumSquare","opset":18,"op_version":18,"output":{"dtype":"float32","shape":[2],"data":[247,403]}}'
done
expect_reduce "axes [0,2] keepdims 1 (ReduceL2: sqrt 247, sqrt 403)" \
  '{"op":"ReduceL2","axes":[0,2],'"$X"'}' \
  '{"op":"ReduceL2","opset":18,"op_version":18,"output":{"dtype":"float32","shape":[1,2,1],"data":[15.716233645501712,20.074859899884732]}}' float32
expect_reduce "axes [0,1,2] keepdims 0" \
  '{"op":"ReduceSumSquare","axes":[0,1,2],"keepdims":0,'"$X"'}' \
  '{"op":"ReduceSumSquare","opset":18,"op_version":18,"output":{"dtype":"float32","shape":[],"data":[650]}}'
expect_reduce "keepdims true" \
  '{"op":"ReduceSumSquare","axes":[1],"keepdims":true,'"$X"'}' \
  '{"op":"ReduceSumSquare","opset":18,"op_version":18,"output":{"dtype":"float32","shape":[3,1,2],"data":[10,20,74,100,202,244]}}'
expect_reduce "keepdims false" \
  '{"op":"ReduceSumSquare","axes":[1],"keepdims":false,'"$X"'}' \
  '{"op":"ReduceSumSquare","opset":18,"op_version":18,"output":{"dtype":"float32","shape":[3,2],"data":[10,20,74,100,202,244]}}'
# axis 0: (1,5,9) (2,6,10) (3,7,11) (4,8,12) -> 107, 140, 179, 224
expect_reduce "axes [0]" \
  '{"op":"ReduceSumSquare","axes":[0],"keepdims":0,'"$X"'}' \
  '{"op":"ReduceSumSquare","opset":18,"op_version":18,"output":{"dtype":"float32","shape":[2,2],"data":[107,140,179,224]}}'

# ---- opsets: echoed, op_version = newest of 1, 11, 13, 18 <= opset
for pair in 1:1 5:1 10:1 11:11 12:11 13:13 17:13 18:18 21:18 1000:18; do
  o=${pair%%:*} v=${pair#*:}
  expect_reduce "opset $o -> op_version $v (ReduceSumSquare [1,2] = 5)" \
    '{"op":"ReduceSumSquare","opset":'"$o"',"input":{"dtype":"float32","shape":[2],"data":[1,2]}}' \
    '{"op":"ReduceSumSquare","opset":'"$o"',"op_version":'"$v"',"output":{"dtype":"float32","shape":[1],"data":[5]}}'
  expect_reduce "opset $o -> op_version $v (ReduceL2 [3,4] = 5)" \
    '{"op":"ReduceL2","opset":'"$o"',"keepdims":0,"input":{"dtype":"float32","shape":[2],"data":[3,4]}}' \
    '{"op":"ReduceL2","opset":'"$o"',"op_version":'"$v"',"output":{"dtype":"float32","shape":[],"data":[5]}}'
done
for o in 1 11 13; do
  expect_reduce "opset $o: negative axes accepted ([-1] on [3,2,2])" \
    '{"op":"ReduceL2","opset":'"$o"',"axes":[-1],"keepdims":0,'"$X"'}' \
    '{"op":"ReduceL2","opset":'"$o"',"op_version":'"$o"',"output":{"dtype":"float32","shape":[3,2],"data":'"$L2_AX2"'}}' float32
  expect_reduce "opset $o: axes omitted = all" \
    '{"op":"ReduceSumSquare","opset":'"$o"','"$X"'}' \
    '{"op":"ReduceSumSquare","opset":'"$o"',"op_version":'"$o"',"output":{"dtype":"float32","shape":[1,1,1],"data":[650]}}'
  expect_reduce "opset $o: axes [] = all" \
    '{"op":"ReduceSumSquare","opset":'"$o"',"axes":[],"keepdims":0,'"$X"'}' \
    '{"op":"ReduceSumSquare","opset":'"$o"',"op_version":'"$o"',"output":{"dtype":"float32","shape":[],"data":[650]}}'
done

# ---- noop_with_empty_axes (version 18): x^2 / |x|, shape kept
N='"input":{"dtype":"float32","shape":[3,2,2],"data":[-3,1.5,0,-2,4,-0.5,2,2,-1,-1,3,0.25]}'
SQ='[9,2.25,0,4,16,0.25,4,4,1,1,9,0.0625]'
AB='[3,1.5,0,2,4,0.5,2,2,1,1,3,0.25]'
for f in '"noop_with_empty_axes":1' '"noop_with_empty_axes":true' \
         '"noop_with_empty_axes":1,"axes":[]' '"noop_with_empty_axes":1,"keepdims":0' \
         '"noop_with_empty_axes":1,"opset":21'; do
  o=18; case $f in *21*) o=21;; esac
  expect_reduce "noop ($f): ReduceSumSquare = x^2, shape kept" \
    '{"op":"ReduceSumSquare",'"$f"','"$N"'}' \
    '{"op":"ReduceSumSquare","opset":'$o',"op_version":18,"output":{"dtype":"float32","shape":[3,2,2],"data":'"$SQ"'}}'
  expect_reduce "noop ($f): ReduceL2 = |x|, shape kept" \
    '{"op":"ReduceL2",'"$f"','"$N"'}' \
    '{"op":"ReduceL2","opset":'$o',"op_version":18,"output":{"dtype":"float32","shape":[3,2,2],"data":'"$AB"'}}'
done
# noop 1 with axes given: an ordinary reduction. axis 1: (-3,0) (1.5,-2)
# (4,2) (-0.5,2) (-1,3) (-1,0.25) -> 9, 6.25, 20, 4.25, 10, 1.0625
expect_reduce "noop 1 with axes [1]: ordinary reduction" \
  '{"op":"ReduceSumSquare","noop_with_empty_axes":1,"axes":[1],'"$N"'}' \
  '{"op":"ReduceSumSquare","opset":18,"op_version":18,"output":{"dtype":"float32","shape":[3,1,2],"data":[9,6.25,20,4.25,10,1.0625]}}'
# noop 0: reduce all; sum of SQ = 50.5625
for f in '"noop_with_empty_axes":0' '"noop_with_empty_axes":false' '"noop_with_empty_axes":0,"axes":[]'; do
  expect_reduce "noop ($f): reduce all" \
    '{"op":"ReduceSumSquare",'"$f"','"$N"'}' \
    '{"op":"ReduceSumSquare","opset":18,"op_version":18,"output":{"dtype":"float32","shape":[1,1,1],"data":[50.5625]}}'
done
# -0 -> +0 under |x| (sqrt of +0); both compare equal as numbers, so check the text
post '{"op":"ReduceL2","noop_with_empty_axes":1,"input":{"dtype":"float32","shape":[2],"data":[-0.0,-2]}}'
check "noop ReduceL2 [-0.0,-2] -> [0,2] (no negative zero)" grep -Eq '"data": *\[ *0(\.0*)? *, *2 *\]' "$B"

# ---- rank 0
for k in 0 1; do
  expect_reduce "rank 0, keepdims $k: ReduceL2 [-3] -> 3, rank 0" \
    '{"op":"ReduceL2","keepdims":'$k',"input":{"dtype":"float32","shape":[],"data":[-3]}}' \
    '{"op":"ReduceL2","opset":18,"op_version":18,"output":{"dtype":"float32","shape":[],"data":[3]}}'
  expect_reduce "rank 0, keepdims $k: ReduceSumSquare [-3] -> 9" \
    '{"op":"ReduceSumSquare","keepdims":'$k',"input":{"dtype":"float32","shape":[],"data":[-3]}}' \
    '{"op":"ReduceSumSquare","opset":18,"op_version":18,"output":{"dtype":"float32","shape":[],"data":[9]}}'
done
expect_reduce "rank 0, noop 1: ReduceL2 -> |x|" \
  '{"op":"ReduceL2","noop_with_empty_axes":1,"input":{"dtype":"int32","shape":[],"data":[-7]}}' \
  '{"op":"ReduceL2","opset":18,"op_version":18,"output":{"dtype":"int32","shape":[],"data":[7]}}'
expect_reduce "rank 0 at opset 1" \
  '{"op":"ReduceSumSquare","opset":1,"input":{"dtype":"float64","shape":[],"data":[1.5]}}' \
  '{"op":"ReduceSumSquare","opset":1,"op_version":1,"output":{"dtype":"float64","shape":[],"data":[2.25]}}'

# ---- zero-size dimensions (sum over nothing = 0)
Z='"input":{"dtype":"float32","shape":[2,0,4],"data":[]}'
for op in ReduceL2 ReduceSumSquare; do
  expect_reduce "$op [2,0,4] axes [1] -> zeros [2,1,4]" \
    '{"op":"'$op'","axes":[1],'"$Z"'}' \
    '{"op":"'$op'","opset":18,"op_version":18,"output":{"dtype":"float32","shape":[2,1,4],"data":[0,0,0,0,0,0,0,0]}}'
done
expect_reduce "[2,0,4] axes [1] keepdims 0 -> zeros [2,4]" \
  '{"op":"ReduceL2","axes":[1],"keepdims":0,'"$Z"'}' \
  '{"op":"ReduceL2","opset":18,"op_version":18,"output":{"dtype":"float32","shape":[2,4],"data":[0,0,0,0,0,0,0,0]}}'
expect_reduce "[2,0,4] axes [0] -> empty [1,0,4]" \
  '{"op":"ReduceL2","axes":[0],'"$Z"'}' \
  '{"op":"ReduceL2","opset":18,"op_version":18,"output":{"dtype":"float32","shape":[1,0,4],"data":[]}}'
expect_reduce "[2,0,4] axes [0,2] keepdims 0 -> empty [0]" \
  '{"op":"ReduceSumSquare","axes":[0,2],"keepdims":0,'"$Z"'}' \
  '{"op":"ReduceSumSquare","opset":18,"op_version":18,"output":{"dtype":"float32","shape":[0],"data":[]}}'
expect_reduce "[2,0,4] reduce all keepdims 1 -> [1,1,1] 0" \
  '{"op":"ReduceSumSquare",'"$Z"'}' \
  '{"op":"ReduceSumSquare","opset":18,"op_version":18,"output":{"dtype":"float32","shape":[1,1,1],"data":[0]}}'
expect_reduce "[2,0,4] noop 1 -> empty [2,0,4]" \
  '{"op":"ReduceL2","noop_with_empty_axes":1,'"$Z"'}' \
  '{"op":"ReduceL2","opset":18,"op_version":18,"output":{"dtype":"float32","shape":[2,0,4],"data":[]}}'
expect_reduce "int32 [0,3] axes [0] keepdims 0 -> zeros [3]" \
  '{"op":"ReduceSumSquare","axes":[0],"keepdims":0,"input":{"dtype":"int32","shape":[0,3],"data":[]}}' \
  '{"op":"ReduceSumSquare","opset":18,"op_version":18,"output":{"dtype":"int32","shape":[3],"data":[0,0,0]}}'
expect_reduce "data [] without shape = shape [0]; reduce all keepdims 0 -> 0" \
  '{"op":"ReduceL2","keepdims":0,"input":{"dtype":"float64","data":[]}}' \
  '{"op":"ReduceL2","opset":18,"op_version":18,"output":{"dtype":"float64","shape":[],"data":[0]}}'

# ---- nested data (shape from the nesting)
expect_reduce "nested [[1,2],[3,4]] axes [1] -> [5,25]" \
  '{"op":"ReduceSumSquare","axes":[1],"keepdims":0,"input":{"dtype":"int32","data":[[1,2],[3,4]]}}' \
  '{"op":"ReduceSumSquare","opset":18,"op_version":18,"output":{"dtype":"int32","shape":[2],"data":[5,25]}}'
expect_reduce "nested [[1,2],[3,4]] axes [0] -> [10,20]" \
  '{"op":"ReduceSumSquare","axes":[0],"keepdims":1,"input":{"dtype":"int64","data":[[1,2],[3,4]]}}' \
  '{"op":"ReduceSumSquare","opset":18,"op_version":18,"output":{"dtype":"int64","shape":[1,2],"data":[10,20]}}'
expect_reduce "nested [[[1],[2]]] (shape [1,2,1]) reduce all keepdims 1" \
  '{"op":"ReduceSumSquare","input":{"dtype":"float32","data":[[[1],[2]]]}}' \
  '{"op":"ReduceSumSquare","opset":18,"op_version":18,"output":{"dtype":"float32","shape":[1,1,1],"data":[5]}}'
expect_reduce "nested [[],[]] (shape [2,0]) axes [1] -> [0,0]" \
  '{"op":"ReduceL2","axes":[1],"keepdims":0,"input":{"dtype":"float32","data":[[],[]]}}' \
  '{"op":"ReduceL2","opset":18,"op_version":18,"output":{"dtype":"float32","shape":[2],"data":[0,0]}}'
expect_reduce "nested data with an agreeing shape" \
  '{"op":"ReduceL2","axes":[1],"keepdims":0,"input":{"dtype":"float32","shape":[2,2],"data":[[3,4],[6,8]]}}' \
  '{"op":"ReduceL2","opset":18,"op_version":18,"output":{"dtype":"float32","shape":[2],"data":[5,10]}}'
expect_reduce "nested data, noop keeps the nesting shape [2,2]" \
  '{"op":"ReduceSumSquare","noop_with_empty_axes":1,"input":{"dtype":"float32","data":[[1,-2],[3,-4]]}}' \
  '{"op":"ReduceSumSquare","opset":18,"op_version":18,"output":{"dtype":"float32","shape":[2,2],"data":[1,4,9,16]}}'

# ---- rank 32 (the largest) works: 32 ones, data [3] -> 9
S32=$(printf '1,%.0s' $(seq 31))1
expect_reduce "rank 32 accepted" \
  '{"op":"ReduceSumSquare","input":{"dtype":"int32","shape":['"$S32"'],"data":[3]}}' \
  '{"op":"ReduceSumSquare","opset":18,"op_version":18,"output":{"dtype":"int32","shape":['"$S32"'],"data":[9]}}'

# ---- an unusual but valid body: whitespace, member order, charset parameter
printf '%s' ' { "input" : { "data" : [ 6 , 8 ] , "dtype" : "int32" } ,
  "keepdims" : 0 , "op" : "ReduceL2" } ' >"$TMP/req"
http POST /v1/reduce -H 'Content-Type: application/json; charset=utf-8' --data-binary @"$TMP/req"
check "whitespace, member order, charset=utf-8" "$JTOOL" eq "$B" \
  '{"op":"ReduceL2","opset":18,"op_version":18,"output":{"dtype":"int32","shape":[],"data":[10]}}'
ct=$(hdr Content-Type)
check "response Content-Type is application/json" test "${ct%%;*}" = application/json

# ---- 300 random cases (fixed seed, so reproducible) against the naive
# reference in jtool: ranks 0-4, dims 0-3, random axes (positive or
# negative, [] or omitted), keepdims as 0/1 or false/true, both ops, every
# dtype.  Data are multiples of 1/8 or small integers so the reference's sums
# are exact; float results are compared after rounding to the dtype.
mkdir -p "$TMP/fuzz"
"$JTOOL" fuzz 20240607 300 "$TMP/fuzz"
nbad=0 firstbad= nlong=0 firstlong=
for ((i = 0; i < 300; i++)); do
  f=$TMP/fuzz/$i
  http POST /v1/reduce -H 'Content-Type: application/json' --data-binary @"$f.req"
  if [ "$ST" != 200 ] || ! why=$("$JTOOL" eq "$B" "$(cat "$f.exp")" $(cat "$f.mode") 2>&1); then
    nbad=$((nbad + 1))
    [ -z "$firstbad" ] && firstbad="case $i: $(head -c 300 "$f.req") -> $ST $(body_excerpt) / expected $(head -c 300 "$f.exp") ${why:-}"
    continue
  fi
  dt=$(jget output.dtype)
  case $dt in float*|bfloat16)
    if ! why=$("$JTOOL" shortest "$B" "$dt" 2>&1); then
      nlong=$((nlong + 1))
      [ -z "$firstlong" ] && firstlong="case $i ($dt): $why"
    fi;;
  esac
done
if [ "$nbad" = 0 ]; then ok "300 random reductions match the naive reference"
else fail "300 random reductions match the naive reference" "$nbad differ" "$firstbad"; fi
check "300 random reductions: every float in the shortest round-trip form ($nlong not${firstlong:+: $firstlong})" test "$nlong" = 0

finish
