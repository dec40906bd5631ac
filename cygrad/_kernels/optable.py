"""The op table: every elementwise op of cygrad, one row each.

This module is the single source of the elementwise ops.  It imports only
NumPy, so ``setup.py`` can load it before anything is compiled:

- the kernels (``elementwise.pyx.tp``, expanded by ``setup.py`` with
  ``UNARY`` and ``BINARY`` below) compile each row's forward and
  derivative expressions to C loops for float32 and float64;
- the engine sizes its per-op arrays from the table and reads each row's
  dtype rule (``ints``), bool refusal (``bool_error``) and NumPy
  ufunc for the dtypes that have no kernel;
- ``cygrad.ops`` registers every row as a public function and Tensor
  method in one loop, and evaluates the derivative over Tensors when a
  backward must itself be differentiable (``create_graph=True``);
- the tests draw their op cases from the rows (``ref`` and ``domain``), and
  a test checks that ``docs/api.md`` lists exactly the registered ops.

Expressions are C and Python at once.  A unary row's forward reads ``x``; a
binary row's reads ``a`` and ``b``.  Derivatives also read ``g`` (the
incoming gradient) and ``y`` (the forward's output).  Function names are
C's (``exp``, ``log1p``, ``fabs``) or the helpers of ``HELPERS`` (C inline
functions in ``cg_rows.h`` and Tensor functions in ``cygrad.ops``).  Kinks
follow PyTorch: relu'(0) = 0, abs'(0) = 0, sqrt'(0) = inf, maximum/minimum
split the gradient evenly on ties.

Adding an elementwise op is adding one row here (and, if its expressions
call a new helper, that helper in C and over Tensors).
"""

import re

import numpy as np

# Functions that C's libm evaluates by series or iteration (11-60x a
# multiply per element; measured on 10^6 elements: float32 exp 1.7 ms, sin
# 1.7 ms vs mul 0.15 ms; float64 exp 6.3 ms vs mul 0.34 ms).  An
# expression calling one of them weighs 16 multiply-like elements in the
# thread policy (``threads.threads_for``), so it splits across threads at a
# 16x smaller size.
HEAVY = ("exp", "expm1", "log", "log1p", "log2", "log10", "tanh", "sigmoid",
         "sin", "cos", "pow", "atan2", "hypot", "pow_grad_base", "pow_grad_exp",
         "sinh", "cosh", "tan", "asin", "acos", "atan", "asinh", "acosh", "atanh",
         "erf", "erfc", "erfinv", "exp2", "logaddexp", "phi", "powk")
# The helpers the expressions may call besides C's math functions.
HELPERS = ("pick", "keep", "sign", "relu", "maximum", "minimum", "sigmoid",
           "pow_grad_base", "pow_grad_exp", "remainder", "floor_divide", "logaddexp",
           "erfinv", "phi", "powk")


def uses(expr, name):
    """Whether ``expr`` reads the variable ``name``."""
    return re.search(r"\b%s\b" % name, expr) is not None


def cost(expr):
    """Thread-policy weight of one element of ``expr`` (see ``HEAVY``)."""
    return 16 if any(re.search(r"\b%s\(" % f, expr) for f in HEAVY) else 1


