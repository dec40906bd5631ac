"""``cygrad.autograd.profiler``: ``profile`` and ``record_function``.

A profile records, while it is active, every ``record_function`` range and
every registered op called as a Tensor method (``x.matmul(y)``,
``x.sum()``), with wall-clock times from ``time.perf_counter_ns``;
``key_averages().table()`` prints them aggregated by name, as torch's does
(total and self time: self excludes the time of ranges nested inside).
Operators implemented in the compiled base (``+``, ``*``, ``@``) are not
seen one by one: wrap a region in ``record_function`` to time it.
"""

import functools
import json
import os
import threading
import time

from cygrad._tensor import Tensor
from cygrad.ops import OPS

__all__ = ["EventList", "FunctionEvent", "profile", "record_function"]

_active = threading.local()


def _current():
    return getattr(_active, "profile", None)


class FunctionEvent:
    """One timed range: ``name``, ``start``/``end`` (ns), ``depth``, and the
    time of ranges directly inside it (for self time)."""

    def __init__(self, name, start, depth, thread):
        self.name = name
        self.start = start
        self.end = None
        self.depth = depth
        self.thread = thread
        self.children_ns = 0

    @property
    def cpu_time_total(self):
        """Microseconds, as torch reports."""
        return (self.end - self.start) / 1e3

    @property
    def self_cpu_time_total(self):
        return (self.end - self.start - self.children_ns) / 1e3

    def __repr__(self):
        return (f"<FunctionEvent name={self.name!r} cpu_time_total="
                f"{self.cpu_time_total:.3f}us>")


class _Average:
    def __init__(self, key):
        self.key = key
        self.count = 0
        self.cpu_time_total = 0.0
        self.self_cpu_time_total = 0.0

    @property
    def cpu_time(self):
        return self.cpu_time_total / max(self.count, 1)

    def __repr__(self):
        return (f"<FunctionEventAvg key={self.key!r} count={self.count} "
                f"cpu_time_total={self.cpu_time_total:.3f}us>")


def _fmt_us(us):
    if us >= 1e6:
        return f"{us / 1e6:.3f}s"
    if us >= 1e3:
        return f"{us / 1e3:.3f}ms"
    return f"{us:.3f}us"


class EventList(list):
    """A list of events (or of per-name averages) that prints as a table."""

    def table(self, sort_by=None, row_limit=100, max_name_column_width=55,
              header=None, top_level_events_only=False):
        rows = list(self)
        if sort_by:
            attr = {"self_cpu_time_total": "self_cpu_time_total",
                    "cpu_time_total": "cpu_time_total", "count": "count",
                    "cpu_time": "cpu_time"}.get(sort_by)
            if attr is None:
                raise ValueError(f"table(): cannot sort by {sort_by!r} (cygrad "
                                 "records CPU times only)")
            rows.sort(key=lambda r: getattr(r, attr), reverse=True)
        rows = rows[:row_limit] if row_limit and row_limit > 0 else rows
        total_self = sum(r.self_cpu_time_total for r in self) or 1.0
        name_w = max([len("Name")] + [min(len(_name(r)), max_name_column_width)
                                      for r in rows])
        cols = ["Self CPU %", "Self CPU", "CPU total %", "CPU total",
                "CPU time avg", "# of Calls"]
        widths = [max(len(c), 12) for c in cols]
        sep = "-" * name_w + "  " + "  ".join("-" * w for w in widths)
        out = [sep, "Name".ljust(name_w) + "  " + "  ".join(
            c.rjust(w) for c, w in zip(cols, widths)), sep]
        for r in rows:
            count = getattr(r, "count", 1)
            vals = [f"{100 * r.self_cpu_time_total / total_self:.2f}%",
                    _fmt_us(r.self_cpu_time_total),
                    f"{100 * r.cpu_time_total / total_self:.2f}%",
                    _fmt_us(r.cpu_time_total),
                    _fmt_us(r.cpu_time_total / max(count, 1)), str(count)]
            out.append(_name(r)[:max_name_column_width].ljust(name_w) + "  "
                       + "  ".join(v.rjust(w) for v, w in zip(vals, widths)))
        out.append(sep)
        out.append(f"Self CPU time total: {_fmt_us(total_self)}")
        return "\n".join(out) + "\n"

    def total_average(self):
        avg = _Average("Total")
        for r in self:
            avg.count += getattr(r, "count", 1)
            avg.cpu_time_total += r.cpu_time_total
            avg.self_cpu_time_total += r.self_cpu_time_total
        return avg

    def __str__(self):
        return self.table()


