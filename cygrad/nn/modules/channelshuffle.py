"""``torch.nn.modules.channelshuffle``'s path (the layer lives in
``pixelshuffle``)."""

from .pixelshuffle import ChannelShuffle  # noqa: F401

__all__ = ["ChannelShuffle"]
