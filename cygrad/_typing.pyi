# The type aliases cygrad's signatures use; a stub only (nothing imports
# it at run time: the annotations that name it are strings, and the
# modules import it under TYPE_CHECKING).
import os
from typing import IO, Any, Callable, Iterable, Sequence, Union

import numpy as np

from cygrad._device import device
from cygrad._tensor import Tensor

# A dtype object (cygrad.float32, ...: NumPy dtypes) or a type torch accepts
# for one (float, int, bool).
DType = Union[np.dtype[Any], type]
# A device: a device object, its name ("cpu") or an index.
Device = Union[device, str, int]
# A size: one int per dimension, as separate arguments or one sequence.
Shape = Union[int, Sequence[int]]
# A Python scalar.
Number = Union[int, float, bool]
# What tensor() and as_tensor() read: a scalar, nested sequences, an array
# or a tensor.
ArrayLike = Any
# An optimizer's params: tensors, or dicts of options with a "params" key.
Params = Union[Iterable[Tensor], Iterable[dict[str, Any]]]
Hook = Callable[..., Any]
# Where save() writes and load() reads: a path or a binary file object.
FileLike = Union[str, "os.PathLike[str]", IO[bytes]]
