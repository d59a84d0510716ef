#!/bin/bash
# t_binary.sh - binary tensors: raw little-endian (application/octet-stream)
# and NumPy .npy (application/x-npy) bodies and responses, Accept
# negotiation, every bad input, client disconnects, streaming with bounded
# memory, and bit-identity of the buffered and streamed paths.
#
# Needs Debian's python3-numpy (/usr/bin/python3; scripts/bootstrap.sh,
# step: Debian packages, installs it) to write real .npy files and to np.load the responses.
. "$(dirname "$0")/lib.sh"

PY=${NUMPY_PYTHON:-/usr/bin/python3}
NPYTOOL="$here/npytool.py"
TGEN=${TGEN:-$top_builddir/tests/integration/tgen}
if ! "$PY" -c 'import numpy' 2>/dev/null; then
  fail "python3-numpy is installed ($PY)" "missing python3-numpy: run scripts/bootstrap.sh (step: Debian packages)"
  finish; exit 1
fi
if [ ! -x "$TGEN" ]; then
  fail "tgen is built" "$TGEN (make check builds it)"
  finish; exit 1
fi
use_daemon

OCT=application/octet-stream NPY=application/x-npy

# braw QUERY FILE [CURL ARGS]: POST FILE as raw with the query string.
braw() {
  local q=$1 f=$2; shift 2
  http POST "/v1/reduce?$q" -H "Content-Type: $OCT" --data-binary @"$f" "$@"
}
bnpy() {
  local q=$1 f=$2; shift 2
  http POST "/v1/reduce?$q" -H "Content-Type: $NPY" --data-binary @"$f" "$@"
}
msg_has() { jget error.message | grep -qF -- "$1"; }

# ---------------------------------------------------------------- matrix
# Every dtype x byte order x order flag x both formats x every Accept,
# checked by numpy against exact expectations (npytool.py).
CASES=$TMP/cases
mkdir -p "$CASES"
if "$PY" "$NPYTOOL" gen "$CASES" 2>"$TMP/gen.err"; then
  while IFS='|' read -r name ct q acc; do
    args=(-H "Content-Type: $ct")
    [ -n "$acc" ] && args+=(-H "Accept: $acc")
    curl -sS --max-time 60 -o "$CASES/$name.resp" -D "$CASES/$name.hdr" \
      "${args[@]}" --data-binary @"$CASES/$name.body" \
      "$URL/v1/reduce?$q" 2>>"$TMP/curl.err" </dev/null || : >"$CASES/$name.hdr"
  done <"$CASES/manifest"
  "$PY" "$NPYTOOL" verify "$CASES" >"$TMP/verify.out" 2>&1
  while read -r word rest; do
    case $word in
      PASS) ok "exact result: $rest" ;;
      FAIL) fail "exact result: ${rest%%:*}" "${rest#*: }" ;;
      *) fail "npytool verify output" "$word $rest" ;;
    esac
  done <"$TMP/verify.out"
else
  fail "npytool.py gen" "$(head -c 400 "$TMP/gen.err")"
fi

