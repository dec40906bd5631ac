"""cygrad.hub: the cache directory and downloading weights, against torch.hub."""

import hashlib
import subprocess
import sys

import numpy as np
import pytest

import cygrad


def test_load_state_dict_from_url_downloads_once_and_checks_the_hash(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    cygrad.manual_seed(0)
    sd = cygrad.nn.Linear(3, 2).state_dict()
    path = src / "lin.pt"
    cygrad.save(sd, path)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    named = src / f"lin-{digest[:8]}.pt"
    path.rename(named)
    cache = tmp_path / "cache"
    got = cygrad.hub.load_state_dict_from_url(named.as_uri(), model_dir=str(cache),
                                              check_hash=True)
    assert list(got) == list(sd)
    for k in sd:
        np.testing.assert_array_equal(got[k].numpy(), sd[k].numpy())
    named.unlink()     # the second call reads the cached copy
    again = cygrad.hub.load_state_dict_from_url(named.as_uri(), model_dir=str(cache))
    np.testing.assert_array_equal(again["weight"].numpy(), sd["weight"].numpy())
    bad = src / "lin-0000.pt"
    cygrad.save(sd, bad)
    with pytest.raises(RuntimeError, match="invalid hash value"):
        cygrad.hub.load_state_dict_from_url(bad.as_uri(), model_dir=str(cache),
                                            check_hash=True)


def test_download_url_to_file_writes_what_torch_writes(tmp_path):
    torch = pytest.importorskip("torch")
    path = tmp_path / "w.bin"
    path.write_bytes(bytes(range(256)) * 300)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    torch.hub.download_url_to_file(path.as_uri(), str(tmp_path / "t"), digest[:6])
    cygrad.hub.download_url_to_file(path.as_uri(), str(tmp_path / "c"), digest[:6])
    assert (tmp_path / "c").read_bytes() == (tmp_path / "t").read_bytes()


def test_bad_hash_raises_like_torch_and_leaves_nothing(tmp_path):
    torch = pytest.importorskip("torch")
    path = tmp_path / "w.pt"
    path.write_bytes(b"weights")
    for mod, dst in ((torch.hub, tmp_path / "t.pt"), (cygrad.hub, tmp_path / "c.pt")):
        with pytest.raises(RuntimeError, match="invalid hash value"):
            mod.download_url_to_file(path.as_uri(), str(dst), hash_prefix="zz")
        assert not dst.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["w.pt"]


def test_get_dir_follows_torch_home(tmp_path, monkeypatch):
    torch = pytest.importorskip("torch")
    monkeypatch.setenv("TORCH_HOME", str(tmp_path))
    assert cygrad.hub.get_dir() == torch.hub.get_dir() == str(tmp_path / "hub")


def test_import_loads_urllib_request_as_torch_does():
    # ``import urllib`` then ``urllib.request.urlopen`` works after import torch.
    code = "import urllib, cygrad; urllib.request.urlopen"
    subprocess.run([sys.executable, "-c", code], check=True)
