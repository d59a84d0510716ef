#!/bin/bash
# t_jsonstream.sh - /v1 JSON bodies decoded as they arrive (api/jsonpush.c
# through the stream of daemon/job.c): large bodies with a Content-Length,
# chunked ones and gzip ones must answer exactly what the buffered path
# answers for the same body (status and bytes), results and errors alike.
#   daemon A: the defaults (bodies of 64 KiB or more, chunked and
#     compressed ones stream into the push decoder; its debug log says so);
#   daemon B: --inline-max 1 MiB (its maximum), above every body here, so that a body with a
#     Content-Length is read whole and decoded by api_json_decode() (the
#     oracle);
#   every body goes to A with Content-Length, chunked, gzip and gzip
#     chunked, and to B with Content-Length: the answers must be the same
#     bytes.  The bodies: every numeric dtype, shortest and 17-digit
#     numbers, pretty-printed arrays, strings and nested lists among the
#     numbers, errors in the middle (syntax, out of range, shape), before
#     and after the array, truncated bodies;
#   splits: the decoder is fed in 128 KiB buffers (post.c), so the bodies
#     are padded to put a buffer boundary at every place of the head (keys,
#     the dtype, the '['), inside numbers and separators, at the array's
#     ']' and after it, and inside an invalid token;
#   a float32 tensor sent as JSON and as raw bytes gives the same answer.
. "$(dirname "$0")/lib.sh"

need_own_daemon "t_jsonstream" || { finish; exit $?; }
MAXB=67108864
start_daemon --max-body $MAXB --log-level debug || { fail "daemon A starts"; finish; exit 1; }
URLA=$URL DDIRA=$DDIR
start_daemon --max-body $MAXB --inline-max 1048576 || { fail "daemon B starts"; finish; exit 1; }
URLB=$URL
PY=/usr/bin/python3
mkdir -p "$TMP/c"

# The bodies, one file each (NAME.json), and the raw twin of one.
"$PY" - "$TMP/c" <<'EOF'
import os, random, struct, sys
d = sys.argv[1]
rng = random.Random(11)
B = 131072  # POST_JSON_STREAM_BUF: where the decoder's feeds cut

def put(name, text):
    with open(os.path.join(d, name + ".json"), "w") as f:
        f.write(text)

def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]

def shortest(x):
    for p in range(6, 10):
        s = "%.*g" % (p, x)
        if f32(float(s)) == x:
            return s
    return "%.9g" % x

def body(data, dtype="float32", op="ReduceSum", extra="", after=""):
    return ('{"op":"%s"%s,"input":{"dtype":"%s","data":[%s]%s}}'
            % (op, extra, dtype, data, after))

n = 40000
xs = [f32(rng.uniform(-10, 10)) for _ in range(n)]
short = ",".join(map(shortest, xs))
put("f32_shortest", body(short, op="ReduceSumSquare"))
put("f32_17digits", body(",".join("%.17g" % x for x in xs), op="ReduceL2"))
with open(os.path.join(d, "f32.raw"), "wb") as f:
    f.write(struct.pack("<%df" % n, *xs))
put("f32_axes", body(short, op="ReduceMax", extra=',"axes":[1],"keepdims":0',
                     after=',"shape":[200,200]'))
put("f32_argmax", body(short, op="ArgMax", extra=',"axis":0',
                       after=',"shape":[250,160]'))
put("f64_17digits", body(",".join("%.17g" % rng.uniform(-1e6, 1e6)
                                  for _ in range(30000)), "float64", "ReduceSum"))
put("f16", body(",".join("%.5g" % rng.uniform(-60000, 60000)
                         for _ in range(40000)), "float16", "ReduceMean"))
put("bf16", body(",".join("%.4e" % rng.uniform(-1e30, 1e30)
                          for _ in range(40000)), "bfloat16", "ReduceMax"))
ints = [rng.randint(-128, 127) for _ in range(50000)]
put("int8", body(",".join(map(str, ints)), "int8", "ReduceSum",
                 extra=',"overflow":"wrap"'))
