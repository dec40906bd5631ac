"""L-BFGS with an optional strong-Wolfe line search, over flat compiled buffers."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from cygrad._kernels import optim_lbfgs as _kl
from cygrad._tensor import Tensor
from cygrad.autograd.grad_mode import enable_grad, no_grad
from cygrad.creation import from_numpy
from cygrad.optim._kernels import k as _k

from .optimizer import Optimizer, _check_param_layout, _copy_value

if TYPE_CHECKING:
    from collections.abc import Callable

    from cygrad._typing import Params

__all__ = ["LBFGS"]


class _History:
    """The (s, y) pairs as rows of two matrices, with ``ro`` and ``al`` beside.

    Rows are taken from a free list (the matrices grow by doubling up to
    ``history_size + 1`` rows: one spare, so that a pair can be formed before
    it is known to be kept); ``order`` lists the rows in use, oldest first.
    """

    def __init__(self, n, dtype, history_size):
        self.n, self.dtype, self.history_size = n, dtype, history_size
        self.S = np.empty((0, n), dtype)
        self.Y = np.empty((0, n), dtype)
        self.ro = np.empty(0, dtype)
        self.al = np.empty(0, dtype)
        self.order = []
        self.free = []

    def reset(self):
        self.free.extend(self.order)
        self.order = []

    def take_row(self):
        if self.free:
            return self.free.pop()
        rows = self.S.shape[0]
        grown = min(max(2 * rows, 4), self.history_size + 1)
        for name in ("S", "Y"):
            old = getattr(self, name)
            new = np.empty((grown, self.n), self.dtype)
            new[:rows] = old
            setattr(self, name, new)
        for name in ("ro", "al"):
            old = getattr(self, name)
            new = np.zeros(grown, self.dtype)
            new[:rows] = old
            setattr(self, name, new)
        self.free.extend(range(grown - 1, rows, -1))
        return rows

    def keep(self, row, ro):
        self.ro[row] = ro
        self.order.append(row)
        if len(self.order) > self.history_size:
            self.free.append(self.order.pop(0))


class LBFGS(Optimizer):
    r"""L-BFGS (torch's ``torch.optim.LBFGS``); ``step(closure)`` runs up to
    ``max_iter`` iterations, re-evaluating the closure.

    All parameters are viewed as one flat vector ``x`` with gradient ``g``
    (zeros for a parameter without a gradient).  Each iteration, with ``k``
    counted across calls of ``step``::

        k == 1:  d = -g;  H_diag = 1;  history cleared
        else:    y = g - g_prev;  s = t * d;  ys = y . s
                 if ys > 1e-10: keep (s, y, ro = 1 / ys), dropping the oldest
                                beyond history_size; H_diag = ys / (y . y)
                 d = -H g        (two-loop recursion over the kept pairs)
        t = min(1, 1 / sum|g|) * lr  if k == 1  else  lr
        stop if g . d > -tolerance_change
        line_search_fn=None:  x = x + t * d, then re-evaluate the closure
        "strong_wolfe":       t from a bracketing, cubic-interpolating search
                              (c1 = 1e-4, c2 = 0.9), then x = x + t * d

    and the loop stops after ``max_iter`` iterations, ``max_eval``
    evaluations, ``max|g| <= tolerance_grad``, ``max|t * d| <=
    tolerance_change`` or ``|loss - prev_loss| < tolerance_change``.  Every
    vector and dot product is in the parameters' dtype; scalars that torch
    keeps as 0-d tensors are NumPy scalars of that dtype here, so float32 runs
    round where torch rounds (on the Rosenbrock function the iterates equal
    torch's bit for bit in both dtypes).
    The history is two flat ``(rows, n)`` buffers updated by the compiled
    two-loop recursion (``cygrad._kernels.optim_lbfgs``), not lists of
    tensors; ``state_dict()`` converts it to torch's layout (``d``, ``t``,
    ``old_dirs``, ``old_stps``, ``ro``, ``H_diag``, ``prev_flat_grad``,
    ``prev_loss``, ``al``, ``func_evals``, ``n_iter``) and
    ``load_state_dict`` back.  If the closure raises, the parameters and the
    state are restored to what they were before ``step``.

    Parameters
    ----------
    params : iterable of Tensor
        One group only; all of one dtype.
    lr : float, default 1
    max_iter : int, default 20
    max_eval : int, default ``max_iter * 5 // 4``
    tolerance_grad : float, default 1e-7
    tolerance_change : float, default 1e-9
    history_size : int, default 100
    line_search_fn : None or "strong_wolfe"

    Raises
    ------
    ValueError
        ``"Invalid learning rate: ..."``, or more than one parameter group
        (``"LBFGS doesn't support per-parameter options (parameter groups)"``).
    RuntimeError
        At ``step``, for a line search other than ``"strong_wolfe"``.
    """

    def __init__(self, params: Params, lr: float | Tensor = 1, max_iter: int = 20,
                 max_eval: int | None = None, tolerance_grad: float = 1e-7,
                 tolerance_change: float = 1e-9, history_size: int = 100,
                 line_search_fn: str | None = None) -> None:
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        defaults = {
            "lr": lr,
            "max_iter": max_iter,
            "max_eval": max_eval,
            "tolerance_grad": tolerance_grad,
            "tolerance_change": tolerance_change,
            "history_size": history_size,
            "line_search_fn": line_search_fn,
        }
        super().__init__(params, defaults)
        if len(self.param_groups) != 1:
            raise ValueError(
                "LBFGS doesn't support per-parameter options (parameter groups)"
            )
        self._params = self.param_groups[0]["params"]
        dtypes = {p._arr.dtype for p in self._params}
        if len(dtypes) != 1:
            raise TypeError(
                "LBFGS needs all parameters of one dtype, got "
                + ", ".join(sorted(str(d) for d in dtypes))
            )
        self._dtype = dtypes.pop()
        self._sizes = [p._arr.size for p in self._params]
        self._numel = sum(self._sizes)

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        if self.param_groups:
            raise ValueError(
                "LBFGS doesn't support per-parameter options (parameter groups)"
            )
        super().add_param_group(param_group)

    def _validate(self, group):
        if not 0.0 <= group["lr"]:
            raise ValueError(f"Invalid learning rate: {group['lr']}")

    # ------------------------------------------------------ flat views

    def _gather_flat_grad(self):
        flat = np.empty(self._numel, self._dtype)
        offset = 0
        for p, n in zip(self._params, self._sizes):
            if p.grad is None:
                flat[offset : offset + n] = 0
            else:
                grad = p.grad._arr
                if grad.shape != p._arr.shape:
                    raise RuntimeError(
                        f"a parameter of shape {tuple(p._arr.shape)} has a gradient "
                        f"of shape {tuple(grad.shape)}"
                    )
                flat[offset : offset + n] = grad.reshape(-1)
            offset += n
        return flat

    def _flat_params(self):
        flat = np.empty(self._numel, self._dtype)
        offset = 0
        for p, n in zip(self._params, self._sizes):
            flat[offset : offset + n] = p._arr.reshape(-1)
            offset += n
        return flat

    def _set_params(self, flat):
        offset = 0
        for p, n in zip(self._params, self._sizes):
            p._arr.reshape(-1)[...] = flat[offset : offset + n]
            p._bump_version()
            offset += n

    def _add_grad(self, t, d):
        """x = x + t * d, parameter by parameter (t rounded to the dtype)."""
        offset = 0
        t = float(t)
        for p, n in zip(self._params, self._sizes):
            _check_param_layout(p)
            _kl.axpy(p._arr.reshape(-1), d[offset : offset + n], t)
            p._bump_version()
            offset += n

    def _evaluate(self, closure):
        with enable_grad():
            return closure()

    def _directional_evaluate(self, closure, x, t, d):
        self._add_grad(t, d)
        loss = float(self._evaluate(closure))
        flat_grad = self._gather_flat_grad()
        self._set_params(x)
        return loss, flat_grad

    # -------------------------------------------------------------- step

    def step(self, closure: Callable[[], Any] | None) -> Any:
        """Run up to ``max_iter`` iterations; returns the closure's first loss.

        Parameters
        ----------
        closure : callable
            Zeroes the gradients, recomputes the loss, calls ``backward`` and
            returns the loss; called with grad mode on.
        """
        for p in self._params:
            _check_param_layout(p)
        saved_x = self._flat_params()
        saved_state = {p: _copy_value(st) for p, st in self.state.items()}
        try:
            with no_grad():
                return self._step(closure)
        except BaseException:
            self._set_params(saved_x)
            self.state.clear()
            self.state.update(saved_state)
            raise

    def _step(self, closure):
        group = self.param_groups[0]
        lr = float(group["lr"])
        max_iter = group["max_iter"]
        max_eval = group["max_eval"]
        tolerance_grad = group["tolerance_grad"]
        tolerance_change = group["tolerance_change"]
        line_search_fn = group["line_search_fn"]
        history_size = group["history_size"]
        F = self._dtype.type

        state = self.state[self._params[0]]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)

        orig_loss = self._evaluate(closure)
        loss = float(orig_loss)
        current_evals = 1
        state["func_evals"] += 1
        flat_grad = self._gather_flat_grad()
        if F(_k.vector_norm(flat_grad, math.inf)) <= tolerance_grad:
            return orig_loss

        hist = state.get("_history")
        if hist is None or hist.history_size != history_size:
            hist = _History(self._numel, self._dtype, history_size)
            state["_history"] = hist
        d = state.get("d")
        t = state.get("t")
        H_diag = state.get("H_diag")
        prev_flat_grad = state.get("prev_flat_grad")
        prev_loss = state.get("prev_loss")
        if d is not None:
            d = d._arr.reshape(-1)
        if prev_flat_grad is not None:
            prev_flat_grad = prev_flat_grad._arr.reshape(-1)

        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1
            if state["n_iter"] == 1:
                hist.reset()
                H_diag = 1
            else:
                row = hist.take_row()
                ys, yy = _kl.push(
                    flat_grad, prev_flat_grad, d, float(t), hist.Y[row], hist.S[row]
                )
                ys = F(ys)
                if ys > 1e-10:
                    hist.keep(row, F(1.0) / ys)
                    H_diag = ys / F(yy)
                else:
                    hist.free.append(row)
            if d is None:
                d = np.empty(self._numel, self._dtype)
            order = np.array(hist.order, dtype=np.intp)
            h_one = isinstance(H_diag, int)
            _kl.two_loop(
                d, flat_grad, hist.S, hist.Y, hist.ro, hist.al, order,
                float(H_diag), h_one,
            )

            if prev_flat_grad is None:
                prev_flat_grad = flat_grad.copy()
            else:
                prev_flat_grad[...] = flat_grad
            prev_loss = loss

            if state["n_iter"] == 1:
                t = min(1.0, F(1.0) / F(_k.vector_norm(flat_grad, 1.0))) * lr
            else:
                t = lr

            gtd = F(_kl.dot(flat_grad, d))
            if gtd > -tolerance_change:
                break

            ls_func_evals = 0
            if line_search_fn is not None:
                if line_search_fn != "strong_wolfe":
                    raise RuntimeError("only 'strong_wolfe' is supported")
                x_init = self._flat_params()

                def obj_func(x, t, d):
                    return self._directional_evaluate(closure, x, t, d)

                loss, flat_grad, t, ls_func_evals = _strong_wolfe(
                    obj_func, x_init, t, d, loss, flat_grad, gtd, F,
                    max_ls=max_eval - current_evals,
                )
                self._add_grad(t, d)
                opt_cond = F(_k.vector_norm(flat_grad, math.inf)) <= tolerance_grad
            else:
                self._add_grad(t, d)
                opt_cond = False
                if n_iter != max_iter:
                    loss = float(self._evaluate(closure))
                    flat_grad = self._gather_flat_grad()
                    opt_cond = (
                        F(_k.vector_norm(flat_grad, math.inf)) <= tolerance_grad
                    )
                    ls_func_evals = 1

            current_evals += ls_func_evals
            state["func_evals"] += ls_func_evals

            if n_iter == max_iter:
                break
            if current_evals >= max_eval:
                break
            if opt_cond:
                break
            # max|t * d| is max|d| * |t|: rounding is monotonic
            if F(_k.vector_norm(d, math.inf)) * abs(F(t)) <= tolerance_change:
                break
            if abs(loss - prev_loss) < tolerance_change:
                break

        state["d"] = from_numpy(d)
        state["t"] = t
        state["H_diag"] = H_diag
        state["prev_flat_grad"] = from_numpy(prev_flat_grad)
        state["prev_loss"] = prev_loss
        return orig_loss

    # ------------------------------------------------------- state dicts

    def state_dict(self) -> dict[str, Any]:
        """As torch's: the history as lists ``old_dirs`` (y), ``old_stps`` (s),
        ``ro`` and ``al`` (0-d tensors, oldest first; ``al`` padded with None
        to ``history_size``)."""
        saved = self.state
        self.state = {p: self._export(st) for p, st in saved.items()}
        try:
            return super().state_dict()
        finally:
            self.state = saved

    def _export(self, st):
        st = {k: v for k, v in st.items()}
        hist = st.pop("_history", None)
        for key in ("t", "H_diag"):
            if isinstance(st.get(key), np.generic):
                st[key] = from_numpy(np.array(st[key]))
        if hist is not None:
            rows = hist.order
            st["old_dirs"] = [from_numpy(hist.Y[r].copy()) for r in rows]
            st["old_stps"] = [from_numpy(hist.S[r].copy()) for r in rows]
            st["ro"] = [from_numpy(np.array(hist.ro[r])) for r in rows]
            al = [from_numpy(np.array(hist.al[r])) for r in rows]
            st["al"] = al + [None] * (hist.history_size - len(al))
        return st

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Load a state in torch's layout (from :meth:`state_dict` or torch's)."""
        if not isinstance(state_dict, dict) or "state" not in state_dict:
            raise ValueError(
                "loaded state dict must be a dict with 'state' and 'param_groups'"
            )
        entries = dict(state_dict["state"])
        first = self.state_dict()["param_groups"][0]["params"][0]
        entry = entries.pop(first, None)
        if entries:
            raise ValueError(
                "loaded state dict has LBFGS state for a parameter other than the "
                "first"
            )
        history_size = (state_dict.get("param_groups") or [{}])[0].get(
            "history_size", self.param_groups[0]["history_size"]
        )
        imported = None if entry is None else self._import(entry, history_size)
        super().load_state_dict({"state": {}, "param_groups": state_dict["param_groups"]})
        if imported is not None:
            self.state[self._params[0]] = imported

    def _import(self, entry, history_size):
        dtype, n = self._dtype, self._numel
        F = dtype.type

        def vector(key):
            v = entry.get(key)
            if v is None:
                return None
            arr = np.array(v._arr if isinstance(v, Tensor) else v, dtype=dtype)
            if arr.shape != (n,):
                raise ValueError(
                    f"loaded state dict has a state {key!r} of shape {arr.shape}; "
                    f"LBFGS over {n} elements needs ({n},)"
                )
            return from_numpy(arr)

        def scalar(v):
            if isinstance(v, Tensor):
                return F(v._arr.reshape(()))
            return v

        st = {
            "func_evals": int(entry.get("func_evals", 0)),
            "n_iter": int(entry.get("n_iter", 0)),
        }
        for key in ("d", "prev_flat_grad"):
            if key in entry:
                st[key] = vector(key)
        for key in ("t", "H_diag", "prev_loss"):
            if key in entry:
                st[key] = scalar(entry[key])
        dirs = entry.get("old_dirs") or []
        stps = entry.get("old_stps") or []
        ros = entry.get("ro") or []
        als = entry.get("al") or []
        if not len(dirs) == len(stps) == len(ros):
            raise ValueError("loaded state dict has old_dirs, old_stps and ro of "
                             "different lengths")
        hist = _History(n, dtype, history_size)
        for i, (y, s, ro) in enumerate(zip(dirs, stps, ros)):
            row = hist.take_row()
            hist.Y[row] = np.asarray(y._arr, dtype).reshape(-1)
            hist.S[row] = np.asarray(s._arr, dtype).reshape(-1)
            a = als[i] if i < len(als) else None
            hist.al[row] = 0 if a is None else scalar(a)
            hist.keep(row, scalar(ro))
        st["_history"] = hist
        return st


def _cubic_interpolate(x1, f1, g1, x2, f2, g2, bounds=None):
    """The minimiser of the cubic through (x1, f1, g1) and (x2, f2, g2), clamped
    to ``bounds`` (default: the interval); the midpoint if it has none."""
    if bounds is not None:
        xmin_bound, xmax_bound = bounds
    else:
        xmin_bound, xmax_bound = (x1, x2) if x1 <= x2 else (x2, x1)
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1**2 - g1 * g2
    if d2_square >= 0:
        d2 = np.sqrt(d2_square) if isinstance(d2_square, np.generic) else (
            math.sqrt(d2_square)
        )
        if x1 <= x2:
            min_pos = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
        else:
            min_pos = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
        return min(max(min_pos, xmin_bound), xmax_bound)
    return (xmin_bound + xmax_bound) / 2.0


def _strong_wolfe(
    obj_func, x, t, d, f, g, gtd, F, c1=1e-4, c2=0.9, tolerance_change=1e-9, max_ls=25
):
    """A step length satisfying the strong Wolfe conditions (or the best
    found within ``max_ls`` evaluations): bracketing, then zoom by cubic
    interpolation.  Returns ``(f_new, g_new, t, evaluations)``."""
    d_norm = F(_k.vector_norm(d, math.inf))
    g = g.copy()
    f_new, g_new = obj_func(x, t, d)
    ls_func_evals = 1
    gtd_new = F(_kl.dot(g_new, d))

    t_prev, f_prev, g_prev, gtd_prev = 0, f, g, gtd
    done = False
    ls_iter = 0
    while ls_iter < max_ls:
        if f_new > (f + c1 * t * gtd) or (ls_iter > 1 and f_new >= f_prev):
            bracket = [t_prev, t]
            bracket_f = [f_prev, f_new]
            bracket_g = [g_prev, g_new.copy()]
            bracket_gtd = [gtd_prev, gtd_new]
            break
        if abs(gtd_new) <= -c2 * gtd:
            bracket, bracket_f, bracket_g = [t], [f_new], [g_new]
            done = True
            break
        if gtd_new >= 0:
            bracket = [t_prev, t]
            bracket_f = [f_prev, f_new]
            bracket_g = [g_prev, g_new.copy()]
            bracket_gtd = [gtd_prev, gtd_new]
            break
        # extrapolate
        min_step = t + 0.01 * (t - t_prev)
        max_step = t * 10
        tmp = t
        t = _cubic_interpolate(
            t_prev, f_prev, gtd_prev, t, f_new, gtd_new, bounds=(min_step, max_step)
        )
        t_prev, f_prev, g_prev, gtd_prev = tmp, f_new, g_new.copy(), gtd_new
        f_new, g_new = obj_func(x, t, d)
        ls_func_evals += 1
        gtd_new = F(_kl.dot(g_new, d))
        ls_iter += 1

    if ls_iter == max_ls:
        bracket, bracket_f, bracket_g = [0, t], [f, f_new], [g, g_new]

    # zoom
    insuf_progress = False
    low_pos, high_pos = (0, 1) if bracket_f[0] <= bracket_f[-1] else (1, 0)
    while not done and ls_iter < max_ls:
        if abs(bracket[1] - bracket[0]) * d_norm < tolerance_change:
            break
        t = _cubic_interpolate(
            bracket[0], bracket_f[0], bracket_gtd[0],
            bracket[1], bracket_f[1], bracket_gtd[1],
        )
        # keep away from the ends: an interpolation at a bound makes no progress
        eps = 0.1 * (max(bracket) - min(bracket))
        if min(max(bracket) - t, t - min(bracket)) < eps:
            if insuf_progress or t >= max(bracket) or t <= min(bracket):
                if abs(t - max(bracket)) < abs(t - min(bracket)):
                    t = max(bracket) - eps
                else:
                    t = min(bracket) + eps
                insuf_progress = False
            else:
                insuf_progress = True
        else:
            insuf_progress = False

        f_new, g_new = obj_func(x, t, d)
        ls_func_evals += 1
        gtd_new = F(_kl.dot(g_new, d))
        ls_iter += 1

        if f_new > (f + c1 * t * gtd) or f_new >= bracket_f[low_pos]:
            bracket[high_pos] = t
            bracket_f[high_pos] = f_new
            bracket_g[high_pos] = g_new.copy()
            bracket_gtd[high_pos] = gtd_new
            low_pos, high_pos = (0, 1) if bracket_f[0] <= bracket_f[1] else (1, 0)
        else:
            if abs(gtd_new) <= -c2 * gtd:
                done = True
            elif gtd_new * (bracket[high_pos] - bracket[low_pos]) >= 0:
                bracket[high_pos] = bracket[low_pos]
                bracket_f[high_pos] = bracket_f[low_pos]
                bracket_g[high_pos] = bracket_g[low_pos]
                bracket_gtd[high_pos] = bracket_gtd[low_pos]
            bracket[low_pos] = t
            bracket_f[low_pos] = f_new
            bracket_g[low_pos] = g_new.copy()
            bracket_gtd[low_pos] = gtd_new

    return bracket_f[low_pos], bracket_g[low_pos], bracket[low_pos], ls_func_evals
