"""Calling a module that has hooks: forward pre-hooks, forward hooks, and
the full backward (pre-)hooks.

The backward hooks work as torch's: the module's tensor inputs and its
outputs each pass through one identity node.  The output node's backward
sees every output gradient at once (backward pre-hooks may replace them);
the input node's backward sees every input gradient at once and calls
``hook(module, grad_input, grad_output)``, whose result may replace them.
When no input requires grad, the hooks run at the output node with
``grad_input`` all None.
"""

import warnings

from cygrad._tensor import Tensor
from cygrad.autograd.function import Function
from cygrad.autograd.grad_mode import is_grad_enabled
from cygrad.creation import from_numpy

__all__ = ["call_with_hooks"]


def call_with_hooks(module, args, kwargs):
    """``module.forward(*args, **kwargs)`` with every registered hook run."""
    with_kwargs = module._forward_pre_hooks_with_kwargs
    for hid, hook in list(module._forward_pre_hooks.items()):
        if hid in with_kwargs:
            res = hook(module, args, kwargs)
            if res is not None:
                if not (isinstance(res, tuple) and len(res) == 2):
                    raise RuntimeError(
                        "forward pre-hook must return None or a tuple of (new_args, "
                        f"new_kwargs), but got {res}.")
                args, kwargs = res
        else:
            res = hook(module, args)
            if res is not None:
                args = res if isinstance(res, tuple) else (res,)
    state = None
    if (module._backward_hooks or module._backward_pre_hooks) and is_grad_enabled():
        state = _BackwardState(module)
        args = state.wrap_inputs(args)
    try:
        out = module.forward(*args, **kwargs)
    except Exception:
        always = module._forward_hooks_always_called
        for hid, hook in list(module._forward_hooks.items()):
            if hid in always:
                _forward_hook(module, hid, hook, args, kwargs, None)
        raise
    for hid, hook in list(module._forward_hooks.items()):
        res = _forward_hook(module, hid, hook, args, kwargs, out)
        if res is not None:
            out = res
    if state is not None:
        out = state.wrap_outputs(out)
    return out


def _forward_hook(module, hid, hook, args, kwargs, out):
    if hid in module._forward_hooks_with_kwargs:
        return hook(module, args, kwargs, out)
    return hook(module, args, out)


class _BackwardHook(Function):
    """Identity on the tensors; its backward hands their gradients to the
    module's hooks (``side`` is "in" or "out")."""

    _node_name = "BackwardHookFunctionBackward"

    @staticmethod
    def forward(ctx, state, side, *tensors):
        ctx.state, ctx.side = state, side
        return tuple(from_numpy(t._arr) for t in tensors)

    @staticmethod
    def backward(ctx, *grads):
        if ctx.side == "out":
            grads = ctx.state.on_outputs(grads)
        else:
            grads = ctx.state.on_inputs(grads)
        return (None, None) + tuple(grads)


class _BackwardState:
    def __init__(self, module):
        self.module = module
        self.n_inputs = 0
        self.input_slots = ()     # positions (among tensor args) that require grad
        self.grad_outputs = None

    def wrap_inputs(self, args):
        tensors = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        self.n_inputs = len(tensors)
        need = [i for i in tensors if args[i].requires_grad]
        self.input_slots = tuple(tensors.index(i) for i in need)
        if not need:
            return args
        wrapped = _BackwardHook.apply(self, "in", *[args[i] for i in need])
        args = list(args)
        for i, w in zip(need, wrapped):
            args[i] = w
        return tuple(args)

    def wrap_outputs(self, out):
        single = isinstance(out, Tensor)
        items = [out] if single else list(out) if isinstance(out, (tuple, list)) else None
        if items is None:
            return out
        need = [i for i, o in enumerate(items) if isinstance(o, Tensor)
                and o.requires_grad]
        if not need:
            return out
        wrapped = _BackwardHook.apply(self, "out", *[items[i] for i in need])
        for i, w in zip(need, wrapped):
            items[i] = w
        if single:
            return items[0]
        return type(out)(items)

    def on_outputs(self, grads):
        m = self.module
        for hook in list(m._backward_pre_hooks.values()):
            res = hook(m, grads)
            if res is not None:
                res = res if isinstance(res, tuple) else (res,)
                if len(res) != len(grads):
                    raise RuntimeError(
                        f"Backward pre hook returned an invalid number of grad_output, "
                        f"got {len(res)}, but expected {len(grads)}")
                grads = res
        self.grad_outputs = grads
        if not self.input_slots and m._backward_hooks:
            warnings.warn(
                "Full backward hook is firing when gradients are computed with "
                "respect to module outputs since no inputs require gradients. See "
                "https://docs.pytorch.org/docs/main/generated/torch.nn.Module.html"
                "#torch.nn.Module.register_full_backward_hook for more details.",
                UserWarning, stacklevel=2)
            self._call_hooks((None,) * self.n_inputs)
        return grads

    def on_inputs(self, grads):
        full = [None] * self.n_inputs
        for slot, g in zip(self.input_slots, grads):
            full[slot] = g
        full = self._call_hooks(tuple(full))
        return tuple(full[slot] for slot in self.input_slots)

    def _call_hooks(self, grad_input):
        m = self.module
        for hook in list(m._backward_hooks.values()):
            res = hook(m, grad_input, self.grad_outputs)
            if res is not None:
                res = res if isinstance(res, tuple) else (res,)
                if len(res) != len(grad_input):
                    raise RuntimeError(
                        "Backward hook returned an invalid number of grad_input, got "
                        f"{len(res)}, but expected {len(grad_input)}")
                grad_input = res
        return grad_input
