#!/usr/bin/python3
# samebits.py - the same tensor gives the same bits whatever its encoding
# (t_samebits.sh; Debian's python3-numpy, /usr/bin/python3).
#
#   samebits.py URL [LABEL]
#
# For every operator and dtype GET /v1/ops lists (latest version), a few
# tensors and axes, the request is sent as JSON (nested and flat), raw,
# .npy C order, .npy Fortran order, big-endian .npy, /v2 JSON and /v2
# binary; every answer's output must be the same bits (compared as the
# shortest text the daemon prints, which reads back to the exact value).
# First the regression case of issue 13: a float64 tensor whose Fortran
# .npy answer was 18.497377194503848 while C order and JSON gave ...844.
# Prints "PASS name" / "FAIL name: why" and a last "N passed, N failed".
import http.client
import json
import struct
import sys
import urllib.parse

import numpy as np

URL = urllib.parse.urlparse(sys.argv[1])
LABEL = sys.argv[2] if len(sys.argv) > 2 else ""
V2 = {"float32": "FP32", "float64": "FP64", "float16": "FP16",
      "bfloat16": "BF16", "int32": "INT32", "int64": "INT64",
      "uint32": "UINT32", "uint64": "UINT64", "int8": "INT8",
      "uint8": "UINT8", "int16": "INT16", "uint16": "UINT16", "bool": "BOOL"}
NP = {"float32": "f4", "float64": "f8", "float16": "f2", "int32": "i4",
      "int64": "i8", "uint32": "u4", "uint64": "u8", "int8": "i1",
      "uint8": "u1", "int16": "i2", "uint16": "u2", "bool": "b1"}
ARG = ("ArgMax", "ArgMin")
passed = failed = 0


def request(method, path, body=None, headers=None):
    c = http.client.HTTPConnection(URL.hostname, URL.port, timeout=60)
    c.request(method, path, body=body, headers=headers or {})
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, data


def values(a, dtype):
    """JSON numbers of a: integers as ints, floats as the shortest repr of
    their exact value (float16/bfloat16 values are exact in a double)."""
    if dtype == "bool":
        return [bool(x) for x in a.reshape(-1)]
    if dtype.startswith(("int", "uint")):
        return [int(x) for x in a.reshape(-1)]
    return [float(x) for x in a.reshape(-1)]


def nested(flat, shape):
    if not shape:
        return flat[0]
    n = len(flat) // shape[0] if shape[0] else 0
    return [nested(flat[i * n:(i + 1) * n], shape[1:]) for i in range(shape[0])]


def raw_bytes(a, dtype, big=False):
    if dtype == "bfloat16":
        u = a.astype("<f4").view("<u4") >> 16
        return u.astype(">u2" if big else "<u2").tobytes()
    return a.astype(order(big, dtype) + NP[dtype]).tobytes()


def order(big, dtype):
    """The byte-order character of a .npy descr ('|' for one byte)."""
    if NP[dtype][1] == "1":
        return "|"
    return ">" if big else "<"


def npy(a, dtype, fortran, big=False):
    descr = order(big, dtype) + NP[dtype]
    hdr = "{'descr': '%s', 'fortran_order': %s, 'shape': (%s), }" % (
        descr, "True" if fortran else "False",
        "".join("%d," % d for d in a.shape))
    pad = 64 - (10 + len(hdr) + 1) % 64
    hdr = hdr + " " * (pad % 64) + "\n"
    data = np.asfortranarray(a) if fortran else np.ascontiguousarray(a)
    body = data.astype(descr).tobytes(order="F" if fortran else "C")
    return (b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hdr)) +
            hdr.encode() + body)


def answer(status, data, v2):
    """The output as text; an error as its status and code (the same
    refusal from every encoding agrees too)."""
    j = json.loads(data)
    if status != 200:
        e = j.get("error")
        code = e.get("code") if isinstance(e, dict) else str(e).split(":")[0]
        return "error %d %s" % (status, code), None
    out = j["outputs"][0] if v2 else j["output"]
    return json.dumps(out["data"]) + " shape " + json.dumps(out["shape"]), None


