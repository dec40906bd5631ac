"""Every script in examples/ runs and prints its result."""

import glob
import os
import subprocess
import sys

import pytest

pytest.importorskip("cygrad.optim")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = os.path.join(ROOT, "examples")


def _run(name, *args):
    # one BLAS thread: these matrices are small, and spinning BLAS threads
    # on a busy machine make the run many times slower
    env = dict(os.environ, MPLBACKEND="Agg", OPENBLAS_NUM_THREADS="1")
    if glob.glob(os.path.join(ROOT, "cygrad", "_kernels", "engine*.so")):
        # the tests run on the in-place build (see conftest.py): so do these
        env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run(
        [sys.executable, os.path.join(EXAMPLES, name), *args],
        capture_output=True,
        check=False,
        text=True,
        timeout=120,
        env=env,
        cwd=ROOT,
    )
    assert out.returncode == 0, out.stderr
    return out.stdout


def _last_float(text, prefix):
    line = next(ln for ln in text.splitlines() if ln.startswith(prefix))
    return line


def test_linear_regression():
    out = _run("linear_regression.py")
    assert out.startswith("Epoch 0: w = ")
    final = _last_float(out, "Final parameters:")
    w = float(final.split("w = ")[1].split(",")[0])
    b = float(final.split("b = ")[1])
    assert abs(w - 2) < 0.1 and 0.5 <= b <= 1.5


def test_binary_classification():
    out = _run("binary_classification.py")
    acc = float(_last_float(out, "final accuracy:").split(":")[1])
    assert acc > 0.9


def test_multi_feature_regression():
    out = _run("multi_feature_regression.py")
    err = float(_last_float(out, "max difference from least squares:").split(":")[1])
    assert err < 1e-2


def test_polynomial_regression():
    out = _run("polynomial_regression.py")
    assert "fitted coefficients:" in out and "least-squares coefficients:" in out


def test_custom_function():
    out = _run("custom_function.py")
    assert "gradcheck against finite differences: True" in out
    a = float(_last_float(out, "learned scale a =").split("=")[1].split("(")[0])
    assert abs(a - 0.8) < 0.05


def test_optimizers_by_hand():
    out = _run("optimizers_by_hand.py")
    lines = [ln for ln in out.splitlines() if "max difference" in ln]
    assert len(lines) == 2
    for ln in lines:
        assert float(ln.rsplit(":", 1)[1]) < 1e-9


def test_digits_mlp():
    out = _run("digits_mlp.py", "--epochs", "10")
    try:
        import sklearn  # noqa: F401
    except ImportError:
        assert "scikit-learn is not installed" in out
        return
    acc = float(_last_float(out, "test accuracy:").split(":")[1].split()[0])
    assert acc > 0.9


def test_digits_cnn():
    out = _run("digits_cnn.py")
    try:
        import sklearn  # noqa: F401
    except ImportError:
        assert "scikit-learn is not installed" in out
        return
    acc = float(_last_float(out, "test accuracy:").split(":")[1].split()[0])
    assert acc >= 0.97


def test_nn_really():
    out = _run("nn_really.py")
    try:
        import sklearn  # noqa: F401
    except ImportError:
        assert "scikit-learn is not installed" in out
        return
    steps = [ln for ln in out.splitlines() if ln.startswith("step ") and "accuracy" in ln]
    assert len(steps) == 7
    for ln in steps:
        assert float(ln.rsplit("accuracy", 1)[1]) > 0.9, ln
    acc = float(_last_float(out, "CNN valid accuracy:").split(":")[1])
    assert acc > 0.9


def test_char_lstm():
    out = _run("char_lstm.py", "--steps", "150")
    first = float(out.split("step    0  loss ")[1].split()[0])
    final = float(_last_float(out, "final loss:").split(":")[1])
    assert final < 0.75 * first
    sample = out.split("sample:\n", 1)[1]
    assert sample.startswith("The keeper ") and len(sample.strip()) > 100


def test_name_classifier():
    out = _run("name_classifier.py", "--epochs", "20")
    train = float(_last_float(out, "final train accuracy:").split(":")[1])
    val = float(_last_float(out, "final val accuracy:").split(":")[1])
    assert train > 0.8 and val > 0.3  # eight languages: chance is 0.125
    assert "nakagawa     -> Japanese" in out


def test_tiny_gpt(tmp_path):
    png = tmp_path / "loss.png"
    out = _run("tiny_gpt.py", "--steps", "100", "--plot", str(png))
    first = float(out.split("train loss ")[1].split()[0])
    final = float(_last_float(out, "final train loss:").split(":")[1])
    assert final < 0.75 * first
    samples = out.split("samples:\n", 1)[1].split()
    assert len(samples) >= 4 and all(s.isalpha() for s in samples)
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert "matplotlib is not installed" in out
    else:
        assert png.exists()


def test_tensors_basics():
    out = _run("tensors_basics.py")
    assert out.count("all three agree: True") == 2
    assert "after .to('cpu'): on cpu" in out
    assert "sum as a tensor 57.0, as a Python float 57.0" in out
    assert "changed together" in out and "[3. 3. 3. 3.]" in out


def test_autograd_basics():
    out = _run("autograd_basics.py")
    assert "the logits were made by AddBackward0" in out
    assert "the loss was made by BinaryCrossEntropyWithLogitsBackward0" in out
    assert "matches the closed form: True" in out
    assert "inside no_grad: False" in out and "detached: False" in out
    assert "equals 2 * (inp + 1): True" in out
