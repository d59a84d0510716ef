"""client_test.py - clients/python/reduced_client.py against the real daemon.

Run by t_client.sh with Debian's /usr/bin/python3 (numpy):

    client_test.py --url URL [--keyed-url URL --key KEY]
                   [--small-url URL --small-max BYTES]
                   [--tls-url URL --cafile PEM] [--pid PID] [--no-big]

--url: a daemon with --max-body of at least 64 MiB (the default);
--keyed-url: one with --api-key-file holding KEY; --small-url: one with
--max-body BYTES and --timeout 1; --tls-url: one with --tls-cert PEM;
--pid: the pid of the --url daemon (the timeout test stops it with SIGSTOP
for a moment).  Prints one line per check and
"N passed, N failed"; exits 1 if anything failed.

Expected values are computed here with numpy and exact Python integers and
fractions, never taken from the daemon: integers exactly; float results
exactly when the inputs are small integers (every sum is then exact in
double, and the daemon rounds once from double), else within 1 ulp of the
exact value for float32/float16/bfloat16 (README: "within 1 ulp") and 2 ulp
for float64 (compensated summation).
"""

import argparse
import doctest
import io
import fractions
import http.client
import math
import os
import signal
import socket
import ssl
import sys
import threading
import time
import tracemalloc
import urllib.parse
import zlib

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "clients", "python"))
import reduced_client as rc  # noqa: E402
from reduced_client import Client, ReducedError, ReducedTimeout  # noqa: E402

PASS = FAIL = SKIP = 0


def ok(name):
    global PASS
    PASS += 1
    print("ok %d - %s" % (PASS + FAIL, name))


def fail(name, *why):
    global FAIL
    FAIL += 1
    print("not ok %d - %s" % (PASS + FAIL, name))
    for w in why:
        print("#   %.600s" % (w,))


def skip(name, why):
    global SKIP
    SKIP += 1
    print("skip - %s (%s)" % (name, why))


def check(name, cond, *why):
    """ok() or fail() by cond; returns whether it held."""
    if cond:
        ok(name)
    else:
        fail(name, *why)
    return bool(cond)


def run(name, fn):
    """Runs fn(): None or a true bool is ok, False or a string (the reason)
    a failure, and so is an exception."""
    try:
        r = fn()
    except Exception as e:  # noqa: BLE001 - every failure is reported
        fail(name, "%s: %s" % (type(e).__name__, e))
        return
    if r is None or (isinstance(r, (bool, np.bool_)) and r):
        ok(name)
    else:
        fail(name, "returned %r" % (r,) if isinstance(r, (bool, np.bool_))
             else str(r))


def expect_error(name, fn, status, code, msg_has=()):
    try:
        r = fn()
    except ReducedError as e:
        why = []
        if e.status != status:
            why.append("status %r, expected %r" % (e.status, status))
        if e.code != code:
            why.append("code %r, expected %r" % (e.code, code))
        if not isinstance(e.message, str) or not e.message:
            why.append("message %r is not a non-empty string" % (e.message,))
        for s in msg_has:
            if s not in (e.message or ""):
                why.append("message %r lacks %r" % (e.message, s))
        if status is not None and not e.request_id:
            why.append("no request_id (X-Request-Id)")
        check(name, not why, *why)
        return
    except Exception as e:  # noqa: BLE001
        fail(name, "raised %s: %s, expected ReducedError" %
             (type(e).__name__, e))
        return
    fail(name, "no error; answer %r" % (r,))


# ---------------------------------------------------------------- references

def norm_axes(axes, rank):
    if axes is None or len(axes) == 0:
        return tuple(range(rank))
    return tuple(sorted(a % rank for a in axes))


def ref_reduce(x, op, axes, keepdims, noop=False):
    """Exact reference: an object array of Python ints (integer dtypes) or
    Fractions (floats) of sums of squares, then the root for ReduceL2."""
    x = np.asarray(x)
    integer = x.dtype.kind in "iub"
    if integer:
        obj = np.vectorize(int, otypes=[object])(x) if x.size else \
            np.zeros(x.shape, dtype=object)
    else:
        obj = np.vectorize(fractions.Fraction, otypes=[object])(
            x.astype(np.float64)) if x.size else np.zeros(x.shape, object)
    sq = obj * obj
    if noop and (axes is not None and len(axes) == 0):
        s = sq
    else:
        ax = norm_axes(axes, x.ndim)
        s = sq.sum(axis=ax, keepdims=bool(keepdims)) if x.ndim else sq
        if not isinstance(s, np.ndarray):
            s = np.array(s, dtype=object)
        if x.size == 0:
            s = np.vectorize(lambda v: 0 if integer else fractions.Fraction(0),
                             otypes=[object])(s) if s.size else s
    if op == "ReduceL2":
        if integer:
            f = math.isqrt
        else:
            f = sqrt_fraction
        s = np.vectorize(f, otypes=[object])(s) if s.size else s
    return s


