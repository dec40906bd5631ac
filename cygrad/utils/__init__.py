"""Utilities outside the core: ``cygrad.utils.data`` (datasets and loaders)
and ``cygrad.utils.checkpoint`` (activation checkpointing)."""

from cygrad.utils import checkpoint, data  # noqa: F401
