"""cygrad.save / cygrad.load: bit-exact round trips and refusals."""

import collections
import io
import json
import math
import pickle
import zipfile

import numpy as np
import pytest

import cygrad
from cygrad.serialization import MAGIC, load, save


def _same(a, b):
    """Structural equality; tensors compared bit for bit, with dtype."""
    if isinstance(a, cygrad.Tensor):
        assert isinstance(b, cygrad.Tensor)
        assert a.dtype == b.dtype and tuple(a.shape) == tuple(b.shape)
        assert a.requires_grad == b.requires_grad
        assert a.detach().numpy().tobytes() == b.detach().numpy().tobytes()
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes()
    elif isinstance(a, dict):
        assert type(a) is type(b) and list(a) == list(b)
        for k in a:
            _same(a[k], b[k])
    elif isinstance(a, (list, tuple)):
        assert type(a) is type(b) and len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
    elif isinstance(a, float) and math.isnan(a):
        assert math.isnan(b)
    else:
        assert type(a) is type(b) and a == b


def _roundtrip(obj, tmp_path):
    path = tmp_path / "obj.cg"
    save(obj, path)
    return load(path)


def test_exported_names():
    assert callable(cygrad.serialization.save) and callable(cygrad.serialization.load)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "bool"])
def test_tensor_roundtrip_bit_for_bit(tmp_path, dtype):
    rng = np.random.default_rng(0)
    arr = rng.standard_normal((3, 4)).astype(dtype)
    if dtype.startswith("float"):
        arr[0, :3] = [np.nan, np.inf, -0.0]
    t = cygrad.from_numpy(arr)
    _same(t, _roundtrip(t, tmp_path))


def test_requires_grad_noncontiguous_and_scalar(tmp_path):
    t = cygrad.randn(3, 4, requires_grad=True)
    obj = {
        "t": t,
        "view": cygrad.from_numpy(np.arange(12.0).reshape(3, 4).T),
        "scalar": cygrad.tensor(2.5),
        "empty": cygrad.zeros(0, 3),
    }
    back = _roundtrip(obj, tmp_path)
    _same(obj, back)
    assert back["t"].is_leaf and back["t"].grad is None


def test_nested_structures_and_plain_values(tmp_path):
    obj = {
        "state": {0: {"step": 3, "exp_avg": cygrad.ones(2)}, 1: {}},
        "param_groups": [
            {
                "lr": 1e-3,
                "betas": (0.9, 0.999),
                "eps": 1e-8,
                "amsgrad": False,
                "params": [0, 1],
                "name": None,
            }
        ],
        "floats": [0.1, -0.0, float("inf"), float("nan"), 1e-310],
        "big": 2**70,
        "text": "héllo \u2713",
        "ordered": collections.OrderedDict([("b", 1), ("a", 2)]),
        "array": np.arange(5, dtype=np.int32),
        (1, "k"): "tuple key",
    }
    _same(obj, _roundtrip(obj, tmp_path))


def test_size_roundtrips_as_size_as_torch(tmp_path):
    """A checkpoint holding ``x.shape`` loads a Size back (torch: torch.Size),
    so it still prints and compares as one."""
    torch = pytest.importorskip("torch")
    got = []
    for m, ext in ((cygrad, "cg"), (torch, "pt")):
        path = tmp_path / f"s.{ext}"
        m.save({"s": m.ones(2, 3).shape, "e": m.Size([]), "t": (2, 3)}, path)
        d = m.load(path)
        got.append((repr(d["s"]).split(".", 1)[1], repr(d["e"]).split(".", 1)[1],
                    type(d["t"]) is tuple, isinstance(d["s"], m.Size)))
    assert got[0] == got[1] == ("Size([2, 3])", "Size([])", True, True)


def test_shared_tensor_loads_once(tmp_path):
    t = cygrad.ones(3)
    a, b = _roundtrip([t, t], tmp_path)
    assert a is b


def test_file_object_and_no_pickle_inside():
    buf = io.BytesIO()
    save({"w": cygrad.ones(2)}, buf)
    buf.seek(0)
    with zipfile.ZipFile(buf) as zf:
        names = zf.namelist()
        manifest = json.loads(np.load(zf.open("__cygrad__.npy")).tobytes())
    assert manifest["magic"] == MAGIC and manifest["version"] == 1
    assert all(n.endswith(".npy") for n in names)
    buf.seek(0)
    _same({"w": cygrad.ones(2)}, load(buf))


def test_module_and_optimizer_state_dicts(tmp_path):
    nn = pytest.importorskip("cygrad.nn")
    optim = pytest.importorskip("cygrad.optim")
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    opt = optim.Adam(model.parameters(), lr=0.01)
    loss = model(cygrad.randn(5, 3)).sum()
    loss.backward()
    opt.step()
    ckpt = {"model": model.state_dict(), "optimizer": opt.state_dict(), "epoch": 7}
    back = _roundtrip(ckpt, tmp_path)
    _same(ckpt, back)
    model2 = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    model2.load_state_dict(back["model"])
    for p, q in zip(model.parameters(), model2.parameters()):
        assert p.detach().numpy().tobytes() == q.detach().numpy().tobytes()
    opt2 = optim.Adam(model2.parameters(), lr=0.01)
    opt2.load_state_dict(back["optimizer"])


