"""Anomaly mode: a NaN in backward names the node and the forward's line."""

import warnings

import numpy as np
import pytest

import cygrad
from cygrad.autograd import (
    detect_anomaly,
    is_anomaly_enabled,
    set_debug_level,
    set_detect_anomaly,
)

with open(__file__) as _f:
    _SRC = _f.read().splitlines()


def at(name):
    hits = [i + 1 for i, s in enumerate(_SRC) if s.rstrip().endswith(f"# <- {name}")]
    assert len(hits) == 1, name
    return f"{__file__}:{hits[0]}"


@pytest.fixture(autouse=True)
def _quiet_and_off():
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Anomaly Detection has been enabled")
        yield
    set_detect_anomaly(False)


def _masked_log(x):
    # A realistic NaN: log masked by where; at x = 0 the log's backward gets
    # a zero gradient and computes 0 / 0.
    return cygrad.where(x > 0, x.log(), cygrad.zeros_like(x))  # <- log


def test_detect_anomaly_names_the_node_and_forward_line():
    x = cygrad.tensor([0.0, 1.0, 2.0], requires_grad=True)
    with detect_anomaly():
        assert is_anomaly_enabled()
        loss = _masked_log(x).sum()
        with pytest.raises(RuntimeError) as ei:
            loss.backward()
    assert not is_anomaly_enabled()
    msg = str(ei.value)
    assert msg.startswith("Function 'LogBackward0' returned nan values in its 0th "
                          "output.")
    assert at("log") in msg


def test_without_anomaly_mode_the_nan_reaches_grad():
    x = cygrad.tensor([0.0, 1.0], requires_grad=True)
    _masked_log(x).sum().backward()
    assert np.isnan(x.grad.numpy()[0])


def test_detect_anomaly_warns_like_pytorch():
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        detect_anomaly()
    assert any("Anomaly Detection has been enabled" in str(w.message) for w in rec)


def test_detect_anomaly_as_decorator():
    @detect_anomaly()
    def step(x):
        y = x.sqrt() * 0.0  # <- sqrt
        y.sum().backward()

    x = cygrad.tensor([0.0, 4.0], requires_grad=True)
    with pytest.raises(RuntimeError) as ei:
        step(x)
    msg = str(ei.value)
    assert msg.startswith("Function 'SqrtBackward0' returned nan values")
    assert at("sqrt") in msg
    assert not is_anomaly_enabled()


def test_set_detect_anomaly_call_and_context():
    set_detect_anomaly(True)
    assert is_anomaly_enabled()
    set_detect_anomaly(False)
    assert not is_anomaly_enabled()
    with set_detect_anomaly(True):
        assert is_anomaly_enabled()
    assert not is_anomaly_enabled()
    with detect_anomaly(check_nan=False):
        assert not is_anomaly_enabled()


def test_anomaly_mode_names_line_even_at_debug_level_zero():
    prev = set_debug_level(0)
    try:
        with detect_anomaly():
            x = cygrad.tensor([0.0, 1.0], requires_grad=True)
            loss = _masked_log(x).sum()
            with pytest.raises(RuntimeError) as ei:
                loss.backward()
        assert at("log") in str(ei.value)
        assert cygrad.autograd.get_debug_level() == 0
    finally:
        set_debug_level(prev)


def test_custom_function_nan_names_its_node():
    class Bad(cygrad.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1.0

        @staticmethod
        def backward(ctx, grad):
            return grad * float("nan")

    x = cygrad.tensor([1.0], requires_grad=True)
    with detect_anomaly():
        y = Bad.apply(x)  # <- bad
        with pytest.raises(RuntimeError) as ei:
            y.sum().backward()
    msg = str(ei.value)
    assert msg.startswith("Function 'BadBackward' returned nan values in its 0th output")
    assert at("bad") in msg


def test_clean_backward_passes_in_anomaly_mode():
    x = cygrad.tensor([1.0, 2.0], requires_grad=True)
    with detect_anomaly():
        (x.log() * x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.log([1.0, 2.0]) + 1, rtol=1e-6)
