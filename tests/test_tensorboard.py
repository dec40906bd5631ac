"""cygrad.utils.tensorboard against torch.utils.tensorboard: the same calls
through both writers, into two directories, read back event by event with
TensorBoard's own loader. The Summary protos must be equal field for field
(images compared as decoded pixels: the PNG encoders differ), and
TensorBoard's EventAccumulator must read the values the calls wrote.

Without the tensorboard package the module is skipped, except the checks
that importing fails clearly and that ``import cygrad`` never needs it;
the comparisons with torch skip without torch."""

import importlib
import io
import os
import pathlib
import struct
import subprocess
import sys
import zlib

import numpy as np
import pytest

import cygrad

ROOT = pathlib.Path(__file__).resolve().parent.parent


# --- importing ----------------------------------------------------------------


def test_import_cygrad_does_not_import_tensorboard():
    code = ("import sys, cygrad, cygrad.utils; "
            "assert 'tensorboard' not in sys.modules, 'tensorboard imported'; "
            "assert 'cygrad.utils.tensorboard' not in sys.modules")
    run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, timeout=120, check=False)
    assert run.returncode == 0, run.stderr


def test_import_without_tensorboard_says_what_to_install(monkeypatch):
    for name in list(sys.modules):
        if name == "tensorboard" or name.startswith(("tensorboard.",
                                                     "cygrad.utils.tensorboard")):
            monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "tensorboard", None)   # import now fails
    monkeypatch.delattr(cygrad.utils, "tensorboard", raising=False)
    with pytest.raises(ModuleNotFoundError, match="pip install tensorboard") as info:
        importlib.import_module("cygrad.utils.tensorboard")
    assert info.value.name == "tensorboard"


# --- helpers ------------------------------------------------------------------

try:
    from tensorboard.backend.event_processing import event_accumulator
    from tensorboard.backend.event_processing.event_file_loader import (
        LegacyEventFileLoader,
    )
    from tensorboard.util import tensor_util

    from cygrad.utils.tensorboard import SummaryWriter, _image
except ImportError:
    SummaryWriter = None

needs_tensorboard = pytest.mark.skipif(SummaryWriter is None,
                                       reason="needs the tensorboard package")


def _decode_png(data):
    from PIL import Image
    return np.asarray(Image.open(io.BytesIO(data)))


def _events(log_dir):
    """Every event of the directory's event files (not of its subdirectories),
    in order, with PNG images replaced by their decoded pixels and the wall
    time of the file-version event (always "now") zeroed."""
    out = []
    for path in sorted(pathlib.Path(log_dir).glob("events.out.tfevents.*")):
        for event in LegacyEventFileLoader(str(path)).Load():
            if event.file_version:
                event.wall_time = 0
                event.ClearField("source_metadata")
            for value in event.summary.value:
                if value.HasField("image"):
                    pixels = _decode_png(value.image.encoded_image_string)
                    value.image.encoded_image_string = (
                        str(pixels.shape).encode() + pixels.tobytes())
            out.append(event)
    return out


def _accumulator(log_dir):
    ea = event_accumulator.EventAccumulator(str(log_dir), size_guidance={
        "histograms": 0, "images": 0, "tensors": 0, "scalars": 0,
        "audio": 0, "compressedHistograms": 0})
    ea.Reload()
    return ea


def _torch():
    torch = pytest.importorskip("torch")
    pytest.importorskip("torch.utils.tensorboard")
    return torch


def _both(tmp_path, write):
    """Run ``write(SummaryWriter, lib)`` with torch's writer and lib = torch,
    then with cygrad's and lib = cygrad; return the two log directories."""
    torch = _torch()
    from torch.utils.tensorboard import SummaryWriter as TorchWriter
    dirs = []
    for name, writer_cls, lib in (("torch", TorchWriter, torch),
                                  ("cygrad", SummaryWriter, cygrad)):
        d = tmp_path / name
        with writer_cls(str(d)) as w:
            write(w, lib)
        dirs.append(d)
    return dirs


