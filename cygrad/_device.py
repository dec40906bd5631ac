"""``cygrad.device``: torch's device objects, for code that asks where its
tensors live.  cygrad computes on the CPU only: every other device type is
understood (so ``torch.device("cuda")`` can be written, compared and
printed) and refused with one clear error the moment a tensor or module is
asked to go there, the error type torch's CPU build raises
(``AssertionError``).
"""

__all__ = ["check_device", "device", "get_default_device", "set_default_device"]

# torch's device types (a string naming another one is a RuntimeError).
_TYPES = ("cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip",
          "ve", "fpga", "maia", "xla", "lazy", "vulkan", "mps", "meta", "hpu", "mtia",
          "privateuseone")


class device:
    """A device: ``type`` (``"cpu"``, ``"cuda"``, ...) and optional ``index``.

    ``device("cpu")``, ``device("cuda:1")``, ``device("cuda", 1)`` or
    ``device(other_device)``; equal when type and index are equal (so
    ``device("cpu:0") != device("cpu")``, as in torch).
    """

    __slots__ = ("_index", "_type")

    def __init__(self, type, index=None):
        if isinstance(type, device):
            if index is not None:
                raise TypeError("device(): a device and an index were both given")
            self._type, self._index = type._type, type._index
            return
        if isinstance(type, int) and not isinstance(type, bool):
            # torch.device(0) is the first accelerator, and there is none.
            raise RuntimeError("Cannot access accelerator device when none is "
                               "available.")
        if not isinstance(type, str):
            raise TypeError(f"device(): expected a string or a device, got "
                            f"{builtins_type(type).__name__}")
        name, _, idx = type.partition(":")
        if name not in _TYPES:
            raise RuntimeError(
                f"Expected one of {', '.join(_TYPES)} device type at start of device "
                f"string: {type}")
        if idx:
            if index is not None:
                raise RuntimeError(f"type (string) must not include an index because "
                                   f"index was passed explicitly: {type}")
            if not idx.isdigit():
                raise RuntimeError(f"Invalid device string: '{type}'")
            index = int(idx)
        if index is not None and (not isinstance(index, int) or index < 0):
            raise RuntimeError(f"Device index must not be negative, got {index}")
        self._type, self._index = name, index

    @property
    def type(self):
        return self._type

    @property
    def index(self):
        return self._index

    def __eq__(self, other):
        if not isinstance(other, device):
            return NotImplemented
        return (self._type, self._index) == (other._type, other._index)

    def __hash__(self):
        return hash((self._type, self._index))

    def __str__(self):
        return self._type if self._index is None else f"{self._type}:{self._index}"

    def __repr__(self):
        if self._index is None:
            return f"device(type='{self._type}')"
        return f"device(type='{self._type}', index={self._index})"

    def __reduce__(self):
        return (device, (self._type, self._index))

    def __enter__(self):
        """``with torch.device(d):`` makes ``d`` the default device for the
        block: the CPU is, already; any other device raises here, with the
        error ``set_default_device`` gives (torch raises at the first tensor
        the block makes)."""
        set_default_device(self)
        return self

    def __exit__(self, *exc):
        return False


builtins_type = type
CPU = device("cpu")


def check_device(dev):
    """``dev`` (None, a string, an int or a device) as a device, which must
    be the CPU: anything else raises AssertionError, as torch's CPU build
    does for CUDA."""
    if dev is None:
        return CPU
    d = dev if isinstance(dev, device) else device(dev)
    if d._type not in ("cpu", "meta") or (d._type == "cpu" and d._index not in
                                          (None, 0)):
        raise AssertionError(
            f"cygrad runs on the CPU only: device '{d}' is not available (torch's CPU "
            "build says 'Torch not compiled with CUDA enabled'). Use 'cpu'; "
            "cygrad.cuda.is_available() is False.")
    if d._type == "meta":
        raise NotImplementedError("cygrad has no 'meta' device: tensors always hold "
                                  "their values")
    return d


def get_default_device():
    """The device new tensors are made on: always the CPU."""
    return CPU


def set_default_device(dev):
    """torch.set_default_device: only the CPU (or None) is accepted."""
    check_device(dev)
