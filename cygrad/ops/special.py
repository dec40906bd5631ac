"""Special functions: the gamma family (lgamma, digamma, polygamma, mvlgamma,
Hurwitz zeta, the regularized incomplete gamma functions igamma/igammac), the modified Bessel functions i0/i0e/i1/i1e, the normal
distribution's ndtr/ndtri/log_ndtr, erfcx, sinc, xlogy/xlog1py and entr.

NumPy is cygrad's only runtime dependency, so each forward is a vectorized
NumPy evaluation in float64 (rounded once to the input's dtype): Lanczos'
approximation for lgamma, recurrence plus the asymptotic series for digamma,
Euler-Maclaurin summation for zeta (as Cephes), power series below 30 and
the asymptotic expansion above it for the Bessel functions.  Each backward
is written with cygrad ops (often the next function of the family), so it
is itself differentiable under ``create_graph=True``.
"""

import math

import numpy as np

from cygrad._kernels.engine import TensorBase, _wrap
from cygrad._tensor import Tensor
from cygrad._typeinfo import result_type
from cygrad.autograd.function import Function
from cygrad.creation import get_default_dtype
from cygrad.ops import elementwise as _ew
from cygrad.ops.mathextra import _floating, _tensor_arg, float_inplace
from cygrad.ops.out import _torch_name
from cygrad.ops.registry import _no_grad, op
from cygrad.ops.select import where

_LN_SQRT_2PI = 0.5 * math.log(2 * math.pi)
_SQRT_2PI = math.sqrt(2 * math.pi)


def _no_half(x, fname):
    """torch has no float16 kernel for the functions only torch.special has."""
    if x._arr.dtype == np.float16:
        raise NotImplementedError(f'"{fname}_cpu" not implemented for \'Half\'')
    return x


def _f64(fn):
    """``fn`` of an array, computed in float64 and rounded to its dtype (a
    0-d array as a 1-element one: the helpers assign through masks)."""
    def run(a):
        with np.errstate(all="ignore"):
            out = fn(np.atleast_1d(a.astype(np.float64)))
        return out.reshape(a.shape).astype(a.dtype)
    return run


def _unary(node, np_fwd, grad):
    """A Function ``out = np_fwd(x)`` whose backward is ``grad(g, x)``."""
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return _wrap(np_fwd(x._arr))

    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return grad(g, x)

    return type(node[:-len("Backward0")], (Function,), {
        "_node_name": node, "forward": staticmethod(forward),
        "backward": staticmethod(backward)})


# --- the gamma family ------------------------------------------------------------------

# Lanczos' approximation, g = 7, nine terms (relative error below 2e-15 for x >= 1/2).
_LANCZOS_G = 7.0
_LANCZOS = (0.99999999999980993, 676.5203681218851, -1259.1392167224028,
            771.32342877765313, -176.61502916214059, 12.507343278686905,
            -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7)


def _lgamma_pos(x):
    """lgamma for x >= 1/2."""
    # in place, one scratch array: 1e6 elements in ~25 ms instead of ~110
    z = x - 1.0
    s = np.full_like(z, _LANCZOS[0])
    tmp = np.empty_like(z)
    for k in range(1, 9):
        np.add(z, k, out=tmp)
        np.divide(_LANCZOS[k], tmp, out=tmp)
        s += tmp
    np.log(s, out=s)
    np.add(z, _LANCZOS_G + 0.5, out=tmp)          # t
    s -= tmp
    np.log(tmp, out=tmp)
    z += 0.5
    tmp *= z
    s += tmp
    s += _LN_SQRT_2PI
    return s


