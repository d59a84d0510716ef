#!/bin/bash
# t_dtypes.sh - every element type: conversions in and out, rounding,
# special values, integer exactness and the overflow policies.
. "$(dirname "$0")/lib.sh"
use_daemon

# r OP DTYPE DATA [EXTRA]: a request reducing all axes with keepdims 0.
r() { echo '{"op":"'$1'","keepdims":0,'"${4:+$4,}"'"input":{"dtype":"'$2'","shape":['$3'],"data":['$5']}}'; }
# a OP DTYPE DATA [OPSET]: the expected answer, rank 0 (opset 18 unless given).
a() {
  local o=${4:-18} v=18
  case $o in 1) v=1;; 11|12) v=11;; 13|17) v=13;; esac
  echo '{"op":"'$1'","opset":'$o',"op_version":'$v',"output":{"dtype":"'$2'","shape":[],"data":['$3']}}'
}
# red NAME OP DTYPE DATA EXPECTED [MODE] [EXTRA]: reduce the flat DATA fully.
red() {
  local n; n=$(printf '%s' "$4" | awk -F, '{ print ($0 ~ /^ *$/) ? 0 : NF }')
  expect_reduce "$1" "$(r "$2" "$3" "$n" "${7:-}" "$4")" "$(a "$2" "$3" "$5")" "${6:-}"
}

# ---- float32
red "float32 ReduceL2 [3,4] = 5" ReduceL2 float32 '3,4' 5
red "float32 input rounds (1+2^-24 -> 1, so SSQ = 1)" ReduceSumSquare float32 '1.000000059604644775390625' 1
red "float32 accumulates in double: L2 [1e20,1e20] = sqrt(2)e20, not inf" ReduceL2 float32 '1e20,1e20' 1.4142135623730951e20 float32
red "float32 no underflow: L2 [2^-80,2^-80] = sqrt(2)*2^-80" ReduceL2 float32 '8.271806125530277e-25,8.271806125530277e-25' 1.1698100408045763e-24 float32
red "float32 SSQ [1e20] = 1e40 -> Infinity" ReduceSumSquare float32 '1e20' '"Infinity"'
red "float32 input 1e39 rounds to inf" ReduceL2 float32 '1e39' '"Infinity"'
red "float32 L2 [NaN,1] = NaN" ReduceL2 float32 '"NaN",1' '"NaN"'
red "float32 L2 [-Infinity,1] = Infinity" ReduceL2 float32 '"-Infinity",1' '"Infinity"'
red "float32 SSQ [Infinity,NaN] = NaN" ReduceSumSquare float32 '"Infinity","NaN"' '"NaN"'
red "float32 SSQ [Infinity,-Infinity] = Infinity" ReduceSumSquare float32 '"Infinity","-Infinity"' '"Infinity"'
expect_reduce "float32 noop L2 [-Infinity,NaN,-2] -> [Infinity,NaN,2]" \
  '{"op":"ReduceL2","noop_with_empty_axes":1,"input":{"dtype":"float32","shape":[3],"data":["-Infinity","NaN",-2]}}' \
  '{"op":"ReduceL2","opset":18,"op_version":18,"output":{"dtype":"float32","shape":[3],"data":["Infinity","NaN",2]}}'
expect_reduce "dtype alias \"float\" answers float32" \
  "$(r ReduceL2 float 2 '' '6,8')" "$(a ReduceL2 float32 10)"

# ---- float64
red "float64 ReduceL2 [0.3,0.4] = 0.5" ReduceL2 float64 '0.3,0.4' 0.5 rel=1e-15
red "float64 ReduceSumSquare [0.5,1.5] = 2.5" ReduceSumSquare float64 '0.5,1.5' 2.5
red "float64 L2 [1e200,1e200] does not overflow" ReduceL2 float64 '1e200,1e200' 1.414213562373095e200 rel=1e-15
red "float64 L2 [1e-200,1e-200] does not underflow" ReduceL2 float64 '1e-200,1e-200' 1.414213562373095e-200 rel=1e-15
red "float64 SSQ [1e200] = Infinity" ReduceSumSquare float64 '1e200' '"Infinity"'
red "float64 SSQ [1e-200] = 0" ReduceSumSquare float64 '1e-200' 0
# A JSON number beyond float64's range (1e400) cannot be represented by the
# JSON parser (jansson), so the documented answer is 400 BAD_JSON; clients
# send "Infinity" instead (docs/http-api.md, Elements).
expect_error "json_number_beyond_float64: float64 1e400 is BAD_JSON" "$(r ReduceL2 float64 1 '' '1e400')" 400 BAD_JSON
expect_error "json_number_beyond_float64: float32 -1e400 is BAD_JSON" "$(r ReduceL2 float32 2 '' '-1e400,1')" 400 BAD_JSON
red "float64 \"Infinity\" is the way to send inf" ReduceL2 float64 '"Infinity"' '"Infinity"'
red "float64 L2 [NaN] = NaN" ReduceL2 float64 '"NaN"' '"NaN"'
red "float64 L2 [Infinity,NaN] = NaN" ReduceL2 float64 '"Infinity","NaN"' '"NaN"'
expect_reduce "dtype alias \"double\" answers float64" \
  "$(r ReduceSumSquare double 2 '' '0.5,1.5')" "$(a ReduceSumSquare float64 2.5)"