def _name(r):
    return getattr(r, "key", None) or r.name


class profile:
    """Context manager that records op and ``record_function`` timings.

    ``with profile() as prof: ...`` then ``prof.key_averages().table()``.
    ``use_cuda``/``use_device`` must be off (cygrad has no GPU);
    ``record_shapes``, ``with_stack`` and ``profile_memory`` are accepted and
    record nothing extra.
    """

    def __init__(self, enabled=True, *, use_cuda=False, use_device=None,
                 record_shapes=False, with_flops=False, profile_memory=False,
                 with_stack=False, with_modules=False, use_kineto=False,
                 use_cpu=True, experimental_config=None, acc_events=False,
                 custom_trace_id_callback=None):
        if use_cuda or use_device not in (None, "cpu"):
            raise AssertionError("cygrad runs on the CPU only: profile(use_cuda=True) "
                                 "has no device to profile")
        self.enabled = enabled
        self._events = []
        self._stack = []
        self._patched = {}
        self._entered = False

    def __enter__(self):
        if not self.enabled:
            return self
        if _current() is not None:
            raise RuntimeError("Profiler is already enabled on this thread")
        self._entered = True
        _active.profile = self
        self._patch_methods()
        return self

    def __exit__(self, *exc):
        if not self._entered:
            return False
        self._unpatch_methods()
        _active.profile = None
        self._entered = False
        return False

    # -- recording -----------------------------------------------------------
    def _push(self, name):
        ev = FunctionEvent(name, time.perf_counter_ns(), len(self._stack),
                           threading.get_ident())
        self._stack.append(ev)
        return ev

    def _pop(self, ev):
        ev.end = time.perf_counter_ns()
        while self._stack and self._stack[-1] is not ev:
            self._stack.pop()
        if self._stack:
            self._stack.pop()
        if self._stack:
            self._stack[-1].children_ns += ev.end - ev.start
        self._events.append(ev)

    def _patch_methods(self):
        for spec in OPS.values():
            for m in spec.methods:
                fn = Tensor.__dict__.get(m)
                if fn is None or m.startswith("__") or m in self._patched:
                    continue
                self._patched[m] = fn
                setattr(Tensor, m, _timed(f"cygrad::{spec.name}", fn))

    def _unpatch_methods(self):
        for m, fn in self._patched.items():
            setattr(Tensor, m, fn)
        self._patched = {}

    # -- results ---------------------------------------------------------------
    def events(self):
        return EventList(sorted(self._events, key=lambda e: e.start))

    function_events = property(events)

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0):
        avgs = {}
        for ev in self._events:
            a = avgs.setdefault(ev.name, _Average(ev.name))
            a.count += 1
            a.cpu_time_total += ev.cpu_time_total
            a.self_cpu_time_total += ev.self_cpu_time_total
        return EventList(avgs.values())

    @property
    def self_cpu_time_total(self):
        return sum(ev.self_cpu_time_total for ev in self._events)

    def table(self, *args, **kwargs):
        return self.key_averages().table(*args, **kwargs)

    def export_chrome_trace(self, path):
        """Write the events as a Chrome trace (``chrome://tracing``, Perfetto)."""
        pid = os.getpid()
        trace = [{"name": ev.name, "ph": "X", "ts": ev.start / 1e3,
                  "dur": ev.cpu_time_total, "pid": pid, "tid": ev.thread,
                  "cat": "cpu_op"} for ev in self.events()]
        with open(path, "w") as f:
            json.dump({"traceEvents": trace}, f)

    def __str__(self):
        return self.table()


def _timed(name, fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        prof = _current()
        if prof is None:
            return fn(*args, **kwargs)
        ev = prof._push(name)
        try:
            return fn(*args, **kwargs)
        finally:
            prof._pop(ev)
    return wrapper


class record_function:
    """Time a named range of code in the active profile (a context manager
    and a decorator); without an active profile it does nothing."""

    def __init__(self, name, args=None):
        self.name = name
        self.args = args
        self._ev = None

    def __enter__(self):
        prof = _current()
        if prof is not None:
            self._ev = (prof, prof._push(self.name))
        return self

    def __exit__(self, *exc):
        if self._ev is not None:
            prof, ev = self._ev
            prof._pop(ev)
            self._ev = None
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with record_function(self.name, self.args):
                return fn(*args, **kwargs)
        return wrapper
