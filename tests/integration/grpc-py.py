#!/usr/bin/python3
# grpc-py.py - a third-party gRPC client of reduced: Debian's python3-grpcio
# with messages protoc generated (--python_out) from the Open Inference
# Protocol's published .proto, as tritonclient.grpc-style code does.  Run by
# t_grpc.sh:  /usr/bin/python3 grpc-py.py GENDIR ADDR VERSION [KEY]
# Prints one "ok - NAME" or "not ok - NAME: WHY" line per check; expected
# values are worked out by hand (struct.pack of the exact results).
import struct
import sys

sys.path.insert(0, sys.argv[1])
import grpc  # noqa: E402
import open_inference_grpc_pb2 as pb  # noqa: E402

addr, version = sys.argv[2], sys.argv[3]
key = sys.argv[4] if len(sys.argv) > 4 else None
failed = 0


def ok(name):
    print("ok - " + name)


def bad(name, why):
    global failed
    failed += 1
    print("not ok - %s: %s" % (name, why))


def check(name, cond, why=""):
    ok(name) if cond else bad(name, why)


MiB = 1 << 20
chan = grpc.insecure_channel(addr, options=[
    ("grpc.max_receive_message_length", 64 * MiB),
    ("grpc.max_send_message_length", 64 * MiB)])
svc = "/inference.GRPCInferenceService/"


def rpc(method, req, resp_type, md=None):
    f = chan.unary_unary(svc + method, request_serializer=req.SerializeToString,
                         response_deserializer=resp_type.FromString)
    try:
        return f(req, timeout=60, metadata=md), None
    except grpc.RpcError as e:
        return None, e


def infer(model, dt, shape, typed=None, raw=None, params=None, version=""):
    r = pb.ModelInferRequest(model_name=model, model_version=version, id="py-1")
    t = r.inputs.add(name="data", datatype=dt, shape=shape)
    if typed is not None:
        getattr(t.contents, typed[0]).extend(typed[1])
    if raw is not None:
        r.raw_input_contents.append(raw)
    for k, v in (params or {}).items():
        if isinstance(v, bool):
            r.parameters[k].bool_param = v
        elif isinstance(v, int):
            r.parameters[k].int64_param = v
        else:
            r.parameters[k].string_param = v
    return r


def expect_out(name, res, err, dt, shape, raw):
    if err is not None:
        return bad(name, "status %s: %s" % (err.code(), err.details()))
    o = res.outputs[0]
    if o.name != "reduced" or o.datatype != dt or list(o.shape) != shape:
        return bad(name, "output %s %s %s" % (o.name, o.datatype, list(o.shape)))
    if res.raw_output_contents[0] != raw:
        return bad(name, "raw %s, expected %s" % (res.raw_output_contents[0].hex(), raw.hex()))
    if res.id != "py-1":
        return bad(name, "id %r not echoed" % res.id)
    ok(name)


def expect_err(name, err, code, wire=None):
    if err is None:
        return bad(name, "succeeded, expected %s" % code)
    if err.code() != code:
        return bad(name, "status %s (%s), expected %s" % (err.code(), err.details(), code))
    if wire and not err.details().startswith(wire + ": "):
        return bad(name, "message %r does not start with %r" % (err.details(), wire))
    ok(name)


md = [("authorization", "Bearer " + key)] if key else None

if key:
    _, e = rpc("ServerLive", pb.ServerLiveRequest(), pb.ServerLiveResponse)
    expect_err("python: no key: UNAUTHENTICATED", e, grpc.StatusCode.UNAUTHENTICATED, "UNAUTHORIZED")
    res, e = rpc("ModelInfer", infer("ReduceL2", "FP32", [2], ("fp32_contents", [3, 4])), pb.ModelInferResponse, md)
    expect_out("python: Bearer KEY: ModelInfer", res, e, "FP32", [1], struct.pack("<f", 5))
    sys.exit(1 if failed else 0)