def test_parameter_type_survives(tmp_path):
    nn = pytest.importorskip("cygrad.nn")
    p = nn.Parameter(cygrad.ones(2))
    back = _roundtrip({"p": p}, tmp_path)["p"]
    assert isinstance(back, nn.Parameter) and back.requires_grad


def test_unsupported_objects_refused(tmp_path):
    with pytest.raises(TypeError, match="cannot store the function .*<lambda>"):
        save({"f": lambda: 0}, tmp_path / "x")
    with pytest.raises(TypeError, match="cannot store an object of type ufunc"):
        save({"f": np.tanh}, tmp_path / "x")
    with pytest.raises(TypeError, match="object"):
        save(np.array([object()]), tmp_path / "x")
    nn = pytest.importorskip("cygrad.nn")
    m = nn.Linear(2, 2)
    def local(x):
        return x
    m.act = local                 # a module holding a nested function: refused
    with pytest.raises(TypeError, match="cannot store module Linear.*nested"):
        save(m, tmp_path / "x")


# ---------------------------------------------------------------------------
# refusals


def test_refuses_pickle(tmp_path):
    path = tmp_path / "evil.pt"
    path.write_bytes(pickle.dumps({"w": [1.0, 2.0]}))
    with pytest.raises(ValueError, match="pickle"):
        load(path)


def test_refuses_zip_with_pickle_member(tmp_path):
    path = tmp_path / "torch_like.pt"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("archive/data.pkl", pickle.dumps([1]))
    with pytest.raises(ValueError, match="pickle"):
        load(path)


def test_refuses_object_array_member(tmp_path):
    path = tmp_path / "obj.cg"
    save({"w": cygrad.ones(2)}, path)
    # replace the tensor member with a pickled object array
    with zipfile.ZipFile(path) as zf:
        members = {n: zf.read(n) for n in zf.namelist()}
    buf = io.BytesIO()
    np.save(buf, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    name = next(n for n in members if n != "__cygrad__.npy")
    members[name] = buf.getvalue()
    with zipfile.ZipFile(path, "w") as zf:
        for n, data in members.items():
            zf.writestr(n, data)
    with pytest.raises(ValueError, match="pickle"):
        load(path)


def test_refuses_wrong_magic(tmp_path):
    path = tmp_path / "plain.npz"
    np.savez(path, a=np.ones(3))
    with pytest.raises(ValueError, match="wrong magic"):
        load(path)
    path2 = tmp_path / "text.txt"
    path2.write_text("hello world")
    with pytest.raises(ValueError, match="wrong magic"):
        load(path2)
    path3 = tmp_path / "empty"
    path3.write_bytes(b"")
    with pytest.raises(ValueError, match="not a cygrad file"):
        load(path3)
    bad = io.BytesIO()
    manifest = json.dumps({"magic": "nope", "version": 1, "root": {"t": "none"}})
    np.savez(bad, __cygrad__=np.frombuffer(manifest.encode(), np.uint8))
    bad.seek(0)
    with pytest.raises(ValueError, match="wrong magic"):
        load(bad)


def test_refuses_newer_version():
    buf = io.BytesIO()
    manifest = json.dumps({"magic": MAGIC, "version": 99, "root": {"t": "none"}})
    np.savez(buf, __cygrad__=np.frombuffer(manifest.encode(), np.uint8))
    buf.seek(0)
    with pytest.raises(RuntimeError, match="version 99"):
        load(buf)


@pytest.mark.parametrize("keep", [0.3, 0.6, 0.9, 0.99])
def test_refuses_truncated(tmp_path, keep):
    path = tmp_path / "ckpt.cg"
    save({"w": cygrad.randn(50, 50), "b": cygrad.zeros(50)}, path)
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * keep)])
    with pytest.raises(ValueError, match="truncated|corrupt|not a cygrad"):
        load(path)


def test_refuses_absurd_declared_size(tmp_path):
    path = tmp_path / "ckpt.cg"
    save({"w": cygrad.zeros(4)}, path)
    with zipfile.ZipFile(path) as zf:
        members = {n: zf.read(n) for n in zf.namelist()}
    name = next(n for n in members if n != "__cygrad__.npy")
    # declare 10**15 float32 elements in a member holding 4
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        buf, {"descr": "<f4", "fortran_order": False, "shape": (10**15,)}
    )
    members[name] = buf.getvalue() + np.zeros(4, np.float32).tobytes()
    with zipfile.ZipFile(path, "w") as zf:
        for n, data in members.items():
            zf.writestr(n, data)
    with pytest.raises(ValueError, match="declares"):
        load(path)


def test_refuses_malformed_manifest():
    buf = io.BytesIO()
    manifest = json.dumps(
        {"magic": MAGIC, "version": 1, "root": {"t": "tensor", "a": "missing"}}
    )
    np.savez(buf, __cygrad__=np.frombuffer(manifest.encode(), np.uint8))
    buf.seek(0)
    with pytest.raises(ValueError, match="missing array"):
        load(buf)
    buf = io.BytesIO()
    np.savez(buf, __cygrad__=np.frombuffer(b"{not json", np.uint8))
    buf.seek(0)
    with pytest.raises(ValueError, match="corrupt manifest"):
        load(buf)
