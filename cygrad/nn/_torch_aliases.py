"""The ``cygrad.<name>`` forms of ``nn.functional`` operations, with the
signatures of torch's ``torch.<name>`` (not those of ``F.<name>``).

torch's top-level forms are its native operators, so their arguments
differ from the functional ones: the dropouts take a required positional
``train``; the norms take ``weight`` and ``bias`` before the running
statistics and a ``cudnn_enabled`` flag (accepted, unused); the losses take
the reduction as an integer (0 "none", 1 "mean", 2 "sum") and, when it is
omitted, reduce nothing (torch 2.13's binding does not apply the
documented ``Mean`` default: ``torch.kl_div(x, y)`` has ``x``'s shape);
``embedding`` takes the weight first and ``padding_idx=-1`` for none; the
``native_*`` forms return tuples with their saved statistics (constants:
torch gives them no gradient either).

Every function here calls the functional form, so values and gradients are
those of ``cygrad.nn.functional``.
"""

import numpy as np

from cygrad import ops
from cygrad.creation import empty, from_numpy

from . import _functional_act as _act
from . import _functional_ctc as _ctc
from . import _functional_dropout as _drop
from . import _functional_instance as _inst
from . import _functional_linear as _lin
from . import _functional_loss as _loss
from . import _functional_more as _more
from . import _functional_norm as _norm
from . import _functional_sparse as _sparse
from . import functional as F

__all__ = [
    "alpha_dropout", "alpha_dropout_", "batch_norm", "bilinear",
    "binary_cross_entropy_with_logits", "celu", "celu_", "channel_shuffle",
    "constant_pad_nd", "cosine_embedding_loss", "cosine_similarity", "ctc_loss",
    "dropout", "dropout_", "embedding", "embedding_bag", "feature_alpha_dropout",
    "feature_alpha_dropout_", "feature_dropout", "feature_dropout_", "group_norm",
    "hinge_embedding_loss", "instance_norm", "kl_div", "layer_norm",
    "margin_ranking_loss", "native_batch_norm", "native_channel_shuffle",
    "native_dropout", "native_group_norm", "native_layer_norm", "pairwise_distance",
    "pdist", "pixel_shuffle", "pixel_unshuffle", "poisson_nll_loss",
    "relu_", "rms_norm", "rrelu", "rrelu_", "selu_", "threshold", "threshold_",
    "triplet_margin_loss",
]

_REDUCTION = {0: "none", 1: "mean", 2: "sum"}


def _reduction(code):
    if code not in _REDUCTION or isinstance(code, bool):
        raise ValueError(f"{code} is not a valid value for reduction")
    return _REDUCTION[code]


# ---------------------------------------------------------------------------
# dropout: (input, p, train), all positional and required; a bad p is a
# RuntimeError here (the native check), a ValueError in F.dropout


def _check_p(p):
    if not 0.0 <= p <= 1.0:
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got "
                           f"{p}")


def dropout(input, p, train):
    """``F.dropout(input, p, training=train)``."""
    _check_p(p)
    return _drop.dropout(input, p, train)


def dropout_(input, p, train):
    """``dropout`` in place."""
    _check_p(p)
    return _drop.dropout(input, p, train, True)


def alpha_dropout(input, p, train):
    """``F.alpha_dropout(input, p, training=train)``."""
    _check_p(p)
    return _drop.alpha_dropout(input, p, train)


def alpha_dropout_(input, p, train):
    _check_p(p)
    return _drop.alpha_dropout(input, p, train, True)


def _check_feature(input):
    if input.ndim < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the "
                           "input")


def _feature(input, p, train, inplace):
    _check_feature(input)
    _check_p(p)
    if not train or p == 0.0:
        return input
    shape = _drop._channel_shape(tuple(input.shape), True)
    return _drop._feature_dropout(input, p, inplace, shape)


def feature_dropout(input, p, train):
    """Dropout of whole channels (dim 1) of an input of 2 or more dims."""
    return _feature(input, p, train, False)


def feature_dropout_(input, p, train):
    return _feature(input, p, train, True)


