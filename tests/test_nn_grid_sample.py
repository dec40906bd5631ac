"""``F.affine_grid`` and ``F.grid_sample``: closed forms, torch function to
function (values, input and grid gradients, double backward), gradcheck and
gradgradcheck in float64, hypothesis over shapes, bad input."""

import itertools
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cygrad
from cygrad.autograd import gradcheck, gradgradcheck
from cygrad.nn import functional as F

TOL = {np.float64: {"rtol": 1e-10, "atol": 1e-10},
       np.float32: {"rtol": 1e-5, "atol": 1e-5}}
MODES = ("bilinear", "nearest", "bicubic")
PADS = ("zeros", "border", "reflection")


def _t(a, requires_grad=False):
    return cygrad.tensor(np.asarray(a), requires_grad=requires_grad)


def _grid(rng, n, out, nd, dtype, lo=-1.6, hi=1.6):
    """Random points, some outside [-1, 1], and a few exactly on the edges,
    the centre and the corner-pixel centres."""
    g = rng.uniform(lo, hi, (n,) + out + (nd,))
    flat = g.reshape(-1)
    flat[:8] = [1.0, -1.0, -1.0, 1.0, 0.0, 1.0, -1.0, 0.0][:flat.size]
    return g.astype(dtype)


# ---------------------------------------------------------------------------
# closed forms (no torch needed)


def test_identity_affine_grid_samples_the_input_back():
    x = np.random.default_rng(0).standard_normal((2, 3, 5, 4))
    theta = np.tile(np.eye(2, 3), (2, 1, 1))
    for align in (False, True):
        grid = F.affine_grid(_t(theta), (2, 3, 5, 4), align_corners=align)
        for mode in MODES:
            y = F.grid_sample(_t(x), grid, mode=mode, align_corners=align)
            np.testing.assert_allclose(y.numpy(), x, rtol=1e-12, atol=1e-12)


def test_identity_affine_grid_3d_samples_the_input_back():
    x = np.random.default_rng(1).standard_normal((1, 2, 3, 4, 5))
    theta = np.eye(3, 4)[None]
    grid = F.affine_grid(_t(theta), (1, 2, 3, 4, 5), align_corners=False)
    y = F.grid_sample(_t(x), grid, mode="bilinear", align_corners=False)
    np.testing.assert_allclose(y.numpy(), x, rtol=1e-12, atol=1e-12)


def test_bilinear_midpoint_is_the_mean_of_the_four_taps():
    x = np.arange(16.0).reshape(1, 1, 4, 4)
    # align_corners=True: pixel k is at -1 + 2k/3; halfway between 1 and 2
    grid = np.zeros((1, 1, 1, 2))
    y = F.grid_sample(_t(x), _t(grid), align_corners=True)
    assert y.item() == pytest.approx(x[0, 0, 1:3, 1:3].mean())


def test_zeros_padding_outside_is_zero_and_border_is_the_edge():
    x = np.random.default_rng(2).standard_normal((1, 2, 3, 3))
    grid = np.array([[[[5.0, 0.0], [-3.0, -7.0]]]])
    z = F.grid_sample(_t(x), _t(grid), padding_mode="zeros", align_corners=True)
    np.testing.assert_array_equal(z.numpy(), 0.0)
    b = F.grid_sample(_t(x), _t(grid), padding_mode="border", align_corners=True)
    np.testing.assert_allclose(b.numpy()[..., 0, 0], x[:, :, 1, 2])
    np.testing.assert_allclose(b.numpy()[..., 0, 1], x[:, :, 0, 0])


def test_reflection_is_periodic_with_period_four():
    # align_corners=True reflects about -1 and 1: period 4 in grid units
    x = np.random.default_rng(3).standard_normal((1, 1, 4, 5))
    g = np.random.default_rng(4).uniform(-1, 1, (1, 3, 3, 2))
    a = F.grid_sample(_t(x), _t(g), padding_mode="reflection", align_corners=True)
    b = F.grid_sample(_t(x), _t(g + 4.0), padding_mode="reflection",
                      align_corners=True)
    np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12, atol=1e-12)


def test_nonfinite_grid_points_read_nothing():
    x = np.ones((1, 1, 3, 3))
    grid = np.array([[[[np.inf, 0.0], [0.0, -np.inf], [1e300, 0.0]]]])
    for pad in PADS[:2]:
        y = F.grid_sample(_t(x), _t(grid), padding_mode=pad, align_corners=False)
        assert y.shape == (1, 1, 1, 3)