def _assert_same_events(a, b, zero_walltime=False):
    ea, eb = _events(a), _events(b)
    if zero_walltime:
        for e in ea + eb:
            e.wall_time = 0
    assert len(ea) == len(eb)
    for x, y in zip(ea, eb):
        assert x == y, f"torch:\n{x}\ncygrad:\n{y}"
    return eb


WALL = 1700000000.5


# --- scalars ------------------------------------------------------------------


@needs_tensorboard
def test_scalars_match_torch(tmp_path):
    def write(w, lib):
        for step in range(3):
            w.add_scalar("loss", 1.0 / (step + 1), step, walltime=WALL + step)
        w.add_scalar("int", 7, 1, walltime=WALL)
        w.add_scalar("np", np.float32(0.25), np.int64(2), walltime=WALL)
        w.add_scalar("zero_d", lib.tensor(1.5), 3, walltime=WALL)
        w.add_scalar("one_elem", lib.tensor([[2.5]]), 4, walltime=WALL)
        w.add_scalar("grad", lib.tensor(3.0, requires_grad=True) * 2, 5, walltime=WALL)
        w.add_scalar("new", 0.1, 6, walltime=WALL, new_style=True)
        w.add_scalar("new64", 0.1, 7, walltime=WALL, new_style=True,
                     double_precision=True)
        w.add_scalar("nostep", 4.0, walltime=WALL)
        w.add_scalars("run/pair", {"a": 1.0, "b": lib.tensor(2.0)}, 8, walltime=WALL)
    t, c = _both(tmp_path, write)
    _assert_same_events(t, c)
    for sub in ("run_pair_a", "run_pair_b"):
        _assert_same_events(t / sub, c / sub)

    ea = _accumulator(c)
    assert [(e.step, e.value, e.wall_time) for e in ea.Scalars("loss")] == [
        (0, 1.0, WALL), (1, 0.5, WALL + 1), (2, pytest.approx(1 / 3), WALL + 2)]
    assert ea.Scalars("grad")[0].value == 6.0
    assert ea.Scalars("nostep")[0].step == 0
    new = ea.Tensors("new")[0]
    assert tensor_util.make_ndarray(new.tensor_proto).dtype == np.float32
    new64 = tensor_util.make_ndarray(ea.Tensors("new64")[0].tensor_proto)
    assert new64.dtype == np.float64 and new64 == 0.1
    assert _accumulator(c / "run_pair_b").Scalars("run/pair")[0].value == 2.0


@needs_tensorboard
def test_purge_step_matches_torch(tmp_path):
    torch = _torch()
    from torch.utils.tensorboard import SummaryWriter as TorchWriter
    for name, cls in (("torch", TorchWriter), ("cygrad", SummaryWriter)):
        with cls(str(tmp_path / name), purge_step=5) as w:
            w.add_scalar("x", 1.0, 5, walltime=WALL)
    events = _assert_same_events(tmp_path / "torch", tmp_path / "cygrad",
                                 zero_walltime=True)
    assert any(e.session_log.status == e.session_log.START and e.step == 5
               for e in events)
    del torch


# --- histograms ---------------------------------------------------------------


@needs_tensorboard
@pytest.mark.parametrize("bins,max_bins", [
    ("tensorflow", None), (10, None), ("auto", None), ("fd", None), ("sqrt", None),
    ([-3.0, -1.0, 0.0, 0.5, 4.0], None), (64, 10), (50, 7), ("tensorflow", 20)])
def test_histograms_match_torch(tmp_path, bins, max_bins):
    values = np.random.default_rng(1).normal(size=(40, 25)).astype(np.float32)

    def write(w, lib):
        w.add_histogram("tensor", lib.from_numpy(values), 1, bins=bins,
                        walltime=WALL, max_bins=max_bins)
        w.add_histogram("numpy", values.astype(np.float64) * 3 + 1, 2, bins=bins,
                        walltime=WALL, max_bins=max_bins)
        w.add_histogram("const", np.full(7, 2.0), 3, bins=bins, walltime=WALL,
                        max_bins=max_bins)
    t, c = _both(tmp_path, write)
    _assert_same_events(t, c)
    h = _accumulator(c).Histograms("tensor")[0].histogram_value
    assert h.num == values.size and h.min == values.min() and h.max == values.max()
    edges = cygrad.utils.tensorboard.writer._default_bins() if bins == "tensorflow" \
        else bins
    assert sum(h.bucket) == np.histogram(values.astype(float), edges)[0].sum()


