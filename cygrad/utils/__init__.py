"""Utilities outside the core: ``cygrad.utils.data`` (datasets and loaders)."""

from cygrad.utils import data  # noqa: F401
