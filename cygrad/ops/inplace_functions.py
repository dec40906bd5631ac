"""torch's function forms of in-place methods: ``torch.exp_(x)`` is
``x.exp_()``, ``torch.clamp_(x, min=0)`` is ``x.clamp_(min=0)``.

torch has such a function for some in-place methods only (``torch.add_``
does not exist); ``TORCH_NAMES`` lists torch's, and ``functions()`` makes
one for each whose method cygrad's Tensor has, forwarding every argument to
the method (so each keeps its method's checks, errors and autograd).
"""

from cygrad._tensor import Tensor

__all__ = ["TORCH_NAMES", "functions"]

# torch 2.13's top-level in-place functions
TORCH_NAMES = (
    "abs_", "acos_", "acosh_", "addmv_", "alpha_dropout_", "arccos_", "arccosh_",
    "arcsin_", "arcsinh_", "arctan_", "arctanh_", "as_strided_", "asin_", "asinh_",
    "atan_", "atanh_", "ceil_", "celu_", "clamp_", "clamp_max_", "clamp_min_",
    "clip_", "conj_physical_", "cos_", "cosh_", "deg2rad_", "detach_", "dropout_",
    "embedding_renorm_", "erf_", "erfc_", "exp2_", "exp_", "expm1_",
    "feature_alpha_dropout_", "feature_dropout_", "fill_", "fix_", "floor_", "frac_",
    "gcd_", "i0_", "index_put_", "lcm_", "ldexp_", "log10_", "log1p_", "log2_",
    "log_", "logit_", "nan_to_num_", "neg_", "negative_", "rad2deg_", "reciprocal_",
    "relu_", "resize_as_", "resize_as_sparse_", "round_", "rrelu_", "rsqrt_",
    "selu_", "sigmoid_", "sin_", "sinc_", "sinh_", "sqrt_", "square_", "tan_",
    "tanh_", "threshold_", "trunc_", "xlogy_", "zero_",
)


def _forward(name):
    def fn(input, *args, **kwargs):
        return getattr(input, name)(*args, **kwargs)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"``input.{name}(...)``: in place, returns ``input``."
    return fn


def functions():
    """{name: function} for each of torch's names whose method Tensor has."""
    return {n: _forward(n) for n in TORCH_NAMES if hasattr(Tensor, n)}
