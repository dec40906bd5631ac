"""Print the tables of cygrad/_kernels/cg_pow.h (log and exp for x ** k).

log: z in [0.75, 1.5) in 128 intervals by the top 7 mantissa bits of
bits(x) - bits(0.75); per interval invc ~ 1/centre with 10 significant bits
(so that fma(z, invc, -1) is exact), 1 on both sides of z = 1, and
-log(invc) as hi (a multiple of 2^-42) + lo.  exp: 2^(j/128) as the bits
of its rounding and the relative tail.
"""
import struct

import mpmath

mpmath.mp.prec = 200


def d2b(x):
    return struct.unpack("<Q", struct.pack("<d", x))[0]


def b2d(u):
    return struct.unpack("<d", struct.pack("<Q", u))[0]


OFF = d2b(0.75)
inv, lhi, llo = [], [], []
for i in range(128):
    lo = b2d(OFF + (i << 45))
    hi = b2d(OFF + ((i + 1) << 45)) if i < 127 else 1.5
    if lo == 1.0 or hi == 1.0:
        c = 1.0
    else:
        c = float(mpmath.mpf(1) / ((mpmath.mpf(lo) + mpmath.mpf(hi)) / 2))
        m, e = mpmath.frexp(c)
        c = float(mpmath.ldexp(mpmath.nint(mpmath.ldexp(m, 10)), e - 10))
    L = -mpmath.log(mpmath.mpf(c))
    h = float(mpmath.nint(L * 2 ** 42) / 2 ** 42)
    inv.append(c)
    lhi.append(h)
    llo.append(float(L - mpmath.mpf(h)))
sb, tail = [], []
for j in range(128):
    v = mpmath.power(2, mpmath.mpf(j) / 128)
    d = float(v)
    sb.append(d2b(d))
    tail.append(float((v - mpmath.mpf(d)) / mpmath.mpf(d)))
L2 = mpmath.log(2)
ln2hi = float(mpmath.nint(L2 * 2 ** 42) / 2 ** 42)
print("#define CG_POW_LN2_HI %s" % ln2hi.hex())
print("#define CG_POW_LN2_LO %s" % float(L2 - ln2hi).hex())
n = mpmath.mpf(128) / L2
print("#define CG_POW_INV_LN2N %s" % float(n).hex())
lh = float(mpmath.nint(L2 / 128 * 2 ** 40) / 2 ** 40)
print("#define CG_POW_LN2N_HI %s" % lh.hex())
print("#define CG_POW_LN2N_LO %s" % float(L2 / 128 - lh).hex())


def arr(name, ty, vals, fmt):
    print("static const %s %s[128] = {" % (ty, name))
    for k in range(0, 128, 4):
        print("    " + ", ".join(fmt(v) for v in vals[k:k + 4]) + ",")
    print("};")


arr("cg_pow_invc", "double", inv, lambda v: v.hex())
arr("cg_pow_logc_hi", "double", lhi, lambda v: v.hex())
arr("cg_pow_logc_lo", "double", llo, lambda v: v.hex())
arr("cg_pow_exp_bits", "uint64_t", sb, lambda v: "0x%016xULL" % v)
arr("cg_pow_exp_tail", "double", tail, lambda v: v.hex())