# ---------------------------------------------------------------- headers
printf '\x00\x00\x40\x40\x00\x00\x80\x40' >"$TMP/v34"   # float32 [3, 4]
braw 'op=ReduceL2&dtype=float32&shape=2' "$TMP/v34"
check "raw [3,4] L2 -> 200 raw 5.0 (0x40a00000)" eval '[ "$ST" = 200 ] && [ "$(od -An -tx1 "$B" | tr -d " \n")" = 0000a040 ]'
check "raw response: Content-Type application/octet-stream" test "$(hdr Content-Type)" = "$OCT"
check "raw response: Tensor-Dtype float32" test "$(hdr Tensor-Dtype)" = float32
check "raw response: Tensor-Shape [1] (keepdims)" test "$(hdr Tensor-Shape)" = "[1]"
check "raw response: Content-Length 4" test "$(hdr Content-Length)" = 4
check "raw response: X-Request-Id" test -n "$(hdr X-Request-Id)"
braw 'op=ReduceL2&dtype=float32&shape=2&keepdims=0' "$TMP/v34"
check "raw, keepdims=0: Tensor-Shape [] (rank 0)" eval '[ "$ST" = 200 ] && [ "$(hdr Tensor-Shape)" = "[]" ]'
braw 'op=ReduceL2&dtype=float32&shape=2&keepdims=0' "$TMP/v34" -H 'Accept: application/json'
check "raw request, Accept json -> JSON {5}" "$JTOOL" eq "$B" '{"op":"ReduceL2","opset":18,"op_version":18,"output":{"dtype":"float32","shape":[],"data":[5]}}'
# percent-encoded query, '+' as space is not a digit
braw 'op=Reduce%4C2&dtype=float%33%32&shape=2&axes=%2D1&keepdims=false' "$TMP/v34" -H 'Accept: application/json'
check "percent-decoded query (op=Reduce%4C2, axes=%2D1)" "$JTOOL" eq "$B" '{"op":"ReduceL2","opset":18,"op_version":18,"output":{"dtype":"float32","shape":[],"data":[5]}}'
# opset 13 resolves; shape= is rank 0
printf '\x03\x00\x00\x00' >"$TMP/i3"
braw 'op=ReduceSumSquare&opset=17&dtype=int32&shape=' "$TMP/i3" -H 'Accept: application/json'
check "raw rank 0 (shape=), opset 17 -> op_version 13, 9" "$JTOOL" eq "$B" '{"op":"ReduceSumSquare","opset":17,"op_version":13,"output":{"dtype":"int32","shape":[],"data":[9]}}'
# empty tensor: zero bytes
braw 'op=ReduceSumSquare&dtype=float64&shape=0,3&axes=0' /dev/null -H 'Accept: application/json'
check "raw empty [0,3] over axis 0 -> [[0,0,0]]" "$JTOOL" eq "$B" '{"op":"ReduceSumSquare","opset":18,"op_version":18,"output":{"dtype":"float64","shape":[1,3],"data":[0,0,0]}}'
# bfloat16 raw: 1.5 = 0x3fc0, 2 = 0x4000 -> 2.25 + 4 = 6.25 = 0x40c8
printf '\xc0\x3f\x00\x40' >"$TMP/bf"
braw 'op=ReduceSumSquare&dtype=bfloat16&shape=2' "$TMP/bf"
check "raw bfloat16 -> raw 6.25 (0x40c8)" eval '[ "$ST" = 200 ] && [ "$(od -An -tx1 "$B" | tr -d " \n")" = c840 ] && [ "$(hdr Tensor-Dtype)" = bfloat16 ]'
braw 'op=ReduceSumSquare&dtype=bfloat16&shape=2' "$TMP/bf" -H "Accept: $NPY"
expect_error_body "raw bfloat16, Accept x-npy only -> 406" 406 NOT_ACCEPTABLE
check "406 for bfloat16 points to raw and JSON" eval 'msg_has application/octet-stream && msg_has application/json'
post '{"op":"ReduceSumSquare","input":{"dtype":"bfloat16","data":[1.5,2]}}' -H "Accept: $NPY"
expect_error_body "JSON bfloat16, Accept x-npy -> 406" 406 NOT_ACCEPTABLE
post '{"op":"ReduceSumSquare","input":{"dtype":"bfloat16","data":[1.5,2]}}' -H "Accept: $NPY, application/json;q=0.1"
check "JSON bfloat16, Accept x-npy then json;q=0.1 -> JSON" eval '[ "$ST" = 200 ] && [ "$(hdr Content-Type)" = application/json ]'
post '{"op":"ReduceSumSquare","input":{"dtype":"float32","data":[3,4]}}' -H "Accept: $NPY"
cp "$B" "$TMP/resp.npy"
check "JSON request, Accept x-npy -> np.load gives float32 [1] [25.]" eval '[ "$ST" = 200 ] && [ "$("$PY" "$NPYTOOL" load "$TMP/resp.npy")" = "<f4|[1]|25.0" ]'
for acc in text/html 'image/*' 'application/json;q=0' 'application/xml, text/*'; do
  post '{"op":"ReduceL2","input":{"dtype":"float32","data":[3,4]}}' -H "Accept: $acc"
  expect_error_body "Accept '$acc' -> 406 NOT_ACCEPTABLE" 406 NOT_ACCEPTABLE
  braw 'op=ReduceL2&dtype=float32&shape=2' "$TMP/v34" -H "Accept: $acc"
  expect_error_body "raw, Accept '$acc' -> 406 (before the body)" 406 NOT_ACCEPTABLE