post "$(r ReduceL2 float64 1 '' '0.1')"
check "float64 shortest form: L2 [0.1] is written 0.1" grep -Eq '"data": *\[ *0\.1 *\]' "$B"

# ---- float16 (expected values are exact; jtool rounds them to float16)
red "float16 L2 [300,400] = 500 (wide accumulation)" ReduceL2 float16 '300,400' 500 float16
red "float16 SSQ [300,400] = 250000 -> Infinity" ReduceSumSquare float16 '300,400' '"Infinity"'
red "float16 input 300000 is inf" ReduceL2 float16 '300000' '"Infinity"'
red "float16 input rounds (1+2^-11 -> 1, so SSQ = 1)" ReduceSumSquare float16 '1.00048828125' 1
red "float16 input 2049 -> 2048" ReduceL2 float16 '2049' 2048
red "float16 input 2051 -> 2052" ReduceL2 float16 '2051' 2052
red "float16 L2 [1,1] = sqrt 2 -> 1.4140625" ReduceL2 float16 '1,1' 1.4142135623730951 float16
post "$(r ReduceL2 float16 2 '' '1,1')"
check "float16 shortest form: sqrt 2 is written 1.414" grep -Eq '"data": *\[ *1\.414 *\]' "$B"
# 0.1 -> 0.0999755859375 (1638/16384); its square 0.009995117783546448 rounds once
red "float16 SSQ [0.1] = 0.0999755859375^2 rounded" ReduceSumSquare float16 '0.1' 0.009995117783546448 float16
# 0.001 -> 0.0010004043579101562; square 1.000808879325632e-06 -> subnormal 17*2^-24
red "float16 subnormal result" ReduceSumSquare float16 '0.001' 1.0132789611816406e-06 float16
ONES=$(printf '1,%.0s' $(seq 3000))1
red "float16 SSQ of 3001 ones = 3001 -> 3000 (rounded once)" ReduceSumSquare float16 "$ONES" 3000
red "float16 L2 [NaN,1] = NaN" ReduceL2 float16 '"NaN",1' '"NaN"'
red "float16 L2 [-Infinity] = Infinity" ReduceL2 float16 '"-Infinity"' '"Infinity"'
for o in 1 11 13 18; do
  expect_reduce "float16 at opset $o" \
    "$(r ReduceSumSquare float16 2 '"opset":'$o '1.5,2')" "$(a ReduceSumSquare float16 6.25 $o)"
done

# ---- bfloat16 (versions 13 and 18 only)
red "bfloat16 L2 [3,4] = 5" ReduceL2 bfloat16 '3,4' 5
red "bfloat16 input rounds (1+2^-8 -> 1, so SSQ = 1)" ReduceSumSquare bfloat16 '1.00390625' 1
red "bfloat16 SSQ [300,400] = 250000 -> 249856" ReduceSumSquare bfloat16 '300,400' 250000 bfloat16
red "bfloat16 L2 [1e20,1e20] = sqrt(2)e20 (wide accumulation)" ReduceL2 bfloat16 '1e20,1e20' 1.4142135623730951e20 bfloat16
red "bfloat16 SSQ [1e20] = 1e40 -> Infinity" ReduceSumSquare bfloat16 '1e20' '"Infinity"'
red "bfloat16 input 1e39 is inf" ReduceL2 bfloat16 '1e39' '"Infinity"'
red "bfloat16 L2 [NaN] = NaN" ReduceL2 bfloat16 '"NaN"' '"NaN"'
for o in 13 17 18 21; do
  expect_reduce "bfloat16 at opset $o" \
    "$(r ReduceSumSquare bfloat16 2 '"opset":'$o '1.5,2')" "$(a ReduceSumSquare bfloat16 6.25 $o)"
done
for o in 1 11 12; do
  expect_error "bfloat16 at opset $o -> DTYPE_NOT_IN_VERSION" \
    "$(r ReduceSumSquare bfloat16 1 '"opset":'$o 1)" 400 DTYPE_NOT_IN_VERSION
done

