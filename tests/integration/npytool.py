#!/usr/bin/python3
# npytool.py - NumPy side of t_binary.sh (run with Debian's python3-numpy,
# /usr/bin/python3).  Independent of the daemon: expected results are
# computed here with numpy on integer-valued data, where every sum of
# squares is exact, so the comparison can be exact.
#
#   npytool.py gen DIR      write the cases (bodies, queries, expected
#                           outputs) and DIR/manifest
#   npytool.py verify DIR   compare DIR/<case>.resp with the expectations;
#                           prints "PASS name" / "FAIL name: why" lines
#   npytool.py load FILE    print an .npy file as dtype|shape|values
import json
import os
import sys

import numpy as np

DTYPES = ["f4", "f8", "f2", "i4", "i8", "u4", "u8"]
NAMES = {"f4": "float32", "f8": "float64", "f2": "float16", "i4": "int32",
         "i8": "int64", "u4": "uint32", "u8": "uint64"}


def expected(a, op, axes, keepdims):
    """Exact reference: integer data, sums in int64 (exact), then the
    output dtype (sqrt of an exact integer, rounded once for floats)."""
    ax = tuple(axes) if axes else None
    s = np.sum(a.astype(np.int64) ** 2, axis=ax, keepdims=bool(keepdims))
    if op == "ReduceL2":
        s = np.sqrt(s.astype(np.float64))
    return np.asarray(s).astype(a.dtype.newbyteorder("<"))


def write_case(d, name, ctype, query, accept, body, exp, manifest):
    with open(os.path.join(d, name + ".body"), "wb") as f:
        f.write(body)
    np.save(os.path.join(d, name + ".expect.npy"), exp)
    manifest.write("%s|%s|%s|%s\n" % (name, ctype, query, accept))


def npy_bytes(a, fortran, descr_override=None):
    import io
    buf = io.BytesIO()
    # (np.ascontiguousarray would make a rank-0 array rank 1)
    np.save(buf, np.asfortranarray(a) if fortran else a)
    b = bytearray(buf.getvalue())
    if descr_override is not None:
        i = b.index(b"'descr': '")
        b[i + 10:i + 13] = descr_override.encode()
    return bytes(b)


def gen(d):
    rng = np.random.default_rng(20240611)
    man = open(os.path.join(d, "manifest"), "w")
    shape = (3, 4, 5)
    configs = [("ReduceSumSquare", [0, -1], 0), ("ReduceL2", [1], 1),
               ("ReduceSumSquare", [], 0)]
    for dt in DTYPES:
        vals = rng.integers(0, 10, size=shape)
        for bo in "<>|":
            if bo == "|" and dt not in ("f4", "u4"):
                continue   # one native-order sample of each kind is enough
            for order in ("C", "F"):
                for ci, (op, axes, kd) in enumerate(configs):
                    a = vals.astype(np.dtype(("<" if bo == "|" else bo) + dt))
                    body = npy_bytes(a, order == "F",
                                     "|" + dt if bo == "|" else None)
                    q = "op=%s&axes=%s&keepdims=%d" % (
                        op, ",".join(map(str, axes)), kd)
                    name = "npy_%s_%s_%s_%d" % (
                        dt, {"<": "le", ">": "be", "|": "na"}[bo], order, ci)
                    write_case(d, name, "application/x-npy", q, "",
                               body, expected(a, op, axes, kd), man)
        # raw: little-endian, shape in the query
        for ci, (op, axes, kd) in enumerate(configs):
            a = vals.astype(np.dtype("<" + dt))
            q = "op=%s&axes=%s&keepdims=%d&dtype=%s&shape=3,4,5" % (
                op, ",".join(map(str, axes)), kd, NAMES[dt])
            write_case(d, "raw_%s_%d" % (dt, ci), "application/octet-stream",
                       q, "", a.tobytes(), expected(a, op, axes, kd), man)
    # rank 0 and rank 1, Fortran flag on rank 1
    a = np.array(7, dtype="<i4")
    write_case(d, "npy_rank0", "application/x-npy", "op=ReduceSumSquare", "",
               npy_bytes(a, False), expected(a, "ReduceSumSquare", [], 1), man)
    write_case(d, "raw_rank0", "application/octet-stream",
               "op=ReduceSumSquare&dtype=int32&shape=", "", a.tobytes(),
               expected(a, "ReduceSumSquare", [], 1), man)
    a = np.arange(6, dtype="<f8")
    write_case(d, "npy_rank1_F", "application/x-npy", "op=ReduceL2&keepdims=0",
               "", npy_bytes(a, True), expected(a, "ReduceL2", [], 0), man)
    # Fortran order, rank 4, several axes, each output layout
    vals = rng.integers(0, 10, size=(2, 3, 4, 5))
    for ci, axes in enumerate([[0], [3], [1, 2], [0, 3], [-1, 0, 1]]):
        for kd in (0, 1):
            a = vals.astype(">u8")
            q = "op=ReduceSumSquare&axes=%s&keepdims=%d" % (
                ",".join(map(str, axes)), kd)
            write_case(d, "npy_F4_%d_%d" % (ci, kd), "application/x-npy", q,
                       "", npy_bytes(a, True),
                       expected(a, "ReduceSumSquare", axes, kd), man)
    # every Accept for each request format (same tensor)
    a = rng.integers(0, 10, size=(4, 6)).astype("<f4")
    exp = expected(a, "ReduceL2", [1], 0)
    bodies = {
        "json": ("application/json", json.dumps(
            {"op": "ReduceL2", "axes": [1], "keepdims": 0,
             "input": {"dtype": "float32", "shape": [4, 6],
                       "data": [int(x) for x in a.ravel()]}}).encode(),
            ""),
        "raw": ("application/octet-stream", a.tobytes(),
                "op=ReduceL2&axes=1&keepdims=0&dtype=float32&shape=4,6"),
        "npy": ("application/x-npy", npy_bytes(a, False),
                "op=ReduceL2&axes=1&keepdims=0"),
    }
    for rf, (ct, body, q) in bodies.items():
        for an, acc in [("none", ""), ("any", "*/*"),
                        ("appany", "application/*"),
                        ("json", "application/json"),
                        ("raw", "application/octet-stream"),
                        ("npy", "application/x-npy"),
                        ("q", "application/json;q=0.2, application/x-npy;q=0.9"),
                        ("mixed", "Text/HTML, APPLICATION/OCTET-STREAM;q=0.5")]:
            write_case(d, "neg_%s_%s" % (rf, an), ct, q, acc, body, exp, man)
    man.close()