done

# ---------------------------------------------------------------- cross-format
# The same random float tensor through JSON, raw and .npy (C and Fortran,
# big-endian): identical JSON answers.
"$PY" - "$TMP" <<'EOF'
import json, sys, numpy as np
d = sys.argv[1]
a = np.random.default_rng(7).standard_normal((6, 5, 7)).astype("<f4")
json.dump({"op": "ReduceL2", "axes": [0, 2], "keepdims": 0,
           "input": {"dtype": "float32", "shape": list(a.shape),
                     "data": [float(x) for x in a.ravel()]}},
          open(d + "/x.json", "w"))
a.tofile(d + "/x.raw")
np.save(d + "/x.npy", a)
np.save(d + "/xf.npy", np.asfortranarray(a.astype(">f4")))
EOF
http POST /v1/reduce -H 'Content-Type: application/json' --data-binary @"$TMP/x.json"
cp "$B" "$TMP/x.json.out"
check "cross-format: JSON request answers 200" test "$ST" = 200
braw 'op=ReduceL2&axes=0,2&keepdims=0&dtype=float32&shape=6,5,7' "$TMP/x.raw" -H 'Accept: application/json'
check "cross-format: raw == JSON" "$JTOOL" eq "$B" "$(cat "$TMP/x.json.out")"
bnpy 'op=ReduceL2&axes=0,2&keepdims=0' "$TMP/x.npy" -H 'Accept: application/json'
check "cross-format: .npy == JSON" "$JTOOL" eq "$B" "$(cat "$TMP/x.json.out")"
bnpy 'op=ReduceL2&axes=0,-1&keepdims=0' "$TMP/xf.npy" -H 'Accept: application/json'
check "cross-format: .npy big-endian Fortran == JSON" "$JTOOL" eq "$B" "$(cat "$TMP/x.json.out")"

# ---------------------------------------------------------------- bad input
printf '\x00\x00\x80\x3f\x00\x00\x00\x40\x00\x00\x40\x40' >"$TMP/f3"   # 12 bytes
braw 'op=ReduceL2&dtype=float32&shape=4' "$TMP/f3"
expect_error_body "raw: 12 bytes for shape [4] -> 400 INPUT_LENGTH" 400 INPUT_LENGTH
check "wrong length message states expected 16 and received 12" eval 'msg_has 16 && msg_has 12'
braw 'op=ReduceL2&dtype=float32&shape=2' "$TMP/f3"
expect_error_body "raw: 12 bytes for shape [2] -> 400 INPUT_LENGTH" 400 INPUT_LENGTH
braw 'op=ReduceL2&dtype=float32&shape=4' "$TMP/f3" -H 'Transfer-Encoding: chunked'
expect_error_body "raw chunked: 12 bytes for shape [4] -> 400 INPUT_LENGTH" 400 INPUT_LENGTH
check "chunked wrong length message states expected 16 and received 12" eval 'msg_has 16 && msg_has "received 12"'
braw 'op=ReduceL2&dtype=float32&shape=2' "$TMP/f3" -H 'Transfer-Encoding: chunked'
expect_error_body "raw chunked: 12 bytes for shape [2] -> 400 INPUT_LENGTH" 400 INPUT_LENGTH
check "chunked too-long message states expected 8 and received 12" eval 'msg_has "needs 8" && msg_has "received 12"'
printf '\x00\x00\x80\x3f\x00\x00\x00\x40' >"$TMP/f2"
braw 'op=ReduceL2&dtype=float32&shape=2' "$TMP/f2" -H 'Transfer-Encoding: chunked' -H 'Accept: application/json'
check "raw chunked, right length -> 200 (sqrt 5)" "$JTOOL" eq "$B" '{"op":"ReduceL2","opset":18,"op_version":18,"output":{"dtype":"float32","shape":[1],"data":[2.236068]}}'

