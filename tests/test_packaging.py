"""pyproject's explicit package list names every package of the tree: a
package left out installs from a checkout but is missing from the wheel
(cygrad.distributions was, and `import cygrad` failed from the wheel)."""

import pathlib

import pytest

tomllib = pytest.importorskip("tomllib")   # Python 3.11+

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_every_package_is_in_the_wheel():
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())
                 ["tool"]["setuptools"]["packages"])
    found = {".".join(p.parent.relative_to(ROOT).parts)
             for p in (ROOT / "cygrad").rglob("__init__.py")}
    assert found == listed, (sorted(found - listed), sorted(listed - found))
