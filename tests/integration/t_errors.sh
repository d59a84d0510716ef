#!/bin/bash
# t_errors.sh - every 400 of the contract: JSON and field errors and each
# validation error of the library, with the exact {"error":...} body.
# Where the contract does not fix the code (a member of the wrong JSON
# type), the test accepts the codes that are defensible and says so.
. "$(dirname "$0")/lib.sh"
use_daemon

IN='"input":{"dtype":"float32","shape":[3,2,2],"data":[1,2,3,4,5,6,7,8,9,10,11,12]}'

# ---- malformed JSON
expect_error "BAD_JSON: truncated" '{"op":"ReduceL2",' 400 BAD_JSON
expect_error "BAD_JSON: not JSON" 'op=ReduceL2' 400 BAD_JSON
expect_error "BAD_JSON: trailing garbage" '{"op":"ReduceL2",'"$IN"'} x' 400 BAD_JSON
http POST /v1/reduce -H 'Content-Type: application/json' --data-binary ''
expect_error_body "BAD_JSON: empty body (Content-Length: 0)" 400 BAD_JSON
expect_error "top level not an object -> BAD_JSON or INVALID_FIELD" '[1,2]' 400 'BAD_JSON|INVALID_FIELD'

# ---- missing, invalid and unknown fields
expect_error "MISSING_FIELD: op" '{'"$IN"'}' 400 MISSING_FIELD
expect_error "MISSING_FIELD: input" '{"op":"ReduceL2"}' 400 MISSING_FIELD
expect_error "MISSING_FIELD: input.dtype" '{"op":"ReduceL2","input":{"shape":[1],"data":[1]}}' 400 MISSING_FIELD
expect_error "MISSING_FIELD: input.data" '{"op":"ReduceL2","input":{"dtype":"float32","shape":[1]}}' 400 MISSING_FIELD
expect_error "UNKNOWN_FIELD: top level" '{"op":"ReduceL2","foo":1,'"$IN"'}' 400 UNKNOWN_FIELD
check "UNKNOWN_FIELD message names the field" grep -q foo "$B"
expect_error "UNKNOWN_FIELD: in input" '{"op":"ReduceL2","input":{"dtype":"float32","shape":[1],"data":[1],"bar":2}}' 400 UNKNOWN_FIELD
check "UNKNOWN_FIELD message names the field" grep -q bar "$B"
expect_error "ATTRIBUTE_NOT_ALLOWED: \"axis\" (ArgMax/ArgMin's; a typo of axes here)" '{"op":"ReduceL2","axis":[1],'"$IN"'}' 400 ATTRIBUTE_NOT_ALLOWED
expect_error "op of the wrong type" '{"op":5,'"$IN"'}' 400 'INVALID_FIELD|UNKNOWN_OP'
expect_error "input of the wrong type" '{"op":"ReduceL2","input":"x"}' 400 INVALID_FIELD
expect_error "input.shape of the wrong type" '{"op":"ReduceL2","input":{"dtype":"float32","shape":"3","data":[1,2,3]}}' 400 INVALID_FIELD
expect_error "input.shape with a non-integer dim" '{"op":"ReduceL2","input":{"dtype":"float32","shape":[1.5],"data":[1]}}' 400 'INVALID_FIELD|INVALID_DIM'
expect_error "input.data of the wrong type" '{"op":"ReduceL2","input":{"dtype":"float32","data":{"a":1}}}' 400 'INVALID_FIELD|INVALID_ELEMENT'
expect_error "input.dtype of the wrong type" '{"op":"ReduceL2","input":{"dtype":1,"data":[1]}}' 400 'INVALID_FIELD|UNSUPPORTED_DTYPE'
expect_error "axes of the wrong type" '{"op":"ReduceL2","axes":"1",'"$IN"'}' 400 INVALID_FIELD
expect_error "axes with a non-integer" '{"op":"ReduceL2","axes":[1.5],'"$IN"'}' 400 'INVALID_FIELD|AXIS_OUT_OF_RANGE'
expect_error "opset of the wrong type" '{"op":"ReduceL2","opset":"18",'"$IN"'}' 400 'INVALID_FIELD|INVALID_OPSET'
expect_error "keepdims of the wrong type" '{"op":"ReduceL2","keepdims":"1",'"$IN"'}' 400 'INVALID_FIELD|INVALID_KEEPDIMS'
expect_error "overflow of the wrong type" '{"op":"ReduceL2","overflow":1,'"$IN"'}' 400 'INVALID_FIELD|INVALID_OVERFLOW_POLICY'

