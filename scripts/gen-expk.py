#!/usr/bin/python3
"""Prints the constants of lib/expk.h: 16/ln2, ln2/16 rounded to double
(and how far below ln2/16 it is), the coefficients of g with
e^r - 1 ~ r g(r) on |r| <= ln2/32 (degree 5, interpolated at Chebyshev
nodes, a hair wider than the interval, in 60-digit decimal arithmetic),
the largest error of r g(r) with those double coefficients evaluated
exactly, and the table entries: the bits of 2^(j/16) correctly rounded,
minus j << 48.  Needs only the standard library."""
from decimal import Decimal as D, getcontext
import struct

getcontext().prec = 60
PI = D("3.14159265358979323846264338327950288419716939937510582097494")
LN2 = D(2).ln()
N = 6  # coefficients of g: degree 5


def cos(x):
    s, t, k = D(0), D(1), 0
    while abs(t) > D(10) ** -70:
        s += t
        k += 2
        t = -t * x * x / (k * (k - 1))
    return s


def g(r):
    return (r.exp() - 1) / r if r != 0 else D(1)


def bits(v):
    return struct.unpack("<Q", struct.pack("<d", v))[0]


a = LN2 / 32 * D("1.001")
nodes = [a * cos((2 * i + 1) * PI / (2 * N)) for i in range(N)]
m = [[x ** j for j in range(N)] + [g(x)] for x in nodes]
for c in range(N):  # Gauss-Jordan with partial pivoting
    p = max(range(c, N), key=lambda i: abs(m[i][c]))
    m[c], m[p] = m[p], m[c]
    for i in range(N):
        if i != c:
            f = m[i][c] / m[c][c]
            m[i] = [u - f * v for u, v in zip(m[i], m[c])]
coef = [float(m[i][N] / m[i][i]) for i in range(N)]


def rg(r):
    p = D(coef[-1])
    for c in reversed(coef[:-1]):
        p = p * r + D(c)
    return r * p


worst = max(abs(rg(a * i / 2000) - (a * i / 2000).exp() + 1)
            for i in range(-2000, 2001))
ln2_16 = float(LN2 / 16)
print("#define EXPK_INV %s" % float(16 / LN2).hex())
print("#define EXPK_LN2 %s /* %.3g below ln2/16 */"
      % (ln2_16.hex(), float(LN2 / 16 - D(ln2_16))))
print("/* max |r g(r) - (e^r - 1)| on |r| <= ln2/32: %.3g */" % worst)
print("static const double expk_c[6] = {\n  %s,\n};"
      % ", ".join(c.hex() for c in coef))
print("static const uint64_t expk_tb[16] = {")
for j in range(16):
    v = float(D(2) ** (D(j) / 16))
    print("  UINT64_C(0x%016x), /* 2^(%d/16) = %s */"
          % ((bits(v) - (j << 48)) % 2 ** 64, j, v.hex()))
print("};")
