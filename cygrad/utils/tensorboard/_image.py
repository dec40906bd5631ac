"""Values to NumPy, images to 8-bit (H, W, C) arrays, and PNG files.

Images follow torch's writer pixel for pixel: any layout string is turned
into (H, W, C); a gray image becomes three equal channels; a batch becomes
one grid of at most eight columns; floats are taken as [0, 1] and scaled by
255, ``uint8`` as [0, 255], and both are clipped and then truncated to
``uint8`` (truncated, not rounded: 0.5 gives 127, as in torch).

PNG is encoded here with ``zlib`` (torch asks Pillow), so logging images
needs nothing beyond NumPy and tensorboard. Each row is stored with filter
0 (none): the compressed bytes differ from Pillow's, the decoded pixels do
not.
"""

import math
import struct
import zlib

import numpy as np

from cygrad._kernels.engine import TensorBase

__all__ = ["figure_to_image", "make_grid", "png", "to_hwc", "to_numpy", "to_uint8"]


def to_numpy(value):
    """A cygrad tensor, NumPy array or number as an ndarray (a number as
    shape (1,)); anything else raises NotImplementedError, as in torch."""
    if isinstance(value, np.ndarray):
        return value
    if np.isscalar(value):
        return np.array([value])
    if isinstance(value, TensorBase):
        return value.detach().numpy()
    raise NotImplementedError(
        f"expected a cygrad Tensor, a NumPy array or a number, got "
        f"{type(value).__name__}")


def make_grid(images, ncols=8):
    """(N, C, H, W) images with C in (1, 3) as one (3, rows*H, cols*W) canvas,
    filled row by row; cells past the last image stay 0."""
    if images.ndim != 4 or images.shape[1] not in (1, 3):
        raise AssertionError(f"a batch of images must be (N, 1, H, W) or "
                             f"(N, 3, H, W), got shape {tuple(images.shape)}")
    if images.shape[1] == 1:
        images = np.concatenate([images] * 3, axis=1)
    n, _, h, w = images.shape
    cols = min(n, ncols)
    rows = math.ceil(n / cols) if n else 0
    canvas = np.zeros((3, h * rows, w * cols), dtype=images.dtype)
    for i in range(n):
        r, c = divmod(i, cols)
        canvas[:, r * h:(r + 1) * h, c * w:(c + 1) * w] = images[i]
    return canvas


def to_hwc(arr, dataformats):
    """``arr`` laid out as ``dataformats`` (NCHW, CHW, HWC, HW, WH, ...) as
    (H, W, C) with C of 3, or 4 when an image already has four channels."""
    fmt = dataformats.upper()
    if len(set(fmt)) != len(fmt) or not set(fmt) <= set("NCHW"):
        raise AssertionError(f"dataformats {dataformats!r}: each of N, C, H, W "
                             f"may appear at most once")
    if arr.ndim != len(fmt):
        raise AssertionError(f"an image of shape {tuple(arr.shape)} does not match "
                             f"dataformats {dataformats!r}")
    if len(fmt) == 4:
        grid = make_grid(arr.transpose([fmt.index(a) for a in "NCHW"]))
        return grid.transpose(1, 2, 0)
    if len(fmt) == 3:
        hwc = arr.transpose([fmt.index(a) for a in "HWC"])
        return np.concatenate([hwc] * 3, axis=2) if hwc.shape[2] == 1 else hwc
    if len(fmt) == 2:
        hw = arr.transpose([fmt.index(a) for a in "HW"])
        return np.stack([hw] * 3, axis=2)
    raise AssertionError(f"dataformats {dataformats!r}: expected 2, 3 or 4 axes")


def to_uint8(arr):
    """[0, 1] floats (or [0, 255] ``uint8``) as ``uint8``: scaled in float32,
    clipped, truncated."""
    scale = 1 if arr.dtype == np.uint8 else 255
    return (arr.astype(np.float32) * scale).clip(0, 255).astype(np.uint8)


def _chunk(kind, data):
    crc = zlib.crc32(kind + data) & 0xFFFFFFFF
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)


def png(pixels):
    """PNG bytes of an (H, W, C) ``uint8`` array, C = 1 (gray), 2 (gray and
    alpha), 3 (RGB) or 4 (RGBA)."""
    if pixels.dtype != np.uint8 or pixels.ndim != 3:
        raise TypeError(f"png: expected an (H, W, C) uint8 array, got "
                        f"{pixels.dtype} of shape {tuple(pixels.shape)}")
    h, w, c = pixels.shape
    color = {1: 0, 2: 4, 3: 2, 4: 6}.get(c)
    if color is None:
        raise TypeError(f"png: an image has 1, 2, 3 or 4 channels, got {c}")
    rows = np.zeros((h, 1 + w * c), dtype=np.uint8)     # column 0: filter 0
    rows[:, 1:] = np.ascontiguousarray(pixels).reshape(h, w * c)
    header = struct.pack(">IIBBBBB", w, h, 8, color, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", header)
            + _chunk(b"IDAT", zlib.compress(rows.tobytes(), 6))
            + _chunk(b"IEND", b""))


def figure_to_image(figures, close=True):
    """A matplotlib figure rendered by Agg as a (3, H, W) ``uint8`` array, or a
    list of figures as (N, 3, H, W); ``close`` closes each figure after."""
    import matplotlib.pyplot as plt
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    def render(figure):
        canvas = FigureCanvasAgg(figure)
        canvas.draw()
        w, h = figure.canvas.get_width_height()
        rgba = np.frombuffer(canvas.buffer_rgba(), dtype=np.uint8).reshape(h, w, 4)
        if close:
            plt.close(figure)
        return np.moveaxis(rgba[:, :, :3], 2, 0)

    if isinstance(figures, list):
        return np.stack([render(f) for f in figures])
    return render(figures)
