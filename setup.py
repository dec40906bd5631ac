"""Build cygrad's compiled kernels.

Every ``cygrad/_kernels/*.pyx`` becomes an extension; ``*.pyx.tp`` Tempita
templates are expanded to ``.pyx`` first.  Cython directives are set once,
here.  ``CYGRAD_DEBUG=1`` builds with bounds/wraparound checks and ``-O0 -g``.
``CYGRAD_ONLY=name1,name2`` restricts the build to some modules (development).
Kernels are compiled and linked with OpenMP (``-fopenmp``: large elementwise
kernels and sums split across threads, see ``cygrad/_kernels/threads.pyx``);
``CYGRAD_OPENMP=0`` builds without it, for a compiler that lacks OpenMP (the
kernels then run serially and the thread count is only recorded).
"""

import glob
import importlib.util
import os

import numpy as np
from Cython.Build import cythonize
from Cython.Tempita import Template
from setuptools import Extension, setup

DEBUG = os.environ.get("CYGRAD_DEBUG", "0") != "0"
DIRECTIVES = dict(
    language_level=3,
    boundscheck=DEBUG,
    wraparound=DEBUG,
    initializedcheck=DEBUG,
    nonecheck=False,
    cdivision=True,
    embedsignature=True,
)
OPENMP = os.environ.get("CYGRAD_OPENMP", "1") != "0"
HERE = os.path.dirname(os.path.abspath(__file__))
KERNELS = os.path.join("cygrad", "_kernels")


def load_optable():
    """The op table module, loaded from its file: importing it through the
    package would import cygrad, which needs the modules being built."""
    path = os.path.join(HERE, KERNELS, "optable.py")
    spec = importlib.util.spec_from_file_location("cygrad_optable", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod, path


def expand_templates():
    """Write ``x.pyx`` from ``x.pyx.tp`` when the template or the op table is
    newer.  Templates see the table's rows as ``UNARY`` and ``BINARY``."""
    table, table_path = load_optable()
    # The scalar-exponent kernels (POWERS) follow the public unary rows.
    namespace = dict(UNARY=table.UNARY + table.POWERS, BINARY=table.BINARY,
                     HELPERS=table.HELPERS, cost=table.cost)
    for tp in glob.glob(os.path.join(HERE, KERNELS, "*.tp")):
        out = tp[:-3]
        newest = max(os.path.getmtime(tp), os.path.getmtime(table_path))
        if os.path.exists(out) and os.path.getmtime(out) >= newest:
            continue
        with open(tp) as f:
            text = Template(f.read(), name=tp).substitute(namespace)
        with open(out, "w") as f:
            f.write(text)


def extensions():
    expand_templates()
    only = [s for s in os.environ.get("CYGRAD_ONLY", "").split(",") if s]
    if DEBUG:
        cflags = ["-O0", "-g"]
    else:
        cflags = ["-O3"]
    # -fno-math-errno: no kernel reads errno, and with it sqrt becomes one
    # vector instruction instead of a call that may set errno.
    cflags += ["-fno-math-errno", "-Wno-unused-function", "-Wno-unreachable-code"]
    ldflags = []
    if OPENMP:
        cflags.append("-fopenmp")
        ldflags.append("-fopenmp")
    exts = []
    for pyx in sorted(glob.glob(os.path.join(KERNELS, "*.pyx"))):
        name = os.path.splitext(os.path.basename(pyx))[0]
        if only and name not in only:
            continue
        exts.append(
            Extension(
                f"cygrad._kernels.{name}",
                [pyx],
                include_dirs=[np.get_include(), KERNELS],
                define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
                extra_compile_args=cflags,
                extra_link_args=ldflags,
                libraries=["m"],
            )
        )
    return cythonize(
        exts,
        compiler_directives=DIRECTIVES,
        include_path=[KERNELS],
        nthreads=int(os.environ.get("CYGRAD_BUILD_JOBS", "2")),
        force=DEBUG,
    )


setup(ext_modules=extensions())
