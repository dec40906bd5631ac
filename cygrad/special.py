"""``cygrad.special``: torch.special's functions, on cygrad's ops.

Most are the ops of ``cygrad`` under scipy's names (``expit`` is sigmoid,
``gammaln`` is lgamma, ``psi`` is digamma, ``multigammaln`` is mvlgamma);
the rest (i0e, i1, i1e, ndtr, ndtri, log_ndtr, erfcx, xlog1py, entr, zeta)
are in ``cygrad.ops.special``.  Each takes torch's ``out=``.
"""

from cygrad.ops import OPS as _OPS
from cygrad.ops import special as _sp
from cygrad.ops.out import accepting_out as _accepting_out
from cygrad.ops.out import write_out as _write_out

__all__ = [
    "digamma", "entr", "erf", "erfc", "erfcx", "erfinv", "exp2", "expit", "expm1",
    "gammainc", "gammaincc", "gammaln", "i0", "i0e", "i1", "i1e", "log1p", "log_ndtr", "log_softmax", "logit",
    "logsumexp", "multigammaln", "ndtr", "ndtri", "polygamma", "psi", "round",
    "sinc", "softmax", "xlog1py", "xlogy", "zeta",
]


def _op(name):
    return _OPS[name].fn


def _out(name, fn):
    wrapped = _accepting_out(f"special_{name}", fn)
    wrapped.__name__ = wrapped.__qualname__ = name
    return wrapped


# the ops of cygrad under torch.special's names
erf = _out("erf", _op("erf"))
erfc = _out("erfc", _op("erfc"))
erfinv = _out("erfinv", _op("erfinv"))
exp2 = _out("exp2", _op("exp2"))
expm1 = _out("expm1", _op("expm1"))
log1p = _out("log1p", _op("log1p"))
expit = _out("expit", _op("sigmoid"))
gammaln = _out("gammaln", _op("lgamma"))
digamma = psi = _out("digamma", _op("digamma"))
polygamma = _out("polygamma", _op("polygamma"))
multigammaln = _out("multigammaln", _op("mvlgamma"))
i0 = _out("i0", _op("i0"))
sinc = _out("sinc", _op("sinc"))
logit = _out("logit", _op("logit"))
xlogy = _out("xlogy", _op("xlogy"))
logsumexp = _out("logsumexp", _op("logsumexp"))
gammainc = _out("gammainc", _op("igamma"))
gammaincc = _out("gammaincc", _op("igammac"))

# the functions only torch.special has
i0e = _out("i0e", _sp.i0e)
i1 = _out("i1", _sp.i1)
i1e = _out("i1e", _sp.i1e)
ndtr = _out("ndtr", _sp.ndtr)
ndtri = _out("ndtri", _sp.ndtri)
log_ndtr = _out("log_ndtr", _sp.log_ndtr)
erfcx = _out("erfcx", _sp.erfcx)
xlog1py = _out("xlog1py", _sp.xlog1py)
entr = _out("entr", _sp.entr)
zeta = _out("zeta", _sp.zeta)


def round(input, *, decimals=0, out=None):
    """``cygrad.round``: to the nearest integer (half to even), or to
    ``decimals`` digits; grad = 0."""
    res = _op("round")(input, decimals=decimals)
    return res if out is None else _write_out("special_round", res, out)


def softmax(input, dim, *, dtype=None):
    """``cygrad.softmax`` along ``dim`` (computed in ``dtype`` if given)."""
    return _op("softmax")(input, dim, dtype=dtype)


def log_softmax(input, dim, *, dtype=None):
    """``cygrad.log_softmax`` along ``dim`` (computed in ``dtype`` if given)."""
    return _op("log_softmax")(input, dim, dtype=dtype)