class Row:
    """One elementwise op.

    Parameters
    ----------
    name : str
        The op's name: ``cygrad.<name>``, ``Tensor.<name>``, the kernels'
        ``<name>_fwd`` / ``<name>_bwd``.
    fwd : str
        The forward expression, of ``x`` (unary) or ``a`` and ``b`` (binary).
    grads : tuple of str
        The derivative of each input, given ``g``, the inputs and ``y``.
    ref : callable
        NumPy reference of the forward (the tests compare against it).
    doc : str
        One line for the docs; the formulas are added to it.
    graph : tuple of str, optional
        The derivative over Tensors when it must differ from ``grads`` (to be
        differentiable where the C form uses the output, say); default
        ``grads``.
    domain : tuple, optional
        Test inputs' interval, one per input (away from kinks and poles);
        default (-2, 2).
    exact : bool
        float32 computes in float: the expressions use only operations IEEE
        defines exactly (+ - * / sqrt, compares, selects), as torch computes
        float32.  Otherwise float32 computes in double and rounds once.
    fast : dict
        float32 parts (``fwd``, ``bwd``, ``bwda``, ``bwdb``) computed with
        ``cg_math.h``'s vectorizable functions, each with the guard of their
        domain (None: all of it); a block with an element outside it falls
        back to libm.
    ints : {"float", "keep", "refuse"}
        Integer and bool inputs: computed in the default float dtype, as
        torch's ``exp(int_tensor)`` (``"float"``); exactly, in the promoted
        integer dtype, by ``ufunc`` (``"keep"``); or refused with
        ``NotImplementedError``, as torch refuses ``hypot`` of integers
        (``"refuse"``).
    ufunc : NumPy ufunc, optional
        The computation for ``ints="keep"`` and for float16 (no kernel).
    bool_error : str, optional
        The error raised when an input is a bool tensor.
    bool_error_type : type
        Its exception class: RuntimeError (default), or NotImplementedError
        where torch has no bool kernel (``floor``, ``remainder``).
    methods : tuple of str
        Tensor method names; default ``(name,)``.
    aliases : tuple of str
        Further names, each both ``cygrad.<alias>`` and ``Tensor.<alias>``.
    alpha : bool
        The function takes torch's ``alpha=`` (``a op alpha * b``).
    number_other : bool
        torch takes a Python number as ``b`` (``x.div(2.0)``); torch refuses
        one for ``maximum``, ``atan2``, ...  (cygrad takes it in either case.)
    node : str, optional
        The backward node's name (``grad_fn.name()``); default
        ``<Name>Backward0``.
    """

    def __init__(self, name, fwd, grads, ref, doc, graph=None, domain=None,
                 exact=False, fast=None, ints="float", ufunc=None, bool_error=None,
                 methods=None, aliases=(), alpha=False, number_other=True, node=None,
                 bool_error_type=RuntimeError):
        self.name = name
        self.fwd = fwd
        self.grads = tuple(grads)
        self.arity = len(self.grads)
        self.ref = ref
        self.doc = doc
        self.graph = tuple(graph) if graph is not None else self.grads
        self.domain = domain if domain is not None else ((-2.0, 2.0),) * self.arity
        self.exact = exact
        self.fast = dict(fast or {})
        if ints not in ("float", "keep", "refuse"):
            raise ValueError(f"{name}: ints must be 'float', 'keep' or 'refuse', "
                             f"not {ints!r}")
        if ints == "keep" and ufunc is None:
            raise ValueError(f"{name}: ints='keep' needs the ufunc that computes them")
        self.ints = ints
        self.ufunc = ufunc
        self.bool_error = bool_error
        self.bool_error_type = bool_error_type
        self.methods = tuple(methods) if methods is not None else (name,)
        self.aliases = tuple(aliases)
        self.alpha = alpha
        self.number_other = number_other
        self.node = node or name.capitalize() + "Backward0"
        inputs = ("x",) if self.arity == 1 else ("a", "b")
        # Which values each derivative reads: what the node must save.
        self.saves = tuple(tuple(v for v in inputs + ("y",) if uses(e, v))
                           for e in self.grads)
        # "g" passes the gradient through untouched, "-g" negates it: the
        # engine does both without a kernel call.
        self.ident = tuple({"g": 1, "-g": 2}.get(e, 0) for e in self.grads)

    def part(self, k):
        """The kernel name suffix of derivative ``k``."""
        return "bwd" if self.arity == 1 else "bwd" + "ab"[k]

    def summary(self):
        """The doc line with the forward and derivative formulas."""
        if self.arity == 1:
            rule = f"out = {self.fwd}; grad = {self.grads[0]}"
        else:
            rule = (f"out = {self.fwd}; grad_a = {self.grads[0]}, "
                    f"grad_b = {self.grads[1]}")
        return f"{self.doc} ({rule})."

    def __repr__(self):
        return self.name


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


# NumPy has no erf: math.erf elementwise (the references only).
_erf = np.vectorize(__import__("math").erf, otypes=[float])


