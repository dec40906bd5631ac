"""``cygrad.nn.attention``: ``SDPBackend``, ``sdpa_kernel`` (validation,
scoping, decorator, what each backend choice lets run on a CPU, against
torch), the ``backends.cuda`` flags, ``bias.CausalBias`` and the
flash-attention implementation registry."""

import warnings

import numpy as np
import pytest

import cygrad
from cygrad.backends import cuda as cg_cuda
from cygrad.nn import functional as F
from cygrad.nn.attention import (
    SDPAParams,
    SDPBackend,
    activate_flash_attention_impl,
    can_use_efficient_attention,
    can_use_flash_attention,
    current_flash_attention_impl,
    list_flash_attention_impls,
    register_flash_attention_impl,
    restore_flash_attention_impl,
    sdpa_kernel,
)
from cygrad.nn.attention.bias import (
    CausalBias,
    CausalVariant,
    causal_lower_right,
    causal_upper_left,
)

TOL64 = {"rtol": 1e-10, "atol": 1e-12}
ALL = [SDPBackend.CUDNN_ATTENTION, SDPBackend.FLASH_ATTENTION,
       SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH, SDPBackend.OVERRIDEABLE]


def _enabled():
    return [cg_cuda.flash_sdp_enabled(), cg_cuda.mem_efficient_sdp_enabled(),
            cg_cuda.math_sdp_enabled(), cg_cuda.cudnn_sdp_enabled()]


# ---------------------------------------------------------------------------
# the enum and the context manager


def test_backend_members_match_torch():
    torch = pytest.importorskip("torch")
    from torch.nn.attention import SDPBackend as T
    assert [(n, int(v)) for n, v in SDPBackend.__members__.items()] == \
        [(n, int(v)) for n, v in T.__members__.items()]
    assert repr(SDPBackend.MATH) == repr(T.MATH)
    assert set(cygrad.nn.attention.__all__) == set(torch.nn.attention.__all__)


@pytest.mark.parametrize("bad", ["math", 3, None, (SDPBackend.MATH,),
                                 {SDPBackend.MATH}])
def test_sdpa_kernel_rejects_what_torch_rejects(bad):
    with pytest.raises(AssertionError, match="Backend must be an instance of "
                                             "SDPBackend or a list"), sdpa_kernel(bad):
        pass
    assert _enabled() == [True] * 4


def test_scope_restores_flags_after_exit_and_after_an_error():
    with sdpa_kernel(SDPBackend.MATH):
        assert _enabled() == [False, False, True, False]
        with sdpa_kernel([SDPBackend.FLASH_ATTENTION, SDPBackend.FLASH_ATTENTION]):
            assert _enabled() == [True, False, False, False]
        assert _enabled() == [False, False, True, False]
    assert _enabled() == [True] * 4
    with pytest.raises(KeyError), sdpa_kernel(SDPBackend.EFFICIENT_ATTENTION):
        raise KeyError("inside")
    assert _enabled() == [True] * 4


def test_sdpa_kernel_yields_a_dict_and_decorates():
    with sdpa_kernel(SDPBackend.MATH) as got:
        assert got == {}

    @sdpa_kernel(SDPBackend.MATH)
    def flash_allowed():
        return cg_cuda.flash_sdp_enabled()

    assert flash_allowed() is False
    assert cg_cuda.flash_sdp_enabled() is True


def test_set_priority_is_scoped():
    from cygrad.nn import _sdp
    before = _sdp.priority()
    assert before == [1, 2, 0, 3, 4]
    with sdpa_kernel([SDPBackend.MATH, SDPBackend.FLASH_ATTENTION], set_priority=True):
        assert _sdp.priority() == [0, 1, 2, 3, 4]
    assert _sdp.priority() == before


def test_backends_cuda_flags_drive_the_choice():
    q = cygrad.randn(1, 2, 3, 4)
    cg_cuda.enable_math_sdp(False)
    cg_cuda.enable_flash_sdp(False)
    try:
        with pytest.raises(RuntimeError, match="No viable backend"):
            F.scaled_dot_product_attention(q, q, q)
    finally:
        cg_cuda.enable_math_sdp(True)
        cg_cuda.enable_flash_sdp(True)
    F.scaled_dot_product_attention(q, q, q)


