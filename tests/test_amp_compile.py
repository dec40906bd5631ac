"""amp (autocast, GradScaler), compile and the CUDA queries of a CPU build."""

import warnings

import numpy as np
import pytest

import cygrad


def test_compile_returns_what_it_was_given():
    m = cygrad.nn.Linear(2, 3)
    assert cygrad.compile(m) is m
    assert m.compile() is None

    @cygrad.compile
    def f(x):
        return x * 2

    @cygrad.compile(mode="max-autotune", fullgraph=True)
    def g(x):
        return x + 1

    assert f(cygrad.ones(2)).tolist() == [2.0, 2.0]
    assert g(cygrad.ones(1)).tolist() == [2.0]
    assert not cygrad.compiler.is_compiling()


def test_gpu_autocast_and_scaler_disable_themselves_with_a_warning():
    with pytest.warns(UserWarning, match="CUDA is not available"):
        ctx = cygrad.autocast(device_type="cuda", dtype=cygrad.float16)
    with ctx:
        y = cygrad.ones(2) * 3
    assert y.dtype == cygrad.float32
    with pytest.warns(UserWarning, match="GradScaler is enabled, but CUDA is not"):
        s = cygrad.cuda.amp.GradScaler()
    assert not s.is_enabled()
    loss = cygrad.tensor(2.0, requires_grad=True)
    assert s.scale(loss) is loss
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with cygrad.amp.autocast("cpu", enabled=False):
            pass
        cygrad.amp.GradScaler("cuda", enabled=False)


def test_cpu_autocast_refuses_rather_than_compute_silently_in_float32():
    with pytest.raises(NotImplementedError, match="autocast"):
        with cygrad.autocast("cpu", dtype=cygrad.float16):
            pass


def _model():
    w = cygrad.nn.Parameter(cygrad.tensor([1.0, -2.0]))
    return w, cygrad.optim.SGD([w], lr=0.1)


def test_cpu_grad_scaler_scales_unscales_and_steps():
    w, opt = _model()
    s = cygrad.amp.GradScaler("cpu", init_scale=8.0, growth_interval=2)
    loss = (w * w).sum()
    s.scale(loss).backward()
    np.testing.assert_allclose(w.grad.numpy(), 8.0 * 2 * np.array([1.0, -2.0]))
    s.step(opt)
    np.testing.assert_allclose(w.detach().numpy(), [0.8, -1.6], rtol=1e-6)
    s.update()
    assert s.get_scale() == 8.0
    opt.zero_grad()
    s.scale((w * w).sum()).backward()
    s.step(opt)
    s.update()
    assert s.get_scale() == 16.0         # two good steps: grown


def test_cpu_grad_scaler_skips_a_step_with_inf_and_backs_off():
    w, opt = _model()
    s = cygrad.amp.GradScaler("cpu", init_scale=4.0)
    w.grad = cygrad.tensor([float("inf"), 1.0])
    before = w.detach().numpy().copy()
    assert s.step(opt) is None
    np.testing.assert_array_equal(w.detach().numpy(), before)
    s.update()
    assert s.get_scale() == 2.0
    with pytest.raises(RuntimeError, match="already been called"):
        s.unscale_(opt)
        s.unscale_(opt)
    state = s.state_dict()
    t = cygrad.amp.GradScaler("cpu")
    t.load_state_dict(state)
    assert t.get_scale() == s.get_scale()


def test_cuda_queries_answer_as_a_cpu_build():
    assert cygrad.cuda.memory_allocated() == 0
    assert cygrad.cuda.max_memory_allocated() == 0
    assert cygrad.cuda.memory_reserved() == 0
    cygrad.cuda.reset_peak_memory_stats()
    for call in (lambda: cygrad.cuda.set_device(0),
                 lambda: cygrad.cuda.get_device_capability(),
                 lambda: cygrad.cuda.Event(enable_timing=True)):
        with pytest.raises(AssertionError, match="CPU only"):
            call()
    assert cygrad.version.cuda is None and cygrad.version.__version__
