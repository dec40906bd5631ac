"""The files TensorBoard's projector reads for ``add_embedding``.

Each embedding goes to ``<log_dir>/<step, 5 digits>/<tag>/``: ``tensors.tsv``
(one row per point, tab-separated), ``metadata.tsv`` (one label per row, or
a header line and tab-separated columns), ``sprite.png`` (the label images
in a square grid) and one ``projector_config.pbtxt`` in ``log_dir`` listing
every embedding the writer logged. The layout and the text are torch's, so
the projector shows either writer's files alike.

Files go through TensorBoard's ``gfile`` layer, as its event files do, so
a log directory elsewhere than the local disk works when tensorboard
supports it.
"""

import math

import numpy as np
from google.protobuf import text_format
from tensorboard.compat import tf
from tensorboard.plugins.projector.projector_config_pb2 import EmbeddingInfo

from cygrad.utils.tensorboard._image import make_grid, png, to_numpy

__all__ = ["embedding_info", "write_config", "write_embedding"]


def _join(a, b):
    return tf.io.gfile.get_filesystem(a).join(a, b)


def _write(path, text):
    with tf.io.gfile.GFile(path, "wb") as f:
        f.write(text.encode("utf-8") if isinstance(text, str) else text)


def _sprite(label_img):
    """(N, C, H, W) images in [0, 1] as PNG bytes of a square grid of
    ceil(sqrt(N)) columns, its empty cells black."""
    images = to_numpy(label_img)
    cols = math.ceil(images.shape[0] ** 0.5)
    grid = make_grid(images, ncols=cols).transpose(1, 2, 0)
    side = grid.shape[1]
    square = np.zeros((side, side, 3))
    square[:grid.shape[0]] = grid
    return png(np.uint8((square * 255).clip(0, 255)))


def write_embedding(save_path, mat, metadata=None, label_img=None,
                    metadata_header=None):
    """The tensor, label and sprite files of one embedding in ``save_path``."""
    if metadata is not None:
        if metadata_header:
            if len(metadata_header) != len(metadata[0]):
                raise AssertionError(f"add_embedding: {len(metadata_header)} header "
                                     f"names for {len(metadata[0])} metadata columns")
            lines = ["\t".join(str(e) for e in row)
                     for row in [metadata_header, *metadata]]
        else:
            lines = [str(x) for x in metadata]
        _write(_join(save_path, "metadata.tsv"), "\n".join(lines) + "\n")
    if label_img is not None:
        _write(_join(save_path, "sprite.png"), _sprite(label_img))
    rows = ("\t".join(str(v) for v in row) + "\n" for row in mat.tolist())
    _write(_join(save_path, "tensors.tsv"), "".join(rows))


def embedding_info(metadata, label_img, subdir, global_step, tag):
    """The projector config's entry for one embedding (paths relative to the
    log directory)."""
    info = EmbeddingInfo(tensor_name=f"{tag}:{str(global_step).zfill(5)}",
                         tensor_path=_join(subdir, "tensors.tsv"))
    if metadata is not None:
        info.metadata_path = _join(subdir, "metadata.tsv")
    if label_img is not None:
        info.sprite.image_path = _join(subdir, "sprite.png")
        h, w = label_img.shape[2], label_img.shape[3]
        info.sprite.single_image_dim.extend([int(w), int(h)])
    return info


def write_config(log_dir, config):
    """``projector_config.pbtxt``: the ProjectorConfig as protobuf text."""
    _write(_join(log_dir, "projector_config.pbtxt"),
           text_format.MessageToString(config))