_TRIG = "cg_trig_ok(x)"
# gelu_tanh's sigmoid argument, 2 sqrt(2 / pi) (x + 0.044715 x^3).
_GT = "1.5957691216057308 * (x + 0.044715 * (x * x * x))"
_POS = ((0.2, 4.0),)

UNARY = [
    Row("neg", "-x", ["-g"], np.negative, "Negation", exact=True, ints="keep",
        ufunc=np.negative, aliases=("negative",),
        bool_error="Negation, the `-` operator, on a bool tensor is not supported. "
        "If you are trying to invert a mask, use the `~` or `logical_not()` "
        "operator instead."),
    Row("exp", "exp(x)", ["g * y"], np.exp, "Exponential",
        fast={"fwd": "cg_exp_ok(x)"}),
    Row("log", "log(x)", ["g / x"], np.log, "Natural logarithm", domain=_POS,
        fast={"fwd": "cg_log_ok(x)"}),
    Row("log1p", "log1p(x)", ["g / (x + 1)"], np.log1p, "log(1 + x), exact near 0",
        domain=((-0.8, 4.0),), node="Log1PBackward0"),
    Row("log2", "log2(x)", ["g / (x * 0.6931471805599453)"], np.log2,
        "Base-2 logarithm", domain=_POS),
    Row("log10", "log10(x)", ["g / (x * 2.302585092994046)"], np.log10,
        "Base-10 logarithm", domain=_POS),
    Row("expm1", "expm1(x)", ["g * (y + 1)"], np.expm1, "exp(x) - 1, exact near 0"),
    # torch's rsqrt backward: -0.5 * g * y**3.
    Row("rsqrt", "1 / sqrt(x)", ["-0.5 * g * (y * y * y)"], lambda x: 1 / np.sqrt(x),
        "Reciprocal square root", domain=_POS, exact=True),
    Row("tanh", "tanh(x)", ["g * (1 - y * y)"], np.tanh, "Hyperbolic tangent",
        fast={"fwd": None}),
    Row("sigmoid", "sigmoid(x)", ["g * (y * (1 - y))"], _sigmoid, "Logistic sigmoid",
        fast={"fwd": "cg_sigmoid_ok(x)"}),
    # NaN passes g, as torch.
    Row("relu", "relu(x)", ["keep(g, (y > 0) | (y != y))"],
        lambda x: np.maximum(x, 0), "Rectified linear unit", exact=True,
        ints="keep", ufunc=lambda x: np.maximum(x, 0)),
    Row("sqrt", "sqrt(x)", ["g / (2 * y)"], np.sqrt, "Square root", domain=_POS,
        exact=True),
    Row("abs", "fabs(x)", ["g * sign(x)"], np.abs, "Absolute value", exact=True,
        ints="keep", ufunc=np.abs, aliases=("absolute",),
        bool_error="abs() is not supported for bool tensors"),
    Row("sin", "sin(x)", ["g * cos(x)"], np.sin, "Sine",
        fast={"fwd": _TRIG, "bwd": _TRIG}),
    Row("cos", "cos(x)", ["g * -sin(x)"], np.cos, "Cosine",
        fast={"fwd": _TRIG, "bwd": _TRIG}),
    # torch computes x ** 2 as x * x, and its backward as g * (2 * x), each
    # rounded once.
    Row("square", "x * x", ["g * (2 * x)"], np.square, "Square", exact=True,
        ints="keep", ufunc=np.square, node="PowBackward0"),
    # --- activations (nn.functional's parameterless pointwise ones; no Tensor
    # methods, as torch).  Kinks as torch: the boundary goes to the side
    # torch's kernel puts it on (tests/test_nn_activation.py checks them).
    Row("silu", "x * sigmoid(x)",
        ["g * (sigmoid(x) * (1 + x * (1 - sigmoid(x))))"],
        lambda x: x * _sigmoid(x), "Sigmoid-weighted linear unit (swish)",
        methods=(), fast={"fwd": "cg_sigmoid_ok(x)", "bwd": "cg_sigmoid_ok(x)"}),
    # phi: the standard normal CDF (cg_rows.h); 0.3989... = 1 / sqrt(2 pi).
    # float32 computes in float: cg_phi_f is a vectorizable float-accurate
    # CDF (libm's double erf per element ran at ~12x torch), and the
    # backward's exp takes cg_math's fast exp.
    Row("gelu", "x * phi(x)",
        ["g * (phi(x) + x * (0.3989422804014327 * exp(-0.5 * (x * x))))"],
        lambda x: x * (0.5 + 0.5 * _erf(x * 0.7071067811865476)),
        "Gaussian error linear unit, x * Phi(x)", methods=(), exact=True,
        fast={"bwd": "cg_exp_ok(-0.5 * (x * x))"}),
    # 0.5 (1 + tanh(u)) = sigmoid(2 u), u = sqrt(2 / pi) (x + 0.044715 x^3):
    # the sigmoid form has no cancellation where tanh(u) is near -1.
    Row("gelu_tanh", f"x * sigmoid({_GT})",
        [f"g * (sigmoid({_GT}) + x * (sigmoid({_GT}) * (1 - sigmoid({_GT}))) * "
         "(1.5957691216057308 * (1 + 0.134145 * (x * x))))"],
        lambda x: x * _sigmoid(1.5957691216057308 * (x + 0.044715 * x ** 3)),
        "GELU, tanh approximation (gelu(approximate='tanh'))", methods=(),
        fast={"fwd": f"cg_sigmoid_ok({_GT})", "bwd": f"cg_sigmoid_ok({_GT})"},
        node="GeluBackward0"),
    # softplus(x) = log1p(exp(-|x|)) + relu(x): no overflow.
    Row("mish", "x * tanh(log1p(exp(-fabs(x))) + relu(x))",
        ["g * (tanh(log1p(exp(-fabs(x))) + relu(x)) + x * sigmoid(x) * (1 - "
         "tanh(log1p(exp(-fabs(x))) + relu(x)) * tanh(log1p(exp(-fabs(x))) + "
         "relu(x))))"],
        lambda x: x * np.tanh(np.logaddexp(0, x)), "Mish, x * tanh(softplus(x))",
        methods=()),
    Row("softsign", "x / (1 + fabs(x))", ["g / ((1 + fabs(x)) * (1 + fabs(x)))"],
        lambda x: x / (1 + np.abs(x)), "x / (1 + |x|)", methods=(), exact=True,
        node="DivBackward0"),
    # scale = 1.0507..., scale * alpha = 1.7580...; x <= 0 takes the
    # exponential side (torch's elu backward).
    Row("selu", "pick(1.0507009873554805 * x, 1.7580993408473766 * "
        "expm1(minimum(x, 0.0)), x > 0)",
        ["keep(g * 1.0507009873554805, x > 0) + keep(g * (1.7580993408473766 * "
         "exp(minimum(x, 0.0))), x <= 0)"],
        lambda x: np.where(x > 0, 1.0507009873554805 * x,
                           1.7580993408473766 * np.expm1(np.minimum(x, 0))),
        "Scaled exponential linear unit", methods=(), node="EluBackward0"),
    # relu6(x + 3) / 6, torch's operation order; gradient 1/6 strictly
    # inside (-3, 3), torch's float32 1/6 (0.1666666716...) in both dtypes.
    Row("hardsigmoid", "minimum(maximum(x + 3.0, 0.0), 6.0) / 6.0",
        ["keep(g * 0.1666666716337204, (x > -3.0) & (x < 3.0))"],
        lambda x: np.clip(x + 3, 0, 6) / 6, "Piecewise-linear sigmoid", methods=(),
        exact=True, domain=((-5.0, 5.0),)),
    # gradient: 0 for x <= -3, x / 3 + 1/2 below 3, 1 from 3 on (torch).
    Row("hardswish", "x * minimum(maximum(x + 3.0, 0.0), 6.0) / 6.0",
        ["keep(g * (x / 3.0 + 0.5), (x > -3.0) & (x < 3.0)) + keep(g, x >= 3.0)"],
        lambda x: x * np.clip(x + 3, 0, 6) / 6, "x * hardsigmoid(x)", methods=(),
        exact=True, domain=((-5.0, 5.0),)),
    # hardtanh(x, 0, 6): the gradient passes strictly inside (0, 6).
    Row("relu6", "minimum(maximum(x, 0.0), 6.0)",
        ["keep(g, (x > 0.0) & (x < 6.0))"], lambda x: np.clip(x, 0, 6),
        "min(max(x, 0), 6)", methods=(), exact=True, domain=((-3.0, 8.0),),
        node="HardtanhBackward0"),
    Row("logsigmoid", "-(log1p(exp(-fabs(x))) + relu(-x))", ["g * sigmoid(-x)"],
        lambda x: -np.logaddexp(0, -x), "log(sigmoid(x)), stable", methods=(),
        node="LogSigmoidBackward0"),
    Row("tanhshrink", "x - tanh(x)", ["g * (tanh(x) * tanh(x))"],
        lambda x: x - np.tanh(x), "x - tanh(x)", methods=(), node="SubBackward0"),
]

