"""cygrad.utils.tensorboard: event files that TensorBoard's own reader
(``pip install tensorboard``, the [parity] extra) reads back, CRC-32C and
PNG encodings checked against their definitions."""

import struct
import zlib

import numpy as np
import pytest

import cygrad
from cygrad.utils.tensorboard import SummaryWriter
from cygrad.utils.tensorboard import _records as R


def test_crc32c_and_record_framing():
    assert R.crc32c(b"123456789") == 0xE3069283        # the standard check value
    assert R.crc32c(b"") == 0
    rec = R.record(b"abc")
    (n,) = struct.unpack("<Q", rec[:8])
    assert n == 3 and rec[12:15] == b"abc" and len(rec) == 8 + 4 + 3 + 4


def test_png_rows_decode_to_the_pixels():
    pix = np.arange(2 * 3 * 3, dtype=np.uint8).reshape(2, 3, 3)
    data = R.png(pix)
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    assert (width, height) == (3, 2)
    idat = data.index(b"IDAT")
    (size,) = struct.unpack(">I", data[idat - 4:idat])
    rows = zlib.decompress(data[idat + 4:idat + 4 + size])
    assert rows == b"".join(b"\x00" + pix[i].tobytes() for i in range(2))


def _accumulator(path):
    ea_mod = pytest.importorskip(
        "tensorboard.backend.event_processing.event_accumulator")
    ea = ea_mod.EventAccumulator(str(path), size_guidance={
        "histograms": 0, "images": 0, "tensors": 0, "scalars": 0})
    ea.Reload()
    return ea


def test_tensorboard_reads_what_the_writer_wrote(tmp_path):
    with SummaryWriter(tmp_path) as w:
        for step in range(4):
            w.add_scalar("Loss/train", 1.0 / (step + 1), step)
        w.add_scalar("lr", cygrad.tensor([0.5]), 9, walltime=123.0)
        w.add_text("note", "hello", 0)
        w.add_histogram("weights", np.arange(100.0), 2, bins=10)
        w.add_image("img", cygrad.ones(3, 4, 5) * 0.5, 1)
        w.add_image("gray", np.zeros((6, 2)), 1, dataformats="HW")
        w.add_scalars("pair", {"a": 1.0, "b": 2.0}, 3)
    ea = _accumulator(tmp_path)
    assert [(e.step, e.value) for e in ea.Scalars("Loss/train")] == [
        (0, 1.0), (1, 0.5), (2, pytest.approx(1 / 3)), (3, 0.25)]
    lr = ea.Scalars("lr")[0]
    assert (lr.step, lr.value, lr.wall_time) == (9, 0.5, 123.0)
    assert ea.Tensors("note")[0].tensor_proto.string_val == [b"hello"]
    h = ea.Histograms("weights")[0].histogram_value
    assert (h.min, h.max, h.num, h.sum) == (0.0, 99.0, 100.0, 4950.0)
    assert list(h.bucket) == [10.0] * 10 and h.bucket_limit[-1] == 99.0
    img = ea.Images("img")[0]
    assert (img.width, img.height) == (5, 4)
    assert ea.Images("gray")[0].width == 2
    for tag, value in (("a", 1.0), ("b", 2.0)):
        assert _accumulator(tmp_path / f"pair_{tag}").Scalars("pair")[0].value == value


def test_writer_refuses_bad_input_and_use_after_close(tmp_path):
    w = SummaryWriter(tmp_path)
    with pytest.raises(ValueError, match="one element"):
        w.add_scalar("x", cygrad.ones(2))
    with pytest.raises(ValueError, match="dataformats"):
        w.add_image("x", np.zeros((2, 3)), dataformats="CHW")
    with pytest.raises(ValueError, match="no element"):
        w.add_histogram("x", np.zeros(0))
    with pytest.warns(UserWarning, match="no graph tracer"):
        w.add_graph(cygrad.nn.Linear(2, 2), cygrad.ones(1, 2))
    w.close()
    with pytest.raises(RuntimeError, match="closed"):
        w.add_scalar("x", 1.0)


def test_default_log_dir_is_runs_stamp_host_comment(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    w = SummaryWriter(comment="_lr0.1")
    w.close()
    assert w.get_logdir().startswith("runs") and w.get_logdir().endswith("_lr0.1")