put("int32_exp", body(",".join("%d.0e0" % i for i in ints), "int32", "ReduceSum"))
put("uint8", body(",".join(str(abs(i)) for i in ints), "uint8", "ReduceMax"))
put("int64", body(",".join(str(rng.randint(-2**62, 2**62))
                           for _ in range(20000)), "int64", "ReduceMin"))
put("uint64_strings", body(",".join('"%d"' % rng.randint(0, 2**64 - 1)
                                    for _ in range(20000)), "uint64", "ReduceMax"))
# Pretty-printed: a newline and indentation around every element.
put("pretty", '{\n  "op": "ReduceSum",\n  "input": {\n    "dtype": "float32",'
    '\n    "data": [\n' + ",\n".join("      " + shortest(x) for x in xs)
    + "\n    ]\n  }\n}\n")
# Elements the push decoder leaves to jansson, mid-array.
nan = short.split(",")
nan[30000] = '"NaN"'
nan[39000] = '"-Infinity"'
put("f32_nan_strings", body(",".join(nan)))
nest = short.split(",")
nest[30000] = "[1]"
put("f32_nested", body(",".join(nest)))
put("data_before_dtype", '{"op":"ReduceSum","input":{"data":[%s],'
    '"dtype":"float32"}}' % short)
# Errors in the middle of the array, with lines for line/column.
lines = short.split(",")
for i in range(0, n, 100):
    lines[i] = "\n" + lines[i]
bad = list(lines)
bad[31234] = "1.5x"
put("err_syntax_mid", body(",".join(bad)))
bad = list(lines)
bad[35678] = "1e999"
put("err_overflow_mid", body(",".join(bad), "float64"))
bad = [str(i) for i in ints]
bad[33333] = "300"
put("err_int8_range", body(",".join(bad), "int8"))
bad[33333] = "2.5"
put("err_int8_real", body(",".join(bad), "int8"))
put("err_bool_numbers", body(short, "bool"))
put("err_truncated", body(short)[: len(short) // 2])
put("err_truncated_end", body(short)[:-3])
put("err_after_junk", body(short) + "\n x")
put("err_after_field", body(short, after=',"bogus":1'))
put("err_after_shape", body(short, after=',"shape":[7]'))
put("err_after_dup", body(short, after=',"dtype":"float32"'))
put("err_max_elements", '{"op":"ReduceSum","input":{"dtype":"float32","data":['
    + ",".join(["1"] * 40000) + '],"shape":[40000,40000,40000]}}')
put("err_op", body(short, op="ReduceNope"))
put("err_empty", body(" " * 100000))
# Buffer boundaries at every place of the head: the '[' at B + s.
head = '"input":{"dtype":"float32","data":['
pre = '{"op":"ReduceSum",'
elems = ",".join(shortest(x) for x in xs[:3000])
for s in range(-45, 60):
    pad = B + s - len(pre) - len(head)
    put("split_head_%+d" % s, pre + " " * pad + head + elems + "]}}")
# ... inside the elements: varied forms, the array shifted by s bytes.
def form(x):
    k = rng.randrange(4)
    return ("%.9g" % x, "%.17g" % x, "%de-3" % int(x * 1000), " %g " % x)[k]
forms = ",".join(form(x) for x in xs[:40000])
for s in range(0, 40):
    put("split_mid_%d" % s, pre + head + " " * s + forms + "]}}")
# ... at the array's ']' and after it: the ']' at 2B + s.
tail = "]}}"
for s in range(-12, 6):
    core = pre + head
    pad = 2 * B + s - len(core) - len(elems)
    put("split_end_%+d" % s, core + "\n" * pad + elems + tail)
# ... inside an invalid token: its 'x' at B + s.
for s in range(-4, 5):
    a = pre + head
    left = ",".join(shortest(x) for x in xs[:20000])
    i = B + s - len(a)
    cut = left.rfind(",", 0, i - 3)
    txt = left[:cut + 1] + "12" + " " * (i - cut - 3) + "x34," + left[cut + 1:]
    put("split_err_%+d" % s, a + txt + "]}}")
EOF

# ask URL FILE OUT [CURL ARGS]: POST, status in OUT.st, body in OUT.
ask() {
  local u=$1 f=$2 o=$3; shift 3
  curl -sS --max-time 60 -o "$o" -w '%{http_code}' -H 'Expect:' \
    -H 'Content-Type: application/json' "$@" --data-binary @"$f" \
    "$u/v1/reduce" >"$o.st" 2>"$TMP/curl.err" || echo "curl-exit-$?" >"$o.st"
}

# same NAME FILE [ALL]: A answers B's bytes with a Content-Length; with
# ALL also chunked, gzip, and gzip chunked.
same() {
  local name=$1 f=$2 all=${3:-} how
  ask "$URLB" "$f" "$TMP/b.out"
  for how in plain chunked gzip gzipchunked; do
    case $how in
      plain) ask "$URLA" "$f" "$TMP/a.out" ;;
      chunked) ask "$URLA" "$f" "$TMP/a.out" -H 'Transfer-Encoding: chunked' ;;
      gzip) ask "$URLA" "$TMP/z" "$TMP/a.out" -H 'Content-Encoding: gzip' ;;
      gzipchunked) ask "$URLA" "$TMP/z" "$TMP/a.out" -H 'Content-Encoding: gzip' \
                     -H 'Transfer-Encoding: chunked' ;;
    esac
    if [ "$(cat "$TMP/a.out.st")" = "$(cat "$TMP/b.out.st")" ] &&
       cmp -s "$TMP/a.out" "$TMP/b.out"; then
      ok "$name ($how): the buffered path's answer ($(cat "$TMP/b.out.st"))"
    else
      fail "$name ($how): the buffered path's answer" \
        "streamed: $(cat "$TMP/a.out.st") $(head -c 300 "$TMP/a.out")" \
        "buffered: $(cat "$TMP/b.out.st") $(head -c 300 "$TMP/b.out")"
    fi
    [ -z "$all" ] && return
    if [ "$how" = chunked ]; then
      "$PY" -c 'import gzip, sys; open(sys.argv[2], "wb").write(gzip.compress(open(sys.argv[1], "rb").read(), 6))' \
        "$f" "$TMP/z"
    fi
  done
}

