"""Shared harness of the optimizer tests that run cygrad and torch side by side.

The loss is nonconvex and its gradient is computed by NumPy, so a trajectory
tests the optimizer alone: for each parameter ``x`` (any shape; the last axis
of size ``k``), ``grad(x) = tanh(x @ A) + x / 10 + cos(3 x) / 5`` with a fixed
``k x k`` matrix ``A``.  Both libraries get the same gradient arrays.
"""

import numpy as np

import cygrad

# several shapes at once, in one optimizer, plus one parameter that never
# gets a gradient (it must be skipped: no state, unchanged)
SHAPES = [(7, 5), (6,), (2, 3, 4), (3,)]


def problem(dtype, shapes=SHAPES, seed=0):
    rng = np.random.default_rng(seed)
    p0 = [rng.standard_normal(s).astype(dtype) for s in shapes]
    mats = [(rng.standard_normal((s[-1], s[-1])) / 2).astype(dtype) for s in shapes]
    return p0, mats


def numpy_grad(x, a):
    return (np.tanh(x @ a) + x / 10 + np.cos(3 * x) / 5).astype(x.dtype)


def cygrad_params(p0):
    return [cygrad.tensor(p.copy(), requires_grad=True) for p in p0]


def torch_params(torch, p0):
    return [torch.nn.Parameter(torch.from_numpy(p.copy())) for p in p0]


def run_cygrad(opt, params, mats, steps, skip=()):
    out = []
    for _ in range(steps):
        for i, (p, a) in enumerate(zip(params, mats)):
            if i not in skip:
                p.grad = cygrad.from_numpy(numpy_grad(p._arr.copy(), a))
        opt.step()
        out.append([p._arr.copy() for p in params])
    return out


def run_torch(torch, opt, params, mats, steps, skip=()):
    out = []
    for _ in range(steps):
        for i, (p, a) in enumerate(zip(params, mats)):
            if i not in skip:
                p.grad = torch.from_numpy(numpy_grad(p.detach().numpy().copy(), a))
        opt.step()
        out.append([p.detach().numpy().copy() for p in params])
    return out


def assert_same_trajectory(ours, theirs, tol):
    """|ours - theirs| <= tol * scale at every step, NaN where torch has NaN.

    ``scale`` is the parameter's largest magnitude over the whole run, so a
    parameter that passes through zero is measured against its own size,
    not against the near-zero value of that one step.
    """
    assert len(ours) == len(theirs)
    nparams = len(theirs[0])
    scales = [
        max(max(float(np.nanmax(np.abs(b[i]), initial=0)) for b in theirs), 1e-300)
        for i in range(nparams)
    ]
    for step, (a_list, b_list) in enumerate(zip(ours, theirs), start=1):
        for i, (a, b) in enumerate(zip(a_list, b_list)):
            assert a.dtype == b.dtype
            nan = np.isnan(b)
            assert (np.isnan(a) == nan).all(), f"step {step}, parameter {i}: NaNs"
            if nan.all():
                continue
            err = float(np.max(np.abs(a[~nan] - b[~nan]))) / scales[i]
            assert err <= tol, (
                f"step {step}, parameter {i}: relative error {err:.3g} > {tol}"
            )


def state_from_torch(torch_state_dict):
    """A torch optimizer's state dict with every tensor converted via NumPy."""

    def conv(v):
        if hasattr(v, "numpy") and hasattr(v, "detach"):
            return cygrad.from_numpy(v.detach().numpy().copy())
        if isinstance(v, dict):
            return {k: conv(x) for k, x in v.items()}
        if isinstance(v, list):
            return [conv(x) for x in v]
        if isinstance(v, tuple):
            return tuple(conv(x) for x in v)
        return v

    return conv(torch_state_dict)