# ---- shape and data
expect_error "SHAPE_MISMATCH: flat data shorter than shape" '{"op":"ReduceL2","input":{"dtype":"float32","shape":[2,2],"data":[1,2,3]}}' 400 SHAPE_MISMATCH
expect_error "SHAPE_MISMATCH: flat data longer than shape" '{"op":"ReduceL2","input":{"dtype":"float32","shape":[2],"data":[1,2,3]}}' 400 SHAPE_MISMATCH
expect_error "SHAPE_MISMATCH: nesting disagrees with shape" '{"op":"ReduceL2","input":{"dtype":"float32","shape":[4],"data":[[1,2],[3,4]]}}' 400 SHAPE_MISMATCH
expect_error "SHAPE_MISMATCH: rank 0 shape with 2 elements" '{"op":"ReduceL2","input":{"dtype":"float32","shape":[],"data":[1,2]}}' 400 SHAPE_MISMATCH
expect_error "ragged nesting" '{"op":"ReduceL2","input":{"dtype":"float32","data":[[1,2],[3]]}}' 400 'SHAPE_MISMATCH|INVALID_ELEMENT'
expect_error "mixed nesting depth" '{"op":"ReduceL2","input":{"dtype":"float32","data":[[1,2],3]}}' 400 'SHAPE_MISMATCH|INVALID_ELEMENT'

# ---- each library validation error
expect_error "UNKNOWN_OP: ReduceMedian" '{"op":"ReduceMedian",'"$IN"'}' 400 UNKNOWN_OP
expect_error "UNKNOWN_OP: reducel2 (case matters)" '{"op":"reducel2",'"$IN"'}' 400 UNKNOWN_OP
expect_error "INVALID_OPSET: 0" '{"op":"ReduceL2","opset":0,'"$IN"'}' 400 INVALID_OPSET
expect_error "INVALID_OPSET: -1" '{"op":"ReduceL2","opset":-1,'"$IN"'}' 400 INVALID_OPSET
for dt in int4 uint4 float8e4m3 string complex64 float8 FLOAT32 ''; do
  expect_error "UNSUPPORTED_DTYPE: \"$dt\"" '{"op":"ReduceL2","input":{"dtype":"'$dt'","shape":[1],"data":[1]}}' 400 UNSUPPORTED_DTYPE