while IFS='|' read -r q status code why; do
  braw "$q" "$TMP/f2"
  expect_error_body "raw ?$q -> $status $code" "$status" "$code"
  [ -n "$why" ] && check "  message names: $why" msg_has "$why"
done <<'EOF'
op=ReduceL2&dtype=float32&shape=2&axes=0,x|400|INVALID_FIELD|query parameter axes = "0,x"
op=ReduceL2&dtype=float32&shape=2&axes=1|400|AXIS_OUT_OF_RANGE|
op=ReduceL2&dtype=float32&shape=2&axes=0,0|400|DUPLICATE_AXIS|
op=ReduceL2&dtype=float32&shape=2&bogus=1|400|UNKNOWN_FIELD|bogus
op=ReduceL2&dtype=float32&shape=2&op=ReduceL2|400|INVALID_FIELD|more than once
dtype=float32&shape=2|400|MISSING_FIELD|op
op=ReduceL2&shape=2|400|MISSING_FIELD|dtype
op=ReduceL2&dtype=float32|400|MISSING_FIELD|shape
op=ReduceMedian&dtype=float32&shape=2|400|UNKNOWN_OP|ReduceMedian
op=ReduceL2&dtype=int4&shape=2|400|UNSUPPORTED_DTYPE|int4
op=ReduceL2&dtype=bfloat16&shape=2&opset=11|400|DTYPE_NOT_IN_VERSION|
op=ReduceL2&dtype=float32&shape=2&opset=0|400|INVALID_OPSET|
op=ReduceL2&dtype=float32&shape=2&keepdims=2|400|INVALID_KEEPDIMS|
op=ReduceL2&dtype=float32&shape=2&noop_with_empty_axes=1&opset=13|400|NOOP_NOT_IN_VERSION|
op=ReduceL2&dtype=float32&shape=2&overflow=clip|400|INVALID_OVERFLOW_POLICY|clip
op=ReduceL2&dtype=float32&shape=-2|400|INVALID_DIM|
op=ReduceL2&dtype=float32&shape=2&opset=abc|400|INVALID_FIELD|query parameter opset
op=Reduce%ZZ&dtype=float32&shape=2|400|INVALID_FIELD|percent
op=ReduceL2&dtype=float32&shape=100000,100000,100000|413|BODY_TOO_LARGE|--max-body
op=ReduceL2&dtype=float32&shape=0,4000000000&axes=0|413|TENSOR_TOO_LARGE|empty
EOF

# A declared size above --max-body is refused before the body is sent:
# headers only (the body never comes), and the 413 arrives.
raw_request() {
  ( trap '' PIPE
    exec 3<>"/dev/tcp/127.0.0.1/$PORT" || exit 1
    printf '%b' "$1" >&3
    timeout 20 cat <&3 )
}
if [ -z "${REDUCED_TEST_URL:-}" ]; then
  raw_request 'POST /v1/reduce?op=ReduceL2&dtype=float64&shape=100000,100000 HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\nContent-Length: 8000\r\nConnection: close\r\n\r\n' >"$TMP/raw" 2>/dev/null
  check "huge declared shape, body not sent -> 413 BODY_TOO_LARGE at once" eval 'head -1 "$TMP/raw" | grep -q " 413 " && grep -q BODY_TOO_LARGE "$TMP/raw"'
  raw_request 'POST /v1/reduce?op=ReduceL2&dtype=float32&shape=4 HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\nContent-Length: 12\r\nConnection: close\r\n\r\n' >"$TMP/raw" 2>/dev/null
  check "Content-Length 12 for 16 declared bytes -> 400 before the body" eval 'head -1 "$TMP/raw" | grep -q " 400 " && grep -q INPUT_LENGTH "$TMP/raw"'