@needs_tensorboard
def test_histogram_buckets_are_the_counts(tmp_path):
    with SummaryWriter(tmp_path) as w:
        w.add_histogram("w", np.arange(100.0), 0, bins=10)
        w.add_histogram("mid", np.array([5.0, 5.5, 6.0]), 1, bins=[0, 2, 4, 6, 8, 10])
    ea = _accumulator(tmp_path)
    h = ea.Histograms("w")[0].histogram_value
    assert (h.min, h.max, h.num, h.sum, h.sum_squares) == (
        0.0, 99.0, 100.0, 4950.0, float(np.sum(np.arange(100.0) ** 2)))
    # an empty bucket on the left carries the first edge
    assert list(h.bucket) == [0.0] + [10.0] * 10
    assert list(h.bucket_limit) == [0.0] + [9.9 * k for k in range(1, 11)]
    mid = ea.Histograms("mid")[0].histogram_value
    # only the span of non-empty buckets is kept: [4, 6) and [6, 8]
    assert list(mid.bucket_limit) == [4.0, 6.0, 8.0]
    assert list(mid.bucket) == [0.0, 2.0, 1.0]


@needs_tensorboard
def test_histogram_raw_matches_torch(tmp_path):
    def write(w, lib):
        w.add_histogram_raw("raw", min=0.0, max=3.0, num=6, sum=9.0, sum_squares=19.0,
                            bucket_limits=[1.0, 2.0, 3.0], bucket_counts=[1, 2, 3],
                            global_step=4, walltime=WALL)
    _assert_same_events(*_both(tmp_path, write))


# --- images -------------------------------------------------------------------


@needs_tensorboard
def test_images_match_torch(tmp_path):
    rng = np.random.default_rng(2)
    chw = rng.random((3, 6, 5)).astype(np.float32)
    batch = rng.random((10, 3, 4, 3)).astype(np.float32)
    rgba = rng.random((4, 4, 4))

    def write(w, lib):
        w.add_image("chw", lib.from_numpy(chw), 0, walltime=WALL)
        w.add_image("half", np.full((1, 2, 2), 0.5), 0, walltime=WALL)
        w.add_image("gray", lib.from_numpy(chw[:1]), 0, walltime=WALL)
        w.add_image("hwc_u8", (chw.transpose(1, 2, 0) * 255).astype(np.uint8), 1,
                    walltime=WALL, dataformats="HWC")
        w.add_image("rgba", rgba, 1, walltime=WALL,
                    dataformats="HWC")
        w.add_image("hw", np.linspace(-1, 2, 12).reshape(3, 4), 2, walltime=WALL,
                    dataformats="HW")
        w.add_image("wh", np.linspace(0, 1, 12).reshape(3, 4), 2, walltime=WALL,
                    dataformats="WH")
        w.add_images("nchw", lib.from_numpy(batch), 3, walltime=WALL)
        w.add_images("nhwc", batch.transpose(0, 2, 3, 1), 3, walltime=WALL,
                     dataformats="NHWC")
        w.add_images("n1hw", lib.from_numpy(batch[:3, :1]), 3, walltime=WALL)
    t, c = _both(tmp_path, write)
    pytest.importorskip("PIL")
    _assert_same_events(t, c)

    ea = _accumulator(c)
    img = ea.Images("chw")[0]
    assert (img.width, img.height) == (5, 6)
    pixels = _decode_png(img.encoded_image_string)
    np.testing.assert_array_equal(
        pixels, (chw.transpose(1, 2, 0) * 255).astype(np.uint8))
    assert _decode_png(ea.Images("half")[0].encoded_image_string)[0, 0, 0] == 127
    grid = ea.Images("nchw")[0]
    assert (grid.width, grid.height) == (8 * 3, 2 * 4)   # 8 columns, 2 rows
    assert _decode_png(ea.Images("rgba")[0].encoded_image_string).shape == (4, 4, 4)


