"""benchmarks/report.py on a small synthetic pytest-benchmark JSON."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks import report


def _bench(group, lib, median, name=None, **extra):
    extra.setdefault("lib", lib)
    return {
        "group": group,
        "name": name or f"test_{group}[{lib}]",
        "fullname": f"benchmarks/bench_x.py::test_{group}[{lib}]",
        "params": {"lib": lib},
        "param": lib,
        "extra_info": extra,
        "options": {},
        "stats": {"min": median * 0.9, "median": median, "mean": median, "rounds": 5},
    }


def _json(tmp_path, benchmarks):
    data = {
        "machine_info": {
            "system": "Linux",
            "release": "6.0",
            "python_version": "3.11.7",
            "cpu": {"brand_raw": "Test CPU", "count": 2},
            "cygrad_bench": {
                "requested": 1,
                "torch": 1,
                "cygrad": 1,
                "cpu": "Test CPU",
                "logical_cpus": 2,
                "argv": ["pytest", "benchmarks/", "--benchmark-only"],
                "threadpool_info": [
                    {
                        "user_api": "blas",
                        "internal_api": "openblas",
                        "version": "0.3.99",
                        "architecture": "Haswell",
                        "num_threads": 1,
                        "filepath": "/x/libopenblas.so",
                    }
                ],
                "env": {"OPENBLAS_CORETYPE": None},
            },
        },
        "commit_info": {"id": "abc123"},
        "benchmarks": benchmarks,
        "datetime": "2026-11-30T12:00:00",
        "version": "5.2.3",
    }
    path = tmp_path / "bench.json"
    path.write_text(json.dumps(data))
    return path


SYNTHETIC = [
    # scalar chain: cygrad 1 ms, torch 20 ms (0.05x: met), 15000 ops
    _bench("scalar_chain-forward", "cygrad", 1e-3, ops=15000),
    _bench("scalar_chain-forward", "numpy", 2e-3, ops=15000),
    _bench("scalar_chain-forward", "torch", 20e-3, ops=15000),
    # small tensors: 30 us vs 100 us torch (0.3x: missed)
    _bench("small_tensors", "cygrad", 30e-6),
    _bench("small_tensors", "numpy", 10e-6),
    _bench("small_tensors", "torch", 100e-6),
    # a case with no target, lib only in the params (no extra_info["lib"])
    {
        **_bench("other_case", "torch", 4e-3),
        "extra_info": {},
    },
    _bench("other_case", "cygrad", 2e-3),
    # a benchmark-declared target and an extra peer
    _bench("adam-1e6", "cygrad", 1e-3, target={"torch-fused": 1.0}),
    _bench("adam-1e6", "torch-fused", 0.5e-3),
    # torch run three ways (options): the fastest fills the torch column
    _bench("optim_adam", "cygrad", 1e-3),
    _bench("optim_adam", "numpy", 4e-3),
    _bench("optim_adam", "torch", 3e-3, options={"foreach": False}),
    _bench("optim_adam", "torch", 0.5e-3, options={"fused": True}),
    # deep chain with memory per node
    _bench("deep_chain-backward", "cygrad", 1e-3, bytes_per_node=100.0),
    _bench("deep_chain-backward", "torch", 50e-3, bytes_per_node=400.0),
]
for _n, _t in ((1, 1e-6), (100, 2e-6), (10**4, 20e-6)):
    for _lib, _k in (("cygrad", 1.0), ("numpy", 1.5), ("torch", 3.0)):
        SYNTHETIC.append(
            _bench(
                f"scale-mul-fwd-n={_n}",
                _lib,
                _t * _k,
                series="mul-fwd",
                family="elementwise",
                n=_n,
            )
        )
for _n, _t in ((10**5, 0.01), (10**6, 0.1)):
    for _lib, _k in (("cygrad", 1.0), ("torch", 20.0)):
        SYNTHETIC.append(
            _bench(
                f"scale-graph-backward-n={_n}",
                _lib,
                _t * _k,
                series="chain-backward",
                family="graph",
                n=_n,
            )
        )


def _table_row(text, group):
    rows = [line for line in text.splitlines() if line.startswith(f"| {group} |")]
    assert len(rows) == 1, rows
    return [cell.strip() for cell in rows[0].strip("|").split("|")]


def test_report_table_ratios_and_targets(tmp_path):
    path = _json(tmp_path, SYNTHETIC)
    out = tmp_path / "out"
    argv = [str(path), "--out", str(out), "--no-plots", "--stat", "median"]
    assert report.main(argv) == 0
    text = (out / "RESULTS.md").read_text()

    cells = _table_row(text, "scalar_chain-forward")
    assert cells[1:6] == ["1 ms", "2 ms", "20 ms", "0.05x", "0.5x"]
    assert "≤0.1x torch: met" in cells[6]
    assert "per op (15000 ops)" in cells[7] and "cygrad 66.7 ns" in cells[7]

    cells = _table_row(text, "small_tensors")
    assert cells[4:6] == ["0.3x", "3x"]
    assert "≤0.15x torch: MISSED" in cells[6]

    cells = _table_row(text, "other_case")  # lib inferred from params
    assert cells[1:6] == ["2 ms", "—", "4 ms", "0.5x", "—"]
    assert cells[6] == ""

    cells = _table_row(text, "adam-1e6")  # the benchmark's own target
    assert "≤1x torch-fused: MISSED" in cells[6]
    assert "torch-fused 500 µs (cygrad/torch-fused 2x)" in cells[7]

    cells = _table_row(text, "deep_chain-backward")
    assert cells[4] == "0.02x" and "≤0.1x torch: met" in cells[6]
    assert "memory/node: cygrad 100 B, torch 400 B" in cells[7]

    cells = _table_row(text, "optim_adam")
    assert cells[1:6] == ["1 ms", "4 ms", "500 µs", "2x", "0.25x"]
    assert "≤1x torch fused=True: MISSED" in cells[6]
    assert "torch column: fastest variant, torch fused=True" in cells[7]
    assert "torch foreach=False 3 ms (cygrad/torch foreach=False 0.333x)" in cells[7]

    assert "Targets: 2 met, 3 missed (small_tensors, adam-1e6, optim_adam)" in text
    # machine, BLAS and threads are recorded
    assert "openblas 0.3.99" in text and "Haswell" in text
    assert "threads: 1 requested" in text
    assert "OPENBLAS_CORETYPE=unset" in text
    assert "pytest benchmarks/ --benchmark-only" in text
    # scaling points are not in the main table but in their own
    assert "| scale-mul" not in text
    assert "#### elementwise: mul-fwd" in text
    assert "| 10,000 | 20 µs | 30 µs | 60 µs | 0.333x | 0.667x |" in text
    assert "cygrad 10x, torch 10x" in text  # graph linearity 10^6 / 10^5


def test_report_default_statistic_is_min(tmp_path):
    path = _json(tmp_path, SYNTHETIC)
    report.main([str(path), "--out", str(tmp_path), "--no-plots"])
    text = (tmp_path / "RESULTS.md").read_text()
    cells = _table_row(text, "scalar_chain-forward")  # min = 0.9 * median here
    assert cells[1:4] == ["900 µs", "1.8 ms", "18 ms"]
    assert "minimum" in text
    with pytest.raises(ValueError, match="Invalid stat"):
        report.load(path, "max")


def test_report_appends_notes(tmp_path):
    path = _json(tmp_path, SYNTHETIC)
    notes = tmp_path / "notes.md"
    notes.write_text("The profile shows the GC.\n")
    report.main(
        [str(path), "--out", str(tmp_path), "--no-plots", "--notes", str(notes)]
    )
    text = (tmp_path / "RESULTS.md").read_text()
    assert "## Notes\n\nThe profile shows the GC." in text
    assert text.index("## Notes") < text.index("## Scaling")


def test_report_plots(tmp_path):
    pytest.importorskip("matplotlib")
    path = _json(tmp_path, SYNTHETIC)
    out = tmp_path / "out"
    report.main([str(path), "--out", str(out)])
    for fam in ("elementwise", "graph"):
        png = out / f"scaling_{fam}.png"
        assert png.exists() and png.stat().st_size > 1000
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert (
            f"![scaling_{fam}.png](scaling_{fam}.png)"
            in (out / "RESULTS.md").read_text()
        )


def test_report_without_matplotlib(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import raises
    msg = report.write_plots(
        report.scaling_series(report.load(_json(tmp_path, SYNTHETIC))[1]), str(tmp_path)
    )
    assert isinstance(msg, str) and "matplotlib" in msg


def test_report_runs_as_module(tmp_path):
    path = _json(tmp_path, SYNTHETIC[:3])
    out = tmp_path / "o"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks.report", str(path), "--out", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "wrote" in proc.stdout
    assert "| scalar_chain-forward | 900 µs |" in (out / "RESULTS.md").read_text()


def test_lib_inference():
    assert report.infer_lib({"extra_info": {"lib": "cygrad"}}) == "cygrad"
    assert report.infer_lib({"params": {"impl": "torch"}}) == "torch"
    assert report.infer_lib({"name": "test_adam[numpy]"}) == "numpy"
    assert report.infer_lib({"name": "test_x"}) is None


def test_format_time():
    assert report.fmt_time(1.5) == "1.5 s"
    assert report.fmt_time(2.5e-3) == "2.5 ms"
    assert report.fmt_time(3e-7) == "300 ns"
    assert report.fmt_time(None) == "—"


def test_report_merges_runs(tmp_path):
    first = _json(tmp_path, SYNTHETIC)
    second = tmp_path / "second.json"
    data = json.loads(first.read_text())
    data["benchmarks"] = [
        _bench("small_tensors", "cygrad", 10e-6),
        _bench("small_tensors", "torch", 100e-6),
    ]
    second.write_text(json.dumps(data))
    out = tmp_path / "out"
    argv = [str(first), str(second), "--out", str(out), "--no-plots"]
    assert report.main([*argv, "--stat", "median"]) == 0
    text = (out / "RESULTS.md").read_text()
    cells = _table_row(text, "small_tensors")  # the later run replaces the group
    assert cells[1:5] == ["10 µs", "—", "100 µs", "0.1x"]
    assert "≤0.15x torch: met" in cells[6] and "run 2" in cells[7]
    assert "run 1" in _table_row(text, "scalar_chain-forward")[7]
    assert "Run 1:" in text and "Run 2:" in text
