"""``AdaptiveLogSoftmaxWithLoss`` (Grave et al., "Efficient softmax
approximation for GPUs", 2016), as ``torch.nn.AdaptiveLogSoftmaxWithLoss``.

The classes are split by ``cutoffs`` into a shortlist, scored by the
``head`` together with one logit per tail cluster, and clusters of rarer
classes, each scored by its own low-rank ``tail`` projection (its hidden
size divided by ``div_value`` once more per cluster).  The log-probability
of a tail class is its cluster's head log-probability plus its
log-probability within the cluster.  The parameters, their names
(``head.weight``, ``tail.<i>.0.weight``, ``tail.<i>.1.weight``) and their
initialisation are torch's, so a torch ``state_dict`` loads as it is.
"""

from collections import namedtuple

import numpy as np

from cygrad.creation import from_numpy
from cygrad.ops import cat

from .. import functional as F
from ..module import Module
from .container import ModuleList, Sequential
from .linear import Linear

__all__ = ["AdaptiveLogSoftmaxWithLoss"]

_ASMoutput = namedtuple("_ASMoutput", ["output", "loss"])


class AdaptiveLogSoftmaxWithLoss(Module):
    """Adaptive log-softmax over ``n_classes`` classes with a loss.

    Parameters
    ----------
    in_features : int
    n_classes : int
    cutoffs : increasing sequence of ints in [1, n_classes - 1]
    div_value : float, the hidden size of cluster i is
        ``in_features // div_value ** (i + 1)``
    head_bias : bool, a bias in the head

    ``forward(input (N, in_features) or (in_features,), target (N,) or ())``
    returns ``(output, loss)``: each row's log-probability of its target and
    the mean negative log-likelihood.
    """

    def __init__(self, in_features, n_classes, cutoffs, div_value=4.0, head_bias=False,
                 device=None, dtype=None):
        super().__init__()
        cutoffs = list(cutoffs)
        if len(cutoffs) == 0:
            raise ValueError("cutoffs should be a sequence of length larger than 0")
        if (cutoffs != sorted(cutoffs) or min(cutoffs) <= 0
                or max(cutoffs) > n_classes - 1 or len(set(cutoffs)) != len(cutoffs)
                or any(int(c) != c for c in cutoffs)):
            raise ValueError(
                "cutoffs should be a sequence of unique, positive integers sorted in "
                "an increasing order, where each value is between 1 and n_classes-1")
        self.in_features = in_features
        self.n_classes = n_classes
        self.cutoffs = cutoffs + [n_classes]
        self.div_value = div_value
        self.head_bias = head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        self.head = Linear(in_features, self.head_size, bias=head_bias, device=device,
                           dtype=dtype)
        clusters = []
        for i in range(self.n_clusters):
            hidden = int(in_features // (div_value ** (i + 1)))
            size = self.cutoffs[i + 1] - self.cutoffs[i]
            clusters.append(Sequential(
                Linear(in_features, hidden, bias=False, device=device, dtype=dtype),
                Linear(hidden, size, bias=False, device=device, dtype=dtype)))
        self.tail = ModuleList(clusters)

    def reset_parameters(self):
        self.head.reset_parameters()
        for proj in self.tail:
            for lin in proj:
                lin.reset_parameters()

    def forward(self, input_, target_):
        tdim = target_.ndim
        if tdim == 1:
            if input_.shape[0] != target_.shape[0]:
                raise RuntimeError("Input and target should have the same size in the "
                                   "batch dimension.")
            if input_.ndim != 2:
                raise RuntimeError("1D target tensor expects 2D input tensors, but "
                                   f"found inputs with size {_size(input_.shape)}")
        elif tdim == 0:
            if input_.ndim != 1:
                raise RuntimeError("0D target tensor expects 1D input tensors, but "
                                   f"found inputs with size {_size(input_.shape)}")
        else:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not "
                               "supported")
        batched = tdim > 0
        input = input_ if batched else input_.unsqueeze(0)
        t = np.asarray(target_._arr).reshape(-1).astype(np.int64)
        if t.size and (t.min() < 0 or t.max() >= self.n_classes):
            raise RuntimeError(
                f"Target values should be in [0, {self.n_classes - 1}], but values in "
                f"range [{t.min()}, {t.max()}] were found. ")
        n = t.shape[0]
        # each row's column of the head: its class, or its cluster's logit
        cluster = np.searchsorted(np.asarray(self.cutoffs), t, side="right")
        head_col = np.where(cluster == 0, t, self.shortlist_size + cluster - 1)
        head_lp = F.log_softmax(self.head(input), dim=1)
        output = head_lp.gather(1, from_numpy(head_col.reshape(n, 1))).reshape(n)
        for i in range(1, self.n_clusters + 1):
            rows = np.nonzero(cluster == i)[0]
            if rows.size == 0:
                continue
            idx = from_numpy(rows)
            local = F.log_softmax(self.tail[i - 1](input.index_select(0, idx)), dim=1)
            rel = (t[rows] - self.cutoffs[i - 1]).reshape(-1, 1)
            picked = local.gather(1, from_numpy(rel)).reshape(-1)
            output = output.index_add(0, idx, picked)
        loss = (-output).mean()
        if not batched:
            output = output.squeeze(0)
        return _ASMoutput(output, loss)

    def _full_log_prob(self, input, head_out):
        head_lp = F.log_softmax(head_out, dim=1)
        parts = [head_lp[:, :self.shortlist_size]]
        for i in range(self.n_clusters):
            cluster_lp = F.log_softmax(self.tail[i](input), dim=1)
            col = self.shortlist_size + i
            parts.append(cluster_lp + head_lp[:, col:col + 1])
        return cat(parts, dim=1)

    def log_prob(self, input):
        """Log-probabilities of every class, (N, n_classes) or (n_classes,)."""
        batched = input.ndim == 2
        x = input if batched else input.unsqueeze(0)
        out = self._full_log_prob(x, self.head(x))
        return out if batched else out.squeeze(0)

    def predict(self, input):
        """The most likely class of each row (or of the unbatched input)."""
        batched = input.ndim == 2
        x = input if batched else input.unsqueeze(0)
        head_out = self.head(x)
        best = np.asarray(head_out._arr).argmax(axis=1)
        tail_rows = np.nonzero(best >= self.shortlist_size)[0]
        if tail_rows.size:
            idx = from_numpy(tail_rows)
            sub = self._full_log_prob(x.index_select(0, idx),
                                      head_out.index_select(0, idx))
            best[tail_rows] = np.asarray(sub._arr).argmax(axis=1)
        out = from_numpy(best.astype(np.int64))
        return out if batched else out.squeeze(0)


def _size(shape):
    return f"torch.Size([{', '.join(str(int(s)) for s in shape)}])"
