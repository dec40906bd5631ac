"""``cygrad.amp``: the mixed-precision names of training scripts.

- ``autocast``: for ``device_type="cuda"`` (or any GPU type) torch's CPU
  build warns that the device is not available and runs the block in full
  precision; so does cygrad.  ``enabled=False`` is a no-op anywhere.  CPU
  autocast (ops choosing float16/bfloat16 per op) is not implemented:
  entering it enabled raises ``NotImplementedError`` rather than silently
  computing in float32.
- ``GradScaler``: loss scaling for float16 training.  For a GPU device it is
  disabled with torch's warning (a pass-through); for ``"cpu"`` it scales as
  torch does: ``scale(loss)`` multiplies by the scale, ``step`` unscales the
  gradients and skips the step when any is inf/NaN, ``update`` halves the
  scale after a skipped step and doubles it after ``growth_interval`` good
  ones.
"""

import math
import warnings

import numpy as np

__all__ = ["GradScaler", "autocast"]

_GPU_TYPES = ("cuda", "xpu", "mps", "hpu", "xla")


class autocast:
    """Context manager and decorator; see the module doc."""

    def __init__(self, device_type, dtype=None, enabled=True, cache_enabled=None):
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: "
                             f"`{type(device_type)}`")
        self.device_type = device_type
        self.fast_dtype = dtype
        self._enabled = bool(enabled)
        if self._enabled and device_type in _GPU_TYPES:
            warnings.warn(f"User provided device_type of '{device_type}', but "
                          f"{device_type.upper()} is not available (cygrad runs on the "
                          "CPU). Disabling autocast.", UserWarning, stacklevel=2)
            self._enabled = False

    def __enter__(self):
        if self._enabled:
            raise NotImplementedError(
                f"autocast(device_type={self.device_type!r}) is not implemented by "
                "cygrad: ops do not switch to float16/bfloat16 per op. Compute in "
                "float32, or cast the model and inputs with .half() yourself.")
        return self

    def __exit__(self, *exc):
        return False

    def __call__(self, fn):
        def wrapped(*args, **kwargs):
            with self:
                return fn(*args, **kwargs)
        wrapped.__wrapped__ = fn
        wrapped.__name__ = getattr(fn, "__name__", "wrapped")
        return wrapped


class GradScaler:
    """Loss scaling (see the module doc)."""

    def __init__(self, device="cuda", init_scale=2.0 ** 16, growth_factor=2.0,
                 backoff_factor=0.5, growth_interval=2000, enabled=True):
        self._device = device
        self._enabled = bool(enabled)
        if self._enabled and device in _GPU_TYPES:
            warnings.warn(f"torch.{device}.amp.GradScaler is enabled, but "
                          f"{device.upper()} is not available.  Disabling.",
                          UserWarning, stacklevel=2)
            self._enabled = False
        self._scale = float(init_scale)
        self._growth_factor = float(growth_factor)
        self._backoff_factor = float(backoff_factor)
        self._growth_interval = int(growth_interval)
        self._growth_tracker = 0
        self._unscaled = {}       # id(optimizer) -> found_inf (this step)

    def is_enabled(self):
        return self._enabled

    def get_scale(self):
        return self._scale if self._enabled else 1.0

    def scale(self, outputs):
        """``outputs`` times the current scale (each of a list/tuple)."""
        if not self._enabled:
            return outputs
        if isinstance(outputs, (list, tuple)):
            return type(outputs)(self.scale(o) for o in outputs)
        return outputs * self._scale

    def unscale_(self, optimizer):
        """Divide ``optimizer``'s gradients by the scale, once per step."""
        if not self._enabled:
            return
        if id(optimizer) in self._unscaled:
            raise RuntimeError("unscale_() has already been called on this optimizer "
                               "since the last update().")
        inv = 1.0 / self._scale
        found = False
        for group in optimizer.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                g = p.grad._arr
                if not np.all(np.isfinite(g)):
                    found = True
                g *= g.dtype.type(inv)
                p.grad._bump_version()
        self._unscaled[id(optimizer)] = found

    def step(self, optimizer, *args, **kwargs):
        """``optimizer.step()`` unless an unscaled gradient is inf or NaN."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if id(optimizer) not in self._unscaled:
            self.unscale_(optimizer)
        if self._unscaled[id(optimizer)]:
            return None
        return optimizer.step(*args, **kwargs)

    def update(self, new_scale=None):
        """Adjust the scale after the step(s) since the last update."""
        if not self._enabled:
            return
        if new_scale is not None:
            self._scale = float(new_scale.item() if hasattr(new_scale, "item")
                                else new_scale)
        elif any(self._unscaled.values()):
            self._scale *= self._backoff_factor
            self._growth_tracker = 0
        else:
            self._growth_tracker += 1
            if self._growth_tracker == self._growth_interval:
                grown = self._scale * self._growth_factor
                if math.isfinite(grown):
                    self._scale = grown
                self._growth_tracker = 0
        self._unscaled = {}

    def state_dict(self):
        if not self._enabled:
            return {}
        return {"scale": self._scale, "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor,
                "growth_interval": self._growth_interval,
                "_growth_tracker": self._growth_tracker}

    def load_state_dict(self, state):
        if not self._enabled:
            return
        if not state:
            raise RuntimeError("The source state dict is empty, possibly because it "
                               "was saved from a disabled instance of GradScaler.")
        self._scale = float(state["scale"])
        self._growth_factor = float(state["growth_factor"])
        self._backoff_factor = float(state["backoff_factor"])
        self._growth_interval = int(state["growth_interval"])
        self._growth_tracker = int(state["_growth_tracker"])
