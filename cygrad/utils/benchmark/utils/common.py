"""What a timing run was (``TaskSpec``) and what it measured (``Measurement``).

A measurement holds ``raw_times``: wall-clock seconds of blocks of
``number_per_run`` executions each.  Its statistics are per execution; the
median and quartiles interpolate linearly between the sorted times (NumPy's
default percentile, as ``torch.quantile``).  The repr follows torch's layout
line for line so that printed benchmark output reads the same.
"""

from __future__ import annotations

import collections
import dataclasses
import math
import textwrap
from collections.abc import Iterable
from typing import Any

import numpy as np

__all__ = ["Measurement", "TaskSpec", "select_unit", "trim_sigfig"]

# Relative spread (IQR / median) above which a measurement carries a warning.
_WARN_SPREAD, _GROSS_SPREAD = 0.1, 0.25
# Bounds of the significant-figure estimate that Compare trims to.
_MIN_HALF_WIDTH, _MAX_FIGURES = 25e-9, 4


@dataclasses.dataclass(frozen=True)
class TaskSpec:
    """The statement timed and the labels a Timer was given (not its globals)."""

    stmt: str
    setup: str
    global_setup: str = ""
    label: str | None = None
    sub_label: str | None = None
    description: str | None = None
    env: str | None = None
    num_threads: int = 1

    @property
    def title(self) -> str:
        """The label (or the one-line statement) with the sub-label after it."""
        tail = f": {self.sub_label}" if self.sub_label else ""
        if self.label is not None:
            return self.label + tail
        if "\n" not in self.stmt:
            return self.stmt + tail
        head = f" ({self.sub_label})" if self.sub_label else ""
        return f"stmt:{head}\n" + textwrap.indent(self.stmt, "  ")

    def setup_str(self) -> str:
        if not self.setup or self.setup == "pass":
            return ""
        if "\n" in self.setup:
            return "setup:\n" + textwrap.indent(self.setup, "  ")
        return f"setup: {self.setup}"

    def summarize(self) -> str:
        """The title, description and setup; a multi-line part is followed
        by a blank line."""
        parts = (self.title, self.description or "", self.setup_str())
        return "\n".join(p + "\n" if "\n" in p else p for p in parts if p)


_SPEC_FIELDS = frozenset(f.name for f in dataclasses.fields(TaskSpec))


