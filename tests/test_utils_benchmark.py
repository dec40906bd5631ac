"""``cygrad.utils.benchmark`` against ``torch.utils.benchmark``: measurements
built from the same raw times give the same statistics, reprs and Compare
tables (plain, trimmed, coloured, with warnings); Timer runs statements with
``torch`` and the caller's globals in scope."""

import re

import numpy as np
import pytest

import cygrad
from cygrad.utils import benchmark as cb

torch = pytest.importorskip("torch")
import torch.utils.benchmark as tb  # noqa: E402

RNG = np.random.default_rng(0)


def _measurements(lib, spread=0.05):
    """Measurements of two labels, threads 1 and 4, three descriptions, one
    task measured twice (replicates Compare pools), one noisy."""
    out = []
    for label, base in (("add", 3e-6), ("matmul", 2.5e-4)):
        for threads in (1, 4):
            for k, desc in enumerate(("small", "large", "huge")):
                for sub in ("[16]", "[1024]"):
                    spec = lib.TaskSpec(stmt="x + y", setup="x = 1\ny = 2", label=label,
                                        sub_label=sub, description=desc,
                                        num_threads=threads)
                    scale = base * (k + 1) * (2 if sub == "[1024]" else 1) / threads
                    noise = 0.8 if (desc == "large" and sub == "[16]") else spread
                    times = list(scale * 100 * (1 + noise * RNG.random(9)))
                    out.append((spec, 100, times))
    out.append(out[0])
    return out


def _build(lib, rows):
    return [lib.Measurement(n, list(t), spec) for spec, n, t in rows]


def _scrub(text):
    return re.sub(r"0x[0-9a-f]+", "0x", text).replace("cygrad.", "torch.")


def test_measurement_statistics_and_repr_match_torch():
    rows = _measurements(tb)
    mine = _build(cb, [(cb.TaskSpec(**{f: getattr(s, f) for f in (
        "stmt", "setup", "label", "sub_label", "description", "num_threads")}), n, t)
                       for s, n, t in rows])
    theirs = _build(tb, rows)
    for m, t in zip(mine, theirs):
        assert m.times == t.times
        for name in ("median", "mean", "iqr"):
            assert getattr(m, name) == pytest.approx(getattr(t, name), rel=1e-12)
        assert m.significant_figures == t.significant_figures
        assert m.has_warnings == t.has_warnings
        assert m.title == t.title and m.as_row_name == t.as_row_name
        assert m.label == t.label and m.num_threads == t.num_threads
        assert _scrub(repr(m)) == _scrub(repr(t))
    single = [cb.Measurement(10, [2e-6], cb.TaskSpec("a = 1\nb = 2", "pass")),
              tb.Measurement(10, [2e-6], tb.TaskSpec("a = 1\nb = 2", "pass"))]
    assert _scrub(repr(single[0])) == _scrub(repr(single[1]))
    for t in (3e-10, 4.2e-7, 0.0123, 17.0):
        assert cb.select_unit(t) == tb.select_unit(t)
        assert cb.utils.common.trim_sigfig(t * 3.14159, 2) == pytest.approx(
            tb.utils.common.trim_sigfig(t * 3.14159, 2), rel=1e-12)


@pytest.mark.parametrize("style", ["plain", "trim", "colour", "rowwise", "warnings"])
def test_compare_tables_match_torch(style):
    rows = _measurements(tb)
    tables = []
    for lib in (cb, tb):
        ms = _build(lib, [(lib.TaskSpec(**{f: getattr(s, f) for f in (
            "stmt", "setup", "label", "sub_label", "description", "num_threads")}), n, t)
                          for s, n, t in rows])
        c = lib.Compare(ms[:5])
        c.extend_results(ms[5:])
        if style != "plain":
            c.trim_significant_figures()
        if style == "colour":
            c.colorize()
        if style == "rowwise":
            c.colorize(rowwise=True)
        if style == "warnings":
            c.highlight_warnings()
        tables.append(str(c))
    assert tables[0] == tables[1]
    with pytest.raises(ValueError, match="Expected an instance of `Measurement`"):
        cb.Compare([1.0])


def test_timer_runs_python_statements_with_torch_and_globals_in_scope():
    x = cygrad.ones(8)
    m = cb.Timer("y = torch.relu(x) * k", setup="k = 2.0", globals={"x": x},
                 label="relu", description="d").timeit(50)
    assert isinstance(m, cb.Measurement)
    assert m.number_per_run == 50 and len(m.raw_times) == 1 and m.raw_times[0] > 0
    assert m.label == "relu" and m.description == "d" and m.num_threads == 1
    assert m.task_spec == cb.TaskSpec("y = torch.relu(x) * k", "k = 2.0", label="relu",
                                      description="d")
    calls, threads = [], cygrad.get_num_threads()
    m = cb.Timer("seen.append(torch.get_num_threads())", globals={"seen": []},
                 num_threads=2).timeit(3)
    assert cygrad.get_num_threads() == threads     # restored after measuring
    seen = []
    cb.Timer("seen.append(torch.get_num_threads())", globals={"seen": seen},
             num_threads=2).timeit(3)
    assert set(seen) == {2}
    m = cb.Timer("x.sum()", globals={"x": x}).blocked_autorange(
        callback=lambda n, t: calls.append((n, t)), min_run_time=0.02)
    assert sum(m.raw_times) >= 0.02 and len(calls) == len(m.raw_times)
    assert all(n == m.number_per_run for n, _ in calls)
    m = cb.Timer("x.sum()", globals={"x": x}).adaptive_autorange(max_run_time=0.05)
    assert len(m.raw_times) >= 1
    with pytest.raises(NameError):
        cb.Timer("undefined_name + 1").timeit(1)
    with pytest.raises(NotImplementedError, match="C\\+\\+"):
        cb.Timer("x * y;", language=cb.Language.CPP)
    with pytest.raises(NotImplementedError, match="Callgrind"):
        cb.Timer("1").collect_callgrind()