@needs_tensorboard
def test_png_decodes_to_the_pixels():
    """The encoder alone, without Pillow: filter-0 rows under zlib."""
    pix = np.arange(2 * 3 * 3, dtype=np.uint8).reshape(2, 3, 3)
    data = _image.png(pix)
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert struct.unpack(">II", data[16:24]) == (3, 2)     # width, height
    idat = data.index(b"IDAT")
    (size,) = struct.unpack(">I", data[idat - 4:idat])
    rows = zlib.decompress(data[idat + 4:idat + 4 + size])
    assert rows == b"".join(b"\x00" + pix[i].tobytes() for i in range(2))
    with pytest.raises(TypeError, match="channels"):
        _image.png(np.zeros((2, 2, 5), np.uint8))


@needs_tensorboard
def test_figure_matches_torch(tmp_path):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    def figure(k):
        fig = plt.figure(figsize=(2, 1.5), dpi=40)
        plt.plot([0, 1, 2], [k, 1, 0])
        return fig

    def write(w, lib):
        w.add_figure("one", figure(0), 0, walltime=WALL)
        w.add_figure("many", [figure(1), figure(2)], 1, walltime=WALL)
    t, c = _both(tmp_path, write)
    pytest.importorskip("PIL")
    _assert_same_events(t, c)
    img = _accumulator(c).Images("one")[0]
    assert (img.width, img.height) == (80, 60)
    assert plt.get_fignums() == []          # closed after rendering


# --- text, tensors, audio, hyperparameters, layouts, curves -------------------


@needs_tensorboard
def test_text_audio_and_layouts_match_torch(tmp_path):
    layout = {"Taiwan": {"twse": ["Multiline", ["twse/0050", "twse/2330"]]},
              "USA": {"dow": ["Margin", ["dow/a", "dow/b", "dow/c"]]}}

    def write(w, lib):
        w.add_text("note", "hello **world** ✓", 0, walltime=WALL)
        w.add_text("note", "second", 1, walltime=WALL)
        w.add_audio("tone", lib.from_numpy(np.sin(np.arange(800) / 5.0)[None]), 2,
                    sample_rate=8000, walltime=WALL)
        w.add_custom_scalars(layout)
        w.add_custom_scalars_multilinechart(["a", "b"], category="c", title="t")
        w.add_custom_scalars_marginchart(["v", "lo", "hi"])
    t, c = _both(tmp_path, write)
    events = _assert_same_events(t, c, zero_walltime=True)
    assert len(events) == 7
    ea = _accumulator(c)
    texts = ea.Tensors("note/text_summary")
    assert [x.tensor_proto.string_val[0].decode() for x in texts] == [
        "hello **world** ✓", "second"]
    clip = ea.Audio("tone")[0]
    assert (clip.sample_rate, clip.length_frames) == (8000, 800)


@needs_tensorboard
def test_tensors_read_back(tmp_path):
    torch = _torch()
    arrays = {"f32": np.arange(6, dtype=np.float32).reshape(2, 3) / 3,
              "f64": np.array([[1e-300, 2.5]]), "i64": np.array([-(2 ** 40), 3]),
              "i32": np.array([1, -2], np.int32), "bool": np.array([True, False])}

    def write(w, lib):
        for name, arr in arrays.items():
            w.add_tensor(name, lib.from_numpy(arr), 1, walltime=WALL)
    _assert_same_events(*_both(tmp_path, write))
    with SummaryWriter(tmp_path / "more") as w:
        # torch writes float16 and uint8 where TensorBoard does not read them
        w.add_tensor("f16", cygrad.tensor([0.5, -2.0, 65504.0], dtype=cygrad.float16))
        w.add_tensor("u8", np.array([0, 200, 255], np.uint8))
    ea = _accumulator(tmp_path / "more")
    f16 = tensor_util.make_ndarray(ea.Tensors("f16")[0].tensor_proto)
    assert f16.dtype == np.float16 and f16.tolist() == [0.5, -2.0, 65504.0]
    u8 = tensor_util.make_ndarray(ea.Tensors("u8")[0].tensor_proto)
    assert u8.dtype == np.uint8 and u8.tolist() == [0, 200, 255]
    del torch


