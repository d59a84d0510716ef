#!/usr/bin/python3
# hostile.py - a battery of hostile requests and clients that close at
# every stage (t_hostile.sh).  Each client closes its socket itself; the
# daemon must release what it held.
#
#   hostile.py PORT ROUNDS
import socket
import struct
import sys
import time

PORT = int(sys.argv[1])
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 1
J = b'{"op":"ReduceL2","input":{"dtype":"float32","shape":[2],"data":[3,4]}}'
RAWQ = b"/v1/reduce?op=ReduceSumSquare&dtype=float32&shape=%d&axes=0"


def conn():
    s = socket.create_connection(("127.0.0.1", PORT), timeout=10)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 0, 0))
    return s


def send_close(data, read=False, pause=0.0):
    s = conn()
    try:
        s.sendall(data)
        if pause:
            time.sleep(pause)
        if read:
            s.settimeout(5)
            try:
                s.recv(65536)
            except OSError:
                pass
    except OSError:
        pass
    s.close()


def post(path, body, ctype=b"application/json", extra=b"", length=None):
    n = len(body) if length is None else length
    return (b"POST " + path + b" HTTP/1.1\r\nHost: x\r\nContent-Type: " +
            ctype + b"\r\nContent-Length: %d\r\n" % n + extra + b"\r\n" + body)


def case0():  # 10 MB header line
    big = b"X-Big: " + b"a" * (10 * 1024 * 1024) + b"\r\n"
    send_close(b"GET /healthz HTTP/1.1\r\nHost: x\r\n" + big + b"\r\n", read=True)
def case1():  # 10^4 query parameters
    q = b"&".join(b"p%d=%d" % (i, i) for i in range(10000))
    send_close(b"POST /v1/reduce?" + q + b" HTTP/1.1\r\nHost: x\r\n"
               b"Content-Type: application/octet-stream\r\nContent-Length: 4\r\n\r\nabcd",
               read=True)
def case2():  # lying lengths: more announced than sent, then close
    send_close(post(b"/v1/reduce", J, length=len(J) + 1000))
    send_close(post(RAWQ % 4000000, b"\0" * 100000, b"application/octet-stream",
                    length=16000000))
def case3():  # fewer announced than sent
    send_close(post(b"/v1/reduce", J + b"garbage" * 100, length=len(J)), read=True)
def case4():  # cut chunked bodies
    send_close(b"POST /v1/reduce HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
               b"Transfer-Encoding: chunked\r\n\r\n10\r\n{\"op\":\"ReduceL2\"")
    send_close(b"POST /v1/reduce HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
               b"Transfer-Encoding: chunked\r\n\r\nffffff\r\n" + b"[" * 5000)
def case5():  # pickles (.npy object arrays) and a raw pickle
    hdr = b"{'descr': '|O', 'fortran_order': False, 'shape': (2,), }"
    hdr += b" " * (63 - (10 + len(hdr)) % 64) + b"\n"
    npy = b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hdr)) + hdr + b"\x80\x04\x95" + b"\0" * 64
    send_close(post(b"/v1/reduce?op=ReduceL2", npy, b"application/x-npy"), read=True)
def case6():  # headers half sent (and the request line)
    send_close(b"POST /v1/red")
    send_close(b"POST /v1/reduce HTTP/1.1\r\nHost: x\r\nContent-Le")
def case7():  # mid-body
    send_close(post(RAWQ % 4000000, b"\0" * 3000000, b"application/octet-stream",
                    length=16000000), pause=0.05)
def case8():  # right after the last byte
    send_close(post(RAWQ % 4000000, b"\0" * 16000000, b"application/octet-stream"))
    send_close(post(b"/v1/reduce", J))
def case9():  # while its job runs (a large buffered body: reduce on the pool)
    send_close(post(RAWQ % 250000, b"\0" * 1000000, b"application/octet-stream"))
def case10():  # while its answer is sent: a large JSON answer (no reduction), unread
    n = 2000000
    send_close(post(b"/v1/reduce?op=ReduceSumSquare&dtype=float32&shape=%d&axes=&noop_with_empty_axes=1" % n,
                    b"\0" * (4 * n), b"application/octet-stream",
                    extra=b"Accept: application/json\r\n"), pause=0.2)



CASES = [('10 MB header line', case0), ('10^4 query parameters', case1), ('lying lengths: more announced than sent, then close', case2), ('fewer announced than sent', case3), ('cut chunked bodies', case4), ('pickles (.npy object arrays) and a raw pickle', case5), ('headers half sent', case6), ('mid-body', case7), ('right after the last byte', case8), ('while its job runs (a large buffered body: reduce on the pool)', case9), ('while its answer is sent: a large JSON answer (no reduction), unread', case10)]

ONLY = int(sys.argv[3]) if len(sys.argv) > 3 else -1
for _ in range(ROUNDS):
    for i, (name, fn) in enumerate(CASES):
        if ONLY < 0 or ONLY == i:
            fn()
print("battery done")
