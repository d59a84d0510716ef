"""reduced_client - a Python client for the reduced daemon (POST /v1/reduce).

One file, standard library plus numpy::

    from reduced_client import Client, ReducedError
    c = Client("http://127.0.0.1:8080", api_key=None, timeout=60)
    y = c.reduce(x, op="ReduceL2", axes=[1], keepdims=False)

Tensors travel as .npy (application/x-npy: any byte order, C or Fortran
order) or, when a daemon dtype name is given with ``dtype=`` (bfloat16: a
uint16 array of the bits), as raw little-endian elements
(application/octet-stream, dtype and shape in the query string).  The body
is streamed from the array's own memory in 1 MiB memoryview slices with a
Content-Length, so a large array is never copied (a non-contiguous array is
made contiguous first; a big-endian one sent raw is byte-swapped first).
Answers are asked for as .npy, or raw when the dtype has no .npy descriptor
(bfloat16), and come back as numpy arrays of the answer's dtype and shape;
bfloat16 answers are uint16 arrays of the bits (see bfloat16_to_float32).

Every failure raises ReducedError (.status, .code, .message): the daemon's
{"error": {"code", "message"}} for an HTTP error, code "TIMEOUT"
(ReducedTimeout, also a TimeoutError) or "CONNECTION_ERROR" (status None)
when no answer came.

A Client keeps one keep-alive connection per thread; it may be shared by
threads.
"""

import ast
import http.client
import json
import socket
import ssl
import threading
import urllib.parse
import zlib

import numpy as np

__all__ = ["Client", "ReducedError", "ReducedTimeout",
           "bfloat16_to_float32", "float32_to_bfloat16"]

CHUNK = 1 << 20
NPY = "application/x-npy"
RAW = "application/octet-stream"
JSON = "application/json"

# Daemon dtype name -> numpy dtype of its elements (little-endian).  bfloat16
# has no numpy dtype: its elements are carried as uint16 bits.
DTYPES = {
    "float32": np.dtype("<f4"), "float64": np.dtype("<f8"),
    "float16": np.dtype("<f2"), "bfloat16": np.dtype("<u2"),
    "int8": np.dtype("i1"), "uint8": np.dtype("u1"),
    "int16": np.dtype("<i2"), "uint16": np.dtype("<u2"),
    "int32": np.dtype("<i4"), "uint32": np.dtype("<u4"),
    "int64": np.dtype("<i8"), "uint64": np.dtype("<u8"),
    "bool": np.dtype("?"),
}


class ReducedError(Exception):
    """An error answer of the daemon, or no answer at all.

    status: the HTTP status (None when no answer arrived); code: the
    daemon's error code ("AXIS_OUT_OF_RANGE", ...; "HTTP_<status>" for an
    answer that is not the daemon's JSON error, "TIMEOUT",
    "CONNECTION_ERROR" or "BAD_RESPONSE" from the client itself); message:
    the daemon's message; request_id: its X-Request-Id; retry_after: its
    Retry-After in seconds (503), else None.
    """

    def __init__(self, status, code, message, request_id=None,
                 retry_after=None):
        super().__init__("%s%s: %s" % (code, "" if status is None
                                       else " (HTTP %d)" % status, message))
        self.status = status
        self.code = code
        self.message = message
        self.request_id = request_id
        self.retry_after = retry_after


class ReducedTimeout(ReducedError, TimeoutError):
    """No answer within the client's timeout (code "TIMEOUT")."""


def bfloat16_to_float32(bits):
    """uint16 bfloat16 bits -> the float32 values they stand for (exact)."""
    b = np.asarray(bits, dtype=np.uint16)
    u = b.reshape(-1).astype(np.uint32)
    u <<= np.uint32(16)
    return u.view(np.float32).reshape(b.shape)


def float32_to_bfloat16(x):
    """float32 values -> uint16 bfloat16 bits, rounded to nearest even
    (a NaN stays a quiet NaN)."""
    f = np.asarray(x, dtype=np.float32)
    u = f.reshape(-1).view(np.uint32).astype(np.uint64)
    u += np.uint64(0x7FFF) + ((u >> np.uint64(16)) & np.uint64(1))
    r = (u >> np.uint64(16)).astype(np.uint16)
    nan = np.isnan(f.reshape(-1))
    r[nan] = (f.reshape(-1)[nan].view(np.uint32) >> np.uint32(16)
              ).astype(np.uint16) | np.uint16(0x40)
    return r.reshape(f.shape)