res, e = rpc("ServerLive", pb.ServerLiveRequest(), pb.ServerLiveResponse)
check("python: ServerLive", e is None and res.live, e)
res, e = rpc("ServerReady", pb.ServerReadyRequest(), pb.ServerReadyResponse)
check("python: ServerReady", e is None and res.ready, e)
res, e = rpc("ServerMetadata", pb.ServerMetadataRequest(), pb.ServerMetadataResponse)
check("python: ServerMetadata", e is None and res.name == "reduced" and res.version == version, e or res)
res, e = rpc("ModelReady", pb.ModelReadyRequest(name="ReduceSumSquare", version="11"), pb.ModelReadyResponse)
check("python: ModelReady", e is None and res.ready, e)
_, e = rpc("ModelReady", pb.ModelReadyRequest(name="ReduceSumSquare", version="12"), pb.ModelReadyResponse)
expect_err("python: ModelReady version 12: NOT_FOUND", e, grpc.StatusCode.NOT_FOUND, "NOT_FOUND")
res, e = rpc("ModelMetadata", pb.ModelMetadataRequest(name="ReduceL2"), pb.ModelMetadataResponse)
check("python: ModelMetadata", e is None and list(res.versions) == ["1", "11", "13", "18"] and
      [t.name for t in res.inputs] == ["data", "axes"] and res.outputs[0].name == "reduced", e or res)

expect_out("python: ReduceSumSquare FP32 typed", *rpc("ModelInfer", infer(
    "ReduceSumSquare", "FP32", [3], ("fp32_contents", [1, 2, 3])), pb.ModelInferResponse),
    "FP32", [1], struct.pack("<f", 14))
expect_out("python: ReduceL2 FP64 raw", *rpc("ModelInfer", infer(
    "ReduceL2", "FP64", [2], raw=struct.pack("<2d", 3, 4)), pb.ModelInferResponse),
    "FP64", [1], struct.pack("<d", 5))
expect_out("python: ReduceSum UINT64 typed (2^64-1)", *rpc("ModelInfer", infer(
    "ReduceSum", "UINT64", [2], ("uint64_contents", [2**64 - 2, 1])), pb.ModelInferResponse),
    "UINT64", [1], struct.pack("<Q", 2**64 - 1))
expect_out("python: ReduceSumSquare INT64 typed, axes 1 at version 13", *rpc("ModelInfer", infer(
    "ReduceSumSquare", "INT64", [2, 2], ("int64_contents", [1, 2, 3, 4]),
    params={"axes": "1", "keepdims": False}, version="13"), pb.ModelInferResponse),
    "INT64", [2], struct.pack("<2q", 5, 25))
expect_out("python: ReduceSumSquare FP16 raw", *rpc("ModelInfer", infer(
    "ReduceSumSquare", "FP16", [2], raw=struct.pack("<2e", 1, 2)), pb.ModelInferResponse),
    "FP16", [1], struct.pack("<e", 5))
expect_out("python: ArgMax INT32 typed, select_last_index", *rpc("ModelInfer", infer(
    "ArgMax", "INT32", [4], ("int_contents", [7, 9, 9, 1]), params={"select_last_index": True}),
    pb.ModelInferResponse), "INT64", [1], struct.pack("<q", 2))
_, e = rpc("ModelInfer", infer("ReduceL2", "FP32", [3], ("fp32_contents", [1])), pb.ModelInferResponse)
expect_err("python: count mismatch: INVALID_ARGUMENT", e, grpc.StatusCode.INVALID_ARGUMENT, "SHAPE_MISMATCH")
_, e = rpc("ModelInfer", infer("ReduceL3", "FP32", [1], ("fp32_contents", [1])), pb.ModelInferResponse)
expect_err("python: unknown model: NOT_FOUND", e, grpc.StatusCode.NOT_FOUND, "NOT_FOUND")
_, e = rpc("ModelInfer", infer("ReduceL2", "FP32", [2], ("fp32_contents", [1, 2]), params={"axes": "[0"}, version="11"),
           pb.ModelInferResponse)
expect_err("python: bad parameters.axes: INVALID_ARGUMENT", e, grpc.StatusCode.INVALID_ARGUMENT, "INVALID_FIELD")

# grpc.health.v1.Health/Check with hand-made messages: an empty request
# (service ""), the answer field 1 = SERVING (1): bytes 08 01.
h = chan.unary_unary("/grpc.health.v1.Health/Check", request_serializer=lambda x: x,
                     response_deserializer=lambda x: x)
try:
    check("python: Health/Check SERVING", h(b"", timeout=10) == b"\x08\x01")
except grpc.RpcError as err:
    bad("python: Health/Check SERVING", err)
sys.exit(1 if failed else 0)