def sqrt_fraction(q):
    """sqrt of a non-negative Fraction as a float64 (error < 1 ulp of
    double: far below the float32/float16 bounds)."""
    q = fractions.Fraction(q)
    if q == 0:
        return fractions.Fraction(0)
    # scale to keep 60+ significant bits, integer sqrt, scale back
    e = max(0, 120 - (q.numerator.bit_length() - q.denominator.bit_length()))
    e += e & 1
    r = math.isqrt(q.numerator * (1 << e) // q.denominator)
    return fractions.Fraction(r, 1 << (e // 2))


def to_dtype(ref, dt):
    """Exact reference values rounded to dtype dt (floats: via float64 for
    float32/float16, which adds at most a double rounding below 1 ulp)."""
    if ref.size == 0:
        return np.zeros(ref.shape, dtype=dt)
    if np.dtype(dt).kind == "f":
        return np.vectorize(float, otypes=[np.float64])(ref).astype(dt)
    return np.array(ref.tolist(), dtype=dt).reshape(ref.shape)


def ulps(got, exp):
    """Largest distance in units in the last place of exp's dtype."""
    got = np.asarray(got, dtype=exp.dtype)
    if got.shape != exp.shape:
        return float("inf")
    if exp.size == 0:
        return 0.0
    both_inf = np.isinf(got) & np.isinf(exp) & (np.sign(got) == np.sign(exp))
    d = np.abs(got.astype(np.float64) - exp.astype(np.float64))
    sp = np.spacing(np.abs(exp)).astype(np.float64)
    return float(np.max(np.where(both_inf, 0.0, d / sp)))


def same(got, exp):
    """Exact equality of dtype, shape and values."""
    got = np.asarray(got)
    if got.dtype != exp.dtype:
        return "dtype %s, expected %s" % (got.dtype, exp.dtype)
    if got.shape != exp.shape:
        return "shape %s, expected %s" % (got.shape, exp.shape)
    if not np.array_equal(got, exp):
        return "values %s, expected %s" % (got.ravel()[:8], exp.ravel()[:8])
    return None


def within(got, exp, bound):
    got = np.asarray(got)
    if got.dtype != exp.dtype:
        return "dtype %s, expected %s" % (got.dtype, exp.dtype)
    if got.shape != exp.shape:
        return "shape %s, expected %s" % (got.shape, exp.shape)
    u = ulps(got, exp)
    if u > bound:
        return "%.3g ulp off (bound %g): %s vs %s" % (
            u, bound, got.ravel()[:6], exp.ravel()[:6])
    return None


FLOAT_BOUND = {"float32": 1, "float16": 1, "float64": 2}


# ---------------------------------------------------------------- checks

def service_checks(c):
    run("health() is {'status': 'ok'}",
        lambda: c.health() == {"status": "ok"} or "got %r" % (c.health(),))
    run("ready() is True", lambda: c.ready() is True)

    def ops():
        ops = c.ops()
        names = [o["op"] for o in ops]
        for op in ("ReduceL2", "ReduceSumSquare"):
            if op not in names:
                return "ops() names %r lack %s" % (names, op)
            o = ops[names.index(op)]
            vs = [v["version"] for v in o["versions"]]
            if vs[:4] != [1, 11, 13, 18]:
                return "%s versions %r" % (op, vs)
            v18 = o["versions"][3]
            for d in ("float32", "float64", "float16", "bfloat16", "int32",
                      "int64", "uint32", "uint64"):
                if d not in v18["dtypes"]:
                    return "%s v18 dtypes %r lack %s" % (op, v18["dtypes"], d)
        return None
    run("ops(): ReduceL2 and ReduceSumSquare, versions 1 11 13 18, "
        "the 8 dtypes at 18", ops)


def dtype_matrix(c):
    """Both ops x every dtype x axes/keepdims x C, Fortran, big-endian."""
    rng = np.random.default_rng(20261201)
    shape = (3, 4, 5)
    cases = [(None, True), ([1], False), ([0, 2], True), ([-1], False),
             ([], True)]
    for dt in ("float32", "float64", "float16", "int32", "int64", "uint32",
               "uint64"):
        kind = np.dtype(dt).kind
        if kind == "f":
            data = {"small integers": rng.integers(-9, 10, shape).astype(dt),
                    "random normal": (rng.standard_normal(shape) * 3)
                    .astype(dt)}
        elif kind == "u":
            data = {"random": rng.integers(0, 1000, shape).astype(dt)}
        else:
            data = {"random": rng.integers(-1000, 1000, shape).astype(dt)}
        for what, x in data.items():
            for op in ("ReduceSumSquare", "ReduceL2"):
                exact = kind != "f" or what == "small integers"
                bad = []
                n = 0
                for axes, kd in cases:
                    exp = to_dtype(ref_reduce(x, op, axes, kd), dt)
                    for layout, arr in (
                            ("C", x),
                            ("Fortran", np.asfortranarray(x)),
                            ("big-endian",
                             x.astype(x.dtype.newbyteorder(">"))),
                            ("strided", np.repeat(x, 2, axis=2)[:, :, ::2])):
                        got = c.reduce(arr, op=op, axes=axes, keepdims=kd)
                        n += 1
                        why = same(got, exp) if exact else \
                            within(got, exp, FLOAT_BOUND[dt])
                        if why:
                            bad.append("axes=%s keepdims=%s %s: %s" %
                                       (axes, kd, layout, why))
                check("%s %s %s: %d calls (axes x keepdims x C/Fortran/"
                      "big-endian/strided) %s" % (
                          op, dt, what, n, "exact" if exact else
                          "within %d ulp" % FLOAT_BOUND[dt]),
                      not bad, *bad[:4])


def more_values(c):
    run("a Python list [3.0, 4.0] goes as float64 -> [5.]",
        lambda: same(c.reduce([3.0, 4.0]), np.array([5.0])))

    def ctx():
        with Client(c.url) as c2:
            r = c2.reduce(np.array([6, 8], np.uint32), keepdims=False)
        return same(r, np.array(10, np.uint32))
    run("Client as a context manager (closes its connection)", ctx)
    run("rank 0: ReduceSumSquare int32 3 -> int32 9, shape ()",
        lambda: same(c.reduce(np.int32(3), op="ReduceSumSquare"),
                     np.array(9, dtype=np.int32)))
    run("zero-size [0,3] over axis 0 -> float64 [[0,0,0]]",
        lambda: same(c.reduce(np.zeros((0, 3)), op="ReduceL2", axes=[0]),
                     np.zeros((1, 3))))
    run("axes given as an int (axes=1)",
        lambda: same(c.reduce(np.array([[3, 4], [6, 8]], np.int64),
                              axes=1, keepdims=False),
                     np.array([5, 10], dtype=np.int64)))
    x = np.array([-3, 4, -5], dtype=np.float32)
    run("noop_with_empty_axes=True, axes=[]: ReduceSumSquare is x^2",
        lambda: same(c.reduce(x, op="ReduceSumSquare", axes=[],
                              noop_with_empty_axes=True), x * x))
    run("noop_with_empty_axes=True, axes=[]: ReduceL2 is |x|",
        lambda: same(c.reduce(x, axes=[], noop_with_empty_axes=True),
                     np.abs(x)))
    run("opset=11 (ReduceL2 v11) keepdims default True",
        lambda: same(c.reduce(np.array([[3, 4]], np.float32), opset=11,
                              axes=[1]), np.array([[5]], np.float32)))
    big = np.array([2**63 + 5, 2**62 + 3], dtype=np.uint64)
    run("uint64 ReduceL2 [2^63+5, 2^62+3] exact: isqrt of the 127-bit sum",
        lambda: same(c.reduce(big, keepdims=False), np.array(
            math.isqrt((2**63 + 5)**2 + (2**62 + 3)**2), dtype=np.uint64)))
    run("int64 ReduceL2 exact integer root (3037000493, not 3037000494)",
        lambda: same(c.reduce(np.array([3037000493, 72565, 28431], np.int64),
                              keepdims=False),
                     np.array(3037000493, dtype=np.int64)))
    x = np.array([50000, 3], dtype=np.int32)
    expect_error("int32 overflow -> ReducedError 422 INTEGER_OVERFLOW",
                 lambda: c.reduce(x, op="ReduceSumSquare"), 422,
                 "INTEGER_OVERFLOW", ("2500000009",))
    run("overflow='saturate' -> 2147483647",
        lambda: same(c.reduce(x, op="ReduceSumSquare", overflow="saturate"),
                     np.array([2147483647], np.int32)))
    run("overflow='wrap' -> 2500000009 - 2^32",
        lambda: same(c.reduce(x, op="ReduceSumSquare", overflow="wrap"),
                     np.array([2500000009 - 2**32], np.int32)))
    f = np.array([1e20, 1e20], dtype=np.float32)
    run("float32 L2 [1e20, 1e20] = 1.4142135e20 (no overflow)",
        lambda: within(c.reduce(f), np.array([1.4142135623730951e20],
                                             np.float32), 0.5))
    nan = np.array([1, np.nan], dtype=np.float32)
    run("float32 NaN propagates",
        lambda: bool(np.isnan(c.reduce(nan, keepdims=False))))
    inf = np.array([1, -np.inf], dtype=np.float64)
    run("float64 -inf: L2 is +inf",
        lambda: same(c.reduce(inf, keepdims=False), np.array(np.inf)))


def bfloat16_checks(c):
    bits = rc.float32_to_bfloat16(np.array([1.5, 2], np.float32))
    run("float32_to_bfloat16([1.5, 2]) = 0x3fc0 0x4000",
        lambda: bits.tolist() == [0x3FC0, 0x4000] or "%r" % bits)
    run("bfloat16 raw: ReduceSumSquare [1.5,2] -> uint16 [0x40c8] (6.25)",
        lambda: same(c.reduce(bits, op="ReduceSumSquare", dtype="bfloat16"),
                     np.array([0x40C8], np.uint16)))
    run("bfloat16_to_float32(0x40c8) = 6.25",
        lambda: rc.bfloat16_to_float32(np.uint16(0x40C8)) == 6.25)
    rng = np.random.default_rng(5)
    x = rng.standard_normal((4, 6)).astype(np.float32)
    b = rc.float32_to_bfloat16(x)
    xv = rc.bfloat16_to_float32(b)
    for op in ("ReduceSumSquare", "ReduceL2"):
        for axes in (None, [0], [1]):
            def one(op=op, axes=axes):
                got = c.reduce(b, op=op, axes=axes, dtype="bfloat16")
                if got.dtype != np.uint16:
                    return "dtype %s, expected uint16 bits" % got.dtype
                ref = np.vectorize(float, otypes=[np.float64])(
                    ref_reduce(xv, op, axes, True)).astype(np.float32)
                exp = rc.float32_to_bfloat16(ref)
                d = np.abs(got.astype(np.int64) - exp.astype(np.int64))
                if got.shape != exp.shape or d.max() > 1:
                    return "got %s, expected %s (1 ulp)" % (got, exp)
                return None
            run("bfloat16 %s axes=%s within 1 ulp (uint16 bits back)" %
                (op, axes), one)
    expect_error("bfloat16 at opset 11 -> 400 DTYPE_NOT_IN_VERSION",
                 lambda: c.reduce(b, dtype="bfloat16", opset=11), 400,
                 "DTYPE_NOT_IN_VERSION")
    run("raw with dtype='float32' too (explicit daemon dtype name)",
        lambda: same(c.reduce(np.array([3, 4], ">f4"), dtype="float32"),
                     np.array([5], np.float32)))
    try:
        c.reduce(np.zeros(3, np.float32), dtype="bfloat16")
        fail("dtype='bfloat16' with 4-byte elements -> TypeError", "no error")
    except TypeError as e:
        check("dtype='bfloat16' with 4-byte elements -> TypeError",
              "bfloat16" in str(e), str(e))


def error_checks(c, url):
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    expect_error("axis 5 -> 400 AXIS_OUT_OF_RANGE, message names axis 5",
                 lambda: c.reduce(x, axes=[5]), 400, "AXIS_OUT_OF_RANGE",
                 ("axis 5",))
    try:
        c.reduce(x, axes=[5])
    except ReducedError as e:
        check("a 400 has retry_after None and the error text in str()",
              e.retry_after is None and "AXIS_OUT_OF_RANGE" in str(e)
              and "400" in str(e), str(e))
    expect_error("duplicate axes [1,-2] -> 400 DUPLICATE_AXIS",
                 lambda: c.reduce(x, axes=[1, -2]), 400, "DUPLICATE_AXIS")
    expect_error("op 'ReduceFoo' passed through -> 400 UNKNOWN_OP",
                 lambda: c.reduce(x, op="ReduceFoo"), 400, "UNKNOWN_OP",
                 ("ReduceFoo",))
    expect_error("unknown attribute bogus=1 passed through -> 400 "
                 "UNKNOWN_FIELD", lambda: c.reduce(x, bogus=1), 400,
                 "UNKNOWN_FIELD", ("bogus",))
    expect_error("overflow='clip' -> 400 INVALID_OVERFLOW_POLICY",
                 lambda: c.reduce(x, overflow="clip"), 400,
                 "INVALID_OVERFLOW_POLICY")
    expect_error("opset 0 -> 400 INVALID_OPSET",
                 lambda: c.reduce(x, opset=0), 400, "INVALID_OPSET")
    expect_error("complex64 sent as .npy -> 400 UNSUPPORTED_DTYPE",
                 lambda: c.reduce(np.ones(3, np.complex64)), 400,
                 "UNSUPPORTED_DTYPE")
    expect_error("raw dtype 'float128' -> 400 UNSUPPORTED_DTYPE",
                 lambda: c.reduce(np.ones(2, np.float64), dtype="float128"),
                 400, "UNSUPPORTED_DTYPE")
    try:
        c.reduce(np.array(["a"]))
        fail("string array -> TypeError before sending", "no error")
    except TypeError:
        ok("string array -> TypeError before sending")
    try:
        st, h, b = c._request("GET", "/nope")
        e = Client._error(st, h, b)
        check("unknown path -> ReducedError 404 NOT_FOUND (error parsing)",
              e.status == 404 and e.code == "NOT_FOUND", str(e))
    except Exception as e:  # noqa: BLE001
        fail("unknown path -> ReducedError 404 NOT_FOUND", str(e))
    e = ReducedError(400, "X", "m")
    check("ReducedError is an Exception with status, code, message",
          isinstance(e, Exception) and (e.status, e.code, e.message) ==
          (400, "X", "m") and "X" in str(e))
    # A port with nothing listening: CONNECTION_ERROR, status None.
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    expect_error("nothing listening -> ReducedError CONNECTION_ERROR, "
                 "status None", lambda: Client("http://127.0.0.1:%d" % port,
                                               timeout=5).health(),
                 None, "CONNECTION_ERROR")
    try:
        Client("ftp://x")
        fail("Client('ftp://x') -> ValueError", "no error")
    except ValueError:
        ok("Client('ftp://x') -> ValueError")


def timeout_checks(url, pid):
    # A listener that accepts and never answers.
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(4)
    port = srv.getsockname()[1]
    c = Client("http://127.0.0.1:%d" % port, timeout=0.5)
    t0 = time.monotonic()
    try:
        c.reduce(np.ones(4, np.float32))
        fail("silent server, timeout=0.5 -> ReducedTimeout", "no error")
    except ReducedTimeout as e:
        dt = time.monotonic() - t0
        check("silent server, timeout=0.5 -> ReducedTimeout (TIMEOUT, "
              "status None, a TimeoutError) after %.2f s" % dt,
              e.code == "TIMEOUT" and e.status is None
              and isinstance(e, TimeoutError) and 0.4 <= dt < 10,
              "code %r status %r after %.2f s" % (e.code, e.status, dt))
    except Exception as e:  # noqa: BLE001
        fail("silent server, timeout=0.5 -> ReducedTimeout",
             "%s: %s" % (type(e).__name__, e))
    srv.close()
    if pid is None:
        skip("timeout against the stopped daemon", "no --pid")
        return
    c = Client(url, timeout=1)
    c.health()   # the connection is open before the daemon stops
    os.kill(pid, signal.SIGSTOP)
    wait_stopped(pid)
    t0 = time.monotonic()
    try:
        c.reduce(np.ones(1000, np.float32))
        fail("daemon stopped (SIGSTOP), timeout=1 -> ReducedTimeout",
             "no error")
    except ReducedTimeout:
        dt = time.monotonic() - t0
        check("daemon stopped (SIGSTOP), timeout=1 -> ReducedTimeout after "
              "%.2f s" % dt, 0.9 <= dt < 10)
    except Exception as e:  # noqa: BLE001
        fail("daemon stopped (SIGSTOP), timeout=1 -> ReducedTimeout",
             "%s: %s" % (type(e).__name__, e))
    finally:
        os.kill(pid, signal.SIGCONT)
    run("after SIGCONT the same Client answers again",
        lambda: same(c.reduce(np.array([3, 4], np.float32)),
                     np.array([5], np.float32)))


def wait_stopped(pid, limit=5.0):
    """Waits until every thread of pid is stopped: kill() only queues
    SIGSTOP, and a thread running on another CPU can still answer a request
    before it stops (seen with several HTTP threads on a loaded machine)."""
    end = time.monotonic() + limit
    while time.monotonic() < end:
        try:
            states = []
            for t in os.listdir("/proc/%d/task" % pid):
                with open("/proc/%d/task/%s/stat" % (pid, t)) as f:
                    states.append(f.read().rsplit(")", 1)[1].split()[0])
        except OSError:
            states = []
        if states and all(st in ("T", "t") for st in states):
            return
        time.sleep(0.01)


def key_checks(kurl, key):
    good = Client(kurl, api_key=key)
    x = np.array([3, 4], np.float32)
    run("api_key: the right key -> 200",
        lambda: same(good.reduce(x), np.array([5], np.float32)))
    run("api_key: ops() with the key", lambda: len(good.ops()) >= 2)
    expect_error("no api_key -> ReducedError 401 UNAUTHORIZED",
                 lambda: Client(kurl).reduce(x), 401, "UNAUTHORIZED")
    expect_error("wrong api_key -> 401 UNAUTHORIZED",
                 lambda: Client(kurl, api_key=key + "x").reduce(x), 401,
                 "UNAUTHORIZED")
    expect_error("ops() without a key -> 401 UNAUTHORIZED",
                 lambda: Client(kurl).ops(), 401, "UNAUTHORIZED")
    run("health() without a key (/healthz is exempt)",
        lambda: Client(kurl).health() == {"status": "ok"})
    big = np.ones(1 << 20, np.float32)   # 4 MiB: the daemon refuses early
    expect_error("no api_key, 4 MiB body -> 401 (read even though the "
                 "daemon stops reading)", lambda: Client(kurl).reduce(big),
                 401, "UNAUTHORIZED")


def small_checks(surl, smax):
    c = Client(surl)
    n = smax // 4 + 64
    x = np.ones(n, np.float32)
    expect_error(".npy of %d bytes, --max-body %d -> 413 BODY_TOO_LARGE "
                 "naming the limit" % (n * 4 + 128, smax),
                 lambda: c.reduce(x), 413, "BODY_TOO_LARGE", (str(smax),))
    expect_error("raw of %d bytes -> 413 BODY_TOO_LARGE" % (n * 4),
                 lambda: c.reduce(x, dtype="float32"), 413, "BODY_TOO_LARGE",
                 (str(n * 4), str(smax)))
    y = np.ones(1 << 22, np.float32)   # 16 MiB against a 4 KiB limit
    expect_error("16 MiB .npy against the small limit -> 413 (answer read "
                 "although the body was cut)", lambda: c.reduce(y), 413,
                 "BODY_TOO_LARGE")
    run("the same Client works after the 413s",
        lambda: same(c.reduce(np.array([3, 4], np.float32)),
                     np.array([5], np.float32)))

    def idle():
        # the daemon runs with --timeout 1: it closes the kept-alive
        # connection; the client reconnects (once) without an error.
        c.reduce(np.array([1], np.float32))
        time.sleep(2.5)
        return same(c.reduce(np.array([3, 4], np.float32)),
                    np.array([5], np.float32))
    run("keep-alive connection closed by the daemon (--timeout 1) while "
        "idle: the next call reconnects", idle)


def tls_checks(turl, cafile):
    c = Client(turl, context=ssl.create_default_context(cafile=cafile))
    run("https: health() with the daemon's certificate",
        lambda: c.health() == {"status": "ok"})
    x = np.arange(1 << 20, dtype=np.float32).reshape(1024, 1024)   # 4 MiB
    run("https: float32 ReduceSumSquare axes=[1] of a strided 1024x64 "
        "view, exact", lambda: same(
            c.reduce(x[:, :64], op="ReduceSumSquare", axes=[1]),
            to_dtype(ref_reduce(x[:, :64], "ReduceSumSquare", [1], True),
                     "float32")))
    run("https: 4 MiB float32 ReduceL2 of everything within 1 ulp "
        "(streamed through TLS)", lambda: within(
            c.reduce(x, keepdims=False), np.asarray(np.float32(np.sqrt(
                np.sum(x.astype(np.float64) ** 2)))), 1))
    expect_error("https: the default context refuses the self-signed "
                 "certificate -> CONNECTION_ERROR",
                 lambda: Client(turl).health(), None, "CONNECTION_ERROR",
                 ("CERTIFICATE",))


def gzip_probe(url):
    """True if the daemon decodes a gzip body (a tiny .npy of [3, 4])."""
    a = np.array([3, 4], np.float32)
    z = zlib.compressobj(6, zlib.DEFLATED, 31)
    body = z.compress(rc._npy_header(a, False) + a.tobytes()) + z.flush()
    u = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=10)
    try:
        conn.request("POST", "/v1/reduce?op=ReduceL2", body=body, headers={
            "Content-Type": "application/x-npy", "Content-Encoding": "gzip",
            "Accept": "application/octet-stream"})
        r = conn.getresponse()
        data = r.read()
        return r.status == 200 and data == np.float32(5).tobytes()
    finally:
        conn.close()


def gzip_checks(c, url):
    if not gzip_probe(url):
        skip("compress=True checks", "the daemon does not decode "
             "Content-Encoding: gzip yet (tiny probe answered otherwise)")
        return
    x = np.arange(1000, dtype=np.float32).reshape(10, 100)
    run("compress=True: ReduceSumSquare float32 axes=[1] exact",
        lambda: same(c.reduce(x, op="ReduceSumSquare", axes=[1],
                              compress=True),
                     to_dtype(ref_reduce(x, "ReduceSumSquare", [1], True),
                              "float32")))
    b = rc.float32_to_bfloat16(np.array([1.5, 2], np.float32))
    run("compress=True with raw bfloat16",
        lambda: same(c.reduce(b, op="ReduceSumSquare", dtype="bfloat16",
                              compress=True), np.array([0x40C8], np.uint16)))
    big = np.ones(1 << 22, np.float32)   # 16 MiB of ones: compresses well
    run("compress=True 16 MiB of ones -> ReduceSumSquare 4194304",
        lambda: same(c.reduce(big, op="ReduceSumSquare", keepdims=False,
                              compress=True), np.array(4194304, np.float32)))


def traced_reduce(c, arr, **kw):
    """(answer, seconds, peak bytes allocated during the call as traced by
    tracemalloc, which sees numpy's buffers and bytearrays)."""
    tracemalloc.start()
    t0 = time.monotonic()
    try:
        got = c.reduce(arr, **kw)
        return got, time.monotonic() - t0, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def big_checks(c):
    # The daemon's default --max-body is 64 MiB (67108864 bytes): a raw body
    # of 64 MiB fits exactly; a .npy body has a 128-byte header, so the .npy
    # arrays are 4095 x 4096 float32 (16 KiB less).
    rng = np.random.default_rng(64)
    x = rng.standard_normal((4096, 4096), dtype=np.float32)   # 64 MiB
    x5 = x[:4095]                                              # a C view
    sq = x.astype(np.float64) ** 2
    ref = {4096: np.asarray(np.float32(np.sqrt(np.sum(sq)))),
           4095: np.asarray(np.float32(np.sqrt(np.sum(sq[:4095]))))}
    for name, arr, kw in (
            ("64 MiB float32 sent raw", x, {"dtype": "float32"}),
            ("64 MiB - 16 KiB float32 .npy, C order", x5, {}),
            ("64 MiB - 16 KiB float32 .npy, Fortran order",
             np.asfortranarray(x5), {}),
            ("64 MiB - 16 KiB float32 .npy, big-endian", x5.astype(">f4"),
             {})):
        try:
            got, dt, peak = traced_reduce(c, arr, keepdims=False, **kw)
        except Exception as e:  # noqa: BLE001
            fail("%s: ReduceL2 of everything" % name,
                 "%s: %s" % (type(e).__name__, e))
            continue
        why = within(got, ref[arr.shape[0]], 1)
        check("%s: ReduceL2 of everything within 1 ulp (%.2f s)" % (name, dt),
              why is None, why or "")
        check("%s: streamed without a copy (peak traced allocation %d KiB "
              "< 4 MiB)" % (name, peak >> 10), peak < 4 << 20)
    ref_ax1 = np.sqrt(np.sum(sq[:4095], axis=1)).astype(np.float32)
    ref_ax0 = np.sqrt(np.sum(sq[:4095], axis=0, keepdims=True)
                      ).astype(np.float32)
    run(".npy 4095 x 4096 float32: ReduceL2 axes=[1] (4095 results) within "
        "1 ulp", lambda: within(c.reduce(x5, axes=[1], keepdims=False),
                                ref_ax1, 1))
    run(".npy 4095 x 4096 float32 Fortran: ReduceL2 axes=[0], keepdims, "
        "within 1 ulp", lambda: within(c.reduce(np.asfortranarray(x5),
                                                axes=[0]), ref_ax0, 1))
    del sq
    # An answer as large as the input: elementwise (noop) ReduceSumSquare
    # of 16 Mi int32 values, exact; the answer is read into one buffer.
    xi = rng.integers(-40000, 40000, 1 << 24, dtype=np.int32)
    try:
        got, dt, peak = traced_reduce(c, xi, op="ReduceSumSquare", axes=[],
                                      noop_with_empty_axes=True,
                                      dtype="int32")
        why = same(got, xi * xi)   # |x| < 40000: the squares fit int32
        check("64 MiB int32 raw, noop ReduceSumSquare: a 64 MiB answer, "
              "exact (%.2f s)" % dt, why is None, why or "")
        check("64 MiB answer read into one buffer (peak traced allocation "
              "%d KiB < 72 MiB)" % (peak >> 10), peak < 72 << 20)
    except Exception as e:  # noqa: BLE001
        fail("64 MiB int32 raw, noop ReduceSumSquare",
             "%s: %s" % (type(e).__name__, e))


def thread_checks(c):
    errors = []

    def worker(k):
        try:
            for i in range(15):
                v = np.array([k, i, 2], np.int64)
                got = c.reduce(v, op="ReduceSumSquare", keepdims=False)
                if int(got) != k * k + i * i + 4:
                    errors.append("thread %d call %d: %r" % (k, i, got))
        except Exception as e:  # noqa: BLE001
            errors.append("thread %d: %s" % (k, e))
    ts = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    check("one Client shared by 8 threads, 120 calls, all exact",
          not errors, *errors[:4])


# ------------------------------------------ operators being added elsewhere

NEW_DTYPES = ("int8", "uint8", "int16", "uint16", "bool")


def family_checks(c):
    """ArgMax/ArgMin and the 8/16-bit and bool dtypes (the daemon serves
    all twelve ONNX reductions: a daemon without ArgMax fails here)."""
    ops = {o["op"]: o for o in c.ops()}
    if not check("GET /v1/ops lists ArgMax and ArgMin",
                 "ArgMax" in ops and "ArgMin" in ops, sorted(ops)):
        return
    rng = np.random.default_rng(11)
    x = rng.integers(-5, 6, (3, 4, 5)).astype(np.float32)   # ties
    for name, fn, npf in (("argmax", c.argmax, np.argmax),
                          ("argmin", c.argmin, np.argmin)):
        for axis in (0, 1, -1):
            run("%s axis=%d keepdims=False == np.%s (int64)" %
                (name, axis, name),
                lambda fn=fn, npf=npf, axis=axis: same(
                    fn(x, axis=axis, keepdims=False),
                    npf(x, axis=axis).astype(np.int64)))
            run("%s axis=%d keepdims=True" % (name, axis),
                lambda fn=fn, npf=npf, axis=axis: same(
                    fn(x, axis=axis), np.expand_dims(
                        npf(x, axis=axis).astype(np.int64), axis)))

            def last(fn=fn, npf=npf, axis=axis):
                n = x.shape[axis]
                exp = (n - 1 - npf(np.flip(x, axis=axis), axis=axis)
                       ).astype(np.int64)
                return same(fn(x, axis=axis, keepdims=False,
                               select_last_index=True), exp)
            run("%s axis=%d select_last_index=True (ties: the last)" %
                (name, axis), last)
    refs = {
        "ReduceMax": lambda a, ax, kd: np.max(a, axis=ax, keepdims=kd),
        "ReduceMin": lambda a, ax, kd: np.min(a, axis=ax, keepdims=kd),
        "ReduceSum": lambda a, ax, kd: np.sum(a, axis=ax, keepdims=kd,
                                              dtype=a.dtype),
        "ArgMax": None, "ArgMin": None,
    }
    for op, ref in refs.items():
        if op not in ops:
            continue
        # the newest version's dtypes, asked for at that version (bool is
        # ReduceMax/ReduceMin 20 only; without an opset /v1 uses 18)
        newest = ops[op]["versions"][-1]
        for dt in NEW_DTYPES:
            if dt not in newest["dtypes"]:
                continue
            npdt = rc.DTYPES[dt]
            if dt == "bool":
                a = rng.integers(0, 2, (4, 6)).astype(np.bool_)
            else:
                a = rng.integers(0, 4, (4, 6)).astype(npdt)   # sums fit
            if ref is None:
                npf = np.argmax if op == "ArgMax" else np.argmin
                run("%s %s axis=1 (.npy %s) -> int64 == numpy" %
                    (op, dt, a.dtype.str),
                    lambda op=op, a=a, npf=npf: same(
                        c.reduce(a, op=op, keepdims=False, axis=1),
                        npf(a, axis=1).astype(np.int64)))
            else:
                run("%s %s axes=[1] (.npy %s) == numpy, dtype kept" %
                    (op, dt, a.dtype.str),
                    lambda op=op, a=a, ref=ref, v=newest["version"]: same(
                        c.reduce(a, op=op, axes=[1], keepdims=False,
                                 opset=v),
                        np.asarray(ref(a, 1, False))))
            run("%s %s sent raw (dtype=%r) == sent as .npy" % (op, dt, dt),
                lambda op=op, a=a, dt=dt, v=newest["version"]: same(
                    c.reduce(a, op=op, dtype=dt, opset=v,
                             **({"axis": 0} if ref is None else {})),
                    c.reduce(a, op=op, opset=v,
                             **({"axis": 0} if ref is None else {}))))


def readme_checks(url):
    """The ```python blocks of README.md's "Python client" section, run as
    doctests against the daemon (its address for http://127.0.0.1:8080)."""
    path = os.path.join(HERE, "..", "..", "README.md")
    with open(path, encoding="utf-8") as f:
        text = f.read()
    start = text.find("\n## Python client\n")
    if start < 0:
        fail("README.md has a 'Python client' section")
        return
    end = text.find("\n## ", start + 1)
    section = text[start:end if end > 0 else len(text)]
    blocks = []
    for part in section.split("```python\n")[1:]:
        blocks.append(part.split("```", 1)[0])
    check("README Python client section has examples (%d blocks)" %
          len(blocks), len(blocks) >= 2)
    globs = {}
    parser = doctest.DocTestParser()
    for i, b in enumerate(blocks, 1):
        b = b.replace("http://127.0.0.1:8080", url)
        t = parser.get_doctest(b, globs, "README block %d" % i, path, 0)
        out = io.StringIO()
        runner = doctest.DocTestRunner(
            optionflags=doctest.NORMALIZE_WHITESPACE)
        r = runner.run(t, out=out.write, clear_globs=False)
        globs = t.globs   # DocTest copied them: the next block goes on
        check("README Python example block %d (%d examples) prints what it "
              "shows" % (i, r.attempted), r.failed == 0 and r.attempted > 0,
              *out.getvalue().splitlines()[:12])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--keyed-url")
    ap.add_argument("--key")
    ap.add_argument("--small-url")
    ap.add_argument("--small-max", type=int, default=4096)
    ap.add_argument("--pid", type=int)
    ap.add_argument("--tls-url")
    ap.add_argument("--cafile")
    ap.add_argument("--no-big", action="store_true")
    o = ap.parse_args()
    c = Client(o.url, timeout=120)
    service_checks(c)
    readme_checks(o.url)
    dtype_matrix(c)
    more_values(c)
    bfloat16_checks(c)
    error_checks(c, o.url)
    thread_checks(c)
    gzip_checks(c, o.url)
    family_checks(c)
    if o.keyed_url and o.key:
        key_checks(o.keyed_url, o.key)
    else:
        skip("api_key checks", "no --keyed-url/--key")
    if o.small_url:
        small_checks(o.small_url, o.small_max)
    else:
        skip("413 and idle reconnect checks", "no --small-url")
    if o.tls_url and o.cafile:
        tls_checks(o.tls_url, o.cafile)
    else:
        skip("https checks", "no --tls-url/--cafile")
    if o.no_big:
        skip("64 MiB checks", "--no-big")
    else:
        big_checks(c)
    timeout_checks(o.url, o.pid)
    if SKIP:
        print("(%d skipped)" % SKIP)
    print("%d passed, %d failed" % (PASS, FAIL))
    return 1 if FAIL else 0


if __name__ == "__main__":
    sys.exit(main())