done
expect_error "DTYPE_NOT_IN_VERSION: bfloat16 at opset 11" '{"op":"ReduceL2","opset":11,"input":{"dtype":"bfloat16","shape":[1],"data":[1]}}' 400 DTYPE_NOT_IN_VERSION
S33=$(printf '1,%.0s' $(seq 32))1
expect_error "RANK_TOO_LARGE: rank 33" '{"op":"ReduceL2","input":{"dtype":"float32","shape":['"$S33"'],"data":[1]}}' 400 RANK_TOO_LARGE
N33=$(printf '[%.0s' $(seq 33))1$(printf ']%.0s' $(seq 33))
expect_error "RANK_TOO_LARGE: data nested 33 deep" '{"op":"ReduceL2","input":{"dtype":"float32","data":'"$N33"'}}' 400 RANK_TOO_LARGE
expect_error "INVALID_DIM: -1" '{"op":"ReduceL2","input":{"dtype":"float32","shape":[-1],"data":[]}}' 400 INVALID_DIM
expect_error "INVALID_DIM: [2,-3]" '{"op":"ReduceL2","input":{"dtype":"float32","shape":[2,-3],"data":[]}}' 400 INVALID_DIM
expect_error "AXIS_OUT_OF_RANGE: 3 on rank 3" '{"op":"ReduceL2","axes":[3],'"$IN"'}' 400 AXIS_OUT_OF_RANGE
check "AXIS_OUT_OF_RANGE message names axis 3 and [-3, 2]" grep -q 'axis 3 .*\[-3, 2\]' "$B"
expect_error "AXIS_OUT_OF_RANGE: -4 on rank 3" '{"op":"ReduceL2","axes":[-4],'"$IN"'}' 400 AXIS_OUT_OF_RANGE
expect_error "AXIS_OUT_OF_RANGE: 0 on rank 0" '{"op":"ReduceL2","axes":[0],"input":{"dtype":"float32","shape":[],"data":[1]}}' 400 AXIS_OUT_OF_RANGE
expect_error "AXIS_OUT_OF_RANGE: -1 on rank 0" '{"op":"ReduceL2","axes":[-1],"input":{"dtype":"float32","shape":[],"data":[1]}}' 400 AXIS_OUT_OF_RANGE
expect_error "AXIS_OUT_OF_RANGE: 3 on rank 3 at opset 1" '{"op":"ReduceL2","opset":1,"axes":[3],'"$IN"'}' 400 AXIS_OUT_OF_RANGE
expect_error "AXIS_OUT_OF_RANGE: huge axis" '{"op":"ReduceL2","axes":[9223372036854775807],'"$IN"'}' 400 AXIS_OUT_OF_RANGE
expect_error "DUPLICATE_AXIS: [1,1]" '{"op":"ReduceL2","axes":[1,1],'"$IN"'}' 400 DUPLICATE_AXIS
expect_error "DUPLICATE_AXIS: [1,-2]" '{"op":"ReduceL2","axes":[1,-2],'"$IN"'}' 400 DUPLICATE_AXIS
expect_error "DUPLICATE_AXIS: [0,1,2,2] at opset 13" '{"op":"ReduceL2","opset":13,"axes":[0,1,2,2],'"$IN"'}' 400 DUPLICATE_AXIS
for k in 2 -1; do
  expect_error "INVALID_KEEPDIMS: $k" '{"op":"ReduceL2","keepdims":'$k','"$IN"'}' 400 INVALID_KEEPDIMS
done
for k in 2 -1; do
  expect_error "INVALID_NOOP_WITH_EMPTY_AXES: $k" '{"op":"ReduceL2","noop_with_empty_axes":'$k','"$IN"'}' 400 INVALID_NOOP_WITH_EMPTY_AXES
done
for o in 1 11 13 17; do
  expect_error "NOOP_NOT_IN_VERSION: noop 1 at opset $o" '{"op":"ReduceL2","opset":'$o',"noop_with_empty_axes":1,'"$IN"'}' 400 NOOP_NOT_IN_VERSION
done
expect_error "NOOP_NOT_IN_VERSION: noop 0 given at opset 13" '{"op":"ReduceSumSquare","opset":13,"noop_with_empty_axes":0,'"$IN"'}' 400 NOOP_NOT_IN_VERSION
for p in clamp ERROR Saturate ''; do
  expect_error "INVALID_OVERFLOW_POLICY: \"$p\"" '{"op":"ReduceL2","overflow":"'$p'","input":{"dtype":"int32","shape":[1],"data":[1]}}' 400 INVALID_OVERFLOW_POLICY
done
# 2^62 * 4 elements overflows a 64-bit count; 2^61 float32 elements are 2^63 bytes
expect_error "TENSOR_TOO_LARGE: shape [2^62,4] -> 413" '{"op":"ReduceL2","input":{"dtype":"float32","shape":[4611686018427387904,4],"data":[1]}}' 413 TENSOR_TOO_LARGE
expect_error "TENSOR_TOO_LARGE: 2^61 float32 elements -> 413" '{"op":"ReduceL2","input":{"dtype":"float32","shape":[2305843009213693952],"data":[1]}}' 413 TENSOR_TOO_LARGE

