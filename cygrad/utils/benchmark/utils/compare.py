"""``Compare``: measurements side by side in a table, as torch prints them.

One table per ``label``.  Rows are (threads, env, sub_label or stmt), in the
order first seen and grouped by thread count under a "N threads:" rule;
columns are descriptions.  Each cell is the median in the table's unit
(that of its fastest result).  Replicates of one task are pooled first.
Optionally the cells are trimmed to the digits their spread supports,
coloured against the best of their column (or row), and marked with their
spread when it is large.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Iterable

from cygrad.utils.benchmark.utils.common import (
    Measurement,
    ordered_unique,
    select_unit,
    trim_sigfig,
    unit_to_english,
)

__all__ = ["Colorize", "Compare"]

_BEST, _GOOD = "\033[92m", "\033[34m"
_BAD, _VERY_BAD = "\033[2m\033[91m", "\033[31m"
_BOLD, _END = "\033[1m", "\033[0m"


class Colorize(enum.Enum):
    NONE = "none"
    COLUMNWISE = "columnwise"
    ROWWISE = "rowwise"


def _paint(text, value, best):
    # within 1% (or 100 ns) of the best: green; 10%: blue; 2x: dim red; 5x: red
    if value <= best * 1.01 or value <= best + 100e-9:
        return _BEST + _BOLD + text + _END * 2
    if value <= best * 1.1:
        return _GOOD + _BOLD + text + _END * 2
    if value >= best * 5:
        return _VERY_BAD + _BOLD + text + _END * 2
    if value >= best * 2:
        return _BAD + text + _END * 2
    return text


class _Table:
    """The rendering of one label's measurements."""

    def __init__(self, results, colorize, trim, highlight):
        self.results = results
        self.label = results[0].label
        self.colorize, self.trim = colorize, trim
        self.unit, self.scale = select_unit(min(r.median for r in results))
        rows = ordered_unique((r.num_threads, r.env, r.as_row_name) for r in results)
        self.rows = sorted(rows, key=lambda k: k[:2])     # stable: stmt order kept
        self.cols = ordered_unique(r.description for r in results)
        at = {(r.num_threads, r.env, r.as_row_name, r.description): r for r in results}
        self.grid = [[at.get(key + (c,)) for c in self.cols] for key in self.rows]
        self.highlight = highlight and any(r.has_warnings for r in results)
        self.formats = [self._format(j) for j in range(len(self.cols))]

    def _format(self, j):
        # width and decimals of column j: enough integer digits for its
        # largest median; with trimming, only the decimals every cell supports
        cells = [row[j] for row in self.grid if row[j] is not None]
        lead = [math.ceil(math.log10(m.median / self.scale)) for m in cells]
        decimals = 1
        if self.trim:
            decimals = min(max(m.significant_figures - d, 0) for m, d in zip(cells, lead))
        width = max(lead) + decimals + (1 if decimals else 0)
        warn = any(m.has_warnings for m in cells) and self.highlight
        return width, decimals, warn

    def _cell(self, j, m):
        width, decimals, warn = self.formats[j]
        blank = width + (7 if warn else 0)
        if m is None:
            return " " * blank
        value = m.median / self.scale
        if self.trim:
            value = trim_sigfig(value, m.significant_figures)
        text = f"{value:>{width}.{decimals}f}"
        if warn:
            mark = f" (! {m.iqr / m.median * 100:.0f}%)" if m.has_warnings else ""
            text += f"{mark:>7}"
        return text

    def _best(self, i):
        # the median each cell of row i is coloured against
        row = self.grid[i]
        if self.colorize is Colorize.ROWWISE:
            best = min(m.median for m in row if m is not None)
            return [best] * len(row)
        threads = self.rows[i][0]
        group = [k for k, key in enumerate(self.rows) if key[0] == threads]
        out = []
        for j in range(len(self.cols)):
            col = [self.grid[k][j].median for k in group if self.grid[k][j] is not None]
            out.append(min(col) if col else None)
        return out

    def render(self):
        envs = {r.env for r in self.results}
        show_env = len(envs) > 1
        env_width = max(len(e) for e in envs) if show_env else 0
        text = [[""] + [c if c is not None else "" for c in self.cols]]
        prev = (None, None)
        for key, row in zip(self.rows, self.grid):
            first = next(m for m in row if m is not None)
            env = f"({first.env})" if show_env and key[:2] != prev else ""
            prev = key[:2]
            text.append(["  " + env.ljust(env_width + 4) + first.as_row_name]
                        + [self._cell(j, m) for j, m in enumerate(row)])
        widths = [max(len(r[k]) for r in text) for k in range(len(text[0]))]
        header = "  |  ".join(s.center(w) for s, w in zip(text[0], widths))
        lines = [header]
        last_threads = None
        for i, (key, row_text) in enumerate(zip(self.rows, text[1:])):
            if key[0] != last_threads:
                lines.append(f"{key[0]} threads: ".ljust(len(header), "-"))
                last_threads = key[0]
            parts = [row_text[0].ljust(widths[0])]
            best = self._best(i) if self.colorize is not Colorize.NONE else None
            for j, (s, w) in enumerate(zip(row_text[1:], widths[1:])):
                s = s.center(w)
                m = self.grid[i][j]
                if best is not None and m is not None and best[j] is not None:
                    s = _paint(s, m.median, best[j])
                parts.append(s)
            lines.append("  |  ".join(parts))
        title = f" {self.label or ''} ".center(len(header) - 2, "-")
        out = [f"[{title}]", *lines, "",
               f"Times are in {unit_to_english(self.unit)}s ({self.unit}).", ""]
        if self.highlight:
            out[-1] = ("(! XX%) Measurement has high variance, where XX is the "
                       "IQR / median * 100.\n")
        return "\n".join(out)


class Compare:
    """A table of ``Measurement``s (``print()`` or ``str()``)."""

    def __init__(self, results: Iterable[Measurement]) -> None:
        self._results: list[Measurement] = []
        self.extend_results(results)
        self._trim = False
        self._colorize = Colorize.NONE
        self._highlight = False

    def extend_results(self, results: Iterable[Measurement]) -> None:
        results = list(results)
        for r in results:
            if not isinstance(r, Measurement):
                raise ValueError("Expected an instance of `Measurement`, "
                                 f"got {type(r)} instead.")
        self._results.extend(results)

    def trim_significant_figures(self) -> None:
        self._trim = True

    def colorize(self, rowwise: bool = False) -> None:
        self._colorize = Colorize.ROWWISE if rowwise else Colorize.COLUMNWISE

    def highlight_warnings(self) -> None:
        self._highlight = True

    def __str__(self) -> str:
        by_label: dict[str | None, list[Measurement]] = {}
        for m in Measurement.merge(self._results):
            by_label.setdefault(m.label, []).append(m)
        return "\n".join(_Table(group, self._colorize, self._trim,
                                self._highlight).render()
                         for group in by_label.values())

    def print(self) -> None:
        print(str(self))