def _np_lgamma(x):
    neg = x < 0.5
    if not neg.any():                 # the common case: no reflection
        out = _lgamma_pos(np.where(np.isinf(x), 1.0, x))
    else:
        # reflection: lgamma(x) = log(pi / |sin(pi x)|) - lgamma(1 - x),
        # evaluated everywhere and picked (no masked copies)
        out = _lgamma_pos(np.where(neg, 1.0 - x, np.where(np.isinf(x), 1.0, x)))
        sin = np.abs(np.sin(math.pi * (x - np.floor(x))))
        refl = math.log(math.pi) - np.log(sin) - out
        out = np.where(neg, refl, out)
        out[neg & (x == np.floor(x))] = np.inf       # the poles 0, -1, -2, ...
    out[np.isinf(x)] = np.inf
    out[(x == 1) | (x == 2)] = 0.0     # exactly, as libm's
    return out


def _np_digamma(x):
    out = np.empty_like(x)
    neg = x < 0.5
    xs = np.where(neg, 1.0 - x, x)
    # psi(x) = psi(x + 6) - sum_{k<6} 1/(x + k), then the asymptotic series
    acc = np.zeros_like(xs)
    for k in range(6):
        acc = acc + 1.0 / (xs + k)
    z = xs + 6.0
    inv2 = 1.0 / (z * z)
    series = inv2 * (1 / 12 - inv2 * (1 / 120 - inv2 * (1 / 252 - inv2 * (
        1 / 240 - inv2 * (1 / 132 - inv2 * (691 / 32760 - inv2 / 12))))))
    val = np.log(z) - 0.5 / z - series - acc
    # reflection: psi(x) = psi(1 - x) - pi / tan(pi x)
    frac = x - np.floor(x)
    refl = val - math.pi / np.tan(math.pi * frac)
    out[...] = np.where(neg, refl, val)     # [...]: 0-d arrays too
    out[x == 0] = -np.inf                        # torch: digamma(0) = -inf
    out[(x < 0) & (x == np.floor(x))] = np.nan   # the other poles
    out[np.isposinf(x)] = np.inf
    return out


# (2k)! / B_2k, the Euler-Maclaurin coefficients of the zeta sum (as Cephes).
_ZETA_A = (12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9,
           7.47242496e10, -2.950130727918164224e12, 1.1646782814350067249e14,
           -4.5979787224074726105e15, 1.8152105401943546773e17,
           -7.1661652561756670113e18)


def _np_zeta(x, q):
    """Hurwitz zeta sum_k (k + q)^-x, for x > 1 (Cephes' algorithm)."""
    x, q = np.broadcast_arrays(np.asarray(x, np.float64), np.asarray(q, np.float64))
    x, q = x.astype(np.float64), q.astype(np.float64)
    with np.errstate(all="ignore"):
        return _zeta_sum(x, q)


def _zeta_sum(x, q):
    out = np.zeros(x.shape)
    s = q ** -x
    a = q.copy()
    i = np.zeros(x.shape)
    b = np.zeros(x.shape)
    active = np.ones(x.shape, bool)
    while active.any():
        i = np.where(active, i + 1, i)
        a = np.where(active, a + 1, a)
        b = np.where(active, a ** -x, b)
        s = np.where(active, s + b, s)
        active = active & ((i < 9) | (a <= 9))
    w = a
    s = s + b * w / (x - 1) - 0.5 * b
    fa = np.ones(x.shape)
    k = 0.0
    for coef in _ZETA_A:
        fa = fa * (x + k)
        b = b / w
        s = s + fa * b / coef
        k += 1.0
        fa = fa * (x + k)
        b = b / w
        k += 1.0
    out[...] = s                      # [...]: 0-d arrays too
    out[x == 1] = np.inf
    out[x < 1] = np.nan
    qint = (q <= 0) & (q == np.floor(q))
    out[(q <= 0) & ~qint & (x != np.floor(x))] = np.nan
    out[qint] = np.inf
    out[np.isnan(x) | np.isnan(q)] = np.nan
    return out