def feature_alpha_dropout(input, p, train):
    """``alpha_dropout`` of whole channels (dim 1)."""
    _check_feature(input)
    _check_p(p)
    return _drop.feature_alpha_dropout(input, p, train)


def feature_alpha_dropout_(input, p, train):
    _check_feature(input)
    _check_p(p)
    return _drop.feature_alpha_dropout(input, p, train, True)


def native_dropout(input, p, train):
    """``(output, mask)``: the dropped-out input and the bool keep mask (all
    True, with a copy of the input, when ``train`` is False)."""
    if train is False:
        return input.clone(), from_numpy(np.ones(tuple(input.shape), bool))
    if not 0.0 <= 1.0 - p <= 1.0:
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={1 - p}")
    mult = _drop._scaled_mask(input, tuple(input.shape), p)
    return ops.mul(input, from_numpy(mult)), from_numpy(mult != 0)


# ---------------------------------------------------------------------------
# normalisation: torch's native argument order


def batch_norm(input, weight, bias, running_mean, running_var, training, momentum,
               eps, cudnn_enabled):
    """``F.batch_norm`` with ``weight``, ``bias`` first (``cudnn_enabled``
    unused)."""
    return _norm.batch_norm(input, running_mean, running_var, weight, bias, training,
                            momentum, eps)


def instance_norm(input, weight, bias, running_mean, running_var, use_input_stats,
                  momentum, eps, cudnn_enabled):
    """``F.instance_norm`` with ``weight``, ``bias`` first."""
    return _inst.instance_norm(input, running_mean, running_var, weight, bias,
                               use_input_stats, momentum, eps)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-05,
               cudnn_enable=True):
    """``F.layer_norm`` (``cudnn_enable`` unused)."""
    return _norm.layer_norm(input, normalized_shape, weight, bias, eps)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-05,
               cudnn_enabled=True):
    """``F.group_norm`` (``cudnn_enabled`` unused)."""
    return _norm.group_norm(input, num_groups, weight, bias, eps)


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """``F.rms_norm``."""
    return _norm.rms_norm(input, normalized_shape, weight, eps)


def _stats(arr, axes, eps):
    """Biased mean and 1 / sqrt(var + eps) over ``axes`` (kept), as float64."""
    a = np.asarray(arr, dtype=np.float64)
    mean = a.mean(axis=axes, keepdims=True)
    var = ((a - mean) ** 2).mean(axis=axes, keepdims=True)
    return mean, 1.0 / np.sqrt(var + eps)


def native_layer_norm(input, normalized_shape, weight, bias, eps):
    """``(output, mean, rstd)``; the statistics have the input's leading dims
    and a 1 for each normalised one."""
    out = _norm.layer_norm(input, normalized_shape, weight, bias, eps)
    k = len(_norm._normalized(normalized_shape))
    axes = tuple(range(input.ndim - k, input.ndim))
    mean, rstd = _stats(input._arr, axes, eps)
    dt = input._arr.dtype
    return out, from_numpy(mean.astype(dt)), from_numpy(rstd.astype(dt))


def native_batch_norm(input, weight, bias, running_mean, running_var, training,
                      momentum, eps):
    """``(output, save_mean, save_invstd)``: the batch's per-channel mean and
    1 / sqrt(biased var + eps) in training, empty tensors otherwise."""
    out = _norm.batch_norm(input, running_mean, running_var, weight, bias, training,
                           momentum, eps)
    dt = input._arr.dtype
    if not training:
        return out, empty(0, dtype=input.dtype), empty(0, dtype=input.dtype)
    axes = (0,) + tuple(range(2, input.ndim))
    mean, rstd = _stats(input._arr, axes, eps)
    return (out, from_numpy(mean.reshape(-1).astype(dt)),
            from_numpy(rstd.reshape(-1).astype(dt)))


def native_group_norm(input, weight, bias, N, C, HxW, group, eps):
    """``(output, mean, rstd)``, the statistics (N, group)."""
    x = input.reshape(N, C, HxW) if input.ndim != 3 or HxW != input.shape[2] else input
    out = _norm.group_norm(x, group, weight, bias, eps).reshape(tuple(input.shape))
    grouped = np.asarray(input._arr).reshape(N, group, -1)
    mean, rstd = _stats(grouped, (2,), eps)
    dt = input._arr.dtype
    return (out, from_numpy(mean.reshape(N, group).astype(dt)),
            from_numpy(rstd.reshape(N, group).astype(dt)))


