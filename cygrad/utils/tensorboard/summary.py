"""Builders of TensorBoard ``Summary`` protocol buffers, one per kind of
data, with the names and arguments of ``torch.utils.tensorboard.summary``
(scripts import ``hparams`` from it to log hyperparameters in their own run).

Each returns a ``tensorboard.compat.proto.summary_pb2.Summary`` laid out as
torch's, so that TensorBoard's plugins read it the same way: the scalar,
histogram and image fields of ``Summary.Value``, and for text, scalars
written "new style", tensors, precision-recall curves, custom-scalar
layouts and hyperparameters a tensor plus the plugin's metadata.

Values are cygrad tensors, NumPy arrays or Python numbers.
"""

import io
import logging
import wave

import numpy as np
from google.protobuf import struct_pb2
from tensorboard.compat.proto.summary_pb2 import (
    HistogramProto,
    Summary,
    SummaryMetadata,
)
from tensorboard.compat.proto.tensor_pb2 import TensorProto
from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto
from tensorboard.plugins.custom_scalar import layout_pb2
from tensorboard.plugins.hparams import api_pb2
from tensorboard.plugins.hparams import metadata as hp_metadata
from tensorboard.plugins.hparams import plugin_data_pb2 as hp_data
from tensorboard.plugins.pr_curve.plugin_data_pb2 import PrCurvePluginData
from tensorboard.plugins.text.plugin_data_pb2 import TextPluginData

from cygrad._kernels.engine import TensorBase
from cygrad.utils.tensorboard._image import png, to_hwc, to_numpy, to_uint8

__all__ = [
    "audio",
    "compute_curve",
    "custom_scalars",
    "histogram",
    "histogram_raw",
    "hparams",
    "image",
    "make_histogram",
    "make_image",
    "pr_curve",
    "pr_curve_raw",
    "scalar",
    "tensor_proto",
    "text",
]

logger = logging.getLogger(__name__)


def _metadata(plugin_name, content=b""):
    return SummaryMetadata(plugin_data=SummaryMetadata.PluginData(
        plugin_name=plugin_name, content=content))


def _shape(shape):
    return TensorShapeProto(dim=[TensorShapeProto.Dim(size=int(n)) for n in shape])


def _one(tag, **fields):
    return Summary(value=[Summary.Value(tag=tag, **fields)])


# --- scalars and tensors -------------------------------------------------------------


def scalar(name, tensor, collections=None, new_style=False, double_precision=False):
    """One scalar: ``simple_value`` (float32), or with ``new_style`` a
    scalar-plugin tensor, float32 or with ``double_precision`` float64.

    Parameters
    ----------
    name : str
        The tag.
    tensor : Tensor, ndarray or number
        Exactly one element (any shape of size 1).
    collections : ignored
        TensorFlow graph collections; accepted for torch's signature.
    """
    arr = to_numpy(tensor).squeeze()
    if arr.ndim != 0:
        raise AssertionError(f"scalar {name!r}: expected one element, got "
                             f"{arr.size} elements of shape {tuple(arr.shape)}")
    value = float(arr)
    if not new_style:
        return _one(name, simple_value=value)
    if double_precision:
        proto = TensorProto(dtype="DT_DOUBLE", double_val=[value])
    else:
        proto = TensorProto(dtype="DT_FLOAT", float_val=[value])
    return _one(name, tensor=proto, metadata=_metadata("scalars"))


def _half_bits(arr):
    # half_val holds each float16's 16 bits (what TensorBoard's make_ndarray
    # reads back); torch stores float32 bits there, which do not read back
    return arr.astype(np.float16).reshape(-1).view(np.uint16).tolist()


def _complex_parts(arr):
    return np.stack([arr.real, arr.imag], axis=-1).reshape(-1).tolist()


def _flat(arr):
    return arr.reshape(-1).tolist()


# numpy dtype -> (TensorProto dtype, its value field, values of an array)
_TENSOR_FIELDS = {
    np.dtype(np.float16): ("DT_HALF", "half_val", _half_bits),
    np.dtype(np.float32): ("DT_FLOAT", "float_val", _flat),
    np.dtype(np.float64): ("DT_DOUBLE", "double_val", _flat),
    np.dtype(np.int8): ("DT_INT8", "int_val", _flat),
    np.dtype(np.uint8): ("DT_UINT8", "int_val", _flat),
    np.dtype(np.int16): ("DT_INT16", "int_val", _flat),
    np.dtype(np.int32): ("DT_INT32", "int_val", _flat),
    np.dtype(np.int64): ("DT_INT64", "int64_val", _flat),
    np.dtype(np.bool_): ("DT_BOOL", "bool_val", _flat),
    np.dtype(np.complex64): ("DT_COMPLEX64", "scomplex_val", _complex_parts),
    np.dtype(np.complex128): ("DT_COMPLEX128", "dcomplex_val", _complex_parts),
}