def _np_trigamma(x):
    """psi'(x): six recurrence steps, then the asymptotic series to z^-7 (the
    truncation torch uses, so the values agree to the last digits)."""
    neg = x < 0.5
    refl = np.where(neg, (math.pi / np.sin(math.pi * x)) ** 2, 0.0)
    z = np.where(neg, 1.0 - x, x)
    acc = np.zeros_like(z)
    for _ in range(6):
        acc = acc + 1.0 / (z * z)
        z = z + 1.0
    inv2 = 1.0 / (z * z)
    acc = acc + (1 + 1 / (2 * z) + inv2 * (1 / 6 - inv2 * (1 / 30 - inv2 / 42))) / z
    return np.where(neg, refl - acc, acc)


def _np_polygamma(n, x):
    if n == 0:
        return _np_digamma(x)
    if n == 1:
        return _np_trigamma(x)
    sign = 1.0 if n % 2 else -1.0
    return sign * math.factorial(n) * _np_zeta(float(n + 1), x)


def _int_n(n, fname):
    if isinstance(n, (TensorBase, bool)) or not isinstance(n, int):
        raise TypeError(f"{fname}(): argument 'n' must be int, not {type(n).__name__}")
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    return n


_POLYGAMMA_CLS = {}


def _polygamma_cls(n):
    cls = _POLYGAMMA_CLS.get(n)
    if cls is None:
        node = {0: "DigammaBackward0"}.get(n, "PolygammaBackward0")
        cls = _POLYGAMMA_CLS[n] = _unary(
            node, _f64(lambda a: _np_polygamma(n, a)),
            lambda g, x: g * polygamma(n + 1, x))
    return cls


Lgamma = _unary("LgammaBackward0", _f64(_np_lgamma), lambda g, x: g * digamma(x))


@op("lgamma", methods=("lgamma",), kind="special")
def lgamma(input):
    """out = log|Gamma(x)|; grad = g * digamma(x) (Lanczos' approximation)."""
    return Lgamma.apply(_floating(_tensor_arg(input, "lgamma")))


@op("digamma", methods=("digamma",), kind="special")
def digamma(input):
    """out = psi(x) = d/dx lgamma(x); grad = g * polygamma(1, x).

    torch's values at the poles: digamma(0) = -inf, digamma(-n) = nan."""
    return _polygamma_cls(0).apply(_floating(_tensor_arg(input, "digamma")))


@op("polygamma", kind="special")
def polygamma(n, input):
    """out = psi^(n)(x), the n-th derivative of digamma; grad = g *
    polygamma(n + 1, x) (from the Hurwitz zeta for n >= 1)."""
    n = _int_n(n, "polygamma")
    return _polygamma_cls(n).apply(_floating(_tensor_arg(input, "polygamma", pos=2)))


def _polygamma_method(self, n):
    """``polygamma(n, self)``."""
    return polygamma(n, self)


@op("mvlgamma", methods=("mvlgamma",), kind="special")
def mvlgamma(input, p):
    """out = p (p - 1) / 4 log(pi) + sum_{i<p} lgamma(x - i / 2), the log of the
    multivariate gamma function; grad from lgamma's."""
    _tensor_arg(input, "mvlgamma")
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    x = _floating(input)   # torch 2.13 no longer checks x > (p - 1) / 2
    out = lgamma(x)
    for i in range(1, p):
        out = out + lgamma(x - i / 2)
    return out + p * (p - 1) / 4 * math.log(math.pi)


class Zeta(Function):
    """out = Hurwitz zeta(x, q) = sum_k (k + q)^-x; grad_q = -x * zeta(x + 1, q)
    (torch has no gradient for x)."""

    _node_name = "SpecialZetaBackward0"

    @staticmethod
    def forward(ctx, x, q):
        ctx.save_for_backward(x, q)
        dt = x._arr.dtype
        return _wrap(_np_zeta(x._arr, q._arr).astype(dt))

    @staticmethod
    def backward(ctx, g):
        x, q = ctx.saved_tensors
        if ctx.needs_input_grad[0]:
            raise RuntimeError("the derivative for 'self' is not implemented.")
        grad_q = g * (-x * zeta(x + 1, q)) if ctx.needs_input_grad[1] else None
        return None, grad_q