BINARY = [
    Row("add", "a + b", ["g", "g"], np.add, "Addition with broadcasting",
        exact=True, ints="keep", ufunc=np.add, alpha=True),
    Row("sub", "a - b", ["g", "-g"], np.subtract, "Subtraction with broadcasting",
        exact=True, ints="keep", ufunc=np.subtract, alpha=True, aliases=("subtract",),
        bool_error="Subtraction, the `-` operator, with a bool tensor is not "
        "supported. If you are trying to invert a mask, use the `~` or "
        "`logical_not()` operator instead."),
    Row("mul", "a * b", ["g * b", "g * a"], np.multiply,
        "Multiplication with broadcasting", exact=True, ints="keep",
        ufunc=np.multiply, aliases=("multiply",)),
    Row("div", "a / b", ["g / b", "-g * ((a / b) / b)"], np.divide,
        "True division with broadcasting", domain=((-3.0, 3.0), (0.5, 3.0)),
        exact=True, ufunc=np.true_divide, aliases=("divide", "true_divide")),
    # int ** int stays an integer, as torch; the float32 fast paths use
    # cg_math's pow and log.
    Row("pow", "pow(a, b)", ["pow_grad_base(g, a, b, y)", "pow_grad_exp(g, a, b, y)"],
        np.power, "Power with broadcasting (grad_a is 0 where b == 0; grad_b is 0 "
        "where a == 0 and b >= 0, as torch)", domain=((0.2, 3.0), (-2.0, 2.0)),
        ints="keep", ufunc=np.power,
        fast={"fwd": "cg_pow_ok(a, b)", "bwda": "cg_pow_ok(a, b)",
              "bwdb": "cg_log_ok(a)"}),
    # torch: the side that is not smaller (not larger) gets g, halved on a
    # tie; with a NaN neither comparison holds and both sides get g.
    # (Written without `1 - mask`: bool subtraction is an error over tensors;
    # the tie factor is a select, not `0.5 * (a == b)`, which GCC compiles
    # to a branch: the backward ran unvectorized at 1.5x NumPy.)
    Row("maximum", "maximum(a, b)",
        ["keep(g, (a < b) == 0) * (1 - keep(0.5, a == b))",
         "keep(g, (b < a) == 0) * (1 - keep(0.5, a == b))"],
        np.maximum, "Elementwise maximum with broadcasting (NaN propagates)",
        exact=True, ints="keep", ufunc=np.maximum, number_other=False),
    Row("minimum", "minimum(a, b)",
        ["keep(g, (a > b) == 0) * (1 - keep(0.5, a == b))",
         "keep(g, (b > a) == 0) * (1 - keep(0.5, a == b))"],
        np.minimum, "Elementwise minimum with broadcasting (NaN propagates)",
        exact=True, ints="keep", ufunc=np.minimum, number_other=False),
    # clamp(x, min, max) = clamp_max(clamp_min(x, min), max).  torch's
    # boundary rule: x at the bound keeps its gradient (x >= min, x <= max);
    # a tensor bound gets the gradient where it was selected.
    Row("clamp_min", "pick(a, b, (a >= b) | (a != a))", ["keep(g, a >= b)",
                                                        "keep(g, a < b)"],
        np.maximum, "Lower bound: max(x, min), NaN in x kept", exact=True,
        ints="keep", ufunc=np.maximum, node="ClampMinBackward1"),
    Row("clamp_max", "pick(a, b, (a <= b) | (a != a))", ["keep(g, a <= b)",
                                                        "keep(g, a > b)"],
        np.minimum, "Upper bound: min(x, max), NaN in x kept", exact=True,
        ints="keep", ufunc=np.minimum, node="ClampMaxBackward1"),
    # The angle of the point (b, a); b > 0 in the tests keeps them off the
    # branch cut.
    Row("atan2", "atan2(a, b)", ["g * (b / (a * a + b * b))",
                                 "g * (-a / (a * a + b * b))"],
        np.arctan2, "Four-quadrant arctangent of a / b",
        domain=((-2.0, 2.0), (0.3, 2.0)), aliases=("arctan2",), number_other=False),
    # torch refuses integer tensors here (NotImplementedError).
    Row("hypot", "hypot(a, b)", ["g * (a / y)", "g * (b / y)"], np.hypot,
        "sqrt(a * a + b * b) without overflow", domain=((-2.0, 2.0), (0.3, 2.0)),
        ints="refuse", number_other=False),
]