def parse_headers(path):
    h = {}
    status = None
    for line in open(path, "rb").read().decode("latin-1").split("\r\n"):
        if line.startswith("HTTP/"):
            status = int(line.split()[1])
            h = {}
        elif ":" in line:
            k, v = line.split(":", 1)
            h[k.strip().lower()] = v.strip()
    return status, h


def load_response(path, headers):
    body = open(path, "rb").read()
    ct = headers.get("content-type", "")
    if ct == "application/x-npy":
        import io
        arr = np.load(io.BytesIO(body), allow_pickle=False)
        if headers.get("tensor-dtype") != str(arr.dtype) or \
           json.loads(headers.get("tensor-shape", "null")) != list(arr.shape):
            raise ValueError("Tensor-Dtype/Tensor-Shape %s %s disagree with "
                             "the .npy %s %s" % (headers.get("tensor-dtype"),
                                                 headers.get("tensor-shape"),
                                                 arr.dtype, arr.shape))
        if arr.dtype.byteorder == ">" or arr.flags.f_contiguous and \
           arr.ndim > 1 and not arr.flags.c_contiguous:
            raise ValueError("response .npy is not little-endian C order")
        return arr
    if ct == "application/octet-stream":
        dt = np.dtype(headers["tensor-dtype"]).newbyteorder("<")
        shape = json.loads(headers["tensor-shape"])
        if len(body) != int(np.prod(shape, dtype=np.int64)) * dt.itemsize:
            raise ValueError("raw body has %d bytes for %s %s" %
                             (len(body), dt, shape))
        if headers.get("content-length") != str(len(body)):
            raise ValueError("Content-Length %s" %
                             headers.get("content-length"))
        return np.frombuffer(body, dtype=dt).reshape(shape)
    if ct == "application/json":
        out = json.loads(body)["output"]
        dt = np.dtype(out["dtype"])
        if "tensor-dtype" in headers:
            raise ValueError("JSON response with a Tensor-Dtype header")
        return np.array([float(x) if dt.kind == "f" else int(x)
                         for x in out["data"]]).astype(dt).reshape(
                             out["shape"])
    raise ValueError("Content-Type %r" % ct)


def verify(d):
    for line in open(os.path.join(d, "manifest")):
        name, ctype, q, acc = line.rstrip("\n").split("|")
        try:
            status, h = parse_headers(os.path.join(d, name + ".hdr"))
            if status != 200:
                raise ValueError("status %s: %s" % (status, open(
                    os.path.join(d, name + ".resp"), "rb").read()[:300]))
            want_ct = {"": ctype, "*/*": ctype, "application/*": ctype}.get(
                acc)
            if want_ct is None:
                want_ct = {"application/json": "application/json",
                           "application/octet-stream":
                           "application/octet-stream",
                           "application/x-npy": "application/x-npy"}.get(acc)
            if want_ct is None and "x-npy;q=0.9" in acc:
                want_ct = "application/x-npy"
            if want_ct is None and "OCTET" in acc:
                want_ct = "application/octet-stream"
            if h.get("content-type") != want_ct:
                raise ValueError("Content-Type %s, expected %s" %
                                 (h.get("content-type"), want_ct))
            got = load_response(os.path.join(d, name + ".resp"), h)
            exp = np.load(os.path.join(d, name + ".expect.npy"))
            if got.dtype.newbyteorder("<") != exp.dtype.newbyteorder("<") \
               or got.shape != exp.shape:
                raise ValueError("got %s %s, expected %s %s" %
                                 (got.dtype, got.shape, exp.dtype, exp.shape))
            if got.tobytes() != exp.astype(got.dtype).tobytes():
                raise ValueError("got %s, expected %s" %
                                 (got.ravel()[:8], exp.ravel()[:8]))
            print("PASS %s" % name)
        except Exception as e:   # report, never stop the run
            print("FAIL %s: %s" % (name, e))


def load(path):
    a = np.load(path, allow_pickle=False)
    print("%s|%s|%s" % (a.dtype.str, list(a.shape),
                        " ".join(repr(x) for x in a.ravel().tolist())))


if __name__ == "__main__":
    {"gen": gen, "verify": verify, "load": load}[sys.argv[1]](sys.argv[2])