def test_cuda_only_queries_answer_false():
    q = cygrad.randn(1, 1, 2, 4)
    params = SDPAParams(q, q, q, None, 0.0, False, False)
    assert params.dropout == 0.0 and params.is_causal is False
    assert not can_use_flash_attention(params)
    assert not can_use_efficient_attention(params, True)
    assert not cg_cuda.can_use_cudnn_attention(params)
    assert not cg_cuda.is_flash_attention_available()


# ---------------------------------------------------------------------------
# what runs, against torch's CPU build

CONFIGS = {
    "flash": SDPBackend.FLASH_ATTENTION,
    "efficient": SDPBackend.EFFICIENT_ATTENTION,
    "cudnn": SDPBackend.CUDNN_ATTENTION,
    "overrideable": SDPBackend.OVERRIDEABLE,
    "math": SDPBackend.MATH,
    "none": [],
    "flash+efficient": [SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION],
    "flash+math": [SDPBackend.FLASH_ATTENTION, SDPBackend.MATH],
    "junk list": ["MATH"],
}


def _case(name, lib):
    rng = np.random.default_rng(0)
    q = rng.standard_normal((2, 3, 4, 8))
    k = rng.standard_normal((2, 3, 5, 8))
    v = rng.standard_normal((2, 3, 5, 8))
    t = lib.tensor
    kw = {}
    if name == "plain":
        args = (t(q), t(k), t(v))
    elif name == "bool mask":
        args = (t(q), t(k), t(v))
        kw["attn_mask"] = t(rng.random((4, 5)) > 0.3)
    elif name == "float mask 4d":
        args = (t(q), t(k), t(v))
        kw["attn_mask"] = t(rng.standard_normal((2, 1, 4, 5)))
    elif name == "mask 3d":
        args = (t(q), t(k), t(v))
        kw["attn_mask"] = t(rng.standard_normal((3, 4, 5)))
    elif name == "causal":
        args = (t(q), t(k), t(v))
        kw["is_causal"] = True
    elif name == "dropout":
        args = (t(q), t(k), t(v))
        kw["dropout_p"] = 0.5
    elif name == "3d":
        args = (t(q[0]), t(k[0]), t(v[0]))
    elif name == "gqa":
        args = (t(rng.standard_normal((2, 6, 4, 8))), t(k), t(v))
        kw["enable_gqa"] = True
    elif name == "heads differ":
        args = (t(rng.standard_normal((2, 6, 4, 8))), t(k), t(v))
    elif name == "batch broadcast":
        args = (t(q), t(k[:1]), t(v[:1]))
    elif name == "value head size":
        args = (t(q), t(k), t(v[..., :6]))
    elif name == "last stride":
        args = (t(np.ascontiguousarray(q.swapaxes(-1, -2))).transpose(-1, -2),
                t(k), t(v))
    elif name == "empty queries":
        args = (t(q[:, :, :0]), t(k), t(v))
    elif name == "scale":
        args = (t(q), t(k), t(v))
        kw["scale"] = 0.3
    return args, kw


CASES = ["plain", "bool mask", "float mask 4d", "mask 3d", "causal", "dropout", "3d",
         "gqa", "heads differ", "batch broadcast", "value head size", "last stride",
         "empty queries", "scale"]


def _run(lib, fn, backends, case):
    args, kw = _case(case, lib)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            with backends:
                out = fn(*args, **kw)
            result = ("ok", None if kw.get("dropout_p") else out.numpy())
        except RuntimeError as e:
            result = ("error", str(e))
    reasons = [str(w.message).split(" (Triggered internally")[0] for w in caught
               if issubclass(w.category, UserWarning)]
    return result, reasons