fi

# .npy hostile inputs: crafted by hand, and by numpy/pickle.
"$PY" - "$TMP" <<'EOF'
import io, pickle, struct, sys, numpy as np
d = sys.argv[1]
def w(name, b): open(d + "/" + name, "wb").write(b)
def hdr(dic, major=1, hlen=None):
    body = dic.encode("latin-1")
    pre = 10 if major == 1 else 12
    total = (pre + len(body) + 1 + 63) // 64 * 64
    body = body + b" " * (total - pre - len(body) - 1) + b"\n"
    n = len(body) if hlen is None else hlen
    ln = struct.pack("<H", n) if major == 1 else struct.pack("<I", n)
    return b"\x93NUMPY" + bytes([major, 0]) + ln + body
good = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }"
data = np.array([3, 4], "<f4").tobytes()
w("ok.npy", hdr(good) + data)
w("ok3.npy", hdr(good, 3) + data)
w("lie_big.npy", hdr(good.replace("(2,)", "(1000,)")) + data)
w("lie_small.npy", hdr(good.replace("(2,)", "(1,)")) + data)
w("trunc_data.npy", hdr(good) + data[:5])
w("trunc_hdr.npy", hdr(good)[:40])
w("trunc_prefix.npy", b"\x93NUM")
w("object.npy", hdr("{'descr': '|O', 'fortran_order': False, 'shape': (2,), }") + b"\x00" * 16)
buf = io.BytesIO(); np.save(buf, np.array([{"a": 1}, None], dtype=object), allow_pickle=True)
w("object_np.npy", buf.getvalue())
w("pickle.npy", pickle.dumps([1.0, 2.0]))
w("structured.npy", hdr("{'descr': [('a', '<f4'), ('b', '<i4')], 'fortran_order': False, 'shape': (2,), }") + b"\x00" * 16)
w("complex.npy", hdr("{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }") + b"\x00" * 16)
w("huge_hdr.npy", hdr(good, 2, hlen=0x7fffffff) + data)
w("version9.npy", b"\x93NUMPY\x09\x00" + hdr(good)[8:] + data)
w("nonascii.npy", hdr("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), '\u00e9t\u00e9': 1}") + data)
w("evil.npy", hdr("{'descr': __import__('os').system('touch " + d + "/pwned'), 'fortran_order': False, 'shape': (2,)}") + data)
w("badshape.npy", hdr("{'descr': '<f4', 'fortran_order': False, 'shape': (2), }") + data)
w("nonl.npy", hdr(good)[:-1] + b" " + data)
EOF
bnpy 'op=ReduceL2' "$TMP/ok.npy" -H 'Accept: application/json'
check "hand-made .npy v1.0 -> 5" eval '[ "$ST" = 200 ] && [ "$(jget output.data)" = "[5]" ]'
bnpy 'op=ReduceL2' "$TMP/ok3.npy" -H 'Accept: application/json'
check "hand-made .npy v3.0 -> 5" eval '[ "$ST" = 200 ] && [ "$(jget output.data)" = "[5]" ]'
while IFS='|' read -r f status code why; do
  bnpy 'op=ReduceL2' "$TMP/$f"
  expect_error_body ".npy $f -> $status $code" "$status" "$code"
  [ -n "$why" ] && check "  message names: $why" msg_has "$why"