# --- math: trigonometric, rounding, error functions, remainders ------------------

def _keep_ints(fn):
    """``fn`` for floats; an integer tensor is its own floor/ceil/round."""
    def f(x):
        return np.array(x, copy=True) if x.dtype.kind in "iu" else fn(x)
    return f


def _sign(x):
    # torch: sign(NaN) = 0; a bool tensor is its own sign.
    if x.dtype.kind == "b":
        return np.array(x, copy=True)
    return np.where(x != x, np.zeros((), x.dtype), np.sign(x))


def _int_checked(fn):
    """``fn`` with torch's refusal of an integer division by zero."""
    def f(a, b):
        if np.asarray(b).dtype.kind in "iub" and np.asarray(a).dtype.kind in "iub" \
                and not np.all(b):
            raise RuntimeError("ZeroDivisionError")
        return fn(a, b)
    return f


def _floor_divide(a, b):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.floor_divide(a, b)


def _remainder(a, b):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.remainder(a, b)


def _fmod(a, b):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.fmod(a, b)


_erf = np.vectorize(__import__("math").erf, otypes=[float])
_erfc = np.vectorize(__import__("math").erfc, otypes=[float])
# The gradient of a piecewise-constant op: exactly 0, never g * 0 (NaN for
# an infinite g), as torch's zeros_like; it reads g alone, so nothing is
# saved, and over Tensors it stays differentiable in g.
_ZERO = "keep(g, g < g)"


