"""``cygrad.accelerator``: the device check newer scripts use instead of
``torch.cuda``.  cygrad computes on the CPU, so there is no accelerator:
``is_available()`` is False and ``current_accelerator()`` None (scripts then
fall back to ``"cpu"``); asking for the accelerator's device raises torch's
RuntimeError."""

__all__ = [
    "current_accelerator", "current_device_index", "device_count", "device_index",
    "empty_cache", "is_available", "set_device_index", "synchronize",
]

_NONE = "Cannot access accelerator device when none is available."


def is_available():
    return False


def current_accelerator(check_available=False):
    return None


def device_count():
    return 0


def current_device_index():
    raise RuntimeError(_NONE)


def set_device_index(device):
    raise RuntimeError(_NONE)


def synchronize(device=None):
    raise RuntimeError(_NONE)


class device_index:
    """``with device_index(i):`` runs the block on accelerator device ``i``:
    a no-op for ``None``, torch's RuntimeError for an index (there is no
    accelerator)."""

    def __init__(self, device, /):
        self.idx = device

    def __enter__(self):
        if self.idx is not None:
            raise RuntimeError(_NONE)

    def __exit__(self, *exc_info):
        return None


def empty_cache():
    """Nothing to empty: there is no accelerator memory."""


current_device_idx = current_device_index
set_device_idx = set_device_index