def _binary_operands(fname, input, other):
    """Both operands as Tensors of their float promoted dtype."""
    if not isinstance(input, TensorBase) and not isinstance(other, TensorBase):
        raise TypeError(f"{fname}(): expected at least one Tensor argument")
    dt = result_type(input, other)
    if dt.kind != "f":
        dt = np.dtype(get_default_dtype())
    a = input.to(dt) if isinstance(input, TensorBase) else _wrap(np.asarray(input, dt))
    b = other.to(dt) if isinstance(other, TensorBase) else _wrap(np.asarray(other, dt))
    return a, b


def zeta(input, other):
    """out = Hurwitz zeta(x, q); grad_q = -x zeta(x + 1, q)."""
    x, q = _binary_operands("zeta", input, other)
    return Zeta.apply(_no_half(x, "zeta"), q)


# --- the regularized incomplete gamma functions ---------------------------------------

_TINY = 1e-300


def _np_igamma_pair(a, x):
    """(P, Q): the regularized lower and upper incomplete gamma functions, each
    from the expansion that converges fast and stays accurate where it is the
    small one: the power series of P for x < a + 1, the continued fraction of
    Q (Lentz's evaluation) elsewhere."""
    a, x = np.broadcast_arrays(np.asarray(a, np.float64), np.asarray(x, np.float64))
    a, x = a.astype(np.float64), x.astype(np.float64)
    P = np.full(a.shape, np.nan)
    Q = np.full(a.shape, np.nan)
    ok = (a > 0) & (x > 0) & np.isfinite(a) & np.isfinite(x)
    with np.errstate(all="ignore"):
        pre = np.where(ok, a * np.log(np.where(ok, x, 1.0)) - x
                       - _np_lgamma(np.where(ok, a, 1.0)), 0.0)
        series = ok & (x < a + 1)
        if series.any():
            aa, xx = a[series], x[series]
            term = 1.0 / aa
            total = term.copy()
            n = aa.copy()
            active = np.ones(aa.shape, bool)
            for _ in range(2000):
                n = n + 1
                term = np.where(active, term * xx / n, 0.0)
                total = total + term
                active = active & (np.abs(term) > np.abs(total) * 1e-17)
                if not active.any():
                    break
            p = np.exp(pre[series]) * total
            P[series], Q[series] = p, 1.0 - p
        frac = ok & ~series
        if frac.any():
            aa, xx = a[frac], x[frac]
            b = xx + 1.0 - aa
            c = np.full(aa.shape, 1.0 / _TINY)
            d = 1.0 / b
            h = d.copy()
            active = np.ones(aa.shape, bool)
            for i in range(1, 2000):
                an = -i * (i - aa)
                b = b + 2.0
                d = an * d + b
                d = np.where(np.abs(d) < _TINY, _TINY, d)
                c = b + an / c
                c = np.where(np.abs(c) < _TINY, _TINY, c)
                d = 1.0 / d
                delta = np.where(active, d * c, 1.0)
                h = h * delta
                active = active & (np.abs(delta - 1.0) > 1e-16)
                if not active.any():
                    break
            q = np.exp(pre[frac]) * h
            P[frac], Q[frac] = 1.0 - q, q
    # the edges, as torch: x = 0 -> P = 0; a = 0 (x > 0) -> P = 1; x = inf -> 1;
    # a = inf (finite x) -> 0; negative arguments and a = x = 0 -> nan
    zero_x = (x == 0) & (a > 0)
    P[zero_x], Q[zero_x] = 0.0, 1.0
    zero_a = (a == 0) & (x > 0)
    P[zero_a], Q[zero_a] = 1.0, 0.0
    inf_x = np.isposinf(x) & (a >= 0) & np.isfinite(a)
    P[inf_x], Q[inf_x] = 1.0, 0.0
    inf_a = np.isposinf(a) & (x >= 0) & np.isfinite(x)
    P[inf_a], Q[inf_a] = 0.0, 1.0
    return P, Q