def _erfinv(x):
    # Bisection on math.erf (an algorithm independent of the kernel's).
    x = np.asarray(x, float)
    lo, hi = np.full(x.shape, -6.0), np.full(x.shape, 6.0)
    for _ in range(100):
        mid = (lo + hi) / 2
        below = _erf(mid) < x
        lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
    y = (lo + hi) / 2
    y = np.where(np.abs(x) == 1, np.copysign(np.inf, x), y)
    return np.where((np.abs(x) > 1) | np.isnan(x), np.nan, np.where(x == 0, x, y))
_UNIT = ((-0.9, 0.9),)


def _no_bool(kernel):
    return f'"{kernel}" not implemented for \'Bool\''


UNARY += [
    Row("sinh", "sinh(x)", ["g * cosh(x)"], np.sinh, "Hyperbolic sine"),
    Row("cosh", "cosh(x)", ["g * sinh(x)"], np.cosh, "Hyperbolic cosine"),
    # torch: tan' = 1 + tan^2, from the output.
    Row("tan", "tan(x)", ["g * (1 + y * y)"], np.tan, "Tangent",
        domain=((-1.2, 1.2),)),
    Row("asin", "asin(x)", ["g / sqrt(1 - x * x)"], np.arcsin, "Inverse sine",
        domain=_UNIT, aliases=("arcsin",)),
    Row("acos", "acos(x)", ["-g / sqrt(1 - x * x)"], np.arccos, "Inverse cosine",
        domain=_UNIT, aliases=("arccos",)),
    Row("atan", "atan(x)", ["g / (x * x + 1)"], np.arctan, "Inverse tangent",
        aliases=("arctan",)),
    Row("asinh", "asinh(x)", ["g / sqrt(x * x + 1)"], np.arcsinh,
        "Inverse hyperbolic sine", aliases=("arcsinh",)),
    Row("acosh", "acosh(x)", ["g / sqrt(x * x - 1)"], np.arccosh,
        "Inverse hyperbolic cosine", domain=((1.2, 4.0),), aliases=("arccosh",)),
    Row("atanh", "atanh(x)", ["g / (1 - x * x)"], np.arctanh,
        "Inverse hyperbolic tangent", domain=_UNIT, aliases=("arctanh",)),
    # torch: sign(NaN) = 0, sign(-0.0) = 0; bool and integer tensors keep
    # their dtype.
    Row("sign", "pick(1.0, pick(-1.0, 0.0, x < 0), x > 0)", [_ZERO], _sign,
        "Sign: 1, -1 or 0 (0 for NaN, as torch; zero gradient)", exact=True,
        ints="keep", ufunc=_sign),
    # Rounding keeps an integer tensor as it is and refuses a bool one
    # (torch's NotImplementedError); the gradient is 0 everywhere.
    Row("floor", "floor(x)", [_ZERO], np.floor, "Round down (zero gradient)",
        exact=True, ints="keep", ufunc=_keep_ints(np.floor),
        bool_error=_no_bool("floor_vml_cpu"), bool_error_type=NotImplementedError),
    Row("ceil", "ceil(x)", [_ZERO], np.ceil, "Round up (zero gradient)",
        exact=True, ints="keep", ufunc=_keep_ints(np.ceil),
        bool_error=_no_bool("ceil_vml_cpu"), bool_error_type=NotImplementedError),
    # Half-way cases go to the even neighbour, as torch (nearbyint).
    Row("round", "rint(x)", [_ZERO], np.rint,
        "Round to the nearest integer, half to even (zero gradient)", exact=True,
        ints="keep", ufunc=_keep_ints(np.rint), bool_error=_no_bool("round_vml_cpu"),
        bool_error_type=NotImplementedError),
    Row("trunc", "trunc(x)", [_ZERO], np.trunc, "Round toward zero (zero gradient)",
        exact=True, ints="keep", ufunc=_keep_ints(np.trunc), aliases=("fix",),
        bool_error=_no_bool("trunc_vml_cpu"), bool_error_type=NotImplementedError),
    # torch's reciprocal backward: -g * y * y.
    Row("reciprocal", "1 / x", ["-g * (y * y)"], np.reciprocal, "1 / x",
        domain=((0.5, 2.0),), exact=True),
    Row("erf", "erf(x)", ["g * (1.1283791670955126 * exp(-(x * x)))"], _erf,
        "Error function"),
    Row("erfc", "erfc(x)", ["g * (-1.1283791670955126 * exp(-(x * x)))"], _erfc,
        "Complementary error function 1 - erf(x), exact for large x"),
    # torch: erfinv' = sqrt(pi) / 2 * exp(erfinv(x)^2), from the output.
    Row("erfinv", "erfinv(x)", ["g * (0.886226925452758 * exp(y * y))"], _erfinv,
        "Inverse error function", domain=_UNIT),
    Row("exp2", "exp2(x)", ["g * (y * 0.6931471805599453)"], np.exp2,
        "Base-2 exponential"),
]

