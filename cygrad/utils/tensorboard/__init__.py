"""``cygrad.utils.tensorboard``: ``SummaryWriter`` logs scalars, histograms,
images, text, hyperparameters, precision-recall curves, embeddings and the
autograd graph of a model to TensorBoard event files.

As torch's, it builds TensorBoard's own protocol buffers and writes them with
TensorBoard's event-file writer, so it needs the ``tensorboard`` package
(``pip install tensorboard`` or ``pip install "cygrad[tensorboard]"``).
``import cygrad`` does not import this subpackage: import it explicitly
(``from cygrad.utils.tensorboard import SummaryWriter``).
"""

try:
    import tensorboard as _tensorboard
except ImportError as err:
    raise ModuleNotFoundError(
        "cygrad.utils.tensorboard needs the tensorboard package, which is not "
        "installed: pip install tensorboard (or pip install "
        "\"cygrad[tensorboard]\")", name="tensorboard") from err


def _version_tuple(text):
    parts = []
    for piece in str(text).split(".")[:2]:
        digits = "".join(ch for ch in piece if ch.isdigit())
        parts.append(int(digits) if digits else 0)
    return tuple(parts)


# The writer and the plugin protocol buffers used here exist from 1.15 on,
# the same floor torch checks.
if _version_tuple(getattr(_tensorboard, "__version__", "0")) < (1, 15):
    raise ImportError("cygrad.utils.tensorboard needs tensorboard 1.15 or newer, "
                      f"found {getattr(_tensorboard, '__version__', 'unknown')}")

del _tensorboard

from tensorboard.summary.writer.record_writer import RecordWriter

from cygrad.utils.tensorboard.writer import FileWriter, SummaryWriter

__all__ = ["FileWriter", "RecordWriter", "SummaryWriter"]
