"""Exercise 4: a custom autograd function by extending ``cygrad.autograd.Function``.

``SoftClip(x) = c * tanh(x / c)`` with its own backward,
``grad_x = grad * (1 - tanh(x / c)**2)``.  The script checks the gradient
against finite differences with ``cygrad.autograd.gradcheck`` and uses the
function inside a small model.

    python examples/custom_function.py
"""

from typing import Any

import cygrad
from cygrad import optim
from cygrad.autograd import Function, gradcheck


class SoftClip(Function):
    """``y = c * tanh(x / c)``;  grad_x = grad * (1 - (y / c)**2)."""

    @staticmethod
    def forward(ctx: Any, x: cygrad.Tensor, c: float) -> cygrad.Tensor:
        y = (x / c).tanh() * c
        ctx.save_for_backward(y)
        ctx.c = c
        return y

    @staticmethod
    def backward(ctx: Any, grad: cygrad.Tensor) -> tuple[cygrad.Tensor, None]:
        (y,) = ctx.saved_tensors
        return grad * (1 - (y / ctx.c) ** 2), None


def soft_clip(x: cygrad.Tensor, c: float = 2.0) -> cygrad.Tensor:
    y: cygrad.Tensor = SoftClip.apply(x, c)
    return y


x = cygrad.tensor([-5.0, -1.0, 0.0, 0.5, 3.0], requires_grad=True)
y = soft_clip(x)
y.sum().backward()
print("x          =", x.detach().numpy())
print("soft_clip  =", y.detach().numpy().round(4))
print("d/dx       =", x.grad.numpy().round(4))

x64 = cygrad.randn(6, dtype=cygrad.float64).requires_grad_()
ok = gradcheck(lambda t: soft_clip(t, 1.5), (x64,))
print(f"gradcheck against finite differences: {ok}")

# the custom op inside a training loop: fit soft_clip(a * x) to a target
cygrad.manual_seed(0)
a = cygrad.tensor([0.1], requires_grad=True)
xs = cygrad.linspace(-3, 3, 50)
target = 2.0 * (0.8 * xs / 2.0).tanh()
opt = optim.SGD([a], lr=0.5)
for _ in range(200):
    loss = ((soft_clip(a * xs) - target) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
print(f"learned scale a = {a.item():.4f} (true 0.8)")
