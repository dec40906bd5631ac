"""``cygrad.utils.tensorboard``: ``SummaryWriter`` writes TensorBoard event
files itself (torch's needs the ``tensorboard`` package; cygrad's only to
view the files)."""

from .writer import FileWriter, SummaryWriter  # noqa: F401

__all__ = ["FileWriter", "SummaryWriter"]