def tensor_proto(tag, tensor):
    """A whole tensor (any shape) with the tensor plugin's metadata."""
    arr = to_numpy(tensor)
    if arr.nbytes >= 1 << 31:
        raise ValueError(f"tensor {tag!r}: {arr.nbytes} bytes, past the 2 GB a "
                         f"protocol buffer can hold")
    entry = _TENSOR_FIELDS.get(arr.dtype)
    if entry is None:
        raise ValueError(f"tensor {tag!r}: dtype {arr.dtype} has no TensorBoard "
                         f"tensor type")
    dtype, field, values = entry
    proto = TensorProto(dtype=dtype, tensor_shape=_shape(arr.shape),
                        **{field: values(arr)})
    return _one(tag, tensor=proto, metadata=_metadata("tensor"))


# --- histograms --------------------------------------------------------------------


def histogram_raw(name, min, max, num, sum, sum_squares, bucket_limits, bucket_counts):
    """A histogram from its statistics; ``bucket_limits[i]`` is the right edge
    of bucket ``i``."""
    return _one(name, histo=HistogramProto(
        min=min, max=max, num=num, sum=sum, sum_squares=sum_squares,
        bucket_limit=bucket_limits, bucket=bucket_counts))


def make_histogram(values, bins, max_bins=None):
    """``HistogramProto`` of ``values`` counted in ``bins`` (anything
    ``numpy.histogram`` takes).

    With ``max_bins``, runs of ``len(counts) // max_bins`` neighbouring
    buckets are merged (the last run padded with empty buckets), as torch
    does, which may leave a few more than ``max_bins`` buckets. Only the span
    from the first to the last non-empty bucket is kept, plus one empty
    bucket on its left: TensorBoard stores right edges only, and that bucket
    carries the span's left edge.
    """
    values = np.asarray(values).reshape(-1)
    if values.size == 0:
        raise ValueError("histogram: the input has no element")
    counts, limits = np.histogram(values, bins=bins)
    if max_bins is not None and counts.size > max_bins:
        group = counts.size // max_bins
        short = -counts.size % group
        counts = np.concatenate([counts, np.zeros(short, counts.dtype)])
        counts = counts.reshape(-1, group).sum(axis=1)
        limits = np.append(limits[:-1:group], limits[-1])
    nonzero = np.flatnonzero(counts)
    if nonzero.size == 0:
        raise ValueError(f"histogram: none of the {values.size} values falls in "
                         f"the bins")
    first, last = int(nonzero[0]), int(nonzero[-1])
    if first > 0:
        kept = counts[first - 1:last + 1]
    else:
        kept = np.concatenate([[0], counts[:last + 1]])
    return HistogramProto(
        min=values.min(), max=values.max(), num=values.size, sum=values.sum(),
        sum_squares=values.dot(values), bucket_limit=limits[first:last + 2].tolist(),
        bucket=kept.tolist())


def histogram(name, values, bins, max_bins=None):
    """A histogram of ``values`` (any shape, taken as float64); see
    :func:`make_histogram`."""
    arr = to_numpy(values).astype(float)
    return _one(name, histo=make_histogram(arr, bins, max_bins))


# --- images and audio ----------------------------------------------------------------


def make_image(tensor, rescale=1, rois=None, labels=None):
    """``Summary.Image`` of an (H, W, C) ``uint8`` array, PNG-encoded.

    ``rescale`` other than 1 and bounding boxes (``rois``) need resampling
    and drawing that cygrad does not do; they raise NotImplementedError.
    """
    if rescale != 1 or rois is not None:
        raise NotImplementedError("make_image: rescaling and drawing boxes are not "
                                  "supported by cygrad's writer")
    h, w, c = tensor.shape
    return Summary.Image(height=h, width=w, colorspace=c,
                         encoded_image_string=png(tensor))


def image(tag, tensor, rescale=1, dataformats="NCHW"):
    """An image, or a batch laid out as a grid (see ``_image.to_hwc``)."""
    pixels = to_uint8(to_hwc(to_numpy(tensor), dataformats))
    return _one(tag, image=make_image(pixels, rescale=rescale))


