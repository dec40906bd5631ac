"""examples/optimizers.py races every optimizer and prints one row for each."""

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_optimizer_race_runs_and_lbfgs_wins_rosenbrock():
    env = dict(os.environ, MPLBACKEND="Agg", OPENBLAS_NUM_THREADS="1")
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run(
        [sys.executable, os.path.join(ROOT, "examples", "optimizers.py"),
         "--steps", "60", "--no-plots"],
        capture_output=True, text=True, timeout=120, env=env, cwd=ROOT, check=False,
    )
    assert out.returncode == 0, out.stderr
    rows = {line.split()[0]: line.split() for line in out.stdout.splitlines()[1:]
            if line and not line.startswith("closest")}
    for name in ("SGD", "Adam", "NAdam", "RAdam", "Adamax", "Adadelta", "Rprop",
                 "ASGD", "Adafactor", "LBFGS", "RMSprop", "Adagrad", "AdamW"):
        assert name in rows, name
    assert float(rows["LBFGS"][1]) < 1e-6  # strong-Wolfe L-BFGS reaches (1, 1)
    assert "closest to the Rosenbrock minimum: LBFGS" in out.stdout
