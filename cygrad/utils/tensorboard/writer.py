"""``SummaryWriter``: TensorBoard event files written without TensorFlow or
the ``tensorboard`` package (``pip install tensorboard`` only to view them:
``tensorboard --logdir runs``).

Scalars, groups of scalars, text, histograms and images, each with a
global step and a wall time, as torch's writer stores them; events are
buffered and written every ``max_queue`` events, every ``flush_secs``
seconds (checked at each event), on ``flush()`` and on ``close()``.
"""

import datetime
import os
import socket
import time
import warnings

import numpy as np

from cygrad._tensor import Tensor

from . import _records as R

__all__ = ["FileWriter", "SummaryWriter"]

_uid = 0


def _numpy(x):
    if isinstance(x, Tensor):
        return x.detach().numpy()
    return np.asarray(x)


def _scalar(x, what):
    arr = _numpy(x)
    if arr.size != 1:
        raise ValueError(f"{what}: the scalar value must have one element, got shape "
                         f"{tuple(arr.shape)}")
    return float(arr.reshape(()))


class FileWriter:
    """One event file in ``log_dir``: records buffered, then appended."""

    def __init__(self, log_dir, max_queue=10, flush_secs=120, filename_suffix=""):
        global _uid
        os.makedirs(log_dir, exist_ok=True)
        _uid += 1
        name = (f"events.out.tfevents.{int(time.time()):010d}."
                f"{socket.gethostname()}.{os.getpid()}.{_uid}{filename_suffix}")
        self.path = os.path.join(log_dir, name)
        self._file = open(self.path, "wb")
        self._pending = []
        self._max_queue = max(int(max_queue), 1)
        self._flush_secs = flush_secs
        self._last_flush = time.monotonic()
        self.add_event(R.event(time.time(), file_version="brain.Event:2"))
        self.flush()

    def get_logdir(self):
        return os.path.dirname(self.path)

    def add_event(self, data):
        if self._file is None:
            raise RuntimeError("SummaryWriter: the writer is closed")
        self._pending.append(R.record(data))
        if (len(self._pending) >= self._max_queue
                or time.monotonic() - self._last_flush >= self._flush_secs):
            self.flush()

    def add_summary(self, value, step, walltime):
        wall = time.time() if walltime is None else walltime
        self.add_event(R.event(wall, step, R.summary(value)))

    def flush(self):
        if self._file is None:
            return
        self._file.write(b"".join(self._pending))
        self._file.flush()
        self._pending = []
        self._last_flush = time.monotonic()

    def close(self):
        if self._file is not None:
            self.flush()
            self._file.close()
            self._file = None


def _hwc(img, dataformats):
    """``img`` as (H, W, C) uint8: floats are scaled from [0, 1]."""
    arr = _numpy(img)
    fmt = dataformats.upper()
    if sorted(fmt) not in (sorted("CHW"), sorted("HW")) or arr.ndim != len(fmt):
        raise ValueError(f"add_image: dataformats {dataformats!r} does not describe an "
                         f"image of shape {tuple(arr.shape)} (use CHW, HWC or HW)")
    if "C" not in fmt:
        arr, fmt = arr[..., None], fmt + "C"
    arr = np.transpose(arr, [fmt.index(a) for a in "HWC"])
    if arr.shape[2] not in (1, 3, 4):
        raise ValueError(f"add_image: {arr.shape[2]} channels; expected 1, 3 or 4")
    if arr.dtype != np.uint8:
        arr = np.clip(arr.astype(np.float64) * 255.0 + 0.5, 0, 255).astype(np.uint8)
    return np.ascontiguousarray(arr)


def _tensorflow_bins():
    pos = [1e-12]
    while pos[-1] < 1e20:
        pos.append(pos[-1] * 1.1)
    return [-v for v in reversed(pos)] + [0.0] + pos


