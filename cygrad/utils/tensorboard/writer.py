"""``SummaryWriter`` and ``FileWriter``: torch.utils.tensorboard's API on
TensorBoard's own event-file writer.

A ``FileWriter`` owns one event file (``EventFileWriter`` from tensorboard:
a queue of ``max_queue`` records written by a background thread, flushed
every ``flush_secs`` seconds, on ``flush()`` and on ``close()``). A
``SummaryWriter`` owns the file of its log directory plus one per
``add_scalars`` series, turns each ``add_*`` call into a ``Summary`` (see
``summary.py``) and stamps it with the step and the wall time.

After ``close()`` the next ``add_*`` call opens a new event file in the
same directory, as torch's writer does.
"""

import os
import socket
import time
import warnings
from datetime import datetime

from tensorboard.compat import tf
from tensorboard.compat.proto.event_pb2 import Event, SessionLog, TaggedRunMetadata
from tensorboard.plugins.projector.projector_config_pb2 import ProjectorConfig
from tensorboard.summary.writer.event_file_writer import EventFileWriter

from cygrad.utils.tensorboard import _embedding, _graph
from cygrad.utils.tensorboard import summary as S
from cygrad.utils.tensorboard._image import figure_to_image, to_numpy

__all__ = ["FileWriter", "SummaryWriter"]


class FileWriter:
    """One event file in ``log_dir`` that events and summaries are added to.

    Parameters
    ----------
    log_dir : str or path
        Created if missing.
    max_queue : int
        Pending records held before an ``add_*`` call waits for the writer
        thread.
    flush_secs : float
        Seconds between the writer thread's flushes.
    filename_suffix : str
        Appended to the file's name,
        ``events.out.tfevents.<time>.<host>.<pid>.<n><suffix>``.
    """

    def __init__(self, log_dir, max_queue=10, flush_secs=120, filename_suffix=""):
        self.event_writer = EventFileWriter(str(log_dir), max_queue, flush_secs,
                                            filename_suffix)

    def get_logdir(self):
        """The directory the event file is in."""
        return self.event_writer.get_logdir()

    def add_event(self, event, step=None, walltime=None):
        """Write ``event`` (an ``Event`` proto), stamped with ``walltime``
        (default now) and, when given, ``step``."""
        event.wall_time = time.time() if walltime is None else walltime
        if step is not None:
            event.step = int(step)     # a NumPy or tensor step as a Python int
        self.event_writer.add_event(event)

    def add_summary(self, summary, global_step=None, walltime=None):
        """Write a ``Summary`` proto as one event."""
        self.add_event(Event(summary=summary), global_step, walltime)

    def add_graph(self, graph_profile, walltime=None):
        """Write a (``GraphDef``, ``RunMetadata``) pair: the graph, then the run
        metadata tagged ``step1``."""
        graph, run_metadata = graph_profile
        self.add_event(Event(graph_def=graph.SerializeToString()), None, walltime)
        tagged = TaggedRunMetadata(tag="step1",
                                   run_metadata=run_metadata.SerializeToString())
        self.add_event(Event(tagged_run_metadata=tagged), None, walltime)

    def flush(self):
        """Write every pending event to disk."""
        self.event_writer.flush()

    def close(self):
        """Flush, stop the writer thread and close the file."""
        self.event_writer.close()


def _default_bins():
    """TensorBoard's default histogram edges: +-1e-12 * 1.1**k up to 1e20, and 0."""
    edges = []
    v = 1e-12
    while v < 1e20:
        edges.append(v)
        v *= 1.1
    return [-e for e in reversed(edges)] + [0] + edges


def _escape(tag):
    """A tag as one directory name: ``%``, ``/`` and ``\\`` percent-encoded."""
    return tag.replace("%", "%25").replace("/", "%2f").replace("\\", "%5c")