@pytest.mark.parametrize("config", list(CONFIGS))
@pytest.mark.parametrize("case", CASES)
def test_backend_choice_matches_torch_cpu(config, case):
    torch = pytest.importorskip("torch")
    from torch.nn import attention as TA
    tb = CONFIGS[config]
    tb = [getattr(TA.SDPBackend, b.name) if isinstance(b, SDPBackend) else b
          for b in tb] if isinstance(tb, list) else getattr(TA.SDPBackend, tb.name)
    (t_res, t_val), t_why = _run(torch, torch.nn.functional.scaled_dot_product_attention,
                                 TA.sdpa_kernel(tb), case)
    (c_res, c_val), c_why = _run(cygrad, F.scaled_dot_product_attention,
                                 sdpa_kernel(CONFIGS[config]), case)
    assert c_res == t_res, (c_val, t_val)
    if t_res == "error":
        assert c_val == t_val
        assert c_why == t_why
    elif t_val is not None:
        np.testing.assert_allclose(c_val, t_val, **TOL64)


# ---------------------------------------------------------------------------
# causal biases


@pytest.mark.parametrize("lq,sk", [(3, 3), (2, 5), (5, 2)])
@pytest.mark.parametrize("variant", ["upper_left", "lower_right"])
def test_causal_bias_matches_torch(lq, sk, variant):
    torch = pytest.importorskip("torch")
    from torch.nn.attention import bias as TB
    rng = np.random.default_rng(1)
    q = rng.standard_normal((2, 2, lq, 4))
    k = rng.standard_normal((2, 2, sk, 4))
    v = rng.standard_normal((2, 2, sk, 3))
    go = rng.standard_normal((2, 2, lq, 3))
    res = []
    for lib, fn, mod in ((torch, torch.nn.functional.scaled_dot_product_attention, TB),
                         (cygrad, F.scaled_dot_product_attention,
                          cygrad.nn.attention.bias)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            bias = getattr(mod, "causal_" + variant)(lq, sk)
        ts = [lib.tensor(a, requires_grad=True) for a in (q, k, v)]
        y = fn(*ts, attn_mask=bias)
        y.backward(lib.tensor(go))
        res.append([bias._materialize().numpy(), y.detach().numpy()]
                   + [t.grad.numpy() for t in ts])
    np.testing.assert_array_equal(res[1][0], res[0][0])
    for p, c in zip(res[0][1:], res[1][1:]):
        np.testing.assert_allclose(c, p, **TOL64, equal_nan=True)


def test_causal_bias_checks_and_warnings():
    with pytest.raises(AssertionError, match="variant must be a CausalVariant"):
        CausalBias(1, 2, 2)
    with pytest.warns(UserWarning, match="Lower right causal bias will produce NaNs"):
        causal_lower_right(4, 2)
    with pytest.raises(AssertionError, match="only supports 2D"):
        causal_upper_left(1, 2, 3)
    q = cygrad.randn(1, 1, 2, 4)
    with pytest.raises(ValueError, match="should not be used with causal=True"):
        F.scaled_dot_product_attention(q, q, q, attn_mask=causal_upper_left(2, 2),
                                       is_causal=True)
    assert CausalVariant.UPPER_LEFT == 1 and CausalVariant.LOWER_RIGHT == 2
    bias = causal_lower_right(2, 3)
    assert bias.shape == (2, 3)
    np.testing.assert_array_equal(bias._materialize().numpy(),
                                  [[True, True, False], [True, True, True]])
    assert "True" in repr(bias)


# ---------------------------------------------------------------------------
# the flash-attention implementation registry


def test_flash_impl_registry(caplog):
    assert current_flash_attention_impl() is None
    removed = []

    class Handle:
        def remove(self):
            removed.append(True)

    register_flash_attention_impl("mine", register_fn=Handle)
    try:
        assert "mine" in list_flash_attention_impls()
        activate_flash_attention_impl("mine")
        assert current_flash_attention_impl() == "mine"
        restore_flash_attention_impl()
        assert removed == [True] and current_flash_attention_impl() is None
        with caplog.at_level("WARNING"):
            restore_flash_attention_impl()
        assert "no custom impl was activated" in caplog.text
        with pytest.raises(ValueError, match="Unknown flash attention impl 'FA9'"):
            activate_flash_attention_impl("FA9")
    finally:
        from cygrad.nn import attention
        attention._FLASH_IMPLS.pop("mine", None)