def select_unit(t: float) -> tuple[str, float]:
    """The unit (ns, us, ms or s) that puts ``t`` seconds in [1, 1000)."""
    group = math.floor(math.log10(t) / 3) if t > 0 else 0
    unit = {-3: "ns", -2: "us", -1: "ms"}.get(group, "s")
    return unit, {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[unit]


def unit_to_english(unit: str) -> str:
    return {"ns": "nanosecond", "us": "microsecond", "ms": "millisecond",
            "s": "second"}[unit]


def trim_sigfig(x: float, n: int) -> float:
    """``x`` rounded to ``n`` significant figures (3.14159, 2 -> 3.1), in
    float32 as torch's (so 0.039 comes back as 0.039000000804662704)."""
    if n != int(n):
        raise AssertionError("Number of significant figures must be an integer")
    f4 = np.float32
    scale = 10.0 ** (int(np.ceil(np.log10(abs(f4(x))))) - n)
    return float(np.round(f4(x / scale)) * f4(scale))


def ordered_unique(items: Iterable[Any]) -> list[Any]:
    return list(dict.fromkeys(items))


@dataclasses.dataclass(repr=False)
class Measurement:
    """``raw_times`` of blocks of ``number_per_run`` runs of ``task_spec``.

    ``times`` are per run; ``median``, ``mean``, ``iqr`` summarise them.
    The task's fields (``label``, ``num_threads``, ...) read through.
    """

    number_per_run: int
    raw_times: list[float]
    task_spec: TaskSpec
    metadata: dict[Any, Any] | None = None

    def __post_init__(self) -> None:
        self._stats: tuple[float, ...] | None = None

    def __getattr__(self, name: str) -> Any:
        if name in _SPEC_FIELDS:
            return getattr(self.task_spec, name)
        raise AttributeError(f"'Measurement' object has no attribute '{name}'")

    @property
    def times(self) -> list[float]:
        return [t / self.number_per_run for t in self.raw_times]

    def _summary(self) -> tuple[float, ...]:
        # (median, mean, p25, p75) of the per-run times, computed once
        if self._stats is None:
            s = np.sort(np.asarray(self.times, dtype=np.float64))
            if s.size == 0:
                self._stats = (-1.0, -1.0, -1.0, -1.0)
            else:
                q = np.quantile(s, (0.5, 0.25, 0.75))
                self._stats = (float(q[0]), float(s.mean()), float(q[1]), float(q[2]))
        return self._stats

    @property
    def median(self) -> float:
        return self._summary()[0]

    @property
    def mean(self) -> float:
        return self._summary()[1]

    @property
    def iqr(self) -> float:
        s = self._summary()
        return s[3] - s[2]

    def meets_confidence(self, threshold: float = _WARN_SPREAD) -> bool:
        """True when the interquartile range is under ``threshold`` times
        the median."""
        return self.iqr / self.median < threshold

    @property
    def _warnings(self) -> tuple[str, ...]:
        if not self.raw_times:
            return ()
        if not self.meets_confidence(_GROSS_SPREAD):
            why = "This suggests significant environmental influence."
        elif not self.meets_confidence(_WARN_SPREAD):
            why = "This could indicate system fluctuation."
        else:
            return ()
        spread = self.iqr / self.median * 100
        return (f"  WARNING: Interquartile range is {spread:.1f}% of the median "
                f"measurement.\n           {why}",)

    @property
    def has_warnings(self) -> bool:
        return bool(self._warnings)

    @property
    def significant_figures(self) -> int:
        """How many digits of the median the spread of the middle half of
        the times supports (1 to 4; a 90% normal interval)."""
        s = sorted(self.times)
        mid = s[len(s) // 4: math.ceil(3 * len(s) / 4)]
        half = max(1.645 * float(np.std(mid)) / math.sqrt(len(mid)), _MIN_HALF_WIDTH)
        figures = math.floor(math.log10(self.median / half))
        return min(max(figures, 1), _MAX_FIGURES)

    @property
    def title(self) -> str:
        return self.task_spec.title

    @property
    def env(self) -> str:
        return "Unspecified env" if self.task_spec.env is None else self.task_spec.env

    @property
    def as_row_name(self) -> str:
        return self.sub_label or self.stmt or "[Unknown]"

    def __repr__(self) -> str:
        n = len(self.raw_times)
        median, _, p25, p75 = self._summary()
        unit, scale = select_unit(median)
        lines = [object.__repr__(self), self.task_spec.summarize(),
                 f"  {'Median: ' if n > 1 else ''}{median / scale:.2f} {unit}"]
        if n >= 4:
            lines.append(f"  IQR:    {(p75 - p25) / scale:.2f} {unit} "
                         f"({p25 / scale:.2f} to {p75 / scale:.2f})")
        threads = self.num_threads
        lines.append(f"  {n} measurement{'s' if n > 1 else ''}, {self.number_per_run} "
                     f"runs {'per measurement,' if n > 1 else ','} {threads} "
                     f"thread{'s' if threads > 1 else ''}")
        lines += self._warnings
        return "\n".join(lines).strip()

    @staticmethod
    def merge(measurements: Iterable[Measurement]) -> list[Measurement]:
        """One measurement per task, its per-run times pooled (one run per
        time; metadata dropped)."""
        pooled: dict[TaskSpec, list[float]] = collections.defaultdict(list)
        for m in measurements:
            pooled[m.task_spec].extend(m.times)
        return [Measurement(1, times, spec) for spec, times in pooled.items()]