# ---- int32
red "int32 SSQ [3,-4] = 25" ReduceSumSquare int32 '3,-4' 25
red "int32 L2 [2,2] = 2 (sqrt 8 truncated)" ReduceL2 int32 '2,2' 2
red "int32 L2 [2,3] = 3 (sqrt 13)" ReduceL2 int32 '2,3' 3
red "int32 L2 [5,5] = 7 (sqrt 50)" ReduceL2 int32 '5,5' 7
red "int32 L2 [-7] = 7" ReduceL2 int32 '-7' 7
red "int32 L2 [46341,46341] = 65536 (sum exceeds int32, result fits)" ReduceL2 int32 '46341,46341' 65536
red "int32 L2 [2147483647] = 2147483647" ReduceL2 int32 '2147483647' 2147483647
red "int32 SSQ [46340] = 2147395600" ReduceSumSquare int32 '46340' 2147395600
red "int32 elements as decimal strings and integral numbers" ReduceSumSquare int32 '"-3",4.0,1e1' 125
# 50000^2 * 2 = 5000000000 > 2^31-1
expect_error "int32 SSQ [50000,50000] overflow -> 422 INTEGER_OVERFLOW" "$(r ReduceSumSquare int32 2 '' '50000,50000')" 422 INTEGER_OVERFLOW
check "INTEGER_OVERFLOW message names the exact value 5000000000" grep -q 5000000000 "$B"
expect_error "int32 SSQ [46341] (2147488281) -> 422" "$(r ReduceSumSquare int32 1 '' 46341)" 422 INTEGER_OVERFLOW
expect_error "int32 overflow \"error\" explicit -> 422" "$(r ReduceSumSquare int32 2 '"overflow":"error"' '50000,50000')" 422 INTEGER_OVERFLOW
red "int32 overflow saturate -> 2147483647" ReduceSumSquare int32 '50000,50000' 2147483647 '' '"overflow":"saturate"'
red "int32 overflow wrap -> 5000000000 - 2^32 = 705032704" ReduceSumSquare int32 '50000,50000' 705032704 '' '"overflow":"wrap"'
# noop |x| of INT32_MIN is 2147483648, which does not fit
expect_error "int32 noop L2 [-2147483648] -> 422" \
  '{"op":"ReduceL2","noop_with_empty_axes":1,"input":{"dtype":"int32","shape":[1],"data":[-2147483648]}}' 422 INTEGER_OVERFLOW
expect_reduce "int32 noop L2 [-2147483648] saturate -> 2147483647" \
  '{"op":"ReduceL2","noop_with_empty_axes":1,"overflow":"saturate","input":{"dtype":"int32","shape":[2],"data":[-2147483648,-5]}}' \
  '{"op":"ReduceL2","opset":18,"op_version":18,"output":{"dtype":"int32","shape":[2],"data":[2147483647,5]}}'
expect_reduce "int32 noop L2 [-2147483648] wrap -> -2147483648" \
  '{"op":"ReduceL2","noop_with_empty_axes":1,"overflow":"wrap","input":{"dtype":"int32","shape":[1],"data":[-2147483648]}}' \
  '{"op":"ReduceL2","opset":18,"op_version":18,"output":{"dtype":"int32","shape":[1],"data":[-2147483648]}}'
expect_reduce "int32 noop SSQ = x^2" \
  '{"op":"ReduceSumSquare","noop_with_empty_axes":1,"input":{"dtype":"int32","shape":[3],"data":[-3,5,7]}}' \
  '{"op":"ReduceSumSquare","opset":18,"op_version":18,"output":{"dtype":"int32","shape":[3],"data":[9,25,49]}}'
for bad in 1.5 2147483648 -2147483649 1099511627776 '"abc"' true null '"1.5"' '{}'; do
  expect_error "int32 element $bad -> INVALID_ELEMENT" "$(r ReduceL2 int32 2 '' "1,$bad")" 400 INVALID_ELEMENT
done

# ---- int64
red "int64 SSQ [3,-4] = 25" ReduceSumSquare int64 '3,-4' 25
red "int64 L2 [9223372036854775807] = itself (exact)" ReduceL2 int64 '9223372036854775807' 9223372036854775807
# 3037000493^2 + 72565^2 + 28431^2 = 3037000494^2 - 1, so the floor of the
# root is 3037000493; a double sqrt would say 3037000494.
red "int64 L2 exact integer root (3037000494^2 - 1 -> 3037000493)" ReduceL2 int64 '3037000493,72565,28431' 3037000493
# 2 * 3037000499^2 > 2^63 (wide sum), floor(3037000499 * sqrt 2) = 4294967294
red "int64 L2 [3037000499,3037000499] = 4294967294 (wide sum)" ReduceL2 int64 '3037000499,3037000499' 4294967294
red "int64 elements as decimal strings" ReduceSumSquare int64 '"-3","4"' 25
# 3037000500^2 + 1 = 9223372037000250001 > 2^63-1; wrapped: - 2^64
expect_error "int64 SSQ [3037000500,1] overflow -> 422" "$(r ReduceSumSquare int64 2 '' '3037000500,1')" 422 INTEGER_OVERFLOW
red "int64 overflow saturate -> 9223372036854775807" ReduceSumSquare int64 '3037000500,1' 9223372036854775807 '' '"overflow":"saturate"'
red "int64 overflow wrap -> -9223372036709301615" ReduceSumSquare int64 '3037000500,1' -9223372036709301615 '' '"overflow":"wrap"'
expect_error "int64 noop L2 [INT64_MIN] -> 422" \
  '{"op":"ReduceL2","noop_with_empty_axes":1,"input":{"dtype":"int64","shape":[1],"data":["-9223372036854775808"]}}' 422 INTEGER_OVERFLOW