done <<'EOF'
lie_big.npy|400|INPUT_LENGTH|4000
lie_small.npy|400|INPUT_LENGTH|
trunc_data.npy|400|INPUT_LENGTH|
trunc_hdr.npy|400|BAD_NPY|truncated
trunc_prefix.npy|400|BAD_NPY|truncated
object.npy|400|UNSUPPORTED_DTYPE|object
object_np.npy|400|UNSUPPORTED_DTYPE|object
pickle.npy|400|BAD_NPY|not a .npy file
structured.npy|400|UNSUPPORTED_DTYPE|structured
complex.npy|400|UNSUPPORTED_DTYPE|<c8
huge_hdr.npy|400|BAD_NPY|limit
version9.npy|400|BAD_NPY|9.0
nonascii.npy|400|BAD_NPY|non-ASCII
evil.npy|400|BAD_NPY|descr
badshape.npy|400|BAD_NPY|trailing comma
nonl.npy|400|BAD_NPY|newline
EOF
check "nothing in a .npy header was executed" test ! -e "$TMP/pwned"
bnpy 'op=ReduceL2' "$TMP/trunc_data.npy" -H 'Transfer-Encoding: chunked'
expect_error_body ".npy chunked, truncated data -> 400 INPUT_LENGTH" 400 INPUT_LENGTH
check "  states expected 8 and received 5" eval 'msg_has "needs 8" && msg_has "received 5"'
bnpy 'op=ReduceL2&dtype=float32' "$TMP/ok.npy"
expect_error_body ".npy with dtype= in the query -> 400 UNKNOWN_FIELD" 400 UNKNOWN_FIELD
bnpy 'op=ReduceL2&shape=2' "$TMP/ok.npy"
expect_error_body ".npy with shape= in the query -> 400 UNKNOWN_FIELD" 400 UNKNOWN_FIELD
bnpy 'op=ReduceL2&axes=1' "$TMP/ok.npy"
expect_error_body ".npy axes out of range for its shape -> 400 AXIS_OUT_OF_RANGE" 400 AXIS_OUT_OF_RANGE
http POST '/v1/reduce?op=ReduceL2' -H 'Content-Type: application/x-npy-ish' --data-binary @"$TMP/ok.npy"
expect_error_body "Content-Type application/x-npy-ish -> 415" 415 UNSUPPORTED_MEDIA_TYPE
check "daemon healthy after the bad inputs" healthy

# ---------------------------------------------------------------- own daemons
if need_own_daemon "disconnects, streaming memory, buffered == streamed"; then
  # Disconnects mid-body on both paths; --max-pending 1 proves the slot
  # comes back, /healthz that the daemon lives, the ASan build that nothing
  # leaks (the log is checked after a clean exit).
  # --timeout 2: libmicrohttpd 0.9.75 (edge-triggered epoll) may not notice
  # a FIN that arrives with the last bytes it reads; such a connection ends
  # at the idle timeout, which must then free it like any disconnect.
  start_daemon --max-pending 1 --buffer-max 65536 --max-body 1073741824 \
    --timeout 2 || fail "daemon with --max-pending 1 starts"
  cut_upload() { # cut_upload QUERY DECLARED SENT
    ( trap '' PIPE
      exec 3<>"/dev/tcp/127.0.0.1/$PORT" || exit 1
      printf 'POST /v1/reduce?%s HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\nContent-Length: %s\r\n\r\n' "$1" "$2" >&3
      head -c "$3" /dev/zero >&3
      exec 3>&- ) 2>/dev/null
  }
  cut_upload 'op=ReduceL2&dtype=float32&shape=1024' 4096 1000            # buffered
  cut_upload 'op=ReduceL2&dtype=float32&shape=67108864' 268435456 30000000   # streamed
  cut_upload 'op=ReduceL2&dtype=float32&shape=67108864' 268435456 12582912   # 3 buffers
  ( trap '' PIPE
    exec 3<>"/dev/tcp/127.0.0.1/$PORT" || exit 1
    printf 'POST /v1/reduce?op=ReduceL2 HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-npy\r\nContent-Length: 100000\r\n\r\n\x93NUMPY\x01\x00' >&3
    exec 3>&- ) 2>/dev/null
  poll 20 eval '[ "$(grep -c "method=POST" "$DDIR/log")" -ge 4 ]'
  check "4 cut uploads logged as finished requests" eval '[ "$(grep -c "method=POST" "$DDIR/log")" -ge 4 ]'
  check "daemon healthy after clients disconnected mid-body" healthy
  "$TGEN" float32 1048576 mod17 >"$TMP/m17"
  braw 'op=ReduceSumSquare&dtype=float32&shape=1048576' "$TMP/m17" -H 'Accept: application/json'
  # sum over k < 2^20 of (k % 17)^2: 2^20 = 17*61680 + 16, sum_{v<17} v^2 = 1496,
  # sum_{v<16} v^2 = 1240 -> 61680*1496 + 1240 = 92274520 (float32: 92274520)
  check "pending slot given back: a streamed 4 MiB request -> 200, exact sum" eval '[ "$ST" = 200 ] && [ "$(jget output.data)" = "[92274520]" ]'
  stop_daemon TERM
  check "daemon exits 0 after the disconnects" test "$DRC" = 0
  check "no sanitizer report (leaks, memory errors) in the log" eval '! grep -q "Sanitizer" "$DDIR/log"'

  # Buffered and streamed paths: bit-identical (random data, NaN-free,
  # every layout), one daemon that buffers everything, one that streams.
  start_daemon --buffer-max 1073741824 --max-body 1073741824 || fail "buffering daemon starts"
  URL_BUF=$URL
  start_daemon --buffer-max 0 --max-body 1073741824 --log-level debug || fail "streaming daemon starts"
  URL_STR=$URL
  "$PY" - "$TMP" <<'EOF'