# ---------------------------------------------------------------------------
# embeddings, linear maps and shuffles


def embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False,
              sparse=False):
    """``F.embedding(indices, weight, ...)``; a negative ``padding_idx`` is
    none."""
    pad = None if padding_idx is None or padding_idx < 0 else int(padding_idx)
    return _sparse.embedding(indices, weight, padding_idx=pad,
                             scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)


_BAG_MODES = ("sum", "mean", "max")


def embedding_bag(weight, indices, offsets, scale_grad_by_freq=False, mode=0,
                  sparse=False, per_sample_weights=None, include_last_offset=False,
                  padding_idx=None):
    """``(output, offset2bag, bag_size, max_indices)`` of 1-d ``indices`` cut
    into bags at ``offsets``; ``mode`` 0 sum, 1 mean, 2 max.

    ``output`` is ``F.embedding_bag``'s.  The other three are torch's CPU
    bookkeeping: each index's bag; the bag sizes (non-padding indices) and,
    for max, the weight row chosen per bag and feature (for mean, the bag
    sizes again).  In sum mode torch fills neither (zeros of
    ``len(offsets)``) and, on its float32 fast path (no ``padding_idx``),
    leaves ``offset2bag`` empty; cygrad follows."""
    if mode not in (0, 1, 2):
        raise ValueError(f"embedding_bag: mode must be 0 (sum), 1 (mean) or 2 (max), "
                         f"got {mode}")
    out = _sparse.embedding_bag(indices, weight, offsets,
                                scale_grad_by_freq=scale_grad_by_freq,
                                mode=_BAG_MODES[mode], sparse=sparse,
                                per_sample_weights=per_sample_weights,
                                include_last_offset=include_last_offset,
                                padding_idx=padding_idx)
    idx = np.asarray(indices._arr).reshape(-1).astype(np.int64)
    off = np.asarray(offsets._arr).reshape(-1).astype(np.int64)
    n_bags = len(off) - 1 if include_last_offset else len(off)
    bag = np.searchsorted(off, np.arange(idx.size), side="right") - 1
    bag = np.minimum(bag, n_bags - 1)
    if mode == 0:
        fast = padding_idx is None and weight._arr.dtype == np.float32
        offset2bag = np.zeros(0, np.int64) if fast else bag
        zeros = np.zeros(len(off), np.int64)
        return out, from_numpy(offset2bag), from_numpy(zeros), from_numpy(zeros.copy())
    keep = np.ones(idx.size, bool) if padding_idx is None else idx != padding_idx
    sizes = np.bincount(bag[keep], minlength=n_bags).astype(np.int64)
    if mode == 1:
        return out, from_numpy(bag), from_numpy(sizes), from_numpy(sizes.copy())
    w = np.asarray(weight._arr)
    chosen = np.zeros((n_bags, w.shape[1]), np.int64)
    for b in range(n_bags):
        rows = idx[(bag == b) & keep]
        if rows.size:
            chosen[b] = rows[np.argmax(w[rows], axis=0)]
    return out, from_numpy(bag), from_numpy(sizes), from_numpy(chosen)


def bilinear(input1, input2, weight, bias=None):
    """``F.bilinear``."""
    return _lin.bilinear(input1, input2, weight, bias)


def pixel_shuffle(input, upscale_factor):
    return _lin.pixel_shuffle(input, upscale_factor)


def pixel_unshuffle(input, downscale_factor):
    return _lin.pixel_unshuffle(input, downscale_factor)


def channel_shuffle(input, groups):
    return _lin.channel_shuffle(input, groups)


def native_channel_shuffle(input, groups):
    return _lin.native_channel_shuffle(input, groups)


def constant_pad_nd(input, pad, value=0):
    """``F.pad(input, pad, "constant", value)``."""
    return F.pad(input, tuple(pad), "constant", value)


# ---------------------------------------------------------------------------
# activations


def celu(input, alpha=1.0):
    return _act.celu(input, alpha)