class IGamma(Function):
    """out = P(a, x) = gamma(a, x) / Gamma(a), the regularized lower incomplete
    gamma function; grad_x = g * x^(a-1) e^-x / Gamma(a) (torch has no
    gradient for a)."""

    _node_name = "IgammaBackward0"
    _upper = False

    @classmethod
    def forward(cls, ctx, a, x):
        ctx.save_for_backward(a, x)
        P, Q = _np_igamma_pair(a._arr, x._arr)
        return _wrap((Q if cls._upper else P).astype(a._arr.dtype))

    @classmethod
    def backward(cls, ctx, g):
        a, x = ctx.saved_tensors
        if ctx.needs_input_grad[0]:
            which = "igammac" if cls._upper else "igamma"
            raise NotImplementedError(f"the derivative for '{which}: input' is not "
                                      "implemented.")
        dens = ((a - 1) * x.log() - x - lgamma(a)).exp()
        return None, (-g if cls._upper else g) * dens


class IGammaC(IGamma):
    """out = Q(a, x) = 1 - P(a, x), the regularized upper incomplete gamma
    function; grad_x = -g * x^(a-1) e^-x / Gamma(a)."""

    _node_name = "IgammacBackward0"
    _upper = True


def _igamma_operands(fname, input, other):
    a, x = _binary_operands(fname, input, other)
    for t in (input, other):
        if isinstance(t, TensorBase) and t._arr.dtype.kind != "f":
            raise NotImplementedError(f'"{fname}_cpu" not implemented for '
                                      f"'{_torch_name(t._arr.dtype)}'")
    return a, x


@op("igamma", methods=("igamma",), kind="special")
def igamma(input, other):
    """out = P(a, x), the regularized lower incomplete gamma function of
    a = input, x = other; grad_x = g * x^(a-1) e^-x / Gamma(a)."""
    return IGamma.apply(*_igamma_operands("igamma", input, other))


@op("igammac", methods=("igammac",), kind="special")
def igammac(input, other):
    """out = Q(a, x) = 1 - P(a, x), the regularized upper incomplete gamma
    function; grad_x = -g * x^(a-1) e^-x / Gamma(a)."""
    return IGammaC.apply(*_igamma_operands("igammac", input, other))


# --- the modified Bessel functions ------------------------------------------------------

_BESSEL_SPLIT = 30.0


def _bessel_series(x, nu):
    """I_nu(x) by its power series sum (x/2)^(2k+nu) / (k! (k+nu)!); |x| <= 30."""
    h = 0.5 * x
    term = h ** nu / math.factorial(nu)
    total = term.copy()
    q = h * h
    for k in range(1, 80):
        term = term * q / (k * (k + nu))
        total = total + term
    return total


def _bessel_scaled_asymptotic(x, nu):
    """I_nu(x) exp(-x) by the asymptotic expansion, for x > 30."""
    mu = 4.0 * nu * nu
    term = np.ones_like(x)
    total = term.copy()
    for k in range(1, 40):
        term = -term * (mu - (2 * k - 1) ** 2) / (k * 8.0 * x)
        total = total + term
    return total / np.sqrt(2 * math.pi * x)


def _np_bessel(x, nu, scaled):
    ax = np.abs(x)
    small = ax <= _BESSEL_SPLIT
    out = np.empty_like(x)
    xs = ax[small]
    val = _bessel_series(xs, nu)
    out[small] = val * np.exp(-xs) if scaled else val
    xl = ax[~small]
    big = _bessel_scaled_asymptotic(np.where(np.isinf(xl), 1.0, xl), nu)
    if scaled:
        big = np.where(np.isinf(xl), 0.0, big)
    else:     # torch: I0(+-inf) and I1(+-inf) are nan
        big = np.where(np.isinf(xl), np.nan, big * np.exp(xl))
    out[~small] = big
    if nu % 2:
        out = np.where(x < 0, -out, out)
    out[np.isnan(x)] = np.nan
    return out