for f in "$TMP"/c/[a-z]*.json; do
  n=$(basename "$f" .json)
  case $n in split_*) continue ;; esac
  same "$n" "$f" all
done
for f in "$TMP"/c/split_*.json; do
  same "$(basename "$f" .json)" "$f"
done

# The answers are the results, not errors, where they should be.
ask "$URLA" "$TMP/c/f32_shortest.json" "$TMP/a.out"
check "f32_shortest: 200" test "$(cat "$TMP/a.out.st")" = 200
ask "$URLA" "$TMP/c/err_syntax_mid.json" "$TMP/a.out"
check "err_syntax_mid: 400 BAD_JSON at a line and column" \
  grep -Eq '"BAD_JSON".*line [0-9]+, column [0-9]+' "$TMP/a.out"
ask "$URLA" "$TMP/c/err_int8_range.json" "$TMP/a.out"
check "err_int8_range: names input.data[33333]" \
  grep -q 'input.data\[33333\] = 300' "$TMP/a.out"

# The same tensor as raw float32 bytes: the same answer.
ask "$URLA" "$TMP/c/f32_shortest.json" "$TMP/a.out"
curl -sS -o "$TMP/r.out" -H 'Content-Type: application/octet-stream' \
  -H 'Accept: application/json' --data-binary @"$TMP/c/f32.raw" \
  "$URLA/v1/reduce?op=ReduceSumSquare&dtype=float32&shape=40000"
check "f32_shortest: the answer of the raw tensor" cmp "$TMP/a.out" "$TMP/r.out"

# A streamed the large bodies; B did not (its Content-Length bodies).
check "daemon A decoded bodies as they arrived" \
  grep -q 'decoding the JSON body as it arrives' "$DDIRA/log"
finish
