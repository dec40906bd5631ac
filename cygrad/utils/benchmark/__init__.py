"""``cygrad.utils.benchmark``: timing statements and tabulating the results,
as ``torch.utils.benchmark`` (``Timer``, ``Measurement``, ``Compare``).

Python statements only: C++ statements, Callgrind instruction counts and the
fuzzers are not provided.
"""

from cygrad.utils.benchmark.utils.common import Measurement, TaskSpec, select_unit
from cygrad.utils.benchmark.utils.compare import Colorize, Compare
from cygrad.utils.benchmark.utils.timer import Language, Timer

__all__ = ["Colorize", "Compare", "Language", "Measurement", "TaskSpec", "Timer",
           "select_unit"]