class SummaryWriter:
    """torch.utils.tensorboard.SummaryWriter: ``log_dir`` defaults to
    ``runs/<Mon>DD_HH-MM-SS_<host><comment>``."""

    def __init__(self, log_dir=None, comment="", purge_step=None, max_queue=10,
                 flush_secs=120, filename_suffix=""):
        if log_dir is None:
            stamp = datetime.datetime.now().strftime("%b%d_%H-%M-%S")
            log_dir = os.path.join("runs", f"{stamp}_{socket.gethostname()}{comment}")
        self.log_dir = os.fspath(log_dir)
        self._opts = (max_queue, flush_secs, filename_suffix)
        self.file_writer = FileWriter(self.log_dir, *self._opts)
        self.all_writers = {self.log_dir: self.file_writer}
        if purge_step is not None:
            # SessionLog{status: START} at purge_step: TensorBoard drops the
            # events of a crashed run from that step on
            self.file_writer.add_event(R.event(time.time(), purge_step) + R.f_bytes(
                6, R.f_varint(1, 1)))

    def get_logdir(self):
        return self.log_dir

    def _writer(self):
        if self.file_writer is None:
            raise RuntimeError("SummaryWriter: the writer is closed")
        return self.file_writer

    def add_scalar(self, tag, scalar_value, global_step=None, walltime=None,
                   new_style=False, double_precision=False):
        self._writer().add_summary(R.scalar_value(tag, _scalar(scalar_value,
                                                               "add_scalar")),
                                   global_step, walltime)

    def add_scalars(self, main_tag, tag_scalar_dict, global_step=None, walltime=None):
        """Each scalar in its own run ``log_dir/<main_tag>_<tag>``, all under
        ``main_tag``, so TensorBoard draws them on one chart."""
        wall = time.time() if walltime is None else walltime
        for tag, value in tag_scalar_dict.items():
            path = os.path.join(self.log_dir, f"{main_tag.replace('/', '_')}_{tag}")
            writer = self.all_writers.get(path)
            if writer is None:
                writer = self.all_writers[path] = FileWriter(path, *self._opts)
            writer.add_summary(R.scalar_value(main_tag, _scalar(value, "add_scalars")),
                               global_step, wall)

    def add_text(self, tag, text_string, global_step=None, walltime=None):
        self._writer().add_summary(R.text_value(tag, text_string), global_step,
                                   walltime)

    def add_histogram(self, tag, values, global_step=None, bins="tensorflow",
                      walltime=None, max_bins=None):
        """Counts of ``values`` in ``bins`` (an int, NumPy's bin rules, or
        ``"tensorflow"``'s exponential buckets); empty buckets at either end
        are dropped."""
        arr = _numpy(values).astype(np.float64).reshape(-1)
        if arr.size == 0:
            raise ValueError("add_histogram: the input has no element")
        if bins == "tensorflow":
            bins = _tensorflow_bins()
        counts, edges = np.histogram(arr, bins=bins)
        if max_bins is not None and counts.size > max_bins:
            # neighbouring buckets merged, ``group`` at a time
            group = -(-counts.size // int(max_bins))
            starts = np.arange(0, counts.size, group)
            counts = np.add.reduceat(counts, starts)
            edges = edges[np.append(starts, edges.size - 1)]
        nz = np.nonzero(counts)[0]
        lo, hi = (nz[0], nz[-1] + 1) if nz.size else (0, counts.size)
        self._writer().add_summary(R.histogram_value(
            tag, arr.min(), arr.max(), arr.size, arr.sum(), float(np.dot(arr, arr)),
            edges[lo + 1:hi + 1], counts[lo:hi]), global_step, walltime)

    def add_image(self, tag, img_tensor, global_step=None, walltime=None,
                  dataformats="CHW"):
        pixels = _hwc(img_tensor, dataformats)
        h, w, c = pixels.shape
        self._writer().add_summary(R.image_value(tag, h, w, c, R.png(pixels)),
                                   global_step, walltime)

    def add_graph(self, model, input_to_model=None, verbose=False, use_strict_trace=True):
        """Writes no graph, and warns so: cygrad has no tracer to draw a
        module's graph from (``cygrad.viz`` draws an autograd graph)."""
        warnings.warn("SummaryWriter.add_graph: cygrad has no graph tracer, so no "
                      "graph is written (cygrad.viz draws an autograd graph)",
                      UserWarning, stacklevel=2)

    def flush(self):
        for w in self.all_writers.values():
            w.flush()

    def close(self):
        for w in self.all_writers.values():
            w.close()
        self.file_writer = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False