# torch's remainder takes the sign of b (Python's %), fmod the sign of a (C's
# fmod); floor_divide is Python's //.  Integer operands stay integers and a
# zero integer divisor raises; grad_b of remainder/fmod is -g times the
# quotient rounded down/toward zero, as torch.  floor_divide has no gradient
# in torch (its backward raises); cygrad's is 0, as torch's
# div(rounding_mode="floor").
_DIVISOR = ((-3.0, 3.0), (0.5, 3.0))
BINARY += [
    Row("remainder", "remainder(a, b)", ["g", "-g * floor_divide(a, b)"], _remainder,
        "Remainder with the sign of the divisor (Python's %)", domain=_DIVISOR,
        ints="keep", ufunc=_int_checked(_remainder),
        bool_error=_no_bool("remainder_cpu"), bool_error_type=NotImplementedError),
    Row("fmod", "fmod(a, b)", ["g", "-g * trunc(a / b)"], _fmod,
        "Remainder with the sign of the dividend (C's fmod)", domain=_DIVISOR,
        ints="keep", ufunc=_int_checked(_fmod),
        bool_error=_no_bool("fmod_cpu"), bool_error_type=NotImplementedError),
    Row("floor_divide", "floor_divide(a, b)", [_ZERO, _ZERO], _floor_divide,
        "Division rounded down (Python's //; zero gradient)", domain=_DIVISOR,
        ints="keep", ufunc=_int_checked(_floor_divide),
        bool_error=_no_bool("div_floor_cpu"), bool_error_type=NotImplementedError,
        node="DivBackward2"),
    # Each side's share of exp(a) + exp(b); torch refuses integers.
    Row("logaddexp", "logaddexp(a, b)", ["g / (1 + exp(b - a))",
                                         "g / (1 + exp(a - b))"],
        np.logaddexp, "log(exp(a) + exp(b)) without overflow", ints="refuse",
        number_other=False),
]