# ---- hostile shapes and bodies: a clear 4xx, never a crash, hang or huge answer
# a zero-element input whose output would have 2^63-1 elements
expect_error "output of 2^63-1 float32 elements ([0,2^63-1] axes [0]) -> 413" \
  '{"op":"ReduceL2","axes":[0],"input":{"dtype":"float32","shape":[0,9223372036854775807],"data":[]}}' 413 TENSOR_TOO_LARGE
expect_error "output [1,2^62,4] from a zero-element input -> 413" \
  '{"op":"ReduceL2","axes":[0],"input":{"dtype":"float32","shape":[0,4611686018427387904,4],"data":[]}}' 413 TENSOR_TOO_LARGE
# regression: empty_input_huge_output.  [0,1e9] int64 axes [0] made the daemon
# try to allocate 1e9 accumulators (32 GB) for a 90-byte request (503).
expect_error "empty_input_huge_output: [0,1e9] int64 axes [0] -> 413 before allocating" \
  '{"op":"ReduceL2","axes":[0],"input":{"dtype":"int64","shape":[0,1000000000],"data":[]}}' 413 TENSOR_TOO_LARGE
expect_reduce "empty input, small output answered: [0,3] axes [0]" \
  '{"op":"ReduceSumSquare","axes":[0],"keepdims":0,"input":{"dtype":"int32","shape":[0,3],"data":[]}}' \
  '{"op":"ReduceSumSquare","opset":18,"op_version":18,"output":{"dtype":"int32","shape":[3],"data":[0,0,0]}}'
expect_reduce "[0,2^63-1] reduced over everything -> [1,1] zero" \
  '{"op":"ReduceL2","input":{"dtype":"float32","shape":[0,9223372036854775807],"data":[]}}' \
  '{"op":"ReduceL2","opset":18,"op_version":18,"output":{"dtype":"float32","shape":[1,1],"data":[0]}}'
AX40=$(printf '0,1,2,%.0s' $(seq 13))0
expect_error "axes with 40 entries (more than any rank)" '{"op":"ReduceL2","axes":['"$AX40"'],"input":{"dtype":"float32","shape":[1,1,1],"data":[1]}}' 400 'INVALID_FIELD|DUPLICATE_AXIS|AXIS_OUT_OF_RANGE'
D5000=$(printf '[%.0s' $(seq 5000))1$(printf ']%.0s' $(seq 5000))
expect_error "data nested 5000 deep" '{"op":"ReduceL2","input":{"dtype":"float32","data":'"$D5000"'}}' 400 'BAD_JSON|RANK_TOO_LARGE'
expect_error "duplicate member \"op\"" '{"op":"ReduceL2","op":"ReduceSumSquare","input":{"dtype":"float32","data":[3,4]}}' 400 'BAD_JSON|INVALID_FIELD|UNKNOWN_FIELD'
expect_error "NUL escaped inside op" '{"op":"ReduceL2\u0000x","input":{"dtype":"float32","data":[3,4]}}' 400 'BAD_JSON|UNKNOWN_OP'
expect_error "invalid UTF-8 in a string" $'{"op":"Reduce\xff","input":{"dtype":"float32","data":[3,4]}}' 400 'BAD_JSON|UNKNOWN_OP'
expect_reduce "\\u escapes in strings (\"Reduce\\u004c2\")" \
  '{"op":"Reduce\u004c2","keepdims":0,"input":{"dtype":"float\u0033\u0032","data":[3,4]}}' \
  '{"op":"ReduceL2","opset":18,"op_version":18,"output":{"dtype":"float32","shape":[],"data":[5]}}'

# ---- the first error wins, and an error leaves the daemon serving
post '{"op":"ReduceL2","keepdims":0,"input":{"dtype":"int32","data":[3,4]}}'
check "still serving after the errors (L2 [3,4] = 5)" "$JTOOL" eq "$B" \
  '{"op":"ReduceL2","opset":18,"op_version":18,"output":{"dtype":"int32","shape":[],"data":[5]}}'

finish
