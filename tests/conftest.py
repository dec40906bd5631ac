import importlib.machinery
import os
import sys

import numpy as np
import pytest
from hypothesis import settings

# Use the source tree when its extensions are built in place for this Python
# (editable install or `setup.py build_ext --inplace`); otherwise the
# installed package.
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if any(os.path.exists(os.path.join(_ROOT, "cygrad", "_kernels", "engine" + s))
       for s in importlib.machinery.EXTENSION_SUFFIXES):
    sys.path.insert(0, _ROOT)

settings.register_profile("ci", derandomize=True, deadline=None, max_examples=30,
                          print_blob=True)
settings.register_profile("dev", deadline=None, max_examples=30)
settings.register_profile("fuzz", deadline=None, max_examples=2000)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

# Tolerances per dtype for comparisons against references.
TOL = {
    np.float32: dict(rtol=1e-5, atol=1e-6),
    np.float64: dict(rtol=1e-10, atol=1e-12),
}


@pytest.fixture(autouse=True)
def _seed():
    import cygrad
    cygrad.manual_seed(0)
    np.random.seed(0)
    yield
