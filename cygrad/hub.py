"""``torch.hub``'s file side: the cache directory and downloading weights.

Loading entry points from a GitHub repository (``hub.load``/``hub.list``)
is not provided: those run the repository's code, written for torch.

Importing this module also loads ``urllib.request``, as ``import torch``
does: scripts that write ``import urllib`` and then call
``urllib.request.urlopen`` work under torch only for that reason.
"""

import hashlib
import os
import re
import shutil
import tempfile
import urllib.parse
import urllib.request

from cygrad.serialization import load as _load

__all__ = ["download_url_to_file", "get_dir", "load_state_dict_from_url", "set_dir"]

_hub_dir = None
_HASH_IN_NAME = re.compile(r"-([a-f0-9]*)\.")   # resnet18-f37072fd.pth


def get_dir():
    """The cache directory: ``set_dir``'s, else ``$TORCH_HOME/hub``, where
    ``TORCH_HOME`` defaults to ``$XDG_CACHE_HOME/torch`` (``~/.cache/torch``)."""
    if _hub_dir is not None:
        return _hub_dir
    cache = os.getenv("XDG_CACHE_HOME", os.path.join("~", ".cache"))
    home = os.getenv("TORCH_HOME", os.path.join(cache, "torch"))
    return os.path.join(os.path.expanduser(home), "hub")


def set_dir(d):
    """Use ``d`` as the cache directory from now on."""
    global _hub_dir
    _hub_dir = os.path.expanduser(os.fspath(d))


def download_url_to_file(url, dst, hash_prefix=None, progress=True):
    """Download ``url`` to the file ``dst``.

    The bytes go to a temporary file in ``dst``'s directory, moved into place
    only when complete; with ``hash_prefix`` their SHA-256 must start with it,
    else ``RuntimeError`` and nothing is written.  ``progress`` is accepted
    and ignored (no progress bar).
    """
    dst = os.path.expanduser(os.fspath(dst))
    folder = os.path.dirname(os.path.abspath(dst))
    sha = hashlib.sha256()
    fd, tmp = tempfile.mkstemp(dir=folder, suffix=".partial")
    try:
        with os.fdopen(fd, "wb") as out, urllib.request.urlopen(url) as src:
            while True:
                block = src.read(1 << 16)
                if not block:
                    break
                out.write(block)
                sha.update(block)
        if hash_prefix is not None:
            digest = sha.hexdigest()
            if not digest.startswith(hash_prefix):
                raise RuntimeError(
                    f'invalid hash value (expected "{hash_prefix}", got "{digest}")')
        shutil.move(tmp, dst)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def load_state_dict_from_url(url, model_dir=None, map_location=None, progress=True,
                             check_hash=False, file_name=None, weights_only=False):
    """``cygrad.load`` of the file at ``url``, downloaded once into
    ``model_dir`` (default ``get_dir()/checkpoints``) and read from there
    afterwards.  With ``check_hash`` the file name must hold the start of its
    SHA-256 after a dash (``name-<hash>.ext``)."""
    if model_dir is None:
        model_dir = os.path.join(get_dir(), "checkpoints")
    os.makedirs(model_dir, exist_ok=True)
    name = file_name or os.path.basename(urllib.parse.urlparse(url).path)
    cached = os.path.join(model_dir, name)
    if not os.path.exists(cached):
        prefix = None
        if check_hash:
            m = _HASH_IN_NAME.search(name)
            prefix = m.group(1) if m else None
        download_url_to_file(url, cached, prefix, progress=progress)
    return _load(cached, map_location=map_location, weights_only=weights_only)
