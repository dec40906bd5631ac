"""The glibc malloc thresholds set at import (cygrad/_kernels/_malloc.py):
on by default on glibc, off by CYGRAD_MALLOC_TUNE=0 or when the process
chose its own thresholds, and freed step arrays reuse their pages."""

import os
import platform
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc",
    reason="glibc's mallopt")

CODE = """
import resource
import numpy as np
import cygrad._kernels as k
def faults():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt
def step():                        # a step's temporaries, freed together
    xs = [np.ones(1 << 16) for _ in range(20)]
    del xs
for _ in range(3):
    step()
before = faults()
for _ in range(20):
    step()
print(k.MALLOC_TUNED, faults() - before)
"""


def _run(**env):
    full = dict(os.environ)
    for k in ("CYGRAD_MALLOC_TUNE", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_"):
        full.pop(k, None)
    full.update(env)
    out = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True,
                         env=full, timeout=120, check=True).stdout.split()
    return out[0] == "True", int(out[1])


def test_tuned_by_default_and_freed_arrays_keep_their_pages():
    tuned, faults = _run()
    assert tuned
    # 20 steps of 10 MB on pages given back and faulted in again would be
    # about 50,000 faults (glibc's defaults trim the freed heap each step)
    assert faults < 5000
    assert _run(CYGRAD_MALLOC_TUNE="0")[1] > 4 * max(faults, 1000)


def test_turned_off_by_the_variable_or_by_the_process_own_thresholds():
    assert _run(CYGRAD_MALLOC_TUNE="0")[0] is False
    assert _run(MALLOC_TRIM_THRESHOLD_="1000000")[0] is False
