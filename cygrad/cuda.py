"""``cygrad.cuda``: what scripts ask before choosing a device.  cygrad has
no GPU, so ``is_available()`` is False and ``device_count()`` 0, as on a
CPU-only torch; the seeding and cache calls do nothing, as there; anything
that needs a GPU raises torch's AssertionError with a sentence that says
cygrad runs on the CPU."""

__all__ = [
    "current_device",
    "device_count",
    "empty_cache",
    "get_device_name",
    "is_available",
    "is_bf16_supported",
    "is_initialized",
    "manual_seed",
    "manual_seed_all",
    "synchronize",
]


def _no_gpu(what):
    raise AssertionError(f"{what}: cygrad runs on the CPU only (torch's CPU build "
                         "says 'Torch not compiled with CUDA enabled')")


def is_available():
    return False


def device_count():
    return 0


def is_initialized():
    return False


def is_bf16_supported(including_emulation=True):
    return False


def manual_seed(seed):
    """Without a GPU there is nothing to seed (torch ignores it too)."""


def manual_seed_all(seed):
    """Without a GPU there is nothing to seed (torch ignores it too)."""


def empty_cache():
    """Without a GPU there is no cache to empty."""


def synchronize(device=None):
    _no_gpu("cuda.synchronize()")


def current_device():
    _no_gpu("cuda.current_device()")


def get_device_name(device=None):
    _no_gpu("cuda.get_device_name()")
