"""PyTorch's "Tensors" tutorial idea, step by step, on small made-up numbers.

The tutorial walks through making tensors (from lists, from NumPy, like
another tensor, from a shape), reading their attributes, moving them to an
accelerator when there is one, indexing and slicing, joining, arithmetic
(matrix products and elementwise products, with and without ``out=``),
turning a one-element tensor into a Python number, in-place operations, and
sharing memory with NumPy.  This script does the same things in its own
order and with its own data, printing what each step gives.

Only the import line differs from the same program under PyTorch.

    python examples/tensors_basics.py
"""

import numpy as np

import cygrad as torch

# --- making tensors ---------------------------------------------------------
readings = [[3, 1], [4, 1], [5, 9]]
t_data = torch.tensor(readings)
print(f"from a list of lists:\n{t_data}\n")

grid = np.array(readings)
t_np = torch.from_numpy(grid)
print(f"from a NumPy array (same values, dtype {t_np.dtype}):\n{t_np}\n")

t_ones = torch.ones_like(t_data)                      # keeps shape and dtype
print(f"ones like it:\n{t_ones}\n")
torch.manual_seed(7)
t_rand = torch.rand_like(t_data, dtype=torch.float)   # same shape, new dtype
print(f"random like it, as float:\n{t_rand}\n")

shape = (2, 4)
for maker in (torch.rand, torch.ones, torch.zeros):
    print(f"{maker.__name__}{shape}:\n{maker(shape)}\n")

# --- attributes -------------------------------------------------------------
t = torch.rand(3, 5)
print(f"shape {t.shape}, dtype {t.dtype}, stored on {t.device}")

# the usual accelerator check: cygrad runs on the CPU, so this stays on "cpu"
device = "cuda" if torch.cuda.is_available() else "cpu"
t = t.to(device)
print(f"after .to({device!r}): on {t.device}\n")

# --- indexing and slicing ---------------------------------------------------
m = torch.arange(1.0, 13.0).reshape(3, 4)
print(f"m:\n{m}")
print(f"first row {m[0]}, first column {m[:, 0]}, last column {m[..., -1]}")
m[:, 2] = 0
print(f"third column zeroed:\n{m}\n")

# --- joining ----------------------------------------------------------------
side_by_side = torch.cat([m, m], dim=1)
stacked = torch.stack([m[0], m[1]])
print(f"cat along dim 1 has shape {tuple(side_by_side.shape)}, "
      f"stack of two rows has shape {tuple(stacked.shape)}\n")

# --- arithmetic -------------------------------------------------------------
# three spellings of the same matrix product
p1 = m @ m.T
p2 = m.matmul(m.T)
p3 = torch.zeros_like(p1)
torch.matmul(m, m.T, out=p3)
print(f"m @ m.T:\n{p1}\nall three agree: {bool((p1 == p2).all() and (p2 == p3).all())}\n")

# three spellings of the same elementwise product
e1 = m * m
e2 = m.mul(m)
e3 = torch.empty_like(m)
torch.mul(m, m, out=e3)
print(f"m * m:\n{e1}\nall three agree: {torch.equal(e1, e2) and torch.equal(e2, e3)}\n")

# --- one-element tensors and in-place operations ----------------------------
total = m.sum()
print(f"sum as a tensor {total}, as a Python {type(total.item()).__name__} "
      f"{total.item()}")
m.add_(10)                      # the trailing underscore: changes m itself
print(f"after m.add_(10):\n{m}\n")

# --- sharing memory with NumPy ----------------------------------------------
counts = torch.ones(4)
arr = counts.numpy()
counts.add_(2)
print(f"tensor {counts} and its NumPy view {arr} changed together")
arr2 = np.zeros(3)
linked = torch.from_numpy(arr2)
np.add(arr2, 5, out=arr2)
print(f"NumPy array {arr2} and the tensor made from it {linked} changed together")