def _qvalue(v):
    """A query-string value: lists comma-separated, booleans 1/0."""
    if isinstance(v, (bool, np.bool_)):
        return "1" if v else "0"
    if isinstance(v, (list, tuple, np.ndarray)):
        return ",".join(_qvalue(e) for e in v)
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    return str(v)


def _flat_bytes(a):
    """A uint8 view of the bytes of a contiguous array, in memory order."""
    flat = a.reshape(-1, order="F" if a.flags.f_contiguous
                     and not a.flags.c_contiguous else "C")
    return flat.view(np.uint8) if flat.dtype.itemsize else flat


def _npy_header(a, fortran):
    shape = tuple(int(d) for d in a.shape)
    text = "{'descr': %r, 'fortran_order': %r, 'shape': %r, }" % (
        a.dtype.str, fortran, shape)
    # magic(6) + version(2) + length(2 or 4) + text + padding + "\n":
    # a multiple of 64 bytes, as numpy writes it.
    for version, lenbytes in ((1, 2), (2, 4)):
        pre = 6 + 2 + lenbytes
        total = -(-(pre + len(text) + 1) // 64) * 64
        hlen = total - pre
        if hlen < (1 << (8 * lenbytes)):
            break
    text = text + " " * (hlen - len(text) - 1) + "\n"
    return (b"\x93NUMPY" + bytes([version, 0])
            + hlen.to_bytes(lenbytes, "little") + text.encode("latin-1"))


def _chunks(head, data):
    if head:
        yield head
    mv = memoryview(data)
    for i in range(0, len(mv), CHUNK):
        yield mv[i:i + CHUNK]


def _gzip(pieces):
    """Streams the pieces through a gzip (RFC 1952) compressor."""
    z = zlib.compressobj(6, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    for p in pieces:
        out = z.compress(p)
        if out:
            yield out
    yield z.flush()


def _parse_npy(body):
    mv = memoryview(body)
    if len(mv) < 10 or bytes(mv[:6]) != b"\x93NUMPY":
        raise ReducedError(200, "BAD_RESPONSE",
                           "the answer is not a .npy file")
    major = mv[6]
    lenbytes = 2 if major == 1 else 4
    hlen = int.from_bytes(mv[8:8 + lenbytes], "little")
    start = 8 + lenbytes + hlen
    try:
        h = ast.literal_eval(bytes(mv[8 + lenbytes:start]).decode("latin-1"))
        dt = np.dtype(h["descr"])
        shape = tuple(h["shape"])
        fortran = bool(h["fortran_order"])
        count = 1
        for d in shape:
            count *= d
        arr = np.frombuffer(body, dtype=dt, count=count, offset=start)
    except (ValueError, SyntaxError, KeyError, TypeError) as e:
        raise ReducedError(200, "BAD_RESPONSE",
                           "unreadable .npy answer: %s" % e) from None
    return arr.reshape(shape, order="F" if fortran else "C")


def _parse_raw(body, headers):
    name = headers.get("Tensor-Dtype")
    try:
        shape = tuple(json.loads(headers.get("Tensor-Shape", "")))
        dt = DTYPES[name]
        return np.frombuffer(body, dtype=dt).reshape(shape)
    except (ValueError, KeyError, TypeError) as e:
        raise ReducedError(200, "BAD_RESPONSE", "raw answer with Tensor-Dtype "
                           "%r, Tensor-Shape %r: %s"
                           % (name, headers.get("Tensor-Shape"), e)) from None


class Client:
    """A client of one reduced daemon.

    url: "http://host:port" (or https://, optionally with a path prefix);
    api_key: sent as "Authorization: Bearer KEY"; timeout: seconds for the
    connection and for each socket read or write (http.client semantics:
    a bound on silence, not on the whole request); context: an
    ssl.SSLContext for https (default: ssl.create_default_context()).
    """

    def __init__(self, url, api_key=None, timeout=60, context=None):
        u = urllib.parse.urlsplit(url)
        if u.scheme not in ("http", "https") or not u.hostname:
            raise ValueError("url %r: expected http://host[:port]" % (url,))
        self.url = url
        self.api_key = api_key
        self.timeout = timeout
        self._https = u.scheme == "https"
        self._host = u.hostname
        self._port = u.port
        self._prefix = u.path.rstrip("/")
        self._context = context
        self._local = threading.local()

    # ------------------------------------------------------------ requests

    def _connection(self):
        conn = getattr(self._local, "conn", None)
        if conn is None:
            if self._https:
                conn = http.client.HTTPSConnection(
                    self._host, self._port, timeout=self.timeout,
                    context=self._context or ssl.create_default_context())
            else:
                conn = http.client.HTTPConnection(self._host, self._port,
                                                  timeout=self.timeout)
            self._local.conn = conn
            self._local.used = False
        return conn

    def close(self):
        """Closes this thread's connection (a new one opens when needed)."""
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _request(self, method, path, body=None, headers=None):
        """Sends the request; body: None or a function returning a fresh
        iterable of byte chunks.  Returns (status, headers, body bytes)."""
        hdrs = dict(headers or {})
        if self.api_key is not None:
            hdrs["Authorization"] = "Bearer " + self.api_key
        for attempt in (0, 1):
            conn = self._connection()
            reused = self._local.used
            try:
                sent = False
                try:
                    conn.request(method, self._prefix + path,
                                 body=None if body is None else body(),
                                 headers=hdrs)
                    sent = True
                except (BrokenPipeError, ConnectionResetError):
                    # The daemon may answer (413, 401, ...) and close before
                    # the whole body is sent: read its answer if it is there.
                    if reused and attempt == 0:
                        raise
                resp = conn.getresponse()
                self._local.used = True
                answer = resp.status, resp.headers, self._read(resp)
                if not sent:
                    self.close()
                return answer
            except socket.timeout as e:
                self.close()
                raise ReducedTimeout(None, "TIMEOUT", "no answer from %s "
                                     "within %s s" % (self.url, self.timeout)
                                     ) from e
            except (http.client.RemoteDisconnected, ConnectionError) as e:
                self.close()
                if reused and attempt == 0:
                    continue   # a kept-alive connection the daemon closed
                raise ReducedError(None, "CONNECTION_ERROR", "%s %s: %s" % (
                    method, self.url + path, e)) from e
            except (OSError, http.client.HTTPException) as e:
                self.close()
                raise ReducedError(None, "CONNECTION_ERROR", "%s %s: %s" % (
                    method, self.url + path, e)) from e
        raise AssertionError("unreachable")

    @staticmethod
    def _read(resp):
        n = resp.getheader("Content-Length")
        if n is None or not n.isdigit():
            return resp.read()
        buf = bytearray(int(n))
        mv = memoryview(buf)
        got = 0
        while got < len(buf):
            k = resp.readinto(mv[got:])
            if not k:
                raise http.client.IncompleteRead(b"", len(buf) - got)
            got += k
        resp.read()   # lets http.client see the end of the response
        return buf

    @staticmethod
    def _error(status, headers, body):
        code, message = "HTTP_%d" % status, None
        try:
            e = json.loads(bytes(body).decode("utf-8"))["error"]
            code, message = e["code"], e["message"]
        except (ValueError, KeyError, TypeError):
            message = bytes(body[:400]).decode("utf-8", "replace").strip()
        ra = headers.get("Retry-After")
        return ReducedError(status, code, message or "HTTP %d" % status,
                            headers.get("X-Request-Id"),
                            int(ra) if ra and ra.isdigit() else None)

    def _get_json(self, path):
        status, headers, body = self._request("GET", path,
                                              headers={"Accept": JSON})
        if status != 200:
            raise self._error(status, headers, body)
        return json.loads(bytes(body).decode("utf-8"))

    # ------------------------------------------------------------ API

    def health(self):
        """GET /healthz: {"status": "ok"} (ReducedError otherwise)."""
        return self._get_json("/healthz")

    def ready(self):
        """GET /readyz: True when ready, False while draining (503)."""
        try:
            self._get_json("/readyz")
        except ReducedError as e:
            if e.status == 503:
                return False
            raise
        return True

    def ops(self):
        """GET /v1/ops: the list of operators, each {"op": name,
        "versions": [{"version", "opsets", "dtypes", ...}, ...]}."""
        return self._get_json("/v1/ops")["ops"]

    def reduce(self, array, op="ReduceL2", axes=None, keepdims=True,
               opset=None, dtype=None, compress=False, **attributes):
        """Reduces `array` on the daemon; returns a numpy array.

        op: the operator name, passed through ("ReduceL2",
        "ReduceSumSquare", ...); axes: None (the daemon's default: all
        axes), a list (may be empty) or an int; keepdims: bool; opset: the
        ONNX opset (None: the daemon's default, 18); dtype: None to send
        `array` as .npy with its own dtype, or a daemon dtype name to send
        its bytes raw as that dtype ("bfloat16" with a uint16 array of the
        bits); compress: gzip the body (Content-Encoding: gzip, chunked);
        attributes: further query parameters, passed through
        (noop_with_empty_axes=True, overflow="saturate", axis=1,
        select_last_index=True, ...; booleans as 1/0, lists
        comma-separated, None left out).

        The answer has the daemon's output dtype and shape; bfloat16
        answers are uint16 arrays of the bits.
        """
        a = np.asarray(array)
        if a.dtype.kind not in "biufc" or a.dtype.fields is not None:
            raise TypeError("reduce: arrays of dtype %s cannot be sent (only "
                            "bool, integer and floating dtypes)" % a.dtype)
        if not (a.flags.c_contiguous or a.flags.f_contiguous):
            a = np.ascontiguousarray(a)
        params = [("op", op)]
        if opset is not None:
            params.append(("opset", opset))
        if axes is not None:
            params.append(("axes", [axes] if isinstance(
                axes, (int, np.integer)) else list(axes)))
        params.append(("keepdims", bool(keepdims)))
        params.extend((k, v) for k, v in attributes.items() if v is not None)
        if dtype is None:
            ctype = NPY
            fortran = a.flags.f_contiguous and not a.flags.c_contiguous
            head = _npy_header(a, fortran)
        else:
            want = DTYPES.get(dtype)
            if want is not None and want.itemsize != a.dtype.itemsize:
                raise TypeError("reduce: dtype %r has %d-byte elements; the "
                                "array's %s has %d" % (dtype, want.itemsize,
                                                       a.dtype,
                                                       a.dtype.itemsize))
            if a.dtype.byteorder == ">" or (a.dtype.byteorder == "="
                                            and np.little_endian is False):
                a = a.astype(a.dtype.newbyteorder("<"))
            if not a.flags.c_contiguous:
                a = np.ascontiguousarray(a)
            ctype = RAW
            head = b""
            params += [("dtype", dtype),
                       ("shape", [int(d) for d in a.shape])]
        data = _flat_bytes(a)
        query = "&".join("%s=%s" % (urllib.parse.quote(str(k), safe=""),
                                    urllib.parse.quote(_qvalue(v), safe=",-"))
                         for k, v in params)
        headers = {"Content-Type": ctype,
                   "Accept": NPY + ", " + RAW + ";q=0.9"}
        if compress:
            headers["Content-Encoding"] = "gzip"   # no length: chunked
            body = lambda: _gzip(_chunks(head, data))
        else:
            headers["Content-Length"] = str(len(head) + data.nbytes)
            body = lambda: _chunks(head, data)
        status, rh, rbody = self._request("POST", "/v1/reduce?" + query,
                                          body, headers)
        if status != 200:
            raise self._error(status, rh, rbody)
        ct = (rh.get("Content-Type") or "").split(";")[0].strip().lower()
        if ct == NPY:
            return _parse_npy(rbody)
        if ct == RAW:
            return _parse_raw(rbody, rh)
        raise ReducedError(status, "BAD_RESPONSE",
                           "answer of Content-Type %r" % ct)

    def argmax(self, array, axis=0, keepdims=True, select_last_index=False,
               opset=None, **attributes):
        """ArgMax along `axis` (int64 indices), for daemons that have it."""
        return self.reduce(array, op="ArgMax", keepdims=keepdims, opset=opset,
                           axis=axis, select_last_index=select_last_index,
                           **attributes)

    def argmin(self, array, axis=0, keepdims=True, select_last_index=False,
               opset=None, **attributes):
        """ArgMin along `axis` (int64 indices), for daemons that have it."""
        return self.reduce(array, op="ArgMin", keepdims=keepdims, opset=opset,
                           axis=axis, select_last_index=select_last_index,
                           **attributes)