def test_empty_batch_and_empty_grid():
    y = F.grid_sample(_t(np.zeros((0, 2, 3, 4))), _t(np.zeros((0, 2, 2, 2))),
                      align_corners=False)
    assert y.shape == (0, 2, 2, 2)
    x = _t(np.ones((1, 2, 3, 4)), True)
    g = _t(np.zeros((1, 0, 2, 2)), True)
    y = F.grid_sample(x, g, align_corners=False)
    assert y.shape == (1, 2, 0, 2)
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), 0.0)


def test_non_contiguous_inputs():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 3, 4, 5))
    g = _grid(rng, 2, (3, 4), 2, np.float64)
    xt = _t(np.ascontiguousarray(x.transpose(0, 1, 3, 2))).transpose(2, 3)
    gt = _t(np.ascontiguousarray(g.transpose(0, 2, 1, 3))).transpose(1, 2)
    a = F.grid_sample(xt, gt, align_corners=False)
    b = F.grid_sample(_t(x), _t(g), align_corners=False)
    np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_align_corners_none_warns_as_torch():
    x, g = _t(np.ones((1, 1, 2, 2))), _t(np.zeros((1, 1, 1, 2)))
    with pytest.warns(UserWarning, match="align_corners=False since 1.3.0"):
        F.grid_sample(x, g)
    with pytest.warns(UserWarning, match="align_corners=False since 1.3.0"):
        F.affine_grid(_t(np.eye(2, 3)[None]), (1, 1, 2, 2))
    with pytest.warns(UserWarning, match="unit-size grids"):
        F.affine_grid(_t(np.eye(2, 3)[None]), (1, 1, 1, 2), align_corners=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        F.grid_sample(x, g, align_corners=False)


def test_node_names():
    x = _t(np.ones((1, 1, 2, 2)), True)
    assert type(F.grid_sample(x, _t(np.zeros((1, 1, 1, 2))), align_corners=False)
                .grad_fn).__name__ == "GridSampler2DBackward0"
    x = _t(np.ones((1, 1, 2, 2, 2)), True)
    assert type(F.grid_sample(x, _t(np.zeros((1, 1, 1, 1, 3))), align_corners=False)
                .grad_fn).__name__ == "GridSampler3DBackward0"


# ---------------------------------------------------------------------------
# gradcheck / gradgradcheck (float64; random points avoid the kinks)

GRAD_CASES = [(nd, mode, pad, align) for nd, mode, pad, align
              in itertools.product((2, 3), MODES, PADS, (False, True))
              if not (nd == 3 and mode == "bicubic")]


@pytest.mark.parametrize("nd,mode,pad,align", GRAD_CASES)
def test_gradcheck(nd, mode, pad, align):
    rng = np.random.default_rng(6)
    spatial = (3, 4, 5)[-nd:]
    x = _t(rng.standard_normal((2, 2) + spatial), True)
    g = _t(rng.uniform(-1.4, 1.4, (2,) + (3, 2, 2)[:nd] + (nd,)), True)

    def f(a, b):
        return F.grid_sample(a, b, mode=mode, padding_mode=pad, align_corners=align)

    assert gradcheck(f, (x, g))
    if mode != "bicubic":
        assert gradgradcheck(f, (x, g))


def test_bicubic_double_backward_raises_like_torch():
    x = _t(np.random.default_rng(7).standard_normal((1, 1, 3, 3)), True)
    g = _t(np.random.default_rng(8).uniform(-1, 1, (1, 2, 2, 2)), True)
    y = F.grid_sample(x, g, mode="bicubic", align_corners=False)
    gx, gg = cygrad.autograd.grad((y * y).sum(), (x, g), create_graph=True)
    with pytest.raises(RuntimeError, match="bicubic"):
        (gx.sum() + gg.sum()).backward()


def test_affine_grid_gradcheck():
    theta = _t(np.random.default_rng(9).standard_normal((2, 2, 3)), True)
    assert gradcheck(lambda t: F.affine_grid(t, (2, 1, 3, 4), align_corners=False),
                     (theta,))
    theta = _t(np.random.default_rng(10).standard_normal((1, 3, 4)), True)
    assert gradcheck(lambda t: F.affine_grid(t, (1, 1, 2, 3, 2), align_corners=True),
                     (theta,))


# ---------------------------------------------------------------------------
# against torch, function to function


def _both(torch, x, g, go, nd, mode, pad, align):
    out = []
    for lib, fn in ((torch, torch.nn.functional.grid_sample), (cygrad, F.grid_sample)):
        tx = lib.tensor(x, requires_grad=True)
        tg = lib.tensor(g, requires_grad=True)
        y = fn(tx, tg, mode=mode, padding_mode=pad, align_corners=align)
        y.backward(lib.tensor(go))
        out.append((y.detach().numpy(), tx.grad.numpy(), tg.grad.numpy()))
    return out


TORCH_CASES = [(nd, mode, pad, align, dt) for (nd, mode, pad, align), dt
               in itertools.product(GRAD_CASES, (np.float64, np.float32))]


@pytest.mark.parametrize("nd,mode,pad,align,dtype", TORCH_CASES,
                         ids=lambda v: getattr(v, "__name__", str(v)))
def test_grid_sample_matches_torch(nd, mode, pad, align, dtype):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(11)
    spatial = (4, 5, 6)[-nd:]
    out = (3, 4, 5)[:nd]
    x = rng.standard_normal((2, 3) + spatial).astype(dtype)
    g = _grid(rng, 2, out, nd, dtype, -2.7, 2.7)
    go = rng.standard_normal((2, 3) + out).astype(dtype)
    (ty, tgx, tgg), (cy, cgx, cgg) = _both(torch, x, g, go, nd, mode, pad, align)
    np.testing.assert_allclose(cy, ty, **TOL[dtype])
    np.testing.assert_allclose(cgx, tgx, **TOL[dtype])
    # torch sums the grid's gradient in the input's dtype; cygrad in double
    scale = max(1.0, float(np.abs(tgg).max()))
    np.testing.assert_allclose(cgg, tgg, rtol=TOL[dtype]["rtol"],
                               atol=TOL[dtype]["atol"] * scale)


@pytest.mark.parametrize("align", (False, True))
def test_grid_points_on_pixel_centres_and_edges_match_torch(align):
    torch = pytest.importorskip("torch")
    # every pixel centre, edge and half-way point of a 4x5 input: kinks of
    # bilinear, ties of nearest, clipping points of border and reflection
    w, h = 5, 4
    xs = np.linspace(-1.5, 1.5, 4 * w + 1)
    ys = np.linspace(-1.5, 1.5, 4 * h + 1)
    g = np.stack(np.meshgrid(xs, ys), -1)[None]
    x = np.random.default_rng(12).standard_normal((1, 2, h, w))
    go = np.random.default_rng(13).standard_normal((1, 2) + g.shape[1:3])
    for mode, pad in itertools.product(MODES, PADS):
        (ty, tgx, tgg), (cy, cgx, cgg) = _both(torch, x, g, go, 2, mode, pad, align)
        np.testing.assert_allclose(cy, ty, **TOL[np.float64])
        np.testing.assert_allclose(cgx, tgx, **TOL[np.float64])
        np.testing.assert_allclose(cgg, tgg, **TOL[np.float64])


@pytest.mark.parametrize("nd,pad,align", list(itertools.product((2, 3), PADS,
                                                                (False, True))))
def test_bilinear_double_backward_matches_torch(nd, pad, align):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(14)
    x = rng.standard_normal((2, 2) + (3, 4, 5)[-nd:])
    g = rng.uniform(-1.8, 1.8, (2,) + (3, 2, 2)[:nd] + (nd,))
    res = []
    for lib, fn in ((torch, torch.nn.functional.grid_sample), (cygrad, F.grid_sample)):
        tx = lib.tensor(x, requires_grad=True)
        tg = lib.tensor(g, requires_grad=True)
        y = fn(tx, tg, mode="bilinear", padding_mode=pad, align_corners=align)
        gx, gg = lib.autograd.grad((y * y).sum(), (tx, tg), create_graph=True)
        a, b = lib.autograd.grad((gx ** 3).sum() + (gg * gg).sum(), (tx, tg))
        res.append([v.detach().numpy() for v in (gx, gg, a, b)])
    for p, q in zip(*res):
        np.testing.assert_allclose(q, p, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("size", [(2, 3, 4, 5), (2, 3, 1, 5), (2, 1, 3, 4, 5),
                                  (2, 1, 1, 1, 2)])
@pytest.mark.parametrize("align", (False, True))
@pytest.mark.parametrize("dtype", (np.float64, np.float32))
def test_affine_grid_matches_torch(size, align, dtype):
    torch = pytest.importorskip("torch")
    rows = (2, 3) if len(size) == 4 else (3, 4)
    th = np.random.default_rng(15).standard_normal((2,) + rows).astype(dtype)
    gg = np.random.default_rng(16).standard_normal(
        size[:1] + size[2:] + rows[:1]).astype(dtype)
    res = []
    for lib, fn in ((torch, torch.nn.functional.affine_grid), (cygrad, F.affine_grid)):
        t = lib.tensor(th, requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            grid = fn(t, size, align_corners=align)
        grid.backward(lib.tensor(gg))
        res.append((grid.detach().numpy(), t.grad.numpy()))
    for p, q in zip(*res):
        assert p.dtype == q.dtype
        np.testing.assert_allclose(q, p, **TOL[dtype])


def test_spatial_transformer_step_matches_torch():
    """affine_grid + grid_sample, as the STN tutorial uses them: gradients for
    theta and the image."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(17)
    img = rng.standard_normal((3, 1, 8, 8))
    th = np.tile(np.eye(2, 3), (3, 1, 1)) + 0.2 * rng.standard_normal((3, 2, 3))
    res = []
    for lib, fn in ((torch, torch.nn.functional), (cygrad, F)):
        t = lib.tensor(th, requires_grad=True)
        x = lib.tensor(img, requires_grad=True)
        grid = fn.affine_grid(t, x.size(), align_corners=False)
        y = fn.grid_sample(x, grid, align_corners=False)
        (y.sin() * y).sum().backward()
        res.append((y.detach().numpy(), t.grad.numpy(), x.grad.numpy()))
    for p, q in zip(*res):
        np.testing.assert_allclose(q, p, **TOL[np.float64])


@pytest.mark.parametrize("size", [(4, 1, 28, 28), (2, 3, 7, 12), (2, 1, 3, 5, 6)])
@pytest.mark.parametrize("align", (False, True))
def test_float32_identity_transform_matches_torch_bit_for_bit_at_the_kinks(size, align):
    """The STN tutorial starts from the identity: every point of its float32
    grid sits on a pixel centre, a kink of bilinear sampling, where the
    grid's gradient is the slope of the cell floor() picks.  The base grid
    and the source coordinate must round as torch's for the same cell (a
    different one changed theta's gradient by 20%)."""
    torch = pytest.importorskip("torch")
    nd = len(size) - 2
    eye = np.tile(np.eye(nd, nd + 1, dtype=np.float32), (size[0], 1, 1))
    img = np.random.default_rng(18).standard_normal(size).astype(np.float32) ** 2
    res = []
    for lib, fn in ((torch, torch.nn.functional), (cygrad, F)):
        t = lib.tensor(eye, requires_grad=True)
        grid = fn.affine_grid(t, size, align_corners=align)
        y = fn.grid_sample(lib.tensor(img), grid, align_corners=align)
        (y * y).sum().backward()
        res.append((grid.detach().numpy(), y.detach().numpy(), t.grad.numpy()))
    np.testing.assert_array_equal(res[1][0], res[0][0])
    np.testing.assert_allclose(res[1][1], res[0][1], rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(res[1][2], res[0][2], rtol=2e-4, atol=1e-3)


@settings(max_examples=25, deadline=None)
@given(nd=st.sampled_from((2, 3)), n=st.integers(1, 2), c=st.integers(1, 3),
       spatial=st.lists(st.integers(1, 5), min_size=3, max_size=3),
       out=st.lists(st.integers(1, 4), min_size=3, max_size=3),
       mode=st.sampled_from(MODES), pad=st.sampled_from(PADS),
       align=st.booleans(), seed=st.integers(0, 2 ** 16))
def test_hypothesis_shapes_match_torch(nd, n, c, spatial, out, mode, pad, align, seed):
    torch = pytest.importorskip("torch")
    if nd == 3 and mode == "bicubic":
        mode = "bilinear"
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, c) + tuple(spatial[:nd]))
    g = rng.uniform(-2.2, 2.2, (n,) + tuple(out[:nd]) + (nd,))
    go = rng.standard_normal((n, c) + tuple(out[:nd]))
    (ty, tgx, tgg), (cy, cgx, cgg) = _both(torch, x, g, go, nd, mode, pad, align)
    np.testing.assert_allclose(cy, ty, **TOL[np.float64])
    np.testing.assert_allclose(cgx, tgx, **TOL[np.float64])
    np.testing.assert_allclose(cgg, tgg, **TOL[np.float64])


# ---------------------------------------------------------------------------
# bad input: torch's exception type and key phrase

BAD = [
    (lambda m: m.grid_sample(m.zeros(1, 2, 3, 4), m.zeros(1, 2, 2, 3),
                             align_corners=False),
     RuntimeError, "expected grid to have size 2 in last dimension"),
    (lambda m: m.grid_sample(m.zeros(1, 2, 3, 4), m.zeros(2, 2, 2, 2),
                             align_corners=False),
     RuntimeError, "expected grid and input to have same batch size"),
    (lambda m: m.grid_sample(m.zeros(1, 2, 3, 4), m.zeros(1, 2, 2, 2), mode="foo",
                             align_corners=False),
     ValueError, "expected mode to be 'bilinear', 'nearest' or 'bicubic'"),
    (lambda m: m.grid_sample(m.zeros(1, 2, 3, 4), m.zeros(1, 2, 2, 2),
                             padding_mode="foo", align_corners=False),
     ValueError, "expected padding_mode to be 'zeros', 'border', or 'reflection'"),
    (lambda m: m.grid_sample(m.zeros(1, 2, 3, 4, 5), m.zeros(1, 2, 2, 2, 3),
                             mode="bicubic", align_corners=False),
     RuntimeError, "bicubic interpolation only supports 4D input"),
    (lambda m: m.grid_sample(m.zeros(1, 2, 3, 4), m.zeros(1, 2, 2, 2, 2),
                             align_corners=False),
     RuntimeError, "expected 4D input and grid with same number of dimensions"),
    (lambda m: m.grid_sample(m.zeros(1, 2, 0, 4), m.zeros(1, 2, 2, 2),
                             align_corners=False),
     RuntimeError, "with dimension 2 being empty"),
    (lambda m: m.affine_grid(m.zeros(1, 3, 3), (1, 1, 4, 4), align_corners=False),
     ValueError, "Expected a batch of 2D affine matrices of shape Nx2x3"),
    (lambda m: m.affine_grid(m.zeros(2, 2, 3), (1, 1, 4, 4), align_corners=False),
     RuntimeError, "Expected size for first two dimensions of batch2 tensor"),
    (lambda m: m.affine_grid(m.zeros(1, 2, 3), (1, 1, 4), align_corners=False),
     NotImplementedError, "affine_grid only supports 4D and 5D sizes"),
    (lambda m: m.affine_grid(m.zeros(1, 2, 3), (1, 1, 0, 4), align_corners=False),
     ValueError, "Expected non-zero, positive output size"),
    (lambda m: m.affine_grid(m.zeros(1, 2, 3, dtype=m.int64), (1, 1, 2, 4),
                             align_corners=False),
     ValueError, "Expected theta to have floating point type"),
]


class _Lib:
    def __init__(self, lib, functional):
        self.lib, self.f = lib, functional

    def __getattr__(self, name):
        return getattr(self.f, name, None) or getattr(self.lib, name)


@pytest.mark.parametrize("i", range(len(BAD)))
def test_bad_input(i):
    fn, exc, phrase = BAD[i]
    with pytest.raises(exc, match=phrase.replace("(", r"\(")):
        fn(_Lib(cygrad, F))


@pytest.mark.parametrize("i", range(len(BAD)))
def test_bad_input_is_bad_for_torch_too(i):
    torch = pytest.importorskip("torch")
    fn, exc, phrase = BAD[i]
    with pytest.raises(exc, match=phrase.replace("(", r"\(")):
        fn(_Lib(torch, torch.nn.functional))


def test_dtype_mismatch_and_integer_input():
    with pytest.raises(RuntimeError, match="expected scalar type Double but found "
                                           "Float"):
        F.grid_sample(cygrad.zeros(1, 1, 2, 2, dtype=cygrad.float64),
                      cygrad.zeros(1, 1, 1, 2, dtype=cygrad.float32),
                      align_corners=False)
    with pytest.raises(NotImplementedError):
        F.grid_sample(cygrad.zeros(1, 1, 2, 2, dtype=cygrad.int64),
                      cygrad.zeros(1, 1, 1, 2, dtype=cygrad.int64),
                      align_corners=False)


def test_top_level_forms_match_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(18)
    x = rng.standard_normal((1, 2, 4, 5))
    g = _grid(rng, 1, (3, 3), 2, np.float64, -1.3, 1.3)
    th = rng.standard_normal((1, 2, 3))
    for name, args in (("grid_sampler", (x, g, 2, 2, False)),
                       ("grid_sampler_2d", (x, g, 1, 1, True)),
                       ("affine_grid_generator", (th, [1, 1, 4, 4], False))):
        outs = []
        for lib in (torch, cygrad):
            a = [lib.tensor(v) if isinstance(v, np.ndarray) else v for v in args]
            outs.append(getattr(lib, name)(*a).numpy())
        np.testing.assert_allclose(outs[1], outs[0], **TOL[np.float64])
    x3 = rng.standard_normal((1, 1, 2, 3, 4))
    g3 = _grid(rng, 1, (2, 2, 2), 3, np.float64)
    outs = [lib.grid_sampler_3d(lib.tensor(x3), lib.tensor(g3), 0, 0, False).numpy()
            for lib in (torch, cygrad)]
    np.testing.assert_allclose(outs[1], outs[0], **TOL[np.float64])