@needs_tensorboard
def test_hparams_match_torch(tmp_path):
    def write(w, lib):
        w.add_hparams({"lr": 0.1, "bsize": 16, "opt": "adam", "bn": True,
                       "wd": lib.tensor([0.5]), "skip": None},
                      {"hparam/acc": 0.75, "hparam/loss": lib.tensor(0.25)},
                      hparam_domain_discrete={"opt": ["adam", "sgd"],
                                              "bsize": [16, 32]},
                      run_name="trial", global_step=3)
    t, c = _both(tmp_path, write)
    events = _assert_same_events(t / "trial", c / "trial", zero_walltime=True)
    assert len(events) == 6        # version, 3 plugin summaries, 2 metrics

    from tensorboard.plugins.hparams import plugin_data_pb2
    ea = _accumulator(c / "trial")
    start = plugin_data_pb2.HParamsPluginData.FromString(
        ea.SummaryMetadata("_hparams_/session_start_info").plugin_data.content)
    values = start.session_start_info.hparams
    assert values["lr"].number_value == 0.1 and values["opt"].string_value == "adam"
    assert values["wd"].number_value == 0.5 and "skip" not in values
    exp = plugin_data_pb2.HParamsPluginData.FromString(
        ea.SummaryMetadata("_hparams_/experiment").plugin_data.content).experiment
    assert [m.name.tag for m in exp.metric_infos] == ["hparam/acc", "hparam/loss"]
    assert ea.Scalars("hparam/loss")[0].value == 0.25
    assert ea.Scalars("hparam/loss")[0].step == 3


@needs_tensorboard
def test_pr_curves_match_torch(tmp_path):
    rng = np.random.default_rng(3)
    labels = rng.integers(0, 2, 200)
    preds = rng.random(200).astype(np.float32)

    def write(w, lib):
        w.add_pr_curve("pr", lib.from_numpy(labels), lib.from_numpy(preds), 1,
                       walltime=WALL)
        w.add_pr_curve("pr_few", labels, preds, 2, num_thresholds=9,
                       weights=np.linspace(0.5, 1.5, 200), walltime=WALL)
        w.add_pr_curve("pr_capped", labels, preds, 3, num_thresholds=500,
                       walltime=WALL)
        k = np.arange(5.0)
        w.add_pr_curve_raw("raw", k, k + 1, k + 2, k + 3, k / 10, k / 20, 4,
                           num_thresholds=5, walltime=WALL)
    t, c = _both(tmp_path, write)
    _assert_same_events(t, c)
    data = tensor_util.make_ndarray(_accumulator(c).Tensors("pr")[0].tensor_proto)
    assert data.shape == (6, 127)
    assert data[0, 0] == labels.sum() and data[1, 0] == (1 - labels).sum()


# --- embeddings ---------------------------------------------------------------


@needs_tensorboard
def test_embedding_files_match_torch(tmp_path):
    torch = _torch()
    pytest.importorskip("PIL")
    rng = np.random.default_rng(4)
    mat = rng.normal(size=(10, 4)).astype(np.float32)
    imgs = rng.random((10, 3, 5, 6)).astype(np.float32)
    meta = [f"point {i}" for i in range(10)]

    def write(w, lib):
        w.add_embedding(lib.from_numpy(mat), metadata=meta,
                        label_img=lib.from_numpy(imgs), global_step=2, tag="a/b")
        w.add_embedding(lib.from_numpy(mat[:3]),
                        metadata=[[1, "x"], [2, "y"], [3, "z"]],
                        metadata_header=["n", "s"])
    t, c = _both(tmp_path, write)
    files = sorted(p.relative_to(t).as_posix() for p in t.rglob("*")
                   if p.is_file() and "tfevents" not in p.name)
    assert files == sorted(p.relative_to(c).as_posix() for p in c.rglob("*")
                           if p.is_file() and "tfevents" not in p.name)
    assert "00002/a%2fb/sprite.png" in files
    for name in files:
        if name.endswith(".png"):
            np.testing.assert_array_equal(_decode_png((t / name).read_bytes()),
                                          _decode_png((c / name).read_bytes()))
        else:
            assert (t / name).read_bytes() == (c / name).read_bytes(), name
    rows = (c / "00002/a%2fb/tensors.tsv").read_text().splitlines()
    np.testing.assert_array_equal(
        np.array([r.split("\t") for r in rows], dtype=np.float32), mat)
    del torch