for bad in 1.5 '"9223372036854775808"' '"-9223372036854775809"' '"abc"' true null; do
  expect_error "int64 element $bad -> INVALID_ELEMENT" "$(r ReduceL2 int64 2 '' "1,$bad")" 400 INVALID_ELEMENT
done

# ---- uint32
red "uint32 SSQ [65535] = 4294836225" ReduceSumSquare uint32 '65535' 4294836225
red "uint32 L2 [4294967295] = itself" ReduceL2 uint32 '4294967295' 4294967295
expect_error "uint32 SSQ [70000,1] overflow -> 422" "$(r ReduceSumSquare uint32 2 '' '70000,1')" 422 INTEGER_OVERFLOW
red "uint32 saturate -> 4294967295" ReduceSumSquare uint32 '70000,1' 4294967295 '' '"overflow":"saturate"'
red "uint32 wrap -> 4900000001 - 2^32 = 605032705" ReduceSumSquare uint32 '70000,1' 605032705 '' '"overflow":"wrap"'
for bad in -1 4294967296 1.5 '"abc"'; do
  expect_error "uint32 element $bad -> INVALID_ELEMENT" "$(r ReduceL2 uint32 2 '' "1,$bad")" 400 INVALID_ELEMENT
done

# ---- uint64 (above 2^63-1 as strings, in and out)
red "uint64 L2 [\"18446744073709551615\"] = itself, as a string" ReduceL2 uint64 '"18446744073709551615"' '"18446744073709551615"'
red "uint64 L2 [2^63] = \"9223372036854775808\" (string)" ReduceL2 uint64 '"9223372036854775808"' '"9223372036854775808"'
red "uint64 L2 [2^63-1] stays a number" ReduceL2 uint64 '9223372036854775807' 9223372036854775807
# (2^32-1)^2 = 2^64 - 2^33 + 1
red "uint64 SSQ [4294967295] = \"18446744065119617025\"" ReduceSumSquare uint64 '4294967295' '"18446744065119617025"'
red "uint64 SSQ [3,4] = 25 (a number)" ReduceSumSquare uint64 '3,"4"' 25
expect_error "uint64 SSQ [2^32] = 2^64 overflow -> 422" "$(r ReduceSumSquare uint64 1 '' 4294967296)" 422 INTEGER_OVERFLOW
red "uint64 saturate -> \"18446744073709551615\"" ReduceSumSquare uint64 '4294967296' '"18446744073709551615"' '' '"overflow":"saturate"'
red "uint64 wrap -> 0" ReduceSumSquare uint64 '4294967296,0' 0 '' '"overflow":"wrap"'
for bad in -1 '"-1"' '"18446744073709551616"' 1.5 '"abc"'; do
  expect_error "uint64 element $bad -> INVALID_ELEMENT" "$(r ReduceL2 uint64 2 '' "1,$bad")" 400 INVALID_ELEMENT
done

# ---- bad float elements
for dt in float32 float64 float16 bfloat16; do
  for bad in '"abc"' true null '{}'; do
    expect_error "$dt element $bad -> INVALID_ELEMENT" "$(r ReduceL2 $dt 2 '' "1,$bad")" 400 INVALID_ELEMENT
  done
done
# the message names the flat element index (5 here, 3 for the nested one)
expect_error "INVALID_ELEMENT at flat index 5" "$(r ReduceL2 int32 6 '' '0,0,0,0,0,1.5')" 400 INVALID_ELEMENT
check "INVALID_ELEMENT message names index 5" grep -Eq '"message": *"[^"]*[^0-9.]5([^0-9.][^"]*)?"' "$B"
expect_error "INVALID_ELEMENT in nested data at flat index 3" \
  '{"op":"ReduceL2","input":{"dtype":"int32","data":[[0,0],[0,"x"]]}}' 400 INVALID_ELEMENT
check "nested INVALID_ELEMENT message names index 3" grep -Eq '"message": *"[^"]*[^0-9.]3([^0-9.][^"]*)?"' "$B"

finish