# Kernels for x ** k with a Python number k, as torch special-cases them
# (x ** 2 is the square row): never cygrad.<name>, only the engine's
# ``_power`` calls them.  The backwards are torch's g * (k * x ** (k - 1))
# with its own special cases of x ** (k - 1) (x ** -2 = 1 / (x * x), x **
# -0.5 = 1 / sqrt(x)); x ** 0 has gradient 0.
POWERS = [
    Row("pow_zero", "pick(1.0, x, 1)", [_ZERO], lambda x: np.ones_like(x), "x ** 0",
        exact=True, node="PowBackward0"),
    Row("pow_one", "x", ["g"], lambda x: x.copy(), "x ** 1", exact=True,
        node="PowBackward0"),
    Row("pow_cube", "x * x * x", ["g * (3.0 * (x * x))"], lambda x: x ** 3, "x ** 3",
        exact=True, node="PowBackward0"),
    Row("pow_recip", "1 / x", ["g * -(1 / (x * x))"], lambda x: 1 / x, "x ** -1",
        exact=True, node="PowBackward0"),
    Row("pow_recip_square", "1 / (x * x)", ["g * (-2.0 * pow(x, -3.0))"],
        lambda x: 1 / (x * x), "x ** -2", exact=True, node="PowBackward0"),
    Row("pow_sqrt", "sqrt(x)", ["g * (0.5 * (1 / sqrt(x)))"], np.sqrt, "x ** 0.5",
        exact=True, node="PowBackward0"),
    Row("pow_rsqrt", "1 / sqrt(x)", ["g * (-0.5 * pow(x, -1.5))"],
        lambda x: 1 / np.sqrt(x), "x ** -0.5", exact=True, node="PowBackward0"),
]
# The exponent of each (x ** 2 is the square row).
POWER_EXPONENTS = {0: "pow_zero", 1: "pow_one", 2: "square", 3: "pow_cube",
                   -1: "pow_recip", -2: "pow_recip_square", 0.5: "pow_sqrt",
                   -0.5: "pow_rsqrt"}
# x ** k for any other Python number k on a float tensor (b is the 0-d
# exponent): cg_pow.h's vectorized pow, float32 and float64 (libm's pow
# was 2.6-3.2x torch's SIMD pow in float64), with pow's gradients.  Like
# POWERS, only the engine's ``_power`` calls it.
POWERS_BINARY = [
    Row("pow_scalar", "powk(a, b)", ["pow_grad_base(g, a, b, y)", "pow_grad_exp(g, a, b, y)"],
        np.power, "x ** k for a number k", domain=((0.2, 3.0), (-2.0, 2.0)),
        fast={"fwd": None, "bwda": "cg_pow_ok(a, b)", "bwdb": "cg_log_ok(a)"},
        node="PowBackward0"),
]

ROWS = {r.name: r for r in UNARY + BINARY}
if len(ROWS) != len(UNARY) + len(BINARY):
    raise ValueError("optable: two rows have the same name")
