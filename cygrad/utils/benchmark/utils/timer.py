"""``Timer``: wall-clock timing of a Python statement, as torch's.

The statement and its setup are compiled once, with ``torch`` (this
package's top module) and the caller's ``globals`` in scope.  ``timeit``
times one block of ``number`` runs; ``blocked_autorange`` first grows the
block size by factors of ten until the timer's own overhead is negligible,
then times blocks until ``min_run_time`` has passed; ``adaptive_autorange``
stops once the spread of the blocks is small.  Each measurement runs with
``num_threads`` intra-op threads and restores the previous setting.
C++ statements (``Language.CPP``) and Callgrind counts need torch's C++
toolchain and raise ``NotImplementedError``.
"""

from __future__ import annotations

import enum
import sys
import textwrap
import timeit as _timeit
from collections.abc import Callable
from typing import Any

from cygrad._threads import get_num_threads, set_num_threads
from cygrad.utils.benchmark.utils.common import Measurement, TaskSpec

__all__ = ["Language", "Timer", "timer"]

timer = _timeit.default_timer


class Language(enum.Enum):
    PYTHON = 0
    CPP = 1


def _no_cpp(what):
    return NotImplementedError(
        f"{what}: cygrad has no C++ frontend; time Python statements "
        "(Language.PYTHON)")


class Timer:
    """Time ``stmt`` after running ``setup`` once (torch.utils.benchmark.Timer).

    ``label``, ``sub_label``, ``description`` and ``env`` only name the
    results (for ``Compare``); ``num_threads`` is the intra-op thread count
    during the measurement.
    """

    def __init__(self, stmt: str = "pass", setup: str = "pass", global_setup: str = "",
                 timer: Callable[[], float] = timer, globals: dict[str, Any] | None = None,
                 label: str | None = None, sub_label: str | None = None,
                 description: str | None = None, env: str | None = None,
                 num_threads: int = 1, language: Language | str = Language.PYTHON):
        if not isinstance(stmt, str):
            raise ValueError("Currently only a `str` stmt is supported.")
        if language in (Language.CPP, "cpp", "c++"):
            raise _no_cpp("Timer(language=Language.CPP)")
        if language not in (Language.PYTHON, "py", "python"):
            raise ValueError(f"Invalid language `{language}`.")
        if global_setup:
            raise ValueError("global_setup is C++ only; use setup for Python")
        scope = dict(globals or {})
        scope.setdefault("torch", sys.modules[__name__.partition(".")[0]])
        stmt = textwrap.dedent(stmt).strip() or "pass"
        setup = textwrap.dedent(setup).strip() or "pass"
        self._task_spec = TaskSpec(stmt=stmt, setup=setup, label=label,
                                   sub_label=sub_label, description=description,
                                   env=env, num_threads=num_threads)
        self._timer = _timeit.Timer(stmt=stmt, setup=setup, timer=timer, globals=scope)

    def _time(self, number: int) -> float:
        return self._timer.timeit(number)

    def _with_threads(self, run):
        before = get_num_threads()
        set_num_threads(self._task_spec.num_threads)
        try:
            return run()
        finally:
            set_num_threads(before)

    def _measurement(self, number, times) -> Measurement:
        return Measurement(number_per_run=number, raw_times=times,
                           task_spec=self._task_spec)

    def timeit(self, number: int = 1000000) -> Measurement:
        """One block of ``number`` runs, after a short warm-up block."""
        def run():
            self._time(max(number // 100, 2))
            return self._measurement(number, [self._time(number)])
        return self._with_threads(run)

    def repeat(self, repeat: int = -1, number: int = -1) -> None:
        raise NotImplementedError("See `Timer.blocked_autorange.`")

    def autorange(self, callback: Callable[[int, float], Any] | None = None) -> None:
        raise NotImplementedError("See `Timer.blocked_autorange.`")

    def _block_size(self, min_run_time: float) -> int:
        # grow by tens until the empty block costs < 1e-4 of a block that
        # lasts at least a thousandth of min_run_time (or the whole of it)
        empty = sorted(self._time(0) for _ in range(5))[2]
        number = 1
        while number * 10 <= 2 ** 31 - 1:
            took = self._time(number)
            if took > min_run_time or (empty / took <= 1e-4
                                       and took >= min_run_time / 1000):
                break
            number *= 10
        return number

    def _blocks(self, number, min_run_time, enough, max_run_time=None, callback=None):
        times: list[float] = []
        total = 0.0
        while True:
            t = self._time(number)
            times.append(t)
            total += t
            if callback is not None:
                callback(number, t)
            if max_run_time and total > max_run_time:
                break
            if total >= min_run_time and enough(times):
                break
        return times

    def blocked_autorange(self, callback: Callable[[int, float], Any] | None = None,
                          min_run_time: float = 0.2) -> Measurement:
        """Blocks of a size that hides the timer's overhead, until
        ``min_run_time`` seconds have been measured."""
        def run():
            number = self._block_size(min_run_time)
            times = self._blocks(number, min_run_time, lambda ts: True,
                                 callback=callback)
            return self._measurement(number, times)
        return self._with_threads(run)

    def adaptive_autorange(self, threshold: float = 0.1, *, min_run_time: float = 0.01,
                           max_run_time: float = 10.0,
                           callback: Callable[[int, float], Any] | None = None
                           ) -> Measurement:
        """Blocks until there are more than three, ``min_run_time`` has
        passed and the IQR is under ``threshold`` times the median (or
        ``max_run_time`` has passed)."""
        def run():
            number = self._block_size(0.05)

            def enough(times):
                return len(times) > 3 and self._measurement(
                    number, list(times)).meets_confidence(threshold)
            times = self._blocks(number, min_run_time, enough, max_run_time, callback)
            return self._measurement(number, times)
        return self._with_threads(run)

    def collect_callgrind(self, *args: Any, **kwargs: Any) -> None:
        raise NotImplementedError(
            "Timer.collect_callgrind: cygrad does not run statements under "
            "Callgrind (instruction counts need torch's C++ toolchain and valgrind)")
