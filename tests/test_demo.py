"""The demo trains end to end in a few seconds and reaches its targets."""

import glob
import os
import subprocess
import sys

import pytest

pytest.importorskip("cygrad.optim")
from cygrad import demo


def test_demo_short_run(tmp_path, capsys):
    result = demo.main(["--epochs", "20", "--seed", "0", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    line = result["line"]
    # the tutorial's 200 epochs at lr 0.01: w is close to 2, b still converging
    assert abs(line["w"] - 2) < 0.1
    assert 0.5 <= line["b"] <= 1.5
    clf = result["classifier"]
    assert clf["test_accuracy"] > 0.95
    assert len(clf["losses"]) == 20 and clf["losses"][-1] < clf["losses"][0]
    assert "epoch  20/20" in out and "steps/s" in out and "accuracy" in out
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert "matplotlib is not installed" in out
    else:
        names = sorted(os.path.basename(p) for p in result["plots"])
        assert names == [
            "decision_boundary.png",
            "linear_regression.png",
            "loss_curves.png",
        ]
        for p in result["plots"]:
            assert os.path.getsize(p) > 1000
        assert str(tmp_path) in out


def test_linear_regression_converges_to_least_squares():
    line = demo.fit_line(epochs=6000, log=lambda *_: None)
    assert line["w"] == pytest.approx(line["w_ls"], abs=2e-3)
    assert line["b"] == pytest.approx(line["b_ls"], abs=2e-2)


def test_demo_float64_no_plots(capsys):
    result = demo.main(
        ["--epochs", "2", "--dtype", "float64", "--no-plots", "--line-epochs", "5"]
    )
    assert result["classifier"]["model"][0].weight.dtype == "float64"
    assert "skipped (--no-plots)" in capsys.readouterr().out


def test_demo_help_lists_options(tmp_path):
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ)
    if glob.glob(os.path.join(root, "cygrad", "_kernels", "engine*.so")):
        # the tests run on the in-place build (see conftest.py): so does this
        env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run(
        [sys.executable, "-m", "cygrad.demo", "--help"],
        capture_output=True,
        check=False,
        text=True,
        timeout=60,
        cwd=tmp_path,
        env=env,
    )
    assert out.returncode == 0, out.stderr
    for opt in ("--epochs", "--seed", "--dtype", "--out"):
        assert opt in out.stdout


@pytest.mark.parametrize(
    "argv, phrase",
    [
        (["--seed", "-3"], "argument --seed: must be between 0 and"),
        (["--seed", str(2**31)], "argument --seed: must be between 0 and"),
        (["--epochs", "0"], "argument --epochs: must be at least 1"),
        (["--line-epochs", "-1"], "argument --line-epochs: must be at least 1"),
        (["--out", "some/missing/dir/file.png"], "its parent"),
    ],
)
def test_demo_refuses_bad_options_before_training(argv, phrase, capsys, monkeypatch):
    def no_training(*args, **kwargs):
        raise AssertionError("trained before checking the options")

    monkeypatch.setattr(demo, "fit_line", no_training)
    monkeypatch.setattr(demo, "train_classifier", no_training)
    with pytest.raises(SystemExit) as info:
        demo.main(argv)
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "usage: python -m cygrad.demo" in err and phrase in err


def test_demo_out_must_be_a_folder(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(demo, "fit_line", None)
    f = tmp_path / "file.png"
    f.write_bytes(b"x")
    with pytest.raises(SystemExit):
        demo.main(["--out", str(f)])
    assert "exists and is not a folder" in capsys.readouterr().err