class SummaryWriter:
    """Writes summaries to event files in ``log_dir`` for TensorBoard.

    Parameters
    ----------
    log_dir : str or path, optional
        Default ``runs/<Mon><DD>_<HH>-<MM>-<SS>_<hostname><comment>``.
    comment : str
        Appended to the default ``log_dir`` (ignored when ``log_dir`` is
        given).
    purge_step : int, optional
        After a crash at step T + X and a restart from step T, TensorBoard
        hides this directory's events from step T on: the writer logs a
        session start at ``purge_step``.
    max_queue, flush_secs, filename_suffix
        As for :class:`FileWriter`.

    Values are cygrad tensors, NumPy arrays or Python numbers. Each ``add_*``
    takes ``global_step`` (the x axis) and ``walltime`` (seconds since the
    epoch, default now).
    """

    def __init__(self, log_dir=None, comment="", purge_step=None, max_queue=10,
                 flush_secs=120, filename_suffix=""):
        if not log_dir:
            stamp = datetime.now().strftime("%b%d_%H-%M-%S")
            log_dir = os.path.join("runs", f"{stamp}_{socket.gethostname()}{comment}")
        self.log_dir = log_dir
        self.purge_step = purge_step
        self.max_queue = max_queue
        self.flush_secs = flush_secs
        self.filename_suffix = filename_suffix
        self.file_writer = self.all_writers = None
        self._get_file_writer()
        self.default_bins = _default_bins()

    def _get_file_writer(self):
        """The log directory's FileWriter, opened anew after ``close()``."""
        if self.file_writer is None or self.all_writers is None:
            self.file_writer = FileWriter(self.log_dir, self.max_queue,
                                          self.flush_secs, self.filename_suffix)
            self.all_writers = {self.file_writer.get_logdir(): self.file_writer}
            if self.purge_step is not None:
                step = self.purge_step
                self.file_writer.add_event(Event(step=step,
                                                 file_version="brain.Event:2"))
                self.file_writer.add_event(Event(
                    step=step, session_log=SessionLog(status=SessionLog.START)))
                self.purge_step = None
        return self.file_writer

    def _add(self, summary, global_step=None, walltime=None):
        self._get_file_writer().add_summary(summary, global_step, walltime)

    def get_logdir(self):
        """The log directory."""
        return self.log_dir

    # --- scalars ------------------------------------------------------------------

    def add_scalar(self, tag, scalar_value, global_step=None, walltime=None,
                   new_style=False, double_precision=False):
        """Log one value (a number, or a tensor or array of one element).

        ``new_style`` stores it as a scalar-plugin tensor rather than
        ``simple_value`` (faster for TensorBoard to load), in float64 with
        ``double_precision``.
        """
        self._add(S.scalar(tag, scalar_value, new_style=new_style,
                           double_precision=double_precision), global_step, walltime)

    def add_scalars(self, main_tag, tag_scalar_dict, global_step=None, walltime=None):
        """Log several values on one chart: each ``tag`` in
        ``tag_scalar_dict`` is its own run, ``<log_dir>/<main_tag>_<tag>``
        (``/`` in ``main_tag`` made ``_``), under the tag ``main_tag``."""
        walltime = time.time() if walltime is None else walltime
        base = self._get_file_writer().get_logdir()
        for tag, value in tag_scalar_dict.items():
            path = base + "/" + main_tag.replace("/", "_") + "_" + tag
            writer = self.all_writers.get(path)
            if writer is None:
                writer = FileWriter(path, self.max_queue, self.flush_secs,
                                    self.filename_suffix)
                self.all_writers[path] = writer
            writer.add_summary(S.scalar(main_tag, value), global_step, walltime)

    def add_tensor(self, tag, tensor, global_step=None, walltime=None):
        """Log a whole tensor (any shape; floats, integers, bools, complex)."""
        self._add(S.tensor_proto(tag, tensor), global_step, walltime)

    # --- histograms -------------------------------------------------------------

    def add_histogram(self, tag, values, global_step=None, bins="tensorflow",
                      walltime=None, max_bins=None):
        """Log a histogram of ``values`` (any shape).

        ``bins`` is ``"tensorflow"`` (TensorBoard's exponential edges, 1.1
        apart from 1e-12 to 1e20 on both sides of 0), or anything
        ``numpy.histogram`` takes: a count, a NumPy rule such as ``"auto"`` or
        ``"fd"``, or the edges. ``max_bins`` merges neighbouring buckets down
        to about that many.
        """
        if isinstance(bins, str) and bins == "tensorflow":
            bins = self.default_bins
        self._add(S.histogram(tag, values, bins, max_bins=max_bins), global_step,
                  walltime)

    def add_histogram_raw(self, tag, min, max, num, sum, sum_squares, bucket_limits,
                          bucket_counts, global_step=None, walltime=None):
        """Log a histogram already counted: ``bucket_limits[i]`` is the right
        edge of bucket ``i``, holding ``bucket_counts[i]`` values."""
        if len(bucket_limits) != len(bucket_counts):
            raise ValueError(f"add_histogram_raw: {len(bucket_limits)} bucket limits "
                             f"for {len(bucket_counts)} bucket counts")
        self._add(S.histogram_raw(tag, min, max, num, sum, sum_squares, bucket_limits,
                                  bucket_counts), global_step, walltime)

    # --- images, figures, audio ----------------------------------------------------

    def add_image(self, tag, img_tensor, global_step=None, walltime=None,
                  dataformats="CHW"):
        """Log one image: ``dataformats`` names its axes (``CHW``, ``HWC``,
        ``HW``, ``WH``, ...); C is 1, 3 or 4. Floats are read as [0, 1],
        ``uint8`` as [0, 255]."""
        self._add(S.image(tag, img_tensor, dataformats=dataformats), global_step,
                  walltime)

    def add_images(self, tag, img_tensor, global_step=None, walltime=None,
                   dataformats="NCHW"):
        """Log a batch of images (``NCHW``, ``NHWC``, ...; C is 1 or 3) as one
        grid of up to eight columns."""
        self._add(S.image(tag, img_tensor, dataformats=dataformats), global_step,
                  walltime)

    def add_figure(self, tag, figure, global_step=None, close=True, walltime=None):
        """Log a matplotlib figure (or a list of them, as a grid) as an image,
        rendered with Agg; ``close`` closes the figures after. Needs
        matplotlib."""
        fmt = "NCHW" if isinstance(figure, list) else "CHW"
        self.add_image(tag, figure_to_image(figure, close), global_step, walltime,
                       dataformats=fmt)

    def add_audio(self, tag, snd_tensor, global_step=None, sample_rate=44100,
                  walltime=None):
        """Log a mono clip: samples in [-1, 1], shape (L,) or (1, L)."""
        self._add(S.audio(tag, snd_tensor, sample_rate=sample_rate), global_step,
                  walltime)

    # --- text, hyperparameters, layouts -------------------------------------------

    def add_text(self, tag, text_string, global_step=None, walltime=None):
        """Log a string (TensorBoard renders it as Markdown)."""
        self._add(S.text(tag, text_string), global_step, walltime)

    def add_hparams(self, hparam_dict, metric_dict, hparam_domain_discrete=None,
                    run_name=None, global_step=None):
        """Log one run's hyperparameters and metrics for the HPARAMS tab.

        They go to a run of their own, ``<log_dir>/<run_name>`` (default the
        current time), with each metric also logged there as a scalar.

        Parameters
        ----------
        hparam_dict : dict
            name -> int, float, bool, str, one-element Tensor or None.
        metric_dict : dict
            metric tag -> value.
        hparam_domain_discrete : dict, optional
            name -> list of all values that hyperparameter can take.
        run_name : str, optional
        global_step : int, optional
        """
        if type(hparam_dict) is not dict or type(metric_dict) is not dict:
            raise TypeError(f"add_hparams: hparam_dict and metric_dict must be dicts, "
                            f"got {type(hparam_dict).__name__} and "
                            f"{type(metric_dict).__name__}")
        summaries = S.hparams(hparam_dict, metric_dict, hparam_domain_discrete)
        run_dir = os.path.join(self._get_file_writer().get_logdir(),
                               run_name or str(time.time()))
        with SummaryWriter(log_dir=run_dir) as run:
            for summary in summaries:
                run.file_writer.add_summary(summary, global_step)
            for key, value in metric_dict.items():
                run.add_scalar(key, value, global_step)

    def add_custom_scalars(self, layout):
        """Lay out the CUSTOM SCALARS tab: ``{category: {chart: [kind, tags]}}``,
        kind ``"Multiline"`` (any tags on one chart) or ``"Margin"`` (three
        tags: value, lower, upper)."""
        self._add(S.custom_scalars(layout))

    def add_custom_scalars_multilinechart(self, tags, category="default",
                                          title="untitled"):
        """One multi-line chart of ``tags`` in the CUSTOM SCALARS tab."""
        self.add_custom_scalars({category: {title: ["Multiline", tags]}})

    def add_custom_scalars_marginchart(self, tags, category="default",
                                       title="untitled"):
        """One margin chart of three ``tags`` (value, lower, upper)."""
        if len(tags) != 3:
            raise AssertionError(f"a margin chart takes 3 tags, got {len(tags)}")
        self.add_custom_scalars({category: {title: ["Margin", tags]}})

    # --- precision-recall curves --------------------------------------------------

    def add_pr_curve(self, tag, labels, predictions, global_step=None,
                     num_thresholds=127, weights=None, walltime=None):
        """Log a precision-recall curve of 0/1 ``labels`` against
        ``predictions`` in [0, 1], at ``num_thresholds`` (at most 127) evenly
        spaced thresholds."""
        self._add(S.pr_curve(tag, to_numpy(labels), to_numpy(predictions),
                             num_thresholds, weights), global_step, walltime)

    def add_pr_curve_raw(self, tag, true_positive_counts, false_positive_counts,
                         true_negative_counts, false_negative_counts, precision,
                         recall, global_step=None, num_thresholds=127, weights=None,
                         walltime=None):
        """Log a precision-recall curve from its counts, one per threshold."""
        self._add(S.pr_curve_raw(tag, true_positive_counts, false_positive_counts,
                                 true_negative_counts, false_negative_counts,
                                 precision, recall, num_thresholds, weights),
                  global_step, walltime)

    # --- embeddings and the graph -----------------------------------------------------

    def add_embedding(self, mat, metadata=None, label_img=None, global_step=None,
                      tag="default", metadata_header=None):
        """Log points for the PROJECTOR tab.

        Parameters
        ----------
        mat : Tensor or ndarray, shape (N, D)
            One row per point.
        metadata : list, optional
            N labels, or N rows of columns named by ``metadata_header``.
        label_img : Tensor or ndarray, shape (N, C, H, W), optional
            An image per point, C of 1 or 3, values in [0, 1].
        global_step : int, optional
            Default 0; with ``tag`` it names the files' directory,
            ``<log_dir>/<step, 5 digits>/<tag>``.
        tag : str
        metadata_header : list of str, optional
        """
        mat = to_numpy(mat)
        step = 0 if global_step is None else global_step
        subdir = f"{str(step).zfill(5)}/{_escape(tag)}"
        log_dir = self._get_file_writer().get_logdir()
        save_path = os.path.join(log_dir, subdir)
        gfile = tf.io.gfile
        if gfile.exists(save_path):
            if not gfile.isdir(save_path):
                raise NotADirectoryError(f"add_embedding: {save_path} exists and is "
                                         f"not a directory")
            warnings.warn(f"add_embedding: {save_path} exists and is overwritten "
                          f"(pass a new global_step or tag to keep both)",
                          UserWarning, stacklevel=2)
        else:
            gfile.makedirs(save_path)
        if metadata is not None and len(metadata) != mat.shape[0]:
            raise AssertionError(f"add_embedding: {len(metadata)} labels for "
                                 f"{mat.shape[0]} points")
        if label_img is not None and label_img.shape[0] != mat.shape[0]:
            raise AssertionError(f"add_embedding: {label_img.shape[0]} images for "
                                 f"{mat.shape[0]} points")
        if mat.ndim != 2:
            raise AssertionError(f"add_embedding: mat must be (points, features), "
                                 f"got shape {tuple(mat.shape)}")
        _embedding.write_embedding(save_path, mat, metadata, label_img,
                                   metadata_header)
        # the config lists every embedding so far: a file system may not
        # append, so the whole file is written each time
        if not hasattr(self, "_projector_config"):
            self._projector_config = ProjectorConfig()
        self._projector_config.embeddings.append(
            _embedding.embedding_info(metadata, label_img, subdir, step, tag))
        _embedding.write_config(log_dir, self._projector_config)

    def add_graph(self, model, input_to_model=None, verbose=False,
                  use_strict_trace=True):
        """Log the graph of one forward pass of ``model`` for the GRAPHS tab.

        cygrad has no tracer: the graph is the autograd graph that
        ``model(*input_to_model)`` records (run once, in eval mode), with
        each op named after its ``grad_fn`` (``AddmmBackward0``), grouped
        by the module that ran it (``Net/Linear[fc1]``), its parameters and
        inputs, and every edge's shape. What autograd does not record is
        not drawn: ops under ``no_grad`` and on integer tensors that touch
        no parameter. ``use_strict_trace`` is accepted for torch's signature
        and has no effect; ``verbose`` prints the nodes.
        """
        self._get_file_writer().add_graph(_graph.graph(model, input_to_model, verbose))

    # --- flushing and closing -------------------------------------------------------

    def flush(self):
        """Write every pending event of every file to disk."""
        for writer in (self.all_writers or {}).values():
            writer.flush()

    def close(self):
        """Flush and close every event file (a later ``add_*`` opens a new
        one)."""
        if self.all_writers is None:
            return
        for writer in self.all_writers.values():
            writer.flush()
            writer.close()
        self.file_writer = self.all_writers = None

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        self.close()