def _i1_grad(g, x):
    # I1' = I0 - I1 / x, and 1/2 at x = 0
    safe = where(x == 0, 1.0, x)
    return g * where(x == 0, 0.5, i0(x) - i1(x) / safe)


def _i1e_grad(g, x):
    # (I1 e^-|x|)' = i0e - i1e (sign(x) + 1 / x), and 1/2 at x = 0
    safe = where(x == 0, 1.0, x)
    return g * where(x == 0, 0.5, i0e(x) - i1e(x) * (x.sign() + 1 / safe))


I0 = _unary("I0Backward0", _f64(lambda a: _np_bessel(a, 0, False)),
            lambda g, x: g * i1(x))
I0e = _unary("SpecialI0EBackward0", _f64(lambda a: _np_bessel(a, 0, True)),
             lambda g, x: g * (i1e(x) - x.sign() * i0e(x)))
I1 = _unary("SpecialI1Backward0", _f64(lambda a: _np_bessel(a, 1, False)), _i1_grad)
I1e = _unary("SpecialI1EBackward0", _f64(lambda a: _np_bessel(a, 1, True)), _i1e_grad)


@op("i0", methods=("i0",), kind="special")
def i0(input):
    """out = I0(x), the modified Bessel function of order 0; grad = g * I1(x)."""
    return I0.apply(_floating(_tensor_arg(input, "i0")))


def i0e(input):
    """out = I0(x) exp(-|x|); grad = g * (i1e(x) - sign(x) i0e(x))."""
    return I0e.apply(_floating(_tensor_arg(input, "special_i0e")))


def i1(input):
    """out = I1(x); grad = g * (I0(x) - I1(x) / x)."""
    return I1.apply(_floating(_tensor_arg(input, "special_i1")))


def i1e(input):
    """out = I1(x) exp(-|x|); grad = g * (i0e(x) - i1e(x) (sign(x) + 1 / x))."""
    return I1e.apply(_floating(_tensor_arg(input, "special_i1e")))


# --- sinc, the normal distribution, erfcx ----------------------------------------------

def _sinc_grad(g, x):
    # (cos(pi x) - sinc(x)) / x, and 0 at x = 0
    safe = where(x == 0, 1.0, x)
    return g * where(x == 0, 0.0, ((safe * math.pi).cos() - sinc(safe)) / safe)


Sinc = _unary("SincBackward0", _f64(np.sinc), _sinc_grad)


@op("sinc", methods=("sinc",), kind="special")
def sinc(input):
    """out = sin(pi x) / (pi x), 1 at 0; grad = g * (cos(pi x) - sinc(x)) / x
    (0 at x = 0)."""
    return Sinc.apply(_floating(_tensor_arg(input, "sinc")))


def _np_log_ndtr(a):
    out = np.log(0.5 * _erfc_of(-a / math.sqrt(2)))
    # far left tail: log ndtr(x) = -x^2/2 - log(-x) - log(sqrt(2 pi)) + log(series)
    tail = a < -20
    if tail.any():
        x = a[tail]
        inv2 = 1.0 / (x * x)
        term = np.ones_like(x)
        series = term.copy()
        for k in range(1, 12):
            term = -term * (2 * k - 1) * inv2
            series = series + term
        out[tail] = -0.5 * x * x - np.log(-x) - _LN_SQRT_2PI + np.log(series)
    # right side: log1p(-ndtr(-x)) keeps the digits near 0
    right = a > 0
    out[right] = np.log1p(-0.5 * _erfc_of(a[right] / math.sqrt(2)))
    return out


