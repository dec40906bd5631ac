"""The autograd tutorial's linear regression, ported with ``import cygrad as torch``.

Only the import line differs from the PyTorch program.  The data come from
torch's random stream (the same seed gives the same data); with lr 0.01
the slope is near 2 after 200 epochs while the intercept is still converging
(``--epochs 5000`` reaches the least-squares fit).

    python examples/linear_regression.py [--epochs N] [--plot]
"""

import argparse

import cygrad as torch

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--epochs", type=int, default=200)
parser.add_argument("--plot", action="store_true", help="show the fit and loss curve")
args = parser.parse_args()

# Generate synthetic data
torch.manual_seed(42)
X = torch.rand(100, 1) * 10
y = 2 * X + 1 + torch.randn(100, 1)

# Initialize parameters with gradients
w = torch.tensor([0.0], requires_grad=True)
b = torch.tensor([0.0], requires_grad=True)

# Hyperparameters
learning_rate = 0.01
n_epochs = args.epochs

# Lists to store losses for plotting
losses = []

# Training loop
for epoch in range(n_epochs):
    # Forward pass
    y_pred = w * X + b
    loss = ((y_pred - y) ** 2).mean()
    losses.append(loss.item())

    # Backward pass
    loss.backward()

    # Update parameters (gradient descent)
    with torch.no_grad():
        w -= learning_rate * w.grad
        b -= learning_rate * b.grad

        # Zero gradients after each update
        w.grad.zero_()
        b.grad.zero_()

    # Print progress
    if epoch % 20 == 0:
        print(
            f"Epoch {epoch}: w = {w.item():.4f}, b = {b.item():.4f}, "
            f"loss = {loss.item():.4f}"
        )

print(f"Final parameters: w = {w.item():.4f}, b = {b.item():.4f}")

if args.plot:
    import matplotlib.pyplot as plt

    plt.figure(figsize=(10, 6))
    plt.scatter(X.numpy(), y.numpy(), label="Data")
    x_range = torch.linspace(0, 10, 100).reshape(-1, 1)
    y_pred = w * x_range + b
    plt.plot(
        x_range.numpy(), y_pred.detach().numpy(), "r-", linewidth=2, label="Fitted line"
    )
    plt.title("Linear Regression using cygrad Autograd")
    plt.xlabel("X")
    plt.ylabel("y")
    plt.legend()

    plt.figure(figsize=(10, 6))
    plt.plot(losses)
    plt.title("Loss vs. Epoch")
    plt.xlabel("Epoch")
    plt.ylabel("MSE Loss")
    plt.yscale("log")
    plt.grid(True)
    plt.show()
