"""``torch.nn.modules.distance``'s path (the layers live in ``fold``)."""

from .fold import CosineSimilarity, PairwiseDistance  # noqa: F401

__all__ = ["CosineSimilarity", "PairwiseDistance"]
