"""Padding layers: constant/zero, reflection, replication and circular, 1-d,
2-d and 3-d (``padding`` an int or a (left, right[, top, bottom[, front,
back]]) tuple, as torch)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import _functional_conv as Fc
from ..module import Module

if TYPE_CHECKING:
    from cygrad._tensor import Tensor

__all__ = [
    "CircularPad1d", "CircularPad2d", "ConstantPad1d", "ConstantPad2d",
    "ReflectionPad1d", "ReflectionPad2d", "ReplicationPad1d", "ReplicationPad2d",
    "ZeroPad1d", "ZeroPad2d",
]


class _PadNd(Module):
    _nd = 2
    _mode = "constant"

    def __init__(self, padding: int | tuple[int, ...],
                 value: float = 0.0) -> None:
        super().__init__()
        n = 2 * self._nd
        if isinstance(padding, int):
            self.padding = (padding,) * n
        else:
            self.padding = tuple(int(p) for p in padding)
            if len(self.padding) != n:
                raise ValueError(
                    f"{type(self).__name__}: padding must be an int or a tuple of "
                    f"{n} ints, got {padding!r}"
                )
        self.value = value

    def forward(self, input: Tensor) -> Tensor:
        if self._mode == "constant":
            return Fc.pad(input, self.padding, "constant", self.value)
        return Fc.pad(input, self.padding, self._mode)

    def extra_repr(self) -> str:
        if self._mode == "constant" and not isinstance(self, (ZeroPad1d, ZeroPad2d,
                                                              ZeroPad3d)):
            return f"padding={self.padding}, value={self.value}"
        return f"{self.padding}"


class ConstantPad1d(_PadNd):
    _nd = 1

    def __init__(self, padding: int | tuple[int, ...], value: float) -> None:
        super().__init__(padding, value)


class ConstantPad2d(_PadNd):
    _nd = 2

    def __init__(self, padding: int | tuple[int, ...], value: float) -> None:
        super().__init__(padding, value)


class ZeroPad1d(_PadNd):
    _nd = 1

    def __init__(self, padding: int | tuple[int, ...]) -> None:
        super().__init__(padding, 0.0)


class ZeroPad2d(_PadNd):
    _nd = 2

    def __init__(self, padding: int | tuple[int, ...]) -> None:
        super().__init__(padding, 0.0)


class ReflectionPad1d(_PadNd):
    _nd, _mode = 1, "reflect"


class ReflectionPad2d(_PadNd):
    _nd, _mode = 2, "reflect"


class ReplicationPad1d(_PadNd):
    _nd, _mode = 1, "replicate"


class ReplicationPad2d(_PadNd):
    _nd, _mode = 2, "replicate"


class CircularPad1d(_PadNd):
    _nd, _mode = 1, "circular"


class CircularPad2d(_PadNd):
    _nd, _mode = 2, "circular"


class ConstantPad3d(_PadNd):
    _nd = 3

    def __init__(self, padding: int | tuple[int, ...], value: float) -> None:
        super().__init__(padding, value)


class ZeroPad3d(_PadNd):
    _nd = 3

    def __init__(self, padding: int | tuple[int, ...]) -> None:
        super().__init__(padding, 0.0)


class ReflectionPad3d(_PadNd):
    _nd, _mode = 3, "reflect"


class ReplicationPad3d(_PadNd):
    _nd, _mode = 3, "replicate"


class CircularPad3d(_PadNd):
    _nd, _mode = 3, "circular"


__all__ += ["CircularPad3d", "ConstantPad3d", "ReflectionPad3d", "ReplicationPad3d",
            "ZeroPad3d"]
