"""PyTorch's "Datasets & DataLoaders" tutorial idea, on generated images.

The tutorial wraps FashionMNIST files in a custom ``Dataset`` and reads it
with a ``DataLoader``.  Here the pictures are drawn by NumPy (28x28 stripes,
checks and dots, with noise), so the script needs no download and runs in a
second; everything else is the tutorial's workflow: a ``Dataset`` subclass
with ``transform`` / ``target_transform``, indexing it by hand,
``random_split`` for a validation set, a shuffled ``DataLoader`` in batches
of 64, one batch with ``next(iter(...))``, whole epochs, and worker
processes that give exactly the batches of the main process.

Only the import line differs from the same program under PyTorch.

    python examples/data_loading.py [--workers N]
"""

import argparse
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import NDArray

import cygrad as torch

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--workers", type=int, default=2)
args = parser.parse_args()

LABELS = {0: "Horizontal stripes", 1: "Vertical stripes", 2: "Checks", 3: "Dots"}


def draw_images(n: int, seed: int) -> tuple[NDArray[np.uint8], NDArray[np.int64]]:
    """``n`` 28x28 uint8 pictures of the four kinds, and their labels."""
    rng = np.random.default_rng(seed)
    rows, cols = np.mgrid[0:28, 0:28]
    labels = rng.integers(0, 4, n)
    images = np.empty((n, 28, 28), np.uint8)
    for k, label in enumerate(labels):
        period = rng.integers(3, 7)
        if label == 0:
            ink = (rows // period) % 2 == 0
        elif label == 1:
            ink = (cols // period) % 2 == 0
        elif label == 2:
            ink = ((rows // period) + (cols // period)) % 2 == 0
        else:
            ink = (rows % period == 0) & (cols % period == 0)
        noise = rng.integers(0, 60, (28, 28))
        images[k] = np.clip(ink * 200 + noise, 0, 255)
    return images, labels


class GeneratedImages(torch.utils.data.Dataset[tuple[Any, Any]]):
    """The tutorial's CustomImageDataset, reading arrays instead of files."""

    def __init__(self, images: NDArray[np.uint8], labels: NDArray[np.int64],
                 transform: Callable[[NDArray[np.uint8]], Any] | None = None,
                 target_transform: Callable[[int], Any] | None = None) -> None:
        self.images = images
        self.labels = labels
        self.transform = transform
        self.target_transform = target_transform

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, idx: int) -> tuple[Any, Any]:
        image: Any = self.images[idx]
        label: Any = int(self.labels[idx])
        if self.transform:
            image = self.transform(image)
        if self.target_transform:
            label = self.target_transform(label)
        return image, label


def to_tensor(image: NDArray[np.uint8]) -> torch.Tensor:
    """Like torchvision's ToTensor: uint8 (H, W) -> float32 (1, H, W) in [0, 1]."""
    return torch.from_numpy(image.astype(np.float32) / 255.0).unsqueeze(0)


def one_hot(label: int) -> torch.Tensor:
    """The tutorial's target_transform: a label as a one-hot float vector."""
    target = torch.zeros(len(LABELS), dtype=torch.float)
    target[label] = 1.0
    return target


images, labels = draw_images(1200, seed=0)
full_data = GeneratedImages(images, labels, transform=to_tensor)
torch.manual_seed(0)
training_data, validation_data = torch.utils.data.random_split(full_data, [0.8, 0.2])
print(f"{len(full_data)} images: {len(training_data)} to train on, "
      f"{len(validation_data)} to validate")

# Index the dataset by hand, as the tutorial does before plotting a grid.
for _ in range(3):
    sample_idx = torch.randint(len(training_data), size=(1,)).item()
    img, label = training_data[sample_idx]
    print(f"sample {sample_idx:4d}: {LABELS[label]:18s} image {tuple(img.shape)}, "
          f"mean ink {img.mean().item():.3f}")

# Batches: 64 samples each, reshuffled at every epoch.
train_dataloader = torch.utils.data.DataLoader(training_data, batch_size=64,
                                               shuffle=True)
validation_dataloader = torch.utils.data.DataLoader(validation_data, batch_size=64)
train_features, train_labels = next(iter(train_dataloader))
print(f"Feature batch shape: {tuple(train_features.size())}")
print(f"Labels batch shape: {tuple(train_labels.size())}, dtype {train_labels.dtype}")

for epoch in range(2):
    seen, counts = 0, [0] * len(LABELS)
    first = None
    for features, batch_labels in train_dataloader:
        seen += len(batch_labels)
        for lab in batch_labels.tolist():
            counts[lab] += 1
        if first is None:
            first = batch_labels[:8].tolist()
    print(f"epoch {epoch}: {len(train_dataloader)} batches, {seen} samples, "
          f"per class {counts}, first labels {first}")

# The mean picture of each class over the validation set, from batches.
ink_sum = [0.0] * len(LABELS)
ink_n = [0] * len(LABELS)
for features, batch_labels in validation_dataloader:
    per_image = features.mean(dim=(1, 2, 3)).tolist()
    for ink, lab in zip(per_image, batch_labels.tolist()):
        ink_sum[lab] += ink
        ink_n[lab] += 1
for lab, name in LABELS.items():
    print(f"validation {name:18s} {ink_n[lab]:3d} images, mean ink "
          f"{ink_sum[lab] / max(ink_n[lab], 1):.3f}")

# One-hot targets through target_transform, and a default collate of them.
onehot_data = GeneratedImages(images[:10], labels[:10], transform=to_tensor,
                              target_transform=one_hot)
_, targets = next(iter(torch.utils.data.DataLoader(onehot_data, batch_size=10)))
print(f"one-hot targets {tuple(targets.shape)}, rows sum to "
      f"{sorted(set(targets.sum(1).tolist()))}")

# Worker processes read the same batches as the main process for one seed.
if args.workers > 0:
    def epoch_of(num_workers: int) -> list[tuple[float, Any]]:
        gen = torch.Generator().manual_seed(7)
        loader = torch.utils.data.DataLoader(training_data, batch_size=64,
                                             shuffle=True, generator=gen,
                                             num_workers=num_workers)
        return [(f.sum().item(), lab.tolist()) for f, lab in loader]

    same = epoch_of(0) == epoch_of(args.workers)
    print(f"{args.workers} workers give the batches of the main process: {same}")