def encodings(op, ver, dtype, a, axes):
    """(name, answer text or None, error) for every encoding, at version
    `ver` of `op` (ArgMax/ArgMin: `axes` names their one axis)."""
    shape = list(a.shape)
    flat = values(a, dtype)
    attrs, params, qa = {"opset": ver}, {}, "&opset=%d" % ver
    if axes is not None and op in ARG:
        attrs["axis"] = params["axis"] = axes[0]
        qa += "&axis=%d" % axes[0]
    elif axes is not None:
        attrs["axes"] = axes
        qa += "&axes=" + ",".join(map(str, axes))
    q = "op=%s&dtype=%s&shape=%s" % (op, dtype, ",".join(map(str, shape))) + qa
    js = dict({"op": op, "input": {"dtype": dtype, "shape": shape,
                                   "data": flat}}, **attrs)
    jn = dict({"op": op, "input": {"dtype": dtype,
                                   "data": nested(flat, shape)}}, **attrs)
    jh = {"Content-Type": "application/json"}
    acc = {"Accept": "application/json"}
    out = []
    out.append(("json-flat",) + answer(*request(
        "POST", "/v1/reduce", json.dumps(js), jh), False))
    out.append(("json-nested",) + answer(*request(
        "POST", "/v1/reduce", json.dumps(jn), jh), False))
    out.append(("raw",) + answer(*request(
        "POST", "/v1/reduce?" + q, raw_bytes(a, dtype),
        dict(acc, **{"Content-Type": "application/octet-stream"})), False))
    if dtype != "bfloat16":   # .npy has no bfloat16
        qn = "op=%s" % op + qa
        for name, f, big in (("npy-C", 0, 0), ("npy-F", 1, 0),
                             ("npy-BE", 0, 1), ("npy-BE-F", 1, 1)):
            out.append((name,) + answer(*request(
                "POST", "/v1/reduce?" + qn, npy(a, dtype, f, big),
                dict(acc, **{"Content-Type": "application/x-npy"})), False))
    inputs = [{"name": "data", "shape": shape, "datatype": V2[dtype],
               "data": flat}]
    if axes is not None and op not in ARG:
        inputs.append({"name": "axes", "shape": [len(axes)],
                       "datatype": "INT64", "data": axes})
    path = "/v2/models/%s/versions/%d/infer" % (op, ver)
    out.append(("v2-json",) + answer(*request(
        "POST", path, json.dumps({"inputs": inputs,
                                  "parameters": params})), True))
    blob = raw_bytes(a, dtype)
    binputs = [{"name": "data", "shape": shape, "datatype": V2[dtype],
                "parameters": {"binary_data_size": len(blob)}}] + inputs[1:]
    hdr = json.dumps({"inputs": binputs, "parameters": params}).encode()
    out.append(("v2-binary",) + answer(*request(
        "POST", path, hdr + blob,
        {"Inference-Header-Content-Length": str(len(hdr))}), True))
    return out


def case(name, op, dtype, a, axes, want=None, ver=18):
    global passed, failed
    res = encodings(op, ver, dtype, a, axes)
    errs = ["%s: %s" % (n, e) for n, t, e in res if e]
    texts = {}
    for n, t, e in res:
        if t is not None:
            texts.setdefault(t, []).append(n)
    if errs or len(texts) != 1 or (want and want not in next(iter(texts))):
        failed += 1
        why = "; ".join(errs) or " | ".join(
            "%s -> %s" % (",".join(v), k[:120]) for k, v in texts.items())
        print("FAIL %s%s: %s" % (LABEL, name, why))
    else:
        passed += 1
        print("PASS %s%s (%d encodings agree)" % (LABEL, name, len(res)))


def tensor(rng, dtype, shape):
    if dtype == "bool":
        return rng.integers(0, 2, size=shape).astype(bool)
    if dtype.startswith(("int", "uint")):
        info = np.iinfo(NP[dtype])
        lo, hi = max(int(info.min), -1000), min(int(info.max), 1000)
        return rng.integers(lo, hi + 1, size=shape).astype(NP[dtype])
    x = rng.standard_normal(size=shape) * 3.0
    if dtype == "bfloat16":
        u = x.astype("<f4").view("<u4") & np.uint32(0xFFFF0000)
        return u.view("<f4").astype("f8")
    return x.astype(NP[dtype])


# ---- issue 13: the float64 Fortran-order case.  A daemon that reduced
# the Fortran bytes in the order they arrive (the reversed-shape plan)
# summed the squares in another order than for C order and answered
# ...818 for this tensor where C order and JSON gave ...814 (the issue's
# own tensor, 18.497377194503848 against ...844, is not known; this one,
# scaled to the same norm and found against the daemon before the fix,
# shows the same bug).
bug = np.array([[-3.828, -12.274, 1.251, 0.819],
                [-9.146, -5.094, -0.536, -7.03],
                [-0.73, 0.715, 0.268, -3.768]], dtype="f8")
case("issue13 float64 Fortran .npy = C order = JSON (ReduceL2, all axes)",
     "ReduceL2", "float64", bug, None)
case("issue13 float64 Fortran .npy = C order = JSON (ReduceSumSquare, "
     "all axes)", "ReduceSumSquare", "float64", bug, None)
case("issue13 float64 Fortran .npy = C order = JSON (ReduceL2, axes 1)",
     "ReduceL2", "float64", bug, [1])

status, body = request("GET", "/v1/ops")
ops = json.loads(body)["ops"]
rng = np.random.default_rng(13)
for o in ops:
    ver = o["versions"][-1]["version"]
    dtypes = o["versions"][-1]["dtypes"]
    for dtype in dtypes:
        for shape, axes in (((7, 5, 3), None), ((7, 5, 3), [1]),
                            ((7, 5, 3), [0, 2]), ((4, 33), [0])):
            a = tensor(rng, dtype, shape)
            case("%s %s shape %s axes %s" % (o["op"], dtype, shape, axes),
                 o["op"], dtype, a, axes, ver=ver)
print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