def audio(tag, tensor, sample_rate=44100):
    """A mono clip in [-1, 1] (any shape that squeezes to one axis) as a 16-bit
    WAV file; louder samples are clipped, with a warning."""
    arr = to_numpy(tensor).squeeze()
    if np.abs(arr).max() > 1:
        logger.warning("audio %r: amplitude out of [-1, 1], clipped", tag)
        arr = arr.clip(-1, 1)
    if arr.ndim != 1:
        raise AssertionError(f"audio {tag!r}: expected one axis of samples, got "
                             f"shape {tuple(arr.shape)}")
    samples = (arr * np.iinfo(np.int16).max).astype("<i2")
    buf = io.BytesIO()
    with wave.open(buf, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(sample_rate)
        out.writeframes(samples.tobytes())
    return _one(tag, audio=Summary.Audio(
        sample_rate=sample_rate, num_channels=1, length_frames=samples.shape[-1],
        encoded_audio_string=buf.getvalue(), content_type="audio/wav"))


# --- text and layouts ---------------------------------------------------------------


def text(tag, text):
    """A string (Markdown in TensorBoard) under ``<tag>/text_summary``."""
    proto = TensorProto(dtype="DT_STRING", string_val=[text.encode("utf_8")],
                        tensor_shape=_shape([1]))
    content = TextPluginData(version=0).SerializeToString()
    return _one(tag + "/text_summary", tensor=proto,
                metadata=_metadata("text", content))


def custom_scalars(layout):
    """The custom-scalars plugin's layout: ``{category: {chart: [kind, tags]}}``
    with kind ``"Multiline"`` (any tags) or ``"Margin"`` (value, lower,
    upper)."""
    categories = []
    for title, charts in layout.items():
        chart_protos = []
        for chart_title, (kind, tags) in charts.items():
            if kind == "Margin":
                if len(tags) != 3:
                    raise AssertionError(f"margin chart {chart_title!r}: expected 3 "
                                         f"tags (value, lower, upper), got {len(tags)}")
                series = layout_pb2.MarginChartContent.Series(
                    value=tags[0], lower=tags[1], upper=tags[2])
                chart = layout_pb2.Chart(
                    title=chart_title,
                    margin=layout_pb2.MarginChartContent(series=[series]))
            else:
                chart = layout_pb2.Chart(
                    title=chart_title,
                    multiline=layout_pb2.MultilineChartContent(tag=tags))
            chart_protos.append(chart)
        categories.append(layout_pb2.Category(title=title, chart=chart_protos))
    proto = TensorProto(
        dtype="DT_STRING",
        string_val=[layout_pb2.Layout(category=categories).SerializeToString()],
        tensor_shape=TensorShapeProto())
    return _one("custom_scalars__config__", tensor=proto,
                metadata=_metadata("custom_scalars"))


# --- precision-recall curves ------------------------------------------------------


def compute_curve(labels, predictions, num_thresholds=None, weights=None):
    """(6, num_thresholds) rows TP, FP, TN, FN, precision, recall.

    Threshold ``i`` is ``i / (num_thresholds - 1)``; a prediction counts at
    every threshold up to ``floor(p * (num_thresholds - 1))``. Precision and
    recall divide by at least 1e-7, so an empty threshold gives 0, not NaN.
    """
    weights = 1.0 if weights is None else weights
    buckets = np.int32(np.floor(predictions * (num_thresholds - 1)))
    labels = labels.astype(np.float64)
    span = (0, num_thresholds - 1)
    tp_in, _ = np.histogram(buckets, bins=num_thresholds, range=span,
                            weights=labels * weights)
    fp_in, _ = np.histogram(buckets, bins=num_thresholds, range=span,
                            weights=(1.0 - labels) * weights)
    tp = np.cumsum(tp_in[::-1])[::-1]          # predictions at or above
    fp = np.cumsum(fp_in[::-1])[::-1]
    tn = fp[0] - fp
    fn = tp[0] - tp
    precision = tp / np.maximum(1e-7, tp + fp)
    recall = tp / np.maximum(1e-7, tp + fn)
    return np.stack((tp, fp, tn, fn, precision, recall))


def _pr_summary(tag, data, num_thresholds):
    content = PrCurvePluginData(version=0,
                                num_thresholds=num_thresholds).SerializeToString()
    proto = TensorProto(dtype="DT_FLOAT", float_val=data.reshape(-1).tolist(),
                        tensor_shape=_shape(data.shape[:2]))
    return _one(tag, tensor=proto, metadata=_metadata("pr_curves", content))


def pr_curve(tag, labels, predictions, num_thresholds=127, weights=None):
    """A precision-recall curve of 0/1 ``labels`` and ``predictions`` in
    [0, 1]; at most 127 thresholds (TensorBoard's plugin limit, as torch)."""
    num_thresholds = min(num_thresholds, 127)
    data = compute_curve(to_numpy(labels), to_numpy(predictions),
                         num_thresholds=num_thresholds, weights=weights)
    return _pr_summary(tag, data, num_thresholds)


def pr_curve_raw(tag, tp, fp, tn, fn, precision, recall, num_thresholds=127,
                 weights=None):
    """A precision-recall curve from its six per-threshold rows."""
    num_thresholds = min(num_thresholds, 127)
    data = np.stack([to_numpy(r) for r in (tp, fp, tn, fn, precision, recall)])
    return _pr_summary(tag, data, num_thresholds)


# --- hyperparameters ---------------------------------------------------------------


def _hparam_value(v):
    """(struct_pb2 field, value, hparams DataType name) of one value.

    Booleans are numbers here (1.0 / 0.0, a FLOAT64 column), as in torch's
    files, so that runs logged by either compare in one table.
    """
    if isinstance(v, (int, float, np.integer, np.floating)):
        return "number_value", float(v), "DATA_TYPE_FLOAT64"
    if isinstance(v, str):
        return "string_value", v, "DATA_TYPE_STRING"
    if isinstance(v, TensorBase):
        return "number_value", float(to_numpy(v).reshape(-1)[0]), "DATA_TYPE_FLOAT64"
    raise ValueError(f"a hyperparameter is an int, float, str, bool or Tensor, got "
                     f"{type(v).__name__}")


def hparams(hparam_dict=None, metric_dict=None, hparam_domain_discrete=None):
    """The hparams plugin's three summaries: the experiment (hyperparameter
    names, types and discrete domains; metric tags), the session start (this
    run's values) and the session end (success).

    Parameters
    ----------
    hparam_dict : dict
        name -> int, float, bool, str or one-element Tensor; None values are
        left out.
    metric_dict : dict
        metric tag -> value (the values are logged by the writer as scalars).
    hparam_domain_discrete : dict, optional
        name -> list of every value that hyperparameter takes, of its type.

    Returns
    -------
    (experiment, session_start_info, session_end_info) : three Summary protos
    """
    for name, arg in (("hparam_dict", hparam_dict), ("metric_dict", metric_dict),
                      ("hparam_domain_discrete", hparam_domain_discrete or {})):
        if not isinstance(arg, dict):
            raise TypeError(f"hparams: {name} must be a dict, got "
                            f"{type(arg).__name__} (nothing logged)")
    domains = hparam_domain_discrete or {}
    for k, values in domains.items():
        if k not in hparam_dict:
            raise TypeError(f"hparams: hparam_domain_discrete names {k!r}, which "
                            f"hparam_dict does not have")
        kind = type(hparam_dict[k])
        if not isinstance(values, list) or not all(isinstance(d, kind) for d in values):
            raise TypeError(f"hparams: hparam_domain_discrete[{k!r}] must be a list "
                            f"of {kind.__name__}, the type of hparam_dict[{k!r}]")

    start = hp_data.SessionStartInfo()
    infos = []
    for k, v in hparam_dict.items():
        if v is None:
            continue
        field, value, kind = _hparam_value(v)
        setattr(start.hparams[k], field, value)
        domain = None
        if k in domains:
            domain = struct_pb2.ListValue(values=[
                struct_pb2.Value(**{field: float(d) if kind == "DATA_TYPE_FLOAT64"
                                    else d})
                for d in domains[k]])
        infos.append(api_pb2.HParamInfo(name=k, type=api_pb2.DataType.Value(kind),
                                        domain_discrete=domain))

    experiment = api_pb2.Experiment(
        hparam_infos=infos,
        metric_infos=[api_pb2.MetricInfo(name=api_pb2.MetricName(tag=k))
                      for k in metric_dict])
    end = hp_data.SessionEndInfo(status=api_pb2.Status.Value("STATUS_SUCCESS"))

    def wrap(tag, **part):
        content = hp_data.HParamsPluginData(
            version=hp_metadata.PLUGIN_DATA_VERSION, **part)
        return _one(tag, metadata=_metadata(hp_metadata.PLUGIN_NAME,
                                            content.SerializeToString()))

    return (wrap(hp_metadata.EXPERIMENT_TAG, experiment=experiment),
            wrap(hp_metadata.SESSION_START_INFO_TAG, session_start_info=start),
            wrap(hp_metadata.SESSION_END_INFO_TAG, session_end_info=end))
