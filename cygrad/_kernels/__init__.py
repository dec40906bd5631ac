"""cygrad's compiled modules.

Before anything imports them, this checks (a few ``stat`` calls) that the
compiled engine is beside this file for the running Python.  When it is not,
the usual cause is a source checkout that was never built, or built for
another Python, found on ``sys.path`` before an installed copy (Python puts
the current directory first): the ImportError then names the copy found, the
installed copy that was probably meant, and the command that fixes it.
"""

import os as _os
from importlib.machinery import EXTENSION_SUFFIXES as _SUFFIXES

_HERE = _os.path.dirname(_os.path.abspath(__file__))


def _engine_files(folder, suffixes=None):
    """The compiled engine files in ``folder`` (for these suffixes, or any)."""
    try:
        names = _os.listdir(folder)
    except OSError:
        return []
    if suffixes is None:
        return sorted(n for n in names if n.startswith("engine.") and
                      n.endswith((".so", ".pyd")))
    return [n for n in names if any(n == "engine" + s for s in suffixes)]


def _installed_copies():
    """Other folders on ``sys.path`` holding a built cygrad for this Python."""
    import sys

    found = []
    for entry in sys.path:
        folder = _os.path.join(_os.path.abspath(entry or "."), "cygrad", "_kernels")
        if _os.path.realpath(folder) == _os.path.realpath(_HERE):
            continue
        if _engine_files(folder, _SUFFIXES) and folder not in found:
            found.append(folder)
    return found


def _not_built_message():
    import sys

    tree = _os.path.dirname(_os.path.dirname(_HERE))
    lines = [
        f"cygrad was imported from {_os.path.dirname(_HERE)}, whose compiled "
        f"modules are missing for this Python ({sys.executable}, "
        f"{sys.implementation.cache_tag}).",
    ]
    others = _engine_files(_HERE)
    if others:
        lines.append(
            f"That folder holds {', '.join(others)}: a build for another Python."
        )
    installed = _installed_copies()
    if installed:
        lines.append(
            "An installed copy is at "
            f"{_os.path.dirname(installed[0])}; this source tree comes first on "
            "sys.path (it is the current directory or on PYTHONPATH) and hides it."
        )
        lines.append(
            f"Fix: run from another folder than {tree} to use the installed copy, "
            f"or build the tree in place: cd {tree} && pip install -e ."
        )
    else:
        lines.append(
            f"Fix: build it in place (cd {tree} && pip install -e .), or install it "
            f"(pip install {tree}) and run from another folder."
        )
    return "\n".join(lines)


if not _engine_files(_HERE, _SUFFIXES):
    raise ImportError(_not_built_message())

from cygrad._kernels._malloc import tune_malloc as _tune_malloc

#: Whether importing cygrad set glibc's malloc thresholds (_malloc.py).
MALLOC_TUNED = _tune_malloc()