def celu_(input, alpha=1.0):
    return _act.celu_(input, alpha)


def relu_(input):
    return _act.relu_(input)


def selu_(input):
    return _act.selu_(input)



def rrelu(input, lower=0.125, upper=0.3333333333333333, training=False,
          generator=None):
    """``F.rrelu``, drawing the training slopes from ``generator``."""
    return _act.rrelu_with_generator(input, lower, upper, training, False, generator)


def rrelu_(input, lower=0.125, upper=0.3333333333333333, training=False,
           generator=None):
    return _act.rrelu_with_generator(input, lower, upper, training, True, generator)


def threshold(input, threshold, value):
    return _act.threshold(input, threshold, value)


def threshold_(input, threshold, value):
    return _act.threshold_(input, threshold, value)



# ---------------------------------------------------------------------------
# distances and losses (integer reductions; omitted: none, as torch 2.13)


def pdist(input, p=2):
    return _more.pdist(input, p)


def pairwise_distance(x1, x2, p=2, eps=1e-06, keepdim=False):
    return _loss.pairwise_distance(x1, x2, p, eps, keepdim)


def cosine_similarity(x1, x2, dim=1, eps=1e-08):
    return _loss.cosine_similarity(x1, x2, dim, eps)


def cosine_embedding_loss(input1, input2, target, margin=0.0, reduction=0):
    return _loss.cosine_embedding_loss(input1, input2, target, margin,
                                       reduction=_reduction(reduction))


def margin_ranking_loss(input1, input2, target, margin=0.0, reduction=0):
    return _loss.margin_ranking_loss(input1, input2, target, margin,
                                     reduction=_reduction(reduction))


def hinge_embedding_loss(input, target, margin=1.0, reduction=0):
    return _loss.hinge_embedding_loss(input, target, margin,
                                      reduction=_reduction(reduction))


def kl_div(input, target, reduction=0, *, log_target=False):
    """``F.kl_div`` (reduction 1 is the elementwise mean, without the
    functional form's warning)."""
    red = _reduction(reduction)
    loss = _loss.kl_div(input, target, reduction="none", log_target=log_target)
    return loss if red == "none" else _loss._reduce(loss, red)


def poisson_nll_loss(input, target, log_input, full, eps, reduction):
    return _loss.poisson_nll_loss(input, target, log_input, full, eps=eps,
                                  reduction=_reduction(reduction))


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-06,
                        swap=False, reduction=0):
    return _loss.triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap,
                                     reduction=_reduction(reduction))


def binary_cross_entropy_with_logits(input, target, weight=None, pos_weight=None,
                                     reduction=0):
    return F.binary_cross_entropy_with_logits(input, target, weight,
                                              reduction=_reduction(reduction),
                                              pos_weight=pos_weight)


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction=0,
             zero_infinity=False):
    """``F.ctc_loss`` with an integer reduction."""
    return _ctc.ctc_loss(log_probs, targets, input_lengths, target_lengths, blank,
                         _reduction(reduction), zero_infinity)




def conv_tbc(input, weight, bias, pad=0):
    """``F.conv_tbc`` (the same signature)."""
    return F.conv_tbc(input, weight, bias, pad)


def _grid_mode(value, table):
    names = {v: k for k, v in table.items()}
    return names.get(int(value), str(value))


def grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners):
    """``F.grid_sample`` with integer modes (0 bilinear, 1 nearest, 2 bicubic;
    0 zeros, 1 border, 2 reflection) and a required ``align_corners``."""
    return F.grid_sample(input, grid,
                         _grid_mode(interpolation_mode,
                                    F.GRID_SAMPLE_INTERPOLATION_MODES),
                         _grid_mode(padding_mode, F.GRID_SAMPLE_PADDING_MODES),
                         bool(align_corners))


grid_sampler_2d = grid_sampler
grid_sampler_3d = grid_sampler


def affine_grid_generator(theta, size, align_corners):
    """``F.affine_grid`` with a required ``align_corners``."""
    return F.affine_grid(theta, size, bool(align_corners))


__all__ += ["affine_grid_generator", "conv_tbc", "grid_sampler", "grid_sampler_2d",
            "grid_sampler_3d"]
