"""Importing an unbuilt source tree says what was found, what was meant and
how to fix it (cygrad/_kernels/__init__.py)."""

import importlib.machinery
import os
import shutil
import subprocess
import sys

import cygrad

PACKAGE = os.path.dirname(os.path.abspath(cygrad.__file__))


def _copy_sources(dest):
    """The Python files of cygrad, without any compiled module."""
    shutil.copytree(PACKAGE, os.path.join(dest, "cygrad"),
                    ignore=shutil.ignore_patterns("*.so", "*.c", "*.pyd",
                                                  "__pycache__"))


def _import(cwd, pythonpath=""):
    env = dict(os.environ, PYTHONPATH=pythonpath)
    return subprocess.run([sys.executable, "-c", "import cygrad"], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


def test_unbuilt_tree_names_itself_and_the_fix(tmp_path):
    src = tmp_path / "checkout"
    _copy_sources(src)
    run = _import(src)
    assert run.returncode != 0
    err = run.stderr
    assert "ImportError" in err
    assert f"cygrad was imported from {src / 'cygrad'}" in err
    assert sys.implementation.cache_tag in err
    assert f"cd {src} && pip install -e ." in err


def test_unbuilt_tree_shadowing_an_installed_copy_names_both(tmp_path):
    src = tmp_path / "checkout"
    _copy_sources(src)
    # a build for another Python beside the sources
    other = src / "cygrad" / "_kernels" / "engine.cpython-29-x86_64-linux-gnu.so"
    other.write_bytes(b"")
    site = tmp_path / "site"
    (site / "cygrad" / "_kernels").mkdir(parents=True)
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    (site / "cygrad" / "_kernels" / ("engine" + suffix)).write_bytes(b"")
    run = _import(src, pythonpath=str(site))
    err = run.stderr
    assert run.returncode != 0 and "ImportError" in err
    assert "engine.cpython-29-x86_64-linux-gnu.so: a build for another Python" in err
    assert f"An installed copy is at {site / 'cygrad'}" in err
    assert f"run from another folder than {src}" in err