import sys, numpy as np
d = sys.argv[1]
rng = np.random.default_rng(99)
a = (rng.standard_normal((257, 129, 33)) * 2.0 ** rng.integers(-30, 30, (257, 129, 33))).astype("<f8")
np.save(d + "/bi_c.npy", a)
np.save(d + "/bi_f.npy", np.asfortranarray(a.astype(">f8")))
np.save(d + "/bi_h.npy", np.asfortranarray(a.astype("<f2")))
rng.integers(-2**31, 2**31, (300, 700), dtype=np.int32).astype("<i4").tofile(d + "/bi_i4.raw")
EOF
  "$TGEN" float32 3000000 rand 5 >"$TMP/bi_f4.raw"
  n=0
  while IFS='|' read -r ct f q; do
    n=$((n + 1))
    for which in BUF STR; do
      eval "u=\$URL_$which"
      curl -sS --max-time 120 -o "$TMP/bi.$which" -w '%{http_code}' -H "Content-Type: $ct" \
        --data-binary @"$TMP/$f" "$u/v1/reduce?$q" >"$TMP/bi.$which.st" 2>/dev/null </dev/null
    done
    check "buffered == streamed, bit for bit: $f ?$q" eval '[ "$(cat "$TMP/bi.BUF.st")" = 200 ] && [ "$(cat "$TMP/bi.STR.st")" = 200 ] && cmp -s "$TMP/bi.BUF" "$TMP/bi.STR"'
  done <<'EOF'
