"""PyTorch's "Automatic differentiation" tutorial idea, on a tiny classifier.

The tutorial builds the simplest one-layer network (an input, weights and a
bias that require gradients, a logit, a binary cross-entropy loss), looks at
the ``grad_fn`` of each result, calls ``backward()`` and reads the
gradients, then shows how to stop tracking (``no_grad``, ``detach``), what a
vector-Jacobian product is when the output is not a scalar, and that
gradients add up over calls until they are zeroed.  This script does the
same with its own numbers and checks the gradients against their closed
forms.

Only the import line differs from the same program under PyTorch.

    python examples/autograd_basics.py
"""

import cygrad as torch
import cygrad.nn.functional as F

torch.manual_seed(3)

# --- a one-layer network ----------------------------------------------------
x = torch.tensor([0.5, -1.0, 2.0, 0.0, 1.5])      # one sample, five features
target = torch.tensor([1.0, 0.0, 1.0])            # three yes/no labels
w = torch.randn(5, 3, requires_grad=True)
b = torch.randn(3, requires_grad=True)
logits = torch.matmul(x, w) + b
loss = F.binary_cross_entropy_with_logits(logits, target)

print(f"the logits were made by {logits.grad_fn.name()}")
print(f"the loss was made by {loss.grad_fn.name()}")

loss.backward()
print(f"dloss/dw:\n{w.grad}\ndloss/db: {b.grad}")

# closed form: d mean(BCE(sigmoid(z), t)) / dz = (sigmoid(z) - t) / 3
dz = (torch.sigmoid(logits.detach()) - target) / 3
print("matches the closed form:",
      torch.allclose(b.grad, dz) and torch.allclose(w.grad, torch.outer(x, dz)))

# --- turning tracking off ---------------------------------------------------
z = torch.matmul(x, w) + b
print(f"\ntracked: {z.requires_grad}")
with torch.no_grad():
    z = torch.matmul(x, w) + b
print(f"inside no_grad: {z.requires_grad}")
z = (torch.matmul(x, w) + b).detach()
print(f"detached: {z.requires_grad}")

# --- a non-scalar output: the vector-Jacobian product -----------------------
inp = torch.eye(4, 5, requires_grad=True)
out = (inp + 1).pow(2).t()
out.backward(torch.ones_like(out), retain_graph=True)
print(f"\nfirst call, grad of inp:\n{inp.grad}")
out.backward(torch.ones_like(out), retain_graph=True)
print(f"second call, gradients add up:\n{inp.grad}")
inp.grad.zero_()
out.backward(torch.ones_like(out), retain_graph=True)
print(f"after zeroing, one call again:\n{inp.grad}")
print("equals 2 * (inp + 1):", torch.equal(inp.grad, 2 * (inp.detach() + 1)))
