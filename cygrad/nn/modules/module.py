"""``torch.nn.modules.module``'s path: ``Module`` (defined in
``cygrad.nn.module``), which type hints and subclasses import from here."""

from ..module import Module  # noqa: F401

__all__ = ["Module"]