def _erfc_of(a):
    with _no_grad():
        return _ew.erfc(_wrap(a))._arr


def _ndtr(x):
    return 0.5 * (x * -0.7071067811865476).erfc()


LogNdtr = _unary("SpecialLogNdtrBackward0", _f64(_np_log_ndtr),
                 lambda g, x: g * (-0.5 * x * x - log_ndtr(x)).exp() / _SQRT_2PI)


def _np_ndtri(p):
    with _no_grad():
        x = _ew.erfinv(_wrap(2 * p - 1))._arr * math.sqrt(2)
    # two Newton steps on ndtr(x) = p restore the digits erfinv loses in the tails
    ok = np.isfinite(x)
    for _ in range(2):
        xs = x[ok]
        cdf = np.where(xs < 0, 0.5 * _erfc_of(-xs / math.sqrt(2)),
                       1 - 0.5 * _erfc_of(xs / math.sqrt(2)))
        pdf = np.exp(-0.5 * xs * xs) / _SQRT_2PI
        step = np.where(pdf > 0, (cdf - p[ok]) / np.where(pdf > 0, pdf, 1.0), 0.0)
        x[ok] = xs - step
    # far tails (p < 1e-8): start from the asymptotic inverse and take Newton
    # steps on log ndtr, where erfinv(2p - 1) has no digits left
    tail = (p > 0) & (p < 1e-8)
    if tail.any():
        lp = np.log(p[tail])
        t = -2 * lp
        xt = -np.sqrt(t - np.log(t) - math.log(2 * math.pi))
        for _ in range(4):
            ln = _np_log_ndtr(xt)
            xt = xt - (ln - lp) * np.exp(ln + 0.5 * xt * xt + _LN_SQRT_2PI)
        x[tail] = xt
    x[p == 0] = -np.inf
    x[p == 1] = np.inf
    x[(p < 0) | (p > 1)] = np.nan
    return x


Ndtri = _unary("SpecialNdtriBackward0", _f64(_np_ndtri),
               lambda g, x: g * _SQRT_2PI * (0.5 * ndtri(x) ** 2).exp())


def ndtr(input):
    """out = Phi(x) = (1 + erf(x / sqrt 2)) / 2; grad = g * exp(-x^2 / 2) /
    sqrt(2 pi)."""
    return _ndtr(_floating(_tensor_arg(input, "special_ndtr")))


def ndtri(input):
    """out = Phi^-1(p), the inverse of ndtr; grad = g * sqrt(2 pi) exp(out^2 / 2)."""
    return Ndtri.apply(_floating(_no_half(_tensor_arg(input, "special_ndtri"),
                                          "ndtri")))


def log_ndtr(input):
    """out = log Phi(x), accurate far into both tails; grad = g * exp(-x^2/2 -
    out) / sqrt(2 pi)."""
    return LogNdtr.apply(_floating(_no_half(_tensor_arg(input, "special_log_ndtr"),
                                            "log_ndtr")))


def _np_erfcx(a):
    out = np.exp(a * a) * _erfc_of(a)
    big = a > 25
    if big.any():
        x = a[big]
        inv2 = 1.0 / (2 * x * x)
        term = np.ones_like(x)
        series = term.copy()
        for k in range(1, 12):
            term = -term * (2 * k - 1) * inv2
            series = series + term
        out[big] = series / (x * math.sqrt(math.pi))
    out[np.isposinf(a)] = 0.0
    return out


Erfcx = _unary("SpecialErfcxBackward0", _f64(_np_erfcx),
               lambda g, x: g * (2 * x * erfcx(x) - 2 / math.sqrt(math.pi)))


def erfcx(input):
    """out = exp(x^2) erfc(x); grad = g * (2 x erfcx(x) - 2 / sqrt(pi))."""
    return Erfcx.apply(_floating(_no_half(_tensor_arg(input, "special_erfcx"),
                                          "erfcx")))