application/x-npy|bi_c.npy|op=ReduceL2&axes=1
application/x-npy|bi_c.npy|op=ReduceSumSquare&axes=0,2&keepdims=0
application/x-npy|bi_c.npy|op=ReduceL2
application/x-npy|bi_f.npy|op=ReduceL2&axes=0
application/x-npy|bi_f.npy|op=ReduceSumSquare&axes=-1,1
application/x-npy|bi_h.npy|op=ReduceL2&axes=2&keepdims=0
application/x-npy|bi_h.npy|op=ReduceL2&axes=&noop_with_empty_axes=1
application/octet-stream|bi_i4.raw|op=ReduceSumSquare&dtype=int32&shape=300,700&axes=1&overflow=wrap
application/octet-stream|bi_i4.raw|op=ReduceL2&dtype=int32&shape=300,700&axes=0&overflow=saturate
application/octet-stream|bi_i4.raw|op=ReduceL2&dtype=int64&shape=300,350&axes=0&overflow=wrap
application/octet-stream|bi_f4.raw|op=ReduceL2&dtype=float32&shape=3000000
application/octet-stream|bi_f4.raw|op=ReduceSumSquare&dtype=float32&shape=1000,3000&axes=0
EOF
  # Fortran-order bodies (bi_f, bi_h) are buffered whole to be reordered
  # (issue 13).
  nf=$(grep -c '^application/x-npy|bi_[fh].npy' "$0")
  check "the streaming daemon streamed every request but the $nf Fortran ones (log)" eval '[ "$(grep -c "streaming" "$DDIR/log")" = "$((n - nf))" ]'
  check "  ... and buffered the $nf Fortran ones to reorder them (log)" eval '[ "$(grep -c "Fortran order: buffering" "$DDIR/log")" = "$nf" ]'
  stop_daemon TERM
  check "streaming daemon: no sanitizer report" eval '! grep -q "Sanitizer" "$DDIR/log"'

  # Memory: a 1 GiB float64 tensor streamed (chunked, generated on the fly)
  # to a daemon whose --max-body allows 2 GiB; its peak RSS (VmHWM) must
  # grow by less than 64 MiB, i.e. far less than buffering would take.
  start_daemon --max-body 2147483648 || fail "daemon with --max-body 2 GiB starts"
  hwm() { awk '/^VmHWM/ { print $2 }' "/proc/$DPID/status"; }
  before=$(hwm)
  N=134217728   # 2^27 float64 = 1 GiB
  # sum over k < 2^27 of (k % 17)^2: 2^27 = 17*7895160 + 8, sum_{v<8} v^2 = 140
  # -> 7895160*1496 + 140 = 11811159500
  "$TGEN" float64 $N mod17 | curl -sS --max-time 600 -o "$B" -w '%{http_code}' \
    -H "Content-Type: $OCT" -H 'Accept: application/json' -T - -X POST \
    "$URL/v1/reduce?op=ReduceSumSquare&dtype=float64&shape=16384,8192&keepdims=0&axes=" >"$TMP/st" 2>"$TMP/curl.err"
  check "1 GiB float64 streamed (chunked) -> exact 11811159500" eval '[ "$(cat "$TMP/st")" = 200 ] && [ "$(jget output.data)" = "[11811159500]" ]'
  "$TGEN" float64 $N mod17 | curl -sS --max-time 600 -o "$B" -w '%{http_code}' \
    -H "Content-Type: $OCT" -H "Content-Length: $((N * 8))" -H 'Accept: application/json' -T - -X POST \
    "$URL/v1/reduce?op=ReduceSumSquare&dtype=float64&shape=16384,8192&axes=0&keepdims=0" >"$TMP/st" 2>"$TMP/curl.err"
  # column j of [16384, 8192]: values (i*8192 + j) % 17; 8192 % 17 = 15, so
  # the column runs through every residue (8192 = 17*481 + 15).
  # Column 0: sum over i of (15 i % 17)^2 with 16384 = 17*963 + 13 ->
  # 963*1496 + (0+225+169+121+81+49+25+9+1+256+196+144+100) = 1442024
  check "1 GiB float64 streamed (Content-Length), axis 0 -> 200" test "$(cat "$TMP/st")" = 200
  check "  column 0 = 1442024" eval '[ "$(jget output.data | tr -d "[" | cut -d, -f1)" = 1442024 ]'
  after=$(hwm)
  growth=$(( (after - before) / 1024 ))
  echo "# peak RSS (VmHWM): ${before} kB before, ${after} kB after 2 x 1 GiB streamed: +${growth} MiB"
  check "peak RSS grew by < 64 MiB streaming 2 x 1 GiB (+${growth} MiB)" test "$growth" -lt 64
  stop_daemon TERM
  check "daemon exits 0 after streaming" test "$DRC" = 0
fi

finish