# --- the graph ----------------------------------------------------------------


def _net(lib):
    class Net(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = lib.nn.Linear(3, 4)
            self.act = lib.nn.ReLU()
            self.body = lib.nn.Sequential(lib.nn.Linear(4, 2), lib.nn.Tanh())

        def forward(self, x):
            return self.body(self.act(self.fc1(x * 2))).sum(1)
    return Net()


@needs_tensorboard
def test_graph_of_a_module(tmp_path):
    net = _net(cygrad)
    net.train()
    x = cygrad.ones(5, 3)
    with SummaryWriter(tmp_path) as w:
        w.add_graph(net, x)
    assert net.training and not x.requires_grad       # the caller's state is kept
    assert all(p.grad is None for p in net.parameters())
    graph = _accumulator(tmp_path).Graph()
    nodes = {n.name: n for n in graph.node}

    def shapes(name):
        return [[d.size for d in s.dim]
                for s in nodes[name].attr["_output_shapes"].list.shape]

    assert shapes("input/x") == [[5, 3]] and shapes("output/output.1") == [[5]]
    assert shapes("Net/Linear[fc1]/weight") == [[4, 3]]
    assert nodes["Net/Linear[fc1]/weight"].op == "Parameter"
    fc1 = nodes["Net/Linear[fc1]/AddmmBackward0"]
    assert sorted(fc1.input) == sorted(["Net/Linear[fc1]/bias", "Net/MulBackward0",
                                        "Net/Linear[fc1]/weight"])
    assert list(nodes["Net/MulBackward0"].input) == ["input/x"]
    assert shapes("Net/ReLU[act]/ReluBackward0") == [[5, 4]]
    assert list(nodes["Net/Sequential[body]/Tanh[1]/TanhBackward0"].input) == [
        "Net/Sequential[body]/Linear[0]/AddmmBackward0"]
    assert list(nodes["output/output.1"].input) == ["Net/SumBackward1"]
    assert len(nodes) == 12     # input, 4 parameters, 6 ops, output


@needs_tensorboard
@pytest.mark.filterwarnings("ignore:`torch.jit.trace")
def test_graph_scopes_match_torch(tmp_path):
    """The module scopes and the inputs and outputs TensorBoard shows are
    torch's (the ops inside them are named after grad_fn, not aten)."""
    torch = _torch()
    from torch.utils.tensorboard import SummaryWriter as TorchWriter
    graphs = []
    for name, cls, lib in (("torch", TorchWriter, torch),
                           ("cygrad", SummaryWriter, cygrad)):
        with cls(str(tmp_path / name)) as w:
            w.add_graph(_net(lib), lib.ones(5, 3))
        graphs.append(_accumulator(tmp_path / name).Graph())

    def scopes(graph):
        return {n.name.rsplit("/", 1)[0] for n in graph.node
                if n.op not in ("prim::Constant", "prim::ListConstruct", "IO Node")
                and not n.name.endswith((".1", "/weight", "/bias"))} - {""}

    def io(graph):
        return sorted((n.name, [d.size for d in n.attr["_output_shapes"].list.shape[0]
                                .dim]) for n in graph.node if n.op == "IO Node")

    assert scopes(graphs[0]) == scopes(graphs[1]) == {
        "Net", "Net/Linear[fc1]", "Net/ReLU[act]", "Net/Sequential[body]/Linear[0]",
        "Net/Sequential[body]/Tanh[1]"}
    assert io(graphs[0]) == io(graphs[1])


@needs_tensorboard
def test_graph_inplace_ops_and_shared_modules(tmp_path, capsys):
    class Twice(cygrad.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = cygrad.nn.Linear(2, 2)
            self.act = cygrad.nn.ReLU(inplace=True)

        def forward(self, x, y):
            return self.act(self.lin(x)), self.lin(y)
    with SummaryWriter(tmp_path) as w:
        w.add_graph(Twice(), (cygrad.ones(1, 2), cygrad.ones(3, 2)), verbose=True)
    printed = capsys.readouterr().out
    assert "Twice/ReLU[act]/ReluBackward0 = ReluBackward0(" in printed
    assert "output/output.2 = IO Node(Twice/Linear[lin]/AddmmBackward0_1)  [[3, 2]]" \
        in printed
    nodes = {n.name: n for n in _accumulator(tmp_path).Graph().node}
    assert "Twice/ReLU[act]/ReluBackward0" in nodes
    assert "Twice/Linear[lin]/AddmmBackward0_1" in nodes     # the second call
    assert {"input/x", "input/y", "output/output.1", "output/output.2"} <= set(nodes)


# --- the writer ---------------------------------------------------------------


@needs_tensorboard
def test_default_log_dir_is_runs_stamp_host_comment(tmp_path, monkeypatch):
    import re
    import socket
    monkeypatch.chdir(tmp_path)
    w = SummaryWriter(comment="_lr0.1")
    w.close()
    head, tail = os.path.split(w.get_logdir())
    assert head == "runs"
    assert re.fullmatch(r"[A-Z][a-z]{2}\d{2}_\d{2}-\d{2}-\d{2}_" + re.escape(
        socket.gethostname()) + "_lr0.1", tail)
    assert os.path.isdir(w.get_logdir())


@needs_tensorboard
def test_flush_close_reopen_and_suffix(tmp_path):
    w = SummaryWriter(tmp_path, filename_suffix=".v1", flush_secs=1000)
    w.add_scalar("x", 1.0, 0)
    w.flush()
    assert _accumulator(tmp_path).Scalars("x")[0].value == 1.0
    w.close()
    w.close()                                    # a second close does nothing
    w.add_scalar("x", 2.0, 1)                    # a new event file
    w.close()
    files = sorted(tmp_path.glob("events.out.tfevents.*"))
    assert len(files) == 2 and all(f.name.endswith(".v1") for f in files)
    assert [e.value for e in _accumulator(tmp_path).Scalars("x")] == [1.0, 2.0]


@needs_tensorboard
def test_bad_input_raises_as_torch(tmp_path):
    with SummaryWriter(tmp_path) as w:
        with pytest.raises(AssertionError, match="one element"):
            w.add_scalar("x", cygrad.ones(2))
        with pytest.raises(AssertionError, match="dataformats"):
            w.add_image("x", np.zeros((2, 3)), dataformats="CHW")
        with pytest.raises(ValueError, match="no element"):
            w.add_histogram("x", np.zeros(0))
        with pytest.raises(NotImplementedError, match="list"):
            w.add_histogram("x", [1.0, 2.0])
        with pytest.raises(TypeError, match="must be dicts"):
            w.add_hparams([("lr", 0.1)], {})
        with pytest.raises(TypeError, match="list of float"):
            w.add_hparams({"lr": 0.1}, {}, hparam_domain_discrete={"lr": ["a"]})
        with pytest.raises(TypeError, match="does not have"):
            w.add_hparams({"lr": 0.1}, {}, hparam_domain_discrete={"wd": [0.1]})
        with pytest.raises(AssertionError, match="3 tags"):
            w.add_custom_scalars_marginchart(["a", "b"])
        with pytest.raises(ValueError, match="bucket"):
            w.add_histogram_raw("x", 0, 1, 1, 1, 1, [1.0], [1, 2])