# --- xlogy, xlog1py, entr --------------------------------------------------------------

class XLogY(Function):
    """out = x * log(y), 0 where x == 0 (unless y is nan); grad_x = xlogy(g,
    y), 0 where x == 0 and y <= 0 (so x = 0 < y still gets log(y), as
    torch), grad_y = g * x / y."""

    _node_name = "XlogyBackward0"
    # the compiled logarithms (libm's bits in float64, as torch's scalar
    # loop; NumPy's AVX-512 ones can differ in the last bit)
    _log = staticmethod(lambda b: _ew.log(_wrap(b))._arr)
    _pole = 0.0             # where the logarithm's argument ends its domain

    @classmethod
    def _np(cls, a, b):
        with np.errstate(all="ignore"):
            out = a * cls._log(b)
        out = np.where(a == 0, 0.0, out).astype(out.dtype)
        return np.where(np.isnan(b), np.nan, out).astype(out.dtype)

    @classmethod
    def forward(cls, ctx, a, b):
        ctx.save_for_backward(a, b)
        return _wrap(cls._np(a._arr, b._arr))

    @classmethod
    def _grads(cls, g, a, b):
        grad_a = where((a == 0) & (b <= cls._pole), 0.0, cls._fn(g, b))
        return grad_a, g * a / cls._log_arg(b)

    @staticmethod
    def _log_arg(b):
        return b

    @classmethod
    def backward(cls, ctx, g):
        a, b = ctx.saved_tensors
        grad_a, grad_b = cls._grads(g, a, b)
        return (grad_a if ctx.needs_input_grad[0] else None,
                grad_b if ctx.needs_input_grad[1] else None)


class XLog1PY(XLogY):
    """out = x * log1p(y), 0 where x == 0 (unless y is nan); grad_x =
    xlog1py(g, y), 0 where x == 0 and y <= -1, grad_y = g * x / (1 + y)."""

    _node_name = "SpecialXlog1PyBackward0"
    _log = staticmethod(lambda b: _ew.log1p(_wrap(b))._arr)
    _pole = -1.0

    @staticmethod
    def _log_arg(b):
        return 1 + b


@op("xlogy", methods=("xlogy",), kind="special")
def xlogy(input, other):
    """out = x * log(y), 0 where x == 0 (nan where y is nan; gradients:
    ``XLogY``)."""
    return XLogY.apply(*_binary_operands("xlogy", input, other))


def xlog1py(input, other):
    """out = x * log1p(y), 0 where x == 0 (gradients: ``XLog1PY``)."""
    return XLog1PY.apply(*_binary_operands("special_xlog1py", input, other))


XLogY._fn = staticmethod(xlogy)
XLog1PY._fn = staticmethod(xlog1py)


def _np_entr(a):
    with np.errstate(all="ignore"):
        out = -a * np.log(a)
    out = np.where(a == 0, 0.0, out)
    return np.where(a < 0, -np.inf, out)


Entr = _unary("SpecialEntrBackward0", _f64(_np_entr),
              lambda g, x: g * -(x.log() + 1))


def entr(input):
    """out = -x log(x) (0 at 0, -inf below); grad = -g (log(x) + 1)."""
    return Entr.apply(_floating(_tensor_arg(input, "special_entr")))


# --- Tensor methods and in-place forms ---------------------------------------------------

def _install():
    Tensor.polygamma = _polygamma_method
    for name, fn in (("lgamma", lgamma), ("digamma", digamma), ("i0", i0),
                     ("sinc", sinc), ("xlogy", xlogy), ("mvlgamma", mvlgamma)):
        setattr(Tensor, name + "_", float_inplace(name, fn))
    Tensor.polygamma_ = float_inplace("polygamma", lambda t, n: polygamma(n, t))
    Tensor.igamma_ = float_inplace("igamma", igamma)
    Tensor.igammac_ = float_inplace("igammac", igammac)


_install()
