"""The ops of the API-breadth work (ops/mathextra, special, arrange, stats,
linalg_extra, misc, window): tested in test_api_breadth.py, listed here so
that reference.py can name them without importing torch."""

NAMES = (
    "addr", "adjoint", "alias_copy", "aminmax", "angle", "as_strided",
    "as_strided_copy", "atleast_1d", "atleast_2d", "atleast_3d", "bartlett_window",
    "bitwise_left_shift", "bitwise_not", "bitwise_right_shift", "blackman_window",
    "block_diag", "cartesian_prod", "chain_matmul", "cholesky_inverse",
    "cholesky_solve", "column_stack", "combinations", "copysign", "corrcoef", "cov",
    "cummax", "cummin", "cumulative_trapezoid", "deg2rad", "detach", "detach_copy",
    "diagflat", "diagonal_copy", "diagonal_scatter", "diff", "digamma", "dist",
    "dsplit", "expand_copy", "fill", "float_power", "fmax", "fmin", "frac", "frexp",
    "gcd", "greater", "greater_equal", "hamming_window", "hann_window", "hardshrink",
    "heaviside", "hsplit", "i0", "index_reduce", "inner", "isin", "isneginf",
    "isposinf", "isreal", "kaiser_window", "lcm", "ldexp", "less", "less_equal",
    "lgamma", "logaddexp2", "logcumsumexp", "logdet", "logit", "matrix_exp", "mvlgamma",
    "nanmean", "nanmedian", "nanquantile", "nansum", "narrow_copy", "nextafter",
    "not_equal", "permute_copy", "polygamma", "positive", "prelu", "quantile",
    "rad2deg", "ravel", "renorm", "rot90", "row_stack", "rsub", "select_copy",
    "select_scatter", "sgn", "signbit", "sinc", "slice_copy", "slice_scatter",
    "split_copy", "split_with_sizes", "split_with_sizes_copy", "squeeze_copy", "t_copy",
    "tensor_split", "transpose_copy", "trapezoid", "trapz", "unbind_copy", "unflatten",
    "unfold_copy", "unique_consecutive", "unsafe_chunk", "unsafe_split",
    "unsafe_split_with_sizes", "unsqueeze_copy", "vander", "view_copy", "vsplit",
    "xlogy",
)
