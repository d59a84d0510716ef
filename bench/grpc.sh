#!/bin/sh
# grpc.sh - gRPC throughput next to HTTP's for the same small request (part
# of `make bench`, never of `make check`).
#   bench/grpc.sh [--requests N]
# The request: ReduceL2 of a float32 [3,2,2] tensor over axis 1 (bench/
# daemon.sh's small request), as a gRPC ModelInfer (h2c, raw contents) and
# as HTTP /v2 infer with JSON data.  Both are driven by h2load (nghttp2-
# client) with 32 clients on 2 threads: HTTP/2 for gRPC (h2load checks only
# :status, so one call is checked with python3-grpcio first), HTTP/1.1 for
# HTTP (libmicrohttpd speaks no HTTP/2).  Needs h2load, /usr/bin/python3
# with grpc and protobuf, protoc (scripts/bootstrap.sh, step: Debian
# packages).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
builddir=${top_builddir:-$top}
reduced="$builddir/daemon/reduced"
n=200000
[ "${1:-}" = "--requests" ] && n=$2
PY=/usr/bin/python3

for t in h2load protoc; do
  command -v "$t" >/dev/null 2>&1 ||
    { echo "grpc.sh: $t is missing: run scripts/bootstrap.sh (step: Debian packages)" >&2; exit 1; }
done
"$PY" -c 'import grpc, google.protobuf' 2>/dev/null ||
  { echo "grpc.sh: python3-grpcio is missing: run scripts/bootstrap.sh (step: Debian packages)" >&2; exit 1; }
[ -x "$reduced" ] || { echo "grpc.sh: build daemon/reduced first" >&2; exit 1; }

work=$(mktemp -d)
pid=""
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT INT TERM

"$reduced" --listen 127.0.0.1:0 --port-file "$work/port" --grpc-listen 127.0.0.1:0 \
  --grpc-port-file "$work/gport" --log-level warn 2>"$work/daemon.log" &
pid=$!
i=0
while [ ! -s "$work/port" ] || [ ! -s "$work/gport" ]; do
  i=$((i + 1)); [ $i -gt 100 ] && { echo "daemon did not start" >&2; cat "$work/daemon.log" >&2; exit 1; }
  sleep 0.05
done
port=$(cat "$work/port") gport=$(cat "$work/gport")

# The framed gRPC message (1 byte flag, 4 bytes length, the message), and
# one real call to make sure the server answers it with the right value.
protoc --python_out="$work" -I"$top/api/proto" "$top/api/proto/inference.proto"
"$PY" - "$work" "$gport" <<'PY'
import struct, sys
sys.path.insert(0, sys.argv[1])
import grpc, inference_pb2 as pb
r = pb.ModelInferRequest(model_name="ReduceL2", model_version="13")
r.inputs.add(name="data", datatype="FP32", shape=[3, 2, 2])
r.raw_input_contents.append(struct.pack("<12f", *range(1, 13)))
r.parameters["axes"].string_param = "1"
m = r.SerializeToString()
open(sys.argv[1] + "/framed.bin", "wb").write(b"\0" + struct.pack(">I", len(m)) + m)
ch = grpc.insecure_channel("127.0.0.1:" + sys.argv[2])
f = ch.unary_unary("/inference.GRPCInferenceService/ModelInfer",
                   request_serializer=lambda x: x, response_deserializer=pb.ModelInferResponse.FromString)
out = f(m, timeout=10)
got = struct.unpack("<6f", out.raw_output_contents[0])
want = tuple(float(struct.unpack("<f", struct.pack("<f", (a*a + b*b) ** 0.5))[0]) for a, b in
             [(1, 3), (2, 4), (5, 7), (6, 8), (9, 11), (10, 12)])
assert got == want, (got, want)
PY
small='{"inputs":[{"name":"data","datatype":"FP32","shape":[3,2,2],"data":[1,2,3,4,5,6,7,8,9,10,11,12]}],"parameters":{"axes":[1]}}'
printf '%s' "$small" >"$work/small.json"
curl -sf -d @"$work/small.json" "http://127.0.0.1:$port/v2/models/ReduceL2/versions/13/infer" >/dev/null

h2load -n "$n" -c 32 -t 2 -d "$work/framed.bin" -H 'content-type: application/grpc' -H 'te: trailers' \
  "http://127.0.0.1:$gport/inference.GRPCInferenceService/ModelInfer" >"$work/grpc.txt"
h2load --h1 -n "$n" -c 32 -t 2 -d "$work/small.json" -H 'content-type: application/json' \
  "http://127.0.0.1:$port/v2/models/ReduceL2/versions/13/infer" >"$work/http.txt"
rate() { awk '/^finished in/ {gsub(",", "", $4); print $4}' "$1"; }
okn() { awk '/^status codes:/ {print $3}' "$1"; }
echo "gRPC ModelInfer (h2load h2c, 32 clients, $n calls): $(rate "$work/grpc.txt") calls/s, $(okn "$work/grpc.txt") 2xx"
echo "HTTP /v2 infer JSON (h2load --h1, 32 clients, $n requests): $(rate "$work/http.txt") requests/s, $(okn "$work/http.txt") 2xx"
